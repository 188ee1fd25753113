//! Builds the project's own kernel crates to `ptx/` with `nvshmem-builder`.
//!
//! Settings (environment): `NVSHMEM_RS_ARCH` (default `sm_90`),
//! `NVSHMEM_RS_NVSHMEM_VERSION` (default: the builder's, 3.4.5),
//! `NVSHMEM_RS_DEVICE_LINK` (`auto`, `whole-program` or `separate`; default
//! `auto`), `NVSHMEM_HOME`.
//! The host programs find the outputs through `NVSHMEM_RS_PTX_DIR`, set here
//! at compile time and overridable at run time. Per-crate step times go to
//! `target/nvshmem-kernels/build-times.txt`.

use nvshmem_builder::DeviceLink;
use nvshmem_builder::Version;
use nvshmem_builder::install::{Installation, Query};
use std::path::{Path, PathBuf};

/// Every kernel crate of the project, relative to this folder.
const KERNEL_CRATES: &[&str] = &[
    "tests/kernels/coverage",
    "tests/kernels/runtime",
    "tests/kernels/collectives",
    "tests/kernels/compute",
    "examples/ring/kernel",
    "examples/allreduce/kernel",
    "examples/ag_gemm/kernel",
    "bench/kernel",
];

/// Kernel crates whose Hopper kernels (`wgmma`, `setmaxnreg`) sit behind
/// their `sm90a` feature. When the arch is `sm_90` they are built for
/// `sm_90a` with that feature, into `ptx/nvshmem-<version>/sm_90a/` (ptxas
/// refuses those instructions for plain `sm_90`; the cubin runs on any
/// H100/H200); for other archs, as they are, into the arch's folder.
/// Hosts find them with `nvshmem_rs::tensor_ptx_dir()`.
const HOPPER_CRATES: &[&str] = &[
    "tests/kernels/tensor",
    "examples/tc_gemm/kernel",
    "examples/ag_gemm/kernel_tc",
    "examples/gemm_rs/kernel",
];

/// Also built against this other NVSHMEM version, when it is installed, so
/// that the GPU tests can check that the host refuses a mismatched module.
const MISMATCH_CRATE: &str = "tests/kernels/runtime";
const OTHER_VERSIONS: &[&str] = &["3.8.0", "3.4.5"];

fn main() {
    println!("cargo:rerun-if-env-changed=NVSHMEM_RS_ARCH");
    println!("cargo:rerun-if-env-changed=NVSHMEM_RS_NVSHMEM_VERSION");
    println!("cargo:rerun-if-env-changed=NVSHMEM_RS_DEVICE_LINK");
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
    let device_link = match std::env::var("NVSHMEM_RS_DEVICE_LINK") {
        Ok(v) => v.parse::<DeviceLink>().unwrap_or_else(|e| {
            eprintln!("error: NVSHMEM_RS_DEVICE_LINK: {e}");
            std::process::exit(1);
        }),
        Err(_) => DeviceLink::Auto,
    };
    let build = |krate: &str, version: Option<Version>, hopper: bool| {
        let hopper = hopper && (arch == "sm_90" || arch == "sm_90a");
        let mut b = nvshmem_builder::Builder::new(root.join(krate))
            .arch(if hopper { "sm_90a" } else { arch.as_str() })
            .device_link(device_link)
            .out_dir(root.join("ptx"))
            .target_dir(root.join("target/nvshmem-kernels"));
        if let Some(v) = version {
            b = b.nvshmem_version(v);
        }
        if hopper {
            b = b.feature("sm90a");
        }
        b.build_from_build_script()
    };
    // The version the project's kernels link against, and the other one the
    // mismatch test needs (when it is installed).
    let mut primary_query = Query::default().project_dir(&root);
    if let Some(v) = version {
        primary_query = primary_query.version(v);
    }
    let primary = Installation::find(&primary_query).ok().map(|nv| nv.version);
    let other = OTHER_VERSIONS
        .iter()
        .map(|v| v.parse::<Version>().expect("a version"))
        .find(|v| primary.is_some_and(|p| p != *v));
    let other_installed = other
        .filter(|v| Installation::find(&Query::default().version(*v).project_dir(&root)).is_ok());
    let mut jobs: Vec<(&str, Option<Version>, bool)> =
        KERNEL_CRATES.iter().map(|k| (*k, version, false)).collect();
    jobs.extend(HOPPER_CRATES.iter().map(|k| (*k, version, true)));
    if let Some(v) = other_installed {
        jobs.push((MISMATCH_CRATE, Some(v), false));
    }
    let outputs = run_in_parallel(&jobs, |(krate, v, hopper)| build(krate, *v, *hopper));

    let mut times = String::new();
    for ((krate, _, _), out) in jobs.iter().zip(&outputs) {
        let steps: Vec<String> = out
            .timings
            .iter()
            .map(|(step, t)| format!("{step} {:.2}s", t.as_secs_f64()))
            .collect();
        times += &format!("{krate} ({}): {}\n", out.nvshmem.version, steps.join(", "));
    }
    let primary_dir = outputs[..KERNEL_CRATES.len()]
        .last()
        .and_then(|out| out.ptx.parent().map(Path::to_path_buf));
    if let Some(dir) = primary_dir {
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
            println!(
                "cargo:warning=NVSHMEM {other} is not installed: the GPU test of a version mismatch will fail (run ./x setup)"
            );
        }
        _ => {}
    }
    // Where each kernel crate's build time went (read it when a build is slow).
    let times_path = root.join("target/nvshmem-kernels/build-times.txt");
    let _ = std::fs::write(&times_path, times);
}

/// Runs `f` over `jobs` on as many threads as there are cores, keeping the
/// order of the results. The builds are independent (each has its own work
/// folder and lock), and most of their time is single-threaded ptxas and opt.
fn run_in_parallel<J: Sync, R: Send>(jobs: &[J], f: impl Fn(&J) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<R>>> =
        jobs.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..threads.min(jobs.len()) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(job) = jobs.get(i) else { break };
                    let r = f(job);
                    *results[i].lock().unwrap() = Some(r);
                }
            });
        }
    });
    results
        .into_iter()
        .map(|r| r.into_inner().unwrap().expect("every job ran"))
        .collect()
}
