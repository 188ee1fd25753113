//! Bakes the NVSHMEM host library found at build time into the crate, as the
//! run-time fallback after `NVSHMEM_HOME` (see `src/library.rs`).

use nvshmem_types::install::{Installation, Query, cache_dir};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    for var in [
        "NVSHMEM_HOME",
        "NVSHMEM_RS_CACHE",
        "XDG_CACHE_HOME",
        "VIRTUAL_ENV",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    // The per-user cache that nvshmem-builder fills: a wheel unpacked there
    // later (by a kernel build) is picked up. Watched only when it exists:
    // cargo reruns a script on every build for a path that does not.
    if let Some(cache) = cache_dir().filter(|d| d.is_dir()) {
        println!("cargo:rerun-if-changed={}", cache.display());
    }
    let found = Installation::find(&Query::default()).ok();
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
