//! `cargo xtask cpp-host`: the C++ drop-in host (`examples/cpp_host/main.cu`)
//! built with nvcc against a kernel crate's generated header, one program per
//! crate, then run on 1 and 2 PEs (`--run`). `--build-only` needs no GPU and
//! no CUDA install: nvcc comes from pip wheels when there is none (see
//! `nvcc.rs`), NVSHMEM from python3's site-packages or the per-user cache.

use crate::nvcc::{self, Nvcc, run_shown};
use nvshmem_builder::manifest::Manifest;
use nvshmem_builder::{Arch, Builder, Version};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

/// The crates built when none is named.
const DEFAULT_CRATES: &[&str] = &["examples/ag_gemm/kernel", "examples/ring/kernel"];

#[derive(clap::Args)]
pub struct Args {
    /// A kernel crate's folder (repeatable) [default: examples/ag_gemm/kernel, examples/ring/kernel].
    #[arg(long = "crate", value_name = "DIR")]
    crates: Vec<PathBuf>,
    /// Use kernels already built in DIR (a `nvshmem-<version>/<arch>/` folder) instead of
    /// building crates; `--kernels` names them.
    #[arg(long, value_name = "DIR", conflicts_with = "crates")]
    ptx_dir: Option<PathBuf>,
    /// With --ptx-dir: the kernel crates' names (repeatable) [default: ag-gemm-kernels, ring-kernels].
    #[arg(long = "kernels", value_name = "NAME", requires = "ptx_dir")]
    names: Vec<String>,
    /// GPU architecture of the kernels (and of nvcc's device link).
    #[arg(long, default_value_t = Arch::DEFAULT)]
    arch: Arch,
    /// NVSHMEM version to link the kernels against [default: the builder's].
    #[arg(long)]
    nvshmem_version: Option<Version>,
    /// Compile and link only: no GPU needed.
    #[arg(long, conflicts_with = "run")]
    build_only: bool,
    /// The PE counts to run each program on (more than 1 through nvshmem-run).
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    run: Vec<u32>,
    /// The launcher [default: target/release/nvshmem-run].
    #[arg(long)]
    launcher: Option<PathBuf>,
    /// Where the programs (and built kernels) go [default: target/cpp_host].
    #[arg(long)]
    out: Option<PathBuf>,
}

/// One kernel crate's outputs: its manifest and the folder with its header, PTX and cubin.
struct Kernels {
    manifest: Manifest,
    dir: PathBuf,
}

impl Kernels {
    /// The header's macro prefix: [`nvshmem_builder::c_prefix`] in upper case.
    fn prefix(&self) -> String {
        nvshmem_builder::c_prefix(&self.manifest.crate_name).to_ascii_uppercase()
    }
}

pub fn run(args: Args) -> Result<ExitCode, String> {
    let t0 = Instant::now();
    let root = crate::repo_root();
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| root.join("target/cpp_host"));
    let kernels = kernels(&args, &root, &out)?;
    let t_kernels = t0.elapsed();

    let nvcc = Nvcc::find()?;
    println!("nvcc: {}", nvcc.describe());
    let t1 = Instant::now();
    let mut programs = Vec::new();
    for k in &kernels {
        programs.push((
            k,
            build(&nvcc, &root, k, &out.join(&k.manifest.crate_name))?,
        ));
    }
    let t_nvcc = t1.elapsed();
    println!(
        "built {} program(s): kernels {:.1} s, nvcc {:.1} s",
        programs.len(),
        t_kernels.as_secs_f64(),
        t_nvcc.as_secs_f64()
    );
    for (_, p) in &programs {
        println!("  {}", p.display());
    }
    if args.build_only {
        return Ok(ExitCode::SUCCESS);
    }
    if !crate::run::gpu_present() {
        println!("SKIPPED: no GPU here (nvidia-smi lists none): built, not run");
        return Ok(ExitCode::SUCCESS);
    }
    let launcher = args
        .launcher
        .clone()
        .unwrap_or_else(|| root.join("target/release/nvshmem-run"));
    let mut failed = 0;
    for (k, program) in &programs {
        for &n in &args.run {
            let mut cmd = if n == 1 {
                Command::new(program)
            } else {
                let mut c = Command::new(&launcher);
                c.args(["-n", &n.to_string(), "--timeout", "120", "--"])
                    .arg(program);
                c
            };
            cmd.arg(&k.dir).envs(crate::run::BASE_ENV.iter().copied());
            let name = &k.manifest.crate_name;
            match run_shown(&mut cmd) {
                Ok(()) => println!("cpp-host: {name}, {n} PE(s): PASS"),
                Err(e) => {
                    println!("cpp-host: {name}, {n} PE(s): FAIL ({e})");
                    failed += 1;
                }
            }
        }
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The kernels: built from `--crate` folders, or read from `--ptx-dir`.
fn kernels(args: &Args, root: &Path, out: &Path) -> Result<Vec<Kernels>, String> {
    if let Some(dir) = &args.ptx_dir {
        let names: Vec<String> = if args.names.is_empty() {
            vec!["ag-gemm-kernels".into(), "ring-kernels".into()]
        } else {
            args.names.clone()
        };
        return names
            .iter()
            .map(|n| {
                Ok(Kernels {
                    manifest: Manifest::read(&dir.join(format!("{n}.json")))?,
                    dir: dir.clone(),
                })
            })
            .collect();
    }
    let crates: Vec<PathBuf> = if args.crates.is_empty() {
        DEFAULT_CRATES.iter().map(|c| root.join(c)).collect()
    } else {
        args.crates.clone()
    };
    let mut built = Vec::new();
    for dir in crates {
        let mut b = Builder::new(&dir)
            .arch(args.arch)
            .out_dir(out.join("ptx"))
            .target_dir(root.join("target/nvshmem-kernels"));
        if let Some(v) = args.nvshmem_version {
            b = b.nvshmem_version(v);
        }
        let o = b.build().map_err(|e| format!("{}: {e}", dir.display()))?;
        println!(
            "{}: {} kernels, NVSHMEM {}, {} -> {}",
            dir.display(),
            o.manifest.kernels.len(),
            o.manifest.nvshmem_version,
            o.manifest.arch,
            o.header.display()
        );
        let dir = o.header.parent().map(Path::to_path_buf).unwrap_or_default();
        built.push(Kernels {
            manifest: o.manifest,
            dir,
        });
    }
    Ok(built)
}

/// `main.cu` for `k`, into `build/cpp_host`: compile, then link against
/// NVSHMEM's host library and `libnvshmem_device.a` (nvcc -rdc: the init
/// wrappers live there).
fn build(nvcc: &Nvcc, root: &Path, k: &Kernels, build: &Path) -> Result<PathBuf, String> {
    let flags = [
        format!("-I{}", k.dir.display()),
        format!("-DCPP_HOST_HEADER=\"{}.h\"", k.manifest.crate_name),
        format!("-DCPP_HOST_KERNELS={}", k.prefix()),
        format!("-DNVSHMEM_RS_PTX_DIR=\"{}\"", k.dir.display()),
    ];
    let source = root.join("examples/cpp_host/main.cu");
    program(
        nvcc,
        k.manifest.nvshmem_version,
        k.manifest.arch,
        (&source, &flags),
        build,
        "cpp_host",
    )
}

/// A C++ host program: `source` compiled with nvcc -rdc (and `flags`) for
/// `arch` into `build/<name>`, linked against NVSHMEM `version`'s host
/// library (by its path, `rpath` set) and `libnvshmem_device.a`, which holds
/// the device side of `nvshmemx_init_attr`.
pub fn program(
    nvcc: &Nvcc,
    version: Version,
    arch: Arch,
    (source, flags): (&Path, &[String]),
    build: &Path,
    name: &str,
) -> Result<PathBuf, String> {
    std::fs::create_dir_all(build).map_err(|e| format!("{}: {e}", build.display()))?;
    let nv = nvcc::nvshmem(version)?;
    let arch = format!("-arch={arch}");
    let (obj, program) = (build.join(format!("{name}.o")), build.join(name));
    run_shown(
        nvcc.command()
            .args(["-rdc=true", &arch, "-O2", "-c"])
            .arg(format!("-I{}", nv.include_dir().display()))
            .args(flags)
            .arg(source)
            .arg("-o")
            .arg(&obj),
    )?;
    let device_lib = nv.lib_dir().join("libnvshmem_device.a");
    let libcuda = nvcc.libcuda_args(&[obj.clone(), device_lib], build)?;
    run_shown(
        nvcc.command()
            .args(["-rdc=true", &arch])
            .arg(&obj)
            .arg("-o")
            .arg(&program)
            .arg(format!("-L{}", nv.lib_dir().display()))
            .args(nvcc.link_args())
            .args(libcuda)
            .args([
                "-Xlinker",
                "-l:libnvshmem_host.so.3",
                "-lnvshmem_device",
                "-lcuda",
            ])
            .arg("-Xlinker")
            .arg(format!("-rpath,{}", nv.lib_dir().display())),
    )?;
    Ok(program)
}
