//! NVSHMEM versions, and the facts about each that the build and the host need.

use core::fmt;
use core::str::FromStr;

/// An NVSHMEM version, `major.minor.patch`.
///
/// ```
/// use nvshmem_types::Version;
/// let v: Version = "3.8.0".parse().unwrap();
/// assert!(v > "3.4.5".parse().unwrap());
/// assert_eq!(v.to_string(), "3.8.0");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// Major version; NVSHMEM itself checks device state layouts only at this level.
    pub major: u32,
    /// Minor version.
    pub minor: u32,
    /// Patch version.
    pub patch: u32,
}

impl Version {
    /// `major.minor.patch`.
    ///
    /// ```
    /// assert_eq!(nvshmem_types::Version::new(3, 4, 5).to_string(), "3.4.5");
    /// ```
    pub const fn new(major: u32, minor: u32, patch: u32) -> Self {
        Version {
            major,
            minor,
            patch,
        }
    }

    /// What this library knows about this version, if it supports it.
    ///
    /// ```
    /// use nvshmem_types::Version;
    /// assert_eq!(Version::new(3, 8, 0).info().unwrap().device_state_size, 848);
    /// assert!(Version::new(9, 9, 9).info().is_none());
    /// ```
    pub fn info(self) -> Option<&'static VersionInfo> {
        SUPPORTED_VERSIONS.iter().find(|i| i.version == self)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// A string that is not a version such as `3.4.5`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseVersionError;

impl fmt::Display for ParseVersionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not a version such as 3.4.5 (major.minor or major.minor.patch)")
    }
}

impl core::error::Error for ParseVersionError {}

impl FromStr for Version {
    type Err = ParseVersionError;
    fn from_str(s: &str) -> Result<Self, ParseVersionError> {
        let mut parts = s.trim().split('.');
        let mut next = |required: bool| match parts.next() {
            None if !required => Ok(0),
            Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
                p.parse().map_err(|_| ParseVersionError)
            }
            _ => Err(ParseVersionError),
        };
        let v = Version::new(next(true)?, next(true)?, next(false)?);
        if parts.next().is_some() {
            return Err(ParseVersionError);
        }
        Ok(v)
    }
}

/// How an NVSHMEM version ships its device bitcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BitcodeLayout {
    /// One `lib/libnvshmem_device.bc` for every architecture.
    Single,
    /// One `lib/libnvshmem_device_sm_NN.bc` per listed architecture number
    /// (the CUDA 13 wheel's list; the CUDA 12 wheel has `sm_70` for `sm_75`).
    PerArch(&'static [u32]),
}

/// A CUDA major version: which NVSHMEM wheel (`-cu12`, `-cu13`), which
/// `ptxas` and which PTX ISA levels a build uses, and which drivers run it (a
/// driver runs images of its own CUDA major or an older one).
///
/// ```
/// use nvshmem_types::CudaMajor;
/// let c: CudaMajor = "12".parse().unwrap();
/// assert_eq!(c, CudaMajor::Cuda12);
/// assert_eq!("cu13".parse::<CudaMajor>().unwrap().to_string(), "13");
/// assert_eq!(c.toolkit().to_string(), "12.9");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CudaMajor {
    /// CUDA 12 (drivers R525-R575): `ptxas` 12.9 from `nvidia-cuda-nvcc-cu12`.
    Cuda12,
    /// CUDA 13 (drivers R580+): `ptxas` 13.0 from `nvidia-cuda-nvcc`.
    Cuda13,
}

/// The CUDA major used when neither the build nor the installation found says.
pub const DEFAULT_CUDA: CudaMajor = CudaMajor::Cuda13;

impl CudaMajor {
    /// Both, oldest first.
    pub const ALL: [CudaMajor; 2] = [CudaMajor::Cuda12, CudaMajor::Cuda13];

    /// `12` or `13`.
    pub const fn number(self) -> u32 {
        match self {
            CudaMajor::Cuda12 => 12,
            CudaMajor::Cuda13 => 13,
        }
    }

    /// The toolkit whose `ptxas` the builder uses for this major.
    pub const fn toolkit(self) -> CudaVersion {
        match self {
            CudaMajor::Cuda12 => CudaVersion::new(12, 9),
            CudaMajor::Cuda13 => CudaVersion::new(13, 0),
        }
    }

    /// The pip requirement of that toolkit's `ptxas` (and, for 13, `nvlink`).
    pub const fn nvcc_wheel(self) -> &'static str {
        match self {
            CudaMajor::Cuda12 => "nvidia-cuda-nvcc-cu12==12.9.*",
            CudaMajor::Cuda13 => "nvidia-cuda-nvcc==13.0.*",
        }
    }

    /// The highest PTX ISA its `ptxas` accepts, as `major * 10 + minor`
    /// (12.9: PTX 8.8; 13.0: PTX 9.0).
    pub const fn max_ptx_isa(self) -> u32 {
        match self {
            CudaMajor::Cuda12 => 88,
            CudaMajor::Cuda13 => 90,
        }
    }

    /// Whether its `ptxas` compiles for `arch`: CUDA 12.9 has no `sm_88`
    /// and no `sm_110` (it calls that `sm_101`); every arch needs a PTX ISA
    /// within [`max_ptx_isa`](Self::max_ptx_isa).
    ///
    /// ```
    /// use nvshmem_types::{Arch, CudaMajor};
    /// let a = |s: &str| s.parse::<Arch>().unwrap();
    /// assert!(CudaMajor::Cuda12.supports(a("sm_90")));
    /// assert!(!CudaMajor::Cuda12.supports(a("sm_110")));
    /// assert!(CudaMajor::Cuda13.supports(a("sm_110")));
    /// ```
    pub const fn supports(self, arch: crate::Arch) -> bool {
        arch.min_ptx_isa() <= self.max_ptx_isa()
    }
}

impl fmt::Display for CudaMajor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.number())
    }
}

/// A string that is not a supported CUDA major (`12`, `13`, `cu12`, `cu13`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseCudaError;

impl fmt::Display for ParseCudaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not a supported CUDA major: use 12 or 13")
    }
}

impl core::error::Error for ParseCudaError {}

impl FromStr for CudaMajor {
    type Err = ParseCudaError;
    fn from_str(s: &str) -> Result<Self, ParseCudaError> {
        match s.trim().trim_start_matches("cu") {
            "12" => Ok(CudaMajor::Cuda12),
            "13" => Ok(CudaMajor::Cuda13),
            _ => Err(ParseCudaError),
        }
    }
}

/// A CUDA version, `major.minor`: of a toolkit (the manifest's
/// `cuda_toolkit`) or of what a driver supports (`cuDriverGetVersion`).
///
/// ```
/// use nvshmem_types::CudaVersion;
/// let v: CudaVersion = "12.9".parse().unwrap();
/// assert_eq!(CudaVersion::from_driver(12090), v);
/// assert!(v < CudaVersion::new(13, 0));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CudaVersion {
    /// Major version.
    pub major: u32,
    /// Minor version.
    pub minor: u32,
}

impl CudaVersion {
    /// `major.minor`.
    pub const fn new(major: u32, minor: u32) -> Self {
        CudaVersion { major, minor }
    }

    /// The first CUDA release whose driver JIT-compiles PTX of ISA `isa`
    /// (`major.minor`): ISA 7.x is CUDA 11.x, 8.0-8.5 are 12.0-12.5, 8.6 is
    /// 12.7, 8.7 12.8, 8.8 12.9, 9.0 13.0.
    ///
    /// ```
    /// use nvshmem_types::CudaVersion;
    /// assert_eq!(CudaVersion::for_ptx_isa(CudaVersion::new(8, 3)), CudaVersion::new(12, 3));
    /// assert_eq!(CudaVersion::for_ptx_isa(CudaVersion::new(8, 8)), CudaVersion::new(12, 9));
    /// assert_eq!(CudaVersion::for_ptx_isa(CudaVersion::new(9, 0)), CudaVersion::new(13, 0));
    /// ```
    pub const fn for_ptx_isa(isa: CudaVersion) -> CudaVersion {
        match (isa.major, isa.minor) {
            (0..=6, _) => CudaVersion::new(10, 0),
            (7, m) => CudaVersion::new(11, m),
            (8, m @ 0..=5) => CudaVersion::new(12, m),
            (8, m) => CudaVersion::new(12, if m + 1 > 9 { 9 } else { m + 1 }),
            (9, m) => CudaVersion::new(13, m),
            (major, _) => CudaVersion::new(major + 4, 0),
        }
    }

    /// From `cuDriverGetVersion`'s `1000 * major + 10 * minor`.
    pub const fn from_driver(v: i32) -> Self {
        let v = if v < 0 { 0 } else { v as u32 };
        CudaVersion::new(v / 1000, (v % 1000) / 10)
    }
}

impl fmt::Display for CudaVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl FromStr for CudaVersion {
    type Err = ParseVersionError;
    fn from_str(s: &str) -> Result<Self, ParseVersionError> {
        let v: Version = s.parse()?;
        Ok(CudaVersion::new(v.major, v.minor))
    }
}

/// What this library knows about one supported NVSHMEM version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VersionInfo {
    /// The version.
    pub version: Version,
    /// The CUDA majors it has a pip wheel for (`nvidia-nvshmem-cu12`, `-cu13`).
    pub cuda: &'static [CudaMajor],
    /// How its device bitcode is laid out.
    pub bitcode: BitcodeLayout,
    /// The lowest PTX ISA its bitcode's functions ask for, `(major, minor)`
    /// (the CUDA 13 wheel's; the CUDA 12 wheel's is at most this).
    pub min_ptx_isa: (u32, u32),
    /// `sizeof(nvshmemi_device_host_state_t)`, the device state a module
    /// carries: why a PTX must be linked against the host library's version.
    pub device_state_size: u32,
    /// The PyTorch releases whose wheels pin this version (empty: none).
    pub torch: &'static str,
}

impl VersionInfo {
    /// The pip requirement of its wheel for `cuda`, such as `nvidia-nvshmem-cu12==3.3.20`.
    ///
    /// ```
    /// use nvshmem_types::{CudaMajor, Version};
    /// let info = Version::new(3, 3, 20).info().unwrap();
    /// assert_eq!(info.wheel(CudaMajor::Cuda12).to_string(), "nvidia-nvshmem-cu12==3.3.20");
    /// ```
    pub const fn wheel(&self, cuda: CudaMajor) -> Wheel {
        Wheel {
            version: self.version,
            cuda,
        }
    }

    /// The `nvshmem-device` feature that declares this version's device API
    /// beyond 3.4's (`nvshmem-3-5`, `-3-7`, `-3-8`), if any: the newest of
    /// [`DEVICE_FEATURES`] at or below it.
    ///
    /// ```
    /// use nvshmem_types::Version;
    /// assert_eq!(Version::new(3, 6, 5).info().unwrap().device_feature(), Some("nvshmem-3-5"));
    /// assert_eq!(Version::new(3, 4, 5).info().unwrap().device_feature(), None);
    /// ```
    pub fn device_feature(&self) -> Option<&'static str> {
        DEVICE_FEATURES
            .iter()
            .rev()
            .find(|(v, _)| *v <= self.version)
            .map(|(_, f)| *f)
    }
}

/// The `nvshmem-device` features of device API additions, by the version that
/// added them: 3.5 the queue-pair functions (`nvshmemx_qp_*`); 3.7 the float
/// atomics and `flush`; 3.8 the shared-memory lease, RMA regions,
/// `signal_counted_reset` and `put16_signal`. Each implies the ones before.
pub const DEVICE_FEATURES: &[(Version, &str)] = &[
    (Version::new(3, 5, 0), "nvshmem-3-5"),
    (Version::new(3, 7, 0), "nvshmem-3-7"),
    (Version::new(3, 8, 0), "nvshmem-3-8"),
];

/// A pip requirement of an NVSHMEM wheel: `nvidia-nvshmem-cu<major>==<version>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wheel {
    /// The NVSHMEM version.
    pub version: Version,
    /// The CUDA major of the wheel.
    pub cuda: CudaMajor,
}

impl fmt::Display for Wheel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "nvidia-nvshmem-cu{}=={}", self.cuda, self.version)
    }
}

/// The NVSHMEM version used when none is asked for and python3 has none: the
/// one PyTorch 2.10-2.14 bundle.
pub const DEFAULT_VERSION: Version = Version::new(3, 4, 5);

const BOTH: &[CudaMajor] = &CudaMajor::ALL;

/// Every NVSHMEM version this library supports, oldest first. Adding one is a
/// row here, plus its host bindings' struct module (`host/gen-bindings.sh`).
pub const SUPPORTED_VERSIONS: &[VersionInfo] = &[
    VersionInfo {
        version: Version::new(3, 3, 20),
        cuda: BOTH,
        bitcode: BitcodeLayout::Single,
        min_ptx_isa: (8, 3),
        device_state_size: 776,
        torch: "2.9",
    },
    VersionInfo {
        version: Version::new(3, 3, 24),
        cuda: BOTH,
        bitcode: BitcodeLayout::Single,
        min_ptx_isa: (8, 3),
        device_state_size: 776,
        torch: "",
    },
    VersionInfo {
        version: Version::new(3, 4, 5),
        cuda: BOTH,
        bitcode: BitcodeLayout::Single,
        min_ptx_isa: (8, 3),
        device_state_size: 776,
        torch: "2.10-2.14",
    },
    VersionInfo {
        version: Version::new(3, 5, 19),
        cuda: BOTH,
        bitcode: BitcodeLayout::Single,
        min_ptx_isa: (8, 3),
        device_state_size: 776,
        torch: "",
    },
    VersionInfo {
        version: Version::new(3, 5, 21),
        cuda: BOTH,
        bitcode: BitcodeLayout::Single,
        min_ptx_isa: (8, 3),
        device_state_size: 776,
        torch: "",
    },
    VersionInfo {
        version: Version::new(3, 6, 5),
        cuda: BOTH,
        bitcode: BitcodeLayout::Single,
        min_ptx_isa: (8, 7),
        device_state_size: 776,
        torch: "",
    },
    VersionInfo {
        version: Version::new(3, 7, 0),
        cuda: BOTH,
        bitcode: BitcodeLayout::PerArch(&[75, 80, 89, 90]),
        min_ptx_isa: (8, 7),
        device_state_size: 816,
        torch: "",
    },
    VersionInfo {
        version: Version::new(3, 7, 1),
        cuda: BOTH,
        bitcode: BitcodeLayout::PerArch(&[75, 80, 89, 90]),
        min_ptx_isa: (8, 7),
        device_state_size: 816,
        torch: "",
    },
    VersionInfo {
        version: Version::new(3, 7, 2),
        cuda: BOTH,
        bitcode: BitcodeLayout::PerArch(&[75, 80, 89, 90]),
        min_ptx_isa: (8, 7),
        device_state_size: 816,
        torch: "2.15",
    },
    VersionInfo {
        version: Version::new(3, 8, 0),
        cuda: BOTH,
        bitcode: BitcodeLayout::PerArch(&[75, 80, 89, 90, 100]),
        min_ptx_isa: (8, 8),
        device_state_size: 848,
        torch: "",
    },
];

/// The supported versions as a list for messages: `3.3.20, ..., 3.8.0`.
///
/// ```
/// assert!(nvshmem_types::SupportedVersions.to_string().starts_with("3.3.20, 3.3.24, 3.4.5"));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct SupportedVersions;

impl SupportedVersions {
    /// The newest supported release of `version`'s minor line (3.4 for
    /// 3.4.0): what a version asked for as `3.4` most likely means.
    ///
    /// ```
    /// use nvshmem_types::{SupportedVersions, Version};
    /// assert_eq!(SupportedVersions::newest_of_line(Version::new(3, 4, 0)), Some(Version::new(3, 4, 5)));
    /// assert_eq!(SupportedVersions::newest_of_line(Version::new(2, 9, 0)), None);
    /// ```
    pub fn newest_of_line(version: Version) -> Option<Version> {
        SUPPORTED_VERSIONS
            .iter()
            .map(|info| info.version)
            .filter(|v| (v.major, v.minor) == (version.major, version.minor))
            .max()
    }
}

impl fmt::Display for SupportedVersions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, info) in SUPPORTED_VERSIONS.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{}", info.version)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_and_order() {
        assert!("3.4.5".parse::<Version>().unwrap() < "3.8.0".parse().unwrap());
        assert_eq!("3.4".parse::<Version>().unwrap(), Version::new(3, 4, 0));
        for bad in ["three", "1.2.3.4", "", "3", "3.", "3.x", "-3.4"] {
            assert!(bad.parse::<Version>().is_err(), "{bad}");
        }
    }

    #[test]
    fn the_default_is_supported_and_the_table_is_ordered() {
        assert!(DEFAULT_VERSION.info().unwrap().cuda.contains(&DEFAULT_CUDA));
        assert!(
            SUPPORTED_VERSIONS
                .windows(2)
                .all(|w| w[0].version < w[1].version)
        );
    }
}
