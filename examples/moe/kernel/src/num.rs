//! Number formats both sides compute bit-identically: bf16 as raw `u16`
//! bits and fp8 e4m3 (OCP, bias 7, no infinities, max 448) with DeepEP's
//! per-128-channel scales. Integer and IEEE f32 operations only, so the CPU
//! reference gets the GPU's exact bytes.

/// Largest finite e4m3 value.
pub const E4M3_MAX: f32 = 448.0;

/// The f32 value of bf16 bits.
#[inline(always)]
pub fn bf16_to_f32(b: u16) -> f32 {
    f32::from_bits((b as u32) << 16)
}

/// `x` rounded to the nearest even e4m3, saturated to ±448 (NaN stays NaN):
/// `cvt.rn.satfinite.e4m3x2.f32`.
///
/// ```
/// use moe_kernels::num::{e4m3_to_f32, f32_to_e4m3};
/// assert_eq!(e4m3_to_f32(f32_to_e4m3(1.0)), 1.0);
/// assert_eq!(e4m3_to_f32(f32_to_e4m3(1000.0)), 448.0);
/// assert_eq!(e4m3_to_f32(f32_to_e4m3(-0.0625)), -0.0625);
/// ```
#[inline(always)]
pub fn f32_to_e4m3(x: f32) -> u8 {
    let bits = x.to_bits();
    let sign = ((bits >> 24) & 0x80) as u8;
    let a = f32::from_bits(bits & 0x7fff_ffff);
    if a.is_nan() {
        return sign | 0x7f;
    }
    if a >= E4M3_MAX {
        return sign | 0x7e;
    }
    // Below 2^-6: subnormal, steps of 2^-9 (a * 512 is exact).
    if a < 0.015625 {
        let f = a * 512.0;
        let fl = f as u32;
        let rem = f - fl as f32;
        let m = if rem > 0.5 || (rem == 0.5 && fl & 1 == 1) {
            fl + 1
        } else {
            fl
        };
        return sign | m as u8;
    }
    let b = a.to_bits();
    let mut e = ((b >> 23) as i32) - 127 + 7;
    let mant = b & 0x7f_ffff;
    let (mut m, rem) = (mant >> 20, mant & 0xf_ffff);
    if rem > 0x8_0000 || (rem == 0x8_0000 && m & 1 == 1) {
        m += 1;
    }
    if m == 8 {
        m = 0;
        e += 1;
    }
    sign | ((e as u8) << 3) | m as u8
}

/// The f32 value of e4m3 bits.
#[inline(always)]
pub fn e4m3_to_f32(v: u8) -> f32 {
    let sign = if v & 0x80 != 0 { -1.0 } else { 1.0 };
    let (e, m) = ((v >> 3) & 0xf, v & 7);
    if e == 0xf && m == 7 {
        return f32::NAN;
    }
    let mag = if e == 0 {
        m as f32 / 512.0
    } else {
        f32::from_bits((((e as u32) + 127 - 7) << 23) | ((m as u32) << 20))
    };
    sign * mag
}

/// The scale of a group of channels whose largest magnitude is `amax`, and
/// its inverse that the values are multiplied by: `amax / 448` (amax at
/// least 1e-4, as DeepEP, so a zero group stays finite).
#[inline(always)]
pub fn fp8_scale(amax: f32) -> (f32, f32) {
    let a = if amax > 1e-4 { amax } else { 1e-4 };
    (a / E4M3_MAX, E4M3_MAX / a)
}

/// Quantizes one group of bf16 channels (raw bits) into `out`, returning
/// its scale: what the dispatch kernel does per 128 channels.
///
/// ```
/// let src = [0x3f80u16; 128]; // 1.0
/// let mut out = [0u8; 128];
/// let scale = moe_kernels::num::quantize_group(&src, &mut out);
/// assert_eq!(moe_kernels::num::e4m3_to_f32(out[0]) * scale, 1.0);
/// ```
pub fn quantize_group(src: &[u16], out: &mut [u8]) -> f32 {
    let mut amax = 0.0f32;
    for &b in src {
        let v = bf16_to_f32(b);
        let a = if v < 0.0 { -v } else { v };
        amax = if a > amax { a } else { amax };
    }
    let (scale, inv) = fp8_scale(amax);
    for (o, &b) in out.iter_mut().zip(src) {
        *o = f32_to_e4m3(bf16_to_f32(b) * inv);
    }
    scale
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every e4m3 value round-trips, and every midpoint rounds to even.
    #[test]
    fn e4m3_round_trip_and_ties() {
        for v in 0u8..=255 {
            let f = e4m3_to_f32(v);
            if f.is_nan() {
                continue;
            }
            assert_eq!(f32_to_e4m3(f), v, "{v:#x} ({f})");
        }
        // Between 1.0 (0x38) and 1.125 (0x39): the tie goes to 1.0 (even).
        assert_eq!(f32_to_e4m3(1.0625), 0x38);
        // Between 1.125 and 1.25 (0x3a): to 1.25.
        assert_eq!(f32_to_e4m3(1.1875), 0x3a);
        assert_eq!(f32_to_e4m3(460.0), 0x7e);
        assert_eq!(f32_to_e4m3(f32::NAN) & 0x7f, 0x7f);
    }
}
