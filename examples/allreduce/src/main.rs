//! Gradient all-reduce: every PE holds an `f32` buffer, and after one kernel
//! call every PE holds the element-wise **sum** over all PEs, in place, as in
//! data-parallel training. The reduction runs inside the kernels
//! (`examples/allreduce/kernel`), with NVSHMEM puts, direct loads and signals;
//! no host collective is involved.
//!
//! ```text
//! cargo build --release --bin allreduce
//! target/release/allreduce                           # 1 PE
//! nvshmem-run -n 2 -- target/release/allreduce       # 2 PEs
//! nvshmem-run -n 4 -- target/release/allreduce       # 4 PEs (one GPU: CUDA MPS, below)
//! mpirun -n 2 target/release/allreduce               # the bootstrap is detected
//! target/release/allreduce --quick --algo both       # both algorithms, small sizes
//! ```
//!
//! # Algorithms
//! - **one-shot** (`allreduce_oneshot`), for small buffers: each PE stages its
//!   buffer, signals, and reads every PE's staged buffer and sums it. One
//!   synchronization round, but each PE reads `n_pes * n` elements.
//! - **rs+ag** (`allreduce_rs_ag`), for large buffers: reduce-scatter fused
//!   with all-gather. PE `k` reads shard `k` from every PE, sums it in
//!   registers and stores the sum into every PE. Two synchronization rounds;
//!   each PE moves `2 (n_pes - 1) / n_pes * n` elements to and from peers, the
//!   least any all-reduce can, and touches each element once, so buffers far
//!   larger than L2 stream through at memory speed.
//!
//! The host side (buffers, signal words, epochs, fill and check rounds) is
//! [`example_allreduce`], which the benchmark uses too.
//!
//! The choice is by size: one-shot up to `2 MiB / max(n_pes, 2)` (1 MiB for
//! 2 PEs, 512 KiB for 4, 256 KiB for 8), rs+ag above. That threshold comes
//! from a model (one-shot's extra `(n_pes - 1)(n_pes - 2) / n_pes * n` peer
//! traffic against rs+ag's second round of signals, a few microseconds over
//! NVLink); `--threshold BYTES` overrides it and `--algo both` measures both.
//!
//! # Synchronization and repeated calls
//! Block `b` of each PE works on the same part of the buffer as block `b` of
//! every other PE and synchronizes only with those, through `u64` signal
//! words set to a per-call epoch (1, 2, 3, ...) and waited on with `>=`:
//! nothing is reset between calls, and calls can follow each other (and the
//! kernels that write the next gradients) on the stream with no host
//! synchronization. The kernel crate's docs give the argument. So the grid
//! must be the same on every PE; the PEs agree on it at start-up.
//!
//! Blocks spin until their peers arrive, so all blocks of all PEs sharing a
//! GPU must be resident at once: the all-reduce kernels are launched
//! cooperatively (`launch_collective`), with the grid capped at
//! `max_collective_blocks / (PEs on this GPU)`.
//!
//! # What it checks and prints
//! For each size (default 4K, 64K, 1M, 16M, 256M bytes; `--quick`: up to 1M)
//! each PE fills its buffer with small integers that depend on PE, index and
//! round (so every float sum is exact), then runs the all-reduce three times
//! with a fresh fill before each and a device-side check after each, times
//! `--iters` back-to-back calls with CUDA events (median), and runs a final
//! call whose result it copies back and checks element by element against a
//! CPU sum. PE 0 prints a line per size (algorithm, grid, median time,
//! algorithm and bus bandwidth, PASS/FAIL) and a table at the end. The exit
//! status is non-zero if any PE saw a wrong element.
//!
//! Bandwidths follow nccl-tests: algbw = bytes / time, busbw = algbw * 2 (n - 1) / n.
//! The time is the slowest PE's median, and includes the launch when the
//! host is slower than the GPU (the smallest sizes).
//!
//! # Several PEs on one GPU
//! Two PEs share a GPU without anything else, but then their kernels are
//! time-sliced, so the all-reduce is correct and its timings are not
//! meaningful. Three or more PEs need CUDA MPS, which runs them side by side:
//!
//! ```text
//! export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
//! mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
//! nvidia-cuda-mps-control -d
//! export NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1
//! nvshmem-run -n 4 -- target/release/allreduce
//! echo quit | nvidia-cuda-mps-control
//! ```

use clap::{Parser, ValueEnum};
use example_allreduce::{self as allreduce, Algo, AllReduce, AllReduceKernels};
use example_cli::KernelSet;
use example_cli::Res;
use example_measure::human;
use nvshmem_host::Nvshmem;
use nvshmem_host::exchange::WordExchange;
use std::process::ExitCode;

/// Rounds of fill, all-reduce and device check before the timing.
const VERIFY_ROUNDS: usize = 3;

/// In-kernel f32 sum all-reduce over every PE, checked and timed.
#[derive(Parser, Debug)]
#[command(name = "allreduce", after_help = example_cli::after_help("allreduce"))]
struct Args {
    /// Buffer sizes in bytes, comma-separated, with K/M/G suffixes
    /// (positive multiples of 4).
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = f32_bytes,
          default_value = "4K,64K,1M,16M,256M", conflicts_with = "quick")]
    sizes: Vec<usize>,
    /// The sizes 4K,64K,1M.
    #[arg(long)]
    quick: bool,
    /// Timed calls per size.
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = example_cli::at_least_one)]
    iters: usize,
    /// Untimed calls per size first.
    #[arg(long, value_name = "N", default_value_t = 5)]
    warmup: usize,
    /// Which algorithm: by size, one of them, or both (a row each).
    #[arg(long, value_enum, value_name = "A", default_value_t = Choice::Auto)]
    algo: Choice,
    /// The largest one-shot size for `auto` (default 2M / max(n_pes, 2)).
    #[arg(long, value_name = "BYTES", value_parser = example_cli::bytes)]
    threshold: Option<usize>,
    /// Launch the all-reduce kernels without cuLaunchCooperativeKernel.
    #[arg(long)]
    plain_launch: bool,
}

/// `--algo`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Choice {
    /// By size: one-shot up to the threshold, rs+ag above.
    Auto,
    /// One-shot only.
    #[value(name = "oneshot", alias = "one-shot")]
    OneShot,
    /// Reduce-scatter + all-gather only.
    #[value(name = "rsag", alias = "rs+ag")]
    RsAg,
    /// Both, a row each.
    Both,
}

/// A buffer size: a positive multiple of 4 bytes (f32).
fn f32_bytes(s: &str) -> Result<usize, String> {
    match example_cli::bytes(s)? {
        b if b > 0 && b % 4 == 0 => Ok(b),
        _ => Err(format!(
            "size `{s}`: must be a positive multiple of 4 bytes (f32)"
        )),
    }
}

fn main() -> ExitCode {
    let mut args = Args::parse();
    if args.quick {
        args.sizes = vec![4 << 10, 64 << 10, 1 << 20];
    }
    let nv = example_cli::init_or_exit();
    example_cli::exit_code(run(&nv, &args))
}

/// One size's outcome on this PE.
struct Measured {
    median_s: f64,
    device_errors: u64,
    host_errors: u64,
}

/// Verifies, times and verifies again one size with one algorithm.
fn measure(ar: &AllReduce, nv: &Nvshmem, algo: Algo, bytes: usize, args: &Args) -> Res<Measured> {
    let stream = nv.stream();
    let n = bytes / 4;
    ar.clear_errors()?;
    nv.barrier_all_on_stream(stream)?;

    // Rounds of fresh gradients, back to back: fill, all-reduce, check.
    for slot in 0..VERIFY_ROUNDS {
        let seed = ar.fill(n)?;
        ar.call(algo, n)?;
        ar.check(n, seed, slot)?;
    }

    // Timing: back-to-back calls on the same buffer, as nccl-tests does
    // (the values grow; the sums stay finite or become inf, never NaN).
    let median_s = example_measure::back_to_back(nv, args.warmup, args.iters, || ar.call(algo, n))?;

    // The final round, checked on the device and element by element here,
    // with the call's signal words (at 1 PE the sum is the input: only they
    // show that the kernel ran).
    let seed = ar.fill(n)?;
    ar.call(algo, n)?;
    ar.check(n, seed, VERIFY_ROUNDS)?;
    nv.synchronize(stream)?;
    Ok(Measured {
        median_s,
        device_errors: ar.device_errors()?,
        host_errors: ar.host_errors(n, seed)? + ar.signal_errors(algo, n)?,
    })
}

/// One row of the final table.
struct Row {
    bytes: usize,
    algo: Algo,
    grid: u32,
    time_s: f64,
    pass: bool,
}

fn run(nv: &Nvshmem, args: &Args) -> Res<bool> {
    let (me, np) = (nv.my_pe(), nv.n_pes());
    let lead = me.index() == 0;
    // From `nvshmem_rs::ptx_dir()` (NVSHMEM_RS_PTX_DIR at run time on a GPU
    // machine), not the bindings' own `load`, which reads the build's folder.
    let kernels = <AllReduceKernels as KernelSet>::load(nv)?;
    let threshold = args.threshold.unwrap_or(allreduce::oneshot_threshold(np));
    let runs: Vec<(usize, Algo)> = args
        .sizes
        .iter()
        .flat_map(|&bytes| match args.algo {
            Choice::Auto => vec![(bytes, Algo::by_size(bytes, threshold))],
            Choice::OneShot => vec![(bytes, Algo::OneShot)],
            Choice::RsAg => vec![(bytes, Algo::RsAg)],
            Choice::Both => vec![(bytes, Algo::OneShot), (bytes, Algo::RsAg)],
        })
        .collect();
    let max_n = runs.iter().map(|&(b, _)| b / 4).max().unwrap_or(1);
    let oneshot_n = runs
        .iter()
        .filter(|&&(_, a)| a == Algo::OneShot)
        .map(|&(b, _)| b / 4)
        .max()
        .unwrap_or(1);
    // Agree on the grid cap and the transport with every PE.
    let exchange = WordExchange::new(nv, 4)?;
    let mut ar = AllReduce::new(nv, &exchange, kernels, &[], max_n, oneshot_n)?;
    ar.plain_launch = args.plain_launch;
    let grid = ar.agreement;
    if lead {
        println!(
            "allreduce: {np} PE(s), {} per GPU, NVSHMEM {}; grid up to {} x {} threads{}",
            grid.pes_per_gpu,
            nv.version(),
            grid.max_grid,
            allreduce::THREADS,
            if args.plain_launch {
                " (plain launch)"
            } else {
                " (cooperative)"
            }
        );
        println!(
            "  one-shot up to {}, rs+ag above; peers {}",
            human(threshold as u64),
            if grid.all_direct {
                "all reached by direct loads/stores"
            } else {
                "partly reached by get/put (no P2P)"
            }
        );
        if nv.limited_mpg() {
            println!(
                "  note: several PEs share this GPU without CUDA MPS, so their kernels time-slice: \
                 results are checked, but the timings are not meaningful"
            );
        }
        println!(
            "{:>10}  {:>8}  {:>5}  {:>11}  {:>12}  {:>12}  result",
            "size", "algo", "grid", "time (us)", "algbw (GB/s)", "busbw (GB/s)"
        );
    }
    let mut rows = Vec::new();
    for &(bytes, algo) in &runs {
        let m = measure(&ar, nv, algo, bytes, args)?;
        let ns = (m.median_s * 1e9).round() as u64;
        let everyone = exchange.all_gather(nv, &[m.host_errors, m.device_errors, ns, 0])?;
        let bad: u64 = everyone.iter().map(|r| r[0] + r[1]).sum();
        let time_s = everyone.iter().map(|r| r[2]).max().unwrap_or(ns) as f64 * 1e-9;
        if m.host_errors + m.device_errors > 0 {
            eprintln!(
                "PE {}: {} with {}: {} wrong element(s) in the final check, {} in the device checks",
                me.index(),
                human(bytes as u64),
                algo.name(),
                m.host_errors,
                m.device_errors
            );
        }
        let row = Row {
            bytes,
            algo,
            grid: ar.grid(algo, bytes / 4),
            time_s,
            pass: bad == 0,
        };
        if lead {
            print_row(&row, np);
        }
        rows.push(row);
    }
    nv.synchronize(nv.stream())?;
    let all_pass = rows.iter().all(|r| r.pass);
    if lead {
        print_summary(&rows, np, args.iters, all_pass);
    }
    Ok(all_pass)
}

fn pass_fail(pass: bool) -> &'static str {
    if pass { "PASS" } else { "FAIL" }
}

fn print_row(r: &Row, np: u32) {
    let algbw = r.bytes as f64 / r.time_s / 1e9;
    let busbw = algbw * 2.0 * (np as f64 - 1.0) / np as f64;
    println!(
        "{:>10}  {:>8}  {:>5}  {:>11.2}  {:>12.2}  {:>12.2}  {}",
        human(r.bytes as u64),
        r.algo.name(),
        r.grid,
        r.time_s * 1e6,
        algbw,
        busbw,
        pass_fail(r.pass)
    );
}

fn print_summary(rows: &[Row], np: u32, iters: usize, all_pass: bool) {
    println!("\nsummary ({np} PE(s); time = slowest PE's median of {iters} calls):");
    println!("  | size | algorithm | time (us) | algbw (GB/s) | result |");
    println!("  |---:|---|---:|---:|---|");
    for r in rows {
        println!(
            "  | {} | {} | {:.2} | {:.2} | {} |",
            human(r.bytes as u64),
            r.algo.name(),
            r.time_s * 1e6,
            r.bytes as f64 / r.time_s / 1e9,
            pass_fail(r.pass)
        );
    }
    println!(
        "allreduce: {}",
        if all_pass { "all sizes PASS" } else { "FAIL" }
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments() {
        let a = Args::try_parse_from(["allreduce", "--quick", "--algo", "one-shot"]).unwrap();
        assert!(a.quick && a.algo == Choice::OneShot);
        let a = Args::try_parse_from(["allreduce", "--sizes", "4K,256M", "--iters=3"]).unwrap();
        assert_eq!((a.sizes, a.iters), (vec![4096, 256 << 20], 3));
        let e = Args::try_parse_from(["allreduce", "--sizes", "6"]).unwrap_err();
        assert!(e.to_string().contains("--sizes"), "{e}");
        assert!(Args::try_parse_from(["allreduce", "--iters", "0"]).is_err());
        assert!(Args::try_parse_from(["allreduce", "--algo", "ring"]).is_err());
    }
}
