//! Finding and loading NVSHMEM's host library, `libnvshmem_host.so.3`, and thin
//! `Result`-returning wrappers over its functions.
//!
//! # Where the library comes from
//! The first match wins:
//! 1. [`LibraryRequest::home`] (from [`InitOptions::nvshmem_home`](crate::InitOptions::nvshmem_home));
//! 2. the `NVSHMEM_HOME` environment variable at run time (an error if it does not
//!    hold NVSHMEM: it is never skipped silently);
//! 3. the library found when this crate was built (`host/build.rs` runs the
//!    builder's discovery and bakes the path in), if that file still exists;
//! 4. run-time discovery ([`nvshmem_types::install`]): Python's
//!    `site-packages/nvidia/nvshmem` (the `nvidia-nvshmem-cu13` wheel), then the
//!    per-user cache that `nvshmem-builder` fills (`~/.cache/nvshmem-rs`).
//!
//! When a version is requested ([`LibraryRequest::version`]), candidates of
//! other versions are skipped (an explicit home of another version is an error).
//!
//! The library is loaded once per process and never unloaded: NVSHMEM's own
//! threads and plugins outlive any one `Nvshmem`.

use crate::env::Lookup;
use crate::error::{Error, Result};
use crate::sys::{self, InitAttr, NvshmemLib, VersionBindings, coll::CollLib};
use nvshmem_types::install::{Installation, Query, Source};
use nvshmem_types::{SupportedVersions, Version};
use std::ffi::{c_int, c_void};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The host library's path as found when this crate was built (empty if none was).
const BUILD_LIBRARY: &str = env!("NVSHMEM_HOST_BUILD_LIBRARY");
/// Its version (empty if none was found).
const BUILD_VERSION: &str = env!("NVSHMEM_HOST_BUILD_VERSION");

/// What to look for.
///
/// ```
/// use nvshmem_host::library::LibraryRequest;
/// let req = LibraryRequest::default().version("3.4.5".parse().unwrap());
/// ```
#[derive(Clone, Debug, Default)]
pub struct LibraryRequest {
    home: Option<PathBuf>,
    version: Option<Version>,
}

impl LibraryRequest {
    /// Use the NVSHMEM installation in `dir` (the folder with `include/` and `lib/`).
    ///
    /// Its `lib/libnvshmem_host.so.*` is loaded and called as NVSHMEM: like
    /// `LD_LIBRARY_PATH` or `NVSHMEM_HOME`, the folder is trusted to hold
    /// NVSHMEM's own library (the version check reads what it reports).
    pub fn home(mut self, dir: impl Into<PathBuf>) -> Self {
        self.home = Some(dir.into());
        self
    }

    /// Accept only this NVSHMEM version (that of your kernels' manifest).
    pub fn version(mut self, version: Version) -> Self {
        self.version = Some(version);
        self
    }
}

/// How the library was found.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LibrarySource {
    /// [`LibraryRequest::home`].
    Explicit,
    /// The `NVSHMEM_HOME` environment variable.
    NvshmemHome,
    /// The path baked in when this crate was built.
    BuildTime,
    /// Run-time discovery, and where it found it.
    Discovered(Source),
    /// Already loaded by another component of the process (PyTorch, say):
    /// see [`HostLibrary::attach`].
    Attached,
}

/// A library file chosen by [`locate`], not yet loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Located {
    /// The `libnvshmem_host.so.3` file.
    pub path: PathBuf,
    /// Its version as its headers say, where known before loading.
    pub version: Option<Version>,
    /// How it was found.
    pub source: LibrarySource,
}

/// Chooses the host library for `request`, in the order of this module's docs.
///
/// ```no_run
/// use nvshmem_host::library::{locate, LibraryRequest};
/// let found = locate(&LibraryRequest::default())?;
/// println!("{} ({:?})", found.path.display(), found.source);
/// # Ok::<(), nvshmem_host::Error>(())
/// ```
pub fn locate(request: &LibraryRequest) -> Result<Located> {
    locate_with(
        request,
        &crate::env::process,
        (BUILD_LIBRARY, BUILD_VERSION),
    )
}

/// [`locate`] with its inputs explicit: the environment and the build-time
/// library `(path, version)`.
pub(crate) fn locate_with(
    request: &LibraryRequest,
    env: Lookup,
    build: (&str, &str),
) -> Result<Located> {
    let not_found = |source| Error::NvshmemNotFound { source };
    let with_version = |q: Query| match request.version {
        Some(v) => q.version(v),
        None => q,
    };
    let explicit = request
        .home
        .clone()
        .map(|h| (h, LibrarySource::Explicit))
        .or_else(|| {
            env("NVSHMEM_HOME")
                .filter(|v| !v.is_empty())
                .map(|h| (h.into(), LibrarySource::NvshmemHome))
        });
    if let Some((home, source)) = explicit {
        let install =
            Installation::find(&with_version(Query::default().home(home))).map_err(not_found)?;
        return Ok(Located {
            path: install.host_library(),
            version: Some(install.version),
            source,
        });
    }

    let (build_path, build_version) = build;
    let build_version: Option<Version> = build_version.parse().ok();
    if !build_path.is_empty()
        && Path::new(build_path).is_file()
        && request
            .version
            .is_none_or(|want| Some(want) == build_version)
    {
        return Ok(Located {
            path: build_path.into(),
            version: build_version,
            source: LibrarySource::BuildTime,
        });
    }

    let install =
        Installation::find(&with_version(Query::default().ignore_env())).map_err(not_found)?;
    Ok(Located {
        path: install.host_library(),
        version: Some(install.version),
        source: LibrarySource::Discovered(install.source),
    })
}

/// A loaded NVSHMEM host library. There is at most one per process.
///
/// ```no_run
/// let lib = nvshmem_host::library::HostLibrary::load(&Default::default())?;
/// println!("NVSHMEM {} from {}", lib.version(), lib.path().display());
/// # Ok::<(), nvshmem_host::Error>(())
/// ```
pub struct HostLibrary {
    api: NvshmemLib,
    /// What differs in this version's API.
    bindings: &'static VersionBindings,
    /// Typed stream collectives (`sys::coll`).
    pub(crate) coll: CollLib,
    path: PathBuf,
    version: Version,
    source: LibrarySource,
}

impl std::fmt::Debug for HostLibrary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostLibrary")
            .field("path", &self.path)
            .field("version", &self.version)
            .field("source", &self.source)
            .finish()
    }
}

/// The library this process loaded, once it has.
static LOADED: Mutex<Option<&'static HostLibrary>> = Mutex::new(None);

impl HostLibrary {
    /// The process's host library: the one already loaded, else the one
    /// [`locate`] finds, loaded now. Works without a GPU.
    ///
    /// A request for another version (or another explicit home) than the
    /// library already loaded is an error: a process can hold only one NVSHMEM.
    pub fn load(request: &LibraryRequest) -> Result<&'static HostLibrary> {
        let mut loaded = LOADED.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(lib) = *loaded {
            if let Some(want) = request.version
                && want != lib.version
            {
                return Err(Error::VersionMismatch {
                    what: "the request (an NVSHMEM library is already loaded in this process)"
                        .into(),
                    expected: want.to_string(),
                    found: lib.version.to_string(),
                    library: lib.path.clone(),
                });
            }
            if let Some(home) = &request.home {
                let same = std::fs::canonicalize(home)
                    .ok()
                    .zip(
                        lib.path
                            .parent()
                            .and_then(Path::parent)
                            .and_then(|r| std::fs::canonicalize(r).ok()),
                    )
                    .is_some_and(|(a, b)| a == b);
                if !same {
                    return Err(Error::InvalidArgument {
                        reason: format!(
                            "NVSHMEM from {} was asked for, but {} is already loaded in this process; \
                             a process can load only one NVSHMEM",
                            home.display(),
                            lib.path.display()
                        ),
                    });
                }
            }
            return Ok(lib);
        }
        let located = locate(request)?;
        let lib: &'static HostLibrary =
            Box::leak(Box::new(Self::open(&located.path, located.source)?));
        if let Some(want) = request.version.or(located.version)
            && want != lib.version
        {
            // The headers beside it say one version, the binary another.
            return Err(Error::VersionMismatch {
                what: format!("the installation's headers ({})", located.path.display()),
                expected: want.to_string(),
                found: lib.version.to_string(),
                library: lib.path.clone(),
            });
        }
        *loaded = Some(lib);
        Ok(lib)
    }

    /// The host library that another component of this process (PyTorch's
    /// symmetric memory, say) already loaded, found by its file name without
    /// loading a second copy (`dlopen` with `RTLD_NOLOAD`). It becomes the
    /// process's library, as [`HostLibrary::load`]'s. [`Error::NotAttachable`]
    /// when none is loaded. Works without a GPU.
    ///
    /// ```no_run
    /// let lib = nvshmem_host::library::HostLibrary::attach()?;
    /// println!("NVSHMEM {} already loaded from {}", lib.version(), lib.path().display());
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn attach() -> Result<&'static HostLibrary> {
        let mut loaded = LOADED.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(lib) = *loaded {
            return Ok(lib);
        }
        let name = format!(
            "libnvshmem_host.so.{}",
            nvshmem_types::DEFAULT_VERSION.major
        );
        let path = loaded_path(&name).ok_or_else(|| Error::NotAttachable {
            reason: format!("no {name} is loaded in this process"),
            fix: ATTACH_FIX,
        })?;
        let lib: &'static HostLibrary = Box::leak(Box::new(Self::open_with(
            &path,
            LibrarySource::Attached,
            libc::RTLD_NOLOAD,
        )?));
        *loaded = Some(lib);
        Ok(lib)
    }

    /// Opens `path` and binds the functions of its version.
    fn open(path: &Path, source: LibrarySource) -> Result<HostLibrary> {
        Self::open_with(path, source, 0)
    }

    /// [`HostLibrary::open`] with extra `dlopen` flags (`RTLD_NOLOAD` to attach).
    fn open_with(path: &Path, source: LibrarySource, flags: c_int) -> Result<HostLibrary> {
        let unusable = |reason: String| Error::NvshmemUnusable {
            path: path.to_path_buf(),
            reason,
        };
        use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};
        // RTLD_GLOBAL: NVSHMEM's plugins (bootstrap, transports) are dlopened by
        // the host library and may resolve its symbols.
        // SAFETY: loading runs the library's initializers; NVSHMEM's only set up
        // static state and start nothing.
        let library = unsafe { Library::open(Some(path), RTLD_NOW | RTLD_GLOBAL | flags) }
            .map_err(|e| unusable(e.to_string()))?;
        let version = {
            type VersionInfo = unsafe extern "C" fn(*mut c_int, *mut c_int, *mut c_int);
            // SAFETY: the symbol has this signature in every NVSHMEM 2.x/3.x header.
            let get = unsafe { library.get::<VersionInfo>(b"nvshmemx_vendor_get_version_info\0") }
                .map_err(|e| unusable(e.to_string()))?;
            let (mut major, mut minor, mut patch) = (0, 0, 0);
            // SAFETY: it only writes the three ints; it needs no initialization or GPU.
            unsafe { get(&mut major, &mut minor, &mut patch) };
            let non_negative = |v: c_int| u32::try_from(v).unwrap_or(0);
            Version {
                major: non_negative(major),
                minor: non_negative(minor),
                patch: non_negative(patch),
            }
        };
        let bind_err =
            |e: libloading::Error| unusable(format!("{e} (is it a complete NVSHMEM {version}?)"));
        // A second handle to the same library (dlopen counts references).
        // SAFETY: as above; the library is already loaded.
        let again = unsafe { Library::open(Some(path), RTLD_NOW | RTLD_GLOBAL | flags) }
            .map_err(|e| unusable(e.to_string()))?;
        let Some(bindings) = sys::bindings_for(version) else {
            return Err(Error::UnsupportedNvshmemVersion {
                version: version.to_string(),
                path: path.to_path_buf(),
                supported: SupportedVersions.to_string(),
            });
        };
        // SAFETY: the table's signatures are those of every supported
        // version's headers (gen-bindings.sh and the sys tests check that).
        let api = unsafe { NvshmemLib::from_library(library) }.map_err(bind_err)?;
        let coll = CollLib::new(again);
        Ok(HostLibrary {
            api,
            bindings,
            coll,
            path: path.to_path_buf(),
            version,
            source,
        })
    }

    /// The library file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its version, from `nvshmemx_vendor_get_version_info`.
    pub fn version(&self) -> Version {
        self.version
    }

    /// How it was found.
    pub fn source(&self) -> &LibrarySource {
        &self.source
    }

    /// The bindings' version (the layouts used for its structs).
    pub fn bindings_version(&self) -> Version {
        self.bindings.version
    }

    /// The function table, NVSHMEM's own API: every function is `unsafe`
    /// with NVSHMEM's preconditions (initialized, valid symmetric addresses,
    /// collective calls made by every PE in the same order).
    pub fn raw(&self) -> &NvshmemLib {
        &self.api
    }

    /// `nvshmemx_init_status()` says NVSHMEM is initialized.
    pub(crate) fn is_initialized(&self) -> bool {
        // SAFETY: reads a status word; valid before and after initialization.
        let status = unsafe { self.api.nvshmemx_init_status() };
        status >= sys::NVSHMEM_STATUS_IS_INITIALIZED as c_int
    }

    /// `nvshmemx_init_status()` says several PEs share a GPU without MPS.
    pub(crate) fn is_limited_mpg(&self) -> bool {
        // SAFETY: as above.
        let status = unsafe { self.api.nvshmemx_init_status() };
        status == sys::NVSHMEM_STATUS_LIMITED_MPG as c_int
    }

    /// `nvshmemx_get_uniqueid`: a fresh id; the bootstrap root listens in this process.
    pub(crate) fn get_uniqueid(&self) -> Result<[u8; 128]> {
        // NVSHMEM does not say the call is thread-safe, and `UniqueId::generate`
        // is a safe function that any thread may call.
        static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
        let mut id = crate::UniqueId::zeroed();
        // SAFETY: `id` is 128 bytes, 8-aligned: the layout of nvshmemx_uniqueid_t
        // in every version (checked by the sys tests).
        let status = unsafe { self.api.nvshmemx_get_uniqueid(id.as_mut_ptr().cast()) };
        if status != 0 {
            return Err(Error::NvshmemCall {
                call: "nvshmemx_get_uniqueid",
                status,
            });
        }
        Ok(*id.as_bytes())
    }

    /// `nvshmemx_hostlib_init_attr`, with the attributes from the version's
    /// `NVSHMEMX_INIT_ATTR_INITIALIZER` and, for the UID bootstrap,
    /// `nvshmemx_set_attr_uniqueid_args`. Returns NVSHMEM's status.
    ///
    /// # Safety
    /// A CUDA context must be current; NVSHMEM must not be initialized.
    pub(crate) unsafe fn init(
        &self,
        uid: Option<(u32, u32, &crate::UniqueId)>,
    ) -> std::result::Result<(), (&'static str, i32)> {
        let mut attr = InitAttr::initializer(self.bindings);
        let mut flags = 0;
        if let Some((rank, n_pes, id)) = uid {
            // SAFETY: `attr` holds this version's initializer; `id` lives across
            // the init call, which reads it through `attr`.
            let status = unsafe {
                self.api.nvshmemx_set_attr_uniqueid_args(
                    rank as c_int,
                    n_pes as c_int,
                    id.as_ptr().cast(),
                    &mut attr,
                )
            };
            if status != 0 {
                return Err(("nvshmemx_set_attr_uniqueid_args", status));
            }
            flags |= sys::NVSHMEMX_INIT_WITH_UNIQUEID as u32;
        }
        // SAFETY: the caller made a context current; `attr` is well formed.
        match unsafe { self.api.nvshmemx_hostlib_init_attr(flags, &mut attr) } {
            0 => Ok(()),
            status => Err(("nvshmemx_hostlib_init_attr", status)),
        }
    }
}

/// What [`Error::NotAttachable`] suggests.
pub(crate) const ATTACH_FIX: &str = "in PyTorch, set up symmetric memory first \
    (symm_mem.set_backend(\"NVSHMEM\"), symm_mem.empty(...), symm_mem.rendezvous(t, group)); \
    without a framework that owns NVSHMEM, initialize it yourself (Nvshmem::init, nvshmem_rs.init())";

/// The file of the library `name` when this process has loaded it, without
/// loading it otherwise.
fn loaded_path(name: &str) -> Option<PathBuf> {
    use libc::RTLD_NOLOAD;
    use libloading::os::unix::{Library, RTLD_NOW};
    // SAFETY: RTLD_NOLOAD loads nothing: it only returns a handle to a
    // library that is already loaded (and initialized).
    let library = unsafe { Library::open(Some(name), RTLD_NOW | RTLD_NOLOAD) }.ok()?;
    // SAFETY: only the symbol's address is used.
    let symbol =
        unsafe { library.get::<*const c_void>(b"nvshmemx_vendor_get_version_info\0") }.ok()?;
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: a valid address inside a loaded library, and a writable Dl_info.
    let found = unsafe { libc::dladdr(*symbol, &mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dladdr's file name is a NUL-terminated string owned by the loader.
    let file = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
    use std::os::unix::ffi::OsStrExt;
    Some(PathBuf::from(std::ffi::OsStr::from_bytes(file.to_bytes())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::of as env_of;

    #[test]
    fn attaching_without_a_loaded_library_says_how_to_get_one() {
        // Nothing in this test process loads NVSHMEM by its soname first.
        assert_eq!(loaded_path("libnvshmem_host_not_here.so.3"), None);
        let err = Error::NotAttachable {
            reason: "no libnvshmem_host.so.3 is loaded in this process".into(),
            fix: ATTACH_FIX,
        };
        let msg = err.to_string();
        assert!(
            msg.contains("symm_mem.set_backend") && msg.contains("nvshmem_rs.init()"),
            "{msg}"
        );
    }

    #[test]
    fn nvshmem_home_pointing_nowhere_is_not_found_with_the_install_hint() {
        let env = env_of(&[("NVSHMEM_HOME", "/nonexistent/nvshmem")]);
        let err = locate_with(&LibraryRequest::default(), &env, ("", "")).unwrap_err();
        assert!(matches!(err, Error::NvshmemNotFound { .. }), "{err:?}");
        let msg = err.to_string();
        assert!(msg.contains("/nonexistent/nvshmem"), "{msg}");
        assert!(msg.contains("NVSHMEM_HOME"), "{msg}");
    }

    #[test]
    fn an_explicit_home_wins_over_nvshmem_home() {
        let Some(nv) = nvshmem_builder::testing::nvshmem("3.4.5") else {
            return;
        };
        let env = env_of(&[("NVSHMEM_HOME", "/nonexistent")]);
        let found = locate_with(&LibraryRequest::default().home(&nv.root), &env, ("", "")).unwrap();
        assert_eq!(found.source, LibrarySource::Explicit);
        assert_eq!(found.version, Some("3.4.5".parse().unwrap()));
        assert!(found.path.ends_with("lib/libnvshmem_host.so.3"));
    }

    #[test]
    fn an_explicit_home_of_another_version_is_an_error() {
        let Some(nv) = nvshmem_builder::testing::nvshmem("3.8.0") else {
            return;
        };
        let req = LibraryRequest::default()
            .home(&nv.root)
            .version("3.4.5".parse().unwrap());
        let err = locate_with(&req, &env_of(&[]), ("", "")).unwrap_err();
        assert!(err.to_string().contains("3.4.5"), "{err}");
    }

    #[test]
    fn the_build_time_library_is_used_when_it_exists_and_matches() {
        let (Some(nv), Some(_)) = (
            nvshmem_builder::testing::nvshmem("3.4.5"),
            nvshmem_builder::testing::nvshmem("3.8.0"),
        ) else {
            return;
        };
        let lib = nv.host_library();
        let lib_str = lib.to_str().unwrap();
        let found =
            locate_with(&LibraryRequest::default(), &env_of(&[]), (lib_str, "3.4.5")).unwrap();
        assert_eq!(found.source, LibrarySource::BuildTime);
        // Asking for another version skips it and discovers it.
        let req = LibraryRequest::default().version("3.8.0".parse().unwrap());
        let found = locate_with(&req, &env_of(&[]), (lib_str, "3.4.5")).unwrap();
        assert!(
            matches!(found.source, LibrarySource::Discovered(_)),
            "{found:?}"
        );
        assert_eq!(found.version, Some("3.8.0".parse().unwrap()));
    }

    #[test]
    fn a_missing_build_time_library_falls_back_to_discovery() {
        if nvshmem_builder::testing::nvshmem("3.4.5").is_none() {
            return;
        }
        let found = locate_with(
            &LibraryRequest::default(),
            &env_of(&[]),
            ("/gone/libnvshmem_host.so.3", "3.4.5"),
        )
        .unwrap();
        assert!(
            matches!(found.source, LibrarySource::Discovered(_)),
            "{found:?}"
        );
    }

    #[test]
    fn an_unsupported_version_names_it_and_the_supported_ones() {
        let req = LibraryRequest::default().version("9.9.9".parse().unwrap());
        let err = locate_with(&req, &env_of(&[]), ("", "")).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("9.9.9")
                && msg.contains(&SupportedVersions.to_string())
                && !msg.contains("==9.9.9"),
            "{msg}"
        );
    }

    #[test]
    fn opening_a_file_that_is_not_a_library_is_unusable() {
        let err =
            HostLibrary::open(Path::new("/etc/hostname"), LibrarySource::Explicit).unwrap_err();
        assert!(matches!(err, Error::NvshmemUnusable { .. }), "{err:?}");
        assert!(
            err.to_string().contains("pip install nvidia-nvshmem-cu13"),
            "{err}"
        );
    }

    /// Every supported version's library that this machine has (CUDA 13's;
    /// CI fetches 3.4.5, 3.7.2 and 3.8.0), opened (without registering it as
    /// the process's library).
    fn bundled_libraries() -> Vec<(String, HostLibrary)> {
        let mut libs = Vec::new();
        for info in nvshmem_types::SUPPORTED_VERSIONS {
            let v = info.version.to_string();
            let cuda = nvshmem_types::DEFAULT_CUDA;
            if let Some(nv) = nvshmem_builder::testing::fetched(info.version, cuda) {
                let lib = HostLibrary::open(&nv.host_library(), LibrarySource::Explicit).unwrap();
                libs.push((v, lib));
            }
        }
        libs
    }

    /// Looks up both typed reductions of `O` over `T`; counts them.
    fn has_reduce<T, O: nvshmem_types::ReduceOp<T>>(lib: &HostLibrary, n: &mut usize) {
        for kind in ["reduce", "reducescatter"] {
            // SAFETY: only looked up, never called.
            if let Err(e) = unsafe { lib.coll.reduce_fn::<T>(O::NAME, kind) } {
                panic!(
                    "NVSHMEM {}: {}_{kind}_on_stream: {e}",
                    lib.version(),
                    O::NAME
                );
            }
            *n += 1;
        }
    }

    #[test]
    fn every_typed_host_reduction_is_exported_by_both_versions() {
        use half::{bf16, f16};
        use nvshmem_types::{And, Max, Min, Or, Prod, Sum, Xor};
        macro_rules! each_pair {
            ($lib:expr, $n:expr; $($op:ident: [$($t:ty),*];)*) => {
                $($( has_reduce::<$t, $op>($lib, $n); )*)*
            };
        }
        for (_, lib) in bundled_libraries() {
            let mut n = 0;
            each_pair! { &lib, &mut n;
                And: [i8, i16, i32, i64, u8, u16, u32, u64, usize];
                Or: [i8, i16, i32, i64, u8, u16, u32, u64, usize];
                Xor: [i8, i16, i32, i64, u8, u16, u32, u64, usize];
                Min: [i8, i16, i32, i64, u8, u16, u32, u64, usize, f32, f64, f16, bf16];
                Max: [i8, i16, i32, i64, u8, u16, u32, u64, usize, f32, f64, f16, bf16];
                Sum: [i8, i16, i32, i64, u8, u16, u32, u64, usize, f32, f64, f16, bf16];
                Prod: [i8, i16, i32, i64, u8, u16, u32, u64, usize, f32, f64, f16, bf16];
            }
            assert_eq!(n, 2 * (3 * 9 + 4 * 13));
        }
    }

    #[test]
    fn both_bundled_versions_load_and_report_their_version() {
        for (v, lib) in bundled_libraries() {
            assert_eq!(lib.version().to_string(), v);
            assert_eq!(lib.bindings_version().to_string(), v);
            assert!(!lib.is_initialized());
        }
    }
}
