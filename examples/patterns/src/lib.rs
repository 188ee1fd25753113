//! The deterministic test patterns that kernels write and hosts check, in one
//! `no_std` place so that both sides use the same function: a kernel crate
//! depends on this crate as it is (it builds for `nvptx64`), and the host
//! programs through `example_patterns`.
//!
//! The CUDA C++ twins in `bench/cpp/kernels.cu` repeat [`pattern_byte`];
//! change both together.

#![no_std]
#![warn(missing_docs)]

/// The all-reduce test pattern: the value PE `pe` contributes at index `i` in
/// round `seed`, an integer in `1..=16`, so any sum over up to 2^20 PEs is
/// exact in `f32`.
///
/// ```
/// let v = example_patterns::pattern(3, 1 << 40, 7);
/// assert!((1..=16).contains(&v));
/// ```
#[inline(always)]
pub fn pattern(pe: u32, i: u64, seed: u32) -> u32 {
    let mut h = (i as u32) ^ ((i >> 32) as u32).wrapping_mul(0x27d4_eb2f);
    h = h.wrapping_mul(0x9e37_79b1)
        ^ pe.wrapping_add(1).wrapping_mul(0x85eb_ca77)
        ^ seed.wrapping_mul(0xc2b2_ae3d);
    h ^= h >> 15;
    h = h.wrapping_mul(0x2c1b_3c6d);
    h ^= h >> 12;
    (h & 15) + 1
}

/// The benchmark's byte pattern of round `seed` at index `i`: never zero, so
/// that a zeroed (poisoned) destination shows.
///
/// ```
/// assert!((0..1000).all(|i| example_patterns::pattern_byte(i, 5) != 0));
/// ```
#[inline(always)]
pub fn pattern_byte(i: u64, seed: u32) -> u8 {
    let mut h = (i as u32) ^ ((i >> 32) as u32).wrapping_mul(0x27d4_eb2f);
    h = h.wrapping_mul(0x9e37_79b1) ^ seed.wrapping_mul(0x85eb_ca77);
    h ^= h >> 15;
    h = h.wrapping_mul(0x2c1b_3c6d);
    h ^= h >> 13;
    (h % 255) as u8 + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_is_small_and_varied() {
        let first = pattern(0, 0, 7);
        assert!((0..64u64).all(|i| (1..=16).contains(&pattern((i % 3) as u32, i, 7))));
        assert!((0..64u64).any(|i| pattern(0, i, 7) != first));
    }

    #[test]
    fn bytes_are_never_zero_and_varied() {
        assert!((0..100_000).all(|i| pattern_byte(i, 7) != 0));
        assert!((0..64).any(|i| pattern_byte(i, 7) != pattern_byte(0, 7)));
    }
}
