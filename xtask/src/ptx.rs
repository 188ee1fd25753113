//! `cargo xtask ptx`: every kernel crate of the workspace into `ptx/`.

use nvshmem_builder::{Arch, Builder, DeviceLink, Version};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// GPU architecture (default: NVSHMEM_RS_ARCH, else the builder's, sm_90).
    #[arg(long)]
    arch: Option<Arch>,
    /// NVSHMEM version to link against (default: the builder's).
    #[arg(long)]
    nvshmem_version: Option<Version>,
    /// How ptxas makes the cubins: auto, whole-program or separate.
    #[arg(long, default_value = "auto")]
    device_link: DeviceLink,
    /// Output folder; <out>/nvshmem-<version>/<arch>/ is created.
    #[arg(long, default_value = "ptx")]
    out: PathBuf,
}

/// Members that depend on `nvshmem-device` but are not built to `ptx/`:
/// (folder, why).
const NOT_BUILT: &[(&str, &str)] = &[
    (
        "examples/tc_gemm/tiles",
        "a library of the GEMM kernel crates, with no kernels of its own",
    ),
    (
        "tests/kernels/coverage_collectives",
        "~500 collective instances: over an hour of code generation (the builder tests link-check it)",
    ),
];

/// The workspace's kernel crates: its members that depend on `nvshmem-device`
/// (the host side depends on `nvshmem-types` only; the root package only as
/// a dev-dependency), less [`NOT_BUILT`].
pub fn kernel_crates(root: &Path) -> Result<Vec<PathBuf>, String> {
    let meta = cargo_metadata::MetadataCommand::new()
        .current_dir(root)
        .no_deps()
        .exec()
        .map_err(|e| format!("cargo metadata: {e}"))?;
    let members: Vec<_> = meta.workspace_packages();
    let mut crates: Vec<PathBuf> = members
        .iter()
        .filter(|p| {
            p.dependencies.iter().any(|d| {
                d.name == "nvshmem-device" && d.kind == cargo_metadata::DependencyKind::Normal
            })
        })
        .filter_map(|p| {
            p.manifest_path
                .parent()
                .map(|d| d.as_std_path().to_path_buf())
        })
        .filter(|d| !NOT_BUILT.iter().any(|(skip, _)| d.ends_with(skip)))
        .collect();
    crates.sort();
    Ok(crates)
}

pub fn run(args: Args) -> Result<ExitCode, String> {
    let root = crate::repo_root();
    let out = root.join(&args.out);
    let crates = kernel_crates(&root)?;
    let mut failed = 0;
    for dir in &crates {
        let rel = dir.strip_prefix(&root).unwrap_or(dir);
        let mut b = Builder::new(dir)
            .device_link(args.device_link)
            .out_dir(&out)
            .target_dir(root.join("target/nvshmem-kernels"));
        if let Some(v) = args.nvshmem_version {
            b = b.nvshmem_version(v);
        }
        if let Some(arch) = args.arch {
            b = b.arch(arch);
        }
        match b.build() {
            Ok(o) => println!(
                "{:<32} {} kernels -> {}",
                rel.display(),
                o.manifest.kernels.len(),
                o.manifest_path
                    .strip_prefix(&root)
                    .unwrap_or(&o.manifest_path)
                    .display()
            ),
            Err(e) => {
                failed += 1;
                eprintln!("{}: {e}", rel.display());
            }
        }
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
