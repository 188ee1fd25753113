//! The environment the builder reads, and how it reports progress.
//!
//! **Precedence.** A setting made in code ([`Builder::arch`](crate::Builder::arch),
//! [`nvshmem_version`](crate::Builder::nvshmem_version), ...) wins; the
//! environment variable is the default for a setting the code leaves unset;
//! the builder's own default comes last. A build script thus states what its
//! crate needs, and leaves the rest (the arch of the machine at hand, another
//! NVSHMEM) to whoever runs the build.

use crate::error::{Error, Result};
use std::ffi::OsString;
use std::path::PathBuf;

/// Every environment variable the builder reads, and what it does. A build
/// script ([`Builder::build_from_build_script`](crate::Builder::build_from_build_script))
/// prints `cargo:rerun-if-env-changed` for each.
///
/// `PATH` is read too (for `rustup`, `python3`, and `ptxas` as a last
/// resort), but not watched: editors and shells differ in it, and every
/// difference would rerun the kernel build. The tools found through it are
/// watched as files instead (`cargo:rerun-if-changed`).
pub const ENV_VARS: &[(&str, &str)] = &[
    (
        "NVSHMEM_RS_ARCH",
        "GPU architecture, such as sm_90 (default sm_90)",
    ),
    (
        "NVSHMEM_RS_NVSHMEM_VERSION",
        "NVSHMEM version to link against, such as 3.4.5",
    ),
    (
        "NVSHMEM_RS_CUDA_MAJOR",
        "12 or 13: the CUDA major of the NVSHMEM wheel, ptxas and PTX ISA (default: the \
         installation's, else 13)",
    ),
    (
        "NVSHMEM_RS_DEVICE_LINK",
        "auto, whole-program or separate (how ptxas makes the cubin)",
    ),
    (
        "NVSHMEM_RS_PTX_ONLY",
        "1: write PTX without running ptxas (no cubin; announced with a warning)",
    ),
    (
        "NVSHMEM_RS_OFFLINE",
        "1: never download (toolchain, wheels); fail with the command to run instead",
    ),
    (
        "NVSHMEM_RS_TOOLCHAIN",
        "the Rust toolchain for kernel crates: a rustup name, or the path of a sysroot",
    ),
    (
        "NVSHMEM_RS_CACHE",
        "the per-user cache folder for pip wheels",
    ),
    (
        "XDG_CACHE_HOME",
        "the per-user cache is $XDG_CACHE_HOME/nvshmem-rs",
    ),
    ("HOME", "the per-user cache is $HOME/.cache/nvshmem-rs"),
    (
        "NVSHMEM_HOME",
        "an NVSHMEM installation to use (include/ and lib/)",
    ),
    (
        "VIRTUAL_ENV",
        "a Python environment whose nvidia-* packages are used",
    ),
    ("PTXAS", "the ptxas to use"),
    ("NVLINK", "the nvlink to use"),
    (
        "NVSHMEM_RS_LIBDEVICE",
        "the libdevice.10.bc to link when kernels call nvshmem_device::math (or its folder)",
    ),
    (
        "CUDA_HOME",
        "a CUDA installation whose bin/ptxas is used last",
    ),
    ("RUSTUP_HOME", "where rustup keeps toolchains"),
    ("CARGO_HOME", "where rustup is, and cargo's own settings"),
];

/// Reads an environment variable the builder knows (it must be in [`ENV_VARS`]).
pub(crate) fn var(name: &str) -> Option<String> {
    debug_assert!(
        ENV_VARS.iter().any(|(n, _)| *n == name),
        "{name} missing from ENV_VARS"
    );
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// [`var`] as an OsString, for paths.
pub(crate) fn var_os(name: &str) -> Option<OsString> {
    debug_assert!(
        ENV_VARS.iter().any(|(n, _)| *n == name),
        "{name} missing from ENV_VARS"
    );
    std::env::var_os(name).filter(|v| !v.is_empty())
}

/// The file that variable `var` names: `path` when it is a file, else the
/// error that says `var names no <what>`.
pub(crate) fn named_file(var: &str, path: PathBuf, what: &str) -> Result<PathBuf> {
    if path.is_file() {
        Ok(path)
    } else {
        Err(Error::ToolNotRunnable {
            program: path,
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("{var} names no {what}"),
            ),
        })
    }
}

/// A `1`/`0` (also `true`/`false`, `yes`/`no`) variable; unset is `false`.
pub(crate) fn flag(name: &str) -> Result<bool> {
    match var(name).as_deref() {
        None | Some("0" | "false" | "no") => Ok(false),
        Some("1" | "true" | "yes") => Ok(true),
        Some(other) => Err(Error::InvalidSetting {
            name: name.into(),
            value: other.into(),
            expected: "1 or 0".into(),
        }),
    }
}

/// `NVSHMEM_RS_OFFLINE=1`.
pub(crate) fn offline() -> Result<bool> {
    flag("NVSHMEM_RS_OFFLINE")
}

/// Where progress lines and warnings go: a build script's output, else stderr.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Progress {
    /// `eprintln!`.
    #[default]
    Stderr,
    /// A build script: warnings held until it ends (see [`flush_warnings`]).
    BuildScript,
}

impl Progress {
    /// One line of progress, such as a download or an install: on stderr
    /// only, which cargo shows live with `cargo build -vv` and under
    /// `--- stderr` when the build fails; never as a warning.
    pub(crate) fn say(self, line: &str) {
        eprintln!("nvshmem-builder: {line}");
    }

    /// A warning about the build (the kernel crate's compiler warnings, PTX
    /// only), of one or more lines. In a build script it is held and shown once when the script
    /// ends: cargo prints `cargo:warning` lines again under `--- stdout` when
    /// a build script fails, and stderr too.
    pub(crate) fn warn(self, line: &str) {
        match self {
            Progress::Stderr => {
                for l in line.lines() {
                    eprintln!("nvshmem-builder: {l}");
                }
            }
            Progress::BuildScript => held().push(line.to_string()),
        }
    }
}

/// The warnings a build script holds until it ends.
fn held() -> std::sync::MutexGuard<'static, Vec<String>> {
    static HELD: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    HELD.lock().unwrap_or_else(|e| e.into_inner())
}

/// Writes a build script's held warnings once (a crate built for two
/// NVSHMEM versions warns twice): as `cargo:warning` when it `succeeded`,
/// else on stderr, before its error.
pub(crate) fn flush_warnings(succeeded: bool) {
    let mut seen = std::collections::BTreeSet::new();
    let warnings: Vec<String> = held()
        .drain(..)
        .filter(|w| seen.insert(w.clone()))
        .collect();
    for line in warnings.iter().flat_map(|w| w.lines()) {
        if succeeded {
            println!("cargo:warning=nvshmem-builder: {line}");
        } else {
            eprintln!("warning: nvshmem-builder: {line}");
        }
    }
}
