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
    /// One `lib/libnvshmem_device_sm_NN.bc` per listed architecture number.
    PerArch(&'static [u32]),
}

/// What this library knows about one supported NVSHMEM version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VersionInfo {
    /// The version.
    pub version: Version,
    /// The pip requirement that installs it.
    pub wheel: &'static str,
    /// How its device bitcode is laid out.
    pub bitcode: BitcodeLayout,
    /// The lowest PTX ISA its bitcode's functions ask for, `(major, minor)`.
    pub min_ptx_isa: (u32, u32),
    /// `sizeof(nvshmemi_device_host_state_t)`, the device state a module
    /// carries: why a PTX must be linked against the host library's version.
    pub device_state_size: u32,
}

/// The NVSHMEM version used when none is asked for: the one PyTorch 2.11 bundles.
pub const DEFAULT_VERSION: Version = Version::new(3, 4, 5);

/// Every NVSHMEM version this library supports, oldest first. Adding one is a
/// row here, plus its host bindings' struct module (`nvshmem-host`'s `sys`).
pub const SUPPORTED_VERSIONS: &[VersionInfo] = &[
    VersionInfo {
        version: Version::new(3, 4, 5),
        wheel: "nvidia-nvshmem-cu13==3.4.5",
        bitcode: BitcodeLayout::Single,
        min_ptx_isa: (8, 3),
        device_state_size: 776,
    },
    VersionInfo {
        version: Version::new(3, 8, 0),
        wheel: "nvidia-nvshmem-cu13==3.8.0",
        bitcode: BitcodeLayout::PerArch(&[75, 80, 89, 90, 100]),
        min_ptx_isa: (8, 8),
        device_state_size: 848,
    },
];

/// The supported versions as a list for messages: `3.4.5, 3.8.0`.
///
/// ```
/// assert_eq!(nvshmem_types::SupportedVersions.to_string(), "3.4.5, 3.8.0");
/// ```
#[derive(Clone, Copy, Debug)]
pub struct SupportedVersions;

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
        assert!(DEFAULT_VERSION.info().is_some());
        assert!(
            SUPPORTED_VERSIONS
                .windows(2)
                .all(|w| w[0].version < w[1].version)
        );
    }
}
