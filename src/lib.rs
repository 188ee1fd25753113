//! The project's GPU test suites (`tests/*.rs`, run through
//! `nvshmem_host::harness`) and the runtime-cost example. Their kernel
//! crates are in `tests/kernels`; `build.rs` builds them into `$OUT_DIR/ptx`.

#![warn(missing_docs)]

use std::path::PathBuf;

/// The folder of the test kernels' manifests, PTX and cubins
/// (`NVSHMEM_RS_PTX_DIR` at run time when set, else the one `build.rs` wrote).
pub fn ptx_dir() -> PathBuf {
    example_cli::ptx_dir!()
}
