//! Finding an NVSHMEM installation, and what it provides.
//!
//! Search order (the first match wins):
//! 1. an explicit folder: [`Query::home`], else the `NVSHMEM_HOME` environment variable;
//! 2. the set-up step's project-local cache: `.deps/nvshmem-<version>/nvidia/nvshmem`
//!    in the project folder or any folder above it;
//! 3. Python's `site-packages/nvidia/nvshmem` (the `nvidia-nvshmem-cu13` wheel);
//! 4. the usual system folders (`/usr/local/nvshmem`, `/opt/nvidia/nvshmem`, ...).
//!
//! When a version is asked for, folders holding another version are skipped.
//! Without one, the project cache prefers [`DEFAULT_VERSION`].

use crate::error::{Error, Result};
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The NVSHMEM version used when none is asked for: the one PyTorch 2.11 bundles.
pub const DEFAULT_VERSION: Version = Version {
    major: 3,
    minor: 4,
    patch: 5,
};

/// An NVSHMEM version, `major.minor.patch`.
///
/// ```
/// use nvshmem_builder::nvshmem::Version;
/// let v: Version = "3.8.0".parse().unwrap();
/// assert!(v > "3.4.5".parse().unwrap());
/// assert_eq!(v.to_string(), "3.8.0");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// Major version; device state layouts are only checked at this level by NVSHMEM.
    pub major: u32,
    /// Minor version.
    pub minor: u32,
    /// Patch version.
    pub patch: u32,
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

impl FromStr for Version {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let parts: Vec<_> = s.trim().split('.').collect();
        let num = |i: usize| -> std::result::Result<u32, String> {
            parts
                .get(i)
                .unwrap_or(&"0")
                .parse()
                .map_err(|_| format!("`{s}` is not a version such as 3.4.5"))
        };
        if parts.is_empty() || parts.len() > 3 {
            return Err(format!("`{s}` is not a version such as 3.4.5"));
        }
        Ok(Version {
            major: num(0)?,
            minor: num(1)?,
            patch: num(2)?,
        })
    }
}

/// How an installation was found.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Source {
    /// Given explicitly or by `NVSHMEM_HOME`.
    Explicit,
    /// The set-up step's project-local cache (`.deps/`).
    ProjectCache,
    /// A Python `site-packages` folder.
    Python,
    /// A system folder.
    System,
}

/// Where to look, and for which version.
///
/// ```
/// use nvshmem_builder::nvshmem::Query;
/// let q = Query::default().version("3.8.0".parse().unwrap()).project_dir(".");
/// ```
#[derive(Clone, Debug, Default)]
pub struct Query {
    home: Option<PathBuf>,
    version: Option<Version>,
    project_dir: Option<PathBuf>,
    ignore_env: bool,
}

impl Query {
    /// Use this folder and nothing else (overrides `NVSHMEM_HOME`).
    pub fn home(mut self, dir: impl Into<PathBuf>) -> Self {
        self.home = Some(dir.into());
        self
    }
    /// Accept only this version.
    pub fn version(mut self, v: Version) -> Self {
        self.version = Some(v);
        self
    }
    /// Look for the project cache (`.deps/`) from this folder upwards.
    pub fn project_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.project_dir = Some(dir.into());
        self
    }
    /// Ignore `NVSHMEM_HOME` (for tests).
    pub fn ignore_env(mut self) -> Self {
        self.ignore_env = true;
        self
    }
}

/// An NVSHMEM installation: a folder with `include/` and `lib/`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nvshmem {
    /// The folder holding `include/` and `lib/`.
    pub root: PathBuf,
    /// Its version, from `include/non_abi/nvshmem_version.h`.
    pub version: Version,
    /// How it was found.
    pub source: Source,
}

impl Nvshmem {
    /// Finds an installation in the search order of this module.
    ///
    /// ```no_run
    /// use nvshmem_builder::nvshmem::{Nvshmem, Query};
    /// let nv = Nvshmem::find(&Query::default().project_dir("."))?;
    /// println!("NVSHMEM {} at {}", nv.version, nv.root.display());
    /// # Ok::<(), nvshmem_builder::Error>(())
    /// ```
    pub fn find(query: &Query) -> Result<Self> {
        let explicit = query.home.clone().or_else(|| {
            if query.ignore_env {
                None
            } else {
                std::env::var_os("NVSHMEM_HOME")
                    .filter(|v| !v.is_empty())
                    .map(PathBuf::from)
            }
        });
        if let Some(home) = explicit {
            let found = Self::at(&home, Source::Explicit)?;
            if let Some(want) = query.version
                && want != found.version
            {
                return Err(Error::NvshmemHomeInvalid {
                    path: home,
                    reason: format!(
                        "it holds NVSHMEM {}, but {want} was asked for",
                        found.version
                    ),
                });
            }
            return Ok(found);
        }

        let mut searched = Vec::new();
        let mut candidates: Vec<(PathBuf, Source)> = Vec::new();
        if let Some(dir) = &query.project_dir {
            candidates.extend(
                project_cache_dirs(dir, query.version)
                    .into_iter()
                    .map(|p| (p, Source::ProjectCache)),
            );
        }
        candidates.extend(python_dirs().into_iter().map(|p| (p, Source::Python)));
        candidates.extend(
            SYSTEM_DIRS
                .iter()
                .map(|p| (PathBuf::from(p), Source::System)),
        );

        for (dir, source) in candidates {
            searched.push(dir.clone());
            let Ok(found) = Self::at(&dir, source) else {
                continue;
            };
            if query.version.is_none_or(|v| v == found.version) {
                return Ok(found);
            }
        }
        Err(Error::NvshmemNotFound {
            wanted: query.version,
            searched,
        })
    }

    /// Reads the installation in `root` (the folder with `include/` and `lib/`).
    ///
    /// ```no_run
    /// use nvshmem_builder::nvshmem::{Nvshmem, Source};
    /// let nv = Nvshmem::at(".deps/nvshmem-3.4.5/nvidia/nvshmem".as_ref(), Source::Explicit)?;
    /// # Ok::<(), nvshmem_builder::Error>(())
    /// ```
    pub fn at(root: &Path, source: Source) -> Result<Self> {
        let invalid = |reason: String| Error::NvshmemHomeInvalid {
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
        Ok(Nvshmem {
            root: root.to_path_buf(),
            version,
            source,
        })
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
    ///
    /// ```no_run
    /// # use nvshmem_builder::nvshmem::{Nvshmem, Query};
    /// let lib = Nvshmem::find(&Query::default())?.host_library();
    /// # Ok::<(), nvshmem_builder::Error>(())
    /// ```
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
        let mut archs: Vec<String> = std::fs::read_dir(self.lib_dir())
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let arch = name
                    .strip_prefix("libnvshmem_device_")?
                    .strip_suffix(".bc")?;
                Some(arch.to_string())
            })
            .collect();
        archs.sort_by_key(|a| sm_number(a).unwrap_or(0));
        if archs.is_empty() && self.lib_dir().join("libnvshmem_device.bc").exists() {
            archs.push("any".into());
        }
        archs
    }

    /// The device bitcode to link for `arch` (such as `sm_90`): the per-arch file
    /// where NVSHMEM ships them (3.8+), else `libnvshmem_device.bc`.
    ///
    /// ```no_run
    /// # use nvshmem_builder::nvshmem::{Nvshmem, Query};
    /// let bc = Nvshmem::find(&Query::default())?.device_bitcode("sm_90")?;
    /// # Ok::<(), nvshmem_builder::Error>(())
    /// ```
    pub fn device_bitcode(&self, arch: &str) -> Result<PathBuf> {
        sm_number(arch).ok_or_else(|| Error::InvalidArch { arch: arch.into() })?;
        let per_arch = self.lib_dir().join(format!("libnvshmem_device_{arch}.bc"));
        if per_arch.exists() {
            return Ok(per_arch);
        }
        // An arch-specific target (`sm_90a`) runs the base arch's code.
        if let Some(base) = arch.strip_suffix('a') {
            let per_base = self.lib_dir().join(format!("libnvshmem_device_{base}.bc"));
            if per_base.exists() {
                return Ok(per_base);
            }
        }
        let archs = self.bitcode_archs();
        let generic = self.lib_dir().join("libnvshmem_device.bc");
        if archs == ["any"] {
            return Ok(generic);
        }
        Err(Error::NoBitcodeForArch {
            arch: arch.into(),
            version: self.version,
            available: archs,
        })
    }
}

/// The compute capability in `sm_NN` as a number (`sm_90` → 90), if well formed.
///
/// ```
/// assert_eq!(nvshmem_builder::nvshmem::sm_number("sm_100"), Some(100));
/// assert_eq!(nvshmem_builder::nvshmem::sm_number("90"), None);
/// ```
pub fn sm_number(arch: &str) -> Option<u32> {
    let digits = arch.strip_prefix("sm_")?;
    let digits = digits.strip_suffix('a').unwrap_or(digits);
    if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

fn parse_version_header(text: &str) -> Option<Version> {
    let get = |name: &str| -> Option<u32> {
        text.lines().find_map(|l| {
            let mut it = l.split_whitespace();
            (it.next() == Some("#define") && it.next() == Some(name))
                .then(|| it.next()?.parse().ok())?
        })
    };
    Some(Version {
        major: get("NVSHMEM_VENDOR_MAJOR_VERSION")?,
        minor: get("NVSHMEM_VENDOR_MINOR_VERSION")?,
        patch: get("NVSHMEM_VENDOR_PATCH_VERSION")?,
    })
}

const SYSTEM_DIRS: &[&str] = &[
    "/usr/local/nvshmem",
    "/opt/nvidia/nvshmem",
    "/usr/lib/x86_64-linux-gnu/nvshmem/13",
    "/usr/lib/x86_64-linux-gnu/nvshmem/12",
    "/usr/lib64/nvshmem/13",
    "/usr/lib64/nvshmem/12",
];

/// `.deps/nvshmem-<version>/nvidia/nvshmem` in `start` and its ancestors; the
/// wanted (else default) version first, then the others newest first.
fn project_cache_dirs(start: &Path, wanted: Option<Version>) -> Vec<PathBuf> {
    let start = std::fs::canonicalize(start).unwrap_or_else(|_| start.to_path_buf());
    let prefer = wanted.unwrap_or(DEFAULT_VERSION);
    for dir in start.ancestors() {
        let deps = dir.join(".deps");
        let Ok(entries) = std::fs::read_dir(&deps) else {
            continue;
        };
        let mut found: Vec<(Version, PathBuf)> = entries
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let v: Version = name.strip_prefix("nvshmem-")?.parse().ok()?;
                Some((v, e.path().join("nvidia/nvshmem")))
            })
            .collect();
        if found.is_empty() {
            continue;
        }
        found.sort_by(|a, b| (b.0 == prefer).cmp(&(a.0 == prefer)).then(b.0.cmp(&a.0)));
        return found.into_iter().map(|(_, p)| p).collect();
    }
    Vec::new()
}

/// `site-packages/nvidia/nvshmem` of the active virtual environment and of `python3`.
fn python_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(venv) = std::env::var_os("VIRTUAL_ENV")
        && let Ok(libs) = std::fs::read_dir(Path::new(&venv).join("lib"))
    {
        for e in libs.flatten() {
            dirs.push(e.path().join("site-packages/nvidia/nvshmem"));
        }
    }
    let out = std::process::Command::new("python3")
        .args(["-c", "import site,sys\nfor p in site.getsitepackages()+[site.getusersitepackages()]: print(p)"])
        .stderr(std::process::Stdio::null())
        .output();
    if let Ok(out) = out {
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            dirs.push(Path::new(line.trim()).join("nvidia/nvshmem"));
        }
    }
    dirs.dedup();
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_version_header() {
        let text = "#define NVSHMEM_VENDOR_MAJOR_VERSION 3\n#define NVSHMEM_VENDOR_MINOR_VERSION 8\n\
                    #define NVSHMEM_VENDOR_PATCH_VERSION 0\n";
        assert_eq!(
            parse_version_header(text),
            Some(Version {
                major: 3,
                minor: 8,
                patch: 0
            })
        );
        assert_eq!(parse_version_header("#define X 1"), None);
    }

    #[test]
    fn versions_parse_and_order() {
        assert!("3.4.5".parse::<Version>().unwrap() < "3.8.0".parse().unwrap());
        assert_eq!(
            "3.4".parse::<Version>().unwrap(),
            Version {
                major: 3,
                minor: 4,
                patch: 0
            }
        );
        assert!("three".parse::<Version>().is_err());
        assert!("1.2.3.4".parse::<Version>().is_err());
    }

    #[test]
    fn arch_numbers() {
        assert_eq!(sm_number("sm_90"), Some(90));
        assert_eq!(sm_number("sm_90a"), Some(90));
        for bad in ["sm90", "sm_", "sm_9", "compute_90", "sm_9x"] {
            assert_eq!(sm_number(bad), None, "{bad}");
        }
    }
}
