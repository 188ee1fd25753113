//! What the host runtime itself costs: NVSHMEM initialization (and where its
//! time goes), loading a module (PTX through the driver's JIT vs the
//! builder's cubin), and launching a kernel (plain vs collective, i.e.
//! cooperative after an occupancy check), each beside a raw
//! `cuLaunchKernel` / `cuLaunchCooperativeKernel` of the same kernel.
//! A benchmark: it prints figures and asserts nothing about them.
//!
//! ```text
//! CUDA_CACHE_DISABLE=1 cargo run --release --example runtime_costs        # 1 PE
//! CUDA_CACHE_DISABLE=1 nvshmem-run -n 2 -- target/release/examples/runtime_costs
//! runtime_costs --init-only [--heap BYTES]   # init alone, against bench/cpp/init.cu (cargo xtask init-cost)
//! ```
//!
//! `CUDA_CACHE_DISABLE=1` keeps the driver from answering a PTX load from its
//! JIT cache (`~/.nv/ComputeCache`), which would hide the compile time.
//! Every PE prints its own line; init time is the slowest PE's that matters.

use clap::Parser;
use example_cli::Res;
use nvshmem_host::ModuleImage;
use nvshmem_host::cudarc::driver::result::{launch_cooperative_kernel, launch_kernel};
use std::process::ExitCode;
use std::time::{Duration, Instant};

// Typed launches of `tests/kernels/runtime` (a dev-dependency, built by build.rs).
nvshmem_host::include_kernels!(runtime_kernels);

/// What the host runtime costs: NVSHMEM init, loading a module (PTX through
/// the driver's JIT vs cubin), plain and collective launches. Prints figures;
/// PASS says only that every launch completed and wrote nothing.
///
/// Set CUDA_CACHE_DISABLE=1 to keep the driver's JIT cache from hiding the
/// PTX compile time.
#[derive(Parser)]
#[command(name = "runtime_costs", after_help = example_cli::after_help("runtime_costs"))]
struct Args {
    /// Only initialize and finalize, and print where init's time went (one
    /// `INIT` line, as bench/cpp/init.cu prints its own).
    #[arg(long)]
    init_only: bool,
    /// The symmetric heap size in bytes (default: NVSHMEM's).
    #[arg(long, value_name = "BYTES")]
    heap: Option<usize>,
}

const MODULE: &str = runtime_kernels::CRATE;
const LOADS: usize = 5;
const LAUNCHES: usize = 2000;
const ROUND_TRIPS: usize = 200;
/// The launch shape of every launch timed: one block of one warp.
const G: (u32, u32, u32) = (1, 1, 1);
const B: (u32, u32, u32) = (32, 1, 1);

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() -> ExitCode {
    let args = Args::parse();
    let started = Instant::now();
    let mut options = nvshmem_host::Nvshmem::options();
    if let Some(bytes) = args.heap {
        options = options.symmetric_size(bytes);
    }
    let nv = example_cli::init_with_or_exit(options);
    let init = started.elapsed();
    if args.init_only {
        let t = nv.init_timings();
        let t0 = Instant::now();
        let done = nv.finalize();
        let finalize = t0.elapsed();
        // The same fields as bench/cpp/init.cu's line (its "dlopen" is the
        // dynamic loader's, before main, so 0 there).
        println!(
            "INIT rust heap={} total_ms={:.1} dlopen_ms={:.1} driver_ms={:.1} context_ms={:.1} nvshmem_init_ms={:.1} finalize_ms={:.1}",
            args.heap.map_or("default".into(), |b| b.to_string()),
            ms(init),
            ms(t.library),
            ms(t.driver),
            ms(t.context),
            ms(t.nvshmem),
            ms(finalize)
        );
        return example_cli::exit_code(done.map(|()| true).map_err(Into::into));
    }
    example_cli::exit_code(run(&nv, init).map(|()| true))
}

fn run(nv: &nvshmem_host::Nvshmem, init: Duration) -> Res<()> {
    let (me, n) = (nv.my_pe().index(), nv.n_pes());
    let tag = format!("PE {me}/{n}");
    let t = nv.init_timings();
    println!(
        "{tag}: init {:.1} ms (host library dlopen {:.1} ms, driver {:.1} ms, context {:.1} ms, nvshmemx_hostlib_init_attr {:.1} ms)",
        ms(init),
        ms(t.library),
        ms(t.driver),
        ms(t.context),
        ms(t.nvshmem)
    );

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
    // The same kernel and arguments through the driver API alone.
    let (mut dest_addr, mut zero) = (dest.device_ptr().addr(), 0u64);
    let mut params = [
        (&raw mut dest_addr).cast::<std::ffi::c_void>(),
        (&raw mut zero).cast::<std::ffi::c_void>(),
    ];
    let func = k.p_to_next.cu_function();
    let mut per_call = [0.0f64; 4];
    for (i, (name, raw, collective)) in [
        ("plain", false, false),
        ("raw cuLaunchKernel", true, false),
        ("collective", false, true),
        ("raw cuLaunchCooperativeKernel", true, true),
    ]
    .into_iter()
    .enumerate()
    {
        let mut launch = || -> Res<()> {
            // SAFETY: with n = 0 the kernel touches no memory; `params` points
            // at its two 8-byte arguments, which live across the calls.
            unsafe {
                match (raw, collective) {
                    (false, false) => runtime_kernels::p_to_next(&k, s, 1, 32, &dest, 0)?,
                    // A plain kernel launched cooperatively, to time the
                    // occupancy check (the string API: its bindings launch it plainly).
                    (false, true) => {
                        k.p_to_next
                            .launch_collective(s, 1, 32, (dest.sym_ptr(), 0u64))?
                    }
                    (true, false) => launch_kernel(func, G, B, 0, s.cu_stream(), &mut params)?,
                    (true, true) => {
                        launch_cooperative_kernel(func, G, B, 0, s.cu_stream(), &mut params)?
                    }
                }
            }
            Ok(())
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
        per_call[i] = us(enqueue);
        println!(
            "{tag}: {name} launch: {:.2} us per call (host), {:.2} us per kernel back to back, {:.2} us launch + synchronize (median)",
            us(enqueue),
            us(drained),
            us(median(trips))
        );
    }
    let (plain, collective) = (per_call[0] - per_call[1], per_call[2] - per_call[3]);
    println!(
        "{tag}: Kernel::launch - raw cuLaunchKernel = {plain:+.2} us per call; launch_collective - raw cuLaunchCooperativeKernel = {collective:+.2} us per call (target <= 0.5: {})",
        if plain.max(collective) <= 0.5 {
            "met"
        } else {
            "missed"
        }
    );
    nv.barrier_all_on_stream(s)?;
    nv.synchronize(s)?;
    // Every launch above had n = 0: each returned, the stream drained, and
    // none may have written (a wrong argument order would have).
    let left = dest.to_vec(s)?;
    if left != [0] {
        return Err(
            format!("the n = 0 launches wrote {left:?} into dest, which must stay 0").into(),
        );
    }
    println!(
        "{tag}: PASS: {} launches of each kind completed and wrote nothing (dest still 0)",
        LAUNCHES + ROUND_TRIPS + 20
    );
    Ok(())
}
