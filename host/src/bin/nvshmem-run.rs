//! `nvshmem-run -n N [--gpus LIST] [--timeout SECONDS] -- PROGRAM ARGS…`:
//! starts N NVSHMEM PEs on this machine. See `nvshmem-run --help` and
//! [`nvshmem_host::launcher`].

use std::process::ExitCode;

fn main() -> ExitCode {
    // `UniqueId::generate` makes this process the unique-id bootstrap's root;
    // the launcher lives until every PE has ended, so the root does too.
    nvshmem_host::launcher::cli_main(std::env::args_os().skip(1), || {
        nvshmem_host::UniqueId::generate().map(|id| id.to_hex())
    })
}
