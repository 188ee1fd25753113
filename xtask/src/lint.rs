//! `cargo xtask clippy-kernels`: clippy on every kernel crate for the GPU
//! target (`nvptx64-nvidia-cuda`, with the builder's pinned nightly), where
//! their `cfg(target_arch = "nvptx64")` code is what compiles. On the host
//! they are covered by the workspace's own `cargo clippy`. Crates with an
//! `sm90a` feature are linted a second time with it on (their Hopper-only code).

use nvshmem_builder::toolchain::Toolchain;
use std::process::{Command, ExitCode};

#[derive(clap::Args)]
pub struct Args {}

/// The kernel crates' feature for sm_90a-only code (wgmma, TMA, setmaxnreg).
const HOPPER_FEATURE: &str = "sm90a";

pub fn run(_: Args) -> Result<ExitCode, String> {
    let root = crate::repo_root();
    let tc = Toolchain::pinned().map_err(|e| e.to_string())?;
    // The builder installs the kernel toolchain without clippy (it needs
    // rust-src and llvm-tools only); add it here, once.
    crate::check(
        Command::new("rustup")
            .args(["component", "add", "clippy", "--toolchain"])
            .arg(tc.name()),
    )?;
    let clippy = || {
        let mut cmd = Command::new(tc.cargo());
        cmd.current_dir(&root)
            .env("RUSTUP_TOOLCHAIN", tc.name())
            .args(["clippy", "--release", "--target", "nvptx64-nvidia-cuda"])
            .args(["-Zbuild-std=core", "--target-dir"])
            .arg(root.join("target/clippy-nvptx"));
        cmd
    };
    // Every kernel crate by package name, in one invocation.
    let meta = cargo_metadata::MetadataCommand::new()
        .current_dir(&root)
        .no_deps()
        .exec()
        .map_err(|e| format!("cargo metadata: {e}"))?;
    // Every package whose normal dependencies include nvshmem-device: the
    // kernel crates and the libraries they use (tc-gemm-tiles), not the
    // host programs whose tests use it.
    let kernel_side: Vec<_> = meta
        .workspace_packages()
        .into_iter()
        .filter(|p| {
            p.dependencies.iter().any(|d| {
                d.name == "nvshmem-device" && d.kind == cargo_metadata::DependencyKind::Normal
            })
        })
        .collect();
    let mut all = clippy();
    for p in &kernel_side {
        all.args(["-p", p.name.as_str()]);
    }
    crate::check(all.args(["--", "-D", "warnings"]))?;
    // Then the Hopper-only code (feature `sm90a`) of the crates that have it.
    let mut hopper = clippy();
    let mut any = false;
    for p in kernel_side
        .iter()
        .filter(|p| p.features.contains_key(HOPPER_FEATURE))
    {
        hopper
            .args(["-p", p.name.as_str(), "--features"])
            .arg(format!("{}/{HOPPER_FEATURE}", p.name));
        any = true;
    }
    if any {
        crate::check(hopper.args(["--", "-D", "warnings"]))?;
    }
    Ok(ExitCode::SUCCESS)
}
