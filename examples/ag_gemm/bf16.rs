//! The bf16 tensor-core half of the example (`--dtype bf16`, or `both`):
//! `C = A · Bᵀ` with A gathered from every PE's shard, B (`n × k`) this PE's
//! weight shard in `Linear` layout, C bf16 with f32 accumulation. Kernels:
//! `examples/ag_gemm/kernel_tc` (push all-gather with signals, fused
//! `mma.sync` and `wgmma` + TMA kernels) and `examples/tc_gemm/kernel` (the
//! standalone GEMMs of the unfused path).
//!
//! Variants, each checked against an f64 CPU dot product on `--samples`
//! entries (bf16 tolerance: `|dot|/128 + k·ε·Σ|a·b|`) and timed:
//! - `unfused mma` / `unfused wgmma`: `ag_push` (every panel to every PE,
//!   itself included), a barrier, then the standalone GEMM on `a_full`;
//! - `fused mma` / `fused wgmma`: one persistent kernel; its first blocks
//!   push this PE's panels while the rest compute the local shard, and tiles
//!   of other shards wait for their panel's signal.
//!
//! The wgmma variants need the `sm_90a` build (H100/H200); elsewhere they are
//! skipped with a message.

use crate::{Opts, Res, median};
use half::bf16;
use nvshmem_host::cudarc::driver::sys::{CUdevice_attribute, CUevent_flags};
use nvshmem_host::exchange::WordExchange;
use nvshmem_host::{LaunchConfig, Nvshmem};
use nvshmem_rs::tensor::{self, DeviceMaps, mma, wgmma};
use std::cell::Cell;

/// Rows per all-gather panel (`ag_gemm_tc_kernels::PANEL`).
const PANEL: usize = 128;

/// Element `(row, col)` of the full A (`M × k`) in bf16.
fn a_val(k: usize, row: usize, col: usize) -> bf16 {
    tensor::bf16_value(0xa, (row * k + col) as u64)
}

/// Element `(row j, col kk)` of PE `pe`'s B (`n × k`).
fn b_val(pe: usize, k: usize, j: usize, kk: usize) -> bf16 {
    tensor::bf16_value(0xb0 + pe as u64, (j * k + kk) as u64)
}

/// Runs the bf16 variants; `Ok(false)` when a check failed.
pub fn run(nv: &Nvshmem, o: &Opts) -> Res<bool> {
    let stream = nv.stream();
    let (me, npes) = (nv.my_pe().index() as usize, nv.n_pes() as usize);
    let (m_loc, k, n) = (o.m_per_pe, o.k, o.n);
    let m = m_loc * npes;
    if !k.is_multiple_of(wgmma::BK) {
        println!(
            "ag_gemm bf16: skipped: --k must be a multiple of {} for the tensor-core kernels",
            wgmma::BK
        );
        return Ok(true);
    }
    let a_host: Vec<bf16> = (0..m_loc * k)
        .map(|i| a_val(k, me * m_loc + i / k, i % k))
        .collect();
    let b_host: Vec<bf16> = (0..n * k).map(|i| b_val(me, k, i / k, i % k)).collect();
    let a_shard = nv.alloc_from(&a_host)?;
    let a_full = nv.alloc::<bf16>(m * k)?;
    let sig = nv.alloc_zeroed::<u64>(npes * (m_loc / PANEL))?;
    let b = nv.alloc_from(&b_host)?;
    let c = nv.alloc::<bf16>(m * n)?;

    let dir = nvshmem_rs::tensor_ptx_dir();
    let agk = nv.load_module_in(&dir, "ag-gemm-tc-kernels")?;
    let gk = nv.load_module_in(&dir, "tc-gemm-kernels")?;
    let push = agk.kernel("ag_push")?;
    let fused_mma = agk.kernel("ag_gemm_mma_fused")?;
    let gemm_mma = gk.kernel("gemm_bf16_mma")?;
    // The wgmma kernels exist in sm_90a builds only; and need n % 256.
    let hopper = match (
        agk.kernel("ag_gemm_wgmma_fused"),
        gk.kernel("gemm_bf16_wgmma"),
    ) {
        (Ok(f), Ok(g)) if n.is_multiple_of(wgmma::BN) => Some((f, g)),
        _ => None,
    };
    // Collective: every PE makes the same maps (its own buffers).
    let maps = DeviceMaps::new(
        nv,
        &[
            tensor::operand_map(a_shard.device_ptr(), m_loc, k, wgmma::A_BOX)?,
            tensor::operand_map(a_full.device_ptr(), m, k, wgmma::A_BOX)?,
            tensor::operand_map(b.device_ptr(), n, k, wgmma::B_BOX)?,
        ],
    )?;
    let ex = WordExchange::new(nv, 3)?;
    let sms = nv
        .context()
        .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?
        as usize;
    let panels = m_loc / PANEL;
    let push_grid = (panels * npes).min(sms).max(1) as u32;
    let pushers = (npes as u32 - 1).clamp(1, 8) * 2;
    let mma_tiles = (m / mma::BM) * (n / mma::BN);
    let mma_grid = tensor::persistent_grid(
        nv,
        &ex,
        &fused_mma,
        mma::THREADS,
        mma::SMEM_BYTES,
        mma_tiles,
    )?;
    let epoch = Cell::new(0u64);
    let (mloc32, n32, k32, m32) = (m_loc as u32, n as u32, k as u32, m as u32);

    // SAFETY (every launch): the buffers have the sizes the kernels' docs ask
    // for (a_shard m_loc×k on every PE, a_full M×k, sig n_pes·panels, b n×k,
    // c M×n), the maps describe them, and the sizes are multiples of the tiles.
    let launch_push = || -> Res<()> {
        epoch.set(epoch.get() + 1);
        let args = (
            a_shard.sym_ptr(),
            a_full.sym_ptr(),
            sig.sym_ptr(),
            mloc32,
            k32,
            epoch.get(),
        );
        unsafe { push.launch(stream, push_grid, 256, args)? };
        // Every PE's pushes have landed before any GEMM reads a_full.
        nv.barrier_all_on_stream(stream)?;
        Ok(())
    };
    let unfused_mma = || -> Res<()> {
        launch_push()?;
        let cfg = LaunchConfig::new(((n / mma::BN) as u32, (m / mma::BM) as u32), mma::THREADS)
            .shared_mem_bytes(mma::SMEM_BYTES);
        unsafe {
            gemm_mma.launch_with(
                stream,
                cfg,
                (
                    a_full.device_ptr(),
                    b.device_ptr(),
                    c.device_ptr(),
                    n32,
                    k32,
                ),
            )?
        };
        Ok(())
    };
    let fused_mma_run = || -> Res<()> {
        epoch.set(epoch.get() + 1);
        let cfg = LaunchConfig::new(mma_grid, mma::THREADS).shared_mem_bytes(mma::SMEM_BYTES);
        let args = (
            a_shard.sym_ptr(),
            a_full.sym_ptr(),
            sig.sym_ptr(),
            b.device_ptr(),
            c.device_ptr(),
            mloc32,
            n32,
            k32,
            epoch.get(),
            pushers,
        );
        unsafe { fused_mma.launch_with(stream, cfg, args)? };
        Ok(())
    };
    let wg_grids = match &hopper {
        Some((f, g)) => {
            let tiles = (m / wgmma::BM) * (n / wgmma::BN);
            Some((
                tensor::persistent_grid(nv, &ex, f, wgmma::THREADS, wgmma::SMEM_BYTES, tiles)?,
                tensor::persistent_grid(nv, &ex, g, wgmma::THREADS, wgmma::SMEM_BYTES, tiles)?,
            ))
        }
        None => None,
    };
    let unfused_wgmma = || -> Res<()> {
        let (Some((_, g)), Some((_, grid))) = (&hopper, wg_grids) else {
            return Ok(());
        };
        launch_push()?;
        let cfg = LaunchConfig::new(grid, wgmma::THREADS).shared_mem_bytes(wgmma::SMEM_BYTES);
        unsafe {
            g.launch_with(
                stream,
                cfg,
                (maps.ptr(1), maps.ptr(2), c.device_ptr(), m32, n32, k32),
            )?
        };
        Ok(())
    };
    let fused_wgmma = || -> Res<()> {
        let (Some((f, _)), Some((grid, _))) = (&hopper, wg_grids) else {
            return Ok(());
        };
        epoch.set(epoch.get() + 1);
        let cfg = LaunchConfig::new(grid, wgmma::THREADS).shared_mem_bytes(wgmma::SMEM_BYTES);
        let args = (
            a_shard.sym_ptr(),
            a_full.sym_ptr(),
            sig.sym_ptr(),
            maps.ptr(0),
            maps.ptr(1),
            maps.ptr(2),
            c.device_ptr(),
            mloc32,
            n32,
            k32,
            epoch.get(),
            pushers,
        );
        unsafe { f.launch_with(stream, cfg, args)? };
        Ok(())
    };

    let mut variants: Vec<(&str, &dyn Fn() -> Res<()>)> =
        vec![("unfused mma", &unfused_mma), ("fused mma", &fused_mma_run)];
    if hopper.is_some() {
        variants.push(("unfused wgmma", &unfused_wgmma));
        variants.push(("fused wgmma", &fused_wgmma));
    } else {
        println!(
            "ag_gemm bf16 PE {me}: wgmma variants skipped (no sm_90a build, or --n not a multiple of {})",
            wgmma::BN
        );
    }

    // ---- Correctness: each variant once, from NaN-filled staging and output.
    let mut ok = true;
    let mut report = Vec::new();
    for (name, launch) in &variants {
        a_full.fill(stream, bf16::NAN)?;
        c.fill(stream, bf16::NAN)?;
        nv.barrier_all_on_stream(stream)?;
        launch()?;
        nv.barrier_all_on_stream(stream)?;
        nv.synchronize(stream)?;
        let got = c.to_vec(stream)?;
        let (worst, pass) = cpu_check(o, me, m, &got);
        ok &= pass;
        report.push(format!(
            "{name}: max err {worst:.3e}{}",
            if pass { "" } else { " FAIL" }
        ));
    }
    println!(
        "ag_gemm bf16 PE {me}/{npes}: M={m} k={k} n={n}: {}: {} (CPU f64 on {} samples)",
        if ok { "PASS" } else { "FAIL" },
        report.join("; "),
        o.samples
    );

    // ---- Timing: median of `iters` runs after `warmup`, one barrier before each.
    let ev = || {
        nv.context()
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
    };
    let (e0, e1) = (ev()?, ev()?);
    let tflops = |ms: f64| 2.0 * m as f64 * n as f64 * k as f64 / (ms * 1e-3) / 1e12;
    let mut line = format!("ag_gemm bf16 PE {me}:");
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
        line += &format!(" | {name} {ms:.3} ms ({:.1} TFLOP/s)", tflops(ms));
    }
    println!("{line}");
    nv.barrier_all_on_stream(stream)?;
    nv.synchronize(stream)?;
    Ok(ok)
}

/// `--samples` entries of C against an f64 dot product, spread over every
/// shard's rows: the largest error and whether all are within tolerance.
fn cpu_check(o: &Opts, me: usize, m: usize, c: &[bf16]) -> (f64, bool) {
    let (k, n) = (o.k, o.n);
    let (mut worst, mut ok) = (0f64, true);
    for s in 0..o.samples {
        let h =
            tensor::bf16_value(0x5a + me as u64, s as u64).to_bits() as usize * 7919 + s * 104_729;
        let i = (s % (m / o.m_per_pe)) * o.m_per_pe + h % o.m_per_pe;
        let j = (h / 13) % n;
        let (mut dot, mut mag) = (0f64, 0f64);
        for kk in 0..k {
            let p = a_val(k, i, kk).to_f64() * b_val(me, k, j, kk).to_f64();
            dot += p;
            mag += p.abs();
        }
        let got = c[i * n + j].to_f64();
        ok &= tensor::bf16_close(got, dot, mag, k);
        worst = if got.is_nan() {
            f64::NAN
        } else {
            worst.max((got - dot).abs())
        };
    }
    (worst, ok)
}
