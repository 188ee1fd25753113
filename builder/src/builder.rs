//! The public [`Builder`]: what to build, and how, before the pipeline runs.

use crate::error::{Error, Result};
use crate::manifest::Manifest;
use crate::toolchain::PINNED_TOOLCHAIN;
use crate::toolchain::settings::{self, ENV_VARS, Progress};
use nvshmem_types::install::Installation;
use nvshmem_types::{Arch, CudaMajor, DeviceLink, Version};
use std::path::PathBuf;
use std::time::Duration;

/// The inlined size (PTX lines of the largest kernel with every call inlined)
/// above which [`DeviceLink::Auto`] compiles separately. Measured with
/// whole-program ptxas on 2 cores: 16 000 lines took 2.4 s, 56 000 (the
/// collectives' GPU test crate, largest kernel) 250-400 s for the crate,
/// 87 000 (NVSHMEM 3.8 runtime test kernels) 32-92 s, 315 000 three minutes.
pub const AUTO_SEPARATE_ABOVE_LINES: usize = 50_000;

/// The PTX lines of NVSHMEM transport functions that one kernel may reach
/// before [`DeviceLink::Auto`] compiles separately and separate compilation
/// puts them in an object of their own at 32 registers, to keep them out of
/// the kernels' registers. NVSHMEM 3.4.5's are small (the most one of this
/// project's kernels reaches: 622 lines), 3.8's large (one put with signal
/// reaches 16 000).
pub const AUTO_SEPARATE_TRANSPORT_ABOVE_LINES: usize = 2_000;

/// Builds one kernel crate for one GPU architecture and NVSHMEM version.
///
/// Every setting left unset here falls back to its environment variable
/// ([`ENV_VARS`]), then to the builder's default; a setting made here wins
/// over the environment.
///
/// ```no_run
/// let out = nvshmem_builder::Builder::new("examples/ring/kernel")
///     .arch(nvshmem_builder::Arch::DEFAULT)
///     .nvshmem_version("3.4.5".parse().unwrap())
///     .out_dir("ptx")
///     .build()?;
/// println!("{} kernels in {}", out.manifest.kernels.len(), out.ptx.display());
/// # Ok::<(), nvshmem_builder::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Builder {
    crate_dir: PathBuf,
    arch: Option<Arch>,
    version: Option<Version>,
    cuda: Option<CudaMajor>,
    home: Option<PathBuf>,
    out_dir: Option<PathBuf>,
    target_dir: Option<PathBuf>,
    ptx_isa: Option<u32>,
    features: Vec<String>,
    ptx_only: Option<bool>,
    llvm_tools_dir: Option<PathBuf>,
    device_link: Option<DeviceLink>,
    toolchain: Option<String>,
    offline: Option<bool>,
    progress: Progress,
}

/// What [`Builder::check`] found.
#[derive(Clone, Debug)]
pub struct CheckOutput {
    /// Every kernel, and whether it needs a collective launch.
    pub kernels: std::collections::BTreeMap<String, bool>,
    /// The NVSHMEM installation linked against.
    pub nvshmem: Installation,
    /// Wall time of each step, in order.
    pub timings: Vec<(&'static str, Duration)>,
}

/// What a build produced.
#[derive(Clone, Debug)]
pub struct BuildOutput {
    /// The PTX file.
    pub ptx: PathBuf,
    /// The cubin; `None` only when PTX-only output was asked for
    /// ([`Builder::ptx_only`], `NVSHMEM_RS_PTX_ONLY=1`).
    pub cubin: Option<PathBuf>,
    /// The manifest file (JSON).
    pub manifest_path: PathBuf,
    /// The C header for CUDA C++ hosts.
    pub header: PathBuf,
    /// The typed Rust bindings (`<crate>.rs`): a launch function per kernel
    /// with the kernel's parameter types. [`Builder::build_from_build_script`]
    /// also copies them to `$OUT_DIR/nvshmem-kernels/<crate, - as _>.rs`, where
    /// `nvshmem_host::include_kernels!` finds them.
    pub bindings: PathBuf,
    /// `include/` with `cuda.h`, which the header's launch helpers include:
    /// found, or fetched into the per-user cache (the `nvidia-cuda-runtime`
    /// wheel, 2 MB). `None` when it is nowhere and cannot be fetched
    /// (offline; the build warns).
    pub cuda_include: Option<PathBuf>,
    /// The manifest's contents.
    pub manifest: Manifest,
    /// The NVSHMEM installation linked against.
    pub nvshmem: Installation,
    /// Files the build depended on (for `cargo:rerun-if-changed`): the kernel
    /// crate's sources and its path dependencies', NVSHMEM's bitcode, and the
    /// tools that made the outputs.
    pub sources: Vec<PathBuf>,
    /// Wall time of each step, in order.
    pub timings: Vec<(&'static str, Duration)>,
}

/// The settings of one build, after the environment and the defaults: what
/// the pipeline reads (it never reads a [`Builder`]).
#[derive(Clone, Debug)]
pub(crate) struct Resolved {
    pub crate_dir: PathBuf,
    pub out_dir: Option<PathBuf>,
    pub target_dir: Option<PathBuf>,
    pub ptx_isa: Option<u32>,
    pub features: Vec<String>,
    pub llvm_tools_dir: Option<PathBuf>,
    pub progress: Progress,
    pub arch: Arch,
    pub version: Option<Version>,
    pub cuda: Option<CudaMajor>,
    pub home: Option<PathBuf>,
    pub device_link: DeviceLink,
    pub ptx_only: bool,
    pub offline: bool,
    pub toolchain: String,
}

impl Builder {
    /// A builder for the kernel crate in `crate_dir` (the folder with its
    /// `Cargo.toml`, or that `Cargo.toml` itself).
    /// Defaults: [`Arch::DEFAULT`], NVSHMEM found by [`Installation::find`] (and
    /// downloaded into the per-user cache when it is nowhere).
    pub fn new(crate_dir: impl Into<PathBuf>) -> Self {
        let mut crate_dir: PathBuf = crate_dir.into();
        if crate_dir.file_name().is_some_and(|n| n == "Cargo.toml") && crate_dir.is_file() {
            crate_dir.pop();
            if crate_dir.as_os_str().is_empty() {
                crate_dir = ".".into();
            }
        }
        Builder {
            crate_dir,
            arch: None,
            version: None,
            cuda: None,
            home: None,
            out_dir: None,
            target_dir: None,
            ptx_isa: None,
            features: Vec::new(),
            ptx_only: None,
            llvm_tools_dir: None,
            device_link: None,
            toolchain: None,
            offline: None,
            progress: Progress::Stderr,
        }
    }

    /// The GPU architecture, such as `sm_90` (H100/H200) or `sm_80` (A100).
    /// Unset: `NVSHMEM_RS_ARCH`, else [`Arch::DEFAULT`].
    #[must_use]
    pub fn arch(mut self, arch: Arch) -> Self {
        self.arch = Some(arch);
        self
    }

    /// Link against this NVSHMEM version. Unset: `NVSHMEM_RS_NVSHMEM_VERSION`,
    /// else the version of the installation found (downloading 3.4.5 when there is none).
    #[must_use]
    pub fn nvshmem_version(mut self, version: Version) -> Self {
        self.version = Some(version);
        self
    }

    /// The CUDA major to build for: which NVSHMEM wheel (`-cu12`, `-cu13`),
    /// `ptxas` and PTX ISA levels. Unset: `NVSHMEM_RS_CUDA_MAJOR`, else the
    /// installation's (python3's package), else CUDA 13.
    #[must_use]
    pub fn cuda_major(mut self, cuda: CudaMajor) -> Self {
        self.cuda = Some(cuda);
        self
    }

    /// Link against the NVSHMEM in this folder. Unset: `NVSHMEM_HOME`, else
    /// the search of [`Installation::find`].
    #[must_use]
    pub fn nvshmem_home(mut self, dir: impl Into<PathBuf>) -> Self {
        self.home = Some(dir.into());
        self
    }

    /// Where the outputs go; `<dir>/nvshmem-<version>/<arch>/` is created.
    /// Default: `$OUT_DIR/ptx` in a build script, else `<target dir>/ptx`.
    #[must_use]
    pub fn out_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.out_dir = Some(dir.into());
        self
    }

    /// The cargo target folder for the nvptx64 build. Default: `nvshmem-kernels`
    /// inside the outer build's target folder, else `<crate>/target`. Sharing
    /// one between kernel crates shares the build of `core`. A relative path
    /// is relative to the current folder.
    #[must_use]
    pub fn target_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.target_dir = Some(dir.into());
        self
    }

    /// Force the PTX ISA version, as `major * 10 + minor` (`83` for PTX 8.3).
    /// Default: the highest of what NVSHMEM's bitcode asks for and the arch's minimum.
    #[must_use]
    pub fn ptx_isa(mut self, isa: u32) -> Self {
        self.ptx_isa = Some(isa);
        self
    }

    /// Write the PTX only: no `ptxas`, no cubin, no register figures (a
    /// host then JIT-compiles the PTX). Announced with a warning. Unset:
    /// `NVSHMEM_RS_PTX_ONLY`, else `false`: `ptxas` is found (or
    /// downloaded) and a build without it fails.
    #[must_use]
    pub fn ptx_only(mut self, yes: bool) -> Self {
        self.ptx_only = Some(yes);
        self
    }

    /// How ptxas makes the cubin. Unset: `NVSHMEM_RS_DEVICE_LINK`, else [`DeviceLink::Auto`].
    #[must_use]
    pub fn device_link(mut self, mode: DeviceLink) -> Self {
        self.device_link = Some(mode);
        self
    }

    /// Use LLVM tools from this folder instead of the toolchain's `llvm-tools`.
    #[must_use]
    pub fn llvm_tools_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.llvm_tools_dir = Some(dir.into());
        self
    }

    /// The Rust toolchain that compiles the kernel crate: a rustup toolchain
    /// name, or the path of a sysroot. Unset: `NVSHMEM_RS_TOOLCHAIN`, else
    /// [`PINNED_TOOLCHAIN`]. A rustup toolchain that is missing is installed.
    #[must_use]
    pub fn toolchain(mut self, name: impl Into<String>) -> Self {
        self.toolchain = Some(name.into());
        self
    }

    /// Never download or install anything (toolchain, wheels): fail with the
    /// command that would. Unset: `NVSHMEM_RS_OFFLINE`, else `false`.
    #[must_use]
    pub fn offline(mut self, yes: bool) -> Self {
        self.offline = Some(yes);
        self
    }

    /// Enable a cargo feature of the kernel crate.
    #[must_use]
    pub fn feature(mut self, feature: impl Into<String>) -> Self {
        self.features.push(feature.into());
        self
    }

    /// `require_ptxas(false)` is [`ptx_only(true)`](Self::ptx_only). A
    /// cubin is always made otherwise: there is no silent PTX-only output.
    #[deprecated(note = "ptxas is required by default; use `ptx_only(true)` for PTX alone")]
    pub fn require_ptxas(self, yes: bool) -> Self {
        self.ptx_only(!yes)
    }

    /// This builder's settings, resolved: the builder's own, else the environment's, else the defaults.
    pub(crate) fn resolve(&self) -> Result<Resolved> {
        let arch = match (self.arch, settings::var("NVSHMEM_RS_ARCH")) {
            (Some(a), _) => a,
            (None, Some(v)) => v.parse::<Arch>().map_err(|e| Error::InvalidSetting {
                name: "NVSHMEM_RS_ARCH".into(),
                value: v.clone(),
                expected: format!("a GPU architecture such as {} ({e})", Arch::DEFAULT),
            })?,
            (None, None) => Arch::DEFAULT,
        };
        let version = match (self.version, settings::var("NVSHMEM_RS_NVSHMEM_VERSION")) {
            (Some(v), _) => Some(v),
            (None, Some(v)) => Some(v.parse::<Version>().map_err(|e| Error::InvalidSetting {
                name: "NVSHMEM_RS_NVSHMEM_VERSION".into(),
                value: v.clone(),
                expected: format!("{e}; supported: {}", nvshmem_types::SupportedVersions),
            })?),
            (None, None) => None,
        };
        if let Some(v) = version
            && v.info().is_none()
        {
            return Err(Error::UnsupportedVersion { version: v });
        }
        let cuda = match (self.cuda, settings::var("NVSHMEM_RS_CUDA_MAJOR")) {
            (Some(c), _) => Some(c),
            (None, Some(v)) => Some(v.parse::<CudaMajor>().map_err(|e| Error::InvalidSetting {
                name: "NVSHMEM_RS_CUDA_MAJOR".into(),
                value: v.clone(),
                expected: e.to_string(),
            })?),
            (None, None) => None,
        };
        let device_link = match (self.device_link, settings::var("NVSHMEM_RS_DEVICE_LINK")) {
            (Some(m), _) => m,
            (None, Some(v)) => v.parse().map_err(|e| Error::InvalidSetting {
                name: "NVSHMEM_RS_DEVICE_LINK".into(),
                value: v.clone(),
                expected: format!("{e}"),
            })?,
            (None, None) => DeviceLink::Auto,
        };
        let ptx_only = match self.ptx_only {
            Some(b) => b,
            None => settings::flag("NVSHMEM_RS_PTX_ONLY")?,
        };
        let offline = match self.offline {
            Some(b) => b,
            None => settings::offline()?,
        };
        let toolchain = self
            .toolchain
            .clone()
            .or_else(|| settings::var("NVSHMEM_RS_TOOLCHAIN"))
            .unwrap_or_else(|| PINNED_TOOLCHAIN.into());
        Ok(Resolved {
            crate_dir: self.crate_dir.clone(),
            out_dir: self.out_dir.clone(),
            target_dir: self.target_dir.clone(),
            ptx_isa: self.ptx_isa,
            features: self.features.clone(),
            llvm_tools_dir: self.llvm_tools_dir.clone(),
            progress: self.progress,
            arch,
            version,
            cuda,
            home: self
                .home
                .clone()
                .or_else(|| settings::var_os("NVSHMEM_HOME").map(PathBuf::from)),
            device_link,
            ptx_only,
            offline,
            toolchain,
        })
    }

    /// Runs [`build`](Self::build) for a `build.rs`. When it succeeds:
    /// prints `cargo:rerun-if-env-changed` for every variable in
    /// [`ENV_VARS`], `cargo:rerun-if-changed` for every source and tool, and
    /// the kernel crate's warnings, and the NVSHMEM chosen when none was asked
    /// for (with why), as `cargo:warning`. When it fails: the
    /// warnings and the error on stderr, each once (no `rerun-if` lines
    /// before it: cargo runs a failed build script again anyway), and exits
    /// with status 1 (no panic backtrace). Downloads and installs are
    /// reported on stderr (`cargo build -vv` shows them as they happen).
    pub fn build_from_build_script(self) -> BuildOutput {
        self.build_in_build_script(true)
    }

    /// [`Builder::build_from_build_script`]; `publish`: copy the bindings
    /// to `$OUT_DIR` too.
    pub(crate) fn build_in_build_script(mut self, publish: bool) -> BuildOutput {
        self.progress = Progress::BuildScript;
        match self.build_and_publish(publish) {
            Ok(out) => {
                for (name, _) in ENV_VARS {
                    println!("cargo:rerun-if-env-changed={name}");
                }
                let roots = [
                    self.crate_dir.join("Cargo.toml"),
                    self.crate_dir.join("src"),
                ];
                for s in roots.iter().chain(&out.sources) {
                    println!("cargo:rerun-if-changed={}", s.display());
                }
                settings::flush_warnings(true);
                out
            }
            Err(e) => {
                settings::flush_warnings(false);
                eprintln!("error: {e}");
                std::process::exit(1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crates_cargo_toml_names_its_folder() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        assert_eq!(Builder::new(dir.join("Cargo.toml")).crate_dir, dir);
        assert_eq!(Builder::new(dir).crate_dir, dir);
        // A path that is not a file is left for the build to explain.
        let missing = dir.join("missing/Cargo.toml");
        assert_eq!(Builder::new(&missing).crate_dir, missing);
    }
}
