//! `cargo run --release` (the default binary): the build script built the kernels; this
//! prints what was built, then runs the ring on 1 and 2 PEs when a GPU is
//! present, or says plainly that none is.
//!
//! ```text
//! cargo run --release --bin demo            # summary + ring on 1 and 2 PEs
//! cargo run --release --bin demo -- 4       # ... and on 4 PEs (one GPU: needs CUDA MPS)
//! ```

use clap::Parser;
use nvshmem_host::Manifest;
use nvshmem_host::launcher::{self, LaunchPlan, Outcome};
use std::process::ExitCode;
use std::time::Duration;

/// Set in the PEs the demo starts: run the ring and report.
const WORKER: &str = "NVSHMEM_RS_DEMO_PE";
const LAPS: u64 = 1000;

/// Lists the kernels the build script built, then runs the ring on 1 and 2
/// PEs (and on each extra PE count given) when a GPU is present.
#[derive(Parser)]
#[command(name = "demo")]
struct Args {
    /// More PE counts to run the ring on, after 1 and 2 (more than 2 PEs on
    /// one GPU need CUDA MPS).
    #[arg(value_name = "PES")]
    more: Vec<usize>,
}

fn main() -> ExitCode {
    if std::env::var_os(WORKER).is_some() {
        // One PE of the demo.
        let nv = example_cli::init_or_exit();
        return example_cli::exit_code(example_ring::run_and_report(&nv, LAPS));
    }
    let args = Args::parse();
    let ptx_dir = example_ring::ptx_dir();
    if let Err(e) = print_summary(&ptx_dir) {
        eprintln!("demo: {e}");
        return ExitCode::FAILURE;
    }
    let gpus = match nvshmem_host::gpu_count() {
        Ok(n) => n,
        Err(e) => {
            println!("\nNo GPU is present, so nothing was run: {e}");
            println!(
                "The PTX above is ready to load on a GPU machine (see docs/guide.md: tests, on a GPU machine)."
            );
            return ExitCode::SUCCESS;
        }
    };
    let counts = [1usize, 2].into_iter().chain(args.more);
    println!(
        "\n{gpus} GPU(s). The ring: a token passed around every PE {LAPS} times with put-with-signal."
    );
    let mut ok = true;
    for n in counts {
        ok &= run_ring(n);
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Lists every kernel crate built into `dir`: kernels, registers, spills.
fn print_summary(dir: &std::path::Path) -> Result<(), String> {
    let mut manifests: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| {
            format!(
                "cannot read {}: {e} (the build script writes it)",
                dir.display()
            )
        })?
        .filter_map(|d| d.ok().map(|d| d.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    manifests.sort();
    println!("Built kernels in {}:", dir.display());
    println!(
        "{:<20} {:>7} {:>9} {:>6}  {:<13}  kernels",
        "crate", "kernels", "max regs", "spills", "cubin"
    );
    for path in manifests {
        let m = Manifest::read(&path)?;
        let regs = m.kernels.iter().filter_map(|k| k.registers).max();
        let spills: u32 = m.kernels.iter().filter_map(|k| k.spill_stores).sum();
        let mut names: Vec<String> = m
            .kernels
            .iter()
            .map(|k| {
                if k.collective {
                    format!("{} (collective)", k.name)
                } else {
                    k.name.clone()
                }
            })
            .collect();
        if names.len() > 6 {
            let more = names.len() - 5;
            names.truncate(5);
            names.push(format!("... {more} more"));
        }
        // How ptxas made the cubin: whole-program or separate (see docs/guide.md).
        let cubin = m.device_link.map_or("none", |d| d.as_str());
        println!(
            "{:<20} {:>7} {:>9} {spills:>6}  {cubin:<13}  {}",
            m.crate_name,
            m.kernels.len(),
            regs.map_or("-".into(), |r| r.to_string()),
            names.join(", ")
        );
    }
    let version = dir
        .parent()
        .and_then(|p| p.file_name())
        .map(|v| v.to_string_lossy().into_owned())
        .unwrap_or_default();
    println!(
        "({version}, {}; PTX, cubin and a C header per crate)",
        dir.file_name().unwrap_or_default().to_string_lossy()
    );
    Ok(())
}

/// Starts `n` PEs of this program, each running the ring; true when all pass.
fn run_ring(n: usize) -> bool {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("demo: cannot find this program: {e}");
            return false;
        }
    };
    let plan = LaunchPlan::new(n, exe.into_os_string())
        .with_timeout(Duration::from_secs(120))
        .with_env(WORKER, "1");
    match launcher::run(&plan) {
        Ok(Outcome::Success) => true,
        Ok(other) => {
            eprintln!("demo: the ring on {n} PEs failed: {other}");
            if n > 2 {
                eprintln!(
                    "demo: more than 2 PEs on one GPU need CUDA MPS (see docs/guide.md, host side)"
                );
            }
            false
        }
        Err(e) => {
            eprintln!("demo: cannot start {n} PEs: {e}");
            false
        }
    }
}
