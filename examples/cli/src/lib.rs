//! What every program of the project (the demo, the examples, the benchmark)
//! does the same way at its edges: find the kernels its build script built,
//! start NVSHMEM or say plainly that there is no GPU, turn a run's outcome
//! into an exit status, and parse the values of its command line (with
//! `clap`, whose derive gives `--help` and errors that name the flag).

#![warn(missing_docs)]

use nvshmem_host::cudarc::driver::sys::CUdevice_attribute;
use nvshmem_host::{Error, InitOptions, Nvshmem};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The result of a run: `Ok(true)` when every check passed.
pub type Res<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// Set to `1` (GPU runners do), a missing GPU is a failure, not a clean exit.
pub const REQUIRE_GPU: &str = nvshmem_host::harness::REQUIRE_GPU;

/// Whether [`REQUIRE_GPU`] is set (as `nvshmem_host::harness::gpu_required`
/// reads it); a value it cannot read ends the process with status 2.
fn require_gpu() -> bool {
    nvshmem_host::harness::gpu_required().unwrap_or_else(|e| {
        eprintln!("{}: {e}", program());
        std::process::exit(2)
    })
}

/// Initializes NVSHMEM with the default options, or exits; see [`init_with_or_exit`].
pub fn init_or_exit() -> Nvshmem {
    init_with_or_exit(Nvshmem::options())
}

/// Initializes NVSHMEM with `options`, or ends the process:
///
/// - no GPU here (no CUDA driver, or a driver that sees no GPU): one line
///   `no GPU: <reason>` on stdout, exit status 0, so that a program run on a
///   CPU machine (or by `mpirun` there, once per rank) ends cleanly; status 1
///   instead when `NVSHMEM_RS_REQUIRE_GPU=1`;
/// - any other error: `<program>: <error>` on stderr, exit status 1.
///
/// An error that is not about the GPU (NVSHMEM not installed, say) on a
/// machine that has no GPU either is reported as `no GPU`: nothing could run
/// there anyway.
pub fn init_with_or_exit(options: InitOptions) -> Nvshmem {
    // Read first: a value it cannot read is an error with a GPU too.
    let required = require_gpu();
    let error = match options.init() {
        Ok(nv) => return nv,
        Err(e) => e,
    };
    let no_gpu = match error {
        Error::NoCudaDriver | Error::NoGpu { .. } => Some(error.to_string()),
        // The GPU is probed after the library is loaded: ask the driver now.
        _ => nvshmem_host::gpu_count().err().map(|e| e.to_string()),
    };
    match no_gpu {
        Some(reason) if !required => {
            println!("no GPU: {}", first_line(&reason));
            std::process::exit(0)
        }
        Some(reason) => {
            eprintln!("{}: {REQUIRE_GPU}=1: no GPU: {reason}", program());
            std::process::exit(1)
        }
        None => {
            eprintln!("{}: {error}", program());
            std::process::exit(1)
        }
    }
}

/// The exit status of a run: success when it returned `Ok(true)`; failure
/// when a check failed (`Ok(false)`, the run printed what) or on an error,
/// which goes to stderr after the program's name.
pub fn exit_code(outcome: Res<bool>) -> ExitCode {
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("{}: {e}", program());
            ExitCode::FAILURE
        }
    }
}

/// This program's file name, for messages.
fn program() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "nvshmem-rs".into())
}

/// The `--help` footer of a program that runs as PEs: how to start N of
/// them, and what its exit status means.
///
/// ```
/// assert!(example_cli::after_help("ring").contains("nvshmem-run -n N -- ring"));
/// ```
pub fn after_help(program: &str) -> String {
    format!(
        "Run N PEs with: nvshmem-run -n N -- {program} [OPTIONS] (or under mpirun, srun or torchrun).\n\
         Exit status: 0 when every check passes, or when there is no GPU (a `no GPU:` line); \
         1 on a failed check or an error; 2 on bad arguments."
    )
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

/// A `clap` value parser for a positive multiple of `step` that fits in a
/// `u32` (the kernels' sizes): `--k 4096`.
///
/// ```
/// let p = example_cli::multiple_of(128);
/// assert_eq!(p("256"), Ok(256));
/// assert!(p("100").unwrap_err().contains("multiple of 128"));
/// assert!(p("0").is_err() && p("x").is_err());
/// ```
pub fn multiple_of(step: usize) -> impl Fn(&str) -> Result<usize, String> + Clone {
    move |s: &str| {
        let v: usize = s
            .trim()
            .parse()
            .map_err(|_| format!("`{s}` is not a whole number"))?;
        if v == 0 || !v.is_multiple_of(step) || v > u32::MAX as usize {
            return Err(format!("must be a positive multiple of {step}, got {v}"));
        }
        Ok(v)
    }
}

/// A `clap` value parser for a count of at least 1 (`--iters`, `--reps`).
///
/// ```
/// assert_eq!(example_cli::at_least_one("3"), Ok(3));
/// assert!(example_cli::at_least_one("0").is_err());
/// ```
pub fn at_least_one(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(v) => Ok(v),
        Err(_) => Err(format!("`{s}` is not a whole number")),
    }
}

/// A byte count: `4096`, `4K`, `16M`, `1G` (also `KB`, `KiB`, ...).
///
/// ```
/// use example_cli::bytes;
/// assert_eq!(bytes("64KiB"), Ok(64 << 10));
/// assert_eq!(bytes("256M"), Ok(256 << 20));
/// assert!(bytes("1X").is_err());
/// ```
pub fn bytes(s: &str) -> Result<usize, String> {
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
    digits
        .parse::<usize>()
        .ok()
        .and_then(|v| v.checked_mul(1 << shift))
        .ok_or_else(|| format!("size `{t}` is not a number of bytes"))
}

/// `--iters` and `--warmup` of the fused-kernel examples (`ag_gemm`,
/// `gemm_rs`), for `#[command(flatten)]`.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct Timing {
    /// Timed runs per variant; the median is printed.
    #[arg(long, value_name = "I", default_value_t = 10, value_parser = at_least_one)]
    pub iters: usize,
    /// Untimed runs per variant first.
    #[arg(long, value_name = "W", default_value_t = 2)]
    pub warmup: usize,
}

/// The folder of the kernels that the calling package's build script built
/// (`example_build` sets `NVSHMEM_RS_PTX_DIR` at compile time): the
/// run-time variable of that name when set (a GPU machine with a copied
/// build, where every package's kernels share one folder), else that one.
#[macro_export]
macro_rules! ptx_dir {
    () => {
        $crate::kernel_dir("NVSHMEM_RS_PTX_DIR", env!("NVSHMEM_RS_PTX_DIR"))
    };
}

/// The kernels a host program takes from one kernel crate's module.
pub trait KernelSet: Sized {
    /// The kernel crate (and module) name: `allreduce-kernels`, ...
    const CRATE: &'static str;

    /// The folder the crate is built into (its package's [`ptx_dir!`]).
    fn dir() -> PathBuf;

    /// Takes them from a loaded module of [`CRATE`](Self::CRATE).
    fn from_module(module: &nvshmem_host::Module) -> Res<Self>;

    /// Loads the module from [`dir`](Self::dir) and takes them.
    fn load(nv: &nvshmem_host::Nvshmem) -> Res<Self> {
        Self::from_module(&nv.load_module_in(Self::dir(), Self::CRATE)?)
    }
}

/// A folder of built kernels: the run-time environment variable `var` when it
/// is set (a GPU machine with a copied build), else `built_in` (the folder a
/// build script wrote, passed in with `env!`).
///
/// ```
/// let d = example_cli::kernel_dir("NVSHMEM_RS_UNSET_FOR_THIS_TEST", "/built/in");
/// assert_eq!(d, std::path::Path::new("/built/in"));
/// ```
pub fn kernel_dir(var: &str, built_in: &str) -> PathBuf {
    std::env::var_os(var)
        .map(Into::into)
        .unwrap_or_else(|| built_in.into())
}

/// The folder of the Hopper-only kernel crates beside the kernel folder
/// `dir`: its `sm_90a` sibling when `dir` is an `sm_90` folder, else `dir`.
///
/// ```
/// use std::path::Path;
/// assert_eq!(example_cli::hopper_dir(Path::new("p/sm_90")), Path::new("p/sm_90a"));
/// assert_eq!(example_cli::hopper_dir(Path::new("p/sm_100")), Path::new("p/sm_100"));
/// ```
pub fn hopper_dir(dir: &Path) -> PathBuf {
    match dir.file_name().and_then(|n| n.to_str()) {
        Some("sm_90") => dir.with_file_name("sm_90a"),
        _ => dir.to_path_buf(),
    }
}

/// The GPU's number of SMs.
pub fn sms(nv: &Nvshmem) -> Res<usize> {
    Ok(nv
        .context()
        .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as usize)
}
