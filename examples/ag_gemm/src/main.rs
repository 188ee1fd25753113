//! All-gather + GEMM fused into one kernel: the first half of a
//! tensor-parallel (sequence-parallel) MLP layer, with communication and
//! computation overlapped, checked and timed against the unfused version.
//!
//! ```text
//! cargo build --release --bin ag_gemm && cargo build --release -p nvshmem-host --features cli --bin nvshmem-run
//! target/release/ag_gemm                              # 1 PE
//! target/release/nvshmem-run -n 2 -- target/release/ag_gemm
//! target/release/nvshmem-run -n 4 -- target/release/ag_gemm   # one GPU: needs CUDA MPS
//! target/release/ag_gemm --m-per-pe 4096 --k 4096 --n 4096 --iters 20
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

use clap::{Parser, ValueEnum};
use example_cli::Res;
use example_cli::{Timing, multiple_of};
use example_measure::{Samples, Timer, max_abs_diff, max_nan, median, splitmix};
use nvshmem_host::{LaunchConfig, Nvshmem, Pe};
use std::cell::Cell;
use std::process::ExitCode;

// Typed launches of `examples/ag_gemm/kernel` (built by the root build.rs).
nvshmem_host::include_kernels!(ag_gemm_kernels);

mod bf16;

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

/// ag_gemm: all-gather + GEMM fused in one NVSHMEM kernel, against the unfused version.
#[derive(Parser, Debug)]
#[command(name = "ag_gemm", after_help = example_cli::after_help("ag_gemm"))]
struct Opts {
    /// f32 (CUDA cores), bf16 (tensor cores: mma.sync, and wgmma + TMA on sm_90) or both.
    #[arg(long, value_enum, value_name = "D", default_value_t = Dtype::Both)]
    dtype: Dtype,
    /// Rows of A on each PE, a multiple of 128; M = n_pes * ROWS.
    #[arg(long, value_name = "ROWS", default_value_t = 2048, value_parser = multiple_of(BM))]
    m_per_pe: usize,
    /// The inner dimension, a multiple of 8.
    #[arg(long = "k", value_name = "K", default_value_t = 2048, value_parser = multiple_of(BK))]
    k: usize,
    /// Columns of B and C on each PE, a multiple of 128.
    #[arg(long = "n", value_name = "N", default_value_t = 2048, value_parser = multiple_of(BN))]
    n: usize,
    #[command(flatten)]
    timing: Timing,
    /// Entries of C checked against an f64 CPU dot product.
    #[arg(long, value_name = "S", default_value_t = 512)]
    samples: usize,
}

/// `--dtype`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Dtype {
    /// The f32 kernels on the CUDA cores.
    F32,
    /// The bf16 kernels on the tensor cores.
    Bf16,
    /// Both, f32 first.
    Both,
}

fn main() -> ExitCode {
    let opts = Opts::parse();
    let nv = example_cli::init_or_exit();
    example_cli::exit_code(run(&nv, &opts))
}

/// Runs the requested halves; `Ok(false)` when a check failed.
fn run(nv: &Nvshmem, o: &Opts) -> Res<bool> {
    let mut ok = true;
    if o.dtype != Dtype::Bf16 {
        ok &= run_f32(nv, o)?;
    }
    if o.dtype != Dtype::F32 {
        ok &= bf16::run(nv, o)?;
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

    let kernels = ag_gemm_kernels::Kernels::load_in(nv, example_ag_gemm::ptx_dir())?;
    let kernels = &kernels;

    let sms = example_cli::sms(nv)?;
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
    let (shard, full) = (a_shard.sym_ptr(), a_full.device_ptr());
    let (flag, bp, cp) = (flags.device_ptr(), b.device_ptr(), c.device_ptr());
    // The fused kernel's flag epoch: one more per launch.
    let epoch = Cell::new(0u32);
    // The launches. SAFETY (all four): the buffers have the sizes the
    // kernels' docs ask for (a_shard m_loc×k on every PE, a_full M×k, flags
    // M/BM, b k×n, c M×n), the grids cover exactly M × n, and the sizes are
    // multiples of the tiles (checked by the command line's parsers).
    use ag_gemm_kernels as ag;
    let launch_allgather = || -> Res<()> {
        unsafe {
            ag::ag_allgather(
                kernels, stream, ag_blocks, THREADS, shard, full, mloc32, k32,
            )
        }
        .map_err(Into::into)
    };
    let launch_gemm = || -> Res<()> {
        unsafe { ag::gemm_with(kernels, stream, gemm_cfg, full, bp, cp, n32, k32) }
            .map_err(Into::into)
    };
    let launch_fused = || -> Res<()> {
        epoch.set(epoch.get() + 1);
        let e = epoch.get();
        unsafe {
            ag::ag_gemm_fused_with(
                kernels, stream, fused_cfg, shard, full, flag, bp, cp, mloc32, n32, k32, e,
            )
        }
        .map_err(Into::into)
    };
    let launch_p2p = || -> Res<()> {
        unsafe {
            ag::ag_gemm_fused_p2p_with(kernels, stream, fused_cfg, shard, bp, cp, mloc32, n32, k32)
        }
        .map_err(Into::into)
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

    let scale = c_ref
        .iter()
        .fold(0f64, |acc, &v| max_nan(acc, v.abs() as f64));
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
    // Every result against an f64 dot product on the same sampled entries,
    // within `k · ε_f32 · Σ|a·b|` (a bound for any summation order).
    let samples = Samples {
        count: o.samples,
        seed: 0x2545_f491_4f6c_dd1d ^ me as u64,
        rows: m,
        cols: n,
        k,
    };
    let mut cpu_err = 0f64;
    for r in [&c_ref, &c_fused].into_iter().chain(c_p2p.as_ref()) {
        let checked = samples.check(
            |i, kk| a_val(i, kk) as f64,
            |j, kk| b_val(me, kk, j) as f64,
            |i, j| r[i * n + j] as f64,
            |_, mag| k as f64 * f32::EPSILON as f64 * mag + 1e-30,
        );
        ok &= checked.pass();
        cpu_err = max_nan(cpu_err, checked.worst);
    }
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
    let timer = Timer::new(nv, o.timing.warmup, o.timing.iters)?;
    // The unfused run records `mid` between its two kernels.
    let mid = timer.event()?;
    let (mut gather, mut multiply, mut total) = (Vec::new(), Vec::new(), Vec::new());
    let unfused = || -> Res<()> {
        launch_allgather()?;
        mid.record(stream)?;
        launch_gemm()
    };
    timer.each_run(&unfused, |start, end| {
        gather.push(start.elapsed_ms(&mid)? as f64);
        multiply.push(mid.elapsed_ms(end)? as f64);
        total.push(start.elapsed_ms(end)? as f64);
        Ok(())
    })?;
    let [ag_ms, gemm_ms, unfused_ms] = [&mut gather, &mut multiply, &mut total].map(|v| median(v));
    let fused_ms = timer.median_ms(&launch_fused)?;
    let p2p_ms = if peers_p2p {
        Some(timer.median_ms(&launch_p2p)?)
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

/// Element `(row, col)` of the full A (`M × k`): a value in [-1, 1) from a hash.
fn a_val(row: usize, col: usize) -> f32 {
    unit(splitmix(((row as u64) << 32) | col as u64))
}

/// Element `(row, col)` of PE `pe`'s B (`k × n`).
fn b_val(pe: usize, row: usize, col: usize) -> f32 {
    unit(splitmix(
        splitmix(0xb0b0_0000 + pe as u64) ^ ((row as u64) << 32) ^ col as u64,
    ))
}

/// A value in [-1, 1) from a hash.
fn unit(h: u64) -> f32 {
    ((h >> 40) as i32 - (1 << 23)) as f32 / (1 << 23) as f32
}
