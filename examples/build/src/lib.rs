//! The build-script side of the examples and the GPU tests: their kernel
//! crates built with `nvshmem-builder` into `$OUT_DIR/ptx`, the Hopper-only
//! ones for `sm_90a`, and the folder handed to the package's programs as
//! `NVSHMEM_RS_PTX_DIR` (which they read with `example_cli::ptx_dir!`).
//!
//! ```no_run
//! // build.rs of an example: its kernel crate beside it.
//! example_build::build(&["kernel"], &[]);
//! ```
//!
//! Settings: as every build script of `nvshmem-builder` (`NVSHMEM_RS_ARCH`,
//! `NVSHMEM_RS_NVSHMEM_VERSION`, `NVSHMEM_RS_DEVICE_LINK`, `NVSHMEM_HOME`).

#![warn(missing_docs)]

use nvshmem_builder::{Arch, BuildOutput, Builder, build_all_from_build_script};
use std::path::PathBuf;

/// A builder for the kernel crate in `dir` (relative to the package), with
/// its outputs in `$OUT_DIR/ptx`.
///
/// `hopper`: the crate's Hopper kernels (`wgmma`, `setmaxnreg`) sit behind
/// its `sm90a` feature. When the arch is `sm_90` it is built for `sm_90a`
/// with that feature, into the `sm_90a` folder beside the others (ptxas
/// refuses those instructions for plain `sm_90`; the cubin runs on any
/// H100/H200); for other archs, as it is. Hosts find it with
/// `example_cli::hopper_dir`.
pub fn builder(dir: &str, hopper: bool) -> Builder {
    let var = |name: &str| std::env::var_os(name).expect("set by cargo for build scripts");
    let package = PathBuf::from(var("CARGO_MANIFEST_DIR"));
    let b = Builder::new(package.join(dir)).out_dir(PathBuf::from(var("OUT_DIR")).join("ptx"));
    println!("cargo:rerun-if-env-changed=NVSHMEM_RS_ARCH");
    // A malformed value is left to the builder, which names the variable.
    let arch = std::env::var("NVSHMEM_RS_ARCH").map_or(Ok(Arch::DEFAULT), |v| v.parse::<Arch>());
    match arch
        .ok()
        .filter(|a| a.number() == 90)
        .and_then(Arch::arch_specific)
    {
        Some(sm_90a) if hopper => b.arch(sm_90a).feature("sm90a"),
        _ => b,
    }
}

/// Builds the kernel crates `plain` and `hopper` (folders relative to the
/// package; see [`builder`]) in parallel, and hands the first one's folder
/// to the package's programs as `NVSHMEM_RS_PTX_DIR`. On error it prints
/// the message and exits (see `Builder::build_from_build_script`).
pub fn build(plain: &[&str], hopper: &[&str]) -> Vec<BuildOutput> {
    let builders = plain
        .iter()
        .map(|d| builder(d, false))
        .chain(hopper.iter().map(|d| builder(d, true)))
        .collect();
    let outputs = build_all_from_build_script(builders);
    if let Some(dir) = outputs.first().and_then(|o| o.ptx.parent()) {
        println!("cargo:rustc-env=NVSHMEM_RS_PTX_DIR={}", dir.display());
    }
    outputs
}
