//! The project's own host-side pieces shared by the demo and the examples:
//! where the built kernels are, and the ring (the smallest complete program).
//!
//! The kernels themselves are `no_std` crates (`examples/*/kernel`,
//! `tests/kernels/*`) that the root `build.rs` builds into `$OUT_DIR/ptx`.

use std::path::PathBuf;

pub mod ring;
pub mod tensor;

/// The folder of the built kernels' manifests, PTX and cubins:
/// `NVSHMEM_RS_PTX_DIR` at run time when set (a GPU machine with a copied
/// build), else the one `build.rs` wrote (`$OUT_DIR/ptx/nvshmem-<version>/<arch>`).
///
/// ```
/// assert!(nvshmem_rs::ptx_dir().ends_with("sm_90") || std::env::var_os("NVSHMEM_RS_ARCH").is_some()
///     || std::env::var_os("NVSHMEM_RS_PTX_DIR").is_some());
/// ```
pub fn ptx_dir() -> PathBuf {
    std::env::var_os("NVSHMEM_RS_PTX_DIR")
        .map(Into::into)
        .unwrap_or_else(|| env!("NVSHMEM_RS_PTX_DIR").into())
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
    let dir = ptx_dir();
    match dir.file_name().and_then(|n| n.to_str()) {
        Some("sm_90") => dir.with_file_name("sm_90a"),
        _ => dir,
    }
}
