//! The builder's error type. Every message says what to do about it.

use std::path::PathBuf;

/// Why a build (or an NVSHMEM lookup) failed.
///
/// ```
/// use nvshmem_builder::Error;
/// let e = Error::InvalidArch { arch: "sm90".into() };
/// assert!(e.to_string().contains("sm_90"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No NVSHMEM installation was found.
    #[error(
        "NVSHMEM{} was not found. Searched:\n{}\nFix: run `./x setup` in this repository, or \
         `pip install nvidia-nvshmem-cu13=={}`, or set NVSHMEM_HOME to the folder that holds \
         NVSHMEM's include/ and lib/",
        wanted.as_ref().map(|v| format!(" {v}")).unwrap_or_default(),
        list_paths(searched),
        wanted.as_ref().map(|v| v.to_string()).unwrap_or_else(|| crate::nvshmem::DEFAULT_VERSION.to_string())
    )]
    NvshmemNotFound {
        /// The version asked for, if any.
        wanted: Option<crate::nvshmem::Version>,
        /// Every folder looked at, in search order.
        searched: Vec<PathBuf>,
    },

    /// A folder named explicitly (NVSHMEM_HOME or `nvshmem_home`) is not an NVSHMEM install.
    #[error(
        "{} is not an NVSHMEM installation: {reason}. Fix: point NVSHMEM_HOME at the folder that \
         holds include/non_abi/nvshmem_version.h and lib/ (for a pip install: \
         .../site-packages/nvidia/nvshmem)",
        path.display()
    )]
    NvshmemHomeInvalid {
        /// The folder.
        path: PathBuf,
        /// What is missing.
        reason: String,
    },

    /// The architecture string is malformed.
    #[error(
        "invalid GPU architecture `{arch}`: write it as `sm_` and the compute capability, such as `sm_90` or `sm_80`"
    )]
    InvalidArch {
        /// What was given.
        arch: String,
    },

    /// This NVSHMEM has no device bitcode for the architecture.
    #[error(
        "NVSHMEM {version} has no device bitcode for {arch} (it ships: {}). Fix: choose one of \
         those architectures, or use an NVSHMEM version that supports {arch}",
        available.join(", ")
    )]
    NoBitcodeForArch {
        /// The architecture asked for.
        arch: String,
        /// The NVSHMEM version.
        version: crate::nvshmem::Version,
        /// The architectures it has bitcode for (`any` for one generic file).
        available: Vec<String>,
    },

    /// The Rust toolchain is not a nightly.
    #[error(
        "the kernel crate needs a nightly Rust toolchain (found `{found}`), for the NVPTX \
         backend and -Zbuild-std. Fix: add a rust-toolchain.toml with \
         `channel = \"nightly-2026-05-20\"`, or run cargo with `+nightly-2026-05-20`"
    )]
    NotNightly {
        /// `rustc -V` of the toolchain found.
        found: String,
    },

    /// The `rust-src` component is missing (needed by -Zbuild-std=core).
    #[error(
        "the rust-src component is missing from {toolchain}. Fix: `rustup component add rust-src --toolchain {toolchain}`"
    )]
    RustSrcMissing {
        /// The toolchain's name or sysroot.
        toolchain: String,
    },

    /// The `llvm-tools` component is missing.
    #[error(
        "{tool} was not found in {} (the llvm-tools component). Fix: `rustup component add \
         llvm-tools --toolchain {toolchain}`",
        dir.display()
    )]
    LlvmToolsMissing {
        /// The toolchain's name or sysroot.
        toolchain: String,
        /// The folder that should hold it.
        dir: PathBuf,
        /// The missing tool.
        tool: String,
    },

    /// The LLVM tools are older than the LLVM that wrote NVSHMEM's bitcode.
    #[error(
        "the LLVM tools ({tools}) are older than the LLVM that wrote {} ({producer}), so they \
         cannot read it. Fix: use the toolchain's own llvm-tools (`rustup component add \
         llvm-tools`) from a nightly whose LLVM is at least {producer}; never the system LLVM",
        bitcode.display()
    )]
    LlvmTooOld {
        /// The tools' LLVM version.
        tools: String,
        /// The producer recorded in the bitcode.
        producer: String,
        /// The bitcode file.
        bitcode: PathBuf,
    },

    /// The kernel crate's folder has no Cargo.toml.
    #[error("no kernel crate at {}: expected a Cargo.toml there", path.display())]
    KernelCrateNotFound {
        /// The folder given to the builder.
        path: PathBuf,
    },

    /// rustc rejected the kernel crate.
    #[error("the kernel crate `{crate_name}` failed to compile for nvptx64:\n{diagnostics}")]
    CompileFailed {
        /// The crate.
        crate_name: String,
        /// rustc's and cargo's own messages.
        diagnostics: String,
    },

    /// The kernel crate defines no `extern "ptx-kernel"` function.
    #[error(
        "the kernel crate `{crate_name}` has no kernels. Fix: declare them as \
         `#[unsafe(no_mangle)] pub unsafe extern \"ptx-kernel\" fn name(...)` with \
         `#![feature(abi_ptx)]`"
    )]
    NoKernels {
        /// The crate.
        crate_name: String,
    },

    /// Functions that nothing defines are left in the PTX.
    #[error(
        "the PTX calls functions that neither the kernels nor NVSHMEM {version} define: {}. \
         Fix: check the name and signature of each (a typo in an extern block, or a function \
         this NVSHMEM version lacks)",
        symbols.join(", ")
    )]
    UnresolvedExterns {
        /// The undefined functions.
        symbols: Vec<String>,
        /// The NVSHMEM version linked.
        version: crate::nvshmem::Version,
    },

    /// The kernels call libdevice math functions (`__nv_*`), and no
    /// `libdevice.10.bc` was found.
    #[error(
        "the kernels call libdevice's {} (through nvshmem_device::math), but libdevice.10.bc was \
         not found. Fix: run `./x setup` (it fetches the nvidia-nvvm wheel into .deps/), or \
         `pip install nvidia-nvvm==13.0.*` and set NVSHMEM_RS_LIBDEVICE to its \
         nvidia/cu13/nvvm/libdevice/libdevice.10.bc, or set CUDA_HOME",
        symbols.join(", ")
    )]
    LibdeviceNotFound {
        /// The `__nv_*` functions the module needs.
        symbols: Vec<String>,
    },

    /// A `static_shared!` global cannot be placed in shared memory.
    #[error("{reason}")]
    SharedMemory {
        /// What is wrong with it.
        reason: String,
    },

    /// An external tool failed.
    #[error("{tool} failed ({status}):\n{command}\n{stderr}")]
    ToolFailed {
        /// The tool's name.
        tool: String,
        /// The command line.
        command: String,
        /// Its exit status.
        status: String,
        /// What it printed.
        stderr: String,
    },

    /// An external tool could not be started.
    #[error("cannot run {}: {source}", program.display())]
    ToolNotRunnable {
        /// The program.
        program: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },

    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

fn list_paths(paths: &[PathBuf]) -> String {
    if paths.is_empty() {
        return "  (nothing)".into();
    }
    paths
        .iter()
        .map(|p| format!("  {}", p.display()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Shorthand for the builder's results.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(feature = "build")]
pub(crate) fn io_err(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.into();
    move |source| Error::Io { path, source }
}
