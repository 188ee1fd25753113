//! The public [`Builder`]: what to build, and how, before the pipeline runs.

use crate::error::{Error, Result};
use crate::manifest::Manifest;
use crate::toolchain::PINNED_TOOLCHAIN;
use crate::toolchain::settings::{self, ENV_VARS, Progress};
use nvshmem_types::install::Installation;
use nvshmem_types::{Arch, CudaMajor, Version};
use std::path::PathBuf;
use std::time::Duration;

/// How `ptxas` turns the PTX into the cubin.
///
/// Whole-program `ptxas` inlines every function call into its kernel. That
/// gives the fastest kernels for small call graphs, but its time grows faster
/// than the inlined size: NVSHMEM 3.8's transport code (IBGDA, GPUNetIO and
/// proxy paths, kept out of line in its bitcode) makes a kernel that calls many
/// operations hundreds of thousands of PTX lines once inlined (measured on 2
/// cores: one kernel calling every RMA function, 315 000 lines inlined, 3 min
/// of ptxas and 7.8 GB; the 3.8 coverage crate, 5.7 million, over 21 min).
/// It also gives a kernel the registers of everything it calls: 3.8's ring
/// example kernel takes 150 registers whole-program, 38 with 3.4.5.
///
/// Separate compilation (`ptxas -c`, then `nvlink`, as `nvcc -rdc` does)
/// compiles each function once (that crate: 42 s), at the price of calls
/// between functions and register counts that cover the whole call graph.
/// When some kernel reaches more than [`AUTO_SEPARATE_TRANSPORT_ABOVE_LINES`]
/// of NVSHMEM's transport functions (`nvshmemi_transfer_*` and the proxy,
/// IBGDA and GPUNetIO functions; 3.8's are large), they go in an object of
/// their own compiled at most 32 registers, as NVSHMEM compiles them into
/// `libnvshmem_device.a` so that calling them costs a kernel no occupancy:
/// the 3.8 ring kernel then takes 36 registers. Their spills (they have some
/// at 32 registers, in CUDA C++ too) are not in the kernels' figures, which
/// cover the kernels' own code. Small ones (3.4.5's) stay in the kernels'
/// object, where they cost fewer registers than as calls between objects.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DeviceLink {
    /// [`Separate`](Self::Separate) when `nvlink` is found and some kernel
    /// would exceed [`AUTO_SEPARATE_ABOVE_LINES`] with every call inlined, or
    /// reaches more than [`AUTO_SEPARATE_TRANSPORT_ABOVE_LINES`] of NVSHMEM's
    /// transport code (with NVSHMEM 3.8, any kernel that reaches it); else
    /// [`WholeProgram`](Self::WholeProgram).
    #[default]
    Auto,
    /// `ptxas` on the whole module: every call inlined.
    WholeProgram,
    /// `ptxas -c` on the module (large NVSHMEM transport functions on their
    /// own, at most 32 registers), then `nvlink`: every function compiled once.
    Separate,
}

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

impl DeviceLink {
    /// The name used in manifests, `NVSHMEM_RS_DEVICE_LINK` and the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceLink::Auto => "auto",
            DeviceLink::WholeProgram => "whole-program",
            DeviceLink::Separate => crate::manifest::SEPARATE_COMPILATION,
        }
    }
}

impl std::fmt::Display for DeviceLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for DeviceLink {
    type Err = String;

    /// `auto`, `whole-program` or `separate`.
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        [
            DeviceLink::Auto,
            DeviceLink::WholeProgram,
            DeviceLink::Separate,
        ]
        .into_iter()
        .find(|m| m.as_str() == s)
        .ok_or_else(|| format!("`{s}` is no device link mode: use auto, whole-program or separate"))
    }
}

/// Builds one kernel crate for one GPU architecture and NVSHMEM version.
///
/// Every setting left unset here falls back to its environment variable
/// ([`ENV_VARS`]), then to the builder's default; a setting made here wins
/// over the environment.
///
/// ```no_run
/// let out = nvshmem_builder::Builder::new("examples/ring/kernel")
///     .arch("sm_90")
///     .nvshmem_version("3.4.5".parse().unwrap())
///     .out_dir("ptx")
///     .build()?;
/// println!("{} kernels in {}", out.manifest.kernels.len(), out.ptx.display());
/// # Ok::<(), nvshmem_builder::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Builder {
    crate_dir: PathBuf,
    arch: Option<String>,
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
    /// A builder for the kernel crate in `crate_dir` (the folder with its `Cargo.toml`).
    /// Defaults: `sm_90`, NVSHMEM found by [`Installation::find`] (and
    /// downloaded into the per-user cache when it is nowhere).
    pub fn new(crate_dir: impl Into<PathBuf>) -> Self {
        Builder {
            crate_dir: crate_dir.into(),
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
    /// Unset: `NVSHMEM_RS_ARCH`, else `sm_90`.
    #[must_use]
    pub fn arch(mut self, arch: impl Into<String>) -> Self {
        self.arch = Some(arch.into());
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
        let (arch, arch_var) = self
            .arch
            .clone()
            .map(|a| (a, None))
            .or_else(|| settings::var("NVSHMEM_RS_ARCH").map(|v| (v, Some("NVSHMEM_RS_ARCH"))))
            .unwrap_or_else(|| ("sm_90".into(), None));
        let arch = arch.parse::<Arch>().map_err(|e| match arch_var {
            Some(name) => Error::InvalidSetting {
                name: name.into(),
                value: arch.clone(),
                expected: format!("a GPU architecture such as sm_90 ({e})"),
            },
            None => Error::InvalidArch { arch: arch.clone() },
        })?;
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
            (None, Some(v)) => v.parse().map_err(|e: String| Error::InvalidSetting {
                name: "NVSHMEM_RS_DEVICE_LINK".into(),
                value: v.clone(),
                expected: e,
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

    /// Runs [`build`](Self::build) for a `build.rs`: prints
    /// `cargo:rerun-if-env-changed` for every variable in [`ENV_VARS`] and
    /// `cargo:rerun-if-changed` for every source and tool, reports downloads,
    /// installs and the kernel crate's warnings as `cargo:warning`, and on
    /// error prints the message and exits with status 1 (no panic backtrace).
    pub fn build_from_build_script(self) -> BuildOutput {
        self.build_in_build_script(true)
    }

    /// [`Builder::build_from_build_script`]; `publish`: copy the bindings
    /// to `$OUT_DIR` too.
    pub(crate) fn build_in_build_script(mut self, publish: bool) -> BuildOutput {
        self.progress = Progress::BuildScript;
        for (name, _) in ENV_VARS {
            println!("cargo:rerun-if-env-changed={name}");
        }
        for p in [
            self.crate_dir.join("Cargo.toml"),
            self.crate_dir.join("src"),
        ] {
            println!("cargo:rerun-if-changed={}", p.display());
        }
        match self.build_and_publish(publish) {
            Ok(out) => {
                for s in &out.sources {
                    println!("cargo:rerun-if-changed={}", s.display());
                }
                out
            }
            Err(e) => {
                eprintln!("error: {e}");
                std::process::exit(1);
            }
        }
    }
}
