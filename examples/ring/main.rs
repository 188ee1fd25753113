//! The smallest complete program: a token passed around every PE with
//! put-with-signal and `signal_wait_until`, in one kernel. The host side is
//! [`nvshmem_rs::ring::run`] (`src/ring.rs`), the kernel `examples/ring/kernel`.
//!
//! ```text
//! cargo run --release --example ring -- [LAPS]             # 1 PE
//! nvshmem-run -n 2 -- target/release/examples/ring          # 2 PEs
//! nvshmem-run -n 4 -- target/release/examples/ring          # 4 PEs (one GPU: needs CUDA MPS, see README)
//! ```
//!
//! After `LAPS` laps (default 1000) PE 0 must hold `LAPS * n_pes`; the
//! program checks that and prints the time per hop.

use nvshmem_host::Nvshmem;

fn main() {
    let laps = match std::env::args().nth(1).map(|a| a.parse::<u64>()) {
        None => 1000,
        Some(Ok(laps)) => laps,
        Some(Err(_)) => {
            eprintln!("usage: ring [LAPS]  (LAPS is a whole number, default 1000)");
            std::process::exit(2);
        }
    };
    let outcome = Nvshmem::init().and_then(|nv| nvshmem_rs::ring::run(&nv, laps));
    match outcome {
        Ok(o) => {
            if let Some(token) = o.token {
                println!(
                    "ring: {} PEs, {laps} laps: token = {token} (expected {}) {}; {:.2} us per hop",
                    o.n_pes,
                    o.expected(),
                    if o.passed() { "PASS" } else { "FAIL" },
                    o.us_per_hop()
                );
            }
            if !o.passed() {
                std::process::exit(1);
            }
        }
        Err(e) => {
            eprintln!("ring: {e}");
            std::process::exit(1);
        }
    }
}
