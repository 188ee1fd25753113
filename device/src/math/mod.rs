//! Math for kernels: libdevice's correctly-rounded-or-documented `f32`/`f64`
//! functions, fast hardware approximations ([`approx`]), `f16`/`bf16`
//! conversions and packed `f16x2`/`bf16x2` arithmetic ([`F16x2`], [`Bf16x2`]).
//!
//! ```no_run
//! use nvshmem_device::math;
//! let y = math::exp(0.5f32) * math::erf(0.25f32);
//! let (s, c) = math::sincos(1.0f64);
//! let fast = math::approx::exp2(3.5); // ex2.approx.f32
//! ```
//!
//! # libdevice
//! The functions here are NVIDIA's libdevice (`libdevice.10.bc`, the
//! `__nv_*` functions CUDA's `expf`, `sin`, `erfinv`, ... call), linked by
//! `nvshmem-builder` when a kernel calls one: `llvm-link --only-needed` after
//! NVSHMEM, so only what is used is pulled in, then `__nvvm_reflect` resolved
//! for the target arch (precise division and square root, no flush to zero).
//! libdevice comes from the `nvidia-nvvm` pip wheel (`./x setup`), or from
//! `NVSHMEM_RS_LIBDEVICE`, or a CUDA install. Each function is generic over
//! [`Float`] (`f32` or `f64`): `math::sin(x)` picks `__nv_sinf` or
//! `__nv_sin` from `x`'s type.
//!
//! Accuracy is CUDA's (its Programming Guide lists the maximum ULP error of
//! each): `sqrt`, `fma`, `fmod`, rounding functions, `fmin`/`fmax` and
//! `fabs` are exact; most others are within 1–4 ULP (`f32`) or 1–2 ULP
//! (`f64`); `pow`, `erfinv`, `lgamma`, `tgamma` and the Bessel functions have
//! larger bounds.

mod packed;

pub mod approx;
pub use packed::{Bf16x2, F16x2, bf16_from_f32, bf16_to_f32, f16_from_f32, f16_to_f32};

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

// `__nvvm_reflect` under another name: rustc's own LLVM pipeline would
// resolve `__nvvm_reflect` with its default arch (sm_70) when it compiles the
// kernel crate; the builder renames this back before its `opt -mcpu=<arch>`.
#[cfg(target_arch = "nvptx64")]
unsafe extern "C" {
    fn nvshmem_rs_nvvm_reflect(name: *const core::ffi::c_char) -> i32;
}

/// `__CUDA_ARCH__` of the build: `800` for sm_80, `900` for sm_90. A
/// constant once the builder has resolved NVVM reflection for the target
/// arch, so `if math::cuda_arch() >= 900 { .. } else { .. }` keeps only one
/// branch, and instructions of newer archs in the other branch never reach
/// `ptxas` (as `#if __CUDA_ARCH__ >= 900` in CUDA). 0 on the host.
///
/// ```no_run
/// let native_bf16_atomics = nvshmem_device::math::cuda_arch() >= 900;
/// ```
#[inline(always)]
pub fn cuda_arch() -> u32 {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: resolved to a constant by NVVMReflect; the argument is a constant string.
    unsafe {
        nvshmem_rs_nvvm_reflect(c"__CUDA_ARCH".as_ptr()) as u32
    }
    #[cfg(not(target_arch = "nvptx64"))]
    0
}

/// Declares libdevice functions (on nvptx64; panicking stubs on the host).
macro_rules! libdevice_decls {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {
        #[cfg(target_arch = "nvptx64")]
        unsafe extern "C" {
            $(fn $name($($arg: $ty),*) -> $ret;)*
        }
        $(
            #[cfg(not(target_arch = "nvptx64"))]
            #[allow(unused_variables)]
            unsafe fn $name($($arg: $ty),*) -> $ret {
                crate::nvvm::host_unsupported()
            }
        )*
    };
}

/// A doc example argument per parameter.
macro_rules! example_arg {
    ($a:ident) => {
        "0.5f32, "
    };
}

/// The libdevice table: per function, its doc, parameters (all of the float
/// type) and the `f32` and `f64` libdevice names. Generates the [`Float`]
/// trait, its two impls, the declarations and a generic free function each.
macro_rules! libdevice {
    (
        $($doc:literal fn $name:ident($($arg:ident),+) = $f32:ident, $f64:ident;)*
        @with_int $($idoc:literal fn $iname:ident($ix:ident, $in:ident: i32) = $if32:ident, $if64:ident;)*
        @to_int $($tdoc:literal fn $tname:ident($tx:ident) -> i32 = $tf32:ident, $tf64:ident;)*
    ) => {
        libdevice_decls! {
            $($f32($($arg: f32),+) -> f32; $f64($($arg: f64),+) -> f64;)*
            $($if32($ix: f32, $in: i32) -> f32; $if64($ix: f64, $in: i32) -> f64;)*
            $($tf32($tx: f32) -> i32; $tf64($tx: f64) -> i32;)*
            __nv_sincosf(x: f32, s: *mut f32, c: *mut f32) -> ();
            __nv_sincos(x: f64, s: *mut f64, c: *mut f64) -> ();
            __nv_sincospif(x: f32, s: *mut f32, c: *mut f32) -> ();
            __nv_sincospi(x: f64, s: *mut f64, c: *mut f64) -> ();
            __nv_frexpf(x: f32, e: *mut i32) -> f32;
            __nv_frexp(x: f64, e: *mut i32) -> f64;
            __nv_modff(x: f32, i: *mut f32) -> f32;
            __nv_modf(x: f64, i: *mut f64) -> f64;
            __nv_remquof(x: f32, y: f32, q: *mut i32) -> f32;
            __nv_remquo(x: f64, y: f64, q: *mut i32) -> f64;
        }

        /// `f32` or `f64`: the types libdevice's functions exist for. Sealed.
        ///
        /// Its associated functions are the libdevice calls; the free
        /// functions of [`math`](self) call them generically
        /// (`math::exp(x)` is `<T as Float>::exp(x)`).
        pub trait Float: Copy + sealed::Sealed {
            $(
                #[doc = $doc]
                fn $name($($arg: Self),+) -> Self;
            )*
            $(
                #[doc = $idoc]
                fn $iname($ix: Self, $in: i32) -> Self;
            )*
            $(
                #[doc = $tdoc]
                fn $tname($tx: Self) -> i32;
            )*
            /// `(sin x, cos x)`, computed together.
            fn sincos(x: Self) -> (Self, Self);
            /// `(sin πx, cos πx)`.
            fn sincospi(x: Self) -> (Self, Self);
            /// `(m, e)` with `x = m · 2^e` and `0.5 <= |m| < 1` (or `m = x` for 0, ∞, NaN).
            fn frexp(x: Self) -> (Self, i32);
            /// `(fractional part, integral part)`, both with `x`'s sign.
            fn modf(x: Self) -> (Self, Self);
            /// `(remainder(x, y), q)` with `q` holding the low bits and sign of `x / y`.
            fn remquo(x: Self, y: Self) -> (Self, i32);
            /// Square root, correctly rounded (`sqrt.rn`).
            fn sqrt(x: Self) -> Self;
        }

        libdevice!(@impl f32, __nv_sincosf, __nv_sincospif, __nv_frexpf, __nv_modff, __nv_remquof, "sqrt.rn.f32", reg32;
            $($name($($arg),+) = $f32;)* @with_int $($iname($ix, $in) = $if32;)* @to_int $($tname($tx) = $tf32;)*);
        libdevice!(@impl f64, __nv_sincos, __nv_sincospi, __nv_frexp, __nv_modf, __nv_remquo, "sqrt.rn.f64", reg64;
            $($name($($arg),+) = $f64;)* @with_int $($iname($ix, $in) = $if64;)* @to_int $($tname($tx) = $tf64;)*);

        $(
            #[doc = $doc]
            ///
            /// ```no_run
            #[doc = concat!("let y = nvshmem_device::math::", stringify!($name), "(", $(example_arg!($arg),)+ ");")]
            /// ```
            #[inline(always)]
            pub fn $name<T: Float>($($arg: T),+) -> T {
                T::$name($($arg),+)
            }
        )*
        $(
            #[doc = $idoc]
            ///
            /// ```no_run
            #[doc = concat!("let y = nvshmem_device::math::", stringify!($iname), "(1.5f64, 3);")]
            /// ```
            #[inline(always)]
            pub fn $iname<T: Float>($ix: T, $in: i32) -> T {
                T::$iname($ix, $in)
            }
        )*
        $(
            #[doc = $tdoc]
            ///
            /// ```no_run
            #[doc = concat!("let e: i32 = nvshmem_device::math::", stringify!($tname), "(48.0f32);")]
            /// ```
            #[inline(always)]
            pub fn $tname<T: Float>($tx: T) -> i32 {
                T::$tname($tx)
            }
        )*
    };
    (@impl $t:ty, $sincos:ident, $sincospi:ident, $frexp:ident, $modf:ident, $remquo:ident, $sqrt:literal, $reg:ident;
        $($name:ident($($arg:ident),+) = $f:ident;)* @with_int $($iname:ident($ix:ident, $in:ident) = $if:ident;)*
        @to_int $($tname:ident($tx:ident) = $tf:ident;)*) => {
        impl Float for $t {
            $(
                #[inline(always)]
                fn $name($($arg: $t),+) -> $t {
                    // SAFETY: a pure libdevice function.
                    unsafe { $f($($arg),+) }
                }
            )*
            $(
                #[inline(always)]
                fn $iname($ix: $t, $in: i32) -> $t {
                    // SAFETY: a pure libdevice function.
                    unsafe { $if($ix, $in) }
                }
            )*
            $(
                #[inline(always)]
                fn $tname($tx: $t) -> i32 {
                    // SAFETY: a pure libdevice function.
                    unsafe { $tf($tx) }
                }
            )*
            #[inline(always)]
            fn sincos(x: $t) -> ($t, $t) {
                let (mut s, mut c) = (0.0, 0.0);
                // SAFETY: writes the two locals.
                unsafe { $sincos(x, &mut s, &mut c) };
                (s, c)
            }
            #[inline(always)]
            fn sincospi(x: $t) -> ($t, $t) {
                let (mut s, mut c) = (0.0, 0.0);
                // SAFETY: writes the two locals.
                unsafe { $sincospi(x, &mut s, &mut c) };
                (s, c)
            }
            #[inline(always)]
            fn frexp(x: $t) -> ($t, i32) {
                let mut e = 0;
                // SAFETY: writes the local.
                let m = unsafe { $frexp(x, &mut e) };
                (m, e)
            }
            #[inline(always)]
            fn modf(x: $t) -> ($t, $t) {
                let mut i = 0.0;
                // SAFETY: writes the local.
                let f = unsafe { $modf(x, &mut i) };
                (f, i)
            }
            #[inline(always)]
            fn remquo(x: $t, y: $t) -> ($t, i32) {
                let mut q = 0;
                // SAFETY: writes the local.
                let r = unsafe { $remquo(x, y, &mut q) };
                (r, q)
            }
            #[inline(always)]
            fn sqrt(x: $t) -> $t {
                let y: $t;
                // SAFETY: register arithmetic only.
                unsafe {
                    crate::nvvm::ptx!(concat!($sqrt, " {0}, {1};"), out($reg) y, in($reg) x, options(pure, nomem, nostack));
                }
                y
            }
        }
    };
}

libdevice! {
    "e^x." fn exp(x) = __nv_expf, __nv_exp;
    "2^x." fn exp2(x) = __nv_exp2f, __nv_exp2;
    "10^x." fn exp10(x) = __nv_exp10f, __nv_exp10;
    "e^x - 1, accurate near 0." fn expm1(x) = __nv_expm1f, __nv_expm1;
    "Natural logarithm." fn log(x) = __nv_logf, __nv_log;
    "Base-2 logarithm." fn log2(x) = __nv_log2f, __nv_log2;
    "Base-10 logarithm." fn log10(x) = __nv_log10f, __nv_log10;
    "ln(1 + x), accurate near 0." fn log1p(x) = __nv_log1pf, __nv_log1p;
    "The exponent of x as a float (`logb`)." fn logb(x) = __nv_logbf, __nv_logb;
    "Sine (radians)." fn sin(x) = __nv_sinf, __nv_sin;
    "Cosine (radians)." fn cos(x) = __nv_cosf, __nv_cos;
    "Tangent (radians)." fn tan(x) = __nv_tanf, __nv_tan;
    "sin(πx)." fn sinpi(x) = __nv_sinpif, __nv_sinpi;
    "cos(πx)." fn cospi(x) = __nv_cospif, __nv_cospi;
    "Arcsine." fn asin(x) = __nv_asinf, __nv_asin;
    "Arccosine." fn acos(x) = __nv_acosf, __nv_acos;
    "Arctangent." fn atan(x) = __nv_atanf, __nv_atan;
    "The angle of (x, y) (`atan2(y, x)`, in (-π, π])." fn atan2(y, x) = __nv_atan2f, __nv_atan2;
    "Hyperbolic sine." fn sinh(x) = __nv_sinhf, __nv_sinh;
    "Hyperbolic cosine." fn cosh(x) = __nv_coshf, __nv_cosh;
    "Hyperbolic tangent." fn tanh(x) = __nv_tanhf, __nv_tanh;
    "Inverse hyperbolic sine." fn asinh(x) = __nv_asinhf, __nv_asinh;
    "Inverse hyperbolic cosine." fn acosh(x) = __nv_acoshf, __nv_acosh;
    "Inverse hyperbolic tangent." fn atanh(x) = __nv_atanhf, __nv_atanh;
    "Error function." fn erf(x) = __nv_erff, __nv_erf;
    "Complementary error function, 1 - erf(x)." fn erfc(x) = __nv_erfcf, __nv_erfc;
    "Scaled complementary error function, e^(x²) erfc(x)." fn erfcx(x) = __nv_erfcxf, __nv_erfcx;
    "Inverse error function." fn erfinv(x) = __nv_erfinvf, __nv_erfinv;
    "Inverse complementary error function." fn erfcinv(x) = __nv_erfcinvf, __nv_erfcinv;
    "Standard normal CDF." fn normcdf(x) = __nv_normcdff, __nv_normcdf;
    "Inverse standard normal CDF." fn normcdfinv(x) = __nv_normcdfinvf, __nv_normcdfinv;
    "Gamma function." fn tgamma(x) = __nv_tgammaf, __nv_tgamma;
    "ln|Γ(x)|." fn lgamma(x) = __nv_lgammaf, __nv_lgamma;
    "Bessel function of the first kind, order 0." fn j0(x) = __nv_j0f, __nv_j0;
    "Bessel function of the first kind, order 1." fn j1(x) = __nv_j1f, __nv_j1;
    "Bessel function of the second kind, order 0." fn y0(x) = __nv_y0f, __nv_y0;
    "Bessel function of the second kind, order 1." fn y1(x) = __nv_y1f, __nv_y1;
    "x^y." fn pow(x, y) = __nv_powf, __nv_pow;
    "1 / √x." fn rsqrt(x) = __nv_rsqrtf, __nv_rsqrt;
    "Cube root." fn cbrt(x) = __nv_cbrtf, __nv_cbrt;
    "1 / ∛x." fn rcbrt(x) = __nv_rcbrtf, __nv_rcbrt;
    "√(x² + y²) without undue overflow." fn hypot(x, y) = __nv_hypotf, __nv_hypot;
    "1 / √(x² + y²)." fn rhypot(x, y) = __nv_rhypotf, __nv_rhypot;
    "√(a² + b² + c²)." fn norm3d(a, b, c) = __nv_norm3df, __nv_norm3d;
    "x · y + z with one rounding." fn fma(x, y, z) = __nv_fmaf, __nv_fma;
    "Largest integer not above x." fn floor(x) = __nv_floorf, __nv_floor;
    "Smallest integer not below x." fn ceil(x) = __nv_ceilf, __nv_ceil;
    "x rounded toward zero." fn trunc(x) = __nv_truncf, __nv_trunc;
    "x rounded to nearest, halfway cases away from zero." fn round(x) = __nv_roundf, __nv_round;
    "x rounded to nearest, halfway cases to even." fn rint(x) = __nv_rintf, __nv_rint;
    "|x|." fn fabs(x) = __nv_fabsf, __nv_fabs;
    "The smaller of x and y (the other if one is NaN)." fn fmin(x, y) = __nv_fminf, __nv_fmin;
    "The larger of x and y (the other if one is NaN)." fn fmax(x, y) = __nv_fmaxf, __nv_fmax;
    "x - trunc(x / y) · y, exactly." fn fmod(x, y) = __nv_fmodf, __nv_fmod;
    "x - rint(x / y) · y, exactly (IEEE remainder)." fn remainder(x, y) = __nv_remainderf, __nv_remainder;
    "x's magnitude with y's sign." fn copysign(x, y) = __nv_copysignf, __nv_copysign;
    "max(x - y, 0)." fn fdim(x, y) = __nv_fdimf, __nv_fdim;
    "The next representable value after x toward y." fn nextafter(x, y) = __nv_nextafterf, __nv_nextafter;
    @with_int
    "x · 2^n." fn ldexp(x, n: i32) = __nv_ldexpf, __nv_ldexp;
    "x · 2^n (`scalbn`)." fn scalbn(x, n: i32) = __nv_scalbnf, __nv_scalbn;
    "x^n for an integer n." fn powi(x, n: i32) = __nv_powif, __nv_powi;
    @to_int
    "The unbiased exponent of x as an integer." fn ilogb(x) -> i32 = __nv_ilogbf, __nv_ilogb;
}

/// Square root, correctly rounded (`sqrt.rn.f32`, `sqrt.rn.f64`). Not
/// libdevice's `__nv_sqrtf`, which this LLVM lowers to `sqrt.approx.f32`
/// (1 ULP off, found on an H200).
///
/// ```no_run
/// let y = nvshmem_device::math::sqrt(2.0f32);
/// ```
#[inline(always)]
pub fn sqrt<T: Float>(x: T) -> T {
    T::sqrt(x)
}

/// `(sin x, cos x)`, computed together (libdevice `sincos`).
///
/// ```no_run
/// let (s, c) = nvshmem_device::math::sincos(0.5f32);
/// ```
#[inline(always)]
pub fn sincos<T: Float>(x: T) -> (T, T) {
    T::sincos(x)
}

/// `(sin πx, cos πx)` (libdevice `sincospi`).
///
/// ```no_run
/// let (s, c) = nvshmem_device::math::sincospi(0.25f64);
/// ```
#[inline(always)]
pub fn sincospi<T: Float>(x: T) -> (T, T) {
    T::sincospi(x)
}

/// `(m, e)` with `x = m · 2^e`, `0.5 <= |m| < 1` (libdevice `frexp`).
///
/// ```no_run
/// let (m, e) = nvshmem_device::math::frexp(48.0f32); // (0.75, 6)
/// ```
#[inline(always)]
pub fn frexp<T: Float>(x: T) -> (T, i32) {
    T::frexp(x)
}

/// `(fractional part, integral part)` of `x`, both with its sign (libdevice `modf`).
///
/// ```no_run
/// let (frac, int) = nvshmem_device::math::modf(-2.5f64); // (-0.5, -2.0)
/// ```
#[inline(always)]
pub fn modf<T: Float>(x: T) -> (T, T) {
    T::modf(x)
}

/// `(remainder(x, y), q)`, `q` with the sign and at least the 3 low bits of
/// the integral quotient (libdevice `remquo`).
///
/// ```no_run
/// let (r, q) = nvshmem_device::math::remquo(10.0f32, 3.0);
/// ```
#[inline(always)]
pub fn remquo<T: Float>(x: T, y: T) -> (T, i32) {
    T::remquo(x, y)
}
