//! `nvshmem-run -n N [--gpus LIST] [--timeout SECONDS] [--mps] -- PROGRAM ARGS…`:
//! starts N NVSHMEM PEs on this machine. See `nvshmem-run --help` and
//! [`nvshmem_host::launcher`].

fn main() -> std::process::ExitCode {
    nvshmem_host::launcher::cli_main(std::env::args_os().skip(1))
}
