//! `f16`/`bf16` conversions and the packed pair types, over inline PTX.

use crate::nvvm;
use half::{bf16, f16};

/// `f32` → a 16-bit float, rounded by one `cvt` (`$ptx`).
macro_rules! from_f32 {
    ($($(#[$doc:meta])* $name:ident -> $t:ident = $ptx:literal;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name(x: f32) -> $t {
            let bits: u16;
            // SAFETY: a register conversion.
            unsafe {
                nvvm::ptx!($ptx, out(reg16) bits, in(reg32) x, options(pure, nomem, nostack));
            }
            $t::from_bits(bits)
        }
    )*};
}

from_f32! {
    /// `f32` → `f16`, round to nearest even (`cvt.rn.f16.f32`).
    ///
    /// ```no_run
    /// let h = nvshmem_device::math::f16_from_f32(1.5);
    /// ```
    f16_from_f32 -> f16 = "cvt.rn.f16.f32 {0}, {1};";
    /// `f32` → `bf16`, round to nearest even (`cvt.rn.bf16.f32`, sm_80+).
    ///
    /// ```no_run
    /// let b = nvshmem_device::math::bf16_from_f32(1.5);
    /// ```
    bf16_from_f32 -> bf16 = "cvt.rn.bf16.f32 {0}, {1};";
}

/// `f16` → `f32`, exact (`cvt.f32.f16`).
///
/// ```no_run
/// let x = nvshmem_device::math::f16_to_f32(half::f16::ONE);
/// ```
#[inline(always)]
pub fn f16_to_f32(h: f16) -> f32 {
    let x: f32;
    // SAFETY: a register conversion.
    unsafe {
        nvvm::ptx!("cvt.f32.f16 {0}, {1};", out(reg32) x, in(reg16) h.to_bits(), options(pure, nomem, nostack));
    }
    x
}

/// `bf16` → `f32`, exact: the bits shifted into the high half (no
/// instruction needed; `cvt.f32.bf16` would need sm_90).
///
/// ```
/// let x = nvshmem_device::math::bf16_to_f32(half::bf16::from_f32(2.0));
/// assert_eq!(x, 2.0);
/// ```
#[inline(always)]
pub fn bf16_to_f32(b: bf16) -> f32 {
    f32::from_bits((b.to_bits() as u32) << 16)
}

/// Declares a packed pair type and its arithmetic.
macro_rules! packed_pair {
    (
        $(#[$doc:meta])* $name:ident($half:ident, $ptx:literal, $arch:literal), cvt $cvt:literal,
        to_f32 $to_f32:path,
        $($tr:ident $f:ident $op:literal $(($k:expr))?,)*
    ) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Default, PartialEq, Eq, Hash, bytemuck::Pod, bytemuck::Zeroable)]
        #[repr(transparent)]
        pub struct $name(u32);

        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.debug_tuple(stringify!($name)).field(&self.lo()).field(&self.hi()).finish()
            }
        }

        impl $name {
            #[doc = concat!("The pair `(lo, hi)`; `lo` is in the low 16 bits, as in CUDA's `", $ptx, "` layout.")]
            ///
            /// ```
            #[doc = concat!("use nvshmem_device::math::", stringify!($name), ";")]
            #[doc = concat!("let p = ", stringify!($name), "::new(half::", stringify!($half), "::ONE, half::", stringify!($half), "::ZERO);")]
            #[doc = concat!("assert_eq!(p.lo(), half::", stringify!($half), "::ONE);")]
            /// ```
            #[inline(always)]
            pub const fn new(lo: $half, hi: $half) -> Self {
                $name(lo.to_bits() as u32 | (hi.to_bits() as u32) << 16)
            }

            /// Both halves set to `x`.
            ///
            /// ```
            #[doc = concat!("let p = nvshmem_device::math::", stringify!($name), "::splat(half::", stringify!($half), "::ONE);")]
            /// ```
            #[inline(always)]
            pub const fn splat(x: $half) -> Self {
                Self::new(x, x)
            }

            /// The low half (the first element in memory).
            ///
            /// ```
            #[doc = concat!("let p = nvshmem_device::math::", stringify!($name), "::default();")]
            #[doc = concat!("assert_eq!(p.lo(), half::", stringify!($half), "::ZERO);")]
            /// ```
            #[inline(always)]
            pub const fn lo(self) -> $half {
                $half::from_bits(self.0 as u16)
            }

            /// The high half (the second element in memory).
            ///
            /// ```
            #[doc = concat!("let p = nvshmem_device::math::", stringify!($name), "::default();")]
            #[doc = concat!("assert_eq!(p.hi(), half::", stringify!($half), "::ZERO);")]
            /// ```
            #[inline(always)]
            pub const fn hi(self) -> $half {
                $half::from_bits((self.0 >> 16) as u16)
            }

            /// The 32 bits (`lo` in the low half).
            ///
            /// ```
            #[doc = concat!("assert_eq!(nvshmem_device::math::", stringify!($name), "::from_bits(7).to_bits(), 7);")]
            /// ```
            #[inline(always)]
            pub const fn to_bits(self) -> u32 {
                self.0
            }

            /// From 32 bits (`lo` in the low half).
            ///
            /// ```
            #[doc = concat!("let p = nvshmem_device::math::", stringify!($name), "::from_bits(0x3c00_3c00);")]
            /// ```
            #[inline(always)]
            pub const fn from_bits(bits: u32) -> Self {
                $name(bits)
            }

            #[doc = concat!("Both `f32`s rounded to nearest even, in one instruction (`", $cvt, "`).")]
            ///
            /// ```no_run
            #[doc = concat!("let p = nvshmem_device::math::", stringify!($name), "::from_f32s(0.5, 2.0);")]
            /// ```
            #[inline(always)]
            pub fn from_f32s(lo: f32, hi: f32) -> Self {
                let bits: u32;
                // SAFETY: a register conversion; the first source goes to the upper half.
                unsafe {
                    nvvm::ptx!(concat!($cvt, " {0}, {1}, {2};"), out(reg32) bits, in(reg32) hi, in(reg32) lo,
                        options(pure, nomem, nostack));
                }
                $name(bits)
            }

            /// Both halves as `f32`s, exactly: `(lo, hi)`.
            ///
            /// ```no_run
            #[doc = concat!("let (a, b) = nvshmem_device::math::", stringify!($name), "::from_f32s(0.5, 2.0).to_f32s();")]
            /// ```
            #[inline(always)]
            pub fn to_f32s(self) -> (f32, f32) {
                ($to_f32(self.lo()), $to_f32(self.hi()))
            }

            #[doc = concat!("`a · b + c` per half, one rounding (`fma.rn.", $ptx, "`, ", $arch, ").")]
            ///
            /// ```no_run
            #[doc = concat!("use nvshmem_device::math::", stringify!($name), ";")]
            #[doc = concat!("let one = ", stringify!($name), "::from_f32s(1.0, 1.0);")]
            #[doc = concat!("let r = ", stringify!($name), "::fma(one, one, one); // (2, 2)")]
            /// ```
            #[inline(always)]
            pub fn fma(a: Self, b: Self, c: Self) -> Self {
                packed_pair!(@bin $name, [c.0], concat!("fma.rn.", $ptx, " {0}, {1}, {2}, {3};"), a, b)
            }

            #[doc = concat!("The smaller of each half (`min.", $ptx, "`, sm_80+; a NaN half loses to a number).")]
            ///
            /// ```no_run
            #[doc = concat!("use nvshmem_device::math::", stringify!($name), ";")]
            #[doc = concat!("let m = ", stringify!($name), "::from_f32s(1.0, 4.0).min(", stringify!($name), "::from_f32s(2.0, 3.0));")]
            /// ```
            #[inline(always)]
            pub fn min(self, other: Self) -> Self {
                packed_pair!(@bin $name, [], concat!("min.", $ptx, " {0}, {1}, {2};"), self, other)
            }

            #[doc = concat!("The larger of each half (`max.", $ptx, "`, sm_80+).")]
            ///
            /// ```no_run
            #[doc = concat!("use nvshmem_device::math::", stringify!($name), ";")]
            #[doc = concat!("let m = ", stringify!($name), "::from_f32s(1.0, 4.0).max(", stringify!($name), "::from_f32s(2.0, 3.0));")]
            /// ```
            #[inline(always)]
            pub fn max(self, other: Self) -> Self {
                packed_pair!(@bin $name, [], concat!("max.", $ptx, " {0}, {1}, {2};"), self, other)
            }
        }

        impl From<[$half; 2]> for $name {
            /// `[lo, hi]`, the memory order.
            fn from([lo, hi]: [$half; 2]) -> Self {
                Self::new(lo, hi)
            }
        }

        impl From<$name> for [$half; 2] {
            /// `[lo, hi]`, the memory order.
            fn from(p: $name) -> Self {
                [p.lo(), p.hi()]
            }
        }

        $(impl core::ops::$tr for $name {
            type Output = Self;
            #[doc = concat!("Per half, round to nearest (`", $op, "`).")]
            #[inline(always)]
            fn $f(self, rhs: Self) -> Self {
                packed_pair!(@bin $name, [$($k)?], $op, self, rhs)
            }
        })*
    };
    // `$op` is a full instruction template over {0} = d, {1} = a, {2} = b and
    // {3} = `$k` (the third operand of an `fma`, or a constant: packed
    // instructions take no immediates).
    (@bin $name:ident, [$($k:expr)?], $op:expr, $a:expr, $b:expr) => {{
        let d: u32;
        let (a, b) = ($a.0, $b.0);
        // SAFETY: register arithmetic.
        unsafe {
            nvvm::ptx!($op, out(reg32) d, in(reg32) a, in(reg32) b, $(in(reg32) $k as u32,)? options(pure, nomem, nostack));
        }
        $name(d)
    }};
}

packed_pair! {
    /// Two `f16`s in 32 bits (CUDA's `__half2`), with packed `.f16x2`
    /// arithmetic: `+ - *` and [`fma`](Self::fma) (sm_53+), [`min`](Self::min)
    /// and [`max`](Self::max) (sm_80+), all round-to-nearest, no flush to
    /// zero. Bit-compatible with `[half::f16; 2]`.
    ///
    /// ```no_run
    /// use nvshmem_device::math::F16x2;
    /// let a = F16x2::from_f32s(1.0, 2.0);
    /// let b = F16x2::splat(half::f16::from_f32(0.5));
    /// let c = a * b + a; // (1.5, 3.0)
    /// ```
    F16x2(f16, "f16x2", "sm_53+"), cvt "cvt.rn.f16x2.f32",
    to_f32 f16_to_f32,
    Add add "add.rn.f16x2 {0}, {1}, {2};",
    Sub sub "sub.rn.f16x2 {0}, {1}, {2};",
    Mul mul "mul.rn.f16x2 {0}, {1}, {2};",
}

packed_pair! {
    /// Two `bf16`s in 32 bits (CUDA's `__nv_bfloat162`), with packed
    /// `.bf16x2` arithmetic (sm_80+): `+ - *` as `fma.rn.bf16x2` with 1.0 or
    /// -0.0 (exactly the correctly rounded result, as CUDA's headers do before
    /// sm_90), [`fma`](Self::fma), [`min`](Self::min), [`max`](Self::max).
    /// Bit-compatible with `[half::bf16; 2]`.
    ///
    /// ```no_run
    /// use nvshmem_device::math::Bf16x2;
    /// let a = Bf16x2::from_f32s(1.0, 2.0);
    /// let c = a * a - a; // (0.0, 2.0)
    /// ```
    Bf16x2(bf16, "bf16x2", "sm_80+"), cvt "cvt.rn.bf16x2.f32",
    to_f32 bf16_to_f32,
    // a + b = fma(a, 1, b); a - b = fma(b, -1, a); a * b = fma(a, b, -0).
    Add add "fma.rn.bf16x2 {0}, {1}, {3}, {2};" (0x3f80_3f80),
    Sub sub "fma.rn.bf16x2 {0}, {2}, {3}, {1};" (0xbf80_bf80),
    Mul mul "fma.rn.bf16x2 {0}, {1}, {2}, {3};" (0x8000_8000),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_match_the_half_layout() {
        let p = F16x2::new(f16::from_f32(1.0), f16::from_f32(-2.0));
        assert_eq!(p.to_bits(), 0xc000_3c00);
        let arr: [f16; 2] = p.into();
        assert_eq!(bytemuck::cast::<[f16; 2], u32>(arr), p.to_bits());
        assert_eq!(F16x2::from(arr), p);
        let b = Bf16x2::new(bf16::from_f32(1.0), bf16::from_f32(2.0));
        assert_eq!(b.to_bits(), 0x4000_3f80);
        assert_eq!(bf16_to_f32(b.hi()), 2.0);
        extern crate std;
        assert_eq!(std::format!("{b:?}"), "Bf16x2(1.0, 2.0)");
    }
}
