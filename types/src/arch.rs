//! GPU architectures (`sm_90`, `sm_90a`, ...).

use core::fmt;
use core::str::FromStr;

/// A GPU architecture as PTX names it: `sm_` and the compute capability,
/// with `a` for the architecture-specific features of that one generation
/// (`sm_90a` has `wgmma` and `setmaxnreg`).
///
/// ```
/// use nvshmem_types::Arch;
/// let a: Arch = "sm_90a".parse().unwrap();
/// assert_eq!(a.number(), 90);
/// assert!(a.is_arch_specific());
/// assert_eq!(a.to_string(), "sm_90a");
/// assert!("sm_999".parse::<Arch>().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Arch {
    number: u32,
    arch_specific: bool,
}

/// The architectures that both the pinned LLVM's NVPTX backend (22.1,
/// `llc -mtriple=nvptx64 -mcpu=help`) and `ptxas` 13.0 (`ptxas --help`,
/// `--gpu-name`) accept, checked by compiling a kernel for each through
/// `llc` and `ptxas`. CUDA 13 dropped everything below `sm_75`; LLVM's
/// `sm_101` is `sm_110` in CUDA 13, so ptxas refuses it. `a` forms exist for
/// 90 and above. (Both also know the `f` family forms, `sm_100f` and up,
/// which this type does not name.)
pub const SUPPORTED_ARCHS: &[u32] = &[75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121];

impl Arch {
    /// The architecture built for when none is asked for: `sm_90` (H100 and
    /// H200, without the `sm_90a`-only instructions).
    ///
    /// ```
    /// assert_eq!(nvshmem_types::Arch::DEFAULT.to_string(), "sm_90");
    /// ```
    pub const DEFAULT: Arch = Arch {
        number: 90,
        arch_specific: false,
    };

    /// `sm_<number>`, if supported.
    ///
    /// ```
    /// assert!(nvshmem_types::Arch::new(80).is_some());
    /// assert!(nvshmem_types::Arch::new(70).is_none());
    /// ```
    pub fn new(number: u32) -> Option<Self> {
        SUPPORTED_ARCHS.contains(&number).then_some(Arch {
            number,
            arch_specific: false,
        })
    }

    /// The compute capability as a number: 90 for `sm_90` and `sm_90a`.
    pub const fn number(self) -> u32 {
        self.number
    }

    /// Whether this is an `a` architecture (`sm_90a`).
    pub const fn is_arch_specific(self) -> bool {
        self.arch_specific
    }

    /// The `a` form of this architecture (`sm_90` → `sm_90a`), which has its
    /// generation's architecture-specific instructions; `None` below `sm_90`.
    ///
    /// ```
    /// use nvshmem_types::Arch;
    /// assert_eq!(Arch::DEFAULT.arch_specific().unwrap().to_string(), "sm_90a");
    /// assert!(Arch::new(80).unwrap().arch_specific().is_none());
    /// ```
    pub const fn arch_specific(self) -> Option<Arch> {
        if self.number >= 90 {
            Some(Arch {
                number: self.number,
                arch_specific: true,
            })
        } else {
            None
        }
    }

    /// The lowest PTX ISA version the builder emits for this architecture, as
    /// `major * 10 + minor` (`78` for PTX 7.8): the lowest that `llc` and
    /// `ptxas` 13.0 accept for it (each checked), raised to 8.3 on sm_90 for
    /// the tensor-map fence of TMA kernels.
    ///
    /// ```
    /// use nvshmem_types::Arch;
    /// assert_eq!("sm_90".parse::<Arch>().unwrap().min_ptx_isa(), 83);
    /// assert_eq!("sm_90a".parse::<Arch>().unwrap().min_ptx_isa(), 83);
    /// assert_eq!("sm_80".parse::<Arch>().unwrap().min_ptx_isa(), 70);
    /// assert_eq!("sm_110".parse::<Arch>().unwrap().min_ptx_isa(), 90);
    /// ```
    pub const fn min_ptx_isa(self) -> u32 {
        match (self.number, self.arch_specific) {
            // 8.3 for TMA kernels' `fence.proxy.tensormap` (and NVSHMEM 3.4.5's
            // own bitcode asks for it).
            (90, _) => 83,
            (0..=75, _) => 63,
            (76..=80, _) => 70,
            (81..=86, _) => 71,
            (88, _) => 90,
            (87..=99, _) => 78,
            (100..=102, _) => 86,
            (120, _) => 87,
            (103 | 121, _) => 88,
            _ => 90,
        }
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "sm_{}{}",
            self.number,
            if self.arch_specific { "a" } else { "" }
        )
    }
}

/// An architecture string that is malformed or not supported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseArchError;

impl fmt::Display for ParseArchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("supported GPU architectures: ")?;
        for (i, n) in SUPPORTED_ARCHS.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "sm_{n}")?;
            if *n >= 90 {
                write!(f, " (sm_{n}a)")?;
            }
        }
        Ok(())
    }
}

impl core::error::Error for ParseArchError {}

impl FromStr for Arch {
    type Err = ParseArchError;
    fn from_str(s: &str) -> Result<Self, ParseArchError> {
        let digits = s.trim().strip_prefix("sm_").ok_or(ParseArchError)?;
        let (digits, arch_specific) = match digits.strip_suffix('a') {
            Some(d) => (d, true),
            None => (digits, false),
        };
        if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(ParseArchError);
        }
        let number: u32 = digits.parse().map_err(|_| ParseArchError)?;
        let mut arch = Arch::new(number).ok_or(ParseArchError)?;
        if arch_specific && number < 90 {
            return Err(ParseArchError);
        }
        arch.arch_specific = arch_specific;
        Ok(arch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    #[test]
    fn the_default_is_supported() {
        assert_eq!(Arch::new(Arch::DEFAULT.number()), Some(Arch::DEFAULT));
    }

    #[test]
    fn parses_supported_and_refuses_the_rest() {
        for ok in [
            "sm_75", "sm_80", "sm_88", "sm_90", "sm_90a", "sm_100", "sm_100a", "sm_120",
        ] {
            assert_eq!(ok.parse::<Arch>().unwrap().to_string(), ok);
        }
        for bad in [
            "sm90",
            "sm_",
            "sm_9",
            "compute_90",
            "sm_9x",
            "sm_999",
            "sm_70",
            "sm_80a",
            "sm_101",
        ] {
            assert!(bad.parse::<Arch>().is_err(), "{bad}");
        }
    }
}
