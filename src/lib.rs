//! The project's own host-side pieces shared by the demo and the examples:
//! where the built kernels are, and the ring (the smallest complete program).
//!
//! The kernels themselves are `no_std` crates (`examples/*/kernel`,
//! `tests/kernels/*`) that the root `build.rs` builds into `$OUT_DIR/ptx`.

use std::path::PathBuf;

pub mod ring;

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
