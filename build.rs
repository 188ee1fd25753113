//! Builds the project's own kernel crates to `ptx/` with `nvshmem-builder`.
//!
//! Settings (environment): `NVSHMEM_RS_ARCH` (default `sm_90`),
//! `NVSHMEM_RS_NVSHMEM_VERSION` (default: the builder's, 3.4.5), `NVSHMEM_HOME`.
//! The host programs find the outputs through `NVSHMEM_RS_PTX_DIR`, set here
//! at compile time and overridable at run time.

use nvshmem_builder::nvshmem::{Nvshmem, Query, Version};
use std::path::{Path, PathBuf};

/// Every kernel crate of the project, relative to this folder.
const KERNEL_CRATES: &[&str] = &[
    "tests/kernels/coverage",
    "tests/kernels/runtime",
    "examples/ring/kernel",
    "examples/allreduce/kernel",
    "examples/ag_gemm/kernel",
];

/// Also built against this other NVSHMEM version, when it is installed, so
/// that the GPU tests can check that the host refuses a mismatched module.
const MISMATCH_CRATE: &str = "tests/kernels/runtime";
const OTHER_VERSIONS: &[&str] = &["3.8.0", "3.4.5"];

fn main() {
    println!("cargo:rerun-if-env-changed=NVSHMEM_RS_ARCH");
    println!("cargo:rerun-if-env-changed=NVSHMEM_RS_NVSHMEM_VERSION");
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let arch = std::env::var("NVSHMEM_RS_ARCH").unwrap_or_else(|_| "sm_90".into());
    let version =
        std::env::var("NVSHMEM_RS_NVSHMEM_VERSION")
            .ok()
            .map(|v| match v.parse::<Version>() {
                Ok(v) => v,
                Err(e) => {
                    eprintln!("error: NVSHMEM_RS_NVSHMEM_VERSION: {e}");
                    std::process::exit(1);
                }
            });
    let build = |krate: &str, version: Option<Version>| {
        let mut b = nvshmem_builder::Builder::new(root.join(krate))
            .arch(&arch)
            .out_dir(root.join("ptx"))
            .target_dir(root.join("target/nvshmem-kernels"));
        if let Some(v) = version {
            b = b.nvshmem_version(v);
        }
        b.build_from_build_script()
    };
    let mut ptx_dir = None;
    let mut primary = None;
    for krate in KERNEL_CRATES {
        let out = build(krate, version);
        primary = Some(out.nvshmem.version);
        ptx_dir = out.ptx.parent().map(Path::to_path_buf);
    }
    if let Some(dir) = ptx_dir {
        println!("cargo:rustc-env=NVSHMEM_RS_PTX_DIR={}", dir.display());
    }
    let other = OTHER_VERSIONS
        .iter()
        .map(|v| v.parse::<Version>().expect("a version"))
        .find(|v| Some(*v) != primary);
    if let Some(other) = other {
        let query = Query::default().version(other).project_dir(&root);
        if Nvshmem::find(&query).is_ok() {
            let out = build(MISMATCH_CRATE, Some(other));
            if let Some(dir) = out.ptx.parent() {
                println!("cargo:rustc-env=NVSHMEM_RS_OTHER_PTX_DIR={}", dir.display());
            }
        } else {
            println!("cargo:rustc-env=NVSHMEM_RS_OTHER_PTX_DIR=");
            println!(
                "cargo:warning=NVSHMEM {other} is not installed: the GPU test of a version mismatch will fail (run ./x setup)"
            );
        }
    }
}
