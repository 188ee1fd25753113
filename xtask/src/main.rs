//! `cargo xtask`: this repository's own tasks.
//!
//! - `ptx`: every kernel crate of the workspace into `ptx/`, for CUDA C++ hosts;
//! - `gpu-pack`: what a GPU machine without Rust needs for one purpose, into
//!   `.gpu-<purpose>/` (each under the device tool's 64 MiB);
//! - `gpu-run`: on that machine, from the pack, the GPU suites of its modes,
//!   with a PASS/FAIL/SKIPPED table last. It runs here too, where every mode
//!   goes as far as it can without a GPU;
//! - `matrix`: the coverage kernels through `ptxas` for every supported NVSHMEM
//!   version, CUDA major and sm_80/sm_90/sm_100, with the table of `README.md`;
//! - `clippy-kernels`: clippy on the kernel crates for the GPU target;
//! - `bench`: the benchmark's C++ twins built with nvcc, their SASS, and
//!   `nvshmem-bench` on each PE count (results in `bench/results/`);
//! - `cpp-host`: the C++ drop-in host built with nvcc (from pip wheels when
//!   no CUDA is installed) against a kernel crate's header, and run;
//! - `init-cost`: NVSHMEM init, Rust against the same init in C++.
//! - `check-links`: the relative links of the README and the guide (`docs/`);
//! - `python-test`: the Python package's tests that need no GPU (pytest).

mod bench;
mod candidates;
mod cpp_host;
mod init_cost;
mod links;
mod lint;
mod matrix;
mod ncu;
mod nvcc;
mod pack;
mod ptx;
mod python;
mod run;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "cargo xtask", about = "This repository's own tasks.", version)]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Build every kernel crate of the workspace into ptx/nvshmem-<version>/<arch>/.
    Ptx(ptx::Args),
    /// Pack the binaries, kernels and libraries one purpose needs on a GPU machine without Rust.
    GpuPack(pack::Args),
    /// Run a pack's GPU suites (on the GPU machine, from the pack; here, as far as they go).
    GpuRun(run::Args),
    /// Clippy on every kernel crate for the GPU target (nvptx64), with the pinned nightly.
    ClippyKernels(lint::Args),
    /// Build the benchmark's C++ twins with nvcc, dump SASS, and run nvshmem-bench on each PE count.
    Bench(bench::Args),
    /// Build the coverage kernels through ptxas for every NVSHMEM version x CUDA major x {sm_80, sm_90, sm_100}.
    Matrix(matrix::Args),
    /// Build examples/cpp_host/main.cu with nvcc against kernel crates' headers, and run it on 1 and 2 PEs.
    CppHost(cpp_host::Args),
    /// NVSHMEM init at 1 PE: Rust (runtime_costs --init-only) against C++ (bench/cpp/init.cu), alternating.
    InitCost(init_cost::Args),
    /// Check that every relative link of README.md and docs/*.md resolves (files and #anchors).
    CheckLinks,
    /// The Python package's tests that need no GPU (python/tests/test_offline.py), with pytest.
    PythonTest(python::Args),
}

fn main() -> ExitCode {
    let result = match Cli::parse().task {
        Task::Ptx(args) => ptx::run(args),
        Task::GpuPack(args) => pack::run(args),
        Task::GpuRun(args) => run::run(args),
        Task::ClippyKernels(args) => lint::run(args),
        Task::CppHost(args) => cpp_host::run(args),
        Task::Bench(args) => bench::run(args),
        Task::InitCost(args) => init_cost::run(args),
        Task::CheckLinks => links::run(),
        Task::Matrix(args) => matrix::run(args),
        Task::PythonTest(args) => python::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The repository's root (this crate's parent folder), when run through cargo;
/// else the current folder.
fn repo_root() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(|d| std::path::PathBuf::from(d).join(".."))
        .and_then(|d| d.canonicalize().ok())
        .unwrap_or_else(|| std::env::current_dir().expect("a current folder"))
}

/// Runs a command, failing with its command line when it does not succeed.
fn check(cmd: &mut std::process::Command) -> Result<(), String> {
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed ({status})"))
    }
}

/// Runs a command and writes what it printed to `to`, failing with its
/// command line and its error output when it does not succeed.
fn stdout_to(cmd: &mut std::process::Command, to: &std::path::Path) -> Result<(), String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    std::fs::write(to, out.stdout).map_err(|e| format!("{}: {e}", to.display()))
}

/// `c` under coreutils' `timeout` (`secs`, then SIGKILL 10 s later), with
/// its settings. coreutils signals the command's whole process group, so a
/// hung child (a profiled program under `ncu`) goes too: a hung step cannot
/// eat the device call.
fn timed(c: std::process::Command, secs: u64) -> std::process::Command {
    let mut t = std::process::Command::new("timeout");
    t.args(["-k", "10", &secs.to_string()])
        .arg(c.get_program())
        .args(c.get_args());
    for (k, v) in c.get_envs() {
        match v {
            Some(v) => t.env(k, v),
            None => t.env_remove(k),
        };
    }
    if let Some(d) = c.get_current_dir() {
        t.current_dir(d);
    }
    t
}
