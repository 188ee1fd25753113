//! What the host runtime itself costs: NVSHMEM initialization, loading a
//! module (PTX through the driver's JIT vs the builder's cubin), and launching
//! a kernel (plain vs collective, i.e. cooperative after an occupancy check).
//! A benchmark: it prints figures and asserts nothing about them.
//!
//! ```text
//! CUDA_CACHE_DISABLE=1 cargo run --release --example runtime_costs        # 1 PE
//! CUDA_CACHE_DISABLE=1 nvshmem-run -n 2 -- target/release/examples/runtime_costs
//! ```
//!
//! `CUDA_CACHE_DISABLE=1` keeps the driver from answering a PTX load from its
//! JIT cache (`~/.nv/ComputeCache`), which would hide the compile time.
//! Every PE prints its own line; init time is the slowest PE's that matters.

use clap::Parser;
use example_cli::Res;
use nvshmem_host::ModuleImage;
use std::process::ExitCode;
use std::time::{Duration, Instant};

// Typed launches of `tests/kernels/runtime` (a dev-dependency, built by build.rs).
nvshmem_host::include_kernels!(runtime_kernels);

/// What the host runtime costs: NVSHMEM init, loading a module (PTX through
/// the driver's JIT vs cubin), plain and collective launches. Prints figures,
/// asserts nothing.
///
/// Set CUDA_CACHE_DISABLE=1 to keep the driver's JIT cache from hiding the
/// PTX compile time.
#[derive(Parser)]
#[command(name = "runtime_costs", after_help = example_cli::after_help("runtime_costs"))]
struct Args {}

const MODULE: &str = runtime_kernels::CRATE;
const LOADS: usize = 5;
const LAUNCHES: usize = 2000;
const ROUND_TRIPS: usize = 200;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn main() -> ExitCode {
    Args::parse();
    let started = Instant::now();
    let nv = example_cli::init_or_exit();
    let init = started.elapsed();
    example_cli::exit_code(run(&nv, init).map(|()| true))
}

fn run(nv: &nvshmem_host::Nvshmem, init: Duration) -> Res<()> {
    let (me, n) = (nv.my_pe().index(), nv.n_pes());
    let tag = format!("PE {me}/{n}");
    println!("{tag}: init {:.1} ms", init.as_secs_f64() * 1e3);

    // `p_to_next` is a plain kernel that, with `n = 0`, does nothing but `quiet`.
    let manifest = nvshmem_gpu_tests::ptx_dir().join(format!("{MODULE}.json"));
    let ptx_bytes = std::fs::metadata(nvshmem_gpu_tests::ptx_dir().join(format!("{MODULE}.ptx")))
        .map(|m| m.len())
        .unwrap_or(0);
    for (what, image) in [
        ("PTX (JIT)", ModuleImage::Ptx),
        ("cubin", ModuleImage::Cubin),
    ] {
        let mut times = Vec::with_capacity(LOADS);
        for _ in 0..LOADS {
            let t = Instant::now();
            let module = nv.load_module_with(&manifest, image)?;
            times.push(t.elapsed());
            drop(module);
        }
        println!(
            "{tag}: load + register {MODULE} from {what}: median {:.2} ms, first {:.2} ms ({LOADS} loads; PTX {} KiB)",
            median(times.clone()).as_secs_f64() * 1e3,
            times[0].as_secs_f64() * 1e3,
            ptx_bytes / 1024
        );
    }

    let module = nv.load_module_with(&manifest, ModuleImage::Cubin)?;
    let k = runtime_kernels::Kernels::new(&module)?;
    let dest = nv.alloc_zeroed::<u64>(1)?;
    let s = nv.stream();
    for collective in [false, true] {
        let launch = || {
            // SAFETY: with n = 0 the kernel touches no memory.
            unsafe {
                if collective {
                    // A plain kernel launched cooperatively, to time the
                    // occupancy check (the string API: its bindings launch it plainly).
                    k.p_to_next
                        .launch_collective(s, 1, 32, (dest.sym_ptr(), 0u64))
                } else {
                    runtime_kernels::p_to_next(&k, s, 1, 32, &dest, 0)
                }
            }
        };
        for _ in 0..20 {
            launch()?;
        }
        nv.synchronize(s)?;
        let t = Instant::now();
        for _ in 0..LAUNCHES {
            launch()?;
        }
        let enqueue = t.elapsed() / LAUNCHES as u32;
        nv.synchronize(s)?;
        let drained = t.elapsed() / LAUNCHES as u32;
        let mut trips = Vec::with_capacity(ROUND_TRIPS);
        for _ in 0..ROUND_TRIPS {
            let t = Instant::now();
            launch()?;
            nv.synchronize(s)?;
            trips.push(t.elapsed());
        }
        println!(
            "{tag}: {} launch: {:.2} us per call (host), {:.2} us per kernel back to back, {:.2} us launch + synchronize (median)",
            if collective { "collective" } else { "plain" },
            us(enqueue),
            us(drained),
            us(median(trips))
        );
    }
    nv.barrier_all_on_stream(s)?;
    nv.synchronize(s)?;
    Ok(())
}
