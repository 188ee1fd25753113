//! GEMM + reduce-scatter fused into one kernel: the second half of a
//! tensor-parallel MLP layer (the row-parallel linear), in bf16 on the tensor
//! cores, checked and timed against the unfused GEMM then reduce-scatter.
//!
//! ```text
//! cargo build --release --bin gemm_rs && cargo build --release -p nvshmem-host --features cli --bin nvshmem-run
//! target/release/gemm_rs                                  # 1 PE
//! target/release/nvshmem-run -n 2 -- target/release/gemm_rs
//! target/release/gemm_rs --m-per-pe 2048 --k-per-pe 4096 --n 4096 --iters 20
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
//! The launches and buffers are [`example_gemm_rs::GemmRs`], which the
//! benchmark uses too.
//!
//! # Output and checks
//! Each PE checks every variant against an f64 CPU reference on `--samples`
//! of its rows (tolerance `k · ε_f32 · Σ|a·b|`, any summation order) and the
//! fused results against the unfused ones; it prints PASS or FAIL and the
//! median times (CUDA events, a barrier before each run; the fused time
//! includes zeroing C and its barrier, the unfused one the barrier between
//! its kernels), and exits with status 1 on a mismatch.

use clap::Parser;
use example_cli::KernelSet;
use example_cli::Res;
use example_cli::{Timing, multiple_of};
use example_gemm_rs::{GemmRs, GemmRsKernels};
use example_measure::max_abs_diff;
use nvshmem_host::Nvshmem;
use nvshmem_host::exchange::WordExchange;
use std::process::ExitCode;
use tc_gemm::{self as tensor, Shape, Variants};

/// gemm_rs: GEMM + reduce-scatter fused in one NVSHMEM kernel (bf16 tensor
/// cores), against the unfused version.
#[derive(Parser, Debug)]
#[command(name = "gemm_rs", after_help = example_cli::after_help("gemm_rs"))]
struct Opts {
    /// Rows of C each PE ends with, a multiple of 128; M = n_pes * ROWS.
    #[arg(long, value_name = "ROWS", default_value_t = 1024, value_parser = multiple_of(128))]
    m_per_pe: usize,
    /// Each PE's share of the inner dimension, a multiple of 64.
    #[arg(long, value_name = "K", default_value_t = 2048, value_parser = multiple_of(64))]
    k_per_pe: usize,
    /// Columns of C, a multiple of 256.
    #[arg(long = "n", value_name = "N", default_value_t = 4096, value_parser = multiple_of(256))]
    n: usize,
    #[command(flatten)]
    timing: Timing,
    /// Entries of C checked against an f64 CPU dot product.
    #[arg(long, value_name = "S", default_value_t = 256)]
    samples: usize,
}

fn main() -> ExitCode {
    let opts = Opts::parse();
    let nv = example_cli::init_or_exit();
    example_cli::exit_code(run(&nv, &opts))
}

fn run(nv: &Nvshmem, o: &Opts) -> Res<bool> {
    let (me, npes) = (nv.my_pe().index() as usize, nv.n_pes() as usize);
    let kernels = GemmRsKernels::load(nv)?;
    let ex = WordExchange::new(nv, 3)?;
    let shape = Shape {
        m_per_pe: o.m_per_pe,
        k: o.k_per_pe,
        n: o.n,
    };
    let rs = GemmRs::new(nv, &ex, &kernels, shape)?;
    if let Some(q) = rs.unreachable_peer()? {
        println!("gemm_rs PE {me}: skipped: PE {q} is not reachable with loads and stores (P2P)");
        return Ok(true);
    }
    if !rs.has_wgmma() {
        println!("gemm_rs PE {me}: wgmma variants skipped (no sm_90a build)");
    }
    let m = rs.m();
    let cases = Variants {
        runs: tensor::variants(rs.has_wgmma(), |tc| rs.unfused(tc), |tc| rs.fused(tc)),
        title: format!(
            "gemm_rs PE {me}/{npes}: M={m} (m_per_pe {}) k_per_pe={} n={}",
            o.m_per_pe, o.k_per_pe, o.n
        ),
        tag: format!("gemm_rs PE {me}"),
        samples: o.samples,
        flops: 2.0 * m as f64 * o.n as f64 * o.k_per_pe as f64,
    };
    // Each variant once, from NaN-filled buffers, against the CPU and the
    // first (unfused mma); then timed.
    let mut first: Option<Vec<f32>> = None;
    cases.check_and_time(nv, o.timing, |launch| {
        rs.poison()?;
        launch()?;
        let got = rs.result()?;
        let checked = rs.check(&got, o.samples, 0x77 + me as u64);
        let vs = match &first {
            Some(f) => format!(", vs unfused mma {:.3e}", max_abs_diff(&got, f)),
            None => String::new(),
        };
        first.get_or_insert(got);
        Ok((checked, vs))
    })
}
