//! Tile orders: which output tile the `t`-th block (or the `t`-th step of a
//! persistent block walk) computes.
//!
//! The blocks that run at the same time read their tiles' A and B panels
//! (`BM × K` and `BN × K`) together. In row- or column-major order a wave of
//! `W` blocks spans one or two tile rows and `W` columns (or the reverse):
//! `W + 1` or `W + 2` distinct panels. In [`grouped`] order it spans a
//! `group × W / group` rectangle: about `2·√W` panels when `group ≈ √W`, so
//! at large K, where a wave's panels do not fit in L2, each panel comes
//! from DRAM fewer times.

use core::num::NonZeroU32;

/// Tile `t` of an `m_tiles × n_tiles` grid of output tiles in grouped order:
/// bands of `group` tile rows (the last band may be thinner), each walked
/// column by column, M fastest within a column. Returns (row tile, column
/// tile); `t` must be below `m_tiles · n_tiles`. `group` is clamped to
/// `1..=m_tiles`: 1 is row-major order, `m_tiles` column-major (M fastest).
#[inline(always)]
pub fn grouped(t: usize, m_tiles: usize, n_tiles: usize, group: usize) -> (usize, usize) {
    // 32-bit divisions: a 64-bit one is a long software routine on the GPU,
    // and no grid has 2^32 tiles.
    // Divisors as `NonZeroU32`: no division-by-zero panic path in kernels
    // (a divisor of 0 only arises with no tiles, where `t` is out of range).
    let nz = |x: u32| NonZeroU32::new(x).unwrap_or(NonZeroU32::MIN);
    let (t, m_tiles, n_tiles) = (t as u32, m_tiles as u32, n_tiles as u32);
    let group = (group as u32).clamp(1, m_tiles.max(1));
    let per_band = nz(group * n_tiles);
    let (band, r) = (t / per_band, t % per_band);
    let first = band * group;
    let rows = nz(m_tiles.wrapping_sub(first).min(group));
    ((first + r % rows) as usize, (r / rows) as usize)
}

#[cfg(test)]
mod tests {
    use super::grouped;

    /// Every order visits every tile exactly once.
    #[test]
    fn grouped_is_a_permutation() {
        for (mt, nt) in [(1, 1), (4, 3), (7, 5), (32, 16), (64, 32)] {
            for group in [0, 1, 2, 3, 8, 16, 100] {
                let mut seen = [false; 64 * 32];
                for t in 0..mt * nt {
                    let (m, n) = grouped(t, mt, nt, group);
                    assert!(
                        m < mt && n < nt,
                        "{mt}x{nt} g{group}: tile {t} -> ({m}, {n})"
                    );
                    assert!(!seen[m * nt + n], "{mt}x{nt} g{group}: ({m}, {n}) twice");
                    seen[m * nt + n] = true;
                }
            }
        }
    }

    /// `group = m_tiles` is the M-fastest order, 1 the N-fastest one.
    #[test]
    fn grouped_extremes() {
        let (mt, nt) = (5, 3);
        for t in 0..mt * nt {
            assert_eq!(grouped(t, mt, nt, mt), (t % mt, t / mt));
            assert_eq!(grouped(t, mt, nt, 1), (t / nt, t % nt));
        }
    }
}
