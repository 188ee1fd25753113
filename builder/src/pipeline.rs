//! The build pipeline: kernel crate → bitcode → linked with NVSHMEM → PTX → cubin.
//!
//! [`Builder::build`] runs these steps, each a method or module below:
//! 1. [`prepare`](Resolved::prepare): settings, NVSHMEM, the toolchain, ptxas;
//! 2. [`compile`](Resolved::compile): `cargo rustc` of the kernel crate for nvptx64 ([`cargo`](self::cargo));
//! 3. [`link_step`](Resolved::link_step): `llvm-link` with the device libraries ([`link`](self::link));
//! 4. [`rewrite_ir`](Resolved::rewrite_ir): textual IR rewrites (retargeting to the arch and PTX ISA);
//! 5. [`optimize`](Resolved::optimize) and [`codegen`](Resolved::codegen): `opt`, `llc`;
//! 6. [`verify_ptx`]: nothing unresolved, every kernel an `.entry`;
//! 7. `ptxas` ([`assemble`](self::assemble)), unless PTX-only;
//! 8. [`describe`](Resolved::describe): the manifest and the C header.
//!
//! When none of the inputs of steps 3-8 changed since the last build, their
//! outputs are reused ([`reuse`](self::reuse)).

mod assemble;
mod bindings;
mod cargo;
pub(crate) mod header;
pub mod ir;
mod link;
mod ptx;
mod reuse;
mod shared_memory;
mod signature;
mod transport;

use crate::builder::{BuildOutput, Builder, CheckOutput, Resolved};
use crate::error::{Error, Result, io_err};
use crate::manifest::{KernelInfo, MANIFEST_FORMAT, Manifest, ParamInfo};
use crate::toolchain::{self, DeviceLinker, LlvmTools, Toolchain, libdevice, run, wheels};
use cargo::CrateMeta;
use header::CTypes;
use nvshmem_types::install::{FindError, Installation, Query, Source};
use nvshmem_types::{
    Arch, CudaMajor, CudaVersion, DEFAULT_CUDA, DEFAULT_VERSION, DeviceLink, Version,
};
use reuse::{Key, write_if_changed};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The state globals `nvshmemx_cumodule_init` looks up: they must stay visible.
const STATE_GLOBALS: [&str; 2] = ["nvshmemi_device_state_d", "nvshmemi_device_lib_version_d"];
/// Functions ptxas resolves itself.
const PTXAS_BUILTINS: [&str; 4] = ["vprintf", "__assertfail", "malloc", "free"];

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

/// Everything a build needs before it compiles, each part checked.
struct Prepared {
    tc: Toolchain,
    tools: LlvmTools,
    meta: CrateMeta,
    nv: Installation,
    /// The device bitcode libraries to link: NVSHMEM's for the arch.
    libraries: Vec<PathBuf>,
    /// `None` for PTX-only output and for [`Builder::check`].
    ptxas: Option<PathBuf>,
    /// The CUDA major of the NVSHMEM wheel and the tools.
    cuda: CudaMajor,
    /// The toolkit of `ptxas` (without one, the CUDA major's).
    toolkit: CudaVersion,
    /// How separate compilation links, when it can.
    linker: Option<DeviceLinker>,
}

/// A kernel crate compiled to nvptx64 rlibs, with its work folder locked.
struct Compiled {
    p: Prepared,
    target_dir: PathBuf,
    work: PathBuf,
    _lock: std::fs::File,
    features: Vec<String>,
    rlibs: Vec<PathBuf>,
    /// Kernel → its `#[kernel(max_threads = N)]` (CUDA's `__launch_bounds__`),
    /// emitted as `.maxntid` so that ptxas budgets registers for it.
    max_threads: BTreeMap<String, u32>,
}

impl Builder {
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
        self.resolve()?.check()
    }

    /// Builds the kernel crate. See the crate docs for the steps.
    pub fn build(&self) -> Result<BuildOutput> {
        self.resolve()?.build()
    }
}

impl Builder {
    /// [`build`](Builder::build), and with `publish`, its bindings copied
    /// to `$OUT_DIR` for `nvshmem_host::include_kernels!` ([`publish_bindings`]).
    pub(crate) fn build_and_publish(&self, publish: bool) -> Result<BuildOutput> {
        let out = self.build()?;
        if publish {
            publish_bindings(&out)?;
        }
        Ok(out)
    }
}

/// The folder under `$OUT_DIR` where `nvshmem_host::include_kernels!` finds
/// each kernel crate's bindings.
pub(crate) const BINDINGS_DIR: &str = "nvshmem-kernels";

/// Copies a build's bindings to `$OUT_DIR/nvshmem-kernels/<crate>.rs` (the
/// crate name with `-` as `_`), for `nvshmem_host::include_kernels!`. The
/// first build of a crate in a build script's run wins (a build of the same
/// crate against another NVSHMEM version, say, does not replace them): see
/// [`build_all_from_build_script`](crate::build_all_from_build_script).
pub(crate) fn publish_bindings(out: &BuildOutput) -> Result<()> {
    let Some(out_dir) = std::env::var_os("OUT_DIR") else {
        return Ok(());
    };
    let dir = PathBuf::from(out_dir).join(BINDINGS_DIR);
    std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
    let name = out.manifest.crate_name.replace('-', "_");
    let bytes = std::fs::read(&out.bindings).map_err(io_err(&out.bindings))?;
    if bindings::reexport_kernel_types(&String::from_utf8_lossy(&bytes)) {
        warn_unless_host_depends_on(&out.manifest.crate_name);
    }
    write_if_changed(&dir.join(format!("{name}.rs")), &bytes)
}

/// Bindings that re-export the kernel crate's own types (a `#[repr(C)]`
/// struct a kernel takes by value) compile only in a package that depends on
/// the kernel crate; rustc's error then names an unresolved import, not the
/// fix. Warns with the fix when this build script's package lacks it.
fn warn_unless_host_depends_on(kernel_crate: &str) {
    let (Some(dir), Ok(package)) = (
        std::env::var_os("CARGO_MANIFEST_DIR"),
        std::env::var("CARGO_PKG_NAME"),
    ) else {
        return;
    };
    let manifest = PathBuf::from(dir).join("Cargo.toml");
    let mut cmd = cargo_metadata::MetadataCommand::new();
    cmd.manifest_path(&manifest)
        .no_deps()
        .other_options(vec!["--offline".to_string()]);
    let Ok(meta) = cmd.exec() else { return };
    let Some(host) = meta.packages.iter().find(|p| *p.name == package) else {
        return;
    };
    if host
        .dependencies
        .iter()
        .any(|d| d.name == kernel_crate && d.kind == cargo_metadata::DependencyKind::Normal)
    {
        return;
    }
    // Run again once the package's Cargo.toml changes, so that the warning
    // does not outlive its fix.
    println!("cargo:rerun-if-changed={}", manifest.display());
    crate::toolchain::settings::Progress::BuildScript.warn(&format!(
        "the bindings of `{kernel_crate}` use its own structs (a kernel takes one by value), so \
         `{package}` must depend on it. Fix: add `{kernel_crate} = {{ path = \"...\" }}` to \
         [dependencies] in {}",
        manifest.display()
    ));
}

impl Resolved {
    /// Step 1: the toolchain, the kernel crate's metadata,
    /// NVSHMEM and ptxas, in that order (what the user wrote is checked
    /// before anything is downloaded); a missing toolchain is installed and
    /// missing wheels downloaded.
    fn prepare(&self, need_ptxas: bool, laps: &mut Laps) -> Result<Prepared> {
        if !self.crate_dir.join("Cargo.toml").is_file() {
            return Err(Error::KernelCrateNotFound {
                path: self.crate_dir.clone(),
            });
        }
        let tc = Toolchain::ensure(&self.toolchain, self.offline, self.progress)?;
        let tools = LlvmTools::new(&tc, self.llvm_tools_dir.as_deref())?;
        let meta = CrateMeta::read(&tc, &self.crate_dir)?;
        let nv = self.find_nvshmem()?;
        let cuda = match (self.cuda, nv.cuda) {
            (Some(asked), Some(found)) if asked != found => {
                return Err(Error::CudaMismatch {
                    found: Box::new(nv),
                    asked,
                });
            }
            (asked, found) => asked.or(found).unwrap_or(DEFAULT_CUDA),
        };
        if !cuda.supports(self.arch) {
            return Err(Error::NotForCuda {
                arch: self.arch,
                cuda,
                why: format!(
                    "it needs PTX ISA {}, and ptxas {} reads at most {}",
                    isa(self.arch.min_ptx_isa()),
                    cuda.toolkit(),
                    isa(cuda.max_ptx_isa())
                ),
            });
        }
        let libraries = vec![nv.device_bitcode(self.arch)?];
        let ptxas = match need_ptxas && !self.ptx_only {
            true => Some(toolchain::ptxas_or_fetch(
                cuda,
                self.offline,
                self.progress,
            )?),
            false => None,
        };
        let toolkit = ptxas
            .as_deref()
            .and_then(toolchain::ptxas_release)
            .unwrap_or(cuda.toolkit());
        let linker = match &ptxas {
            Some(p) => toolchain::find_linker(p, cuda)?,
            None => None,
        };
        laps.lap("checks");
        Ok(Prepared {
            tc,
            tools,
            meta,
            nv,
            libraries,
            ptxas,
            cuda,
            toolkit,
            linker,
        })
    }

    /// NVSHMEM as [`Installation::find`] finds it, else downloaded into the
    /// per-user cache (the version asked for, else [`DEFAULT_VERSION`]).
    /// Says once per process which version was chosen and why.
    fn find_nvshmem(&self) -> Result<Installation> {
        let mut query = Query::default().ignore_env();
        if let Some(home) = &self.home {
            query = query.home(home);
        }
        if let Some(v) = self.version {
            query = query.version(v);
        }
        if let Some(c) = self.cuda {
            query = query.cuda(c);
        }
        let nv = match Installation::find(&query) {
            Err(e @ FindError::NotFound { .. }) if self.offline => return Err(e.into()),
            Err(FindError::NotFound { .. }) => {
                let version = self.version.unwrap_or(DEFAULT_VERSION);
                let cuda = self.cuda.unwrap_or(DEFAULT_CUDA);
                let info = version
                    .info()
                    .ok_or(Error::UnsupportedVersion { version })?;
                let what = format!("NVSHMEM {version} (CUDA {cuda})");
                let wheel = info.wheel(cuda).to_string();
                let dir = wheels::ensure_with(&wheel, &what, false, self.progress)?;
                Installation::at(&dir.join("nvidia/nvshmem"), Source::UserCache)?
            }
            other => other?,
        };
        if nv.version.info().is_none() {
            return Err(Error::UnsupportedVersion {
                version: nv.version,
            });
        }
        let line = format!(
            "NVSHMEM {}: {} (NVSHMEM_RS_NVSHMEM_VERSION and NVSHMEM_RS_CUDA_MAJOR choose \
             another)",
            nv.describe(),
            nv.why(&query)
        );
        if self.version.is_none() && self.home.is_none() {
            // Chosen for the user: the PTX must match the host library's
            // version, so a plain `cargo build` shows which one (once).
            self.progress.warn(&line);
        } else {
            say_once(self.progress, line);
        }
        Ok(nv)
    }

    /// Step 2: `cargo rustc` of the kernel crate for nvptx64, holding the
    /// work folder's lock.
    fn compile(&self, p: Prepared, laps: &mut Laps) -> Result<Compiled> {
        let target_dir = self
            .target_dir
            .clone()
            .unwrap_or_else(|| default_target_dir(&self.crate_dir));
        // Relative to this process's folder, as the caller meant it: the
        // nested cargo runs in the crate's folder and would put a relative
        // one there (where the signature reader then walks it).
        let target_dir = std::path::absolute(&target_dir).map_err(io_err(&target_dir))?;
        let work = target_dir
            .join("nvshmem-link")
            .join(&p.meta.name)
            .join(ptx_folder(p.nv.version, p.cuda))
            .join(self.arch.to_string());
        std::fs::create_dir_all(&work).map_err(io_err(&work))?;
        // Concurrent builds of the same crate, version and arch (two build
        // scripts, or tests in parallel) share these files: take turns.
        let lock_path = work.join(".lock");
        let lock = std::fs::File::create(&lock_path).map_err(io_err(&lock_path))?;
        lock.lock().map_err(io_err(&lock_path))?;

        let mut features = self.features.clone();
        if p.meta.depends_on_device
            && let Some(f) = p.nv.version.info().and_then(|i| i.device_feature())
        {
            features.push(format!("nvshmem-device/{f}"));
        }
        let rlibs = cargo::build(&p.tc, &target_dir, &p.meta, &features, self.progress)?;
        // Read after the build, which has checked the attribute's arguments.
        let sources = signature::read(&p.meta.src_dir());
        if sources.max_threads_in_macros > 0 {
            self.progress.warn(&format!(
                "{}: {} `#[kernel(max_threads = ..)]` inside macros get no `.maxntid`: \
                 the builder reads launch bounds from the source without expanding macros; \
                 write those kernels outside a macro",
                p.meta.name, sources.max_threads_in_macros
            ));
        }
        let max_threads = sources.max_threads();
        laps.lap("cargo build (nvptx64)");
        Ok(Compiled {
            p,
            target_dir,
            work,
            _lock: lock,
            features,
            rlibs,
            max_threads,
        })
    }

    /// Step 3: the kernel crate's bitcode linked with its dependencies' and
    /// the device libraries; the linked module as text.
    fn link_step(&self, c: &Compiled, laps: &mut Laps) -> Result<String> {
        let ll = link::link(&c.p.tools, &c.rlibs, &c.p.libraries, &c.work)?;
        let ll = self.link_libdevice(c, ll)?;
        laps.lap("llvm-link");
        Ok(ll)
    }

    /// When the module calls libdevice (`__nv_*`, from `nvshmem_device::math`),
    /// links it in `--only-needed` (downloading the `nvidia-nvvm` wheel the
    /// first time) and returns the new module's text.
    fn link_libdevice(&self, c: &Compiled, ll: String) -> Result<String> {
        let needed = ir::libdevice_calls(&ll);
        if needed.is_empty() {
            return Ok(ll);
        }
        let libdevice = libdevice::find_or_fetch(self.offline, self.progress, needed)?;
        link::link_more(&c.p.tools, &c.work, &libdevice)
    }

    /// Step 4: textual rewrites of the linked module: static shared memory
    /// moved to `addrspace(3)`, NVVM reflection unhidden for `opt`, and every
    /// function retargeted to the arch and PTX ISA.
    fn rewrite_ir(&self, ll: &str, arch: &str, ptx_isa: u32) -> Result<String> {
        let ll = shared_memory::lower(ll).map_err(|reason| Error::SharedMemory { reason })?;
        let ll = ir::unhide_reflect(&ll);
        Ok(ir::retarget(&ll, arch, ptx_isa))
    }

    /// Step 5a: internalize everything but the kernels and NVSHMEM's state
    /// globals, O3, global DCE.
    fn optimize(
        &self,
        c: &Compiled,
        ll: &Path,
        kernels: &[&str],
        laps: &mut Laps,
    ) -> Result<PathBuf> {
        let mut public: Vec<&str> = kernels.to_vec();
        public.extend(STATE_GLOBALS);
        let opt_bc = c.work.join("opt.bc");
        let tools = &c.p.tools;
        run("opt", &tools.opt, &tools.version, |cmd| {
            cmd.arg(format!(
                "--internalize-public-api-list={}",
                public.join(",")
            ))
            // -mcpu: NVPTX's own passes run, NVVMReflect among them
            // (`__nvvm_reflect("__CUDA_ARCH")` becomes the arch's number).
            .arg(format!("-mcpu={}", self.arch))
            .arg("-passes=internalize,default<O3>,globaldce")
            .arg(ll)
            .arg("-o")
            .arg(&opt_bc);
        })?;
        laps.lap("opt -O3");
        Ok(opt_bc)
    }

    /// Step 5b: `llc` to PTX; returns its path and text.
    fn codegen(
        &self,
        c: &Compiled,
        opt_bc: &Path,
        ptx_isa: u32,
        laps: &mut Laps,
    ) -> Result<(PathBuf, String)> {
        let work_ptx = c.work.join(format!("{}.ptx", c.p.meta.name));
        let tools = &c.p.tools;
        run("llc", &tools.llc, &tools.version, |cmd| {
            cmd.args([
                "-O3",
                &format!("-mcpu={}", self.arch),
                &format!("-mattr=+ptx{ptx_isa}"),
            ])
            .arg(opt_bc)
            .arg("-o")
            .arg(&work_ptx);
        })?;
        let ptx = std::fs::read_to_string(&work_ptx).map_err(io_err(&work_ptx))?;
        let ptx = if c.max_threads.is_empty() {
            ptx
        } else {
            let bounded = ptx::add_maxntid(&ptx, &c.max_threads);
            std::fs::write(&work_ptx, &bounded).map_err(io_err(&work_ptx))?;
            bounded
        };
        laps.lap("llc");
        Ok((work_ptx, ptx))
    }

    /// [`Builder::check`], on these settings.
    fn check(&self) -> Result<CheckOutput> {
        let mut laps = Laps::new();
        let p = self.prepare(false, &mut laps)?;
        let c = self.compile(p, &mut laps)?;
        let ll = self.link_step(&c, &mut laps)?;
        let kernels = ir::collective_kernels(&ir::functions(&ll));
        if kernels.is_empty() {
            return Err(Error::NoKernels {
                crate_name: c.p.meta.name.clone(),
            });
        }
        let unresolved: Vec<String> = ir::declared_functions(&ll)
            .into_iter()
            .filter(|f| !f.starts_with("llvm.") && !PTXAS_BUILTINS.contains(&f.as_str()))
            // NVVM reflection is resolved by `opt`, which `check` does not run.
            .filter(|f| ![ir::REFLECT_ALIAS, "__nvvm_reflect"].contains(&f.as_str()))
            .collect();
        if !unresolved.is_empty() {
            return Err(Error::UnresolvedExterns {
                symbols: unresolved,
                version: c.p.nv.version,
            });
        }
        Ok(CheckOutput {
            kernels,
            nvshmem: c.p.nv,
            timings: laps.0,
        })
    }

    /// [`Builder::build`], on these settings.
    fn build(&self) -> Result<BuildOutput> {
        let mut laps = Laps::new();
        let p = self.prepare(true, &mut laps)?;
        let c = self.compile(p, &mut laps)?;
        let arch = self.arch.to_string();
        let out_dir = self
            .out_dir
            .clone()
            .unwrap_or_else(|| {
                std::env::var_os("OUT_DIR")
                    .map(|d| PathBuf::from(d).join("ptx"))
                    .unwrap_or_else(|| c.target_dir.join("ptx"))
            })
            .join(ptx_folder(c.p.nv.version, c.p.cuda))
            .join(&arch);
        let ptxas = c.p.ptxas.clone();
        let mut watched = cargo::dep_info_sources(&c.target_dir, &c.p.meta, &c.p.tc);
        watched.extend(c.p.libraries.iter().cloned());
        watched.push(c.p.tc.rustc());
        watched.extend(ptxas.iter().cloned());

        // Everything below is a pure function of the key's inputs: when none
        // changed since the last build, reuse its outputs instead of
        // re-running link, opt, llc and ptxas.
        let key = self.inputs_key(&c, ptxas.as_deref())?;
        let key_path = reuse::key_path(&c.work, &out_dir);
        let reused = reuse::Reuse {
            work: &c.work,
            key_path: &key_path,
            key: &key,
            out_dir: &out_dir,
            crate_name: &c.p.meta.name,
            nv: &c.p.nv,
        }
        .output();
        if let Some(out) = reused {
            laps.lap("reused (inputs unchanged)");
            self.announce_ptx_only();
            let bindings = write_bindings(&c, &out.manifest, &out_dir)?;
            return Ok(BuildOutput {
                bindings,
                cuda_include: self.cuda_include(),
                sources: watched,
                timings: laps.0,
                ..out
            });
        }
        // A failure below must not leave an old key that vouches for new inputs.
        let _ = std::fs::remove_file(&key_path);

        let ll = self.link_step(&c, &mut laps)?;
        let collective = ir::collective_kernels(&ir::functions(&ll));
        if collective.is_empty() {
            return Err(Error::NoKernels {
                crate_name: c.p.meta.name.clone(),
            });
        }
        let ptx_isa = self.ptx_isa.unwrap_or_else(|| {
            ir::max_ptx_feature(&ll)
                .unwrap_or(0)
                .max(self.arch.min_ptx_isa())
        });
        if ptx_isa > c.p.cuda.max_ptx_isa() {
            return Err(Error::NotForCuda {
                arch: self.arch,
                cuda: c.p.cuda,
                why: format!(
                    "NVSHMEM {}'s bitcode (or the PTX ISA asked for) needs PTX ISA {}, and ptxas \
                     {} reads at most {}",
                    c.p.nv.version,
                    isa(ptx_isa),
                    c.p.cuda.toolkit(),
                    isa(c.p.cuda.max_ptx_isa())
                ),
            });
        }
        let retargeted = c.work.join("retargeted.ll");
        std::fs::write(&retargeted, self.rewrite_ir(&ll, &arch, ptx_isa)?)
            .map_err(io_err(&retargeted))?;
        let misuses = ir::arch_misuses(&ll, self.arch);
        drop(ll);
        let kernel_names: Vec<&str> = collective.keys().map(String::as_str).collect();
        let opt_bc = self.optimize(&c, &retargeted, &kernel_names, &mut laps)?;
        // Kept only when `opt` fails on it, to read; 100+ MB for large crates.
        let _ = std::fs::remove_file(&retargeted);
        check_arch(&misuses, &opt_bc, self.arch)?;
        let (work_ptx, ptx) = self.codegen(&c, &opt_bc, ptx_isa, &mut laps)?;
        let entries = verify_ptx(&ptx, &work_ptx, &collective, c.p.nv.version)?;

        std::fs::create_dir_all(&out_dir).map_err(io_err(&out_dir))?;
        let ptx_path = out_dir.join(format!("{}.ptx", c.p.meta.name));
        write_if_changed(&ptx_path, ptx.as_bytes())?;
        let (cubin, figures, device_link) = match &ptxas {
            Some(ptxas) => {
                let cubin = out_dir.join(format!("{}.cubin", c.p.meta.name));
                let (figures, mode, warning) = assemble::assemble(
                    (ptxas, c.p.linker.clone()),
                    &arch,
                    self.device_link,
                    &ptx,
                    &ptx_path,
                    &cubin,
                    &c.work,
                )?;
                if let Some(w) = warning {
                    self.progress.warn(&w);
                }
                (Some(cubin), figures, Some(mode))
            }
            None => (None, Default::default(), None),
        };
        laps.lap("ptxas");
        self.announce_ptx_only();

        let assembled = Assembled {
            ptx_isa,
            ptx: &ptx_path,
            cubin: cubin.as_deref(),
            figures: &figures,
            device_link,
        };
        let (manifest, structs) = self.describe(&c, &entries, &collective, &assembled);
        let manifest_path = out_dir.join(format!("{}.json", c.p.meta.name));
        let json = serde_json::to_string_pretty(&manifest).expect("manifest serializes");
        write_if_changed(&manifest_path, json.as_bytes())?;
        let header_path = out_dir.join(format!("{}.h", c.p.meta.name));
        write_if_changed(&header_path, header::render(&manifest, &structs).as_bytes())?;
        let bindings = write_bindings(&c, &manifest, &out_dir)?;
        laps.lap("manifest");
        reuse::record(&key_path, &key, &out_dir, &manifest)?;
        reuse::stash(&c.work, &key, &out_dir, &manifest)?;

        Ok(BuildOutput {
            ptx: ptx_path,
            cubin,
            manifest_path,
            header: header_path,
            bindings,
            cuda_include: self.cuda_include(),
            manifest,
            nvshmem: c.p.nv.clone(),
            sources: watched,
            timings: laps.0,
        })
    }

    /// `cuda.h`'s folder for the header's launch helpers, fetched when
    /// missing; a warning, not a failure, when that is not possible.
    fn cuda_include(&self) -> Option<PathBuf> {
        wheels::cuda_include_with(self.offline, self.progress)
            .map_err(|e| {
                self.progress.warn(&format!(
                    "the C header's launch helpers need cuda.h, which is not here: {e}"
                ))
            })
            .ok()
    }

    fn announce_ptx_only(&self) {
        if self.ptx_only {
            self.progress.warn(&format!(
                "{}: PTX only, as asked (NVSHMEM_RS_PTX_ONLY=1 or ptx_only(true)): no ptxas, no \
                 cubin; the host JIT-compiles the PTX",
                self.crate_dir.display()
            ));
        }
    }

    /// Step 8: the manifest and the C types of the header.
    ///
    /// (The typed Rust bindings are written by [`write_bindings`], for
    /// reused outputs too: they name the output folder.)
    fn describe(
        &self,
        c: &Compiled,
        entries: &[(String, Vec<ptx::PtxParam>)],
        collective: &BTreeMap<String, bool>,
        a: &Assembled,
    ) -> (Manifest, Vec<header::CStruct>) {
        let sources = signature::read(&c.p.meta.src_dir());
        let mut ctypes = CTypes::new(&c.p.meta.name, &sources);
        let kernels = entries
            .iter()
            .map(|(name, ptx_params)| {
                let src = sources.kernel(name, ptx_params.len());
                let params = ptx_params
                    .iter()
                    .enumerate()
                    .map(|(i, p)| {
                        let (pname, ty) = match src {
                            Some(k) => (k.params[i].0.clone(), Some(&k.params[i].1)),
                            None => (format!("_{i}"), None),
                        };
                        ParamInfo {
                            c_type: ctypes.param(name, &pname, ty, p),
                            rust_type: ty.map(signature::rust_type).unwrap_or_default(),
                            name: pname,
                            size: p.size,
                            align: p.align,
                        }
                    })
                    .collect();
                let fig = a.figures.get(name);
                KernelInfo {
                    name: name.clone(),
                    params,
                    collective: collective.get(name).copied().unwrap_or(false),
                    registers: fig.map(|f| f.registers),
                    spill_stores: fig.map(|f| f.spill_stores),
                    static_shared_bytes: fig.map(|f| f.shared_bytes),
                    spill_loads: fig.map(|f| f.spill_loads),
                    stack_frame: fig.map(|f| f.stack_frame),
                    max_threads: c.max_threads.get(name).copied(),
                }
            })
            .collect();
        let manifest = Manifest {
            format: MANIFEST_FORMAT,
            crate_name: c.p.meta.name.clone(),
            nvshmem_version: c.p.nv.version,
            arch: self.arch,
            ptx_isa: format!("{}.{}", a.ptx_isa / 10, a.ptx_isa % 10),
            ptx: file_name(a.ptx),
            cubin: a.cubin.map(file_name),
            device_link: a.device_link,
            cuda_toolkit: Some(c.p.toolkit),
            kernels,
        };
        (manifest, ctypes.structs)
    }

    /// The inputs of steps 3-8: the settings, the exact rlibs and device
    /// libraries, and the tools.
    fn inputs_key(&self, c: &Compiled, ptxas: Option<&Path>) -> Result<Key> {
        let mut key = Key::new(&[
            ("arch", self.arch.to_string()),
            ("ptx_isa", format!("{:?}", self.ptx_isa)),
            ("features", format!("{:?}", c.features)),
            ("ptx_only", self.ptx_only.to_string()),
            ("device_link", self.device_link.to_string()),
            ("cuda", c.p.cuda.to_string()),
            ("max_threads", format!("{:?}", c.max_threads)),
        ]);
        let tools = &c.p.tools;
        for tool in [&tools.llvm_link, &tools.opt, &tools.llc] {
            key.file(tool)?;
        }
        if let Some(p) = ptxas {
            key.file(p)?;
        }
        if let Some(linker) = &c.p.linker {
            key.file(linker.path())?;
        }
        for lib in &c.p.libraries {
            key.file(lib)?;
        }
        // Linked only when the kernels need it; its identity when it is here.
        if let Some(libdevice) = libdevice::find()? {
            key.file(&libdevice)?;
        }
        // Cargo reports dependencies in a varying order: sort them (the
        // kernel crate's rlib, last, stays last).
        let (kernel, deps) = c
            .rlibs
            .split_last()
            .expect("cargo::build returns the kernel's rlib");
        let mut deps: Vec<&PathBuf> = deps.iter().collect();
        deps.sort();
        for rlib in deps.into_iter().chain([kernel]) {
            key.file(rlib)?;
        }
        Ok(key)
    }
}

/// What steps 5-7 made, for the manifest.
struct Assembled<'a> {
    ptx_isa: u32,
    ptx: &'a Path,
    cubin: Option<&'a Path>,
    figures: &'a assemble::Figures,
    device_link: Option<DeviceLink>,
}

/// Step 6: no `.extern .func` is left but ptxas' own, and every kernel is an
/// `.entry`; returns the entries and their parameters.
fn verify_ptx(
    ptx: &str,
    work_ptx: &Path,
    kernels: &BTreeMap<String, bool>,
    version: Version,
) -> Result<Vec<(String, Vec<ptx::PtxParam>)>> {
    let unresolved: Vec<String> = ptx::ptx_extern_funcs(ptx)
        .into_iter()
        .filter(|f| !PTXAS_BUILTINS.contains(&f.as_str()))
        .collect();
    if !unresolved.is_empty() {
        return Err(Error::UnresolvedExterns {
            symbols: unresolved,
            version,
        });
    }
    let entries = ptx::ptx_entries(ptx);
    for k in kernels.keys() {
        if !entries.iter().any(|(name, _)| name == k) {
            return Err(Error::ToolFailed {
                tool: "llc".into(),
                command: format!("llc -o {}", work_ptx.display()),
                status: "kernel missing".into(),
                stderr: format!("kernel `{k}` is not an .entry in {}", work_ptx.display()),
            });
        }
    }
    Ok(entries)
}

/// `8.8` for 88.
fn isa(n: u32) -> String {
    format!("{}.{}", n / 10, n % 10)
}

/// The output folder of a version and CUDA major: `nvshmem-3.4.5` for CUDA
/// 13 (as before CUDA 12 builds existed), `nvshmem-3.4.5-cu12` for CUDA 12.
///
/// ```
/// use nvshmem_builder::{CudaMajor, Version, ptx_folder};
/// assert_eq!(ptx_folder(Version::new(3, 3, 20), CudaMajor::Cuda12), "nvshmem-3.3.20-cu12");
/// assert_eq!(ptx_folder(Version::new(3, 4, 5), CudaMajor::Cuda13), "nvshmem-3.4.5");
/// ```
pub fn ptx_folder(version: Version, cuda: CudaMajor) -> String {
    match cuda {
        CudaMajor::Cuda13 => format!("nvshmem-{version}"),
        CudaMajor::Cuda12 => format!("nvshmem-{version}-cu12"),
    }
}

/// A progress line said once per process (several crates, one choice).
fn say_once(progress: crate::toolchain::settings::Progress, line: String) {
    static SAID: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
    if !said.contains(&line) {
        progress.say(&line);
        said.push(line);
    }
}

/// Step 5a': no intrinsic the arch lacks survived `opt` (a use that
/// `__nvvm_reflect` guards away is fine); `llc` would abort on it.
fn check_arch(misuses: &[ir::ArchMisuse], opt_bc: &Path, arch: Arch) -> Result<()> {
    if misuses.is_empty() {
        return Ok(());
    }
    let bytes = std::fs::read(opt_bc).map_err(io_err(opt_bc))?;
    match misuses
        .iter()
        .find(|m| ir::bitcode_mentions(&bytes, &m.intrinsic))
    {
        Some(m) => Err(Error::ArchMismatch {
            arch,
            what: m.what,
            intrinsic: m.intrinsic.clone(),
            needs: m.needs,
            callers: m.callers.clone(),
            kernels: m.kernels.clone(),
        }),
        None => Ok(()),
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
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

/// Writes the typed Rust bindings (`<crate>.rs`, see [`bindings`]) beside
/// the manifest and returns their path.
fn write_bindings(c: &Compiled, manifest: &Manifest, out_dir: &Path) -> Result<PathBuf> {
    let sources = signature::read(&c.p.meta.src_dir());
    let dir = std::path::absolute(out_dir).map_err(io_err(out_dir))?;
    let text = bindings::render(
        manifest,
        &sources,
        &c.p.meta.lib_name,
        &dir.display().to_string(),
    );
    let path = out_dir.join(format!("{}.rs", c.p.meta.name));
    write_if_changed(&path, text.as_bytes())?;
    Ok(path)
}
