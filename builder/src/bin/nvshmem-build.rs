//! `nvshmem-build`: builds or checks one kernel crate, or fills the per-user
//! cache with everything a build needs (`setup`).
//!
//! ```sh
//! cargo install nvshmem-builder --features cli
//! nvshmem-build setup
//! nvshmem-build build examples/ring/kernel --arch sm_90 --out-dir ptx
//! ```

use clap::{Args, Parser, Subcommand};
use nvshmem_builder::toolchain::Toolchain;
use nvshmem_builder::{
    Arch, Builder, CudaMajor, DeviceLink, ENV_VARS, SUPPORTED_VERSIONS, Version, ptx_folder, wheels,
};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "nvshmem-build",
    version,
    about = "Builds Rust NVSHMEM kernel crates to PTX and cubin"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build a kernel crate: PTX, cubin, manifest and C header; prints each step's time.
    Build(BuildArgs),
    /// Check a kernel crate (compiles, links against NVSHMEM, nothing
    /// unresolved) without generating code.
    Check(BuildArgs),
    /// Install the kernel toolchain and download NVSHMEM, ptxas/nvlink,
    /// cuda.h and libdevice into the per-user cache; prints `<name>\t<path>`
    /// for each.
    Setup(SetupArgs),
    /// List the environment variables the builder reads.
    Env,
}

#[derive(Args)]
struct BuildArgs {
    /// The kernel crate's folder (with its Cargo.toml), or that Cargo.toml.
    crate_dir: PathBuf,
    /// GPU architecture, such as sm_90 [default: $NVSHMEM_RS_ARCH, else sm_90].
    #[arg(long)]
    arch: Option<Arch>,
    /// NVSHMEM version to link against [default: $NVSHMEM_RS_NVSHMEM_VERSION, else the one found].
    #[arg(long)]
    nvshmem_version: Option<Version>,
    /// CUDA major, 12 or 13 [default: $NVSHMEM_RS_CUDA_MAJOR, else the installation's, else 13].
    #[arg(long)]
    cuda_major: Option<CudaMajor>,
    /// Where the outputs go (`<dir>/nvshmem-<version>[-cu12]/<arch>/`) [default: <target dir>/ptx].
    #[arg(long)]
    out_dir: Option<PathBuf>,
    /// The cargo target folder of the nvptx64 build [default: <crate>/target].
    #[arg(long)]
    target_dir: Option<PathBuf>,
    /// How ptxas makes the cubin: auto, whole-program or separate.
    #[arg(long)]
    device_link: Option<DeviceLink>,
    /// Write the PTX only (no ptxas, no cubin).
    #[arg(long)]
    ptx_only: bool,
    /// A cargo feature of the kernel crate (repeatable).
    #[arg(long = "feature")]
    features: Vec<String>,
}

#[derive(Args)]
struct SetupArgs {
    /// NVSHMEM versions to fetch (repeatable) [default: the set of
    /// `wheels::SETUP_DEFAULT`, ~0.5 GB; `--all`: every supported version].
    #[arg(long = "nvshmem-version")]
    versions: Vec<Version>,
    /// Every supported NVSHMEM version (for each `--cuda-major`): ~20 wheels,
    /// 4.4 GB with both majors.
    #[arg(long)]
    all: bool,
    /// CUDA majors to fetch those versions and ptxas for (repeatable) [default: 13].
    #[arg(long = "cuda-major")]
    cuda: Vec<CudaMajor>,
    /// Do not install the kernel toolchain.
    #[arg(long)]
    no_toolchain: bool,
}

fn builder(a: &BuildArgs) -> Builder {
    let mut b = Builder::new(&a.crate_dir);
    if let Some(arch) = a.arch {
        b = b.arch(arch);
    }
    if let Some(v) = a.nvshmem_version {
        b = b.nvshmem_version(v);
    }
    if let Some(c) = a.cuda_major {
        b = b.cuda_major(c);
    }
    if let Some(d) = &a.out_dir {
        b = b.out_dir(d);
    }
    if let Some(d) = &a.target_dir {
        b = b.target_dir(d);
    }
    if let Some(m) = a.device_link {
        b = b.device_link(m);
    }
    if a.ptx_only {
        b = b.ptx_only(true);
    }
    for f in &a.features {
        b = b.feature(f);
    }
    b
}

fn build(a: &BuildArgs) -> nvshmem_builder::Result<()> {
    let out = builder(a).build()?;
    for (step, t) in &out.timings {
        println!("{step:>24}: {:>7.2} s", t.as_secs_f64());
    }
    println!(
        "ptx: {}\ncubin: {}\nmanifest: {}\nheader: {}",
        out.ptx.display(),
        out.cubin
            .as_ref()
            .map(|c| format!(
                "{} ({})",
                c.display(),
                out.manifest
                    .device_link
                    .map(|m| m.as_str())
                    .unwrap_or_default()
            ))
            .unwrap_or_else(|| "none (PTX only)".into()),
        out.manifest_path.display(),
        out.header.display()
    );
    for k in &out.manifest.kernels {
        let params: Vec<String> = k
            .params
            .iter()
            .map(|p| format!("{}: {} ({})", p.name, p.rust_type, p.c_type))
            .collect();
        println!(
            "  {} collective={} regs={:?} spills={:?} params=[{}]",
            k.name,
            k.collective,
            k.registers,
            k.spill_stores,
            params.join(", ")
        );
    }
    Ok(())
}

fn check(a: &BuildArgs) -> nvshmem_builder::Result<()> {
    let out = builder(a).check()?;
    for (step, t) in &out.timings {
        println!("{step:>24}: {:>7.2} s", t.as_secs_f64());
    }
    for (k, collective) in &out.kernels {
        println!("  {k} collective={collective}");
    }
    println!(
        "{} kernels link against NVSHMEM {}",
        out.kernels.len(),
        out.nvshmem.version
    );
    Ok(())
}

fn setup(a: &SetupArgs) -> nvshmem_builder::Result<()> {
    if !a.no_toolchain {
        let tc = Toolchain::pinned()?;
        println!("toolchain\t{}", tc.sysroot.display());
    }
    let cudas = if a.cuda.is_empty() {
        vec![CudaMajor::Cuda13]
    } else {
        a.cuda.clone()
    };
    let pairs: Vec<(Version, CudaMajor)> = if a.all || !a.versions.is_empty() {
        let versions: Vec<Version> = match a.all {
            true => SUPPORTED_VERSIONS.iter().map(|i| i.version).collect(),
            false => a.versions.clone(),
        };
        cudas
            .iter()
            .flat_map(|&c| versions.iter().map(move |&v| (v, c)))
            .collect()
    } else {
        wheels::SETUP_DEFAULT.to_vec()
    };
    // `ptx_folder`'s name (`nvshmem-<version>[-cu12]`), the key scripts read.
    for &(v, cuda) in &pairs {
        let nv = wheels::nvshmem_for(v, cuda)?;
        println!("{}\t{}", ptx_folder(v, cuda), nv.root.display());
    }
    let mut cudas: Vec<CudaMajor> = pairs.iter().map(|p| p.1).chain(cudas).collect();
    cudas.sort();
    cudas.dedup();
    for &cuda in &cudas {
        let nvcc = wheels::ensure(cuda.nvcc_wheel(), &format!("ptxas (CUDA {cuda})"))?;
        let dir = match cuda {
            CudaMajor::Cuda13 => "nvidia/cu13/bin",
            CudaMajor::Cuda12 => "nvidia/cuda_nvcc/bin",
        };
        println!("ptxas-cu{cuda}\t{}", nvcc.join(dir).join("ptxas").display());
        if cuda == CudaMajor::Cuda12 {
            let jl = wheels::ensure(wheels::NVJITLINK_CU12_WHEEL, "nvJitLink (CUDA 12)")?;
            println!("nvjitlink-cu12\t{}", jl.display());
        }
    }
    println!("cuda-include\t{}", wheels::cuda_include()?.display());
    println!(
        "libdevice\t{}",
        nvshmem_builder::toolchain::libdevice::ensure()?.display()
    );
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Build(a) => build(a),
        Command::Check(a) => check(a),
        Command::Setup(a) => setup(a),
        Command::Env => {
            for (name, what) in ENV_VARS {
                println!("{name:<28} {what}");
            }
            Ok(())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
