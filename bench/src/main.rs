//! `nvshmem-bench`: Rust kernels against their CUDA C++ twins and NCCL.
//!
//! ```text
//! nvshmem-bench [run] [--check] [--quick] [--cpp NAME=CUBIN]... [--no-nccl]
//!               [--reps N] [--warmup N] [--only CASE,...] [--csv PATH] [--plots DIR]
//! nvshmem-bench render CSV [--plots DIR] [--pes LABEL]
//! nvshmem-bench gemm [--sizes LIST] [--no-fused] [--no-cublas] [--reps N] [--warmup N] [--csv PATH] [--plots DIR]
//! ```
//! Run N PEs with `nvshmem-run -n N -- nvshmem-bench ...`; `bench/run.sh`
//! builds the C++ cubins and runs everything. `render` redraws the table and
//! the plots from a CSV, without a GPU.

use nvshmem_bench::measure::{Bench, Options, Res};
use nvshmem_bench::report;
use std::path::PathBuf;

const USAGE: &str = "\
usage: nvshmem-bench [run] [--check] [--quick] [--cpp NAME=CUBIN]... [--no-nccl]
                     [--reps N] [--warmup N] [--only CASE,...] [--csv PATH] [--plots DIR]
       nvshmem-bench render CSV [--plots DIR] [--pes LABEL]
       nvshmem-bench gemm [--sizes LIST] [--no-fused] [--no-cublas] [--reps N] [--warmup N]
                          [--csv PATH] [--plots DIR]   (bf16 tensor-core GEMMs vs cuBLAS, AG+GEMM, GEMM+RS)

  --check        correctness only (small sizes, every check, nothing timed)
  --quick        fewer sizes
  --cpp N=PATH   also time the C++ cubin PATH as implementation N (cpp, cpp-lto)
  --no-nccl      skip NCCL (else libnccl.so is loaded from the library path)
  --only LIST    only cases whose name contains one of these
                 (copy, p_lat, g_lat, put_lat, get_lat, amo_lat, amo_tput,
                  pingpong, barrier, put_bw, get_bw, allreduce)";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = if args.first().map(String::as_str) == Some("render") {
        render(&args[1..])
    } else if args.first().map(String::as_str) == Some("gemm") {
        gemm(&args[1..])
    } else {
        let rest = if args.first().map(String::as_str) == Some("run") {
            &args[1..]
        } else {
            &args[..]
        };
        run(rest)
    };
    match result {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("nvshmem-bench: {e}");
            std::process::exit(1);
        }
    }
}

fn run(args: &[String]) -> Res<bool> {
    let mut opts = Options::default();
    let mut csv = None;
    let mut plots = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(true);
            }
            "--check" => opts.check = true,
            "--quick" => opts.quick = true,
            "--no-nccl" => opts.nccl = false,
            "--cpp" => {
                let v = val()?;
                let (n, p) = v.split_once('=').ok_or("--cpp takes NAME=PATH")?;
                opts.cpp.push((n.to_string(), PathBuf::from(p)));
            }
            "--reps" => opts.reps = val()?.parse::<usize>()?.max(1),
            "--warmup" => opts.warmup = val()?.parse()?,
            "--only" => opts.only = val()?.split(',').map(String::from).collect(),
            "--csv" => csv = Some(PathBuf::from(val()?)),
            "--plots" => plots = Some(PathBuf::from(val()?)),
            other => return Err(format!("unknown argument `{other}`\n{USAGE}").into()),
        }
    }
    let check = opts.check;
    let nv = nvshmem_host::Nvshmem::options()
        .symmetric_size(if check { 256 << 20 } else { 2 << 30 })
        .init()?;
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
        println!("{}", report::targets(&bench.records));
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

fn render(args: &[String]) -> Res<bool> {
    let mut csv = None;
    let mut plots = None;
    let mut pes = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--plots" => plots = it.next().map(PathBuf::from),
            "--pes" => pes = it.next().cloned(),
            s if csv.is_none() && !s.starts_with('-') => csv = Some(PathBuf::from(s)),
            other => return Err(format!("unknown argument `{other}`\n{USAGE}").into()),
        }
    }
    let csv = csv.ok_or(format!("render needs a CSV\n{USAGE}"))?;
    let (info, records) = report::from_csv(&std::fs::read_to_string(&csv)?)?;
    for (k, v) in &info {
        println!("- {k}: {v}");
    }
    println!("\n{}", report::table(&records));
    println!("{}", report::targets(&records));
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

/// `nvshmem-bench gemm`: see `nvshmem_bench::gemm`.
fn gemm(args: &[String]) -> Res<bool> {
    use nvshmem_bench::gemm::{self, GemmOptions};
    let mut o = GemmOptions::default();
    let (mut csv, mut plots) = (None, None);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--sizes" => {
                o.sizes = val()?
                    .split(',')
                    .map(str::parse)
                    .collect::<Result<_, _>>()?
            }
            "--no-fused" => o.fused = false,
            "--no-cublas" => o.cublas = false,
            "--reps" => o.reps = val()?.parse::<usize>()?.max(1),
            "--warmup" => o.warmup = val()?.parse()?,
            "--samples" => o.samples = val()?.parse()?,
            "--csv" => csv = Some(PathBuf::from(val()?)),
            "--plots" => plots = Some(PathBuf::from(val()?)),
            other => return Err(format!("unknown argument `{other}`\n{USAGE}").into()),
        }
    }
    if let Some(bad) = o.sizes.iter().find(|&&s| s == 0 || !s.is_multiple_of(256)) {
        return Err(format!("--sizes: {bad} is not a positive multiple of 256").into());
    }
    let largest = o.sizes.iter().copied().max().unwrap_or(0) as u64;
    // A, B, C, the gathered A and the f32 partials of the largest size, twice over.
    let heap = (largest * largest * 16).max(256 << 20) + (256 << 20);
    let nv = nvshmem_host::Nvshmem::options()
        .symmetric_size(heap as usize)
        .init()?;
    let lead = nv.my_pe().index() == 0;
    let result = gemm::run(&nv, &o)?;
    if lead {
        println!("{}", gemm::table(&result.records));
        if let Some(path) = csv {
            let info = vec![("PEs".to_string(), nv.n_pes().to_string())];
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
