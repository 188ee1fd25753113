//! GEMM + reduce-scatter fused into one kernel: the second half of a
//! tensor-parallel MLP layer (the row-parallel linear), in bf16 on the tensor
//! cores, checked and timed against the unfused GEMM then reduce-scatter.
//!
//! ```text
//! cargo build --release --example gemm_rs && cargo build --release -p nvshmem-host --bin nvshmem-run
//! target/release/examples/gemm_rs                                  # 1 PE
//! target/release/nvshmem-run -n 2 -- target/release/examples/gemm_rs
//! target/release/examples/gemm_rs --m-per-pe 2048 --k-per-pe 4096 --n 4096 --iters 20
//! ```
//!
//! # The problem
//! PE `p` holds a K-shard of the activations, `A_p` (`M × k_loc` bf16,
//! `M = n_pes · m_per_pe`), and of the weight, `B_p` (`n × k_loc`, `Linear`
//! layout). `P_p = A_p · B_pᵀ` is a partial sum of `C = Σ_p P_p` (`M × n`,
//! f32); PE `q` ends with its rows `q·m_per_pe ..` of C.
//!
//! # The kernels (`examples/gemm_rs/kernel`)
//! - Unfused: `gemm_rs_partial_{mma,wgmma}` writes `P_p` (f32) into symmetric
//!   memory, a barrier, then `rs_sum` adds every PE's block of this PE's rows,
//!   read through `nvshmem_ptr`.
//! - Fused: `gemm_rs_{mma,wgmma}_fused` computes the tiles of PE `me+1`'s
//!   rows first, then `me+2`'s, ... its own last, and adds each result pair
//!   straight into the owner's C (`red.relaxed.sys.add.f32` through
//!   `nvshmem_ptr`); C is zeroed (and a barrier passed) before the launch.
//!
//! Both need every peer to be reachable with loads and stores (one node, P2P
//! or the same GPU); the example says so and exits otherwise. The wgmma
//! kernels need the `sm_90a` build.
//!
//! # Output and checks
//! Each PE checks every variant against an f64 CPU reference on `--samples`
//! of its rows (tolerance `k · ε_f32 · Σ|a·b|`, any summation order) and the
//! fused results against the unfused ones; it prints PASS or FAIL and the
//! median times (CUDA events, a barrier before each run; the fused time
//! includes zeroing C and its barrier, the unfused one the barrier between
//! its kernels), and exits with status 1 on a mismatch.

use half::bf16;
use nvshmem_host::cudarc::driver::sys::CUevent_flags;
use nvshmem_host::exchange::WordExchange;
use nvshmem_host::{LaunchConfig, Nvshmem, Pe};
use nvshmem_rs::tensor::{self, DeviceMaps, mma, wgmma};
use std::error::Error;

type Res<T> = std::result::Result<T, Box<dyn Error>>;

const HELP: &str = "\
gemm_rs: GEMM + reduce-scatter fused in one NVSHMEM kernel (bf16 tensor cores), against the unfused version.

Usage: gemm_rs [--m-per-pe ROWS] [--k-per-pe K] [--n N] [--iters I] [--warmup W] [--samples S]
  (as N PEs: nvshmem-run -n N -- gemm_rs ...)

  --m-per-pe ROWS  rows of C each PE ends with, a multiple of 128 (default 1024); M = n_pes * ROWS
  --k-per-pe K     each PE's share of the inner dimension, a multiple of 64 (default 2048)
  --n N            columns of C, a multiple of 256 (default 4096)
  --iters I        timed runs per variant; the median is printed (default 10)
  --warmup W       untimed runs per variant first (default 2)
  --samples S      entries of C checked against an f64 CPU dot product (default 256)

Exit status: 0 when every check passes, 1 on a mismatch or an error, 2 on bad arguments.";

struct Opts {
    m_per_pe: usize,
    k_per_pe: usize,
    n: usize,
    iters: usize,
    warmup: usize,
    samples: usize,
}

impl Opts {
    fn parse() -> std::result::Result<Opts, String> {
        let mut o = Opts {
            m_per_pe: 1024,
            k_per_pe: 2048,
            n: 4096,
            iters: 10,
            warmup: 2,
            samples: 256,
        };
        let mut args = std::env::args().skip(1);
        while let Some(flag) = args.next() {
            if flag == "-h" || flag == "--help" {
                println!("{HELP}");
                std::process::exit(0);
            }
            let slot = match flag.as_str() {
                "--m-per-pe" => &mut o.m_per_pe,
                "--k-per-pe" => &mut o.k_per_pe,
                "--n" => &mut o.n,
                "--iters" => &mut o.iters,
                "--warmup" => &mut o.warmup,
                "--samples" => &mut o.samples,
                _ => return Err(format!("unknown argument `{flag}`")),
            };
            let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
            *slot = value
                .parse()
                .map_err(|_| format!("{flag}: `{value}` is not a non-negative integer"))?;
        }
        for (name, v, multiple) in [
            ("--m-per-pe", o.m_per_pe, 128),
            ("--k-per-pe", o.k_per_pe, 64),
            ("--n", o.n, 256),
        ] {
            if v == 0 || !v.is_multiple_of(multiple) || v > u32::MAX as usize {
                return Err(format!(
                    "{name} must be a positive multiple of {multiple}, got {v}"
                ));
            }
        }
        if o.iters == 0 {
            return Err("--iters must be at least 1".into());
        }
        Ok(o)
    }
}

fn main() {
    let opts = match Opts::parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("gemm_rs: {e}\n\n{HELP}");
            std::process::exit(2);
        }
    };
    match run(&opts) {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("gemm_rs: {e}");
            std::process::exit(1);
        }
    }
}

/// Element `(row, col)` of PE `pe`'s `A_p` (`M × k_loc`).
fn a_val(pe: usize, k: usize, row: usize, col: usize) -> bf16 {
    tensor::bf16_value(0xa0 + pe as u64, (row * k + col) as u64)
}

/// Element `(row j, col kk)` of PE `pe`'s `B_p` (`n × k_loc`).
fn b_val(pe: usize, k: usize, j: usize, kk: usize) -> bf16 {
    tensor::bf16_value(0xb0 + pe as u64, (j * k + kk) as u64)
}

fn run(o: &Opts) -> Res<bool> {
    let nv = Nvshmem::init()?;
    let stream = nv.stream();
    let (me, npes) = (nv.my_pe().index() as usize, nv.n_pes() as usize);
    let (m_loc, k, n) = (o.m_per_pe, o.k_per_pe, o.n);
    let m = m_loc * npes;
    let a = nv.alloc_from(
        &(0..m * k)
            .map(|i| a_val(me, k, i / k, i % k))
            .collect::<Vec<_>>(),
    )?;
    let b = nv.alloc_from(
        &(0..n * k)
            .map(|i| b_val(me, k, i / k, i % k))
            .collect::<Vec<_>>(),
    )?;
    let partial = nv.alloc::<f32>(m * n)?;
    let c = nv.alloc::<f32>(m_loc * n)?;
    for q in 0..npes {
        if c.peer_ptr(Pe::new(q as u32))?.is_none() {
            println!(
                "gemm_rs PE {me}: skipped: PE {q} is not reachable with loads and stores (P2P)"
            );
            return Ok(true);
        }
    }

    let module = nv.load_module_in(nvshmem_rs::tensor_ptx_dir(), "gemm-rs-kernels")?;
    let partial_mma = module.kernel("gemm_rs_partial_mma")?;
    let fused_mma = module.kernel("gemm_rs_mma_fused")?;
    let rs_sum = module.kernel("rs_sum")?;
    let hopper = match (
        module.kernel("gemm_rs_partial_wgmma"),
        module.kernel("gemm_rs_wgmma_fused"),
    ) {
        (Ok(p), Ok(f)) => Some((p, f)),
        _ => None,
    };
    let maps = DeviceMaps::new(
        &nv,
        &[
            tensor::operand_map(a.device_ptr(), m, k, wgmma::A_BOX)?,
            tensor::operand_map(b.device_ptr(), n, k, wgmma::B_BOX)?,
        ],
    )?;
    let ex = WordExchange::new(&nv, 3)?;
    let (mloc32, n32, k32, m32) = (m_loc as u32, n as u32, k as u32, m as u32);
    let rs_grid = ((m_loc * n / 4).div_ceil(256)).min(1024) as u32;
    let mma_grid = tensor::persistent_grid(
        &nv,
        &ex,
        &fused_mma,
        mma::THREADS,
        mma::SMEM_BYTES,
        (m / mma::BM) * (n / mma::BN),
    )?;
    let wg_tiles = (m / wgmma::BM) * (n / wgmma::BN);
    let wg_grid = match &hopper {
        Some((p, _)) => {
            tensor::persistent_grid(&nv, &ex, p, wgmma::THREADS, wgmma::SMEM_BYTES, wg_tiles)?
        }
        None => 1,
    };

    // SAFETY (every launch): a M×k, b n×k, partial M×n on every PE, c m_loc×n
    // on every PE, every peer P2P-reachable (checked), sizes multiples of the tiles.
    let then_sum = || -> Res<()> {
        nv.barrier_all_on_stream(stream)?;
        unsafe {
            rs_sum.launch(
                stream,
                rs_grid,
                256,
                (partial.sym_ptr(), c.device_ptr(), mloc32, n32),
            )?
        };
        Ok(())
    };
    let unfused_mma = || -> Res<()> {
        let cfg = LaunchConfig::new(((n / mma::BN) as u32, (m / mma::BM) as u32), mma::THREADS)
            .shared_mem_bytes(mma::SMEM_BYTES);
        unsafe {
            partial_mma.launch_with(
                stream,
                cfg,
                (
                    a.device_ptr(),
                    b.device_ptr(),
                    partial.device_ptr(),
                    n32,
                    k32,
                ),
            )?
        };
        then_sum()
    };
    let zeroed = || -> Res<()> {
        c.fill(stream, 0.0)?;
        nv.barrier_all_on_stream(stream)?;
        Ok(())
    };
    let fused_mma_run = || -> Res<()> {
        zeroed()?;
        let cfg = LaunchConfig::new(mma_grid, mma::THREADS).shared_mem_bytes(mma::SMEM_BYTES);
        unsafe {
            fused_mma.launch_with(
                stream,
                cfg,
                (
                    a.device_ptr(),
                    b.device_ptr(),
                    c.sym_ptr(),
                    mloc32,
                    n32,
                    k32,
                ),
            )?
        };
        Ok(())
    };
    let unfused_wgmma = || -> Res<()> {
        let Some((p, _)) = &hopper else { return Ok(()) };
        let cfg = LaunchConfig::new(wg_grid, wgmma::THREADS).shared_mem_bytes(wgmma::SMEM_BYTES);
        unsafe {
            p.launch_with(
                stream,
                cfg,
                (
                    maps.ptr(0),
                    maps.ptr(1),
                    partial.device_ptr(),
                    m32,
                    n32,
                    k32,
                ),
            )?
        };
        then_sum()
    };
    let fused_wgmma = || -> Res<()> {
        let Some((_, f)) = &hopper else { return Ok(()) };
        zeroed()?;
        let cfg = LaunchConfig::new(wg_grid, wgmma::THREADS).shared_mem_bytes(wgmma::SMEM_BYTES);
        unsafe {
            f.launch_with(
                stream,
                cfg,
                (maps.ptr(0), maps.ptr(1), c.sym_ptr(), mloc32, n32, k32),
            )?
        };
        Ok(())
    };
    let mut variants: Vec<(&str, &dyn Fn() -> Res<()>)> =
        vec![("unfused mma", &unfused_mma), ("fused mma", &fused_mma_run)];
    if hopper.is_some() {
        variants.push(("unfused wgmma", &unfused_wgmma));
        variants.push(("fused wgmma", &fused_wgmma));
    } else {
        println!("gemm_rs PE {me}: wgmma variants skipped (no sm_90a build)");
    }

    // ---- Correctness.
    let mut ok = true;
    let mut report = Vec::new();
    let mut first: Option<Vec<f32>> = None;
    for (name, launch) in &variants {
        c.fill(stream, f32::NAN)?;
        partial.fill(stream, f32::NAN)?;
        nv.barrier_all_on_stream(stream)?;
        launch()?;
        nv.barrier_all_on_stream(stream)?;
        nv.synchronize(stream)?;
        let got = c.to_vec(stream)?;
        let (worst, pass) = cpu_check(o, me, npes, &got);
        ok &= pass;
        let vs = match &first {
            Some(f) => format!(", vs unfused mma {:.3e}", max_abs_diff(&got, f)),
            None => String::new(),
        };
        report.push(format!(
            "{name}: max err {worst:.3e}{vs}{}",
            if pass { "" } else { " FAIL" }
        ));
        first.get_or_insert(got);
    }
    println!(
        "gemm_rs PE {me}/{npes}: M={m} (m_per_pe {m_loc}) k_per_pe={k} n={n}: {}: {} (CPU f64 on {} samples)",
        if ok { "PASS" } else { "FAIL" },
        report.join("; "),
        o.samples
    );

    // ---- Timing.
    let ev = || {
        nv.context()
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
    };
    let (e0, e1) = (ev()?, ev()?);
    let flops = 2.0 * m as f64 * n as f64 * k as f64;
    let mut line = format!("gemm_rs PE {me}:");
    for (name, launch) in &variants {
        let mut t = Vec::new();
        for i in 0..o.warmup + o.iters {
            nv.barrier_all_on_stream(stream)?;
            e0.record(stream)?;
            launch()?;
            e1.record(stream)?;
            nv.synchronize(stream)?;
            if i >= o.warmup {
                t.push(e0.elapsed_ms(&e1)? as f64);
            }
        }
        let ms = median(&mut t);
        line += &format!(
            " | {name} {ms:.3} ms ({:.1} TFLOP/s)",
            flops / (ms * 1e-3) / 1e12
        );
    }
    println!("{line}");
    nv.barrier_all_on_stream(stream)?;
    nv.synchronize(stream)?;
    Ok(ok)
}

/// `--samples` entries of this PE's rows of C against the f64 sum over every
/// PE's partial product.
fn cpu_check(o: &Opts, me: usize, npes: usize, c: &[f32]) -> (f64, bool) {
    let (m_loc, k, n) = (o.m_per_pe, o.k_per_pe, o.n);
    let (mut worst, mut ok) = (0f64, true);
    for s in 0..o.samples {
        let h =
            tensor::bf16_value(0x77 + me as u64, s as u64).to_bits() as usize * 7919 + s * 104_729;
        let (i, j) = (h % m_loc, (h / 7) % n);
        let row = me * m_loc + i;
        let (mut dot, mut mag) = (0f64, 0f64);
        for p in 0..npes {
            for kk in 0..k {
                let v = a_val(p, k, row, kk).to_f64() * b_val(p, k, j, kk).to_f64();
                dot += v;
                mag += v.abs();
            }
        }
        let got = c[i * n + j] as f64;
        let err = (got - dot).abs();
        ok &= err <= (npes * k) as f64 * f32::EPSILON as f64 * mag + 1e-6;
        worst = if err.is_nan() {
            f64::NAN
        } else {
            worst.max(err)
        };
    }
    (worst, ok)
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).fold(0f32, |acc, (x, y)| {
        let d = (x - y).abs();
        if d.is_nan() || acc.is_nan() {
            f32::NAN
        } else {
            acc.max(d)
        }
    })
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let h = v.len() / 2;
    if v.len() % 2 == 1 {
        v[h]
    } else {
        (v[h - 1] + v[h]) / 2.0
    }
}
