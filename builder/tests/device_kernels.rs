//! The device crate's own kernel crates through the builder and ptxas:
//! the GPU tests' kernels on both RMA paths, and the NVLink SHARP forms.
//! No GPU needed. Without NVSHMEM or ptxas a test prints `SKIPPED: <reason>`;
//! `NVSHMEM_RS_REQUIRE_ALL=1` (CI) makes that a failure.
//!
//! (Its own file, not `build.rs`, so that it and the builder's tests change
//! apart.)

mod common;

use common::{assert_entries, build_ptx, kernel_crate, max_registers};
use nvshmem_builder::Version;

/// The version, when it is installed or can be downloaded into the per-user
/// cache; else a skip (a failure under `NVSHMEM_RS_REQUIRE_ALL=1`).
fn installed(version: &str) -> Option<Version> {
    nvshmem_builder::testing::nvshmem(version).map(|nv| nv.version)
}

/// The GPU tests' kernels (`tests/kernels/runtime`) build through ptxas both
/// ways the typed put/get can go: the default (direct loads and stores to
/// peers that `nvshmem_ptr` reaches, NVSHMEM's path for the rest) and with
/// `nvshmem-device/nvshmem-path` (NVSHMEM's path for every peer), which the
/// GPU run uses to test NVSHMEM's path on one GPU. The forced build has no
/// direct copy left: every put and get is NVSHMEM's, so the same kernels
/// have fewer block barriers.
#[test]
fn runtime_kernels_build_on_both_rma_paths() {
    let Some(v) = installed("3.4.5") else {
        return;
    };
    let mut barriers = Vec::new();
    for (path, features) in [
        ("direct", &[][..]),
        ("nvshmem", &["nvshmem-device/nvshmem-path"][..]),
    ] {
        let started = std::time::Instant::now();
        let mut b = kernel_crate(
            "tests/kernels/runtime",
            &format!("rma-path/{path}"),
            v,
            "sm_90",
        );
        for f in features {
            b = b.feature(*f);
        }
        let what = format!("runtime kernels, {path} path");
        let (out, ptx) = build_ptx(b, &what);
        assert!(out.cubin.is_some(), "{what}: no cubin");
        let kernels = ["staged_put", "get_in_use", "rma_path", "address_queries"];
        assert_entries(&ptx, &kernels, &what);
        barriers.push(ptx.matches("barrier.sync").count() + ptx.matches("bar.sync").count());
        eprintln!(
            "{what}: {} kernels, max {} registers, {:.1} s",
            out.manifest.kernels.len(),
            max_registers(&out.manifest),
            started.elapsed().as_secs_f64()
        );
    }
    assert_ne!(
        barriers[0], barriers[1],
        "the nvshmem-path build has the same block barriers as the default: is the feature applied?"
    );
}

/// The NVLink SHARP kernels (`tests/kernels/multimem`: `mc_ptr` and every
/// `multimem` form of the device crate) pass ptxas for sm_90 (3.4.5) and
/// sm_100 (3.8.0). Nothing runs them: this project keeps NVLS off.
#[test]
fn multimem_kernels_pass_ptxas() {
    for (version, arch) in [("3.4.5", "sm_90"), ("3.8.0", "sm_100")] {
        let Some(v) = installed(version) else {
            continue;
        };
        let started = std::time::Instant::now();
        let b = kernel_crate("tests/kernels/multimem", "multimem", v, arch);
        let (out, ptx) = build_ptx(b, &format!("multimem kernels {version}/{arch}"));
        assert!(out.cubin.is_some(), "{version}/{arch}: no cubin");
        let forms: std::collections::BTreeSet<&str> = ptx
            .split_whitespace()
            .filter(|w| w.starts_with("multimem."))
            .collect();
        // 11 stores, 32 load-reduces, 21 reductions: the table in the
        // device crate's `multimem` docs.
        assert_eq!(forms.len(), 64, "{version}/{arch}: {forms:?}");
        eprintln!(
            "multimem kernels {version}/{arch}: {} forms pass ptxas, {:.1} s",
            forms.len(),
            started.elapsed().as_secs_f64()
        );
    }
}
