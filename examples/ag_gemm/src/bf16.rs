//! The bf16 tensor-core half of the example (`--dtype bf16`, or `both`):
//! `C = A · Bᵀ` with A gathered from every PE's shard, B (`n × k`) this PE's
//! weight shard in `Linear` layout, C bf16 with f32 accumulation. Kernels:
//! `examples/ag_gemm/kernel_tc` (push all-gather with signals, fused
//! `mma.sync` and `wgmma` + TMA kernels) and `examples/tc_gemm/kernel` (the
//! standalone GEMMs of the unfused path).
//!
//! The launches and buffers are [`example_ag_gemm::AgGemm`], which the
//! benchmark uses too. Variants, each checked against an f64 CPU dot product
//! on `--samples` entries (bf16 tolerance: `|dot|/128 + k·ε·Σ|a·b|`) and timed:
//! - `unfused mma` / `unfused wgmma`: `ag_push` (every panel to every PE,
//!   itself included), a barrier, then the standalone GEMM on `a_full`;
//! - `fused mma` / `fused wgmma`: one persistent kernel; its first blocks
//!   push this PE's panels while the rest compute the local shard, and tiles
//!   of other shards wait for their panel's signal.
//!
//! The wgmma variants need the `sm_90a` build (H100/H200); elsewhere they are
//! skipped with a message.

use crate::Opts;
use example_ag_gemm::{AgGemm, AgGemmKernels};
use example_cli::Res;
use nvshmem_host::Nvshmem;
use nvshmem_host::exchange::WordExchange;
use tc_gemm::{self as tensor, Shape, Variants, wgmma};

/// Runs the bf16 variants; `Ok(false)` when a check failed.
pub fn run(nv: &Nvshmem, o: &Opts) -> Res<bool> {
    let (me, npes) = (nv.my_pe().index() as usize, nv.n_pes() as usize);
    if !o.k.is_multiple_of(wgmma::BK) {
        println!(
            "ag_gemm bf16: skipped: --k must be a multiple of {} for the tensor-core kernels",
            wgmma::BK
        );
        return Ok(true);
    }
    let kernels = AgGemmKernels::load(nv)?;
    let ex = WordExchange::new(nv, 3)?;
    let shape = Shape {
        m_per_pe: o.m_per_pe,
        n: o.n,
        k: o.k,
    };
    let ag = AgGemm::new(nv, &ex, &kernels, shape)?;
    let m = ag.m();
    if !ag.has_wgmma() {
        println!(
            "ag_gemm bf16 PE {me}: wgmma variants skipped (no sm_90a build, or --n not a multiple of {})",
            wgmma::BN
        );
    }
    let cases = Variants {
        runs: tensor::variants(ag.has_wgmma(), |tc| ag.unfused(tc), |tc| ag.fused(tc)),
        title: format!("ag_gemm bf16 PE {me}/{npes}: M={m} k={} n={}", o.k, o.n),
        tag: format!("ag_gemm bf16 PE {me}"),
        samples: o.samples,
        flops: 2.0 * m as f64 * o.n as f64 * o.k as f64,
    };
    // Each variant once, from NaN-filled staging and output, then timed.
    cases.check_and_time(nv, o.timing, |launch| {
        ag.poison()?;
        launch()?;
        nv.barrier_all_on_stream(nv.stream())?;
        Ok((ag.check(o.samples, 0x5a + me as u64)?, String::new()))
    })
}
