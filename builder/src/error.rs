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
    /// NVSHMEM was not found, or the installation named is not usable.
    #[error(transparent)]
    Nvshmem(#[from] nvshmem_types::install::FindError),

    /// The NVSHMEM version asked for is not one this library supports.
    #[error(
        "NVSHMEM {version} is not supported: this library supports {}. Fix: choose one of those \
         (`Builder::nvshmem_version`, or NVSHMEM_RS_NVSHMEM_VERSION)",
        nvshmem_types::SupportedVersions
    )]
    UnsupportedVersion {
        /// The version asked for.
        version: nvshmem_types::Version,
    },

    /// The architecture string is malformed or not supported.
    #[error(
        "invalid GPU architecture `{arch}`: {}. Write it as `sm_` and the compute capability, such as `sm_90` or `sm_80`",
        nvshmem_types::ParseArchError
    )]
    InvalidArch {
        /// What was given.
        arch: String,
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
        version: nvshmem_types::Version,
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

/// Shorthand for the builder's results.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(feature = "build")]
pub(crate) fn io_err(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.into();
    move |source| Error::Io { path, source }
}
