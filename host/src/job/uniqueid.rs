//! NVSHMEM's unique id: what every PE of a UID-bootstrapped job shares.

use crate::error::{Error, Result};
use crate::runtime::library::{HostLibrary, LibraryRequest};
use std::fmt;

/// NVSHMEM's 128-byte unique id (`nvshmemx_uniqueid_t`).
///
/// One process generates it ([`UniqueId::generate`]); every PE then passes the
/// same id, its rank and the PE count to [`Bootstrap::UniqueId`](crate::Bootstrap::UniqueId).
/// The generating process hosts the bootstrap's root (a listening TCP socket),
/// so it must keep running until every PE has initialized. The launcher
/// `nvshmem-run` does this and hands the id to each PE as 256 hex digits.
///
/// ```
/// use nvshmem_host::UniqueId;
/// let id = UniqueId::from_bytes([7; 128]);
/// let hex = id.to_hex();
/// assert_eq!(hex.len(), 256);
/// assert_eq!(UniqueId::from_hex(&hex)?, id);
/// # Ok::<(), nvshmem_host::Error>(())
/// ```
#[repr(C, align(8))]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct UniqueId {
    bytes: [u8; UniqueId::LEN],
}

impl UniqueId {
    /// Its size in bytes, `sizeof(nvshmemx_uniqueid_t)`.
    pub const LEN: usize = 128;

    /// Generates a fresh id with the host library found by the default
    /// discovery (see [`crate::library`]). Needs no GPU.
    ///
    /// This process becomes the bootstrap's root: keep it alive until all PEs
    /// have initialized. On one machine, set
    /// `NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=lo` first, in this process and the PEs.
    ///
    /// ```no_run
    /// let id = nvshmem_host::UniqueId::generate()?;
    /// println!("{id}"); // 256 hex digits
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn generate() -> Result<UniqueId> {
        Self::generate_with(&LibraryRequest::default())
    }

    /// [`UniqueId::generate`] with the library of `request`.
    pub fn generate_with(request: &LibraryRequest) -> Result<UniqueId> {
        let lib = HostLibrary::load(request)?;
        Ok(UniqueId {
            bytes: lib.get_uniqueid()?,
        })
    }

    /// The id from its raw bytes.
    pub const fn from_bytes(bytes: [u8; Self::LEN]) -> Self {
        UniqueId { bytes }
    }

    /// The raw bytes.
    pub const fn as_bytes(&self) -> &[u8; Self::LEN] {
        &self.bytes
    }

    /// The id as 256 lowercase hex digits (the launcher's `NVSHMEM_RUN_UNIQUEID`).
    pub fn to_hex(&self) -> String {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut s = String::with_capacity(2 * Self::LEN);
        for b in self.bytes {
            s.push(DIGITS[(b >> 4) as usize] as char);
            s.push(DIGITS[(b & 0xf) as usize] as char);
        }
        s
    }

    /// Parses 256 hex digits (either case; surrounding whitespace is ignored).
    pub fn from_hex(hex: &str) -> Result<UniqueId> {
        let hex = hex.trim();
        if hex.len() != 2 * Self::LEN {
            return Err(Error::InvalidUniqueId {
                reason: format!("it has {} characters", hex.len()),
            });
        }
        let digit = |c: u8, at: usize| -> Result<u8> {
            (c as char)
                .to_digit(16)
                .map(|d| d as u8)
                .ok_or_else(|| Error::InvalidUniqueId {
                    reason: format!("character {at} is {:?}, not a hex digit", c as char),
                })
        };
        let mut bytes = [0u8; Self::LEN];
        let raw = hex.as_bytes();
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (digit(raw[2 * i], 2 * i)? << 4) | digit(raw[2 * i + 1], 2 * i + 1)?;
        }
        Ok(UniqueId { bytes })
    }

    pub(crate) fn zeroed() -> Self {
        UniqueId {
            bytes: [0; Self::LEN],
        }
    }

    pub(crate) fn as_ptr(&self) -> *const u8 {
        self.bytes.as_ptr()
    }

    pub(crate) fn as_mut_ptr(&mut self) -> *mut u8 {
        self.bytes.as_mut_ptr()
    }
}

impl fmt::Display for UniqueId {
    /// The 256 hex digits of [`UniqueId::to_hex`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for UniqueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hex = self.to_hex();
        write!(f, "UniqueId({}…)", &hex[..16])
    }
}

impl std::str::FromStr for UniqueId {
    type Err = Error;
    /// [`UniqueId::from_hex`].
    fn from_str(s: &str) -> Result<Self> {
        Self::from_hex(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_every_byte_value() {
        let mut bytes = [0u8; 128];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (i * 2 + 1) as u8;
        }
        bytes[127] = 0xff;
        let id = UniqueId::from_bytes(bytes);
        let hex = id.to_hex();
        assert_eq!(hex.len(), 256);
        assert!(
            hex.chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_eq!(UniqueId::from_hex(&hex).unwrap(), id);
        assert_eq!(UniqueId::from_hex(&hex.to_uppercase()).unwrap(), id);
        assert_eq!(format!("  {hex}\n").parse::<UniqueId>().unwrap(), id);
        assert_eq!(id.to_string(), hex);
    }

    #[test]
    fn malformed_hex_is_an_error_not_a_panic() {
        for bad in [
            "",
            "00",
            &"0".repeat(255),
            &"0".repeat(257),
            &format!("{}zz", "0".repeat(254)),
            &"é".repeat(128),
        ] {
            let err = UniqueId::from_hex(bad).unwrap_err();
            assert!(
                matches!(err, Error::InvalidUniqueId { .. }),
                "{bad:?}: {err:?}"
            );
            assert!(err.to_string().contains("256 hex digits"));
        }
    }

    #[test]
    fn layout_is_that_of_nvshmemx_uniqueid_t() {
        assert_eq!(std::mem::size_of::<UniqueId>(), 128);
        assert!(
            std::mem::align_of::<UniqueId>()
                >= std::mem::align_of::<crate::sys::nvshmemx_uniqueid_t>()
        );
        assert!(
            std::mem::align_of::<UniqueId>()
                >= std::mem::align_of::<crate::sys::nvshmemx_uniqueid_t>()
        );
    }
}
