//! The symmetric heap's limit, which the runtime enforces before NVSHMEM
//! sees an allocation (NVSHMEM faults on one it cannot serve).

use crate::env::Lookup;
use crate::error::{Error, Result};

/// NVSHMEM's defaults for the heap (as `NVSHMEM_INFO=1` prints them for 3.4 and 3.8).
const DEFAULT_SYMMETRIC_SIZE: usize = 1 << 30;
const DEFAULT_MAX_MEMORY_PER_GPU: usize = 128 << 30;

/// The most symmetric memory this runtime hands out per PE.
///
/// NVSHMEM does not survive an allocation it cannot serve: it reports "Not
/// enough space", then faults inside the allocation's barrier. So the runtime
/// refuses allocations that cannot fit before NVSHMEM sees them. It depends
/// on the environment and the GPU model, not on free memory; PEs of other GPU
/// models or environments, and PEs sharing a GPU, have other limits, so
/// `Nvshmem::alloc` agrees with every PE on the tightest one ([`HeapLimit::shared_by`]):
/// every PE refuses the same allocation and none is left waiting in the
/// collective call. Memory used by other processes can still make NVSHMEM
/// fail below the limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HeapLimit {
    /// Bytes.
    pub(crate) bytes: usize,
    /// What sets it, for messages.
    pub(crate) from: &'static str,
    /// The GPU's memory, which the heaps of the PEs on it share as they grow
    /// (CUDA VMM); `None` without VMM, where NVSHMEM reserved the heap at init.
    pub(crate) gpu_memory: Option<usize>,
}

impl HeapLimit {
    /// With CUDA VMM (NVSHMEM's default on x86), the heap grows up to
    /// `NVSHMEM_MAX_MEMORY_PER_GPU`, and never past the GPU's memory; without,
    /// it is `NVSHMEM_SYMMETRIC_SIZE`.
    pub(crate) fn from_env(env: Lookup, gpu_memory: usize) -> Result<Self> {
        let size = |var: &str, default: usize| -> Result<usize> {
            match env(var) {
                None => Ok(default),
                Some(v) => parse_nvshmem_size(&v).ok_or_else(|| Error::InvalidEnv {
                    var: var.into(),
                    value: v.clone(),
                    reason: "expected a size such as 1073741824, 512m or 2G".into(),
                }),
            }
        };
        let symmetric = size("NVSHMEM_SYMMETRIC_SIZE", DEFAULT_SYMMETRIC_SIZE)?;
        let vmm_disabled = env("NVSHMEM_DISABLE_CUDA_VMM").is_some_and(|v| {
            matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "1" | "y" | "yes" | "t" | "true" | "on"
            )
        });
        if vmm_disabled {
            return Ok(HeapLimit {
                bytes: symmetric,
                from: "NVSHMEM_SYMMETRIC_SIZE (CUDA VMM is disabled)",
                gpu_memory: None,
            });
        }
        let max = size("NVSHMEM_MAX_MEMORY_PER_GPU", DEFAULT_MAX_MEMORY_PER_GPU)?.max(symmetric);
        Ok(if max <= gpu_memory {
            HeapLimit {
                bytes: max,
                from: "NVSHMEM_MAX_MEMORY_PER_GPU",
                gpu_memory: Some(gpu_memory),
            }
        } else {
            HeapLimit {
                bytes: gpu_memory,
                from: "the GPU's memory",
                gpu_memory: Some(gpu_memory),
            }
        })
    }

    /// The bytes an allocation of `bytes` aligned to `align` takes from the
    /// heap, or [`Error::HeapExhausted`] (this limit being PE `pe`'s) when
    /// they would take the `used` bytes past it.
    pub(crate) fn charge(
        self,
        bytes: usize,
        align: usize,
        used: usize,
        pe: nvshmem_types::Pe,
    ) -> Result<usize> {
        let charged = bytes.next_multiple_of(align);
        if used.saturating_add(charged) > self.bytes {
            return Err(self.exhausted(bytes, used, pe));
        }
        Ok(charged)
    }

    /// [`Error::HeapExhausted`] for an allocation of `bytes` with `used` live.
    pub(crate) fn exhausted(self, bytes: usize, used: usize, pe: nvshmem_types::Pe) -> Error {
        Error::HeapExhausted {
            bytes,
            used,
            limit: self.bytes,
            limit_from: self.from,
            pe,
        }
    }

    /// The limit of a PE whose GPU `pes` PEs share (itself included): each
    /// gets at most its share of the GPU's memory, since their heaps grow
    /// side by side.
    pub(crate) fn shared_by(self, pes: usize) -> HeapLimit {
        match self.gpu_memory {
            Some(gpu) if pes > 1 && gpu / pes < self.bytes => HeapLimit {
                bytes: gpu / pes,
                from: "the GPU's memory, divided among the PEs on it",
                ..self
            },
            _ => self,
        }
    }
}

/// Parses a size as NVSHMEM does: a number, possibly fractional, and an
/// optional `k`/`m`/`g`/`t` suffix (binary multiples); later characters are ignored.
pub(crate) fn parse_nvshmem_size(text: &str) -> Option<usize> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, rest) = text.split_at(split);
    let number: f64 = if number.starts_with('.') {
        format!("0{number}").parse().ok()?
    } else {
        number.parse().ok()?
    };
    let scale: f64 = match rest.chars().next().map(|c| c.to_ascii_lowercase()) {
        None => 1.0,
        Some('k') => (1u64 << 10) as f64,
        Some('m') => (1u64 << 20) as f64,
        Some('g') => (1u64 << 30) as f64,
        Some('t') => (1u64 << 40) as f64,
        Some(_) => return None,
    };
    let bytes = (number * scale).ceil();
    (bytes.is_finite() && bytes < usize::MAX as f64).then_some(bytes as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env;

    #[test]
    fn sizes_parse_as_nvshmem_parses_them() {
        assert_eq!(parse_nvshmem_size("1073741824"), Some(1 << 30));
        assert_eq!(parse_nvshmem_size("20m"), Some(20 << 20));
        assert_eq!(parse_nvshmem_size("3.1M"), Some(3250586));
        assert_eq!(parse_nvshmem_size(".5m"), Some(1 << 19));
        assert_eq!(parse_nvshmem_size("2G"), Some(2 << 30));
        assert_eq!(parse_nvshmem_size("20kk"), Some(20 << 10));
        assert_eq!(parse_nvshmem_size("1t"), Some(1 << 40));
        for bad in ["", "x", "12q", "-1"] {
            assert_eq!(parse_nvshmem_size(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_heap_limit_is_the_same_on_every_pe_and_below_the_gpu() {
        let gpu = 140 << 30;
        let limit = |vars: &[(&str, &str)]| HeapLimit::from_env(&env::of(vars), gpu).unwrap();
        assert_eq!(limit(&[]).bytes, 128 << 30);
        assert_eq!(
            limit(&[("NVSHMEM_MAX_MEMORY_PER_GPU", "1t")]),
            HeapLimit {
                bytes: gpu,
                from: "the GPU's memory",
                gpu_memory: Some(gpu),
            }
        );
        assert_eq!(
            limit(&[("NVSHMEM_MAX_MEMORY_PER_GPU", "8g")]).bytes,
            8 << 30
        );
        let fixed = limit(&[
            ("NVSHMEM_DISABLE_CUDA_VMM", "1"),
            ("NVSHMEM_SYMMETRIC_SIZE", "256m"),
        ]);
        assert_eq!(fixed.bytes, 256 << 20);
        // PEs sharing a GPU split its memory; a fixed heap was reserved at init.
        assert_eq!(limit(&[]).shared_by(1).bytes, 128 << 30);
        assert_eq!(limit(&[]).shared_by(2).bytes, 70 << 30);
        assert_eq!(limit(&[]).shared_by(4).bytes, 35 << 30);
        assert_eq!(fixed.shared_by(4), fixed);
        assert!(HeapLimit::from_env(&env::of(&[("NVSHMEM_SYMMETRIC_SIZE", "big")]), gpu).is_err());
    }
}
