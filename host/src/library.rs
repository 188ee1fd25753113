//! Finding and loading NVSHMEM's host library, `libnvshmem_host.so.3`, and thin
//! `Result`-returning wrappers over its functions.
//!
//! # Where the library comes from
//! The first match wins:
//! 1. [`LibraryRequest::home`] (from [`Builder::nvshmem_home`](crate::Builder::nvshmem_home));
//! 2. the `NVSHMEM_HOME` environment variable at run time (an error if it does not
//!    hold NVSHMEM: it is never skipped silently);
//! 3. the library found when this crate was built (`host/build.rs` runs the
//!    builder's discovery and bakes the path in), if that file still exists;
//! 4. run-time discovery ([`nvshmem_types::install`]): the project cache
//!    `.deps/nvshmem-*` above the current folder or the executable, Python's
//!    `site-packages/nvidia/nvshmem` (the `nvidia-nvshmem-cu13` wheel), system folders.
//!
//! When a version is requested ([`LibraryRequest::version`]), candidates of
//! other versions are skipped (an explicit home of another version is an error).
//!
//! The library is loaded once per process and never unloaded: NVSHMEM's own
//! threads and plugins outlive any one `Nvshmem`.

use crate::error::{Error, Result};
use crate::sys::{coll::CollLib, v3_4_5, v3_8_0};
use nvshmem_types::Version;
use nvshmem_types::install::{Installation, Query, Source};
use std::ffi::{OsString, c_int, c_void};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The NVSHMEM versions this crate has bindings for (`src/sys/`).
pub const SUPPORTED_VERSIONS: &[Version] = &[
    Version {
        major: 3,
        minor: 4,
        patch: 5,
    },
    Version {
        major: 3,
        minor: 8,
        patch: 0,
    },
];

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
    /// ```
    /// # use nvshmem_host::library::LibraryRequest;
    /// let req = LibraryRequest::default().home("/opt/nvshmem");
    /// ```
    pub fn home(mut self, dir: impl Into<PathBuf>) -> Self {
        self.home = Some(dir.into());
        self
    }

    /// Accept only this NVSHMEM version (that of your kernels' manifest).
    ///
    /// ```
    /// # use nvshmem_host::library::LibraryRequest;
    /// let req = LibraryRequest::default().version("3.8.0".parse().unwrap());
    /// ```
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
    let cwd = std::env::current_dir().ok();
    let exe_dir = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf));
    let start_dirs: Vec<PathBuf> = cwd.into_iter().chain(exe_dir).collect();
    locate_with(
        request,
        &|name| std::env::var_os(name),
        (BUILD_LIBRARY, BUILD_VERSION),
        &start_dirs,
    )
}

/// [`locate`] with its inputs explicit: the environment, the build-time library
/// `(path, version)`, and the folders to search for the project cache from.
pub(crate) fn locate_with(
    request: &LibraryRequest,
    env: &dyn Fn(&str) -> Option<OsString>,
    build: (&str, &str),
    start_dirs: &[PathBuf],
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

    let mut first_err = None;
    let dirs: Vec<Option<&PathBuf>> = if start_dirs.is_empty() {
        vec![None]
    } else {
        start_dirs.iter().map(Some).collect()
    };
    for dir in dirs {
        let mut query = with_version(Query::default().ignore_env());
        if let Some(dir) = dir {
            query = query.project_dir(dir);
        }
        match Installation::find(&query) {
            Ok(install) => {
                return Ok(Located {
                    path: install.host_library(),
                    version: Some(install.version),
                    source: LibrarySource::Discovered(install.source),
                });
            }
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    Err(not_found(first_err.expect("at least one search ran")))
}

/// The bindings for one NVSHMEM version (see `src/sys/`).
enum Api {
    V3_4_5(v3_4_5::NvshmemLib),
    V3_8_0(v3_8_0::NvshmemLib),
}

/// Calls a function that has the same signature in every version's bindings.
macro_rules! call {
    ($lib:expr, $f:ident($($arg:expr),* $(,)?)) => {
        match &$lib.api {
            Api::V3_4_5(l) => l.$f($($arg),*),
            Api::V3_8_0(l) => l.$f($($arg),*),
        }
    };
}

/// A loaded NVSHMEM host library. There is at most one per process.
///
/// ```no_run
/// let lib = nvshmem_host::library::HostLibrary::load(&Default::default())?;
/// println!("NVSHMEM {} from {}", lib.version(), lib.path().display());
/// # Ok::<(), nvshmem_host::Error>(())
/// ```
pub struct HostLibrary {
    api: Api,
    /// Team splits and typed stream collectives (`sys::coll`).
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
    ///
    /// ```no_run
    /// # use nvshmem_host::library::{HostLibrary, LibraryRequest};
    /// let lib = HostLibrary::load(&LibraryRequest::default())?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
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

    /// Opens `path` and binds the functions of its version.
    fn open(path: &Path, source: LibrarySource) -> Result<HostLibrary> {
        let unusable = |reason: String| Error::NvshmemUnusable {
            path: path.to_path_buf(),
            reason,
        };
        use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};
        // RTLD_GLOBAL: NVSHMEM's plugins (bootstrap, transports) are dlopened by
        // the host library and may resolve its symbols.
        // SAFETY: loading runs the library's initializers; NVSHMEM's only set up
        // static state and start nothing.
        let library = unsafe { Library::open(Some(path), RTLD_NOW | RTLD_GLOBAL) }
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
        let again = unsafe { Library::open(Some(path), RTLD_NOW | RTLD_GLOBAL) }
            .map_err(|e| unusable(e.to_string()))?;
        // The newest bindings not newer than the library: struct versions only grow,
        // and NVSHMEM accepts older struct versions.
        let api = match version {
            v if v.major == 3 && v >= SUPPORTED_VERSIONS[1] => {
                // SAFETY: the bindings were generated from this version's headers.
                Api::V3_8_0(unsafe { v3_8_0::NvshmemLib::from_library(library) }.map_err(bind_err)?)
            }
            v if v.major == 3
                && v >= Version {
                    major: 3,
                    minor: 4,
                    patch: 0,
                } =>
            {
                // SAFETY: as above, for 3.4.
                Api::V3_4_5(unsafe { v3_4_5::NvshmemLib::from_library(library) }.map_err(bind_err)?)
            }
            v => {
                let supported = SUPPORTED_VERSIONS
                    .iter()
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>()
                    .join(", ");
                return Err(Error::UnsupportedNvshmemVersion {
                    version: v.to_string(),
                    path: path.to_path_buf(),
                    supported,
                });
            }
        };
        // SAFETY: a 3.4+ host library (checked above).
        let coll = unsafe { CollLib::from_library(again) }.map_err(bind_err)?;
        Ok(HostLibrary {
            api,
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
        match self.api {
            Api::V3_4_5(_) => SUPPORTED_VERSIONS[0],
            Api::V3_8_0(_) => SUPPORTED_VERSIONS[1],
        }
    }

    /// `nvshmemx_init_status()`: 0 when NVSHMEM is not initialized.
    pub(crate) fn init_status(&self) -> i32 {
        // SAFETY: reads a status word; valid before and after initialization.
        unsafe { call!(self, nvshmemx_init_status()) }
    }

    /// `nvshmemx_get_uniqueid`: a fresh id; the bootstrap root listens in this process.
    pub(crate) fn get_uniqueid(&self) -> Result<[u8; 128]> {
        let mut id = crate::UniqueId::zeroed();
        let status = match &self.api {
            // SAFETY: `id` is 128 bytes, 8-aligned, the layout of nvshmemx_uniqueid_t
            // in every version (checked by the sys tests).
            Api::V3_4_5(l) => unsafe { l.nvshmemx_get_uniqueid(id.as_mut_ptr().cast()) },
            Api::V3_8_0(l) => unsafe { l.nvshmemx_get_uniqueid(id.as_mut_ptr().cast()) },
        };
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
        macro_rules! init_with {
            ($l:expr, $v:ident) => {{
                let mut attr = $v::nvshmemx_init_attr_t::init_attr_initializer();
                let mut flags = 0;
                if let Some((rank, n_pes, id)) = uid {
                    let (rank, n_pes) = (rank as c_int, n_pes as c_int);
                    // SAFETY: `attr` came from the initializer; `id` lives across the init
                    // call, which reads it through `attr`.
                    let status = unsafe {
                        $l.nvshmemx_set_attr_uniqueid_args(
                            rank,
                            n_pes,
                            id.as_ptr().cast(),
                            &mut attr,
                        )
                    };
                    if status != 0 {
                        return Err(("nvshmemx_set_attr_uniqueid_args", status));
                    }
                    flags |= $v::NVSHMEMX_INIT_WITH_UNIQUEID as u32;
                }
                // SAFETY: the caller made a context current; `attr` is well formed.
                match unsafe { $l.nvshmemx_hostlib_init_attr(flags, &mut attr) } {
                    0 => Ok(()),
                    status => Err(("nvshmemx_hostlib_init_attr", status)),
                }
            }};
        }
        match &self.api {
            Api::V3_4_5(l) => init_with!(l, v3_4_5),
            Api::V3_8_0(l) => init_with!(l, v3_8_0),
        }
    }
}

/// Forwards to the bindings' function of the same name, for every version.
macro_rules! forward {
    ($($(#[$meta:meta])* fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?;)*) => {
        impl HostLibrary {
            $(
                $(#[$meta])*
                #[allow(clippy::missing_safety_doc, clippy::too_many_arguments)]
                pub(crate) unsafe fn $name(&self, $($arg: $ty),*) $(-> $ret)? {
                    unsafe { call!(self, $name($($arg),*)) }
                }
            )*
        }
    };
}

use cudarc::driver::sys::{CUmodule, CUstream};
type Team = c_int;

// The thin layer: same names and C types as NVSHMEM's API. Each is `unsafe`
// with NVSHMEM's own preconditions: initialized, valid symmetric addresses,
// collective calls made by every PE in the same order.
forward! {
    /// `nvshmemx_hostlib_finalize`.
    fn nvshmemx_hostlib_finalize();
    /// `nvshmemx_cumodule_init`: registers a module's NVSHMEM device state.
    fn nvshmemx_cumodule_init(module: CUmodule) -> c_int;
    /// `nvshmemx_cumodule_finalize`.
    fn nvshmemx_cumodule_finalize(module: CUmodule) -> c_int;
    /// `nvshmem_my_pe`.
    fn nvshmem_my_pe() -> c_int;
    /// `nvshmem_n_pes`.
    fn nvshmem_n_pes() -> c_int;
    /// `nvshmem_team_my_pe`.
    fn nvshmem_team_my_pe(team: Team) -> c_int;
    /// `nvshmem_team_n_pes`.
    fn nvshmem_team_n_pes(team: Team) -> c_int;
    /// `nvshmem_team_translate_pe`.
    fn nvshmem_team_translate_pe(src_team: Team, src_pe: c_int, dest_team: Team) -> c_int;
    /// `nvshmem_align` (collective).
    fn nvshmem_align(alignment: usize, bytes: usize) -> *mut c_void;
    /// `nvshmem_free` (collective).
    fn nvshmem_free(ptr: *mut c_void);
    /// `nvshmem_ptr`.
    fn nvshmem_ptr(ptr: *const c_void, pe: c_int) -> *mut c_void;
    /// `nvshmem_barrier_all` (collective).
    fn nvshmem_barrier_all();
    /// `nvshmem_sync_all` (collective).
    fn nvshmem_sync_all();
    /// `nvshmem_quiet`.
    fn nvshmem_quiet();
    /// `nvshmemx_barrier_all_on_stream` (collective).
    fn nvshmemx_barrier_all_on_stream(stream: CUstream);
    /// `nvshmemx_sync_all_on_stream` (collective).
    fn nvshmemx_sync_all_on_stream(stream: CUstream);
    /// `nvshmemx_quiet_on_stream`.
    fn nvshmemx_quiet_on_stream(stream: CUstream);
    /// `nvshmemx_team_sync_on_stream` (collective over the team).
    fn nvshmemx_team_sync_on_stream(team: Team, stream: CUstream) -> c_int;
    /// `nvshmemx_barrier_on_stream` (collective over the team).
    fn nvshmemx_barrier_on_stream(team: Team, stream: CUstream) -> c_int;
    /// `nvshmemx_putmem_on_stream`.
    fn nvshmemx_putmem_on_stream(dest: *mut c_void, source: *const c_void, bytes: usize, pe: c_int, stream: CUstream);
    /// `nvshmemx_getmem_on_stream`.
    fn nvshmemx_getmem_on_stream(dest: *mut c_void, source: *const c_void, bytes: usize, pe: c_int, stream: CUstream);
    /// `nvshmemx_putmem_nbi_on_stream`.
    fn nvshmemx_putmem_nbi_on_stream(dest: *mut c_void, source: *const c_void, bytes: usize, pe: c_int, stream: CUstream);
    /// `nvshmemx_getmem_nbi_on_stream`.
    fn nvshmemx_getmem_nbi_on_stream(dest: *mut c_void, source: *const c_void, bytes: usize, pe: c_int, stream: CUstream);
    /// `nvshmemx_putmem_signal_on_stream`.
    fn nvshmemx_putmem_signal_on_stream(
        dest: *mut c_void, source: *const c_void, bytes: usize, sig_addr: *mut u64, signal: u64, sig_op: c_int,
        pe: c_int, stream: CUstream,
    );
    /// `nvshmemx_putmem_signal_nbi_on_stream`.
    fn nvshmemx_putmem_signal_nbi_on_stream(
        dest: *mut c_void, source: *const c_void, bytes: usize, sig_addr: *mut u64, signal: u64, sig_op: c_int,
        pe: c_int, stream: CUstream,
    );
    /// `nvshmemx_signal_op_on_stream`.
    fn nvshmemx_signal_op_on_stream(sig_addr: *mut u64, signal: u64, sig_op: c_int, pe: c_int, stream: CUstream);
    /// `nvshmemx_signal_wait_until_on_stream`.
    fn nvshmemx_signal_wait_until_on_stream(sig_addr: *mut u64, cmp: c_int, cmp_value: u64, stream: CUstream);
    /// `nvshmemx_broadcastmem_on_stream` (collective over the team).
    fn nvshmemx_broadcastmem_on_stream(
        team: Team, dest: *mut c_void, src: *const c_void, bytes: usize, root: c_int, stream: CUstream,
    ) -> c_int;
    /// `nvshmemx_fcollectmem_on_stream` (collective over the team).
    fn nvshmemx_fcollectmem_on_stream(team: Team, dest: *mut c_void, src: *const c_void, bytes: usize, stream: CUstream) -> c_int;
    /// `nvshmemx_alltoallmem_on_stream` (collective over the team).
    fn nvshmemx_alltoallmem_on_stream(team: Team, dest: *mut c_void, src: *const c_void, bytes: usize, stream: CUstream) -> c_int;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let map: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), (*v).into()))
            .collect();
        move |name| map.get(name).cloned()
    }

    fn repo_deps(version: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(".deps")
            .join(format!("nvshmem-{version}/nvidia/nvshmem"))
    }

    #[test]
    fn nvshmem_home_pointing_nowhere_is_not_found_with_the_install_hint() {
        let env = env_of(&[("NVSHMEM_HOME", "/nonexistent/nvshmem")]);
        let err = locate_with(&LibraryRequest::default(), &env, ("", ""), &[]).unwrap_err();
        assert!(matches!(err, Error::NvshmemNotFound { .. }), "{err:?}");
        let msg = err.to_string();
        assert!(msg.contains("/nonexistent/nvshmem"), "{msg}");
        assert!(msg.contains("NVSHMEM_HOME"), "{msg}");
    }

    #[test]
    fn an_explicit_home_wins_over_nvshmem_home() {
        let home = repo_deps("3.4.5");
        if !home.is_dir() {
            eprintln!("SKIPPED: {} is missing (run ./x setup)", home.display());
            return;
        }
        let env = env_of(&[("NVSHMEM_HOME", "/nonexistent")]);
        let found =
            locate_with(&LibraryRequest::default().home(&home), &env, ("", ""), &[]).unwrap();
        assert_eq!(found.source, LibrarySource::Explicit);
        assert_eq!(found.version, Some("3.4.5".parse().unwrap()));
        assert!(found.path.ends_with("lib/libnvshmem_host.so.3"));
    }

    #[test]
    fn an_explicit_home_of_another_version_is_an_error() {
        let home = repo_deps("3.8.0");
        if !home.is_dir() {
            eprintln!("SKIPPED: {} is missing (run ./x setup)", home.display());
            return;
        }
        let req = LibraryRequest::default()
            .home(&home)
            .version("3.4.5".parse().unwrap());
        let err = locate_with(&req, &env_of(&[]), ("", ""), &[]).unwrap_err();
        assert!(err.to_string().contains("3.4.5"), "{err}");
    }

    #[test]
    fn the_build_time_library_is_used_when_it_exists_and_matches() {
        let lib = repo_deps("3.4.5").join("lib/libnvshmem_host.so.3");
        if !lib.is_file() {
            eprintln!("SKIPPED: {} is missing (run ./x setup)", lib.display());
            return;
        }
        let lib_str = lib.to_str().unwrap();
        let found = locate_with(
            &LibraryRequest::default(),
            &env_of(&[]),
            (lib_str, "3.4.5"),
            &[],
        )
        .unwrap();
        assert_eq!(found.source, LibrarySource::BuildTime);
        // Asking for another version skips it and discovers from the start folder.
        let req = LibraryRequest::default().version("3.8.0".parse().unwrap());
        let start = [PathBuf::from(env!("CARGO_MANIFEST_DIR"))];
        let found = locate_with(&req, &env_of(&[]), (lib_str, "3.4.5"), &start).unwrap();
        assert_eq!(
            found.source,
            LibrarySource::Discovered(Source::ProjectCache)
        );
        assert_eq!(found.version, Some("3.8.0".parse().unwrap()));
    }

    #[test]
    fn a_missing_build_time_library_falls_back_to_discovery() {
        if !repo_deps("3.4.5").is_dir() {
            eprintln!("SKIPPED: the project cache is missing (run ./x setup)");
            return;
        }
        let start = [PathBuf::from(env!("CARGO_MANIFEST_DIR"))];
        let found = locate_with(
            &LibraryRequest::default(),
            &env_of(&[]),
            ("/gone/libnvshmem_host.so.3", "3.4.5"),
            &start,
        )
        .unwrap();
        assert_eq!(
            found.source,
            LibrarySource::Discovered(Source::ProjectCache)
        );
    }

    #[test]
    fn a_version_found_nowhere_names_it_and_how_to_install_it() {
        let req = LibraryRequest::default().version("9.9.9".parse().unwrap());
        let start = [PathBuf::from(env!("CARGO_MANIFEST_DIR"))];
        let err = locate_with(&req, &env_of(&[]), ("", ""), &start).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("9.9.9") && msg.contains("pip install nvidia-nvshmem-cu13==9.9.9"),
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
        for v in ["3.4.5", "3.8.0"] {
            let path = repo_deps(v).join("lib/libnvshmem_host.so.3");
            if !path.is_file() {
                eprintln!("SKIPPED: {} is missing (run ./x setup)", path.display());
                continue;
            }
            let lib = HostLibrary::open(&path, LibrarySource::Explicit).unwrap();
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
        for v in ["3.4.5", "3.8.0"] {
            let path = repo_deps(v).join("lib/libnvshmem_host.so.3");
            if !path.is_file() {
                eprintln!("SKIPPED: {} is missing (run ./x setup)", path.display());
                continue;
            }
            let lib = HostLibrary::open(&path, LibrarySource::Explicit).unwrap();
            assert_eq!(lib.version().to_string(), v);
            assert_eq!(lib.bindings_version().to_string(), v);
            assert_eq!(lib.init_status(), 0, "not initialized");
        }
    }
}
