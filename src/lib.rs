//! The project's own host-side pieces shared by the demo, the examples and
//! the benchmark: where the built kernels are, how a program starts NVSHMEM
//! (or says there is no GPU) and parses its command line ([`cli`]), timing
//! and checking ([`measure`]), the test [`patterns`], the ring (the smallest
//! complete program) and the tensor-core GEMMs ([`tensor`]).
//!
//! The kernels themselves are `no_std` crates (`examples/*/kernel`,
//! `tests/kernels/*`) that the root `build.rs` builds into `$OUT_DIR/ptx`.

#![warn(missing_docs)]

use std::path::{Path, PathBuf};

pub mod allreduce;
pub mod cli;
pub mod measure;
pub mod ring;
pub mod tensor;

pub use cli::{Res, exit_code, init_or_exit, init_with_or_exit};
/// The test patterns the kernels write and the hosts check (one `no_std`
/// copy, `examples/patterns`, for both sides).
pub use example_patterns as patterns;

/// The kernels a host program takes from one kernel crate's module.
pub trait KernelSet: Sized {
    /// The kernel crate (and module) name: `allreduce-kernels`, ...
    const CRATE: &'static str;

    /// The folder the crate is built into: [`ptx_dir`] or [`tensor_ptx_dir`].
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
/// let d = nvshmem_rs::kernel_dir("NVSHMEM_RS_UNSET_FOR_THIS_TEST", "/built/in");
/// assert_eq!(d, std::path::Path::new("/built/in"));
/// ```
pub fn kernel_dir(var: &str, built_in: &str) -> PathBuf {
    std::env::var_os(var)
        .map(Into::into)
        .unwrap_or_else(|| built_in.into())
}

/// The folder of the built kernels' manifests, PTX and cubins:
/// `NVSHMEM_RS_PTX_DIR` at run time when set (a GPU machine with a copied
/// build), else the one `build.rs` wrote (`$OUT_DIR/ptx/nvshmem-<version>/<arch>`).
///
/// ```
/// assert!(nvshmem_rs::ptx_dir().ends_with("sm_90") || std::env::var_os("NVSHMEM_RS_ARCH").is_some()
///     || std::env::var_os("NVSHMEM_RS_PTX_DIR").is_some());
/// ```
pub fn ptx_dir() -> PathBuf {
    kernel_dir("NVSHMEM_RS_PTX_DIR", env!("NVSHMEM_RS_PTX_DIR"))
}

/// The folder of the kernel crates with Hopper-only kernels (`wgmma`,
/// `setmaxnreg`; the root build script's `HOPPER_CRATES`): the `sm_90a`
/// folder beside [`ptx_dir`] when that is an `sm_90` one (they are built for
/// `sm_90a` then), else `ptx_dir()` itself.
///
/// ```
/// let d = nvshmem_rs::tensor_ptx_dir();
/// assert!(d.ends_with("sm_90a") || !nvshmem_rs::ptx_dir().ends_with("sm_90"));
/// ```
pub fn tensor_ptx_dir() -> PathBuf {
    hopper_dir(&ptx_dir())
}

/// The folder of the Hopper-only kernel crates beside the kernel folder
/// `dir`: its `sm_90a` sibling when `dir` is an `sm_90` folder, else `dir`.
///
/// ```
/// use std::path::Path;
/// assert_eq!(nvshmem_rs::hopper_dir(Path::new("p/sm_90")), Path::new("p/sm_90a"));
/// assert_eq!(nvshmem_rs::hopper_dir(Path::new("p/sm_100")), Path::new("p/sm_100"));
/// ```
pub fn hopper_dir(dir: &Path) -> PathBuf {
    match dir.file_name().and_then(|n| n.to_str()) {
        Some("sm_90") => dir.with_file_name("sm_90a"),
        _ => dir.to_path_buf(),
    }
}
