//! The tensor-core kernel crates through the whole pipeline and `ptxas`, no
//! GPU needed: the primitive test kernels (`tests/kernels/tensor`) for sm_80
//! (the `mma.sync` / `ldmatrix` / `cp.async` family) and sm_90a (all, with
//! TMA, mbarrier and wgmma), and the GEMM kernels built on them. Every kernel
//! must be an `.entry`, assemble without a ptxas warning, and spill nothing;
//! the GEMMs' `#[kernel(max_threads = N)]` must be `.maxntid N` in the PTX.
//!
//! Like `tests/build.rs`, a missing NVSHMEM or ptxas prints `SKIPPED` (a
//! failure with `NVSHMEM_RS_REQUIRE_ALL=1`).

mod common;

use common::{assert_entries, build_ptx, kernel_crate};
use nvshmem_builder::Version;
use nvshmem_builder::testing::skip;
use std::path::PathBuf;
use std::process::Command;

/// The NVSHMEM version to build against (the builder downloads it when missing).
fn installed(version: &str) -> Option<Version> {
    Some(version.parse().unwrap())
}

/// The ptxas the builder uses: `PTXAS`, else the nvcc wheel's (downloaded
/// into the per-user cache when missing).
fn ptxas() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PTXAS") {
        return Some(p.into());
    }
    match nvshmem_builder::wheels::ensure(nvshmem_builder::wheels::NVCC_WHEEL, "ptxas") {
        Ok(dir) => Some(dir.join("nvidia/cu13/bin/ptxas")).filter(|p| p.is_file()),
        Err(e) => {
            skip(&format!("no ptxas: {e}"));
            None
        }
    }
}

/// What one kernel crate must look like after the build.
struct Expect<'a> {
    krate: &'a str,
    arch: &'a str,
    features: &'a [&'a str],
    kernels: &'a [&'a str],
    /// `#[kernel(max_threads = N)]` of these kernels: `.maxntid N, 1, 1` in the PTX.
    max_threads: &'a [(&'a str, u32)],
}

/// The `.maxntid` of `kernel`'s entry: between its `.entry` line and its body.
fn maxntid(ptx: &str, kernel: &str) -> Option<u32> {
    let entry = format!(".visible .entry {kernel}(");
    ptx.lines()
        .skip_while(|l| !l.starts_with(&entry))
        .take_while(|l| !l.starts_with('{'))
        .find_map(|l| l.trim().strip_prefix(".maxntid "))
        .and_then(|rest| rest.split(',').next()?.trim().parse().ok())
}

/// Builds, checks the manifest and re-runs `ptxas -v` on the PTX for its
/// warnings (the builder keeps only the figures). Returns the report lines.
fn build_and_check(e: &Expect, version: Version) -> Vec<String> {
    let Some(ptxas) = ptxas() else {
        return Vec::new();
    };
    let started = std::time::Instant::now();
    let mut b = kernel_crate(e.krate, "tensor", version, e.arch);
    for f in e.features {
        b = b.feature(*f);
    }
    let what = format!("{} {}/{}", e.krate, version, e.arch);
    let (out, ptx) = build_ptx(b, &what);
    assert!(
        ptx.contains(&format!(".target {}", e.arch)),
        "{what}: not .target {}",
        e.arch
    );
    assert_entries(&ptx, e.kernels, &what);
    for k in &out.manifest.kernels {
        let want = e
            .max_threads
            .iter()
            .find(|(name, _)| *name == k.name)
            .map(|(_, n)| *n);
        assert_eq!(
            maxntid(&ptx, &k.name),
            want,
            "{what}: the .maxntid of {}",
            k.name
        );
    }
    assert!(out.cubin.is_some(), "{}: no cubin", e.krate);
    let asm = Command::new(&ptxas)
        .args(["-v", &format!("-arch={}", e.arch), "-o", "/dev/null"])
        .arg(&out.ptx)
        .output()
        .expect("ptxas runs");
    let log = String::from_utf8_lossy(&asm.stderr);
    assert!(asm.status.success(), "{}: ptxas failed:\n{log}", e.krate);
    let warnings: Vec<&str> = log.lines().filter(|l| l.contains("warning")).collect();
    assert!(
        warnings.is_empty(),
        "{} {}: ptxas warnings:\n{}",
        e.krate,
        e.arch,
        warnings.join("\n")
    );
    let mut lines = Vec::new();
    for k in &out.manifest.kernels {
        assert_eq!(
            (k.spill_stores.unwrap_or(0), k.spill_loads.unwrap_or(0)),
            (0, 0),
            "{} {}: kernel {} spills",
            e.krate,
            e.arch,
            k.name
        );
        lines.push(format!(
            "{} {}: {} {} registers, {} B stack",
            e.krate,
            e.arch,
            k.name,
            k.registers.unwrap_or(0),
            k.stack_frame.unwrap_or(0)
        ));
    }
    eprintln!(
        "{} {}: {} kernels, {:.1} s",
        e.krate,
        e.arch,
        out.manifest.kernels.len(),
        started.elapsed().as_secs_f64()
    );
    for l in &lines {
        eprintln!("  {l}");
    }
    lines
}

const SM80_PRIMITIVES: &[&str] = &[
    "mma_m16n8k16_bf16_f32",
    "mma_m16n8k16_f16_f32",
    "mma_m16n8k16_f16_f16",
    "mma_m16n8k8_bf16_f32",
    "mma_m16n8k8_f16_f32",
    "mma_m16n8k8_f16_f16",
    "mma_m16n8k8_tf32_f32",
    "ldmatrix_forms",
    "frag_loads",
    "cp_async_copy",
];

const SM90A_PRIMITIVES: &[&str] = &[
    "tma_load_box",
    "tma_store_box",
    "wgmma_m64n8k16",
    "wgmma_m64n16k16",
    "wgmma_m64n64k16",
    "wgmma_m64n128k16",
    "wgmma_m64n256k16",
];

/// Every primitive: the sm_80 family on sm_80 (and on sm_90a with the rest).
#[test]
fn tensor_primitives_assemble_for_sm80_and_sm90a() {
    let Some(v) = installed("3.4.5") else { return };
    build_and_check(
        &Expect {
            krate: "tests/kernels/tensor",
            arch: "sm_80",
            features: &[],
            kernels: SM80_PRIMITIVES,
            max_threads: &[],
        },
        v,
    );
    let all: Vec<&str> = SM80_PRIMITIVES
        .iter()
        .chain(SM90A_PRIMITIVES)
        .copied()
        .collect();
    build_and_check(
        &Expect {
            krate: "tests/kernels/tensor",
            arch: "sm_90a",
            features: &["sm90a"],
            kernels: &all,
            max_threads: &[],
        },
        v,
    );
}

/// The `mma.sync` GEMM and the `mma.sync` ceiling probe, with their `.maxntid`.
const MMA_GEMMS: &[(&str, u32)] = &[("gemm_bf16_mma", 128), ("mma_peak_bf16", 256)];

/// The `mma.sync` candidates of the GEMM benchmark (`mma_candidates!`,
/// `tc_gemm::mma::CANDIDATES`): made by a macro, so no `.maxntid`.
const MMA_CANDIDATES: &[&str] = &[
    "gemm_bf16_mma_k64",
    "gemm_bf16_mma_pf",
    "gemm_bf16_mma_k64_pf",
    "gemm_bf16_mma_256x128",
    "gemm_bf16_mma_256x128_k64",
    "gemm_bf16_mma_128x256",
    "gemm_bf16_mma_pipe",
    "gemm_bf16_mma_w64x32",
];

/// The standalone GEMMs: `mma.sync` on sm_80, all on sm_90a.
#[test]
fn gemm_kernels_assemble_for_sm80_and_sm90a() {
    let Some(v) = installed("3.4.5") else { return };
    let names = |list: &[(&'static str, u32)]| -> Vec<&'static str> {
        list.iter()
            .map(|(n, _)| *n)
            .chain(MMA_CANDIDATES.iter().copied())
            .collect()
    };
    build_and_check(
        &Expect {
            krate: "examples/tc_gemm/kernel",
            arch: "sm_80",
            features: &[],
            kernels: &names(MMA_GEMMS),
            max_threads: MMA_GEMMS,
        },
        v,
    );
    let all: Vec<(&str, u32)> = MMA_GEMMS
        .iter()
        .copied()
        .chain([("gemm_bf16_wgmma", 384)])
        .collect();
    build_and_check(
        &Expect {
            krate: "examples/tc_gemm/kernel",
            arch: "sm_90a",
            features: &["sm90a"],
            kernels: &names(&all),
            max_threads: &all,
        },
        v,
    );
}

/// The fused kernels: AG + GEMM and GEMM + RS, linked with NVSHMEM 3.4.5.
#[test]
fn fused_kernels_assemble_for_sm80_and_sm90a() {
    let Some(v) = installed("3.4.5") else { return };
    // (crate, sm_80 kernels, sm_90a-only kernels, their `max_threads`).
    for (krate, sm80, hopper, bounds) in [
        (
            "examples/ag_gemm/kernel_tc",
            &["ag_push", "ag_gemm_mma_fused"][..],
            &["ag_gemm_wgmma_fused"][..],
            &[("ag_gemm_mma_fused", 128), ("ag_gemm_wgmma_fused", 384)][..],
        ),
        (
            "examples/gemm_rs/kernel",
            &["gemm_rs_partial_mma", "rs_sum", "gemm_rs_mma_fused"][..],
            &["gemm_rs_partial_wgmma", "gemm_rs_wgmma_fused"][..],
            &[
                ("gemm_rs_partial_mma", 128),
                ("gemm_rs_mma_fused", 128),
                ("gemm_rs_partial_wgmma", 384),
                ("gemm_rs_wgmma_fused", 384),
            ][..],
        ),
    ] {
        let sm80_bounds: Vec<(&str, u32)> = bounds
            .iter()
            .filter(|(k, _)| sm80.contains(k))
            .copied()
            .collect();
        build_and_check(
            &Expect {
                krate,
                arch: "sm_80",
                features: &[],
                kernels: sm80,
                max_threads: &sm80_bounds,
            },
            v,
        );
        let all: Vec<&str> = sm80.iter().chain(hopper).copied().collect();
        build_and_check(
            &Expect {
                krate,
                arch: "sm_90a",
                features: &["sm90a"],
                kernels: &all,
                max_threads: bounds,
            },
            v,
        );
    }
}
