//! All-gather + GEMM fused into one kernel: the first half of a
//! tensor-parallel (sequence-parallel) MLP layer, with communication and
//! computation overlapped, checked and timed against the unfused version.
//!
//! ```text
//! cargo build --release --example ag_gemm && cargo build --release -p nvshmem-host --bin nvshmem-run
//! target/release/examples/ag_gemm                              # 1 PE
//! target/release/nvshmem-run -n 2 -- target/release/examples/ag_gemm
//! target/release/nvshmem-run -n 4 -- target/release/examples/ag_gemm   # one GPU: needs CUDA MPS
//! target/release/examples/ag_gemm --m-per-pe 4096 --k 4096 --n 4096 --iters 20
//! ```
//!
//! # The problem
//! PE `p` holds a row shard `A_p` (`m_per_pe × k`, f32) of the activations
//! `A = [A_0; ...; A_{n_pes-1}]` (`M × k`, `M = n_pes · m_per_pe`), and `B_p`
//! (`k × n`): its column shard of a weight `W = [B_0 | B_1 | ...]`. Each PE
//! computes `C_p = A · B_p` (`M × n`), its column shard of `A · W`, which
//! needs every other PE's rows of `A`. (With the same `B` on every PE it is
//! the replicated variant; the kernels do not care.)
//!
//! # The kernels (`examples/ag_gemm/kernel`)
//! - Unfused: `ag_allgather` pulls every shard into a local `M × k` buffer
//!   with `get_block`, then `gemm` (a 128 × 128 × 8 shared-memory tiled f32
//!   GEMM, 8 × 8 outputs per thread, double-buffered) computes `C`.
//! - `ag_gemm_fused` (staged): one block per output tile; blocks compute this
//!   PE's own shard first, then the other shards in ring order. Block `t`
//!   first prefetches remote 128-row panel `t` of `A` (for `t` below their
//!   number): it claims the panel (one atomic on its flag), fetches it with
//!   `get_block` into the staging buffer and publishes it (release store). So
//!   the first few blocks pull every remote panel while the rest of the GPU
//!   computes local tiles. A block whose tile needs a panel that is not there
//!   yet fetches it itself or waits (acquire) for the running block that
//!   claimed it, so the kernel cannot deadlock; flags count epochs, so they
//!   need no reset.
//! - `ag_gemm_fused_p2p` (direct): the GEMM reads remote panels straight from
//!   the owner's memory through `nvshmem_ptr` (P2P peers only): no staging,
//!   no flags, each remote panel read once per column tile.
//!
//! # bf16 on the tensor cores (`--dtype bf16`; the default `both` runs it after the f32 half)
//! The same layer with bf16 operands (B as `n × k`, PyTorch's `Linear`
//! layout) on the tensor cores: a push all-gather (`put_signal_block` of each
//! 128-row panel, with a per-panel signal) fused with an `mma.sync` or a
//! `wgmma` + TMA GEMM that computes its own shard first and waits for each
//! remote panel's signal, against the unfused all-gather + GEMM; see
//! `bf16.rs` and `examples/ag_gemm/kernel_tc`.
//!
//! # Output and checks
//! Each PE checks both fused results against the unfused one (max abs
//! difference; they run the same arithmetic, so they should be identical) and
//! all three against an f64 CPU dot product on `--samples` entries of `C`
//! with the rigorous bound `k · ε · Σ|a·b|`. Staging buffers and `C` are
//! filled with NaN before each checked run, so a tile used before its data
//! arrived shows. It prints PASS or FAIL, the median times (CUDA events, after
//! `--warmup` runs, one barrier before each run) and the fused speedup, and
//! exits with status 1 on a mismatch.
//!
//! Several PEs on one GPU share its SMs (and without MPS take turns), so the
//! times there measure the overlap logic, not a multi-GPU speedup. The most
//! fusion can save is the all-gather's time, which shrinks next to the GEMM
//! as `n` grows: try a small `--n` (e.g. 256) to make communication matter.

use nvshmem_host::cudarc::driver::CudaEvent;
use nvshmem_host::cudarc::driver::sys::{CUdevice_attribute, CUevent_flags};
use nvshmem_host::{LaunchConfig, Nvshmem, Pe};
use std::cell::Cell;
use std::error::Error;

mod bf16;

type Res<T> = std::result::Result<T, Box<dyn Error>>;

// Must match examples/ag_gemm/kernel/src/lib.rs.
/// Rows per block tile (and per panel of `A`).
const BM: usize = 128;
/// Columns per block tile.
const BN: usize = 128;
/// Depth of one shared-memory stage.
const BK: usize = 8;
/// Threads per block of the GEMM kernels.
const THREADS: u32 = 256;
/// The GEMM kernels' dynamic shared memory: two stages of `8×128` A and B tiles, plus a control word.
const SMEM_BYTES: u32 = (2 * (BK * BM + BK * BN) * 4 + 16) as u32;
/// Rows per `get_block` of `ag_allgather`.
const AG_ROWS: usize = 8;

const HELP: &str = "\
ag_gemm: all-gather + GEMM fused in one NVSHMEM kernel, against the unfused version.

Usage: ag_gemm [--dtype f32|bf16|both] [--m-per-pe ROWS] [--k K] [--n N] [--iters I] [--warmup W] [--samples S]
  (as N PEs: nvshmem-run -n N -- ag_gemm ...)

  --dtype D        f32 (CUDA cores), bf16 (tensor cores: mma.sync, and wgmma + TMA on sm_90)
                   or both (default)
  --m-per-pe ROWS  rows of A on each PE, a multiple of 128 (default 2048); M = n_pes * ROWS
  --k K            inner dimension, a multiple of 8 (default 2048)
  --n N            columns of B and C on each PE, a multiple of 128 (default 2048)
  --iters I        timed runs per variant; the median is printed (default 10)
  --warmup W       untimed runs per variant first (default 2)
  --samples S      entries of C checked against an f64 CPU dot product (default 512)

Exit status: 0 when every check passes, 1 on a mismatch or an error, 2 on bad arguments.";

/// The command line.
struct Opts {
    /// Which half to run: `f32`, `bf16` (tensor cores) or `both`.
    dtype: String,
    m_per_pe: usize,
    k: usize,
    n: usize,
    iters: usize,
    warmup: usize,
    samples: usize,
}

impl Opts {
    fn parse() -> std::result::Result<Opts, String> {
        let mut o = Opts {
            dtype: "both".into(),
            m_per_pe: 2048,
            k: 2048,
            n: 2048,
            iters: 10,
            warmup: 2,
            samples: 512,
        };
        let mut args = std::env::args().skip(1);
        while let Some(flag) = args.next() {
            if flag == "-h" || flag == "--help" {
                println!("{HELP}");
                std::process::exit(0);
            }
            if flag == "--dtype" {
                o.dtype = args
                    .next()
                    .ok_or_else(|| "--dtype needs a value".to_string())?;
                if !["f32", "bf16", "both"].contains(&o.dtype.as_str()) {
                    return Err(format!(
                        "--dtype must be f32, bf16 or both, got `{}`",
                        o.dtype
                    ));
                }
                continue;
            }
            let slot = match flag.as_str() {
                "--m-per-pe" => &mut o.m_per_pe,
                "--k" => &mut o.k,
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
        let check = |name: &str, v: usize, multiple: usize| {
            if v == 0 || !v.is_multiple_of(multiple) || v > u32::MAX as usize {
                Err(format!(
                    "{name} must be a positive multiple of {multiple}, got {v}"
                ))
            } else {
                Ok(())
            }
        };
        check("--m-per-pe", o.m_per_pe, BM)?;
        check("--k", o.k, BK)?;
        check("--n", o.n, BN)?;
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
            eprintln!("ag_gemm: {e}\n\n{HELP}");
            std::process::exit(2);
        }
    };
    match run(&opts) {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("ag_gemm: {e}");
            std::process::exit(1);
        }
    }
}

/// Runs the requested halves; `Ok(false)` when a check failed.
fn run(o: &Opts) -> Res<bool> {
    let nv = Nvshmem::init()?;
    let mut ok = true;
    if o.dtype != "bf16" {
        ok &= run_f32(&nv, o)?;
    }
    if o.dtype != "f32" {
        ok &= bf16::run(&nv, o)?;
    }
    Ok(ok)
}

/// Runs the f32 checks and timings; `Ok(false)` when a check failed.
fn run_f32(nv: &Nvshmem, o: &Opts) -> Res<bool> {
    let stream = nv.stream();
    let (me, npes) = (nv.my_pe().index() as usize, nv.n_pes() as usize);
    let (m_loc, k, n) = (o.m_per_pe, o.k, o.n);
    let m = m_loc * npes;
    if m > u32::MAX as usize {
        return Err(format!("M = {m} rows do not fit the kernels' u32 sizes").into());
    }

    // Inputs: this PE's shard of A and its B. Every PE can compute any
    // element of A from its indices (for the CPU check).
    let a_host: Vec<f32> = (0..m_loc * k)
        .map(|i| a_val(me * m_loc + i / k, i % k))
        .collect();
    let b_host: Vec<f32> = (0..k * n).map(|i| b_val(me, i / n, i % n)).collect();
    let a_shard = nv.alloc_from(&a_host)?; // read by peers: symmetric
    let a_full = nv.alloc::<f32>(m * k)?; // unfused gather target, fused staging
    let flags = nv.alloc_zeroed::<u32>(m / BM)?;
    let b = nv.alloc_from(&b_host)?;
    let c = nv.alloc::<f32>(m * n)?;

    let module = nv.load_module_in(nvshmem_rs::ptx_dir(), "ag-gemm-kernels")?;
    let allgather = module.kernel("ag_allgather")?;
    let gemm = module.kernel("gemm")?;
    let fused = module.kernel("ag_gemm_fused")?;
    let fused_p2p = module.kernel("ag_gemm_fused_p2p")?;

    let sms = nv
        .context()
        .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?
        as usize;
    let ag_blocks = (m / AG_ROWS).min(4 * sms) as u32;
    let tiles = (m / BM) * (n / BN);
    let gemm_cfg =
        LaunchConfig::new(((n / BN) as u32, (m / BM) as u32), THREADS).shared_mem_bytes(SMEM_BYTES);
    let fused_cfg = LaunchConfig::new(tiles as u32, THREADS).shared_mem_bytes(SMEM_BYTES);
    let mut peers_p2p = true;
    for q in 0..npes {
        peers_p2p &= a_shard.peer_ptr(Pe::new(q as u32))?.is_some();
    }

    let (k32, n32, mloc32) = (k as u32, n as u32, m_loc as u32);
    // The fused kernel's flag epoch: one more per launch.
    let epoch = Cell::new(0u32);
    // The launches. SAFETY (all three): the buffers have the sizes the
    // kernels' docs ask for (a_shard m_loc×k on every PE, a_full M×k, flags
    // M/BM, b k×n, c M×n), the grids cover exactly M × n, and the sizes are
    // multiples of the tiles (checked in Opts::parse).
    let launch_allgather = || -> Res<()> {
        unsafe {
            allgather.launch(
                stream,
                ag_blocks,
                THREADS,
                (a_shard.sym_ptr(), a_full.device_ptr(), mloc32, k32),
            )?
        };
        Ok(())
    };
    let launch_gemm = || -> Res<()> {
        let args = (
            a_full.device_ptr(),
            b.device_ptr(),
            c.device_ptr(),
            n32,
            k32,
        );
        unsafe { gemm.launch_with(stream, gemm_cfg, args)? };
        Ok(())
    };
    let launch_fused = || -> Res<()> {
        epoch.set(epoch.get() + 1);
        let args = (
            a_shard.sym_ptr(),
            a_full.device_ptr(),
            flags.device_ptr(),
            b.device_ptr(),
            c.device_ptr(),
            mloc32,
            n32,
            k32,
            epoch.get(),
        );
        unsafe { fused.launch_with(stream, fused_cfg, args)? };
        Ok(())
    };
    let launch_p2p = || -> Res<()> {
        let args = (
            a_shard.sym_ptr(),
            b.device_ptr(),
            c.device_ptr(),
            mloc32,
            n32,
            k32,
        );
        unsafe { fused_p2p.launch_with(stream, fused_cfg, args)? };
        Ok(())
    };

    // Every PE's shard is in place before anyone reads it.
    nv.barrier_all_on_stream(stream)?;
    nv.synchronize(stream)?;

    // ---- Correctness: each variant once, from NaN-filled staging and output.
    let checked = |launch: &dyn Fn() -> Res<()>| -> Res<Vec<f32>> {
        a_full.fill(stream, f32::NAN)?;
        c.fill(stream, f32::NAN)?;
        nv.barrier_all_on_stream(stream)?;
        launch()?;
        nv.synchronize(stream)?;
        Ok(c.to_vec(stream)?)
    };
    let c_ref = checked(&|| {
        launch_allgather()?;
        launch_gemm()
    })?;
    let c_fused = checked(&launch_fused)?;
    let c_p2p = if peers_p2p {
        Some(checked(&launch_p2p)?)
    } else {
        None
    };

    let scale = c_ref.iter().fold(0f32, |acc, v| {
        if v.is_nan() {
            f32::NAN
        } else {
            acc.max(v.abs())
        }
    });
    let diff_tol = 1e-5 * scale.max(1.0);
    let mut ok = true;
    let mut report = Vec::new();
    let mut compare = |name: &str, got: &[f32]| {
        let diff = max_abs_diff(got, &c_ref);
        let pass = diff <= diff_tol; // NaN fails
        ok &= pass;
        report.push(format!(
            "{name} vs unfused: max abs err {diff:.3e}{}",
            if diff == 0.0 { " (bit-identical)" } else { "" }
        ));
    };
    compare("fused", &c_fused);
    if let Some(p) = &c_p2p {
        compare("fused_p2p", p);
    }
    let (cpu_err, cpu_ok) = cpu_check(o, me, m, &[&c_ref, &c_fused], c_p2p.as_deref());
    ok &= cpu_ok;
    report.push(format!(
        "CPU f64 on {} samples: max abs err {cpu_err:.3e}",
        o.samples
    ));
    println!(
        "ag_gemm PE {me}/{npes}: M={m} (m_per_pe {m_loc}) k={k} n={n}: {}: {}",
        if ok { "PASS" } else { "FAIL" },
        report.join("; ")
    );

    // ---- Timing: median of `iters` runs after `warmup`, one barrier before each.
    let ev = || -> Res<CudaEvent> {
        Ok(nv
            .context()
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?)
    };
    let (e0, e1, e2) = (ev()?, ev()?, ev()?);
    // Medians of [start → e1, e1 → end, start → end]; the launch records e1
    // between its two kernels when `split`.
    let time = |launch: &dyn Fn() -> Res<()>, split: bool| -> Res<[f64; 3]> {
        let (mut first, mut second, mut total) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..o.warmup + o.iters {
            nv.barrier_all_on_stream(stream)?;
            e0.record(stream)?;
            launch()?;
            e2.record(stream)?;
            nv.synchronize(stream)?;
            if i >= o.warmup {
                total.push(e0.elapsed_ms(&e2)? as f64);
                if split {
                    first.push(e0.elapsed_ms(&e1)? as f64);
                    second.push(e1.elapsed_ms(&e2)? as f64);
                }
            }
        }
        Ok([median(&mut first), median(&mut second), median(&mut total)])
    };
    let [ag_ms, gemm_ms, unfused_ms] = time(
        &|| {
            launch_allgather()?;
            e1.record(stream)?;
            launch_gemm()
        },
        true,
    )?;
    let [_, _, fused_ms] = time(&launch_fused, false)?;
    let p2p_ms = if peers_p2p {
        Some(time(&launch_p2p, false)?[2])
    } else {
        None
    };

    let tflops = |ms: f64| 2.0 * m as f64 * n as f64 * k as f64 / (ms * 1e-3) / 1e12;
    let mut line = format!(
        "ag_gemm PE {me}: unfused {unfused_ms:.3} ms (all-gather {ag_ms:.3} + gemm {gemm_ms:.3}; {:.1} TFLOP/s) | \
         fused {fused_ms:.3} ms ({:.1} TFLOP/s, speedup {:.2}x)",
        tflops(unfused_ms),
        tflops(fused_ms),
        unfused_ms / fused_ms
    );
    match p2p_ms {
        Some(p) => {
            line += &format!(
                " | fused_p2p {p:.3} ms ({:.1} TFLOP/s, speedup {:.2}x)",
                tflops(p),
                unfused_ms / p
            )
        }
        None => line += " | fused_p2p skipped: not every peer is P2P-reachable",
    }
    println!("{line}");
    nv.barrier_all_on_stream(stream)?;
    nv.synchronize(stream)?;
    Ok(ok)
}

/// Checks `--samples` entries of each result against an f64 dot product,
/// spread over every shard's rows. Returns the largest error and whether every
/// entry is within `k · ε_f32 · Σ|a·b|` (a bound for any summation order).
fn cpu_check(
    o: &Opts,
    me: usize,
    m: usize,
    results: &[&[f32]],
    extra: Option<&[f32]>,
) -> (f64, bool) {
    let (k, n) = (o.k, o.n);
    let mut rng = 0x2545_f491_4f6c_dd1du64 ^ me as u64;
    let (mut worst, mut ok) = (0f64, true);
    for s in 0..o.samples {
        rng = splitmix(rng);
        let shard = s % (m / o.m_per_pe);
        let i = shard * o.m_per_pe + (rng as usize >> 8) % o.m_per_pe;
        let j = (rng >> 40) as usize % n;
        let (mut dot, mut mag) = (0f64, 0f64);
        for kk in 0..k {
            let p = a_val(i, kk) as f64 * b_val(me, kk, j) as f64;
            dot += p;
            mag += p.abs();
        }
        let tol = k as f64 * f32::EPSILON as f64 * mag + 1e-30;
        for r in results.iter().copied().chain(extra) {
            let err = (r[i * n + j] as f64 - dot).abs();
            if err.is_nan() || err > tol {
                ok = false;
            }
            worst = if err.is_nan() {
                f64::NAN
            } else {
                worst.max(err)
            };
        }
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

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A value in [-1, 1) from a hash.
fn unit(h: u64) -> f32 {
    ((h >> 40) as i32 - (1 << 23)) as f32 / (1 << 23) as f32
}

/// Element `(row, col)` of the full A (`M × k`).
fn a_val(row: usize, col: usize) -> f32 {
    unit(splitmix(((row as u64) << 32) | col as u64))
}

/// Element `(row, col)` of PE `pe`'s B (`k × n`).
fn b_val(pe: usize, row: usize, col: usize) -> f32 {
    unit(splitmix(
        splitmix(0xb0b0_0000 + pe as u64) ^ ((row as u64) << 32) ^ col as u64,
    ))
}
