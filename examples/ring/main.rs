//! The smallest complete program: a token passed around every PE with
//! put-with-signal and `signal_wait_until`, in one kernel.
//!
//! ```text
//! cargo run --release --example ring                     # 1 PE
//! nvshmem-run -n 2 -- target/release/examples/ring        # 2 PEs
//! nvshmem-run -n 4 -- target/release/examples/ring        # 4 PEs (one GPU: needs CUDA MPS, see README)
//! ```
//!
//! Each PE waits for its signal, adds one to the token and puts it to the next
//! PE with a signal. After `laps` laps PE 0 must hold `laps * n_pes`; the
//! program checks that and prints the time per hop.

use nvshmem_host::{DevicePtr, Nvshmem, Result};
use std::time::Instant;

fn main() {
    if let Err(e) = run() {
        eprintln!("ring: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let laps: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    let nv = Nvshmem::init()?;
    let stream = nv.stream();
    let (me, n) = (nv.my_pe(), nv.n_pes());
    let token = nv.alloc_zeroed::<u64>(1)?;
    let send = nv.alloc_zeroed::<u64>(1)?;
    let signal = nv.alloc_zeroed::<u64>(1)?;
    let out = nv.alloc_zeroed::<u64>(1)?;
    let module = nv.load_module_in(ptx_dir(), "ring-kernels")?;
    let ring = module.kernel("ring_pass")?;
    let out_ptr: DevicePtr<u64> = out.device_ptr();

    nv.barrier_all_on_stream(stream)?;
    let start = Instant::now();
    // SAFETY: ring_pass touches one u64 of each buffer, and `out` locally.
    unsafe {
        ring.launch(
            stream,
            1,
            1,
            (
                token.sym_ptr(),
                send.sym_ptr(),
                signal.sym_ptr(),
                laps,
                out_ptr,
            ),
        )?
    };
    nv.synchronize(stream)?;
    let elapsed = start.elapsed();
    nv.barrier_all_on_stream(stream)?;
    nv.synchronize(stream)?;

    if me.index() == 0 {
        let got = out.to_vec(stream)?[0];
        let want = laps * n as u64;
        let hops = laps * n as u64;
        println!(
            "ring: {n} PEs, {laps} laps: token = {got} (expected {want}) {}; {:.2} us per hop",
            if got == want { "PASS" } else { "FAIL" },
            elapsed.as_secs_f64() * 1e6 / hops as f64
        );
        if got != want {
            std::process::exit(1);
        }
    }
    Ok(())
}

/// The folder of built kernels: `NVSHMEM_RS_PTX_DIR` at run time, else the build's.
fn ptx_dir() -> std::path::PathBuf {
    std::env::var_os("NVSHMEM_RS_PTX_DIR")
        .map(Into::into)
        .unwrap_or_else(|| env!("NVSHMEM_RS_PTX_DIR").into())
}
