//! The smallest complete program: a token passed around every PE with
//! put-with-signal and `signal_wait_until`, in one kernel. The host side is
//! [`example_ring::run`] (`src/lib.rs`), the kernel `kernel/`.
//!
//! ```text
//! cargo run --release --bin ring -- [LAPS]             # 1 PE
//! nvshmem-run -n 2 -- target/release/ring          # 2 PEs
//! nvshmem-run -n 4 -- target/release/ring          # 4 PEs (one GPU: needs CUDA MPS, see docs/guide.md)
//! mpirun -n 2 target/release/ring                  # the bootstrap is detected
//! ```
//!
//! After `LAPS` laps (default 1000) PE 0 must hold `LAPS * n_pes`; the
//! program checks that and prints the time per hop. Without a GPU it prints
//! `no GPU: ...` and exits 0.

use clap::Parser;
use std::process::ExitCode;

/// A token passed around every PE with put-with-signal; PE 0 checks it.
#[derive(Parser)]
#[command(name = "ring", after_help = example_cli::after_help("ring"))]
struct Args {
    /// Laps around the ring.
    #[arg(value_name = "LAPS", default_value_t = 1000)]
    laps: u64,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let nv = example_cli::init_or_exit();
    example_cli::exit_code(example_ring::run_and_report(&nv, args.laps))
}
