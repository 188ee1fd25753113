//! Bakes the NVSHMEM host library found at build time into the crate, as the
//! run-time fallback after `NVSHMEM_HOME` (see `src/library.rs`).

use nvshmem_types::install::{Installation, Query};
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=NVSHMEM_HOME");
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    // The project cache is `.deps/` in the workspace root; watch it so that a
    // later `./x setup` is picked up.
    for dir in manifest_dir.ancestors() {
        let deps = dir.join(".deps");
        if deps.is_dir() {
            println!("cargo:rerun-if-changed={}", deps.display());
            break;
        }
    }
    let found = Installation::find(&Query::default().project_dir(&manifest_dir)).ok();
    let (library, version) = match &found {
        Some(nv) => (
            nv.host_library().display().to_string(),
            nv.version.to_string(),
        ),
        None => (String::new(), String::new()),
    };
    println!("cargo:rustc-env=NVSHMEM_HOST_BUILD_LIBRARY={library}");
    println!("cargo:rustc-env=NVSHMEM_HOST_BUILD_VERSION={version}");
}
