//! The builder end to end, on the fixture crates in `tests/fixtures/`, for
//! every NVSHMEM version the set-up step installs. No GPU needed: ptxas checks
//! the PTX.
//!
//! A test whose inputs are missing (NVSHMEM not set up, no ptxas, no system
//! LLVM) prints `SKIPPED: <reason>`; with `NVSHMEM_RS_REQUIRE_ALL=1` (CI sets it)
//! it fails instead.

mod common;

use common::{
    assert_entries, build_ptx, builder, compile_header, fails_with, installed, installed_for,
    kernel_crate, max_registers, parse_arch, run_in_parallel, skip, target, timings,
};
use nvshmem_builder::{Arch, Builder, CudaMajor, DeviceLink, Error, Version};
use std::path::Path;

#[test]
fn builds_linked_ptx_and_cubin_for_every_version_and_arch() {
    for (version, arch) in [
        ("3.4.5", "sm_90"),
        ("3.4.5", "sm_80"),
        ("3.4.5", "sm_90a"),
        ("3.8.0", "sm_90"),
        ("3.8.0", "sm_100"),
    ] {
        let Some(v) = installed(version) else {
            continue;
        };
        let what = format!("{version}/{arch}");
        let (out, ptx) = build_ptx(
            builder("ok").nvshmem_version(v).arch(parse_arch(arch)),
            &what,
        );
        assert_entries(&ptx, &["put_rank", "barrier"], &what);
        assert!(!ptx.lines().any(|l| (l.contains(".func") || l.contains("call")) && l.contains("nvshmem_int_p")),
            "{version}/{arch}: NVSHMEM call not inlined");
        for global in ["nvshmemi_device_state_d", "nvshmemi_device_lib_version_d"] {
            assert!(
                ptx.lines()
                    .any(|l| l.starts_with(".visible .const") && l.contains(global)),
                "{version}/{arch}: {global}"
            );
        }
        let m = &out.manifest;
        assert_eq!(m.nvshmem_version, v);
        assert_eq!(m.arch, parse_arch(arch));
        assert!(
            out.cubin
                .as_ref()
                .is_some_and(|c| std::fs::metadata(c).unwrap().len() > 0)
        );
        let put = m.kernel("put_rank").unwrap();
        let barrier = m.kernel("barrier").unwrap();
        assert!(
            !put.collective && barrier.collective,
            "collective detection through a helper"
        );
        assert_eq!(
            put.params
                .iter()
                .map(|p| (p.name.as_str(), p.c_type.as_str(), p.size))
                .collect::<Vec<_>>(),
            [("dest", "int32_t*", 8), ("scale", "uint32_t", 4)]
        );
        assert!(put.registers.is_some_and(|r| r > 0));
        let header = std::fs::read_to_string(&out.header).unwrap();
        assert!(header.contains(&format!("#define FIXTURE_OK_NVSHMEM_VERSION \"{version}\"")));
        assert!(header.contains("fixture_ok_launch_put_rank("));
        eprintln!(
            "{version}/{arch}: ok, PTX ISA {}, put_rank {} registers",
            m.ptx_isa,
            put.registers.unwrap()
        );
    }
}

#[test]
fn ptx_isa_is_at_least_what_the_bitcode_asks_for() {
    let Some(v) = installed("3.8.0") else { return };
    let out = builder("ok")
        .nvshmem_version(v)
        .arch(Arch::DEFAULT)
        .build()
        .unwrap();
    // 3.8.0's sm_90 functions carry +ptx88 (PTX 8.8); PTX 8.0 would fail in ptxas.
    let isa: f32 = out.manifest.ptx_isa.parse().unwrap();
    assert!(isa >= 8.8, "PTX ISA {isa}");
}

/// A kernel crate that does not compile, calls a function nothing defines,
/// has no kernel or no panic handler fails with the reason: rustc's
/// diagnostics, the unresolved name, what a kernel looks like, the
/// `panic_handler!` line.
#[test]
fn broken_kernel_crates_fail_with_the_reason() {
    let Some(v) = installed("3.4.5") else { return };
    for (fixture, kind, says) in [
        (
            "compile_error",
            "CompileFailed",
            &["E0308", "mismatched types", "src/lib.rs:"][..],
        ),
        ("unresolved", "UnresolvedExterns", &["nvshmem_int_pp"]),
        ("no_kernels", "NoKernels", &["extern \"ptx-kernel\""]),
        (
            "no_panic_handler",
            "UnresolvedExterns",
            &["rust_begin_unwind", "nvshmem_device::panic_handler!();"],
        ),
    ] {
        fails_with(builder(fixture).nvshmem_version(v).build(), kind, says);
    }
    // `check` names what does not link, as `build` does.
    let r = builder("unresolved").nvshmem_version(v).check();
    fails_with(r, "UnresolvedExterns", &["nvshmem_int_pp"]);
}

#[test]
fn missing_nvshmem_says_how_to_install_it() {
    let r = builder("ok")
        .nvshmem_version("9.9.9".parse().unwrap())
        .build();
    fails_with(r, "UnsupportedVersion", &["3.3.20, 3.3.24, 3.4.5"]);
    let r = builder("ok").nvshmem_home("/nonexistent/nvshmem").build();
    fails_with(r, "Nvshmem(HomeInvalid", &["NVSHMEM_HOME"]);
}

/// An sm_90a instruction (`setmaxnreg`, as `nvshmem_device::wgmma` calls it)
/// in a build for sm_90 or sm_80 is an error before `llc` (which would abort
/// with "Cannot select: intrinsic") that names the kernel, the function that
/// calls it and sm_90a; for sm_90a the same crate builds.
#[test]
fn instructions_the_arch_lacks_are_named_before_llc() {
    let Some(v) = installed("3.4.5") else { return };
    for arch in ["sm_90", "sm_80"] {
        let r = builder("arch_specific")
            .out_dir(target().join("builder-tests/arch_specific").join(arch))
            .nvshmem_version(v)
            .arch(parse_arch(arch))
            .build();
        let e = fails_with(
            r,
            "ArchMismatch",
            &[
                "kernel `producer`",
                "setmaxnreg",
                "fixture_arch_specific::raise_registers",
                "needs sm_90a",
                &format!("this build is for {arch}"),
            ],
        );
        assert!(!e.contains("plain"), "{e}");
    }
    let out = builder("arch_specific")
        .nvshmem_version(v)
        .arch(parse_arch("sm_90a"))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let ptx = std::fs::read_to_string(&out.ptx).unwrap();
    assert!(ptx.contains("setmaxnreg.inc.sync.aligned.u32"), "{ptx}");
}

#[test]
fn old_llvm_tools_are_refused_with_the_fix() {
    let Some(v) = installed("3.4.5") else { return };
    let system = Path::new("/usr/lib/llvm-14/bin");
    if !system.join("llvm-link").exists() {
        return skip("no LLVM 14 at /usr/lib/llvm-14/bin to play the old toolchain");
    }
    let e = builder("ok")
        .nvshmem_version(v)
        .llvm_tools_dir(system)
        .build()
        .unwrap_err();
    match &e {
        Error::LlvmTooOld { producer, .. } => assert!(producer.contains("18"), "{producer}"),
        other => panic!("expected LlvmTooOld, got {other:?}"),
    }
    assert!(e.to_string().contains("llvm-tools"), "{e}");
}

/// Both device link modes give a cubin and per-kernel figures, and the
/// manifest says which was used. Separate compilation's cubin comes from
/// nvlink: an executable image (not a relocatable object) that covers every
/// kernel. With NVSHMEM 3.8, separate compilation keeps NVSHMEM's transport
/// functions (compiled at 32 registers, as in `libnvshmem_device.a`) out of
/// the kernels' registers, and `Auto` chooses it.
#[test]
fn both_device_link_modes_make_a_cubin() {
    let Some(v) = installed("3.8.0") else {
        return;
    };
    let mut put_registers = Vec::new();
    for mode in [
        DeviceLink::WholeProgram,
        DeviceLink::Separate,
        DeviceLink::Auto,
    ] {
        let out = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../target/builder-tests")
            .join(format!("ok-{mode}"));
        let built = builder("ok")
            .out_dir(out)
            .nvshmem_version(v)
            .device_link(mode)
            .build()
            .unwrap_or_else(|e| panic!("{mode}: {e}"));
        let used = if mode == DeviceLink::Auto {
            DeviceLink::Separate
        } else {
            mode
        };
        assert_eq!(built.manifest.device_link, Some(used));
        let cubin = std::fs::read(built.cubin.as_ref().expect("a cubin")).unwrap();
        assert_eq!(&cubin[..4], b"\x7fELF", "{mode}: not an ELF image");
        // ELF e_type at byte 16: 2 = executable (loadable), 1 = relocatable.
        assert_eq!(cubin[16], 2, "{mode}: the cubin is not an executable image");
        for k in &built.manifest.kernels {
            assert!(
                k.registers.is_some_and(|r| r > 0),
                "{mode}: no registers for {}",
                k.name
            );
        }
        let put = built
            .manifest
            .kernel("put_rank")
            .unwrap()
            .registers
            .unwrap();
        put_registers.push(put);
        eprintln!("3.8.0 {mode}: put_rank {put} registers");
    }
    // `put_rank` is one `p`: NVSHMEM's transport is its only large callee.
    let [whole, separate, auto] = put_registers[..] else {
        unreachable!()
    };
    assert!(
        separate <= 64 && separate < whole && auto == separate,
        "put_rank registers: whole-program {whole}, separate {separate}, auto {auto}"
    );
    assert_eq!("separate".parse::<DeviceLink>(), Ok(DeviceLink::Separate));
    assert!(
        "fast"
            .parse::<DeviceLink>()
            .unwrap_err()
            .to_string()
            .contains("whole-program")
    );
}

#[test]
fn a_missing_kernel_crate_is_named() {
    let r = Builder::new("/nonexistent/kernels").build();
    fails_with(r, "KernelCrateNotFound", &["/nonexistent/kernels"]);
}

/// Launch bounds moved from `[package.metadata.nvshmem.max-threads]` to
/// `#[kernel(max_threads = N)]`: a crate that still has the table is refused
/// with the attribute to write, not built without its `.maxntid`.
#[test]
fn max_threads_in_cargo_metadata_is_refused() {
    let dir = target().join("builder-tests/old-max-threads");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"old-bounds\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\
         [package.metadata.nvshmem.max-threads]\ngemm = 384\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(dir.join("src/lib.rs"), "").unwrap();
    match Builder::new(&dir).check() {
        Err(e @ Error::MaxThreadsInMetadata { .. }) => {
            let msg = e.to_string();
            assert!(
                msg.contains("#[kernel(max_threads = 384)] on `gemm`"),
                "{msg}"
            );
        }
        other => panic!("expected MaxThreadsInMetadata, got {other:?}"),
    }
}

/// The coverage kernels (`tests/kernels/coverage`, which call every public
/// device function) build for 3.4.5 on sm_90 and sm_80, for 3.8.0 on sm_90
/// and sm_100, and for the versions PyTorch pins (3.3.20 for CUDA 12, ptxas
/// 12.9 and nvJitLink; 3.7.2) on sm_90: ptxas accepts them, every kernel of
/// the source is an `.entry`, and the version global is there. (Unresolved
/// externs fail the build itself.) `cargo xtask matrix` builds every version.
///
/// Every build uses `DeviceLink::Auto`. On 3.8.0 it must choose separate
/// compilation: inlined whole, 3.8's transport code makes these kernels 5.7
/// million PTX lines, and whole-program ptxas ran over 21 minutes on them.
#[test]
fn coverage_kernels_build_for_both_versions() {
    // The kernels are generated by macros over the type lists: these stand
    // for each family, and every build must have the same full set.
    let families = [
        "rma_f32",
        "rma_pod",
        "amo_u64",
        "amo_f64",
        "wait_u32",
        "signals_and_order",
        "barriers",
        "library",
        "panics",
    ];
    use nvshmem_builder::CudaMajor::{Cuda12, Cuda13};
    let builds: Vec<(&str, &str, Version, CudaMajor)> = [
        ("3.4.5", "sm_90", Cuda13),
        ("3.4.5", "sm_80", Cuda13),
        ("3.8.0", "sm_90", Cuda13),
        ("3.8.0", "sm_100", Cuda13),
        ("3.3.20", "sm_90", Cuda12),
        ("3.7.2", "sm_90", Cuda13),
    ]
    .into_iter()
    .filter_map(|(version, arch, c)| Some((version, arch, installed_for(version, c)?, c)))
    .collect();
    // The four builds are independent (each version and arch has its own
    // work folder) and mostly single-threaded ptxas: build them on every
    // core, then check them in order.
    let built = run_in_parallel(&builds, |&(version, arch, v, cuda)| {
        let started = std::time::Instant::now();
        let b = kernel_crate("tests/kernels/coverage", "coverage", v, arch).cuda_major(cuda);
        let (out, ptx) = build_ptx(b, &format!("{version}/{arch}"));
        (out, ptx, started.elapsed())
    });
    let mut first: Option<Vec<String>> = None;
    for (&(version, arch, v, cuda), (out, ptx, took)) in builds.iter().zip(built) {
        let what = format!("{version}/cu{cuda}/{arch}");
        assert_eq!(
            out.manifest.cuda_toolkit.map(|t| t.major),
            Some(cuda.number()),
            "{what}: built with another CUDA's ptxas"
        );
        let kernels: Vec<String> = out
            .manifest
            .kernels
            .iter()
            .map(|k| k.name.clone())
            .collect();
        assert_entries(&ptx, &kernels, &what);
        for f in families {
            assert!(
                kernels.iter().any(|k| k == f),
                "{version}/{arch}: no kernel {f}"
            );
        }
        assert!(
            ptx.lines()
                .any(|l| l.starts_with(".visible .const")
                    && l.contains("nvshmemi_device_lib_version_d")),
            "{version}/{arch}: no version global"
        );
        assert!(out.cubin.is_some(), "{version}/{arch}: no cubin");
        let mode = out.manifest.device_link.unwrap_or_default();
        if version == "3.8.0" {
            assert_eq!(
                mode,
                DeviceLink::Separate,
                "{version}/{arch}: Auto chose {mode}"
            );
        }
        // 3.5, 3.7 and 3.8 add the kernels of their own functions
        // (`*_3_5`, ...); the rest is the same set in every build.
        let (mut added, common): (Vec<String>, Vec<String>) = kernels
            .iter()
            .cloned()
            .partition(|k| ["_3_5", "_3_7", "_3_8"].iter().any(|s| k.ends_with(s)));
        added.sort();
        let expected: Vec<&str> = [
            (Version::new(3, 7, 0), "amo_float_add_3_7"),
            (Version::new(3, 8, 0), "extensions_3_8"),
            (Version::new(3, 7, 0), "flush_3_7"),
            (Version::new(3, 5, 0), "qp_3_5"),
        ]
        .into_iter()
        .filter(|(since, _)| v >= *since)
        .map(|(_, k)| k)
        .collect();
        assert_eq!(added, expected, "{what}");
        match &first {
            None => first = Some(common),
            Some(f) => assert_eq!(f, &common, "{version}/{arch}: another set of kernels"),
        }
        let spills: u32 = out
            .manifest
            .kernels
            .iter()
            .filter_map(|k| k.spill_stores)
            .sum();
        eprintln!(
            "coverage {version}/{arch}: {} kernels ({mode}), max {} registers, {spills} bytes spilled, {:.1} s ({})",
            kernels.len(),
            max_registers(&out.manifest),
            took.as_secs_f64(),
            timings(&out)
        );
    }
}

/// The collectives' coverage kernels (`tests/kernels/coverage_collectives`:
/// every team, barrier, sync and collective function of the device crate, all
/// scopes, every element type and (op, type) pair) compile for nvptx64 and
/// link against 3.4.5 and 3.8.0 with nothing unresolved; every kernel is
/// marked collective.
///
/// This is [`Builder::check`], not a full build: NVSHMEM's collectives are
/// large (one instance is ~10 000 lines of PTX and 2-5 s of ptxas), and these
/// kernels instantiate ~500 of them, so code generation would take over an
/// hour. The GPU test crate `tests/kernels/collectives` goes through the whole
/// pipeline, ptxas included, with a representative set (every family, op
/// and scope); the ABI test checks every declaration's signature.
#[test]
fn collective_coverage_kernels_link_for_both_versions() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/kernels/coverage_collectives");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for (version, arch) in [("3.4.5", "sm_90"), ("3.8.0", "sm_90"), ("3.8.0", "sm_100")] {
        let Some(v) = installed(version) else {
            continue;
        };
        let started = std::time::Instant::now();
        let out = Builder::new(&dir)
            .target_dir(root.join("target/nvshmem-kernels"))
            .nvshmem_version(v)
            .arch(parse_arch(arch))
            .check()
            .unwrap_or_else(|e| panic!("coverage_collectives {version}/{arch}: {e}"));
        for k in [
            "coll_i32",
            "coll_f16",
            "coll_bf16",
            "coll_isize",
            "coll_pod",
            "teams",
            "maxloc",
        ] {
            assert!(
                out.kernels.contains_key(k),
                "{version}/{arch}: no kernel {k}"
            );
        }
        for (k, collective) in &out.kernels {
            // Every one reaches a collective, so every one must be marked.
            assert!(collective, "{version}/{arch}: {k} is not marked collective");
        }
        eprintln!(
            "coverage_collectives {version}/{arch}: {} kernels link, {:.1} s",
            out.kernels.len(),
            started.elapsed().as_secs_f64()
        );
    }
}

/// A kernel crate with none of the boilerplate the builder supplies (no
/// `#![no_std]`, no `#![feature(abi_ptx)]`, `crate-type = ["cdylib"]`, no
/// panic profile) builds; its by-value `#[repr(C)]` struct parameters get
/// named C types: field by field where every field has a C type, opaque
/// bytes of the same size and alignment otherwise.
#[test]
fn struct_params_get_named_c_types() {
    let Some(v) = installed("3.4.5") else { return };
    let out = builder("structs")
        .nvshmem_version(v)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let apply = out.manifest.kernel("apply").unwrap();
    let params: Vec<(&str, &str, &str, u32, u32)> = apply
        .params
        .iter()
        .map(|p| {
            (
                p.name.as_str(),
                p.rust_type.as_str(),
                p.c_type.as_str(),
                p.size,
                p.align,
            )
        })
        .collect();
    assert_eq!(
        params,
        [
            ("job", "Job", "fixture_structs_job_t", 40, 8),
            ("extra", "Scale", "fixture_structs_scale_t", 20, 4)
        ]
    );
    let opaque = &out.manifest.kernel("opaque").unwrap().params[0];
    assert_eq!(opaque.c_type, "fixture_structs_opaque_o_t");
    let h = std::fs::read_to_string(&out.header).unwrap();
    for want in [
        "    fixture_structs_scale_t scale;\n    float* out;\n    uint64_t n;\n} fixture_structs_job_t;",
        "    int32_t offset[3];\n    bool enabled;\n} fixture_structs_scale_t;",
        "sizeof(fixture_structs_job_t) == 40",
        "NVSHMEM_RS_ALIGNOF(fixture_structs_scale_t) == 4",
        "NVSHMEM_RS_ALIGNAS(4) unsigned char bytes[12]; } fixture_structs_opaque_o_t;",
        "CUstream stream, fixture_structs_job_t job, fixture_structs_scale_t extra)",
    ] {
        assert!(h.contains(want), "no `{want}` in\n{h}");
    }
}

/// Every parameter kind in every position reaches the manifest and the
/// header with its own size, alignment and types: each scalar type, pointers,
/// `SymPtr`, `Pe`, `Team`, and a by-value struct first, in the middle, last
/// (llc writes `)  // @name` after the last parameter) and alone.
#[test]
fn every_parameter_kind_and_position_is_described() {
    let Some(v) = installed("3.4.5") else { return };
    let out = builder("params")
        .nvshmem_version(v)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let params = |kernel: &str| -> Vec<(String, String, String, u32, u32)> {
        let k = out
            .manifest
            .kernels
            .iter()
            .find(|k| k.name == kernel)
            .unwrap_or_else(|| panic!("no kernel {kernel}"));
        k.params
            .iter()
            .map(|p| {
                let c = p.c_type.clone();
                (p.name.clone(), p.rust_type.clone(), c, p.size, p.align)
            })
            .collect()
    };
    let row = |n: &str, r: &str, c: &str, size: u32, align: u32| {
        (n.to_string(), r.to_string(), c.to_string(), size, align)
    };
    let out_f64 = row("out", "*mut f64", "double*", 8, 8);
    let affine = row("s", "Affine", "fixture_params_affine_t", 24, 8);
    let scalars = [
        ("a", "i8", "int8_t", 1),
        ("b", "u8", "uint8_t", 1),
        ("c", "i16", "int16_t", 2),
        ("d", "u16", "uint16_t", 2),
        ("e", "i32", "int32_t", 4),
        ("f", "u32", "uint32_t", 4),
        ("g", "i64", "int64_t", 8),
        ("h", "u64", "uint64_t", 8),
        ("i", "isize", "int64_t", 8),
        ("j", "usize", "uint64_t", 8),
        ("k", "f32", "float", 4),
        ("l", "f64", "double", 8),
        ("m", "bool", "bool", 1),
    ]
    .map(|(n, r, c, size)| row(n, r, c, size, size));
    let mut want = scalars.to_vec();
    want.push(out_f64.clone());
    assert_eq!(params("scalars"), want);
    assert_eq!(
        params("pointers"),
        [
            row("p", "*mut f32", "float*", 8, 8),
            row("q", "*const u8", "const uint8_t*", 8, 8),
            row("s", "SymPtr<u64>", "uint64_t*", 8, 8),
            row("pe", "Pe", "uint32_t", 4, 4),
            row("team", "Team", "int32_t", 4, 4),
        ]
    );
    assert_eq!(params("struct_first"), [affine.clone(), out_f64.clone()]);
    assert_eq!(
        params("struct_middle"),
        [
            out_f64.clone(),
            affine.clone(),
            row("n", "u32", "uint32_t", 4, 4)
        ]
    );
    assert_eq!(params("struct_last"), [out_f64.clone(), affine.clone()]);
    assert_eq!(params("struct_only"), [affine]);
    assert_eq!(
        params("small_struct_last"),
        [
            row("out", "*mut u32", "uint32_t*", 8, 8),
            row("f", "Flag", "fixture_params_flag_t", 1, 1)
        ]
    );
    let h = std::fs::read_to_string(&out.header).unwrap();
    for want in [
        "sizeof(fixture_params_affine_t) == 24",
        "NVSHMEM_RS_ALIGNOF(fixture_params_affine_t) == 8",
        "CUstream stream, double* out, fixture_params_affine_t s)",
        // `f` is also the helper's own CUfunction parameter.
        "int32_t e, uint32_t f_, int64_t g",
        "&e, &f_, &g",
        "CUstream stream, fixture_params_affine_t s, double* out)",
        "CUstream stream, double* out, fixture_params_affine_t s, uint32_t n)",
    ] {
        assert!(h.contains(want), "no `{want}` in\n{h}");
    }
}

/// Every header the tests build (the fixtures' and a real kernel crate's)
/// compiles as C99, C11, C++11 and C++17 with `-Wall -Wextra -Werror`,
/// without the launch helpers and, when `cuda.h` is found (the
/// `nvidia-cuda-runtime` wheel that `nvshmem-build setup` fetches), with
/// them; so do all of them included together.
#[test]
fn generated_headers_compile_as_c_and_cpp() {
    let Some(v) = installed("3.4.5") else { return };
    let mut headers = Vec::new();
    for name in ["ok", "structs", "params", "c_keywords"] {
        headers.push(builder(name).nvshmem_version(v).build().unwrap().header);
    }
    let keywords = std::fs::read_to_string(&headers[3]).unwrap();
    for want in [
        "#define FIXTURE_C_KEYWORDS_NUM_KERNELS 2\n",
        "#define FIXTURE_C_KEYWORDS_KERNEL_COUNT \"count\"\n",
        "uint64_t* this_, uint64_t new_, uint32_t class_)",
        "    uint64_t delete_;\n",
    ] {
        assert!(keywords.contains(want), "no `{want}` in\n{keywords}");
    }
    let ring = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/ring/kernel");
    if ring.is_dir() {
        let out = Builder::new(ring)
            .target_dir(target().join("nvshmem-kernels"))
            .out_dir(target().join("builder-tests/ring"))
            .nvshmem_version(v)
            .build()
            .unwrap();
        headers.push(out.header);
    }
    let all = target().join("builder-tests/all-headers.h");
    let includes: String = headers
        .iter()
        .map(|h| format!("#include \"{}\"\n", h.display()))
        .collect();
    std::fs::write(&all, includes).unwrap();
    headers.push(all);
    let cuda = nvshmem_builder::wheels::cuda_include_dir();
    if cuda.is_none() {
        skip(
            "no cuda.h (`nvshmem-build setup` fetches it): headers compiled without the launch helpers only",
        );
    }
    for h in &headers {
        let ran = compile_header(h, cuda.as_deref());
        eprintln!("{}: {}", h.display(), ran.join(", "));
    }
    // NVSHMEM's headers of another release, included first, stop the build.
    let version = |minor: u32| {
        std::process::Command::new("gcc")
            .args(["-fsyntax-only", "-DNVSHMEM_RS_NO_LAUNCH_HELPERS", "-x", "c"])
            .args([
                "-DNVSHMEM_VENDOR_MAJOR_VERSION=3",
                "-DNVSHMEM_VENDOR_PATCH_VERSION=5",
            ])
            .arg(format!("-DNVSHMEM_VENDOR_MINOR_VERSION={minor}"))
            .arg(&headers[0])
            .output()
            .unwrap()
    };
    assert!(version(4).status.success());
    let other = version(8);
    let stderr = String::from_utf8_lossy(&other.stderr);
    assert!(
        !other.status.success() && stderr.contains("linked with NVSHMEM 3.4.5"),
        "{stderr}"
    );
}

/// PTX-only output is asked for, never silent: no cubin, no figures.
#[test]
fn ptx_only_is_explicit() {
    let Some(v) = installed("3.4.5") else { return };
    let out = builder("ok")
        .out_dir(target().join("builder-tests/ok-ptx-only"))
        .nvshmem_version(v)
        .ptx_only(true)
        .build()
        .unwrap();
    assert!(out.cubin.is_none() && out.manifest.cubin.is_none());
    assert!(out.manifest.kernels.iter().all(|k| k.registers.is_none()));
    assert!(
        std::fs::read_to_string(&out.ptx)
            .unwrap()
            .contains(".entry put_rank")
    );
}

/// A kernel crate inside another workspace but not a member is refused
/// before any build, with the fixes; a member whose kernels are written
/// `extern "ptx-kernel"` by hand (which the host build cannot compile) too.
#[test]
fn a_kernel_crate_inside_another_workspace_is_named() {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("outer-workspace");
    let kern = root.join("kern");
    std::fs::create_dir_all(kern.join("src")).unwrap();
    std::fs::write(
        root.join("Cargo.toml"),
        "[workspace]\nmembers = []\nresolver = \"3\"\n",
    )
    .unwrap();
    std::fs::write(
        kern.join("Cargo.toml"),
        "[package]\nname = \"kern\"\nversion = \"0.0.0\"\nedition = \"2024\"\n",
    )
    .unwrap();
    std::fs::write(
        kern.join("src/lib.rs"),
        "#![no_std]\n#[unsafe(no_mangle)]\npub unsafe extern \"ptx-kernel\" fn raw() {}\n",
    )
    .unwrap();
    for members in ["[]", "[\"kern\"]"] {
        std::fs::write(
            root.join("Cargo.toml"),
            format!("[workspace]\nmembers = {members}\nresolver = \"3\"\n"),
        )
        .unwrap();
        let e = Builder::new(&kern).build().unwrap_err();
        let msg = e.to_string();
        if members == "[]" {
            assert!(matches!(e, Error::KernelCrateInWorkspace { .. }), "{e:?}");
            assert!(msg.contains("members") && msg.contains("exclude"), "{msg}");
        } else {
            assert!(matches!(e, Error::RawKernelsInWorkspace { .. }), "{e:?}");
            assert!(
                msg.contains("raw") && msg.contains("#[nvshmem_device::kernel]"),
                "{msg}"
            );
        }
    }
}
