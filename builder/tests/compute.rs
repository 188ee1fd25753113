//! The compute kernels (`tests/kernels/compute`: warp collectives, shared
//! memory, scoped atomics, libdevice math, packed halves) build through
//! ptxas for sm_80 and sm_90: every kernel is an `.entry`, ptxas reports
//! registers and spills, no extern is left but ptxas' own (libdevice and
//! NVVM reflection fully resolved), and the shared memory is `.shared`.
//!
//! Without NVSHMEM 3.4.5, ptxas or libdevice (all from `./x setup`) it
//! prints `SKIPPED`; `NVSHMEM_RS_REQUIRE_ALL=1` makes that a failure.

mod common;

use common::{assert_entries, build_ptx, kernel_crate};
use nvshmem_builder::Version;

const KERNELS: &[&str] = &[
    "warp_shuffle_u32",
    "warp_shuffle_wide",
    "warp_vote",
    "warp_reduce",
    "shared_static",
    "shared_static_big",
    "shared_dynamic",
    "atomics_global",
    "atomics_message",
    "atomics_shared",
    "math_f32",
    "math_f64",
    "math_approx",
    "half_convert",
    "packed_math",
    "cuda_arch_value",
];

#[test]
fn compute_kernels_build_for_sm80_and_sm90() {
    // The builder downloads what is missing (NVSHMEM, ptxas, libdevice).
    let v: Version = "3.4.5".parse().unwrap();
    for arch in ["sm_80", "sm_90"] {
        let started = std::time::Instant::now();
        let b = kernel_crate("tests/kernels/compute", "compute", v, arch);
        let (out, ptx) = build_ptx(b, arch);
        let m = &out.manifest;
        assert_entries(&ptx, KERNELS, arch);
        for k in KERNELS {
            let info = m.kernel(k).unwrap_or_else(|e| panic!("{arch}: {e}"));
            assert!(
                info.registers.is_some_and(|r| r > 0),
                "{arch}: no registers for {k}"
            );
            assert!(
                info.spill_stores.is_some() && info.spill_loads.is_some(),
                "{arch}: no spills for {k}"
            );
            assert!(!info.collective, "{arch}: {k} is not collective");
        }
        assert_eq!(
            m.kernels.len(),
            KERNELS.len(),
            "{arch}: kernels {:?}",
            m.kernels.iter().map(|k| &k.name).collect::<Vec<_>>()
        );
        // Nothing unresolved: no libdevice function, no NVVM reflection, no other extern.
        for line in ptx.lines().filter(|l| l.contains(".extern")) {
            let allowed = line.contains("vprintf")
                || line.contains("__assertfail")
                || line.contains(".shared") && line.contains("nvshmem_rs_dynamic_shared");
            assert!(allowed, "{arch}: extern left: {line}");
        }
        // (Block labels may still name an inlined `__nv_*` function in a comment.)
        let code = ptx
            .lines()
            .map(|l| l.split("//").next().unwrap_or_default());
        for l in code {
            assert!(
                !l.contains("__nv_") && !l.contains("__nvvm_reflect"),
                "{arch}: libdevice left: {l}"
            );
        }
        // Shared memory is `.shared`, accessed with `.shared` instructions.
        assert!(
            ptx.lines()
                .any(|l| l.trim_start().starts_with(".shared") && l.contains("TILE[1024]")),
            "{arch}: static_shared! TILE is not .shared"
        );
        assert!(
            ptx.contains(".extern .shared .align 16 .b8 nvshmem_rs_dynamic_shared[]"),
            "{arch}"
        );
        assert!(
            ptx.contains("st.shared.") && ptx.contains("ld.shared."),
            "{arch}: no ld/st.shared"
        );
        assert!(
            ptx.contains("atom.relaxed.cta.shared.add.u32"),
            "{arch}: no .shared atomic"
        );
        let smem = |k: &str| m.kernel(k).unwrap().static_shared_bytes.unwrap_or(0);
        assert!(
            smem("shared_static") >= 1028,
            "{arch}: shared_static has {} bytes",
            smem("shared_static")
        );
        assert_eq!(smem("shared_static_big"), 8192, "{arch}");
        assert_eq!(smem("math_f32"), 0, "{arch}");
        // sm_90's native bf16x2 atomic exists only in the sm_90 build (math::cuda_arch).
        assert_eq!(
            ptx.contains("atom.relaxed.gpu.add.noftz.bf16x2")
                || ptx.contains("red.relaxed.gpu.add.noftz.bf16x2"),
            arch == "sm_90",
            "{arch}: bf16x2 atomic add chosen wrongly"
        );
        // math::cuda_arch() is the build's arch, a constant.
        let arch_value = format!("st.global.b32 \t[%rd2], {}0;", &arch[3..]);
        let entry = ptx.split(".entry cuda_arch_value(").nth(1).unwrap();
        assert!(
            entry.split("\n}").next().unwrap().contains(&arch_value),
            "{arch}: cuda_arch()"
        );
        let mut table = String::new();
        for k in &m.kernels {
            table += &format!(
                "  {:<18} {:>3} registers, {:>4} B spill stores, {:>4} B spill loads, {:>5} B smem\n",
                k.name,
                k.registers.unwrap_or(0),
                k.spill_stores.unwrap_or(0),
                k.spill_loads.unwrap_or(0),
                k.static_shared_bytes.unwrap_or(0)
            );
        }
        eprintln!(
            "compute kernels, {arch} ({} PTX lines, {:.1} s):\n{table}",
            ptx.lines().count(),
            started.elapsed().as_secs_f64()
        );
    }
}
