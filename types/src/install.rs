//! Where an NVSHMEM installation is, and what it provides.
//!
//! Search order (the first match wins):
//! 1. an explicit folder: [`Query::home`], else the `NVSHMEM_HOME` environment
//!    variable (an error if it does not hold NVSHMEM: never skipped silently);
//! 2. an installed pip package that `python3` can import: `site-packages/nvidia/nvshmem`
//!    of the active virtual environment (`VIRTUAL_ENV`) and of `python3`
//!    (the `nvidia-nvshmem-cu13` wheel, PyTorch's environment included);
//! 3. the per-user cache ([`cache_dir`]): `<wheel_dir>/nvidia/nvshmem`,
//!    which `nvshmem-builder` fills from the pip wheel when nothing else is found.
//!
//! When a version (or CUDA major) is asked for, installations of others are
//! skipped, and a per-user cache that has it is taken without asking
//! `python3` (the same version's bitcode and library are the same files
//! wherever they are). Without one, python3's package wins (the one PyTorch
//! loads), then the cache prefers [`DEFAULT_VERSION`] for [`DEFAULT_CUDA`].
//! [`Installation::why`] says which rule chose it.

use crate::version::{DEFAULT_CUDA, DEFAULT_VERSION, SupportedVersions};
use crate::{Arch, BitcodeLayout, CudaMajor, Version};
use std::ffi::OsString;
use std::fmt;
use std::format;
use std::path::{Path, PathBuf};
use std::string::{String, ToString};
use std::vec::Vec;

/// Where an installation was found.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Source {
    /// [`Query::home`] or `NVSHMEM_HOME`.
    Explicit,
    /// A pip package that `python3` (or the active virtual environment) has.
    Python,
    /// The per-user cache ([`cache_dir`]).
    UserCache,
}

/// What to look for. The default looks for any supported version, reading
/// `NVSHMEM_HOME`, `VIRTUAL_ENV` and the cache variables from the environment.
///
/// ```
/// use nvshmem_types::install::Query;
/// let q = Query::default().version("3.8.0".parse().unwrap());
/// ```
#[derive(Clone, Debug, Default)]
pub struct Query {
    home: Option<PathBuf>,
    version: Option<Version>,
    cuda: Option<CudaMajor>,
    ignore_env: bool,
    skip_python: bool,
}

impl Query {
    /// Use the installation in `dir` (the folder with `include/` and `lib/`).
    pub fn home(mut self, dir: impl Into<PathBuf>) -> Self {
        self.home = Some(dir.into());
        self
    }

    /// Accept only this version.
    pub fn version(mut self, v: Version) -> Self {
        self.version = Some(v);
        self
    }

    /// Accept only this CUDA major's wheel (an installation whose major is
    /// unknown, such as an `NVSHMEM_HOME` outside pip, is accepted).
    pub fn cuda(mut self, cuda: CudaMajor) -> Self {
        self.cuda = Some(cuda);
        self
    }

    /// Do not read `NVSHMEM_HOME` (the caller has decided about it).
    pub fn ignore_env(mut self) -> Self {
        self.ignore_env = true;
        self
    }

    /// Do not ask `python3` (for tests, and callers that must not start processes).
    pub fn skip_python(mut self) -> Self {
        self.skip_python = true;
        self
    }

    /// The version asked for, if any.
    pub fn wanted(&self) -> Option<Version> {
        self.version
    }

    /// The CUDA major asked for, if any.
    pub fn wanted_cuda(&self) -> Option<CudaMajor> {
        self.cuda
    }

    fn accepts(&self, found: &Installation) -> bool {
        self.version.is_none_or(|v| v == found.version)
            && match (self.cuda, found.cuda) {
                (Some(want), Some(have)) => want == have,
                _ => true,
            }
    }
}

/// Why no installation was found, or one named explicitly is not usable.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FindError {
    /// Nothing matched anywhere.
    NotFound {
        /// The version asked for, if any.
        wanted: Option<Version>,
        /// The CUDA major asked for, if any.
        cuda: Option<CudaMajor>,
        /// Every folder looked at, in search order.
        searched: Vec<PathBuf>,
    },
    /// A folder named explicitly (`NVSHMEM_HOME` or [`Query::home`]) is not a
    /// usable installation.
    HomeInvalid {
        /// The folder.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The installation has no device bitcode for the architecture.
    NoBitcodeForArch {
        /// The architecture asked for.
        arch: String,
        /// The installation's version.
        version: Version,
        /// The architectures it has bitcode for.
        available: Vec<String>,
    },
}

impl fmt::Display for FindError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FindError::NotFound {
                wanted,
                cuda,
                searched,
            } => {
                if let Some(w) = wanted
                    && w.info().is_none()
                {
                    return write!(
                        f,
                        "NVSHMEM {w} is not a supported version. Fix: choose one of {}",
                        SupportedVersions
                    );
                }
                let v = wanted.unwrap_or(DEFAULT_VERSION);
                let c = cuda.unwrap_or(DEFAULT_CUDA);
                writeln!(
                    f,
                    "NVSHMEM{}{} was not found. Searched:",
                    wanted.map(|v| format!(" {v}")).unwrap_or_default(),
                    cuda.map(|c| format!(" for CUDA {c}")).unwrap_or_default()
                )?;
                if searched.is_empty() {
                    writeln!(f, "  (nothing)")?;
                }
                for p in searched {
                    writeln!(f, "  {}", p.display())?;
                }
                write!(
                    f,
                    "Fix: build once with nvshmem-builder, which downloads it into {} \
                     (unless NVSHMEM_RS_OFFLINE=1; `nvshmem-build setup --nvshmem-version {v} \
                     --cuda-major {c}` does only that), or `python3 -m pip install \
                     nvidia-nvshmem-cu{c}=={v}`, or set NVSHMEM_HOME to the folder that holds \
                     NVSHMEM's include/ and lib/. Supported versions: {}",
                    cache_dir()
                        .map(|d| d.display().to_string())
                        .unwrap_or_else(|| "the per-user cache".into()),
                    SupportedVersions
                )
            }
            FindError::HomeInvalid { path, reason } => write!(
                f,
                "{} is not an NVSHMEM installation: {reason}. Fix: point NVSHMEM_HOME at the \
                 folder that holds include/non_abi/nvshmem_version.h and lib/ (for a pip \
                 install: .../site-packages/nvidia/nvshmem)",
                path.display()
            ),
            FindError::NoBitcodeForArch {
                arch,
                version,
                available,
            } => write!(
                f,
                "NVSHMEM {version} has no device bitcode for {arch} (it ships: {}). Fix: choose \
                 one of those architectures, or use an NVSHMEM version that supports {arch}",
                available.join(", ")
            ),
        }
    }
}

impl std::error::Error for FindError {}

/// An NVSHMEM installation: the folder with `include/` and `lib/`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Installation {
    /// The folder.
    pub root: PathBuf,
    /// Its version, from `include/non_abi/nvshmem_version.h`.
    pub version: Version,
    /// The CUDA major of its pip wheel (`nvidia_nvshmem_cu12-*.dist-info`
    /// beside `nvidia/`); `None` for an installation outside pip.
    pub cuda: Option<CudaMajor>,
    /// Where it was found.
    pub source: Source,
}

/// The per-user cache that `nvshmem-builder` fills with pip wheels:
/// `$NVSHMEM_RS_CACHE`, else `$XDG_CACHE_HOME/nvshmem-rs`, else
/// `$HOME/.cache/nvshmem-rs`.
///
/// ```
/// if let Some(dir) = nvshmem_types::install::cache_dir() {
///     println!("wheels are cached in {}", dir.display());
/// }
/// ```
pub fn cache_dir() -> Option<PathBuf> {
    cache_dir_with(&|name| std::env::var_os(name))
}

/// [`cache_dir`] with the environment given.
pub fn cache_dir_with(env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let set = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    set("NVSHMEM_RS_CACHE")
        .or_else(|| set("XDG_CACHE_HOME").map(|d| d.join("nvshmem-rs")))
        .or_else(|| set("HOME").map(|d| d.join(".cache/nvshmem-rs")))
}

/// The folder in the cache where a pip requirement's wheel is unpacked:
/// `nvidia-nvshmem-cu13==3.4.5` → `<cache>/nvidia-nvshmem-cu13-3.4.5`.
///
/// ```
/// use nvshmem_types::install::wheel_dir;
/// let d = wheel_dir("/c".as_ref(), "nvidia-nvshmem-cu13==3.4.5");
/// assert_eq!(d, std::path::Path::new("/c/nvidia-nvshmem-cu13-3.4.5"));
/// ```
pub fn wheel_dir(cache: &Path, requirement: &str) -> PathBuf {
    let name: String = requirement
        .trim_end_matches(".*")
        .replace("==", "-")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    cache.join(name)
}

impl Installation {
    /// Finds an installation, in the order of this module's docs.
    ///
    /// ```no_run
    /// use nvshmem_types::install::{Installation, Query};
    /// let nv = Installation::find(&Query::default())?;
    /// println!("NVSHMEM {} in {}", nv.version, nv.root.display());
    /// # Ok::<(), nvshmem_types::install::FindError>(())
    /// ```
    pub fn find(query: &Query) -> Result<Self, FindError> {
        Self::find_with(query, &|name| std::env::var_os(name))
    }

    /// [`Installation::find`] with the environment given.
    pub fn find_with(
        query: &Query,
        env: &dyn Fn(&str) -> Option<OsString>,
    ) -> Result<Self, FindError> {
        let explicit = query.home.clone().or_else(|| {
            (!query.ignore_env)
                .then(|| {
                    env("NVSHMEM_HOME")
                        .filter(|v| !v.is_empty())
                        .map(PathBuf::from)
                })
                .flatten()
        });
        if let Some(home) = explicit {
            let found = Self::at(&home, Source::Explicit)?;
            if !query.accepts(&found) {
                return Err(FindError::HomeInvalid {
                    path: home,
                    reason: format!(
                        "it holds NVSHMEM {}, but {}{} was asked for",
                        found.describe(),
                        query.version.map(|v| v.to_string()).unwrap_or_default(),
                        query
                            .cuda
                            .map(|c| format!(" for CUDA {c}"))
                            .unwrap_or_default()
                    ),
                });
            }
            return Ok(found);
        }

        let mut candidates: Vec<(PathBuf, Source)> = Vec::new();
        let cached: Vec<PathBuf> = cache_dir_with(env)
            .map(|cache| cache_dirs(&cache, query.version, query.cuda))
            .unwrap_or_default();
        // The wanted version, already in the per-user cache: the same files
        // a pip package of that version has, so skip asking python3.
        if query.version.is_some()
            && let Some(found) = cached
                .iter()
                .find_map(|d| Self::at(d, Source::UserCache).ok())
                .filter(|f| query.accepts(f))
        {
            return Ok(found);
        }
        if !query.skip_python {
            candidates.extend(
                python_site_packages_with(env)
                    .into_iter()
                    .map(|p| (p.join("nvidia/nvshmem"), Source::Python)),
            );
        }
        candidates.extend(cached.into_iter().map(|p| (p, Source::UserCache)));
        let mut searched = Vec::new();
        for (dir, source) in candidates {
            searched.push(dir.clone());
            let Ok(found) = Self::at(&dir, source) else {
                continue;
            };
            if query.accepts(&found) {
                return Ok(found);
            }
        }
        Err(FindError::NotFound {
            wanted: query.version,
            cuda: query.cuda,
            searched,
        })
    }

    /// The installation in `root`, if it is one.
    pub fn at(root: &Path, source: Source) -> Result<Self, FindError> {
        let invalid = |reason: String| FindError::HomeInvalid {
            path: root.to_path_buf(),
            reason,
        };
        let header = root.join("include/non_abi/nvshmem_version.h");
        let text = std::fs::read_to_string(&header)
            .map_err(|e| invalid(format!("cannot read {}: {e}", header.display())))?;
        let version = parse_version_header(&text).ok_or_else(|| {
            invalid(format!(
                "{} has no NVSHMEM_VENDOR_*_VERSION defines",
                header.display()
            ))
        })?;
        if !root.join("lib").is_dir() {
            return Err(invalid("it has no lib/ folder".into()));
        }
        Ok(Installation {
            root: root.to_path_buf(),
            version,
            cuda: wheel_cuda(root, version),
            source,
        })
    }

    /// `3.4.5 (CUDA 13)`, or `3.4.5` when the CUDA major is unknown.
    pub fn describe(&self) -> String {
        match self.cuda {
            Some(c) => format!("{} (CUDA {c})", self.version),
            None => self.version.to_string(),
        }
    }

    /// Why [`Installation::find`] chose this installation for `query`, for
    /// the line a build prints: the rule of this module's docs that applied.
    ///
    /// ```
    /// use nvshmem_types::install::{Installation, Query, Source};
    /// let nv = Installation {
    ///     root: "/venv/lib/python3.12/site-packages/nvidia/nvshmem".into(),
    ///     version: "3.4.5".parse().unwrap(),
    ///     cuda: None,
    ///     source: Source::Python,
    /// };
    /// assert!(nv.why(&Query::default()).contains("python3"));
    /// ```
    pub fn why(&self, query: &Query) -> String {
        let asked = match (query.version, query.cuda) {
            (Some(v), Some(c)) => Some(format!("{v} for CUDA {c}")),
            (Some(v), None) => Some(v.to_string()),
            (None, Some(c)) => Some(format!("CUDA {c}")),
            (None, None) => None,
        };
        let place = self.root.display();
        match (&self.source, asked) {
            (Source::Explicit, _) => format!("the installation named explicitly ({place})"),
            (_, Some(asked)) => format!("asked for ({asked}), found in {place}"),
            (Source::Python, None) => format!(
                "no version asked for, and python3's site-packages have it (the one PyTorch \
                 loads): {place}"
            ),
            (Source::UserCache, None) => format!(
                "no version asked for and none in python3's site-packages: the default \
                 ({DEFAULT_VERSION}, CUDA {DEFAULT_CUDA}), from the per-user cache {place}"
            ),
        }
    }

    /// The `include/` folder.
    pub fn include_dir(&self) -> PathBuf {
        self.root.join("include")
    }

    /// The `lib/` folder.
    pub fn lib_dir(&self) -> PathBuf {
        self.root.join("lib")
    }

    /// The host library, `lib/libnvshmem_host.so.3` (or the unversioned name).
    pub fn host_library(&self) -> PathBuf {
        let lib = self.lib_dir();
        let versioned = lib.join(format!("libnvshmem_host.so.{}", self.version.major));
        if versioned.exists() {
            versioned
        } else {
            lib.join("libnvshmem_host.so")
        }
    }

    /// The architectures with their own bitcode file (3.8+), or `["any"]` for one generic file.
    pub fn bitcode_archs(&self) -> Vec<String> {
        let mut archs: Vec<(u32, String)> = std::fs::read_dir(self.lib_dir())
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let arch = name
                    .strip_prefix("libnvshmem_device_")?
                    .strip_suffix(".bc")?;
                let n: u32 = arch.strip_prefix("sm_")?.parse().ok()?;
                Some((n, arch.to_string()))
            })
            .collect();
        archs.sort();
        let mut archs: Vec<String> = archs.into_iter().map(|(_, a)| a).collect();
        if archs.is_empty() && self.lib_dir().join("libnvshmem_device.bc").exists() {
            archs.push("any".into());
        }
        archs
    }

    /// The file of one of [`bitcode_archs`](Self::bitcode_archs)' entries:
    /// `libnvshmem_device_sm_NN.bc`, or `libnvshmem_device.bc` for `"any"`.
    ///
    /// ```no_run
    /// # use nvshmem_types::install::{Installation, Query};
    /// let nv = Installation::find(&Query::default())?;
    /// for arch in nv.bitcode_archs() {
    ///     println!("{arch}: {}", nv.bitcode_file(&arch).display());
    /// }
    /// # Ok::<(), nvshmem_types::install::FindError>(())
    /// ```
    pub fn bitcode_file(&self, arch: &str) -> PathBuf {
        match arch {
            "any" => self.lib_dir().join("libnvshmem_device.bc"),
            a => self.lib_dir().join(format!("libnvshmem_device_{a}.bc")),
        }
    }

    /// The device bitcode to link for `arch`: the per-arch file where NVSHMEM
    /// ships them (3.8+; for an architecture without its own file, the file of
    /// the newest lower one, whose code runs there), else `libnvshmem_device.bc`.
    ///
    /// ```no_run
    /// # use nvshmem_types::install::{Installation, Query};
    /// let bc = Installation::find(&Query::default())?.device_bitcode("sm_90".parse().unwrap())?;
    /// # Ok::<(), nvshmem_types::install::FindError>(())
    /// ```
    pub fn device_bitcode(&self, arch: Arch) -> Result<PathBuf, FindError> {
        let generic = self.bitcode_file("any");
        let layout = self.version.info().map(|i| i.bitcode);
        if layout == Some(BitcodeLayout::Single) && generic.exists() {
            return Ok(generic);
        }
        let archs = self.bitcode_archs();
        if archs == ["any"] {
            return Ok(generic);
        }
        let best = archs
            .iter()
            .filter_map(|a| Some((a.strip_prefix("sm_")?.parse::<u32>().ok()?, a)))
            .filter(|(n, _)| *n <= arch.number())
            .max_by_key(|(n, _)| *n);
        match best {
            Some((_, a)) => Ok(self.bitcode_file(a)),
            None => Err(FindError::NoBitcodeForArch {
                arch: arch.to_string(),
                version: self.version,
                available: archs,
            }),
        }
    }
}

fn parse_version_header(text: &str) -> Option<Version> {
    let get = |name: &str| -> Option<u32> {
        text.lines().find_map(|l| {
            let mut it = l.split_whitespace();
            (it.next() == Some("#define") && it.next() == Some(name))
                .then(|| it.next()?.parse().ok())?
        })
    };
    Some(Version::new(
        get("NVSHMEM_VENDOR_MAJOR_VERSION")?,
        get("NVSHMEM_VENDOR_MINOR_VERSION")?,
        get("NVSHMEM_VENDOR_PATCH_VERSION")?,
    ))
}

/// The CUDA major of the pip wheel that installed `root` (`.../nvidia/nvshmem`):
/// the `nvidia_nvshmem_cu<major>-<version>.dist-info` two folders up.
fn wheel_cuda(root: &Path, version: Version) -> Option<CudaMajor> {
    let site = root.parent()?.parent()?;
    CudaMajor::ALL.into_iter().find(|c| {
        site.join(format!("nvidia_nvshmem_cu{c}-{version}.dist-info"))
            .is_dir()
    })
}

/// `<cache>/nvidia-nvshmem-cu<major>-<version>/nvidia/nvshmem` for each
/// supported version and CUDA major: the wanted (else default) version first,
/// the wanted (else default) major first, then the others newest first.
fn cache_dirs(cache: &Path, wanted: Option<Version>, cuda: Option<CudaMajor>) -> Vec<PathBuf> {
    let prefer = wanted.unwrap_or(DEFAULT_VERSION);
    let prefer_cuda = cuda.unwrap_or(DEFAULT_CUDA);
    let mut wheels: Vec<_> = crate::SUPPORTED_VERSIONS
        .iter()
        .flat_map(|i| i.cuda.iter().map(move |c| i.wheel(*c)))
        .filter(|w| cuda.is_none_or(|c| c == w.cuda))
        .collect();
    wheels.sort_by(|a, b| {
        (b.version == prefer)
            .cmp(&(a.version == prefer))
            .then((b.cuda == prefer_cuda).cmp(&(a.cuda == prefer_cuda)))
            .then(b.version.cmp(&a.version))
    });
    wheels
        .into_iter()
        .map(|w| wheel_dir(cache, &w.to_string()).join("nvidia/nvshmem"))
        .collect()
}

/// The NVSHMEM pip package (`nvidia-nvshmem-cu1x`, as PyTorch installs it)
/// in the first of `dirs` that holds one: for a Python process, its
/// `sys.path`, so that kernels are built for the NVSHMEM that process loads.
///
/// ```no_run
/// let dirs = nvshmem_types::install::python_site_packages();
/// if let Some(nv) = nvshmem_types::install::in_site_packages(&dirs) {
///     println!("this Python has NVSHMEM {}", nv.version);
/// }
/// ```
pub fn in_site_packages(dirs: &[PathBuf]) -> Option<Installation> {
    dirs.iter()
        .find_map(|d| Installation::at(&d.join("nvidia/nvshmem"), Source::Python).ok())
}

/// The `site-packages` folders of the active virtual environment
/// (`VIRTUAL_ENV`) and of `python3` (its site and user site), in that order;
/// empty when there is no `python3`. Pip's `nvidia-*` wheels unpack under
/// `<site-packages>/nvidia/`.
///
/// ```no_run
/// for dir in nvshmem_types::install::python_site_packages() {
///     println!("{}", dir.join("nvidia/cu13/bin/ptxas").display());
/// }
/// ```
pub fn python_site_packages() -> Vec<PathBuf> {
    python_site_packages_with(&|name| std::env::var_os(name))
}

/// [`python_site_packages`] with the environment given (`VIRTUAL_ENV` is
/// read through it). `python3`'s own answer is asked once per process.
pub fn python_site_packages_with(env: &dyn Fn(&str) -> Option<OsString>) -> Vec<PathBuf> {
    static PYTHON3: std::sync::OnceLock<Vec<PathBuf>> = std::sync::OnceLock::new();
    let mut dirs = Vec::new();
    if let Some(venv) = env("VIRTUAL_ENV")
        && let Ok(libs) = std::fs::read_dir(Path::new(&venv).join("lib"))
    {
        for e in libs.flatten() {
            dirs.push(e.path().join("site-packages"));
        }
    }
    dirs.extend(PYTHON3.get_or_init(ask_python3).iter().cloned());
    let mut seen = Vec::new();
    dirs.retain(|d| {
        let new = !seen.contains(d);
        seen.push(d.clone());
        new
    });
    dirs
}

fn ask_python3() -> Vec<PathBuf> {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import site\nfor p in site.getsitepackages()+[site.getusersitepackages()]: print(p)",
        ])
        .stderr(std::process::Stdio::null())
        .output();
    match out {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| PathBuf::from(l.trim()))
            .filter(|p| !p.as_os_str().is_empty())
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_version_header() {
        let text = "#define NVSHMEM_VENDOR_MAJOR_VERSION 3\n#define NVSHMEM_VENDOR_MINOR_VERSION 8\n\
                    #define NVSHMEM_VENDOR_PATCH_VERSION 0\n";
        assert_eq!(parse_version_header(text), Some(Version::new(3, 8, 0)));
        assert_eq!(parse_version_header("#define X 1"), None);
    }

    #[test]
    fn the_cache_follows_the_environment() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| OsString::from(v))
            }
        };
        assert_eq!(
            cache_dir_with(&env(&[("NVSHMEM_RS_CACHE", "/a"), ("HOME", "/h")])),
            Some(PathBuf::from("/a"))
        );
        assert_eq!(
            cache_dir_with(&env(&[("XDG_CACHE_HOME", "/x"), ("HOME", "/h")])),
            Some(PathBuf::from("/x/nvshmem-rs"))
        );
        assert_eq!(
            cache_dir_with(&env(&[("HOME", "/h")])),
            Some(PathBuf::from("/h/.cache/nvshmem-rs"))
        );
        assert_eq!(cache_dir_with(&env(&[])), None);
    }

    #[test]
    fn the_wanted_version_is_looked_for_first() {
        let dirs = cache_dirs(Path::new("/c"), Some(Version::new(3, 8, 0)), None);
        assert_eq!(
            dirs[0],
            Path::new("/c/nvidia-nvshmem-cu13-3.8.0/nvidia/nvshmem")
        );
        assert_eq!(
            dirs[1],
            Path::new("/c/nvidia-nvshmem-cu12-3.8.0/nvidia/nvshmem")
        );
        let dirs = cache_dirs(Path::new("/c"), None, None);
        assert_eq!(
            dirs[0],
            Path::new("/c/nvidia-nvshmem-cu13-3.4.5/nvidia/nvshmem")
        );
        let dirs = cache_dirs(Path::new("/c"), None, Some(CudaMajor::Cuda12));
        assert_eq!(
            dirs[0],
            Path::new("/c/nvidia-nvshmem-cu12-3.4.5/nvidia/nvshmem")
        );
        assert!(dirs.iter().all(|d| d.to_string_lossy().contains("-cu12-")));
    }

    #[test]
    fn the_wheel_tells_the_cuda_major() {
        let site = std::env::temp_dir().join(format!("nvshmem-wheel-cuda-{}", std::process::id()));
        let root = site.join("nvidia/nvshmem");
        std::fs::create_dir_all(&root).unwrap();
        let v = Version::new(3, 3, 20);
        assert_eq!(wheel_cuda(&root, v), None);
        std::fs::create_dir_all(site.join("nvidia_nvshmem_cu12-3.3.20.dist-info")).unwrap();
        assert_eq!(wheel_cuda(&root, v), Some(CudaMajor::Cuda12));
        let _ = std::fs::remove_dir_all(&site);
    }
}
