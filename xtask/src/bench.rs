//! `cargo xtask bench`: the benchmark figures on a GPU machine. Builds the
//! CUDA C++ twins (`bench/cpp/kernels.cu`) with `nvcc -rdc=true` against
//! `libnvshmem_device.a`, device-linked into a cubin, and again with `-dlto`;
//! dumps their SASS and the Rust cubins' into `<results>/sass/` (ignored by
//! git); then runs `nvshmem-bench` on each PE count (CUDA MPS started when
//! there are more PEs than GPUs) and writes `pe<N>.csv`, the table
//! `pe<N>.md`, SVG plots in `pe<N>/` and the log `pe<N>.log`.
//!
//! `--candidates DIR` (`--build-candidates` to build them): the candidate
//! builds of `xtask/src/candidates.rs` timed in the same runs as `rust-<name>`.
//! `--check`: correctness only, nothing timed or written but the logs.
//! `--build-only`: the C++ cubins and the SASS, no GPU needed.

use crate::ncu;
use crate::nvcc::{self, Nvcc, run_shown, shell_line};
use crate::run::{BASE_ENV, Mps};
use nvshmem_builder::{Arch, Version};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// The PE counts to run (more than 1 through nvshmem-run).
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    pes: Vec<u32>,
    /// Correctness only: every kernel once, every result checked, nothing timed.
    #[arg(long)]
    check: bool,
    /// Build the C++ cubins (and dump SASS) only: no GPU needed.
    #[arg(long, conflicts_with = "check")]
    build_only: bool,
    /// Where the results go [default: bench/results].
    #[arg(long)]
    results: Option<PathBuf>,
    /// The root package's kernels (the all-reduce) [default: ptx/nvshmem-<version>/<arch>, from `cargo xtask ptx`].
    #[arg(long)]
    ptx_dir: Option<PathBuf>,
    /// The benchmark's kernels (bench-kernels) [default: the --ptx-dir folder].
    #[arg(long)]
    bench_ptx_dir: Option<PathBuf>,
    /// The benchmark program [default: target/release/nvshmem-bench].
    #[arg(long)]
    bench: Option<PathBuf>,
    /// The launcher [default: target/release/nvshmem-run].
    #[arg(long)]
    launcher: Option<PathBuf>,
    /// GPU architecture of the C++ twins.
    #[arg(long, default_value_t = Arch::DEFAULT)]
    arch: Arch,
    /// The NVSHMEM version the kernels were linked against.
    #[arg(long, default_value = "3.4.5")]
    nvshmem_version: Version,
    /// Also time the candidate builds (`xtask/src/candidates.rs`) found in
    /// this folder (`<DIR>/<name>/nvshmem-<version>/<arch>/`), as `rust-<name>`.
    #[arg(long, value_name = "DIR")]
    candidates: Option<PathBuf>,
    /// Build the candidates into the --candidates folder first (needs Rust;
    /// default folder: target/bench-candidates).
    #[arg(long)]
    build_candidates: bool,
    /// Skip the `-dlto` C++ build (its figures equal the plain build's).
    #[arg(long)]
    no_lto: bool,
    /// Skip the SVG plots.
    #[arg(long)]
    no_plots: bool,
    /// Seconds each run may take.
    #[arg(long, default_value = "300")]
    timeout: u64,
    /// Profile the 1-PE run's kernels whose names match this regex with
    /// Nsight Compute (`ncu` on PATH): memory tables, warp stalls and source
    /// counters of every matching launch in `ncu-pe1.ncu-rep`, and as CSV in
    /// `ncu-pe1.csv` (details) and `ncu-pe1-raw.csv` (every metric). ncu
    /// replays each launch many times: pass few (`-- --reps 2 --warmup 1`).
    /// The timings of that run are ncu's, not the benchmark's.
    #[arg(long, value_name = "REGEX")]
    ncu: Option<String>,
    /// More arguments for nvshmem-bench (after `--`), such as `--quick` or `--only p_lat,put_bw`.
    #[arg(last = true)]
    extra: Vec<String>,
}

pub fn run(args: Args) -> Result<ExitCode, String> {
    if args.ncu.is_some() {
        ncu::on_path()?;
    }
    let root = crate::repo_root();
    let release = root.join("target/release");
    let results = args
        .results
        .clone()
        .unwrap_or_else(|| root.join("bench/results"));
    let ptx = args.ptx_dir.clone().unwrap_or_else(|| {
        root.join(format!(
            "ptx/nvshmem-{}/{}",
            args.nvshmem_version, args.arch
        ))
    });
    let bench_ptx = args.bench_ptx_dir.clone().unwrap_or_else(|| ptx.clone());
    let build = root.join("target/bench-cpp");
    let sass = results.join("sass");
    for d in [&results, &build, &sass] {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }

    // 1. The C++ twins: the documented way, then with -dlto.
    let cubins = cpp_twins(&args, &root, &build, &sass, [&ptx, &bench_ptx])?;
    let candidates = match (&args.candidates, args.build_candidates) {
        (dir, true) => {
            let dir = dir
                .clone()
                .unwrap_or_else(|| root.join("target/bench-candidates"));
            crate::candidates::build(&root, &dir, args.nvshmem_version, args.arch)?
        }
        (Some(dir), false) => {
            let found = crate::candidates::find(dir, args.nvshmem_version, args.arch);
            if found.is_empty() {
                return Err(format!(
                    "no candidate builds in {} (make them with --build-candidates)",
                    dir.display()
                ));
            }
            found
        }
        (None, false) => Vec::new(),
    };
    for (name, dir) in &candidates {
        let cubin = dir.join("bench-kernels.cubin");
        if cubin.is_file() {
            dump(
                nvcc_cuobjdump().as_deref(),
                &cubin,
                &sass,
                &format!("rust-{name}-bench-kernels"),
            );
            let ar = dir.join("allreduce-kernels.cubin");
            dump(
                nvcc_cuobjdump().as_deref(),
                &ar,
                &sass,
                &format!("rust-{name}-allreduce-kernels"),
            );
        }
    }
    if args.build_only {
        return Ok(ExitCode::SUCCESS);
    }
    if !crate::run::gpu_present() {
        println!("SKIPPED: no GPU here (nvidia-smi lists none): C++ built, nothing run");
        return Ok(ExitCode::SUCCESS);
    }
    let machine = Command::new("nvidia-smi")
        .args(["--query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm"])
        .arg("--format=csv")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let _ = std::fs::write(results.join("machine.txt"), machine);

    // 2. NCCL: cudarc opens libnccl.so by name; the pip wheel has libnccl.so.2.
    let mut ld_path = std::env::var_os("LD_LIBRARY_PATH").unwrap_or_default();
    match nccl_dir(&build)? {
        Some(dir) => {
            let mut v = dir.into_os_string();
            if !ld_path.is_empty() {
                v.push(":");
                v.push(&ld_path);
            }
            ld_path = v;
        }
        None => println!("NCCL not found (no nvidia-nccl pip package): NCCL not measured"),
    }

    // 3. The runs.
    let bench = args
        .bench
        .clone()
        .unwrap_or_else(|| release.join("nvshmem-bench"));
    let launcher = args
        .launcher
        .clone()
        .unwrap_or_else(|| release.join("nvshmem-run"));
    let gpus = gpu_count();
    let mut mps = None;
    let mut failed = 0;
    for &n in &args.pes {
        if n as usize > gpus && mps.is_none() {
            mps = Some(Mps::start()?);
        }
        let mut cmd = if n == 1 {
            match &args.ncu {
                Some(regex) => ncu::run(
                    regex,
                    ncu::MEMORY_SECTIONS,
                    &results.join("ncu-pe1"),
                    &bench,
                    args.timeout,
                ),
                None => Command::new(&bench),
            }
        } else {
            let mut c = Command::new(&launcher);
            c.args(["-n", &n.to_string(), "--timeout", &args.timeout.to_string()])
                .arg("--")
                .arg(&bench);
            c
        };
        if args.check {
            cmd.arg("--check");
        }
        for (name, cubin) in &cubins {
            cmd.arg("--cpp").arg(format!("{name}={}", cubin.display()));
        }
        for (name, dir) in &candidates {
            cmd.arg("--rust").arg(format!("{name}={}", dir.display()));
        }
        cmd.args(&args.extra);
        let csv = results.join(format!("pe{n}.csv"));
        if !args.check {
            cmd.arg("--csv").arg(&csv);
            if !args.no_plots {
                cmd.arg("--plots").arg(results.join(format!("pe{n}")));
            }
        }
        cmd.envs(BASE_ENV.iter().copied())
            .env("NVSHMEM_RS_PTX_DIR", &ptx)
            .env("NVSHMEM_RS_BENCH_PTX_DIR", &bench_ptx)
            .env("LD_LIBRARY_PATH", &ld_path);
        if mps.is_some() {
            cmd.envs(Mps::env());
        }
        let log = results.join(format!(
            "pe{n}{}.log",
            if args.check { "-check" } else { "" }
        ));
        // The launcher has its own timeout; one PE gets this one.
        let ok = tee(&mut cmd, &log, Duration::from_secs(args.timeout + 30))?;
        if ok && !args.check {
            render(&bench, &csv, &results.join(format!("pe{n}.md")))?;
        }
        // A run cut short leaves no report: say why, and count it failed.
        let exported = match (n, &args.ncu) {
            (1, Some(_)) => ncu::export(&results.join("ncu-pe1"))
                .map_err(|e| println!("bench: {e}"))
                .is_ok(),
            _ => true,
        };
        let ok = ok && exported;
        println!("bench: {n} PE(s): {}", if ok { "PASS" } else { "FAIL" });
        failed += usize::from(!ok);
    }
    drop(mps);
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Builds `cpp` (nvcc -rdc=true, -dlink -cubin) and `cpp-lto` (the same with
/// -dlto) when `kernels.cu` is newer than the cubin; dumps SASS and resource
/// usage of those and of the Rust cubins in `rust_dirs`. Returns `(name, cubin)`
/// of each C++ build that worked.
fn cpp_twins(
    args: &Args,
    root: &Path,
    build: &Path,
    sass: &Path,
    rust_dirs: [&Path; 2],
) -> Result<Vec<(String, PathBuf)>, String> {
    let source = root.join("bench/cpp/kernels.cu");
    let nvcc = match Nvcc::find() {
        Ok(n) => n,
        Err(e) => {
            println!("no nvcc ({e}): C++ not measured");
            return Ok(Vec::new());
        }
    };
    println!("nvcc: {}", nvcc.describe());
    let nv = nvcc::nvshmem(args.nvshmem_version)?;
    let arch_name = args.arch.to_string();
    let sm = arch_name.trim_start_matches("sm_");
    let arch = format!("-arch={}", args.arch);
    let builds: [(&str, Vec<String>, Vec<String>); 2] = [
        (
            "cpp",
            vec!["-rdc=true".into(), arch.clone()],
            vec![arch.clone()],
        ),
        (
            "cpp-lto",
            vec![
                "-rdc=true".into(),
                "-gencode".into(),
                format!("arch=compute_{sm},code=lto_{sm}"),
            ],
            vec!["-dlto".into(), arch.clone()],
        ),
    ];
    let cuobjdump = nvcc.cuobjdump();
    let mut cubins = Vec::new();
    for (name, compile, link) in builds {
        if args.no_lto && name == "cpp-lto" {
            continue;
        }
        let (obj, cubin) = (
            build.join(format!("{name}.o")),
            build.join(format!("{name}.cubin")),
        );
        if !newer(&cubin, &source) {
            let t = Instant::now();
            let built = run_shown(
                nvcc.command()
                    .args(&compile)
                    .arg("-O3")
                    .arg(format!("-I{}", nv.include_dir().display()))
                    .arg("-c")
                    .arg(&source)
                    .arg("-o")
                    .arg(&obj),
            )
            .and_then(|()| {
                run_shown(
                    nvcc.command()
                        .args(&link)
                        .args(["-dlink", "-cubin"])
                        .arg(&obj)
                        .arg(format!("-L{}", nv.lib_dir().display()))
                        .args(nvcc.link_args())
                        .arg("-lnvshmem_device")
                        .arg("-o")
                        .arg(&cubin),
                )
            });
            if let Err(e) = built {
                println!("{name}: the C++ build failed ({e}): {name} not measured");
                continue;
            }
            println!("{name}: built in {:.1} s", t.elapsed().as_secs_f64());
        }
        dump(cuobjdump.as_deref(), &cubin, sass, name);
        cubins.push((name.to_string(), cubin));
    }
    for (dir, k) in rust_dirs.iter().zip(["allreduce-kernels", "bench-kernels"]) {
        let cubin = dir.join(format!("{k}.cubin"));
        if cubin.is_file() {
            dump(cuobjdump.as_deref(), &cubin, sass, &format!("rust-{k}"));
        } else {
            println!(
                "no {}: build the kernels with `cargo xtask ptx`",
                cubin.display()
            );
        }
    }
    if cuobjdump.is_none() {
        println!("no cuobjdump (beside nvcc, on PATH or from pip): no SASS dumped");
    }
    Ok(cubins)
}

/// cuobjdump as the C++ twins' dumps find it, if any.
fn nvcc_cuobjdump() -> Option<PathBuf> {
    Nvcc::find().ok().and_then(|n| n.cuobjdump())
}

/// `cuobjdump -sass` and `-res-usage` of `cubin` into `sass/<name>.{sass,res.txt}`.
fn dump(cuobjdump: Option<&Path>, cubin: &Path, sass: &Path, name: &str) {
    let Some(tool) = cuobjdump else { return };
    for (flag, ext) in [("-sass", "sass"), ("-res-usage", "res.txt")] {
        let out = Command::new(tool).arg(flag).arg(cubin).output();
        let text = match out {
            Ok(o) => [o.stdout, o.stderr].concat(),
            Err(e) => format!("cannot run {}: {e}\n", tool.display()).into_bytes(),
        };
        let _ = std::fs::write(sass.join(format!("{name}.{ext}")), text);
    }
}

/// Whether `a` exists and is newer than `b`.
fn newer(a: &Path, b: &Path) -> bool {
    let m = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    matches!((m(a), m(b)), (Some(a), Some(b)) if a > b)
}

/// A folder with `libnccl.so` pointing to a python package's `libnccl.so.2`.
fn nccl_dir(build: &Path) -> Result<Option<PathBuf>, String> {
    let Some(lib) = nvshmem_builder::install::python_site_packages()
        .into_iter()
        .map(|s| s.join("nvidia/nccl/lib/libnccl.so.2"))
        .find(|p| p.is_file())
    else {
        return Ok(None);
    };
    let dir = build.join("nccl");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let link = dir.join("libnccl.so");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&lib, &link).map_err(|e| format!("{}: {e}", link.display()))?;
    println!("NCCL: {}", lib.display());
    Ok(Some(dir))
}

/// The number of GPUs `nvidia-smi -L` lists.
fn gpu_count() -> usize {
    Command::new("nvidia-smi")
        .arg("-L")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).lines().count())
        .unwrap_or(0)
}

/// `nvshmem-bench render CSV` (the table) into `md`.
fn render(bench: &Path, csv: &Path, md: &Path) -> Result<(), String> {
    crate::stdout_to(Command::new(bench).arg("render").arg(csv), md)?;
    println!("wrote {}", md.display());
    Ok(())
}

/// Runs `cmd` with its output on the console and in `log`; kills it after
/// `limit`. Returns whether it succeeded.
fn tee(cmd: &mut Command, log: &Path, limit: Duration) -> Result<bool, String> {
    println!("+ {}", shell_line(cmd));
    let file = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let file = Arc::new(Mutex::new(file));
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {:?}: {e}", cmd.get_program()))?;
    let copy = |mut from: Box<dyn Read + Send>, console: fn() -> Box<dyn Write>| {
        let file = file.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = from.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let _ = console().write_all(&buf[..n]);
                let _ = file.lock().map(|mut f| f.write_all(&buf[..n]));
            }
        })
    };
    let threads = [
        copy(Box::new(child.stdout.take().expect("piped")), || {
            Box::new(std::io::stdout())
        }),
        copy(Box::new(child.stderr.take().expect("piped")), || {
            Box::new(std::io::stderr())
        }),
    ];
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            break Some(s);
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            println!("timed out after {} s", limit.as_secs());
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    for t in threads {
        let _ = t.join();
    }
    Ok(status.is_some_and(|s| s.success()))
}
