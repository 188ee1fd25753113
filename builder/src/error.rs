//! The builder's error type. Every message says what to do about it.

use std::path::PathBuf;

/// Why a build (or an NVSHMEM lookup) failed.
///
/// ```
/// use nvshmem_builder::Error;
/// let e = Error::UnsupportedVersion { version: nvshmem_builder::Version::new(9, 9, 9) };
/// assert!(e.to_string().contains("3.4.5"));
/// // `3.4` is 3.4.0: the message names the release of that line.
/// let e = Error::UnsupportedVersion { version: "3.4".parse().unwrap() };
/// assert!(e.to_string().ends_with("3.4.5 is the supported release of 3.4"));
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
         (`Builder::nvshmem_version`, or NVSHMEM_RS_NVSHMEM_VERSION){}",
        nvshmem_types::SupportedVersions,
        same_line_hint(*version)
    )]
    UnsupportedVersion {
        /// The version asked for.
        version: nvshmem_types::Version,
    },

    /// The CUDA major's `ptxas` cannot compile for the architecture, or not
    /// at the PTX ISA level the NVSHMEM bitcode needs.
    #[error(
        "{arch} cannot be built for CUDA {cuda}: {why}. Fix: choose another architecture, or \
         CUDA 13 (`Builder::cuda_major`, NVSHMEM_RS_CUDA_MAJOR=13, with a CUDA 13 driver)"
    )]
    NotForCuda {
        /// The architecture asked for.
        arch: nvshmem_types::Arch,
        /// The CUDA major of the build.
        cuda: nvshmem_types::CudaMajor,
        /// What is missing.
        why: String,
    },

    /// The installation's CUDA major is not the one asked for.
    #[error(
        "NVSHMEM {} in {} is not built for CUDA {asked}. Fix: install the \
         nvidia-nvshmem-cu{asked} wheel, or ask for CUDA {} (NVSHMEM_RS_CUDA_MAJOR)",
        found.describe(),
        found.root.display(),
        found.cuda.map(|c| c.to_string()).unwrap_or_default()
    )]
    CudaMismatch {
        /// The installation found.
        found: Box<nvshmem_types::install::Installation>,
        /// The CUDA major asked for.
        asked: nvshmem_types::CudaMajor,
    },

    /// The Rust toolchain named is not a nightly.
    #[error(
        "kernel crates need a nightly Rust toolchain (for the NVPTX backend and -Zbuild-std), \
         but NVSHMEM_RS_TOOLCHAIN names `{found}`. Fix: unset it (the builder then uses \
         {pinned}), or name a nightly"
    )]
    NotNightly {
        /// `rustc -V` of the toolchain found.
        found: String,
        /// The nightly the builder uses when none is named.
        pinned: &'static str,
    },

    /// The toolchain that builds kernel crates (or one of its components) is
    /// missing, and the builder could not install it.
    #[error(
        "the Rust toolchain {toolchain} with rust-src and llvm-tools builds the kernel crates, \
         but {why}. Fix: run `{command}`"
    )]
    ToolchainMissing {
        /// The toolchain's name.
        toolchain: String,
        /// What is missing, and why it was not installed.
        why: String,
        /// The command that installs it.
        command: String,
    },

    /// A wheel the build needs is not in the per-user cache, and was not downloaded.
    #[error(
        "not found: {what}; {requirement} was not downloaded into {}: {why}. Fix: \
         `python3 -m pip install '{requirement}'` (python3's packages are searched), or build \
         once where PyPI is reachable and NVSHMEM_RS_OFFLINE is unset. Supported NVSHMEM \
         versions: {}; GPU architectures: {}",
        cache.display(),
        nvshmem_types::SupportedVersions,
        SupportedArchs
    )]
    NotDownloaded {
        /// What it provides ("NVSHMEM 3.4.5", "ptxas and nvlink").
        what: String,
        /// The pip requirement.
        requirement: String,
        /// The per-user cache.
        cache: PathBuf,
        /// Why it was not downloaded.
        why: String,
    },

    /// Neither `NVSHMEM_RS_CACHE`, `XDG_CACHE_HOME` nor `HOME` is set.
    #[error(
        "there is no per-user cache folder for NVSHMEM and ptxas: none of NVSHMEM_RS_CACHE, \
         XDG_CACHE_HOME and HOME is set. Fix: set NVSHMEM_RS_CACHE to a folder"
    )]
    NoCacheDir,

    /// An environment variable the builder reads has a value it cannot use.
    #[error("{name}={value} is not valid: expected {expected}")]
    InvalidSetting {
        /// The variable.
        name: String,
        /// Its value.
        value: String,
        /// What it may be.
        expected: String,
    },

    /// The kernel crate is inside another crate's workspace but not a member.
    #[error(
        "the kernel crate at {} is inside the workspace at {} but is not one of its members. \
         Fix: add it to `members` in {} (kernel crates written with `#[nvshmem_device::kernel]` \
         type-check on the host too), or `exclude = [\"<its path>\"]` it there, or give it an \
         empty `[workspace]` table of its own",
        crate_dir.display(),
        workspace.display(),
        workspace.join("Cargo.toml").display()
    )]
    KernelCrateInWorkspace {
        /// The kernel crate's folder.
        crate_dir: PathBuf,
        /// The workspace root that claims it.
        workspace: PathBuf,
    },

    /// A member of an outer workspace has kernels written `extern "ptx-kernel"`
    /// by hand, which that workspace's host build cannot compile.
    #[error(
        "the kernel crate at {} is a member of the workspace at {}, whose host build cannot \
         compile its hand-written `extern \"ptx-kernel\"` functions ({}). Fix: write them as \
         `#[nvshmem_device::kernel] pub unsafe fn` (the attribute gives them the PTX ABI on the \
         GPU and lets them type-check on the host), or take the crate out of that workspace (an \
         empty `[workspace]` table in its Cargo.toml, or `exclude` in {})",
        crate_dir.display(),
        workspace.display(),
        raw_kernels.join(", "),
        workspace.join("Cargo.toml").display()
    )]
    RawKernelsInWorkspace {
        /// The kernel crate's folder.
        crate_dir: PathBuf,
        /// The workspace root it belongs to.
        workspace: PathBuf,
        /// Its kernels written `extern "ptx-kernel"` by hand.
        raw_kernels: Vec<String>,
    },

    /// The kernel crate still sets launch bounds in
    /// `[package.metadata.nvshmem.max-threads]`, which the builder no longer reads.
    #[error(
        "the kernel crate `{crate_name}` sets `[package.metadata.nvshmem.max-threads]`, which \
         the builder no longer reads. Fix: remove that table and put the bound on each kernel: {}",
        kernels.join(", ")
    )]
    MaxThreadsInMetadata {
        /// The kernel crate's name.
        crate_name: String,
        /// The attribute that replaces each entry of the table.
        kernels: Vec<String>,
    },

    /// The kernel crate has no library target.
    #[error(
        "the kernel crate `{crate_name}` has no library target: kernels live in its src/lib.rs \
         (or a [lib] path in Cargo.toml). Fix: move them there; or, if this is the host \
         application, pass its kernel crate instead (such as template/kernels)"
    )]
    NoLibTarget {
        /// The crate.
        crate_name: String,
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
    #[error("no kernel crate at {}: expected a folder with a Cargo.toml (or that Cargo.toml)", path.display())]
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
         `#[unsafe(no_mangle)] pub unsafe extern \"ptx-kernel\" fn name(...)` in its \
         library (the builder enables `abi_ptx` itself)"
    )]
    NoKernels {
        /// The crate.
        crate_name: String,
    },

    /// Functions that nothing defines are left in the PTX.
    #[error(
        "the PTX calls functions that neither the kernels nor NVSHMEM {version} define: {}. \
         Fix: {}",
        symbols.join(", "),
        unresolved_externs_fix(symbols)
    )]
    UnresolvedExterns {
        /// The undefined functions.
        symbols: Vec<String>,
        /// The NVSHMEM version linked.
        version: nvshmem_types::Version,
    },

    /// A kernel uses an instruction that the architecture built for lacks
    /// (`wgmma` or `setmaxnreg` on anything but `sm_90a`): found before `llc`,
    /// which would abort on it ("Cannot select: intrinsic").
    #[error(
        "{} {} `{what}` (the intrinsic {intrinsic}, called in {}), which needs {needs}, but this \
         build is for {arch}. Fix: build for {needs} (`Builder::arch`, or NVSHMEM_RS_ARCH), or \
         keep {} out of this build (a cargo feature of the kernel crate)",
        if kernels.len() == 1 { "kernel" } else { "kernels" },
        kernels.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", "),
        callers.join(", "),
        if kernels.len() == 1 { "it" } else { "them" }
    )]
    ArchMismatch {
        /// The architecture built for.
        arch: nvshmem_types::Arch,
        /// The instruction, as the device crate names it.
        what: &'static str,
        /// The LLVM intrinsic.
        intrinsic: String,
        /// The architectures that have it.
        needs: &'static str,
        /// The functions that call it (demangled).
        callers: Vec<String>,
        /// The kernels that reach it.
        kernels: Vec<String>,
    },

    /// No `libdevice.10.bc` was found, for kernels that call libdevice math
    /// functions (`__nv_*`) or for `nvshmem-build setup`.
    #[error(
        "{}the nvidia-nvvm wheel has no libdevice.10.bc. Fix: `pip install \
         nvidia-nvvm==13.0.*`, or set NVSHMEM_RS_LIBDEVICE to a libdevice.10.bc (or CUDA_HOME \
         to a CUDA installation)",
        match symbols.is_empty() {
            true => String::new(),
            false => format!(
                "the kernels call libdevice's {} (through nvshmem_device::math), but ",
                symbols.join(", ")
            ),
        }
    )]
    LibdeviceNotFound {
        /// The `__nv_*` functions the module needs (none for `setup`).
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

/// The supported architectures, for messages.
struct SupportedArchs;

impl std::fmt::Display for SupportedArchs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, n) in nvshmem_types::SUPPORTED_ARCHS.iter().enumerate() {
            write!(f, "{}sm_{n}", if i > 0 { ", " } else { "" })?;
        }
        Ok(())
    }
}

/// Shorthand for the builder's results.
pub type Result<T, E = Error> = std::result::Result<T, E>;

pub(crate) fn io_err(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.into();
    move |source| Error::Io { path, source }
}

/// `map_err(not_runnable(program))`: `program` could not be started.
pub(crate) fn not_runnable(program: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
    let program = program.into();
    move |source| Error::ToolNotRunnable { program, source }
}

/// ": 3.4.5 is the supported release of 3.4" when the version asked for has
/// a supported release in its minor line (`3.4` parses as 3.4.0).
fn same_line_hint(version: nvshmem_types::Version) -> String {
    match nvshmem_types::SupportedVersions::newest_of_line(version) {
        Some(v) => format!(": {v} is the supported release of {}.{}", v.major, v.minor),
        None => String::new(),
    }
}

/// The fix for [`Error::UnresolvedExterns`]: rustc's panic entry point
/// (`rust_begin_unwind`) is left undefined when the kernel crate has no
/// panic handler, which an rlib build does not report itself.
fn unresolved_externs_fix(symbols: &[String]) -> &'static str {
    if symbols.iter().any(|s| s.contains("rust_begin_unwind")) {
        "`rust_begin_unwind` is rustc's panic entry point: the kernel crate has no panic \
         handler. Add `nvshmem_device::panic_handler!();` to its src/lib.rs"
    } else {
        "check the name and signature of each (a typo in an extern block, or a function this \
         NVSHMEM version lacks)"
    }
}
