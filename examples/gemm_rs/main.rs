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
//! The launches and buffers are [`nvshmem_rs::tensor::GemmRs`], which the
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
use nvshmem_host::Nvshmem;
use nvshmem_host::exchange::WordExchange;
use nvshmem_rs::Res;
use nvshmem_rs::cli::{at_least_one, multiple_of};
use nvshmem_rs::measure::{Timer, max_abs_diff};
use nvshmem_rs::tensor::{self, GemmRs, GemmRsKernels, GemmRsShape};
use std::process::ExitCode;

/// gemm_rs: GEMM + reduce-scatter fused in one NVSHMEM kernel (bf16 tensor
/// cores), against the unfused version.
#[derive(Parser, Debug)]
#[command(
    name = "gemm_rs",
    after_help = "Run N PEs with: nvshmem-run -n N -- gemm_rs ...\n\
                  Exit status: 0 when every check passes, 1 on a mismatch or an error, 2 on bad arguments."
)]
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
    /// Timed runs per variant; the median is printed.
    #[arg(long, value_name = "I", default_value_t = 10, value_parser = at_least_one)]
    iters: usize,
    /// Untimed runs per variant first.
    #[arg(long, value_name = "W", default_value_t = 2)]
    warmup: usize,
    /// Entries of C checked against an f64 CPU dot product.
    #[arg(long, value_name = "S", default_value_t = 256)]
    samples: usize,
}

fn main() -> ExitCode {
    let opts = Opts::parse();
    let nv = nvshmem_rs::init_or_exit();
    nvshmem_rs::exit_code(run(&nv, &opts))
}

fn run(nv: &Nvshmem, o: &Opts) -> Res<bool> {
    let stream = nv.stream();
    let (me, npes) = (nv.my_pe().index() as usize, nv.n_pes() as usize);
    let kernels = GemmRsKernels::load(nv)?;
    let ex = WordExchange::new(nv, 3)?;
    let shape = GemmRsShape {
        m_per_pe: o.m_per_pe,
        k_per_pe: o.k_per_pe,
        n: o.n,
        a_seed: 0xa0,
        b_seed: 0xb0,
    };
    let rs = GemmRs::new(nv, &ex, &kernels, shape)?;
    if let Some(q) = rs.unreachable_peer()? {
        println!("gemm_rs PE {me}: skipped: PE {q} is not reachable with loads and stores (P2P)");
        return Ok(true);
    }
    if !rs.has_wgmma() {
        println!("gemm_rs PE {me}: wgmma variants skipped (no sm_90a build)");
    }
    let runs = tensor::variants(rs.has_wgmma(), |tc| rs.unfused(tc), |tc| rs.fused(tc));

    // ---- Correctness.
    let mut ok = true;
    let mut report = Vec::new();
    let mut first: Option<Vec<f32>> = None;
    for (name, launch) in &runs {
        rs.poison()?;
        launch()?;
        let got = rs.result()?;
        let checked = rs.check(&got, o.samples, 0x77 + me as u64);
        ok &= checked.pass();
        let vs = match &first {
            Some(f) => format!(", vs unfused mma {:.3e}", max_abs_diff(&got, f)),
            None => String::new(),
        };
        report.push(format!(
            "{name}: max err {:.3e}{vs}{}",
            checked.worst,
            if checked.pass() { "" } else { " FAIL" }
        ));
        first.get_or_insert(got);
    }
    println!(
        "gemm_rs PE {me}/{npes}: M={} (m_per_pe {}) k_per_pe={} n={}: {}: {} (CPU f64 on {} samples)",
        rs.m(),
        o.m_per_pe,
        o.k_per_pe,
        o.n,
        if ok { "PASS" } else { "FAIL" },
        report.join("; "),
        o.samples
    );

    // ---- Timing.
    let timer = Timer::new(nv, o.warmup, o.iters)?;
    let flops = 2.0 * rs.m() as f64 * o.n as f64 * o.k_per_pe as f64;
    let line = tensor::timed_line(&timer, &runs, flops)?;
    println!("gemm_rs PE {me}:{line}");
    nv.barrier_all_on_stream(stream)?;
    nv.synchronize(stream)?;
    Ok(ok)
}
