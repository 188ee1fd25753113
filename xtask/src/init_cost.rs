//! `cargo xtask init-cost`: NVSHMEM init at 1 PE, Rust (`runtime_costs
//! --init-only`) against C++ (`bench/cpp/init.cu`, nvcc from this machine or
//! pip wheels, as the benchmark's C++ twins), the same heap size and the same
//! bootstrap (a PMI singleton), alternating the two programs. Each run's wall
//! time is taken from outside (process start to exit: the dynamic loading of
//! libraries counts on both sides) and its `INIT` line says where the time
//! went inside (host library dlopen, driver, context, NVSHMEM's init).

use crate::nvcc::Nvcc;
use nvshmem_builder::{Arch, Version};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// Heap sizes in bytes, or `default` (NVSHMEM's own).
    #[arg(long, value_delimiter = ',', default_value = "default,268435456")]
    heaps: Vec<String>,
    /// Runs of each program per heap size (alternating).
    #[arg(long, default_value = "3")]
    reps: usize,
    /// The Rust program [default: target/release/examples/runtime_costs].
    #[arg(long)]
    rust: Option<PathBuf>,
    /// The NVSHMEM version the C++ program links.
    #[arg(long, default_value = "3.4.5")]
    nvshmem_version: Version,
    /// GPU architecture of the C++ program's device code.
    #[arg(long, default_value_t = Arch::DEFAULT)]
    arch: Arch,
    /// Also write the runs as CSV here.
    #[arg(long)]
    csv: Option<PathBuf>,
}

/// One run's fields: the `INIT` line's `key=value`s and `wall_ms`.
type Run = BTreeMap<String, String>;

pub fn run(args: Args) -> Result<ExitCode, String> {
    let root = crate::repo_root();
    let nvcc = Nvcc::find()?;
    println!("nvcc: {}", nvcc.describe());
    let cpp = crate::cpp_host::program(
        &nvcc,
        args.nvshmem_version,
        args.arch,
        (&root.join("bench/cpp/init.cu"), &[]),
        &root.join("target/init-cost"),
        "init",
    )?;
    let rust = args
        .rust
        .clone()
        .unwrap_or_else(|| root.join("target/release/examples/runtime_costs"));
    if !crate::run::gpu_present() {
        println!("SKIPPED: no GPU here (nvidia-smi lists none): C++ built, nothing run");
        return Ok(ExitCode::SUCCESS);
    }
    let mut runs: Vec<Run> = Vec::new();
    for heap in &args.heaps {
        for _ in 0..args.reps {
            let mut r = Command::new(&rust);
            r.arg("--init-only");
            let mut c = Command::new(&cpp);
            if heap != "default" {
                r.args(["--heap", heap]);
                c.arg(heap);
            }
            for cmd in [&mut r, &mut c] {
                cmd.envs(crate::run::BASE_ENV.iter().copied());
                runs.push(one(cmd)?);
            }
        }
    }
    let table = summary(&runs, &args.heaps);
    println!("{table}");
    // `one` refused any run without its INIT line, so every run initialized and finalized.
    for heap in &args.heaps {
        let (r, c) = (
            median(&runs, "rust", heap, "total_ms"),
            median(&runs, "cpp", heap, "total_ms"),
        );
        if let (Some(r), Some(c)) = (r, c) {
            println!(
                "PASS: init-cost heap {heap}: {} runs of each program initialized and finalized; in-process init Rust/C++ {:.2} (target <= 1.10: {})",
                args.reps,
                r / c,
                if r <= 1.10 * c { "met" } else { "missed" }
            );
        }
    }
    if let Some(path) = &args.csv {
        let keys = [
            "impl",
            "heap",
            "wall_ms",
            "total_ms",
            "dlopen_ms",
            "driver_ms",
            "context_ms",
            "nvshmem_init_ms",
            "finalize_ms",
        ];
        let mut s = keys.join(",") + "\n";
        for r in &runs {
            let row: Vec<&str> = keys
                .iter()
                .map(|k| r.get(*k).map_or("", String::as_str))
                .collect();
            s += &(row.join(",") + "\n");
        }
        std::fs::write(path, s).map_err(|e| format!("{}: {e}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `cmd` to its end: its `INIT` line's fields and the wall time.
fn one(cmd: &mut Command) -> Result<Run, String> {
    let t = Instant::now();
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {:?}: {e}", cmd.get_program()))?;
    let wall = t.elapsed();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("INIT "))
        .filter(|_| out.status.success())
        .ok_or_else(|| {
            format!(
                "{:?} printed no INIT line ({}): {}{}",
                cmd.get_program(),
                out.status,
                text,
                String::from_utf8_lossy(&out.stderr)
            )
        })?;
    let mut r = parse(line);
    r.insert("wall_ms".into(), format!("{:.1}", wall.as_secs_f64() * 1e3));
    println!("{line} wall_ms={}", r["wall_ms"]);
    Ok(r)
}

/// `INIT <impl> k=v ...` as a map (`impl` included).
fn parse(line: &str) -> Run {
    let mut words = line.split_whitespace().skip(1);
    let mut r = Run::new();
    if let Some(imp) = words.next() {
        r.insert("impl".into(), imp.into());
    }
    for w in words {
        if let Some((k, v)) = w.split_once('=') {
            r.insert(k.into(), v.into());
        }
    }
    r
}

/// The median of field `key` over the runs of `imp` at `heap`.
fn median(runs: &[Run], imp: &str, heap: &str, key: &str) -> Option<f64> {
    let mut v: Vec<f64> = runs
        .iter()
        .filter(|r| {
            r.get("impl").is_some_and(|i| i == imp) && r.get("heap").is_some_and(|h| h == heap)
        })
        .filter_map(|r| r.get(key)?.parse().ok())
        .collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len().checked_sub(1)? / 2).copied()
}

/// A Markdown table of the medians, Rust beside C++, per heap size.
fn summary(runs: &[Run], heaps: &[String]) -> String {
    let keys = [
        ("wall_ms", "process wall (outside)"),
        ("total_ms", "in-process, main to initialized"),
        ("dlopen_ms", "host library dlopen"),
        ("driver_ms", "driver load + cuInit"),
        ("context_ms", "CUDA context"),
        (
            "nvshmem_init_ms",
            "NVSHMEM init (hostlib_init_attr / nvshmemx_init_attr)",
        ),
        ("finalize_ms", "finalize"),
    ];
    let mut s =
        String::from("| heap | step | Rust ms | C++ ms | Rust/C++ |\n|---|---|---:|---:|---:|\n");
    for heap in heaps {
        for (key, what) in keys {
            let (r, c) = (
                median(runs, "rust", heap, key),
                median(runs, "cpp", heap, key),
            );
            let f = |x: Option<f64>| x.map_or("-".into(), |x| format!("{x:.1}"));
            let ratio = match (r, c) {
                (Some(r), Some(c)) if c > 0.0 => format!("{:.2}", r / c),
                _ => String::new(),
            };
            let _ = writeln!(s, "| {heap} | {what} | {} | {} | {ratio} |", f(r), f(c));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_lines_and_medians() {
        let mut runs = Vec::new();
        for (imp, ms) in [
            ("rust", "930.0"),
            ("cpp", "860.0"),
            ("rust", "940.0"),
            ("cpp", "870.0"),
        ] {
            let mut r = parse(&format!(
                "INIT {imp} heap=default total_ms={ms} dlopen_ms=1.0"
            ));
            r.insert("wall_ms".into(), ms.into());
            runs.push(r);
        }
        assert_eq!(runs[0]["total_ms"], "930.0");
        assert_eq!(median(&runs, "rust", "default", "wall_ms"), Some(930.0));
        let t = summary(&runs, &["default".into()]);
        assert!(
            t.contains("| default | process wall (outside) | 930.0 | 860.0 | 1.08 |"),
            "{t}"
        );
    }
}
