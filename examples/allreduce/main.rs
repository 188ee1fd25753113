//! Gradient all-reduce: every PE holds an `f32` buffer, and after one kernel
//! call every PE holds the element-wise **sum** over all PEs, in place, as in
//! data-parallel training. The reduction runs inside the kernels
//! (`examples/allreduce/kernel`), with NVSHMEM puts, direct loads and signals;
//! no host collective is involved.
//!
//! ```text
//! cargo build --release --example allreduce
//! target/release/examples/allreduce                           # 1 PE
//! nvshmem-run -n 2 -- target/release/examples/allreduce       # 2 PEs
//! nvshmem-run -n 4 -- target/release/examples/allreduce       # 4 PEs (one GPU: CUDA MPS, below)
//! target/release/examples/allreduce --quick --algo both       # both algorithms, small sizes
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
//! nvshmem-run -n 4 -- target/release/examples/allreduce
//! echo quit | nvidia-cuda-mps-control
//! ```

use nvshmem_host::cudarc::driver::sys::{CUdevice_attribute, CUevent_flags};
use nvshmem_host::exchange::WordExchange;
use nvshmem_host::{DevicePtr, Kernel, KernelArgs, Nvshmem, SymBuffer};
use std::cell::Cell;

type Res<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// Threads per block of every kernel.
const THREADS: u32 = 512;
/// The kernels' `UNROLL`: vectors of 4 floats per thread per tile.
const UNROLL: usize = 4;
/// Floats per tile of one block (the kernels' `block_dim * UNROLL * 4`).
const TILE: usize = THREADS as usize * UNROLL * 4;
/// One-shot: floats per block, below which fewer blocks are used.
const ONESHOT_PER_BLOCK: usize = THREADS as usize * 8;
/// Rounds of fill, all-reduce and device check before the timing.
const VERIFY_ROUNDS: usize = 3;

const USAGE: &str = "\
usage: allreduce [--sizes LIST] [--quick] [--iters N] [--warmup N]
                 [--algo auto|oneshot|rsag|both] [--threshold BYTES] [--plain-launch]

  --sizes LIST      buffer sizes in bytes, comma-separated, with K/M/G suffixes
                    (default 4K,64K,1M,16M,256M)
  --quick           4K,64K,1M
  --iters N         timed calls per size (default 20), after --warmup N (default 5)
  --algo A          auto (by size, default), oneshot, rsag, or both (a row each)
  --threshold BYTES largest one-shot size for auto (default 2M / max(n_pes, 2))
  --plain-launch    launch the all-reduce kernels without cuLaunchCooperativeKernel

Run N PEs with: nvshmem-run -n N -- target/release/examples/allreduce [options]";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Algo {
    OneShot,
    RsAg,
}

impl Algo {
    fn name(self) -> &'static str {
        match self {
            Algo::OneShot => "one-shot",
            Algo::RsAg => "rs+ag",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Choice {
    Auto,
    Only(Algo),
    Both,
}

#[derive(Debug)]
struct Options {
    sizes: Vec<usize>,
    iters: usize,
    warmup: usize,
    choice: Choice,
    threshold: Option<usize>,
    plain_launch: bool,
}

fn main() {
    let opts = match parse_args(std::env::args().skip(1)) {
        Ok(Some(opts)) => opts,
        Ok(None) => {
            println!("{USAGE}");
            return;
        }
        Err(msg) => {
            eprintln!("allreduce: {msg}\n{USAGE}");
            std::process::exit(2);
        }
    };
    match run(&opts) {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("allreduce: {e}");
            std::process::exit(1);
        }
    }
}

/// The options, or `None` for `--help`.
fn parse_args(args: impl Iterator<Item = String>) -> Result<Option<Options>, String> {
    let mut opts = Options {
        sizes: ["4K", "64K", "1M", "16M", "256M"]
            .iter()
            .map(|s| parse_size(s))
            .collect::<Result<_, _>>()?,
        iters: 20,
        warmup: 5,
        choice: Choice::Auto,
        threshold: None,
        plain_launch: false,
    };
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        let count = |v: String, what: &str| {
            v.parse::<usize>()
                .map_err(|_| format!("{what}: `{v}` is not a count"))
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(None),
            "--sizes" => {
                opts.sizes = value()?
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(parse_size)
                    .collect::<Result<_, _>>()?;
                if opts.sizes.is_empty() {
                    return Err("--sizes: no size given".into());
                }
            }
            "--quick" => {
                opts.sizes = vec![4 << 10, 64 << 10, 1 << 20];
            }
            "--iters" => opts.iters = count(value()?, "--iters")?.max(1),
            "--warmup" => opts.warmup = count(value()?, "--warmup")?,
            "--algo" => {
                opts.choice = match value()?.as_str() {
                    "auto" => Choice::Auto,
                    "oneshot" | "one-shot" => Choice::Only(Algo::OneShot),
                    "rsag" | "rs+ag" => Choice::Only(Algo::RsAg),
                    "both" => Choice::Both,
                    other => return Err(format!("--algo: unknown algorithm `{other}`")),
                }
            }
            "--threshold" => opts.threshold = Some(parse_size(&value()?)?),
            "--plain-launch" => opts.plain_launch = true,
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(Some(opts))
}

/// `4096`, `4K`, `16M`, `1G` (also `KB`, `KiB`, ...) as bytes: a positive multiple of 4.
fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let upper = t.to_ascii_uppercase();
    let digits = upper.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let shift = match &upper[digits.len()..] {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        _ => return Err(format!("size `{t}`: unknown unit")),
    };
    let bytes = digits
        .parse::<usize>()
        .ok()
        .and_then(|v| v.checked_mul(1 << shift))
        .ok_or_else(|| format!("size `{t}` is not a number of bytes"))?;
    if bytes == 0 || bytes % 4 != 0 {
        return Err(format!(
            "size `{t}`: must be a positive multiple of 4 bytes (f32)"
        ));
    }
    Ok(bytes)
}

/// `4.0 KiB`, `256.0 MiB`.
fn human(bytes: usize) -> String {
    let b = bytes as f64;
    if bytes >= 1 << 30 {
        format!("{:.1} GiB", b / (1u64 << 30) as f64)
    } else if bytes >= 1 << 20 {
        format!("{:.1} MiB", b / (1u64 << 20) as f64)
    } else if bytes >= 1 << 10 {
        format!("{:.1} KiB", b / 1024.0)
    } else {
        format!("{bytes} B")
    }
}

/// The test pattern, the same function as the kernel crate's `pattern`: PE
/// `pe`'s value at index `i` in round `seed`, an integer in 1..=16.
fn pattern(pe: u32, i: u64, seed: u32) -> u32 {
    let mut h = (i as u32) ^ ((i >> 32) as u32).wrapping_mul(0x27d4_eb2f);
    h = h.wrapping_mul(0x9e37_79b1)
        ^ pe.wrapping_add(1).wrapping_mul(0x85eb_ca77)
        ^ seed.wrapping_mul(0xc2b2_ae3d);
    h ^= h >> 15;
    h = h.wrapping_mul(0x2c1b_3c6d);
    h ^= h >> 12;
    (h & 15) + 1
}

/// One size's outcome on this PE.
struct Measured {
    median_s: f64,
    device_errors: u64,
    host_errors: u64,
}

/// Everything a run needs: kernels, buffers, and the counters that must
/// advance identically on every PE.
struct Bench<'a> {
    nv: &'a Nvshmem,
    oneshot: Kernel,
    rs_ag: Kernel,
    fill: Kernel,
    check: Kernel,
    data: SymBuffer<f32>,
    stage: SymBuffer<f32>,
    stage_half: usize,
    scratch: SymBuffer<f32>,
    ready: SymBuffer<u64>,
    done: SymBuffer<u64>,
    errors: SymBuffer<u32>,
    max_grid: u32,
    sms: u32,
    plain_launch: bool,
    epoch: Cell<u64>,
    seed: Cell<u32>,
}

impl Bench<'_> {
    /// The all-reduce grid for `n` floats: the same on every PE.
    fn grid(&self, algo: Algo, n: usize) -> u32 {
        let per_block = match algo {
            Algo::OneShot => ONESHOT_PER_BLOCK,
            Algo::RsAg => TILE * self.nv.n_pes() as usize,
        };
        n.div_ceil(per_block).clamp(1, self.max_grid as usize) as u32
    }

    /// Launches an all-reduce kernel (cooperatively unless `--plain-launch`).
    fn launch_allreduce<A: KernelArgs>(&self, k: &Kernel, grid: u32, args: A) -> Res<()> {
        let stream = self.nv.stream();
        // SAFETY: the all-reduce kernels touch `data[..n]`, `stage[..n]`,
        // `scratch[..grid * TILE]` and `grid * n_pes` signal words, all of
        // which the arguments' buffers hold (see `allreduce`).
        unsafe {
            if self.plain_launch {
                k.launch(stream, grid, THREADS, args)?;
            } else {
                k.launch_collective(stream, grid, THREADS, args)?;
            }
        }
        Ok(())
    }

    /// One all-reduce of `data[..n]` with `algo`, queued on the stream.
    fn allreduce(&self, algo: Algo, n: usize) -> Res<()> {
        let grid = self.grid(algo, n);
        let epoch = self.epoch.get() + 1;
        self.epoch.set(epoch);
        let (data, scratch) = (self.data.sym_ptr(), self.scratch.sym_ptr());
        let (ready, done) = (self.ready.sym_ptr(), self.done.sym_ptr());
        match algo {
            Algo::OneShot => {
                let off = (epoch % 2) as usize * self.stage_half;
                let stage = self.stage.view(off..off + n)?.sym_ptr();
                let args = (data, stage, scratch, ready, n as u64, epoch);
                self.launch_allreduce(&self.oneshot, grid, args)
            }
            Algo::RsAg => {
                let args = (data, scratch, ready, done, n as u64, epoch);
                self.launch_allreduce(&self.rs_ag, grid, args)
            }
        }
    }

    /// A grid for the elementwise fill and check kernels.
    fn elementwise_grid(&self, n: usize) -> u32 {
        n.div_ceil(THREADS as usize).clamp(1, self.sms as usize * 8) as u32
    }

    /// Fills `data[..n]` with this PE's pattern for a new round; returns the round.
    fn fill(&self, n: usize) -> Res<u32> {
        let seed = self.seed.get() + 1;
        self.seed.set(seed);
        let me = self.nv.my_pe().index();
        let args = (self.data.device_ptr(), n as u64, me, seed);
        // SAFETY: writes `n` floats of this PE's `data`, which holds at least `n`.
        unsafe {
            self.fill
                .launch(self.nv.stream(), self.elementwise_grid(n), THREADS, args)?
        };
        Ok(seed)
    }

    /// Counts the wrong elements of `data[..n]` for round `seed` into `errors[slot]`.
    fn check(&self, n: usize, seed: u32, slot: usize) -> Res<()> {
        let errors: DevicePtr<u32> = self.errors.at(slot)?.device_ptr();
        let args = (
            self.data.device_ptr(),
            n as u64,
            self.nv.n_pes(),
            seed,
            errors,
        );
        // SAFETY: reads `n` floats of this PE's `data`; adds to one u32.
        unsafe {
            self.check
                .launch(self.nv.stream(), self.elementwise_grid(n), THREADS, args)?
        };
        Ok(())
    }

    /// Verifies, times and verifies again one size with one algorithm.
    fn measure(&self, algo: Algo, bytes: usize, warmup: usize, iters: usize) -> Res<Measured> {
        let (nv, stream) = (self.nv, self.nv.stream());
        let n = bytes / 4;
        self.errors.fill(stream, 0)?;
        nv.barrier_all_on_stream(stream)?;

        // Rounds of fresh gradients, back to back: fill, all-reduce, check.
        for slot in 0..VERIFY_ROUNDS {
            let seed = self.fill(n)?;
            self.allreduce(algo, n)?;
            self.check(n, seed, slot)?;
        }

        // Timing: back-to-back calls on the same buffer, as nccl-tests does
        // (the values grow; the sums stay finite or become inf, never NaN).
        let ctx = nv.context();
        let mut events = Vec::with_capacity(warmup + iters);
        for _ in 0..warmup + iters {
            let start = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
            let end = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
            start.record(stream)?;
            self.allreduce(algo, n)?;
            end.record(stream)?;
            events.push((start, end));
        }

        // The final round, checked on the device and element by element here.
        let seed = self.fill(n)?;
        self.allreduce(algo, n)?;
        self.check(n, seed, VERIFY_ROUNDS)?;
        nv.synchronize(stream)?;

        let mut times = events[warmup..]
            .iter()
            .map(|(s, e)| Ok(s.elapsed_ms(e)? as f64 * 1e-3))
            .collect::<Res<Vec<f64>>>()?;
        times.sort_by(f64::total_cmp);
        let device_errors = self.errors.to_vec(stream)?.iter().map(|&e| e as u64).sum();
        let host_errors = self.host_check(n, seed)?;
        Ok(Measured {
            median_s: times[times.len() / 2],
            device_errors,
            host_errors,
        })
    }

    /// Copies `data[..n]` back and compares every element with the CPU sum
    /// of every PE's pattern for round `seed`. Returns the number of wrong ones.
    fn host_check(&self, n: usize, seed: u32) -> Res<u64> {
        let (me, np) = (self.nv.my_pe().index(), self.nv.n_pes());
        let got = self.data.view(..n)?.to_vec(self.nv.stream())?;
        let mut wrong = 0u64;
        for (i, &g) in got.iter().enumerate() {
            let want = (0..np).map(|pe| pattern(pe, i as u64, seed)).sum::<u32>() as f32;
            if g != want {
                if wrong < 5 {
                    eprintln!("PE {me}: element {i} of {n} is {g}, expected {want}");
                }
                wrong += 1;
            }
        }
        Ok(wrong)
    }
}

/// One row of the final table.
struct Row {
    bytes: usize,
    algo: Algo,
    grid: u32,
    time_s: f64,
    pass: bool,
}

fn run(opts: &Options) -> Res<bool> {
    let nv = Nvshmem::init()?;
    let stream = nv.stream();
    let (me, np) = (nv.my_pe(), nv.n_pes());
    let lead = me.index() == 0;
    let module = nv.load_module_in(nvshmem_rs::ptx_dir(), "allreduce-kernels")?;
    let oneshot = module.kernel("allreduce_oneshot")?;
    let rs_ag = module.kernel("allreduce_rs_ag")?;

    // Agree on the grid cap and the transport with every PE.
    let exchange = WordExchange::new(&nv, 4)?;
    let sms = nv
        .context()
        .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?
        as u32;
    let cap = oneshot
        .max_collective_blocks(THREADS, 0)?
        .min(rs_ag.max_collective_blocks(THREADS, 0)?)
        .min(2 * sms);
    let grid = nv.agree_on_grid(&exchange, cap)?;
    let (max_grid, all_direct) = (grid.max_grid, grid.all_direct);
    let threshold = opts.threshold.unwrap_or((2 << 20) / np.max(2) as usize);

    let runs: Vec<(usize, Algo)> = opts
        .sizes
        .iter()
        .flat_map(|&bytes| match opts.choice {
            Choice::Auto if bytes <= threshold => vec![(bytes, Algo::OneShot)],
            Choice::Auto => vec![(bytes, Algo::RsAg)],
            Choice::Only(a) => vec![(bytes, a)],
            Choice::Both => vec![(bytes, Algo::OneShot), (bytes, Algo::RsAg)],
        })
        .collect();
    let max_n = runs.iter().map(|&(b, _)| b / 4).max().unwrap_or(1);
    let stage_half = runs
        .iter()
        .filter(|&&(_, a)| a == Algo::OneShot)
        .map(|&(b, _)| b / 4)
        .max()
        .unwrap_or(1)
        .next_multiple_of(4);
    let words = max_grid as usize * np as usize;

    if lead {
        println!(
            "allreduce: {np} PE(s), {} per GPU, NVSHMEM {}; grid up to {max_grid} x {THREADS} threads{}",
            grid.pes_per_gpu,
            nv.version(),
            if opts.plain_launch {
                " (plain launch)"
            } else {
                " (cooperative)"
            }
        );
        println!(
            "  one-shot up to {}, rs+ag above; peers {}",
            human(threshold),
            if all_direct {
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
    }

    let module_kernels = (
        module.kernel("fill_pattern")?,
        module.kernel("check_pattern")?,
    );
    let bench = Bench {
        nv: &nv,
        oneshot,
        rs_ag,
        fill: module_kernels.0,
        check: module_kernels.1,
        data: nv.alloc(max_n)?,
        stage: nv.alloc(2 * stage_half)?,
        stage_half,
        scratch: nv.alloc(if all_direct {
            4
        } else {
            max_grid as usize * TILE
        })?,
        ready: nv.alloc_zeroed(words)?,
        done: nv.alloc_zeroed(words)?,
        errors: nv.alloc_zeroed(VERIFY_ROUNDS + 1)?,
        max_grid,
        sms,
        plain_launch: opts.plain_launch,
        epoch: Cell::new(0),
        seed: Cell::new(0),
    };

    if lead {
        println!(
            "{:>10}  {:>8}  {:>5}  {:>11}  {:>12}  {:>12}  result",
            "size", "algo", "grid", "time (us)", "algbw (GB/s)", "busbw (GB/s)"
        );
    }
    let mut rows = Vec::new();
    let mut all_pass = true;
    for &(bytes, algo) in &runs {
        let m = bench.measure(algo, bytes, opts.warmup, opts.iters)?;
        let ns = (m.median_s * 1e9).round() as u64;
        let everyone = exchange.all_gather(&nv, &[m.host_errors, m.device_errors, ns, 0])?;
        let (host_bad, dev_bad) = everyone
            .iter()
            .fold((0, 0), |(h, d), r| (h + r[0], d + r[1]));
        let time_s = everyone.iter().map(|r| r[2]).max().unwrap_or(ns) as f64 * 1e-9;
        let pass = host_bad == 0 && dev_bad == 0;
        all_pass &= pass;
        if !pass {
            eprintln!(
                "PE {}: {} with {}: {} wrong element(s) in the final check, {} in the device checks",
                me.index(),
                human(bytes),
                algo.name(),
                m.host_errors,
                m.device_errors
            );
        }
        let row = Row {
            bytes,
            algo,
            grid: bench.grid(algo, bytes / 4),
            time_s,
            pass,
        };
        if lead {
            print_row(&row, np);
        }
        rows.push(row);
    }
    nv.synchronize(stream)?;

    if lead {
        println!(
            "\nsummary ({np} PE(s); time = slowest PE's median of {} calls):",
            opts.iters
        );
        println!("  | size | algorithm | time (us) | algbw (GB/s) | result |");
        println!("  |---:|---|---:|---:|---|");
        for r in &rows {
            println!(
                "  | {} | {} | {:.2} | {:.2} | {} |",
                human(r.bytes),
                r.algo.name(),
                r.time_s * 1e6,
                r.bytes as f64 / r.time_s / 1e9,
                if r.pass { "PASS" } else { "FAIL" }
            );
        }
        println!(
            "allreduce: {}",
            if all_pass { "all sizes PASS" } else { "FAIL" }
        );
    }
    Ok(all_pass)
}

fn print_row(r: &Row, np: u32) {
    let algbw = r.bytes as f64 / r.time_s / 1e9;
    let busbw = algbw * 2.0 * (np as f64 - 1.0) / np as f64;
    println!(
        "{:>10}  {:>8}  {:>5}  {:>11.2}  {:>12.2}  {:>12.2}  {}",
        human(r.bytes),
        r.algo.name(),
        r.grid,
        r.time_s * 1e6,
        algbw,
        busbw,
        if r.pass { "PASS" } else { "FAIL" }
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("4K"), Ok(4096));
        assert_eq!(parse_size("256M"), Ok(256 << 20));
        assert_eq!(parse_size("64KiB"), Ok(64 << 10));
        assert_eq!(parse_size("100"), Ok(100));
        assert!(parse_size("6").is_err());
        assert!(parse_size("0").is_err());
        assert!(parse_size("1X").is_err());
    }

    #[test]
    fn pattern_is_small_and_varied() {
        let v: Vec<u32> = (0..64).map(|i| pattern(i % 3, i as u64, 7)).collect();
        assert!(v.iter().all(|&x| (1..=16).contains(&x)));
        assert!(v.iter().any(|&x| x != v[0]));
    }
}
