//! Builds the kernel crates of the GPU tests (`tests/kernels/*`) into
//! `$OUT_DIR/ptx`, with `nvshmem-builder`. (Each example's build script
//! builds its own.)
//!
//! Settings (environment): `NVSHMEM_RS_ARCH` (default `sm_90`),
//! `NVSHMEM_RS_NVSHMEM_VERSION` (default: the builder's, 3.4.5),
//! `NVSHMEM_RS_DEVICE_LINK` (`auto`, `whole-program` or `separate`; default
//! `auto`), `NVSHMEM_HOME`. The tests find the outputs through
//! `NVSHMEM_RS_PTX_DIR`, set here at compile time and overridable at run time.
//! Per-crate step times go to `$OUT_DIR/build-times.txt`. Every kernel crate
//! of the workspace, for CUDA C++ hosts, goes to `ptx/` with `cargo xtask ptx`.

use nvshmem_builder::install::{Installation, Query};
use nvshmem_builder::{Builder, Version, build_all_from_build_script};
use std::path::PathBuf;

/// The kernel crates of the GPU tests, relative to this folder.
const KERNEL_CRATES: &[&str] = &[
    "tests/kernels/runtime",
    "tests/kernels/collectives",
    "tests/kernels/compute",
];

/// The test kernel crates whose Hopper kernels (`wgmma`, `setmaxnreg`) sit
/// behind their `sm90a` feature (see `example_build::builder`); the tests
/// find them with `example_cli::hopper_dir`.
const HOPPER_CRATES: &[&str] = &["tests/kernels/tensor"];

/// Also built against the other NVSHMEM version, when it is installed, so
/// that the GPU tests can check that the host refuses a mismatched module.
const MISMATCH_CRATE: &str = "tests/kernels/runtime";
const OTHER_VERSIONS: &[&str] = &["3.8.0", "3.4.5"];

fn main() {
    println!("cargo:rerun-if-env-changed=NVSHMEM_RS_NVSHMEM_VERSION");
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo"));
    let version = std::env::var("NVSHMEM_RS_NVSHMEM_VERSION").ok().map(|v| {
        v.parse::<Version>()
            .unwrap_or_else(|e| fail("NVSHMEM_RS_NVSHMEM_VERSION", e))
    });
    let builder = |krate: &str, version: Option<Version>, hopper: bool| {
        let b = example_build::builder(krate, hopper);
        match version {
            Some(v) => b.nvshmem_version(v),
            None => b,
        }
    };
    // The version the kernels link against, and the other one the mismatch
    // test needs (when it is installed).
    let with_version = |q: Query| match version {
        Some(v) => q.version(v),
        None => q,
    };
    let primary = Installation::find(&with_version(Query::default()))
        .ok()
        .map(|nv| nv.version);
    let other = OTHER_VERSIONS
        .iter()
        .map(|v| v.parse::<Version>().expect("a version"))
        .find(|v| primary.is_some_and(|p| p != *v));
    let other_installed =
        other.filter(|v| Installation::find(&Query::default().version(*v)).is_ok());
    let mut builders: Vec<Builder> = KERNEL_CRATES
        .iter()
        .map(|k| builder(k, version, false))
        .collect();
    builders.extend(HOPPER_CRATES.iter().map(|k| builder(k, version, true)));
    if let Some(v) = other_installed {
        builders.push(builder(MISMATCH_CRATE, Some(v), false));
    }
    let outputs = build_all_from_build_script(builders);

    let mut times = String::new();
    let crates = KERNEL_CRATES
        .iter()
        .chain(HOPPER_CRATES)
        .chain(other_installed.map(|_| &MISMATCH_CRATE));
    for (krate, out) in crates.zip(&outputs) {
        let steps: Vec<String> = out
            .timings
            .iter()
            .map(|(step, t)| format!("{step} {:.2}s", t.as_secs_f64()))
            .collect();
        times += &format!("{krate} ({}): {}\n", out.nvshmem.version, steps.join(", "));
    }
    if let Some(dir) = outputs[0].ptx.parent() {
        println!("cargo:rustc-env=NVSHMEM_RS_PTX_DIR={}", dir.display());
    }
    match (other, other_installed) {
        (Some(_), Some(_)) => {
            let out = outputs.last().expect("the mismatch build");
            if let Some(dir) = out.ptx.parent() {
                println!("cargo:rustc-env=NVSHMEM_RS_OTHER_PTX_DIR={}", dir.display());
            }
        }
        (Some(other), None) => {
            println!("cargo:rustc-env=NVSHMEM_RS_OTHER_PTX_DIR=");
            // `./x setup` installs it into the cache: look again then, or the
            // warning (and the test's failure) outlive their fix. Every wheel
            // added takes a lock in `.locks/`, a small folder to watch (cargo
            // reads a watched folder whole, and reruns every build for a
            // missing path).
            if let Some(cache) = nvshmem_builder::wheels::cache_dir() {
                let locks = cache.join(".locks");
                let watched = [locks, cache].into_iter().find(|d| d.is_dir());
                if let Some(dir) = watched {
                    println!("cargo:rerun-if-changed={}", dir.display());
                }
            }
            println!(
                "cargo:warning=NVSHMEM {other} is not installed, so the GPU test of a version mismatch will fail: `./x setup` downloads 3.4.5 and 3.8.0 into the per-user cache"
            );
        }
        _ => {}
    }
    // Where each kernel crate's build time went (read it when a build is slow).
    let _ = std::fs::write(out_dir.join("build-times.txt"), times);
}

fn fail(variable: &str, e: impl std::fmt::Display) -> ! {
    eprintln!("error: {variable}: {e}");
    std::process::exit(1);
}
