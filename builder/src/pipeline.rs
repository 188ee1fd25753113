//! The build pipeline: kernel crate → bitcode → linked with NVSHMEM → PTX → cubin.

use crate::error::{Error, Result, io_err};
use crate::manifest::{KernelInfo, MANIFEST_FORMAT, Manifest, ParamInfo};
use crate::toolchain::Toolchain;
use crate::{header, ir, signature};
use nvshmem_types::install::{Installation, Query};
use nvshmem_types::{Arch, Version};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TARGET: &str = "nvptx64-nvidia-cuda";
/// The state globals `nvshmemx_cumodule_init` looks up: they must stay visible.
const STATE_GLOBALS: [&str; 2] = ["nvshmemi_device_state_d", "nvshmemi_device_lib_version_d"];
/// Functions ptxas resolves itself.
const PTXAS_BUILTINS: [&str; 4] = ["vprintf", "__assertfail", "malloc", "free"];

/// How `ptxas` turns the PTX into the cubin.
///
/// Whole-program `ptxas` inlines every function call into its kernel. That
/// gives the fastest kernels for small call graphs, but its time grows faster
/// than the inlined size: NVSHMEM 3.8's transport code (IBGDA, GPUNetIO and
/// proxy paths, kept out of line in its bitcode) makes a kernel that calls many
/// operations hundreds of thousands of PTX lines once inlined (measured on 2
/// cores: one kernel calling every RMA function, 315 000 lines inlined, 3 min
/// of ptxas and 7.8 GB; the 3.8 coverage crate, 5.7 million, over 21 min).
/// Separate compilation (`ptxas -c`, then `nvlink`, as `nvcc -rdc` does)
/// compiles each function once (that crate: 42 s), at the price of calls
/// between functions and register counts that cover the whole call graph.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DeviceLink {
    /// [`Separate`](Self::Separate) when some kernel would exceed
    /// [`AUTO_SEPARATE_ABOVE_LINES`] with every call inlined and `nvlink` is
    /// found, else [`WholeProgram`](Self::WholeProgram).
    #[default]
    Auto,
    /// `ptxas` on the whole module: every call inlined.
    WholeProgram,
    /// `ptxas -c` on the module, then `nvlink`: every function compiled once.
    Separate,
}

/// The inlined size (PTX lines of the largest kernel with every call inlined)
/// above which [`DeviceLink::Auto`] compiles separately. Measured with
/// whole-program ptxas on 2 cores: 16 000 lines took 2.4 s, 56 000 (the
/// collectives' GPU test crate, largest kernel) 250-400 s for the crate,
/// 87 000 (NVSHMEM 3.8 runtime test kernels) 32-92 s, 315 000 three minutes.
pub const AUTO_SEPARATE_ABOVE_LINES: usize = 50_000;

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
    arch: String,
    query: Query,
    out_dir: Option<PathBuf>,
    target_dir: Option<PathBuf>,
    ptx_isa: Option<u32>,
    features: Vec<String>,
    require_ptxas: bool,
    llvm_tools_dir: Option<PathBuf>,
    device_link: DeviceLink,
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

/// Step names and their wall times, in order.
struct Laps(Vec<(&'static str, Duration)>, Instant);

impl Laps {
    fn new() -> Self {
        Laps(Vec::new(), Instant::now())
    }

    /// Records the time since the last lap under `name`.
    fn lap(&mut self, name: &'static str) {
        self.0.push((name, self.1.elapsed()));
        self.1 = Instant::now();
    }
}

/// A kernel crate compiled to nvptx64 rlibs, with its work folder locked.
struct Compiled {
    nv: Installation,
    bitcode: PathBuf,
    tc: Toolchain,
    tools: Tools,
    meta: CrateMeta,
    target_dir: PathBuf,
    work: PathBuf,
    _lock: std::fs::File,
    features: Vec<String>,
    rlibs: Vec<PathBuf>,
}

impl Compiled {
    /// `llvm-link`s the kernel crate's bitcode with, `--only-needed`, its
    /// dependencies' and NVSHMEM's; returns the linked module as text.
    fn link(&self, timings: &mut Laps) -> Result<String> {
        let (tools, work) = (&self.tools, &self.work);
        let (kernel_objs, dep_objs) = extract_bitcode(tools, &self.rlibs, &work.join("objects"))?;
        let kernel_bc = work.join("kernel.bc");
        tools.run("llvm-link", &tools.llvm_link, |c| {
            c.args(&kernel_objs).arg("-o").arg(&kernel_bc);
        })?;
        let deps_bc = link_deps_cached(tools, &dep_objs, &work.join("deps.bc"))?;
        let linked_bc = work.join("linked.bc");
        tools.run("llvm-link", &tools.llvm_link, |c| {
            c.arg(&kernel_bc)
                .arg("--only-needed")
                .arg(&deps_bc)
                .arg(&self.bitcode)
                .arg("-o")
                .arg(&linked_bc);
        })?;
        let linked_ll = work.join("linked.ll");
        tools.run("llvm-dis", &tools.llvm_dis, |c| {
            c.arg(&linked_bc).arg("-o").arg(&linked_ll);
        })?;
        let ll = std::fs::read_to_string(&linked_ll).map_err(io_err(&linked_ll))?;
        let ll = self.link_libdevice(ll, &linked_bc)?;
        timings.lap("llvm-link");
        Ok(ll)
    }

    /// When the module calls libdevice (`__nv_*`), links it in
    /// `--only-needed` and returns the new module's text.
    fn link_libdevice(&self, ll: String, linked_bc: &Path) -> Result<String> {
        let needed = crate::libdevice::needed(&ll);
        if needed.is_empty() {
            return Ok(ll);
        }
        let crate_dir = self.meta.manifest_path.parent().unwrap_or(Path::new("."));
        let libdevice = crate::libdevice::find(crate_dir)
            .ok_or(Error::LibdeviceNotFound { symbols: needed })?;
        let (tools, work) = (&self.tools, &self.work);
        let with_bc = work.join("linked-libdevice.bc");
        tools.run("llvm-link", &tools.llvm_link, |c| {
            c.arg(linked_bc)
                .arg("--only-needed")
                .arg(&libdevice)
                .arg("-o")
                .arg(&with_bc);
        })?;
        let with_ll = work.join("linked-libdevice.ll");
        tools.run("llvm-dis", &tools.llvm_dis, |c| {
            c.arg(&with_bc).arg("-o").arg(&with_ll);
        })?;
        std::fs::read_to_string(&with_ll).map_err(io_err(&with_ll))
    }
}

/// What a build produced.
#[derive(Clone, Debug)]
pub struct BuildOutput {
    /// The PTX file.
    pub ptx: PathBuf,
    /// The cubin, when `ptxas` was found.
    pub cubin: Option<PathBuf>,
    /// The manifest file (JSON).
    pub manifest_path: PathBuf,
    /// The C header for CUDA C++ hosts.
    pub header: PathBuf,
    /// The manifest's contents.
    pub manifest: Manifest,
    /// The NVSHMEM installation linked against.
    pub nvshmem: Installation,
    /// Source files the build depended on (for `cargo:rerun-if-changed`).
    pub sources: Vec<PathBuf>,
    /// Wall time of each step, in order.
    pub timings: Vec<(&'static str, Duration)>,
}

impl Builder {
    /// A builder for the kernel crate in `crate_dir` (the folder with its `Cargo.toml`).
    /// Defaults: `sm_90`, NVSHMEM found by [`Installation::find`] from that folder.
    pub fn new(crate_dir: impl Into<PathBuf>) -> Self {
        Builder {
            crate_dir: crate_dir.into(),
            arch: "sm_90".into(),
            query: Query::default(),
            out_dir: None,
            target_dir: None,
            ptx_isa: None,
            features: Vec::new(),
            require_ptxas: false,
            llvm_tools_dir: None,
            device_link: DeviceLink::Auto,
        }
    }

    /// The GPU architecture, such as `sm_90` (H100/H200) or `sm_80` (A100).
    pub fn arch(mut self, arch: impl Into<String>) -> Self {
        self.arch = arch.into();
        self
    }

    /// Link against this NVSHMEM version (it must be installed where [`Installation::find`] looks).
    pub fn nvshmem_version(mut self, version: Version) -> Self {
        self.query = self.query.version(version);
        self
    }

    /// Link against the NVSHMEM in this folder (overrides `NVSHMEM_HOME`).
    pub fn nvshmem_home(mut self, dir: impl Into<PathBuf>) -> Self {
        self.query = self.query.home(dir);
        self
    }

    /// Where the outputs go; `<dir>/nvshmem-<version>/<arch>/` is created.
    /// Default: `$OUT_DIR/ptx` in a build script, else `<target dir>/ptx`.
    pub fn out_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.out_dir = Some(dir.into());
        self
    }

    /// The cargo target folder for the nvptx64 build. Default: `nvshmem-kernels`
    /// inside the outer build's target folder, else `<crate>/target`. Sharing
    /// one between kernel crates shares the build of `core`.
    pub fn target_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.target_dir = Some(dir.into());
        self
    }

    /// Force the PTX ISA version, as `major * 10 + minor` (`83` for PTX 8.3).
    /// Default: the highest of what NVSHMEM's bitcode asks for and the arch's minimum.
    pub fn ptx_isa(mut self, isa: u32) -> Self {
        self.ptx_isa = Some(isa);
        self
    }

    /// Enable a cargo feature of the kernel crate.
    pub fn feature(mut self, feature: impl Into<String>) -> Self {
        self.features.push(feature.into());
        self
    }

    /// Fail when `ptxas` is not found, instead of skipping the cubin.
    pub fn require_ptxas(mut self, yes: bool) -> Self {
        self.require_ptxas = yes;
        self
    }

    /// How ptxas makes the cubin (default [`DeviceLink::Auto`]).
    pub fn device_link(mut self, mode: DeviceLink) -> Self {
        self.device_link = mode;
        self
    }

    /// Use LLVM tools from this folder instead of the toolchain's `llvm-tools`.
    pub fn llvm_tools_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.llvm_tools_dir = Some(dir.into());
        self
    }

    /// Runs [`build`](Self::build) for a `build.rs`: prints `cargo:rerun-if-changed`
    /// for every source, and on error prints the message and exits with status 1
    /// (no panic backtrace).
    pub fn build_from_build_script(self) -> BuildOutput {
        println!("cargo:rerun-if-env-changed=NVSHMEM_HOME");
        println!(
            "cargo:rerun-if-changed={}",
            self.crate_dir.join("Cargo.toml").display()
        );
        println!(
            "cargo:rerun-if-changed={}",
            self.crate_dir.join("src").display()
        );
        match self.build() {
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

    /// Steps every command shares: checks, then `cargo build` of the kernel
    /// crate for nvptx64, holding the work folder's lock.
    fn compile(&self, timings: &mut Laps) -> Result<Compiled> {
        let crate_dir = &self.crate_dir;
        if !crate_dir.join("Cargo.toml").is_file() {
            return Err(Error::KernelCrateNotFound {
                path: crate_dir.clone(),
            });
        }
        let arch = self.arch.as_str();
        let parsed: Arch = arch
            .parse()
            .map_err(|_| Error::InvalidArch { arch: arch.into() })?;
        if let Some(version) = self.query.wanted()
            && version.info().is_none()
        {
            return Err(Error::UnsupportedVersion { version });
        }
        let nv = Installation::find(&self.query.clone().project_dir(crate_dir))?;
        let bitcode = nv.device_bitcode(parsed)?;
        let tc = Toolchain::detect(crate_dir)?;
        let tools = Tools::new(&tc, self.llvm_tools_dir.as_deref())?;
        check_producer(&bitcode, &tools)?;
        timings.lap("checks");

        let meta = CrateMeta::read(&tc, crate_dir)?;
        let target_dir = self
            .target_dir
            .clone()
            .unwrap_or_else(|| default_target_dir(crate_dir));
        let work = target_dir
            .join("nvshmem-link")
            .join(&meta.name)
            .join(format!("nvshmem-{}", nv.version))
            .join(arch);
        std::fs::create_dir_all(&work).map_err(io_err(&work))?;
        // Concurrent builds of the same crate, version and arch (two build
        // scripts, or tests in parallel) share these files: take turns.
        let lock_path = work.join(".lock");
        let lock = std::fs::File::create(&lock_path).map_err(io_err(&lock_path))?;
        lock.lock().map_err(io_err(&lock_path))?;

        let mut features = self.features.clone();
        if meta.depends_on_device && nv.version >= Version::new(3, 8, 0) {
            features.push("nvshmem-device/nvshmem-3-8".into());
        }
        let rlibs = cargo_build(&tc, crate_dir, &target_dir, &meta, &features)?;
        timings.lap("cargo build (nvptx64)");
        Ok(Compiled {
            nv,
            bitcode,
            tc,
            tools,
            meta,
            target_dir,
            work,
            _lock: lock,
            features,
            rlibs,
        })
    }

    /// Checks the kernel crate without generating code: it compiles for
    /// nvptx64, has kernels, and every function it reaches links against
    /// NVSHMEM's bitcode (nothing unresolved). The fast part of
    /// [`build`](Self::build) (no `opt`, `llc` or `ptxas`), like `cargo check`:
    /// for crates whose full build would be slow, such as ones that call
    /// hundreds of NVSHMEM collectives.
    ///
    /// ```no_run
    /// let checked = nvshmem_builder::Builder::new("kernels").check()?;
    /// println!("{} kernels link against NVSHMEM {}", checked.kernels.len(), checked.nvshmem.version);
    /// # Ok::<(), nvshmem_builder::Error>(())
    /// ```
    pub fn check(&self) -> Result<CheckOutput> {
        let mut timings = Laps::new();
        let c = self.compile(&mut timings)?;
        let ll = c.link(&mut timings)?;
        let funcs = ir::functions(&ll);
        let kernels = ir::collective_kernels(&funcs);
        if kernels.is_empty() {
            return Err(Error::NoKernels {
                crate_name: c.meta.name.clone(),
            });
        }
        // NVVM reflection is resolved by `opt`, which `check` does not run.
        let reflect = [crate::libdevice::REFLECT_ALIAS, "__nvvm_reflect"];
        let unresolved: Vec<String> = ir::declared_functions(&ll)
            .into_iter()
            .filter(|f| !f.starts_with("llvm.") && !PTXAS_BUILTINS.contains(&f.as_str()))
            .filter(|f| !reflect.contains(&f.as_str()))
            .collect();
        if !unresolved.is_empty() {
            return Err(Error::UnresolvedExterns {
                symbols: unresolved,
                version: c.nv.version,
            });
        }
        Ok(CheckOutput {
            kernels,
            nvshmem: c.nv,
            timings: timings.0,
        })
    }

    /// Builds the kernel crate. See the crate docs for the steps.
    pub fn build(&self) -> Result<BuildOutput> {
        let mut timings = Laps::new();
        let c = self.compile(&mut timings)?;
        let Compiled {
            nv,
            bitcode,
            tc,
            tools,
            meta,
            target_dir,
            work,
            features,
            rlibs,
            ..
        } = &c;
        let arch = self.arch.as_str();
        let sm = arch
            .parse::<Arch>()
            .map_err(|_| Error::InvalidArch { arch: arch.into() })?
            .number();

        // Everything below is a pure function of these inputs: when none
        // changed since the last build, reuse its outputs instead of re-running
        // link, opt, llc and ptxas (most of an incremental build's time).
        let out_dir = self
            .out_dir
            .clone()
            .unwrap_or_else(|| {
                std::env::var_os("OUT_DIR")
                    .map(|d| PathBuf::from(d).join("ptx"))
                    .unwrap_or_else(|| target_dir.join("ptx"))
            })
            .join(format!("nvshmem-{}", nv.version))
            .join(arch);
        let ptxas = find_ptxas();
        let mut key =
            self.inputs_key(rlibs, bitcode, tools, ptxas.as_deref(), features, &out_dir)?;
        key += &format!("max-threads {:?}\n", meta.max_threads);
        // One key per output folder: builds of the same crate into two
        // folders (the root build and the builder tests) share the work
        // folder, and one shared key would make each undo the other's reuse.
        let key_path = work.join(format!("inputs-{:016x}.key", stable_hash(&out_dir)));
        if let Some(out) = reuse_outputs(&key_path, &key, &out_dir, &meta.name, nv) {
            timings.lap("reused (inputs unchanged)");
            return Ok(BuildOutput {
                sources: dep_info_sources(target_dir, meta, tc),
                timings: timings.0,
                ..out
            });
        }
        // A failure below must not leave an old key that vouches for new inputs.
        let _ = std::fs::remove_file(&key_path);

        let ll = c.link(&mut timings)?;
        let ll =
            crate::shared_memory::lower(&ll).map_err(|reason| Error::SharedMemory { reason })?;
        let ll = crate::libdevice::unhide_reflect(&ll);

        let funcs = ir::functions(&ll);
        let collective = ir::collective_kernels(&funcs);
        if collective.is_empty() {
            return Err(Error::NoKernels {
                crate_name: meta.name.clone(),
            });
        }
        let ptx_isa = self
            .ptx_isa
            .unwrap_or_else(|| ir::max_ptx_feature(&ll).unwrap_or(0).max(min_ptx_isa(sm)));
        let retargeted = work.join("retargeted.ll");
        std::fs::write(&retargeted, ir::retarget(&ll, arch, ptx_isa))
            .map_err(io_err(&retargeted))?;

        let mut public: Vec<&str> = collective.keys().map(String::as_str).collect();
        public.extend(STATE_GLOBALS);
        let opt_bc = work.join("opt.bc");
        tools.run("opt", &tools.opt, |c| {
            c.arg(format!(
                "--internalize-public-api-list={}",
                public.join(",")
            ))
            // -mcpu: NVPTX's own passes run, NVVMReflect among them
            // (`__nvvm_reflect("__CUDA_ARCH")` becomes the arch's number).
            .arg(format!("-mcpu={arch}"))
            .arg("-passes=internalize,default<O3>,globaldce")
            .arg(&retargeted)
            .arg("-o")
            .arg(&opt_bc);
        })?;
        timings.lap("opt -O3");

        let work_ptx = work.join(format!("{}.ptx", meta.name));
        tools.run("llc", &tools.llc, |c| {
            c.args([
                "-O3",
                &format!("-mcpu={arch}"),
                &format!("-mattr=+ptx{ptx_isa}"),
            ])
            .arg(&opt_bc)
            .arg("-o")
            .arg(&work_ptx);
        })?;
        let ptx = std::fs::read_to_string(&work_ptx).map_err(io_err(&work_ptx))?;
        let ptx = if meta.max_threads.is_empty() {
            ptx
        } else {
            let bounded = ir::add_maxntid(&ptx, &meta.max_threads);
            std::fs::write(&work_ptx, &bounded).map_err(io_err(&work_ptx))?;
            bounded
        };
        timings.lap("llc");

        let unresolved: Vec<String> = ir::ptx_extern_funcs(&ptx)
            .into_iter()
            .filter(|f| !PTXAS_BUILTINS.contains(&f.as_str()))
            .collect();
        if !unresolved.is_empty() {
            return Err(Error::UnresolvedExterns {
                symbols: unresolved,
                version: nv.version,
            });
        }
        let entries = ir::ptx_entries(&ptx);
        for k in collective.keys() {
            if !entries.iter().any(|(name, _)| name == k) {
                return Err(Error::ToolFailed {
                    tool: "llc".into(),
                    command: format!("llc {}", opt_bc.display()),
                    status: "kernel missing".into(),
                    stderr: format!("kernel `{k}` is not an .entry in {}", work_ptx.display()),
                });
            }
        }

        std::fs::create_dir_all(&out_dir).map_err(io_err(&out_dir))?;
        let ptx_path = out_dir.join(format!("{}.ptx", meta.name));
        write_if_changed(&ptx_path, ptx.as_bytes())?;

        let (cubin, figures, device_link) = match ptxas {
            Some(ptxas) => {
                let cubin = out_dir.join(format!("{}.cubin", meta.name));
                let (figures, mode) =
                    self.assemble(tools, &ptxas, &ptx, &ptx_path, &cubin, work)?;
                (Some(cubin), figures, Some(mode))
            }
            None if self.require_ptxas => {
                return Err(Error::ToolNotRunnable {
                    program: "ptxas".into(),
                    source: std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        "not found in PTXAS, .deps/cuda-nvcc-*/, CUDA_HOME or PATH; run `./x setup` or `pip install nvidia-cuda-nvcc==13.0.*`",
                    ),
                });
            }
            None => (None, Default::default(), None),
        };
        timings.lap("ptxas");

        let sources = signature::kernels_in(&self.crate_dir.join("src"));
        let kernels = entries
            .iter()
            .map(|(name, ptx_params)| {
                let src = sources
                    .iter()
                    .find(|k| &k.name == name)
                    .filter(|k| k.params.len() == ptx_params.len());
                let params = ptx_params
                    .iter()
                    .enumerate()
                    .map(|(i, p)| {
                        let (pname, rust_type, c_type) = match src {
                            Some(k) => k.params[i].clone(),
                            None => (format!("_{i}"), String::new(), String::new()),
                        };
                        let c_type = if c_type.is_empty() {
                            ptx_c_type(p)
                        } else {
                            c_type
                        };
                        ParamInfo {
                            name: pname,
                            rust_type,
                            c_type,
                            size: p.size,
                            align: p.align,
                        }
                    })
                    .collect();
                let fig = figures.get(name);
                KernelInfo {
                    name: name.clone(),
                    params,
                    collective: collective.get(name).copied().unwrap_or(false),
                    registers: fig.map(|f| f.registers),
                    spill_stores: fig.map(|f| f.spill_stores),
                    spill_loads: fig.map(|f| f.spill_loads),
                    stack_frame: fig.map(|f| f.stack_frame),
                    static_shared_bytes: fig.map(|f| f.shared_bytes),
                }
            })
            .collect();

        let manifest = Manifest {
            format: MANIFEST_FORMAT,
            crate_name: meta.name.clone(),
            nvshmem_version: nv.version.to_string(),
            arch: arch.into(),
            ptx_isa: format!("{}.{}", ptx_isa / 10, ptx_isa % 10),
            ptx: file_name(&ptx_path),
            cubin: cubin.as_deref().map(file_name),
            device_link: device_link.map(|m| m.as_str().to_string()),
            kernels,
        };
        let manifest_path = out_dir.join(format!("{}.json", meta.name));
        let json = serde_json::to_string_pretty(&manifest).expect("manifest serializes");
        write_if_changed(&manifest_path, json.as_bytes())?;
        let header_path = out_dir.join(format!("{}.h", meta.name));
        write_if_changed(&header_path, header::render(&manifest).as_bytes())?;
        timings.lap("manifest");
        let outputs = outputs_identity(&out_dir, &manifest)?;
        std::fs::write(&key_path, format!("{key}{outputs}")).map_err(io_err(&key_path))?;

        Ok(BuildOutput {
            ptx: ptx_path,
            cubin,
            manifest_path,
            header: header_path,
            manifest,
            nvshmem: nv.clone(),
            sources: dep_info_sources(target_dir, meta, tc),
            timings: timings.0,
        })
    }
}

impl Builder {
    /// Runs ptxas (and nvlink when compiling separately) on the PTX; returns
    /// every kernel's figures and the mode used.
    fn assemble(
        &self,
        tools: &Tools,
        ptxas: &Path,
        ptx: &str,
        ptx_path: &Path,
        cubin: &Path,
        work: &Path,
    ) -> Result<(BTreeMap<String, ir::PtxasFigures>, DeviceLink)> {
        let arch = self.arch.as_str();
        let nvlink = find_nvlink(ptxas);
        let funcs = ir::ptx_functions(ptx);
        let mode = match self.device_link {
            DeviceLink::Auto => {
                let largest = ir::inlined_lines(&funcs).into_values().max().unwrap_or(0);
                if largest > AUTO_SEPARATE_ABOVE_LINES && nvlink.is_some() {
                    DeviceLink::Separate
                } else {
                    DeviceLink::WholeProgram
                }
            }
            mode => mode,
        };
        if mode == DeviceLink::WholeProgram {
            let stderr = tools.run("ptxas", ptxas, |c| {
                c.arg(format!("-arch={arch}"))
                    .arg("-v")
                    .arg(ptx_path)
                    .arg("-o")
                    .arg(cubin);
            })?;
            return Ok((ir::ptxas_figures(&stderr), mode));
        }
        let nvlink = nvlink.ok_or_else(|| Error::ToolNotRunnable {
            program: ptxas.with_file_name("nvlink"),
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "separate compilation needs nvlink, which was not found beside ptxas, in NVLINK or on PATH; it ships with ptxas in `pip install nvidia-cuda-nvcc==13.0.*`",
            ),
        })?;
        let object = work.join("separate.o");
        let per_function = ir::ptxas_figures(&tools.run("ptxas", ptxas, |c| {
            c.arg(format!("-arch={arch}"))
                .args(["-c", "-v"])
                .arg(ptx_path)
                .arg("-o")
                .arg(&object);
        })?);
        let linked = ir::nvlink_figures(&tools.run("nvlink", &nvlink, |c| {
            c.arg(format!("-arch={arch}"))
                .arg("-v")
                .arg(&object)
                .arg("-o")
                .arg(cubin);
        })?);
        // Per kernel: registers and stack as linked (the whole call graph);
        // spills summed over every function it reaches.
        let figures = funcs
            .iter()
            .filter(|(_, f)| f.is_entry)
            .map(|(name, _)| {
                let mut fig = ir::PtxasFigures::default();
                for f in ir::reachable(&funcs, name) {
                    if let Some(p) = per_function.get(f) {
                        fig.spill_stores += p.spill_stores;
                        fig.spill_loads += p.spill_loads;
                    }
                }
                let (registers, stack, shared) = linked.get(name).copied().unwrap_or_default();
                fig.registers = registers;
                fig.stack_frame = stack;
                fig.shared_bytes = shared;
                (name.clone(), fig)
            })
            .collect();
        Ok((figures, mode))
    }
}

impl Builder {
    /// A description of every input of the steps after `cargo build`: the
    /// exact rlibs and NVSHMEM bitcode (path, size, mtime), the tools, the
    /// settings and this builder's own version.
    fn inputs_key(
        &self,
        rlibs: &[PathBuf],
        bitcode: &Path,
        tools: &Tools,
        ptxas: Option<&Path>,
        features: &[String],
        out_dir: &Path,
    ) -> Result<String> {
        let mut key = format!(
            "nvshmem-builder {}\narch {}\nptx_isa {:?}\nfeatures {:?}\nrequire_ptxas {}\ndevice_link {}\nout {}\n",
            env!("CARGO_PKG_VERSION"),
            self.arch,
            self.ptx_isa,
            features,
            self.require_ptxas,
            self.device_link,
            out_dir.display(),
        );
        for tool in [&tools.llvm_link, &tools.opt, &tools.llc] {
            key += &file_identity(tool)?;
        }
        if let Some(p) = ptxas {
            key += &file_identity(p)?;
            if let Some(nvlink) = find_nvlink(p) {
                key += &file_identity(&nvlink)?;
            }
        }
        key += &file_identity(bitcode)?;
        if let Some(libdevice) = crate::libdevice::find(&self.crate_dir) {
            key += &file_identity(&libdevice)?;
        }
        // Cargo reports dependencies in a varying order: sort them (the
        // kernel crate's rlib, last, stays last).
        let (kernel, deps) = rlibs
            .split_last()
            .expect("cargo_build returns the kernel's rlib");
        let mut deps: Vec<&PathBuf> = deps.iter().collect();
        deps.sort();
        for rlib in deps.into_iter().chain([kernel]) {
            key += &file_identity(rlib)?;
        }
        Ok(key)
    }
}

/// FNV-1a of a path: a stable name for a cache file.
fn stable_hash(path: &Path) -> u64 {
    path.as_os_str()
        .as_encoded_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        })
}

/// `path size mtime`, one line: changes whenever the file is rewritten.
fn file_identity(path: &Path) -> Result<String> {
    let m = std::fs::metadata(path).map_err(io_err(path))?;
    Ok(format!(
        "{} {} {:?}\n",
        path.display(),
        m.len(),
        m.modified().ok()
    ))
}

/// The identity of every file a build wrote to `out_dir`, so that a reuse
/// notices outputs deleted or edited since.
fn outputs_identity(out_dir: &Path, manifest: &Manifest) -> Result<String> {
    let name = &manifest.crate_name;
    let mut files = vec![
        out_dir.join(format!("{name}.ptx")),
        out_dir.join(format!("{name}.json")),
        out_dir.join(format!("{name}.h")),
    ];
    files.extend(manifest.cubin.as_ref().map(|c| out_dir.join(c)));
    let mut s = String::from("outputs\n");
    for f in files {
        s += &file_identity(&f)?;
    }
    Ok(s)
}

/// The last build's outputs, if its inputs were exactly `key` and its outputs
/// are still as it wrote them.
fn reuse_outputs(
    key_path: &Path,
    key: &str,
    out_dir: &Path,
    crate_name: &str,
    nv: &Installation,
) -> Option<BuildOutput> {
    let stored = std::fs::read_to_string(key_path).ok()?;
    let outputs = stored.strip_prefix(key)?;
    let manifest_path = out_dir.join(format!("{crate_name}.json"));
    let manifest: Manifest = serde_json::from_slice(&std::fs::read(&manifest_path).ok()?).ok()?;
    if manifest.format != MANIFEST_FORMAT || outputs_identity(out_dir, &manifest).ok()? != outputs {
        return None;
    }
    Some(BuildOutput {
        ptx: out_dir.join(&manifest.ptx),
        cubin: manifest.cubin.as_ref().map(|c| out_dir.join(c)),
        manifest_path,
        header: out_dir.join(format!("{crate_name}.h")),
        manifest,
        nvshmem: nv.clone(),
        sources: Vec::new(),
        timings: Vec::new(),
    })
}

/// The lowest PTX ISA (`major*10+minor`) that can target `sm_N`.
fn min_ptx_isa(sm: u32) -> u32 {
    match sm {
        0..=72 => 60,
        73..=75 => 63,
        76..=80 => 70,
        81..=86 => 71,
        87..=89 => 78,
        // sm_90a needs 8.0 and the tensor-map fence of TMA kernels
        // (`fence.proxy.tensormap`) 8.3, as does NVSHMEM 3.4.5's own bitcode.
        90..=99 => 83,
        100..=101 => 86,
        _ => 87,
    }
}

fn ptx_c_type(p: &ir::PtxParam) -> String {
    match p.ty.as_str() {
        "u64" | "b64" => "uint64_t".into(),
        "u32" | "b32" => "uint32_t".into(),
        "s64" => "int64_t".into(),
        "s32" => "int32_t".into(),
        "f32" => "float".into(),
        "f64" => "double".into(),
        "u16" | "b16" => "uint16_t".into(),
        "u8" | "b8" if p.size == 1 => "uint8_t".into(),
        _ => format!(
            "struct {{ _Alignas({}) unsigned char bytes[{}]; }}",
            p.align, p.size
        ),
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Writes only when the contents differ, so dependents don't rebuild needlessly.
fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<()> {
    if std::fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(());
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes).map_err(io_err(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io_err(path))
}

/// The outer build's target folder (the ancestor of `OUT_DIR` with cargo's
/// `CACHEDIR.TAG`), else the crate's own.
fn default_target_dir(crate_dir: &Path) -> PathBuf {
    if let Some(out) = std::env::var_os("OUT_DIR")
        && let Some(t) = Path::new(&out)
            .ancestors()
            .find(|a| a.join("CACHEDIR.TAG").exists())
    {
        return t.join("nvshmem-kernels");
    }
    crate_dir.join("target")
}

/// The LLVM tools, resolved once.
struct Tools {
    llvm_link: PathBuf,
    llvm_dis: PathBuf,
    llvm_ar: PathBuf,
    opt: PathBuf,
    llc: PathBuf,
    /// `llvm-link --version`, such as `22.1.4`.
    version: String,
}

impl Tools {
    fn new(tc: &Toolchain, dir: Option<&Path>) -> Result<Self> {
        let find = |name: &str| -> Result<PathBuf> {
            match dir {
                Some(d) => {
                    let p = d.join(name);
                    if p.exists() {
                        Ok(p)
                    } else {
                        Err(Error::LlvmToolsMissing {
                            toolchain: tc.name(),
                            dir: d.to_path_buf(),
                            tool: name.into(),
                        })
                    }
                }
                None => tc.llvm_tool(name),
            }
        };
        let llvm_link = find("llvm-link")?;
        let out = Command::new(&llvm_link)
            .arg("--version")
            .output()
            .map_err(|source| Error::ToolNotRunnable {
                program: llvm_link.clone(),
                source,
            })?;
        let text = String::from_utf8_lossy(&out.stdout);
        let version = text
            .split_whitespace()
            .skip_while(|w| *w != "version")
            .nth(1)
            .unwrap_or(&tc.llvm_version)
            .to_string();
        Ok(Tools {
            llvm_dis: find("llvm-dis")?,
            llvm_ar: find("llvm-ar")?,
            opt: find("opt")?,
            llc: find("llc")?,
            llvm_link,
            version,
        })
    }

    fn major(&self) -> u32 {
        self.version
            .split('.')
            .next()
            .and_then(|m| m.parse().ok())
            .unwrap_or(0)
    }

    /// Runs a tool; on failure returns its stderr in the error. Returns stderr on success.
    fn run(&self, tool: &str, program: &Path, args: impl FnOnce(&mut Command)) -> Result<String> {
        let mut cmd = Command::new(program);
        args(&mut cmd);
        let out = cmd.output().map_err(|source| Error::ToolNotRunnable {
            program: program.to_path_buf(),
            source,
        })?;
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        if out.status.success() {
            return Ok(stderr);
        }
        if tool == "llvm-link"
            && let Some(producer) = producer_from_error(&stderr)
        {
            let bitcode = cmd.get_args().last().map(PathBuf::from).unwrap_or_default();
            return Err(Error::LlvmTooOld {
                tools: self.version.clone(),
                producer,
                bitcode,
            });
        }
        Err(Error::ToolFailed {
            tool: tool.into(),
            command: format!("{cmd:?}"),
            status: out.status.to_string(),
            stderr,
        })
    }
}

/// "... (Producer: 'LLVM22.1.8' Reader: 'LLVM 14.0.6')" → `22.1.8`.
fn producer_from_error(stderr: &str) -> Option<String> {
    let i = stderr.find("Producer: '")?;
    let rest = &stderr[i + "Producer: '".len()..];
    Some(
        rest.split('\'')
            .next()?
            .trim_start_matches("LLVM")
            .trim()
            .to_string(),
    )
}

/// Fails early, with the fix, when the tools' LLVM is older than the bitcode's producer.
fn check_producer(bitcode: &Path, tools: &Tools) -> Result<()> {
    let bytes = std::fs::read(bitcode).map_err(io_err(bitcode))?;
    if let Some((major, producer)) = ir::bitcode_producer_major(&bytes)
        && major > tools.major()
    {
        return Err(Error::LlvmTooOld {
            tools: tools.version.clone(),
            producer: format!("clang {producer}"),
            bitcode: bitcode.into(),
        });
    }
    Ok(())
}

/// What `cargo metadata` says about the kernel crate.
struct CrateMeta {
    name: String,
    manifest_path: PathBuf,
    /// Its library target's name (`-` replaced by `_`).
    lib_name: String,
    depends_on_device: bool,
    /// `[package.metadata.nvshmem.max-threads]`: kernel → the most threads
    /// per block it is launched with (CUDA's `__launch_bounds__`), emitted as
    /// `.maxntid` so that ptxas budgets registers for it.
    max_threads: BTreeMap<String, u32>,
}

impl CrateMeta {
    fn read(tc: &Toolchain, crate_dir: &Path) -> Result<Self> {
        let mut cmd = inner_cargo(tc, crate_dir);
        cmd.args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ]);
        let out = cmd.output().map_err(|source| Error::ToolNotRunnable {
            program: tc.cargo(),
            source,
        })?;
        if !out.status.success() {
            // --offline fails before a first fetch; retry online.
            let mut cmd = inner_cargo(tc, crate_dir);
            cmd.args(["metadata", "--no-deps", "--format-version", "1"]);
            let again = cmd.output().map_err(|source| Error::ToolNotRunnable {
                program: tc.cargo(),
                source,
            })?;
            if !again.status.success() {
                return Err(Error::CompileFailed {
                    crate_name: crate_dir.display().to_string(),
                    diagnostics: String::from_utf8_lossy(&again.stderr).into_owned(),
                });
            }
            return Self::parse(&again.stdout, crate_dir);
        }
        Self::parse(&out.stdout, crate_dir)
    }

    fn parse(json: &[u8], crate_dir: &Path) -> Result<Self> {
        let v: serde_json::Value = serde_json::from_slice(json).map_err(|e| Error::ToolFailed {
            tool: "cargo metadata".into(),
            command: "cargo metadata --no-deps".into(),
            status: "unparsable output".into(),
            stderr: e.to_string(),
        })?;
        let want = std::fs::canonicalize(crate_dir.join("Cargo.toml"))
            .unwrap_or_else(|_| crate_dir.join("Cargo.toml"));
        let pkg = v["packages"]
            .as_array()
            .and_then(|ps| {
                ps.iter().find(|p| {
                    p["manifest_path"].as_str().map(PathBuf::from).as_ref() == Some(&want)
                })
            })
            .ok_or_else(|| Error::KernelCrateNotFound {
                path: crate_dir.into(),
            })?;
        let name = pkg["name"].as_str().unwrap_or_default().to_string();
        let lib_name = pkg["targets"]
            .as_array()
            .and_then(|ts| {
                ts.iter().find(|t| {
                    t["kind"]
                        .as_array()
                        .is_some_and(|k| k.iter().any(|k| k == "lib" || k == "rlib"))
                })
            })
            .and_then(|t| t["name"].as_str())
            .unwrap_or(&name)
            .replace('-', "_");
        let depends_on_device = pkg["dependencies"].as_array().is_some_and(|ds| {
            ds.iter()
                .any(|d| d["name"] == "nvshmem-device" && d["kind"].is_null())
        });
        let max_threads = pkg["metadata"]["nvshmem"]["max-threads"]
            .as_object()
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), u32::try_from(v.as_u64()?).ok()?)))
                    .collect()
            })
            .unwrap_or_default();
        Ok(CrateMeta {
            name,
            manifest_path: want,
            lib_name,
            depends_on_device,
            max_threads,
        })
    }
}

/// A cargo command for the nested build, with the outer build's environment
/// removed: its RUSTFLAGS, target, jobserver and build-script variables would
/// otherwise leak into the nvptx64 build.
fn inner_cargo(tc: &Toolchain, crate_dir: &Path) -> Command {
    let mut cmd = Command::new(tc.cargo());
    cmd.current_dir(crate_dir);
    for (key, _) in std::env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        let keep = matches!(key, "CARGO_HOME" | "CARGO_TERM_COLOR")
            || key.starts_with("CARGO_NET_")
            || key.starts_with("CARGO_HTTP_")
            || key.starts_with("CARGO_REGISTRIES_")
            || key.starts_with("CARGO_REGISTRY_");
        let drop = (key.starts_with("CARGO") && !keep)
            || key.starts_with("RUSTC")
            || key.starts_with("RUSTDOC")
            || key.starts_with("DEP_")
            || matches!(
                key,
                "RUSTFLAGS"
                    | "RUSTUP_TOOLCHAIN"
                    | "MAKEFLAGS"
                    | "MFLAGS"
                    | "TARGET"
                    | "HOST"
                    | "OUT_DIR"
                    | "PROFILE"
                    | "OPT_LEVEL"
                    | "DEBUG"
                    | "NUM_JOBS"
            );
        if drop {
            cmd.env_remove(key);
        }
    }
    cmd.env("RUSTC", tc.rustc());
    cmd
}

/// Builds the crate for nvptx64; returns every rlib, the kernel crate's last.
fn cargo_build(
    tc: &Toolchain,
    crate_dir: &Path,
    target_dir: &Path,
    meta: &CrateMeta,
    features: &[String],
) -> Result<Vec<PathBuf>> {
    let mut cmd = inner_cargo(tc, crate_dir);
    cmd.args([
        "build",
        "--release",
        "--target",
        TARGET,
        "-Zbuild-std=core",
        "--message-format=json-render-diagnostics",
    ])
    .arg("--manifest-path")
    .arg(&meta.manifest_path)
    .arg("--target-dir")
    .arg(target_dir)
    // Kernels abort on panic and carry no debug info, whatever the profile
    // of the workspace they may be a member of says.
    .env("CARGO_PROFILE_RELEASE_PANIC", "abort")
    .env("CARGO_PROFILE_RELEASE_DEBUG", "false")
    .env("CARGO_TERM_COLOR", "never")
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    if !features.is_empty() {
        cmd.arg("--features").arg(features.join(","));
    }
    let out = cmd.output().map_err(|source| Error::ToolNotRunnable {
        program: tc.cargo(),
        source,
    })?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        let diagnostics: Vec<&str> = stderr
            .lines()
            .filter(|l| {
                let t = l.trim_start();
                !(t.starts_with("Compiling ")
                    || t.starts_with("Updating ")
                    || t.starts_with("Downloaded ")
                    || t.starts_with("Downloading ")
                    || t.starts_with("Locking ")
                    || t.starts_with("Adding "))
            })
            .collect();
        return Err(Error::CompileFailed {
            crate_name: meta.name.clone(),
            diagnostics: diagnostics.join("\n"),
        });
    }
    let mut rlibs = Vec::new();
    let mut kernel_rlib = None;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if msg["reason"] != "compiler-artifact" {
            continue;
        }
        let is_kernel =
            msg["manifest_path"].as_str().map(PathBuf::from).as_ref() == Some(&meta.manifest_path);
        for f in msg["filenames"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f.as_str())
        {
            if f.ends_with(".rlib") {
                if is_kernel {
                    kernel_rlib = Some(PathBuf::from(f))
                } else {
                    rlibs.push(PathBuf::from(f))
                }
            }
        }
    }
    let kernel_rlib = kernel_rlib.ok_or_else(|| Error::CompileFailed {
        crate_name: meta.name.clone(),
        diagnostics:
            "cargo built no rlib for the kernel crate: give it a [lib] target (src/lib.rs) \
                      with crate-type = [\"rlib\"]"
                .into(),
    })?;
    rlibs.push(kernel_rlib);
    Ok(rlibs)
}

/// Extracts the bitcode objects of each rlib (cached by modification time).
/// Returns (the kernel crate's objects, every dependency's objects).
fn extract_bitcode(
    tools: &Tools,
    rlibs: &[PathBuf],
    cache: &Path,
) -> Result<(Vec<PathBuf>, Vec<PathBuf>)> {
    let mut per_rlib = Vec::new();
    for rlib in rlibs {
        let stem = rlib
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let dir = cache.join(&stem);
        // The stamp names the exact rlib extracted: the top-level crate's rlib
        // has no hash in its name, and is rebuilt with other features for
        // another NVSHMEM version, so "older than the stamp" is not enough.
        let stamp = dir.join(".extracted");
        let identity = std::fs::metadata(rlib)
            .map(|m| format!("{}\n{}\n{:?}\n", rlib.display(), m.len(), m.modified().ok()))
            .map_err(io_err(rlib))?;
        let fresh = std::fs::read_to_string(&stamp).is_ok_and(|s| s == identity);
        if !fresh {
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
            tools.run("llvm-ar", &tools.llvm_ar, |c| {
                c.current_dir(&dir).arg("x").arg(rlib);
            })?;
            std::fs::write(&stamp, identity).map_err(io_err(&stamp))?;
        }
        let mut objs: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map_err(io_err(&dir))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| is_bitcode(p))
            .collect();
        objs.sort();
        per_rlib.push(objs);
    }
    let kernel = per_rlib.pop().unwrap_or_default();
    Ok((kernel, per_rlib.into_iter().flatten().collect()))
}

fn is_bitcode(p: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(p)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && magic == *b"BC\xC0\xDE"
}

fn mtime(p: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

/// Links every dependency object into one module, reusing it while no input changed.
/// One module lets `--only-needed` pull in the whole closure of what the kernels use.
fn link_deps_cached(tools: &Tools, objs: &[PathBuf], out: &Path) -> Result<PathBuf> {
    let list = out.with_extension("inputs");
    let listing: String = objs.iter().map(|o| format!("{}\n", o.display())).collect();
    let fresh = mtime(out).is_some_and(|t| objs.iter().all(|o| mtime(o).is_some_and(|m| m <= t)))
        && std::fs::read_to_string(&list).is_ok_and(|l| l == listing);
    if !fresh {
        tools.run("llvm-link", &tools.llvm_link, |c| {
            c.args(objs).arg("-o").arg(out);
        })?;
        std::fs::write(&list, listing).map_err(io_err(&list))?;
    }
    Ok(out.to_path_buf())
}

/// `ptxas`: `$PTXAS`, the set-up step's `.deps/cuda-nvcc-*`, `$CUDA_HOME/bin`, `PATH`, `/usr/local/cuda/bin`.
pub(crate) fn find_ptxas() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PTXAS")
        .map(PathBuf::from)
        .filter(|p| p.exists())
    {
        return Some(p);
    }
    let mut candidates = Vec::new();
    let cwd = std::env::current_dir().ok();
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from);
    for start in [manifest_dir, cwd].into_iter().flatten() {
        for dir in start.ancestors() {
            if let Ok(entries) = std::fs::read_dir(dir.join(".deps")) {
                for e in entries.flatten() {
                    if e.file_name().to_string_lossy().starts_with("cuda-nvcc") {
                        candidates.push(e.path().join("nvidia/cu13/bin/ptxas"));
                        candidates.push(e.path().join("nvidia/cuda_nvcc/bin/ptxas"));
                    }
                }
            }
        }
    }
    if let Some(home) = std::env::var_os("CUDA_HOME") {
        candidates.push(Path::new(&home).join("bin/ptxas"));
    }
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path).map(|d| d.join("ptxas")));
    }
    candidates.push("/usr/local/cuda/bin/ptxas".into());
    candidates.into_iter().find(|p| p.is_file())
}

/// `nvlink`: `$NVLINK`, beside `ptxas` (both ship in the nvcc wheel and in
/// CUDA's `bin/`), then `PATH`.
pub(crate) fn find_nvlink(ptxas: &Path) -> Option<PathBuf> {
    let from_env = std::env::var_os("NVLINK").map(PathBuf::from);
    let beside = ptxas.with_file_name("nvlink");
    let on_path = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("nvlink"))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    from_env
        .into_iter()
        .chain([beside])
        .chain(on_path)
        .find(|p| p.is_file())
}

/// The source files cargo recorded for the kernel crate (its own and its path
/// dependencies'), outside the toolchain's sysroot.
fn dep_info_sources(target_dir: &Path, meta: &CrateMeta, tc: &Toolchain) -> Vec<PathBuf> {
    let d = target_dir
        .join(TARGET)
        .join("release")
        .join(format!("lib{}.d", meta.lib_name));
    let Ok(text) = std::fs::read_to_string(&d) else {
        return Vec::new();
    };
    let Some((_, deps)) = text.split_once(": ") else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = deps
        .split_whitespace()
        .map(PathBuf::from)
        .filter(|p| !p.starts_with(&tc.sysroot) && !p.starts_with(target_dir))
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_producer_from_llvm_errors() {
        let e = "llvm-link: error: Opaque pointers are only supported in -opaque-pointers mode \
                 (Producer: 'LLVM18.1.1' Reader: 'LLVM 14.0.6')";
        assert_eq!(producer_from_error(e).as_deref(), Some("18.1.1"));
        assert_eq!(producer_from_error("other"), None);
    }

    #[test]
    fn ptx_minimums_grow_with_arch() {
        assert_eq!(min_ptx_isa(80), 70);
        assert_eq!(min_ptx_isa(90), 78);
        assert_eq!(min_ptx_isa(100), 86);
    }
}
