//! Math: every libdevice function in `f32` and `f64`, the fast
//! approximations, `f16`/`bf16` conversions and packed arithmetic.

use nvshmem_device::math::{self, Bf16x2, F16x2, Float, approx};
use nvshmem_device::thread::global_index_x;

/// `f32`/`f64` with the integer conversions the table needs.
trait Num: Float {
    fn from_i32(i: i32) -> Self;
    fn to_i32(self) -> i32;
}
impl Num for f32 {
    fn from_i32(i: i32) -> Self {
        i as f32
    }
    fn to_i32(self) -> i32 {
        self as i32
    }
}
impl Num for f64 {
    fn from_i32(i: i32) -> Self {
        i as f64
    }
    fn to_i32(self) -> i32 {
        self as i32
    }
}

/// The number of entries of [`apply`]; `tests/compute.rs` has the same table.
pub const FUNCTIONS: u32 = 73;

/// Function `k` of the table at `(x, y, z)`.
#[inline(always)]
fn apply<T: Num>(k: u32, x: T, y: T, z: T) -> T {
    match k {
        0 => math::exp(x),
        1 => math::exp2(x),
        2 => math::exp10(x),
        3 => math::expm1(x),
        4 => math::log(x),
        5 => math::log2(x),
        6 => math::log10(x),
        7 => math::log1p(x),
        8 => math::sin(x),
        9 => math::cos(x),
        10 => math::tan(x),
        11 => math::asin(x),
        12 => math::acos(x),
        13 => math::atan(x),
        14 => math::atan2(x, y),
        15 => math::sinh(x),
        16 => math::cosh(x),
        17 => math::tanh(x),
        18 => math::asinh(x),
        19 => math::acosh(x),
        20 => math::atanh(x),
        21 => math::erf(x),
        22 => math::erfc(x),
        23 => math::erfinv(x),
        24 => math::pow(x, y),
        25 => math::sqrt(x),
        26 => math::rsqrt(x),
        27 => math::cbrt(x),
        28 => math::hypot(x, y),
        29 => math::fma(x, y, z),
        30 => math::floor(x),
        31 => math::ceil(x),
        32 => math::trunc(x),
        33 => math::round(x),
        34 => math::fabs(x),
        35 => math::fmin(x, y),
        36 => math::fmax(x, y),
        37 => math::fmod(x, y),
        38 => math::rint(x),
        39 => math::copysign(x, y),
        40 => math::fdim(x, y),
        41 => math::remainder(x, y),
        42 => math::tgamma(x),
        43 => math::lgamma(x),
        44 => math::erfcx(x),
        45 => math::normcdf(x),
        46 => math::normcdfinv(x),
        47 => math::sinpi(x),
        48 => math::cospi(x),
        49 => math::logb(x),
        50 => math::rcbrt(x),
        51 => math::rhypot(x, y),
        52 => math::norm3d(x, y, z),
        53 => math::erfcinv(x),
        54 => math::j0(x),
        55 => math::j1(x),
        56 => math::y0(x),
        57 => math::y1(x),
        58 => math::nextafter(x, y),
        59 => math::ldexp(x, y.to_i32()),
        60 => math::scalbn(x, y.to_i32()),
        61 => math::powi(x, y.to_i32()),
        62 => T::from_i32(math::ilogb(x)),
        63 => math::sincos(x).0,
        64 => math::sincos(x).1,
        65 => math::sincospi(x).0,
        66 => math::sincospi(x).1,
        67 => math::frexp(x).0,
        68 => T::from_i32(math::frexp(x).1),
        69 => math::modf(x).0,
        70 => math::modf(x).1,
        71 => math::remquo(x, y).0,
        72 => T::from_i32(math::remquo(x, y).1),
        _ => T::from_i32(-999_999),
    }
}

/// `out[k * n + i] = apply(k, x[k*n+i], y[k*n+i], z[k*n+i])` for every
/// function `k`, element `i < n` (one thread per element).
#[inline(always)]
unsafe fn table<T: Num>(x: *const T, y: *const T, z: *const T, out: *mut T, n: u32) {
    let i = global_index_x();
    if i >= n as usize {
        return;
    }
    for k in 0..FUNCTIONS {
        let at = k as usize * n as usize + i;
        unsafe { *out.add(at) = apply(k, *x.add(at), *y.add(at), *z.add(at)) };
    }
}

/// The libdevice table in `f32`.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn math_f32(
    x: *const f32,
    y: *const f32,
    z: *const f32,
    out: *mut f32,
    n: u32,
) {
    unsafe { table(x, y, z, out, n) }
}

/// The libdevice table in `f64`.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn math_f64(
    x: *const f64,
    y: *const f64,
    z: *const f64,
    out: *mut f64,
    n: u32,
) {
    unsafe { table(x, y, z, out, n) }
}

/// The approximations: `out[k * n + i]` of `x[k * n + i]` (and `y` for `div`):
/// 0 exp2, 1 log2, 2 sin, 3 cos, 4 tanh, 5 sqrt, 6 rsqrt, 7 rcp, 8 div(x, y),
/// 9 exp, 10 exp10, 11 log, 12 log10, 13 rsqrt_f64, 14 rcp_f64 (as `f32`).
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn math_approx(x: *const f32, y: *const f32, out: *mut f32, n: u32) {
    let i = global_index_x();
    if i >= n as usize {
        return;
    }
    for k in 0..15usize {
        let at = k * n as usize + i;
        let (a, b) = unsafe { (*x.add(at), *y.add(at)) };
        let r = match k {
            0 => approx::exp2(a),
            1 => approx::log2(a),
            2 => approx::sin(a),
            3 => approx::cos(a),
            4 => approx::tanh(a),
            5 => approx::sqrt(a),
            6 => approx::rsqrt(a),
            7 => approx::rcp(a),
            8 => approx::div(a, b),
            9 => approx::exp(a),
            10 => approx::exp10(a),
            11 => approx::log(a),
            12 => approx::log10(a),
            13 => approx::rsqrt_f64(a as f64) as f32,
            _ => approx::rcp_f64(a as f64) as f32,
        };
        unsafe { *out.add(at) = r };
    }
}

/// Conversions of `x[i]`; `out[k * n + i]` (`u32`): 0 `f16_from_f32` bits,
/// 1 `bf16_from_f32` bits, 2 `f16_to_f32` of 0 (bits), 3 `bf16_to_f32` of 1
/// (bits), 4 `F16x2::from_f32s(x, 2x)`, 5 `Bf16x2::from_f32s(x, 2x)`,
/// 6 `F16x2::from_f32s(x, 2x).to_f32s().1` bits, 7 `Bf16x2::...to_f32s().0` bits.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn half_convert(x: *const f32, out: *mut u32, n: u32) {
    let i = global_index_x();
    if i >= n as usize {
        return;
    }
    let x = unsafe { *x.add(i) };
    let h = math::f16_from_f32(x);
    let b = math::bf16_from_f32(x);
    let r = [
        h.to_bits() as u32,
        b.to_bits() as u32,
        math::f16_to_f32(h).to_bits(),
        math::bf16_to_f32(b).to_bits(),
        F16x2::from_f32s(x, 2.0 * x).to_bits(),
        Bf16x2::from_f32s(x, 2.0 * x).to_bits(),
        F16x2::from_f32s(x, 2.0 * x).to_f32s().1.to_bits(),
        Bf16x2::from_f32s(x, 2.0 * x).to_f32s().0.to_bits(),
    ];
    for (k, v) in r.into_iter().enumerate() {
        unsafe { *out.add(k * n as usize + i) = v };
    }
}

/// Packed arithmetic; `out[k * n + i]` (bits): `F16x2` of `(a, b, c)`: 0 `a + b`,
/// 1 `a - b`, 2 `a * b`, 3 `fma(a, b, c)`, 4 `a.min(b)`, 5 `a.max(b)`; then the
/// same for `Bf16x2` of `(d, e, f)` at 6..12.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn packed_math(
    a: *const F16x2,
    b: *const F16x2,
    c: *const F16x2,
    d: *const Bf16x2,
    e: *const Bf16x2,
    f: *const Bf16x2,
    out: *mut u32,
    n: u32,
) {
    let i = global_index_x();
    if i >= n as usize {
        return;
    }
    let (a, b, c) = unsafe { (*a.add(i), *b.add(i), *c.add(i)) };
    let (d, e, f) = unsafe { (*d.add(i), *e.add(i), *f.add(i)) };
    let r = [
        (a + b).to_bits(),
        (a - b).to_bits(),
        (a * b).to_bits(),
        F16x2::fma(a, b, c).to_bits(),
        a.min(b).to_bits(),
        a.max(b).to_bits(),
        (d + e).to_bits(),
        (d - e).to_bits(),
        (d * e).to_bits(),
        Bf16x2::fma(d, e, f).to_bits(),
        d.min(e).to_bits(),
        d.max(e).to_bits(),
    ];
    for (k, v) in r.into_iter().enumerate() {
        unsafe { *out.add(k * n as usize + i) = v };
    }
}

/// `out[0] = math::cuda_arch()` (resolved by the builder: 800 on sm_80, 900 on sm_90).
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn cuda_arch_value(out: *mut u32) {
    unsafe { *out = math::cuda_arch() };
}
