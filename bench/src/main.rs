//! `nvshmem-bench`: Rust kernels against their CUDA C++ twins and NCCL.
//!
//! ```text
//! nvshmem-bench [run] [--check] [--quick] [--cpp NAME=CUBIN]... [--rust NAME=DIR]... [--no-nccl]
//!               [--reps N] [--warmup N] [--only CASE,...] [--csv PATH] [--plots DIR]
//! nvshmem-bench render CSV [--plots DIR] [--pes LABEL]
//! nvshmem-bench compare CSV...
//! nvshmem-bench doc [DOC] [--results DIR] [--check]
//! nvshmem-bench gemm [--sizes LIST] [--no-fused] [--no-cublas] [--group ROWS] [--candidates] [--reps N] [--warmup N]
//!                    [--samples N] [--csv PATH] [--plots DIR]
//! ```
//! Run N PEs with `nvshmem-run -n N -- nvshmem-bench ...`; `bench/run.sh`
//! builds the C++ cubins and runs everything. `render` redraws the table and
//! the plots from a CSV, without a GPU; `doc` remakes the generated tables
//! of `BENCHMARKS.md` from `bench/results/`. Without a GPU, `run` and `gemm` print
//! `no GPU: ...` and exit 0.

use clap::{Args, Parser, Subcommand};
use example_cli::{at_least_one, multiple_of};
use nvshmem_bench::gemm::{self, GemmOptions};
use nvshmem_bench::measure::{Bench, Options, Res};
use nvshmem_bench::moe::{self, MoeOptions};
use nvshmem_bench::report;
use std::path::PathBuf;
use std::process::ExitCode;

/// Rust kernels against their CUDA C++ twins and NCCL, with the hardware
/// ceilings: a table, a CSV and SVG plots.
#[derive(Parser)]
#[command(
    name = "nvshmem-bench",
    args_conflicts_with_subcommands = true,
    after_help = "Run N PEs with: nvshmem-run -n N -- nvshmem-bench ...\n\
                  bench/run.sh builds the C++ cubins and runs everything."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// `run`'s options, when no command is given.
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Every case (the default).
    Run(RunArgs),
    /// Redraw the table and the plots from a CSV, without a GPU.
    Render(RenderArgs),
    /// Remake the generated tables of BENCHMARKS.md from the committed CSVs.
    Doc(DocArgs),
    /// bf16 tensor-core GEMMs vs cuBLAS, all-gather + GEMM, GEMM + reduce-scatter.
    Gemm(GemmArgs),
    /// Every Rust implementation (the default and the candidates) against
    /// C++ per family of rows, over one or more runs' CSVs, without a GPU.
    Compare(CompareArgs),
    /// MoE dispatch and combine (low-latency, normal, fp8) against NVSHMEM alltoall + permutations.
    Moe(MoeArgs),
}

#[derive(Args)]
struct MoeArgs {
    /// Expert counts, comma-separated (default 64,256).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    experts: Vec<usize>,
    /// Blocks of the normal-mode kernels (default 24).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    sms: Option<u32>,
    /// Skip the alltoall baseline.
    #[arg(long)]
    no_baseline: bool,
    #[command(flatten)]
    reps: Reps,
    /// Write the records as CSV.
    #[arg(long, value_name = "PATH")]
    csv: Option<PathBuf>,
}

#[derive(Args)]
struct CompareArgs {
    /// CSVs written by `--csv` (say two runs at 1 PE and one at 2 PEs).
    #[arg(required = true)]
    csv: Vec<PathBuf>,
}

/// Where the results go.
#[derive(Args)]
struct Output {
    /// Write the records as CSV.
    #[arg(long, value_name = "PATH")]
    csv: Option<PathBuf>,
    /// Write SVG plots into this folder.
    #[arg(long, value_name = "DIR")]
    plots: Option<PathBuf>,
}

/// How many runs each measurement takes.
#[derive(Args)]
struct Reps {
    /// Timed launches per case, at least 1 (the median is reported).
    #[arg(long, value_name = "N", value_parser = at_least_one)]
    reps: Option<usize>,
    /// Untimed launches first.
    #[arg(long, value_name = "N")]
    warmup: Option<usize>,
}

#[derive(Args)]
struct RunArgs {
    /// Correctness only (small sizes, every check, nothing timed).
    #[arg(long)]
    check: bool,
    /// Fewer sizes.
    #[arg(long)]
    quick: bool,
    /// Also time the C++ cubin PATH as implementation NAME (cpp, cpp-lto).
    #[arg(long, value_name = "NAME=PATH", value_parser = cpp_impl)]
    cpp: Vec<(String, PathBuf)>,
    /// Also time the Rust kernels in folder DIR (`bench-kernels` and
    /// `allreduce-kernels`, built with other device code) as implementation
    /// `rust-NAME` (`cargo xtask bench --candidates`).
    #[arg(long, value_name = "NAME=DIR", value_parser = cpp_impl)]
    rust: Vec<(String, PathBuf)>,
    /// Skip NCCL (else libnccl.so is loaded from the library path).
    #[arg(long)]
    no_nccl: bool,
    #[command(flatten)]
    reps: Reps,
    /// Only cases whose name contains one of these (copy, p_lat, g_lat,
    /// put_lat, get_lat, amo_lat, amo_tput, pingpong, barrier, put_bw,
    /// get_bw, allreduce).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    only: Vec<String>,
    #[command(flatten)]
    out: Output,
}

#[derive(Args)]
struct RenderArgs {
    /// A CSV written by `--csv`.
    csv: PathBuf,
    /// Write SVG plots into this folder.
    #[arg(long, value_name = "DIR")]
    plots: Option<PathBuf>,
    /// The PE label of the plots (default: from the CSV).
    #[arg(long, value_name = "LABEL")]
    pes: Option<String>,
}

#[derive(Args)]
struct DocArgs {
    /// The document (its `<!-- generated: NAME -->` blocks are rewritten).
    #[arg(default_value = "BENCHMARKS.md")]
    doc: PathBuf,
    /// The committed results the tables come from.
    #[arg(long, value_name = "DIR", default_value = "bench/results")]
    results: PathBuf,
    /// Change nothing; fail when the document differs from what the results give.
    #[arg(long)]
    check: bool,
}

#[derive(Args)]
struct GemmArgs {
    /// Square problem sizes M = N = K, comma-separated, multiples of 256
    /// (default 1024,2048,4096,8192).
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = multiple_of(256))]
    sizes: Vec<usize>,
    /// Skip the fused all-gather + GEMM and GEMM + reduce-scatter cases.
    #[arg(long)]
    no_fused: bool,
    /// Skip cuBLAS.
    #[arg(long)]
    no_cublas: bool,
    #[command(flatten)]
    reps: Reps,
    /// Entries of each result checked against the CPU.
    #[arg(long, value_name = "N")]
    samples: Option<usize>,
    /// Band height, in tile rows, of the Rust GEMM kernels' grouped tile
    /// order (default 16; 1 is row-major order).
    #[arg(long, value_name = "ROWS", value_parser = clap::value_parser!(u32).range(1..))]
    group: Option<u32>,
    /// Also time the candidate mma.sync kernels (issue 24), with their registers.
    #[arg(long)]
    candidates: bool,
    #[command(flatten)]
    out: Output,
}

/// NVSHMEM's options with a symmetric heap of `bytes`, unless the
/// environment already sets `NVSHMEM_SYMMETRIC_SIZE` (not empty): that one
/// wins. Under a profiler such as `ncu`, whose thread starts before `main`,
/// the heap cannot be set from here. With CUDA VMM (NVSHMEM's default) the
/// heap grows past it anyway; without, an allocation beyond it fails, naming
/// the variable.
fn heap_options(bytes: usize) -> nvshmem_host::InitOptions {
    let options = nvshmem_host::Nvshmem::options();
    if std::env::var_os("NVSHMEM_SYMMETRIC_SIZE").is_some_and(|v| !v.is_empty()) {
        options
    } else {
        options.symmetric_size(bytes)
    }
}

/// `--cpp NAME=PATH`, `--rust NAME=DIR`.
fn cpp_impl(s: &str) -> Result<(String, PathBuf), String> {
    match s.split_once('=') {
        Some((n, p)) if !n.is_empty() && !p.is_empty() => Ok((n.to_string(), PathBuf::from(p))),
        _ => Err(format!("`{s}` is not NAME=PATH")),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    example_cli::exit_code(match cli.command {
        None => run(cli.run),
        Some(Command::Run(args)) => run(args),
        Some(Command::Render(args)) => render(args),
        Some(Command::Doc(args)) => doc(args),
        Some(Command::Gemm(args)) => gemm(args),
        Some(Command::Compare(args)) => compare(args),
        Some(Command::Moe(args)) => moe(args),
    })
}

fn run(args: RunArgs) -> Res<bool> {
    let defaults = Options::default();
    let opts = Options {
        check: args.check,
        quick: args.quick,
        cpp: args.cpp,
        rust: args.rust,
        nccl: !args.no_nccl,
        reps: args.reps.reps.unwrap_or(defaults.reps),
        warmup: args.reps.warmup.unwrap_or(defaults.warmup),
        only: args.only,
    };
    let Output { csv, plots } = args.out;
    let check = opts.check;
    let nv = example_cli::init_with_or_exit(heap_options(if check { 256 << 20 } else { 2 << 30 }));
    let lead = nv.my_pe().index() == 0;
    let mut bench = Bench::new(&nv, opts)?;
    if lead {
        println!(
            "nvshmem-bench: {} PE(s){}",
            nv.n_pes(),
            if check { ", correctness only" } else { "" }
        );
    }
    bench.run_all()?;
    bench.summary();
    let ok = bench.failures.is_empty();
    if lead && !check {
        println!("\n{}", report::table(&bench.records));
        println!("{}", report::targets(&bench.records, Some(nv.n_pes())));
        if let Some(path) = csv {
            std::fs::write(&path, report::to_csv(&bench.info, &bench.records))?;
            println!("wrote {}", path.display());
        }
        if let Some(dir) = plots {
            let label = format!("{} PE(s)", nv.n_pes());
            let files = report::plots(&bench.records, &dir, &label)?;
            println!("wrote {} plot(s) to {}", files.len(), dir.display());
        }
    }
    if lead {
        println!(
            "nvshmem-bench: {}",
            if ok { "all checks PASS" } else { "FAIL" }
        );
    }
    drop(bench);
    nv.finalize()?;
    Ok(ok)
}

fn render(args: RenderArgs) -> Res<bool> {
    let RenderArgs { csv, plots, pes } = args;
    let (info, records) = report::from_csv(&std::fs::read_to_string(&csv)?)?;
    print!("{}", nvshmem_bench::doc::render(&info, &records));
    if let Some(dir) = plots {
        let label = pes.unwrap_or_else(|| {
            info.iter()
                .find(|(k, _)| k == "PEs")
                .map(|(_, v)| format!("PEs: {v}"))
                .unwrap_or_default()
        });
        let files = report::plots(&records, &dir, &label)?;
        println!("wrote {} plot(s) to {}", files.len(), dir.display());
    }
    Ok(true)
}

/// `nvshmem-bench compare`: see `nvshmem_bench::candidates`.
fn compare(args: CompareArgs) -> Res<bool> {
    let mut runs = Vec::new();
    for path in &args.csv {
        let (info, records) = report::from_csv(&std::fs::read_to_string(path)?)?;
        let label = format!(
            "{} ({} PE)",
            path.file_stem().unwrap_or_default().to_string_lossy(),
            report::pes_of(&info).map_or("?".into(), |p| p.to_string())
        );
        runs.push((label, records));
    }
    println!("{}", nvshmem_bench::candidates::table(&runs));
    Ok(true)
}

/// `nvshmem-bench doc`: see `nvshmem_bench::doc`.
fn doc(args: DocArgs) -> Res<bool> {
    let old =
        std::fs::read_to_string(&args.doc).map_err(|e| format!("{}: {e}", args.doc.display()))?;
    let new = nvshmem_bench::doc::update(&old, &args.results)?;
    match nvshmem_bench::doc::first_difference(&new, &old) {
        None => println!("{}: up to date", args.doc.display()),
        Some((line, want, have)) if args.check => {
            println!(
                "{}: line {line} is `{have}`, the results give `{want}`",
                args.doc.display()
            );
            return Ok(false);
        }
        Some(_) => {
            std::fs::write(&args.doc, new)?;
            println!("{}: tables rewritten", args.doc.display());
        }
    }
    Ok(true)
}

/// `nvshmem-bench gemm`: see `nvshmem_bench::gemm`.
fn gemm(args: GemmArgs) -> Res<bool> {
    let d = GemmOptions::default();
    let o = GemmOptions {
        sizes: if args.sizes.is_empty() {
            d.sizes
        } else {
            args.sizes
        },
        reps: args.reps.reps.unwrap_or(d.reps),
        warmup: args.reps.warmup.unwrap_or(d.warmup),
        cublas: !args.no_cublas,
        fused: !args.no_fused,
        samples: args.samples.unwrap_or(d.samples),
        group: args.group.unwrap_or(d.group),
        candidates: args.candidates,
    };
    let Output { csv, plots } = args.out;
    let largest = o.sizes.iter().copied().max().unwrap_or(0) as u64;
    // A, B, C, the gathered A and the f32 partials of the largest size, twice over.
    let heap = (largest * largest * 16).max(256 << 20) + (256 << 20);
    let nv = example_cli::init_with_or_exit(heap_options(heap as usize));
    let lead = nv.my_pe().index() == 0;
    let result = gemm::run(&nv, &o)?;
    if lead {
        println!("{}", gemm::table(&result.records));
        if let Some(path) = csv {
            let info = vec![
                ("PEs".to_string(), nv.n_pes().to_string()),
                ("NVSHMEM".to_string(), nv.version().to_string()),
                ("GPU".to_string(), nv.context().name()?),
                (
                    "command".to_string(),
                    std::env::args().collect::<Vec<_>>().join(" "),
                ),
            ];
            std::fs::write(&path, report::to_csv(&info, &result.records))?;
            println!("wrote {}", path.display());
        }
        if let Some(dir) = plots {
            let files = gemm::plots(&result.records, &dir, &format!("{} PE(s)", nv.n_pes()))?;
            println!("wrote {} plot(s) to {}", files.len(), dir.display());
        }
        for f in &result.failures {
            println!("FAIL: {f}");
        }
        println!(
            "nvshmem-bench gemm: {}",
            if result.failures.is_empty() {
                "all checks PASS"
            } else {
                "FAIL"
            }
        );
    }
    let ok = result.failures.is_empty();
    drop(result);
    nv.finalize()?;
    Ok(ok)
}

/// `nvshmem-bench moe`: see `nvshmem_bench::moe`.
fn moe(args: MoeArgs) -> Res<bool> {
    let d = MoeOptions::default();
    let o = MoeOptions {
        experts: if args.experts.is_empty() {
            d.experts
        } else {
            args.experts
        },
        sms: args.sms.unwrap_or(d.sms),
        reps: args.reps.reps.unwrap_or(d.reps),
        warmup: args.reps.warmup.unwrap_or(d.warmup),
        baseline: !args.no_baseline,
    };
    // The PE count is known only after init: size the heap for 4 PEs (the
    // most a one-GPU run has), which covers fewer.
    let nv = example_cli::init_with_or_exit(heap_options(moe::heap_bytes(4, &o)));
    let lead = nv.my_pe().index() == 0;
    let result = moe::run(&nv, &o)?;
    if lead {
        println!(
            "nvshmem-bench moe: {} PE(s), hidden {}, top-{}; PE 0's figures (PEs on one GPU share its HBM)",
            nv.n_pes(),
            moe::HIDDEN,
            moe::TOPK
        );
        println!("{}", moe::table(&result.records));
        if let Some(path) = args.csv {
            let info = vec![
                ("PEs".to_string(), nv.n_pes().to_string()),
                ("bench".to_string(), "moe".to_string()),
            ];
            std::fs::write(&path, report::to_csv(&info, &result.records))?;
            println!("wrote {}", path.display());
        }
    }
    for f in &result.failures {
        println!("FAIL: {f}");
    }
    let ok = result.failures.iter().all(|f| f.contains("skipped"));
    if lead {
        println!(
            "nvshmem-bench moe: {}",
            if ok { "all checks PASS" } else { "FAIL" }
        );
    }
    drop(result);
    nv.finalize()?;
    Ok(ok)
}
