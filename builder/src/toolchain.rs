//! The Rust toolchain that builds kernel crates, and its LLVM tools.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A nightly Rust toolchain with `rust-src` and `llvm-tools`.
///
/// Found by running `rustc` in the kernel crate's folder with the outer build's
/// `RUSTC`/`RUSTUP_TOOLCHAIN` removed, so the kernel crate's own
/// `rust-toolchain.toml` decides. Its binaries are then called by full path.
#[derive(Clone, Debug)]
pub struct Toolchain {
    /// `rustc --print sysroot`.
    pub sysroot: PathBuf,
    /// `rustc -V`.
    pub rustc_version: String,
    /// The host triple, such as `x86_64-unknown-linux-gnu`.
    pub host: String,
    /// The LLVM version rustc was built with, such as `22.1.4`.
    pub llvm_version: String,
}

impl Toolchain {
    /// Detects the toolchain that `rustc` resolves to in `dir`, and checks it.
    ///
    /// ```no_run
    /// let tc = nvshmem_builder::toolchain::Toolchain::detect(".".as_ref())?;
    /// println!("{} with LLVM {}", tc.rustc_version, tc.llvm_version);
    /// # Ok::<(), nvshmem_builder::Error>(())
    /// ```
    pub fn detect(dir: &Path) -> Result<Self> {
        let run = |args: &[&str]| -> Result<String> {
            let mut cmd = Command::new("rustc");
            cmd.args(args)
                .current_dir(dir)
                .env_remove("RUSTC")
                .env_remove("RUSTUP_TOOLCHAIN");
            let out = cmd.output().map_err(|source| Error::ToolNotRunnable {
                program: "rustc".into(),
                source,
            })?;
            if !out.status.success() {
                return Err(Error::ToolFailed {
                    tool: "rustc".into(),
                    command: format!("rustc {}", args.join(" ")),
                    status: out.status.to_string(),
                    stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
                });
            }
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
        };
        let verbose = run(&["-vV"])?;
        let field = |name: &str| {
            verbose
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| v.trim().to_string())
                .unwrap_or_default()
        };
        let rustc_version = verbose.lines().next().unwrap_or_default().to_string();
        if !field("release:").contains("nightly") && !field("release:").contains("dev") {
            return Err(Error::NotNightly {
                found: rustc_version,
            });
        }
        let tc = Toolchain {
            sysroot: PathBuf::from(run(&["--print", "sysroot"])?),
            host: field("host:"),
            llvm_version: field("LLVM version:"),
            rustc_version,
        };
        tc.check()?;
        Ok(tc)
    }

    /// Checks that the components the pipeline needs are installed:
    /// `rust-src` (for `-Zbuild-std=core`) and `llvm-tools`.
    ///
    /// ```
    /// use nvshmem_builder::{Error, toolchain::Toolchain};
    /// let bare = Toolchain {
    ///     sysroot: "/nonexistent".into(),
    ///     rustc_version: "rustc 1.97.0-nightly".into(),
    ///     host: "x86_64-unknown-linux-gnu".into(),
    ///     llvm_version: "22.1.4".into(),
    /// };
    /// assert!(matches!(bare.check(), Err(Error::RustSrcMissing { .. })));
    /// ```
    pub fn check(&self) -> Result<()> {
        if !self
            .sysroot
            .join("lib/rustlib/src/rust/library/core/Cargo.toml")
            .exists()
        {
            return Err(Error::RustSrcMissing {
                toolchain: self.name(),
            });
        }
        for tool in ["llvm-link", "opt", "llc", "llvm-dis", "llvm-ar"] {
            self.llvm_tool(tool)?;
        }
        Ok(())
    }

    /// The toolchain's name as rustup knows it (the sysroot's folder name).
    pub fn name(&self) -> String {
        self.sysroot
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// `cargo` of this toolchain.
    pub fn cargo(&self) -> PathBuf {
        self.sysroot.join("bin/cargo")
    }

    /// `rustc` of this toolchain.
    pub fn rustc(&self) -> PathBuf {
        self.sysroot.join("bin/rustc")
    }

    /// The major version of the LLVM the tools belong to.
    pub fn llvm_major(&self) -> u32 {
        self.llvm_version
            .split('.')
            .next()
            .and_then(|m| m.parse().ok())
            .unwrap_or(0)
    }

    /// An LLVM tool from the `llvm-tools` component (`llvm-link`, `opt`, `llc`, ...).
    ///
    /// ```no_run
    /// # let tc = nvshmem_builder::toolchain::Toolchain::detect(".".as_ref())?;
    /// let llc = tc.llvm_tool("llc")?;
    /// # Ok::<(), nvshmem_builder::Error>(())
    /// ```
    pub fn llvm_tool(&self, name: &str) -> Result<PathBuf> {
        let dir = self.llvm_bin_dir();
        let path = dir.join(name);
        if path.exists() {
            Ok(path)
        } else {
            Err(Error::LlvmToolsMissing {
                toolchain: self.name(),
                dir,
                tool: name.into(),
            })
        }
    }

    /// The folder of the `llvm-tools` component.
    pub fn llvm_bin_dir(&self) -> PathBuf {
        self.sysroot
            .join("lib/rustlib")
            .join(&self.host)
            .join("bin")
    }
}
