//! Loading the builder's PTX or cubin, registered with NVSHMEM, and launching
//! its kernels.
//!
//! A module with NVSHMEM device code holds NVSHMEM's device state
//! (`nvshmemi_device_state_d`), which NVSHMEM fills in only when the module is
//! registered (`nvshmemx_cumodule_init`); a kernel of an unregistered module
//! reads a zeroed state and faults. So the only way to get a [`Module`] is
//! [`Nvshmem::load_module`] (and its siblings), which checks the module's
//! NVSHMEM version against the host library's and registers it, and the only
//! way to get a [`Kernel`] is from a `Module`. A module without NVSHMEM code
//! (no `nvshmemi_device_lib_version_d`) loads without registration.

use crate::error::{Error, Result};
use crate::runtime::image::ImageKind;
use crate::runtime::kernel::Kernel;
use crate::runtime::loaded::ModuleInner;
use crate::runtime::nvshmem::Nvshmem;
use cudarc::driver::{DriverError, result, sys};
use nvshmem_types::manifest::{KernelInfo, Manifest};
use nvshmem_types::{CudaVersion, Version};
use std::ffi::{CString, c_void};
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// The global every NVSHMEM device library defines: `{major, minor, patch}` as i32s.
const DEVICE_VERSION_GLOBAL: &str = "nvshmemi_device_lib_version_d";
/// NVSHMEM's device state, which `nvshmemx_cumodule_init` fills in.
const STATE_GLOBAL: &str = "nvshmemi_device_state_d";

/// Which image of a manifest's module to load.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ModuleImage {
    /// The cubin when the manifest has one for this GPU's architecture, else the PTX.
    #[default]
    Auto,
    /// The PTX (the driver compiles it, which takes a moment). A module the
    /// builder compiled separately (manifest `device_link: "separate"`) goes
    /// through the driver's linker, function by function, as its cubin was.
    Ptx,
    /// The cubin; an error if there is none.
    Cubin,
}

/// A loaded module: the kernels of one kernel crate, registered with NVSHMEM
/// when it has NVSHMEM device code. Unloaded (and unregistered) when it and
/// its kernels are dropped.
///
/// ```no_run
/// use nvshmem_host::Nvshmem;
/// let nv = Nvshmem::init()?;
/// let module = nv.load_module("ptx/nvshmem-3.4.5/sm_90/kernels.json")?;
/// let ring = module.kernel("ring_put")?;
/// # Ok::<(), nvshmem_host::Error>(())
/// ```
#[derive(Clone)]
pub struct Module {
    inner: Rc<ModuleInner>,
}

impl std::fmt::Debug for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Module")
            .field("what", &self.inner.what)
            .field("nvshmem", &self.inner.nvshmem.map(|v| v.to_string()))
            .field("kernels", &self.inner.manifest.kernels.len())
            .finish()
    }
}

impl Nvshmem {
    /// Loads the module described by a builder manifest (`<crate>.json`
    /// beside the PTX), or by the one manifest in a folder. Checks the
    /// manifest's and the module's NVSHMEM version against the host library's,
    /// then registers it with NVSHMEM. Prefers the cubin when it matches this
    /// GPU's architecture.
    ///
    /// ```no_run
    /// # let nv = nvshmem_host::Nvshmem::init()?;
    /// let module = nv.load_module("ptx/nvshmem-3.4.5/sm_90/kernels.json")?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn load_module(&self, manifest: impl AsRef<Path>) -> Result<Module> {
        self.load_module_with(manifest, ModuleImage::Auto)
    }

    /// [`Nvshmem::load_module`] for the kernel crate `crate_name` in `dir`
    /// (`dir/<crate_name>.json`, with `-` or `_`).
    pub fn load_module_in(&self, dir: impl AsRef<Path>, crate_name: &str) -> Result<Module> {
        self.load_module(find_manifest(dir.as_ref(), Some(crate_name))?)
    }

    /// [`Nvshmem::load_module`], choosing the image.
    pub fn load_module_with(
        &self,
        manifest: impl AsRef<Path>,
        image: ModuleImage,
    ) -> Result<Module> {
        let path = manifest_path(manifest.as_ref())?;
        let manifest = Manifest::read(&path).map_err(|reason| Error::ModuleLoad {
            what: path.display().to_string(),
            reason,
        })?;
        self.check_manifest_version(&manifest, &path.display().to_string())?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let cubin = manifest
            .cubin
            .as_ref()
            .map(|c| dir.join(c))
            .filter(|p| p.is_file());
        let arch_matches = self.gpu_arch()? == manifest.arch.number();
        let file = match (image, cubin) {
            (ModuleImage::Cubin, None) => {
                return Err(Error::ModuleLoad {
                    what: path.display().to_string(),
                    reason: "the manifest names no cubin (or the file is missing): ptxas was not found when it was built".into(),
                });
            }
            (ModuleImage::Cubin, Some(c)) => c,
            (ModuleImage::Auto, Some(c)) if arch_matches => c,
            _ => dir.join(&manifest.ptx),
        };
        let bytes = std::fs::read(&file).map_err(|e| Error::ModuleLoad {
            what: file.display().to_string(),
            reason: e.to_string(),
        })?;
        self.load_image(bytes, manifest, file.display().to_string())
    }

    /// Loads a module from an image in memory (PTX text, a cubin or a fatbin,
    /// say from `include_bytes!`) with its manifest. Checks and registers as
    /// [`Nvshmem::load_module`] does; a cubin or fatbin whose headers point
    /// past its end (truncated, or not one), a cubin string table without
    /// its final NUL, and a fat binary wrapper (a pointer to an image
    /// elsewhere) are an [`Error::ModuleLoad`]. The manifest must be the
    /// image's: launches check arguments against it. Past these checks the
    /// driver parses the image: load images you built or trust.
    ///
    /// ```no_run
    /// use nvshmem_types::manifest::Manifest;
    /// # let nv = nvshmem_host::Nvshmem::init()?;
    /// let manifest = Manifest::read("kernels.json".as_ref()).unwrap();
    /// let module = nv.load_module_image(include_bytes!("../../Cargo.toml"), manifest)?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn load_module_image(&self, image: &[u8], manifest: Manifest) -> Result<Module> {
        let what = format!("`{}` (image in memory)", manifest.crate_name);
        self.check_manifest_version(&manifest, &what)?;
        self.load_image(image.to_vec(), manifest, what)
    }

    fn check_manifest_version(&self, manifest: &Manifest, what: &str) -> Result<()> {
        let built = manifest.nvshmem_version;
        if built != self.version() {
            return Err(Error::VersionMismatch {
                what: format!("the manifest {what}"),
                expected: built.to_string(),
                found: self.version().to_string(),
                library: self.library_path().to_path_buf(),
            });
        }
        Ok(())
    }

    /// This GPU's `sm_NN` number.
    fn gpu_arch(&self) -> Result<u32> {
        self.inner.enter("Nvshmem::load_module")?;
        let (major, minor) = self
            .inner
            .ctx
            .compute_capability()
            .map_err(Error::driver("cuDeviceGetAttribute"))?;
        Ok(major as u32 * 10 + minor as u32)
    }

    fn load_image(&self, mut image: Vec<u8>, manifest: Manifest, what: String) -> Result<Module> {
        self.inner.enter("Nvshmem::load_module")?;
        let load_err = |reason: String| Error::ModuleLoad {
            what: what.clone(),
            reason,
        };
        let gpu = self.gpu_arch()?;
        if manifest.arch.number() > gpu {
            return Err(load_err(format!(
                "it was built for {}, newer than this GPU (sm_{gpu})",
                manifest.arch
            )));
        }
        // PTX is text that the driver reads up to a NUL; a cubin or fatbin
        // it reads as far as its headers say, so those must fit the image.
        let is_ptx = crate::runtime::image::classify(&image).map_err(load_err)? == ImageKind::Ptx;
        check_driver(&manifest, is_ptx, &what)?;
        if is_ptx && image.last() != Some(&0) {
            image.push(0);
        }
        let module = if is_ptx && manifest.is_separately_compiled() {
            link_with_log(&image)
        } else {
            load_with_log(&image)
        }
        .map_err(load_err)?;
        let unload = |e: Error| {
            // SAFETY: loaded above and not handed out.
            let _ = unsafe { result::module::unload(module) };
            e
        };

        let nvshmem = device_version(module).map_err(|e| unload(load_err(e)))?;
        if let Some(device) = nvshmem {
            if device != self.version() {
                return Err(unload(Error::VersionMismatch {
                    what: format!("module {what} (its {DEVICE_VERSION_GLOBAL})"),
                    expected: device.to_string(),
                    found: self.version().to_string(),
                    library: self.library_path().to_path_buf(),
                }));
            }
            // Registration fills in this global; NVSHMEM does not always
            // report its absence (an internalized or stripped module).
            if !has_global(module, STATE_GLOBAL) {
                return Err(unload(Error::ModuleNotRegistered {
                    what,
                    reason: format!("it has {DEVICE_VERSION_GLOBAL} but no {STATE_GLOBAL}"),
                }));
            }
            // SAFETY: NVSHMEM is initialized (enter) and the module is loaded
            // in its context.
            let status = unsafe { self.inner.lib.raw().nvshmemx_cumodule_init(module) };
            if status != 0 {
                return Err(unload(Error::ModuleNotRegistered {
                    what,
                    reason: format!("nvshmemx_cumodule_init returned {status}"),
                }));
            }
        }
        Ok(Module {
            inner: Rc::new(ModuleInner {
                nv: self.inner.clone(),
                module,
                what,
                manifest,
                nvshmem,
            }),
        })
    }
}

/// The builder manifest that `path` names: with `crate_name`, the kernel
/// crate's in folder `path` (`<crate_name>.json`, with `-` or `_`);
/// without, `path` itself or the one manifest in folder `path`. Works
/// without a GPU; [`Error::ManifestNotFound`] says what is there instead.
///
/// ```no_run
/// let m = nvshmem_host::find_manifest("ptx/nvshmem-3.4.5/sm_90".as_ref(), Some("kernels"))?;
/// # Ok::<(), nvshmem_host::Error>(())
/// ```
pub fn find_manifest(path: &Path, crate_name: Option<&str>) -> Result<PathBuf> {
    let Some(crate_name) = crate_name else {
        return manifest_path(path);
    };
    let candidates = [
        crate_name.to_string(),
        crate_name.replace('-', "_"),
        crate_name.replace('_', "-"),
    ];
    if path.is_file() {
        // A manifest file named with its crate: fine when the names agree.
        let stem = path.file_stem().unwrap_or_default().to_string_lossy();
        return if candidates.iter().any(|c| *c == stem) {
            Ok(path.to_path_buf())
        } else {
            Err(Error::ManifestNotFound {
                what: format!("`{crate_name}` in {}", path.display()),
                reason: format!(
                    "this file is the manifest of `{stem}`: pass its folder with crate_name, \
                     or a manifest file without it"
                ),
            })
        };
    }
    candidates
        .iter()
        .map(|n| path.join(format!("{n}.json")))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            let reason = if !path.is_dir() {
                "no such folder".to_string()
            } else if path.join("Cargo.toml").is_file() {
                KERNEL_CRATE_GIVEN.to_string()
            } else {
                let there = match manifests_in(path).unwrap_or_default().as_slice() {
                    [] => "it holds no builder manifest".to_string(),
                    found => format!("it holds the manifests of {}", crate_names(found)),
                };
                format!(
                    "there is no {crate_name}.json there ({there}); build the kernel crate with \
                     nvshmem-builder (nvshmem_rs.build() from Python) and pass the folder it writes"
                )
            };
            Error::ManifestNotFound {
                what: format!("`{crate_name}` in {}", path.display()),
                reason,
            }
        })
}

/// Why a kernel crate's own folder is not what loading takes.
const KERNEL_CRATE_GIVEN: &str = "this is a kernel crate, not what its build wrote: pass the \
     folder that holds `<crate>.json` (the builder's output, what nvshmem_rs.build() returns)";

/// The builder manifests (`*.json` files that parse as one) in folder `dir`, sorted.
fn manifests_in(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut manifests: Vec<PathBuf> = std::fs::read_dir(dir)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json") && Manifest::read(p).is_ok())
        .collect();
    manifests.sort();
    Ok(manifests)
}

/// The crates whose manifests `manifests` are: their file names' stems.
fn crate_names(manifests: &[PathBuf]) -> String {
    let names: Vec<String> = manifests
        .iter()
        .filter_map(|m| Some(m.file_stem()?.to_string_lossy().into_owned()))
        .collect();
    names.join(", ")
}

/// The manifest file: `path` itself, or the one `*.json` manifest in folder `path`.
fn manifest_path(path: &Path) -> Result<PathBuf> {
    let err = |reason: String| Error::ManifestNotFound {
        what: path.display().to_string(),
        reason,
    };
    if !path.is_dir() {
        return if path.is_file() {
            Ok(path.to_path_buf())
        } else {
            Err(err("no such file or folder".into()))
        };
    }
    let mut manifests = manifests_in(path).map_err(|e| err(e.to_string()))?;
    match manifests.len() {
        1 => Ok(manifests.remove(0)),
        0 => Err(err(if path.join("Cargo.toml").is_file() {
            KERNEL_CRATE_GIVEN.into()
        } else {
            "the folder holds no builder manifest (*.json): pass the folder the builder wrote \
             (what nvshmem_rs.build() returns from Python)"
                .into()
        })),
        _ => Err(err(format!(
            "the folder holds the manifests of {}; name the crate: load_module_in(dir, crate_name) \
             in Rust, crate_name=\"...\" in Python",
            crate_names(&manifests)
        ))),
    }
}

/// A buffer for the JIT's error log, and the two options that hand it to
/// the driver.
struct JitLog {
    buf: Vec<u8>,
    options: [sys::CUjit_option; 2],
    values: [*mut c_void; 2],
}

impl JitLog {
    fn new() -> Self {
        let mut buf = vec![0u8; 16 << 10];
        let values = [buf.as_mut_ptr() as *mut c_void, buf.len() as *mut c_void];
        JitLog {
            buf,
            options: [
                sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
                sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            ],
            values,
        }
    }

    /// A driver error with what the JIT logged, when it logged anything.
    fn error(&self, e: impl std::fmt::Display) -> String {
        let end = self.buf.iter().position(|&b| b == 0).unwrap_or(0);
        let log = String::from_utf8_lossy(&self.buf[..end]).trim().to_string();
        if log.is_empty() {
            e.to_string()
        } else {
            format!("{e}: {log}")
        }
    }
}

/// `cuModuleLoadDataEx` with the JIT's error log, so a PTX that does not
/// compile says why.
fn load_with_log(image: &[u8]) -> std::result::Result<sys::CUmodule, String> {
    let mut log = JitLog::new();
    let mut module = std::ptr::null_mut();
    // SAFETY: the image is a NUL-terminated PTX or a cubin; the option arrays
    // match, and the log buffer outlives the call.
    let status = unsafe {
        sys::cuModuleLoadDataEx(
            &mut module,
            image.as_ptr().cast(),
            log.options.len() as u32,
            log.options.as_mut_ptr(),
            log.values.as_mut_ptr(),
        )
    };
    status.result().map(|_| module).map_err(|e| log.error(e))
}

/// Compiles PTX through the driver's linker, function by function like the
/// builder's separate compilation (`ptxas -c` + `nvlink`), and loads the
/// result. For modules the builder compiled separately: `cuModuleLoadDataEx`
/// compiles PTX as one program, which for them takes minutes.
fn link_with_log(ptx: &[u8]) -> std::result::Result<sys::CUmodule, String> {
    let mut log = JitLog::new();
    let mut state = std::ptr::null_mut();
    // SAFETY: the option arrays match; the log buffer outlives the link state
    // (destroyed below, on every path).
    let created = unsafe {
        sys::cuLinkCreate_v2(
            log.options.len() as u32,
            log.options.as_mut_ptr(),
            log.values.as_mut_ptr(),
            &mut state,
        )
    };
    created.result().map_err(|e| log.error(e))?;
    let name = c"module.ptx";
    // SAFETY: `state` is a live link; the PTX is NUL-terminated and read
    // during the call; the cubin `cuLinkComplete` returns lives until
    // `cuLinkDestroy`, after the module is loaded from it.
    let linked = unsafe {
        sys::cuLinkAddData_v2(
            state,
            sys::CUjitInputType::CU_JIT_INPUT_PTX,
            ptx.as_ptr() as *mut c_void,
            ptx.len(),
            name.as_ptr(),
            0,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
        .result()
        .and_then(|_| {
            let (mut cubin, mut size) = (std::ptr::null_mut(), 0usize);
            sys::cuLinkComplete(state, &mut cubin, &mut size)
                .result()
                .map(|_| std::slice::from_raw_parts(cubin as *const u8, size))
        })
    };
    let loaded = match linked {
        Ok(cubin) => load_with_log(cubin),
        Err(e) => Err(log.error(e)),
    };
    // SAFETY: created above; nothing refers to its cubin any more.
    let _ = unsafe { sys::cuLinkDestroy(state) };
    loaded
}

/// Whether the module defines the global `name`.
fn has_global(module: sys::CUmodule, name: &str) -> bool {
    let name = CString::new(name).expect("no NUL in the name");
    // SAFETY: a loaded module.
    unsafe { result::module::get_global(module, name) }.is_ok()
}

/// Refuses an image the driver cannot load, before the driver answers with a
/// bare code: a cubin needs a driver of its toolkit's CUDA major or newer,
/// PTX one that knows its PTX ISA.
fn check_driver(manifest: &Manifest, is_ptx: bool, what: &str) -> Result<()> {
    let Some(toolkit) = manifest.cuda_toolkit else {
        return Ok(());
    };
    let driver = driver_version()?;
    let isa = manifest.ptx_isa.parse::<CudaVersion>().ok();
    let needs = match (is_ptx, isa) {
        (true, Some(isa)) => CudaVersion::for_ptx_isa(isa),
        _ => CudaVersion::new(toolkit.major, 0),
    };
    if driver >= needs {
        return Ok(());
    }
    Err(Error::DriverTooOld {
        what: what.to_string(),
        image: if is_ptx {
            format!("PTX ISA {}", manifest.ptx_isa)
        } else {
            "cubin".into()
        },
        toolkit: toolkit.to_string(),
        needs: needs.to_string(),
        driver: driver.to_string(),
    })
}

/// The CUDA version of the driver (`cuDriverGetVersion`).
fn driver_version() -> Result<CudaVersion> {
    let mut v = 0i32;
    // SAFETY: a valid out-pointer; the driver was loaded by init.
    unsafe { sys::cuDriverGetVersion(&mut v) }
        .result()
        .map_err(Error::driver("cuDriverGetVersion"))?;
    Ok(CudaVersion::from_driver(v))
}

/// Compares the kernel's own parameters (`cuFuncGetParamInfo`, drivers of
/// CUDA 12.4 and later; older ones skip the check) with the manifest's: a
/// manifest stale beside a rebuilt image would have launches pass the
/// driver fewer or other-sized arguments than the kernel reads.
fn check_params(func: sys::CUfunction, kernel: &KernelInfo, what: &str) -> Result<()> {
    if driver_version()? < CudaVersion::new(12, 4) {
        return Ok(());
    }
    let stale = |detail: String| Error::ModuleLoad {
        what: what.to_string(),
        reason: format!(
            "the manifest does not describe kernel `{}` of this image ({detail}): the manifest \
             is stale. Fix: rebuild the kernel crate, and load the manifest written with the image",
            kernel.name
        ),
    };
    let param = |i: usize| {
        let (mut offset, mut size) = (0usize, 0usize);
        // SAFETY: a function of a loaded module; valid out-pointers.
        unsafe { sys::cuFuncGetParamInfo(func, i, &mut offset, &mut size) }
            .result()
            .map(|()| size)
    };
    for (i, p) in kernel.params.iter().enumerate() {
        match param(i) {
            Ok(size) if size == p.size as usize => {}
            Ok(size) => {
                return Err(stale(format!(
                    "parameter {i} `{}` is {size} bytes, the manifest says {}",
                    p.name, p.size
                )));
            }
            Err(DriverError(sys::cudaError_enum::CUDA_ERROR_INVALID_VALUE)) => {
                return Err(stale(format!(
                    "it takes {i} parameters, the manifest lists {}",
                    kernel.params.len()
                )));
            }
            Err(e) => return Err(Error::driver("cuFuncGetParamInfo")(e)),
        }
    }
    match param(kernel.params.len()) {
        Err(DriverError(sys::cudaError_enum::CUDA_ERROR_INVALID_VALUE)) => Ok(()),
        Ok(_) => Err(stale(format!(
            "it takes more parameters than the {} the manifest lists",
            kernel.params.len()
        ))),
        Err(e) => Err(Error::driver("cuFuncGetParamInfo")(e)),
    }
}

/// The NVSHMEM version compiled into a module, or `None` when it has no NVSHMEM code.
fn device_version(module: sys::CUmodule) -> std::result::Result<Option<Version>, String> {
    let name = CString::new(DEVICE_VERSION_GLOBAL).expect("no NUL in the name");
    // SAFETY: a loaded module.
    let (ptr, bytes) = match unsafe { result::module::get_global(module, name) } {
        Ok(found) => found,
        Err(DriverError(sys::cudaError_enum::CUDA_ERROR_NOT_FOUND)) => return Ok(None),
        Err(e) => return Err(format!("reading {DEVICE_VERSION_GLOBAL}: {e}")),
    };
    if bytes < 12 {
        return Err(format!(
            "{DEVICE_VERSION_GLOBAL} is {bytes} bytes, not 3 x i32"
        ));
    }
    let mut version = [0i32; 3];
    // SAFETY: the global holds at least 12 bytes.
    unsafe { result::memcpy_dtoh_sync(&mut version, ptr) }
        .map_err(|e| format!("reading {DEVICE_VERSION_GLOBAL}: {e}"))?;
    let part =
        |v: i32| u32::try_from(v).map_err(|_| format!("{DEVICE_VERSION_GLOBAL} holds {version:?}"));
    Ok(Some(Version {
        major: part(version[0])?,
        minor: part(version[1])?,
        patch: part(version[2])?,
    }))
}

impl Module {
    /// The kernel `name`, with its parameters from the manifest.
    pub fn kernel(&self, name: &str) -> Result<Kernel> {
        let m = &self.inner;
        m.nv.enter("Module::kernel")?;
        let info = m
            .manifest
            .kernel(name)
            .cloned()
            .map_err(|e| Error::KernelNotFound {
                kernel: e.kernel,
                module: m.what.clone(),
                available: e.available.join(", "),
            })?;
        let cname = CString::new(name).map_err(|_| Error::KernelNotFound {
            kernel: name.into(),
            module: m.what.clone(),
            available: self.kernel_names().join(", "),
        })?;
        // SAFETY: a loaded module.
        let func =
            unsafe { result::module::get_function(m.module, cname) }.map_err(|e| match e.0 {
                sys::cudaError_enum::CUDA_ERROR_NOT_FOUND => Error::ModuleLoad {
                    what: m.what.clone(),
                    reason: format!(
                        "the manifest lists `{name}` but the module has no such entry: rebuild it"
                    ),
                },
                _ => Error::Driver {
                    call: "cuModuleGetFunction",
                    source: e,
                },
            })?;
        check_params(func, &info, &m.what)?;
        Ok(Kernel::new(self.inner.clone(), func, info))
    }

    /// The kernels the manifest lists.
    pub fn kernel_names(&self) -> Vec<&str> {
        self.inner
            .manifest
            .kernels
            .iter()
            .map(|k| k.name.as_str())
            .collect()
    }

    /// The builder's manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.inner.manifest
    }

    /// The NVSHMEM version of the module's device code, when it has any (and
    /// then it is registered with NVSHMEM).
    pub fn nvshmem_version(&self) -> Option<Version> {
        self.inner.nvshmem
    }

    /// Whether the module has NVSHMEM device code, registered with NVSHMEM.
    pub fn is_registered(&self) -> bool {
        self.inner.nvshmem.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_paths_are_resolved_or_explained() {
        let dir =
            std::env::temp_dir().join(format!("nvshmem-host-manifests-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let err = manifest_path(&dir).unwrap_err();
        assert!(err.to_string().contains("no builder manifest"), "{err}");

        let manifest = r#"{"format":1,"crate_name":"k","nvshmem_version":"3.4.5","arch":"sm_90",
            "ptx_isa":"8.3","ptx":"k.ptx","cubin":null,"kernels":[]}"#;
        std::fs::write(dir.join("k.json"), manifest).unwrap();
        std::fs::write(dir.join("other.json"), "{}").unwrap(); // not a manifest
        assert_eq!(manifest_path(&dir).unwrap(), dir.join("k.json"));
        assert_eq!(
            manifest_path(&dir.join("k.json")).unwrap(),
            dir.join("k.json")
        );

        std::fs::write(dir.join("k2.json"), manifest).unwrap();
        let err = manifest_path(&dir).unwrap_err().to_string();
        assert!(
            err.contains("the manifests of k, k2") && err.contains("crate_name="),
            "{err}"
        );
        assert!(
            manifest_path(&dir.join("missing.json"))
                .unwrap_err()
                .to_string()
                .contains("no such file")
        );
        // A crate name that is not there: the ones that are.
        let err = find_manifest(&dir, Some("kernels"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("the manifests of k, k2"), "{err}");
        assert_eq!(
            find_manifest(&dir, Some("k2")).unwrap(),
            dir.join("k2.json")
        );

        // The kernel crate's folder instead of its build output.
        let krate = dir.join("crate");
        std::fs::create_dir_all(&krate).unwrap();
        std::fs::write(krate.join("Cargo.toml"), "[package]").unwrap();
        let err = manifest_path(&krate).unwrap_err().to_string();
        assert!(
            err.contains("a kernel crate, not what its build wrote"),
            "{err}"
        );
        let err = find_manifest(&krate, Some("k")).unwrap_err().to_string();
        assert!(
            err.contains("a kernel crate, not what its build wrote"),
            "{err}"
        );
        let err = find_manifest(&dir.join("nowhere"), Some("k"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("no such folder"), "{err}");
        // A manifest file with its crate's name, and with another.
        assert_eq!(
            find_manifest(&dir.join("k.json"), Some("k")).unwrap(),
            dir.join("k.json")
        );
        let err = find_manifest(&dir.join("k.json"), Some("k2"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("the manifest of `k`"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
