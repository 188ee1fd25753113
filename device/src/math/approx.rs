//! Fast hardware approximations (the MUFU unit), as CUDA's `__expf`,
//! `__logf`, `__sinf`, `__fdividef`, `rsqrtf` under `-use_fast_math`: one
//! or two instructions each, through inline PTX. Not flushed to zero.
//!
//! | Function | PTX | Maximum error (PTX ISA) |
//! |---|---|---|
//! | [`exp2`] | `ex2.approx.f32` | 2 ULP (about 2^-22 relative) |
//! | [`exp`], [`exp10`] | `ex2.approx.f32` of `x · log2(e)`, `x · log2(10)` | grows with \|x\|: `exp2`'s plus the product's rounding |
//! | [`log2`] | `lg2.approx.f32` | 2^-22 absolute for x in [0.5, 2], else 2^-22 relative |
//! | [`log`], [`log10`] | `lg2.approx.f32 · ln 2`, `· log10 2` | as `log2`, plus 1 ULP |
//! | [`sin`], [`cos`] | `sin.approx.f32`, `cos.approx.f32` | 2^-20.9 absolute in [-π, π]; grows outside |
//! | [`tanh`] | `tanh.approx.f32` (sm_75+) | 2^-10.987 relative |
//! | [`sqrt`] | `sqrt.approx.f32` | 2^-23 relative |
//! | [`rsqrt`], [`rsqrt_f64`] | `rsqrt.approx.f32`, `.f64` | 2^-22.9 relative (f32); about 2^-40 (f64) |
//! | [`rcp`], [`rcp_f64`] | `rcp.approx.f32`, `rcp.approx.ftz.f64` | 1 ULP (f32); about 2^-20 relative, subnormals flushed (f64: an f32-class seed, measured 2^-20.9 on an H200) |
//! | [`div`] | `div.approx.f32` | 2 ULP for \|y\| in [2^-126, 2^126] |
//!
//! ```no_run
//! use nvshmem_device::math::approx;
//! let softplus = approx::log(1.0 + approx::exp(0.3));
//! ```

use crate::nvvm;

macro_rules! unary_approx {
    ($($(#[$doc:meta])* $name:ident: $t:ty, $reg:ident, $ptx:literal;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name(x: $t) -> $t {
            let y: $t;
            // SAFETY: register arithmetic only.
            unsafe {
                nvvm::ptx!(concat!($ptx, " {0}, {1};"), out($reg) y, in($reg) x, options(pure, nomem, nostack));
            }
            y
        }
    )*};
}

unary_approx! {
    /// 2^x (`ex2.approx.f32`).
    ///
    /// ```no_run
    /// let y = nvshmem_device::math::approx::exp2(3.0); // ≈ 8
    /// ```
    exp2: f32, reg32, "ex2.approx.f32";
    /// log2(x) (`lg2.approx.f32`).
    ///
    /// ```no_run
    /// let y = nvshmem_device::math::approx::log2(8.0); // ≈ 3
    /// ```
    log2: f32, reg32, "lg2.approx.f32";
    /// sin(x) (`sin.approx.f32`), accurate in [-π, π].
    ///
    /// ```no_run
    /// let y = nvshmem_device::math::approx::sin(1.0);
    /// ```
    sin: f32, reg32, "sin.approx.f32";
    /// cos(x) (`cos.approx.f32`), accurate in [-π, π].
    ///
    /// ```no_run
    /// let y = nvshmem_device::math::approx::cos(1.0);
    /// ```
    cos: f32, reg32, "cos.approx.f32";
    /// tanh(x) (`tanh.approx.f32`, sm_75+).
    ///
    /// ```no_run
    /// let y = nvshmem_device::math::approx::tanh(0.5);
    /// ```
    tanh: f32, reg32, "tanh.approx.f32";
    /// √x (`sqrt.approx.f32`).
    ///
    /// ```no_run
    /// let y = nvshmem_device::math::approx::sqrt(2.0);
    /// ```
    sqrt: f32, reg32, "sqrt.approx.f32";
    /// 1 / √x (`rsqrt.approx.f32`).
    ///
    /// ```no_run
    /// let y = nvshmem_device::math::approx::rsqrt(4.0); // ≈ 0.5
    /// ```
    rsqrt: f32, reg32, "rsqrt.approx.f32";
    /// 1 / √x in `f64` (`rsqrt.approx.f64`, about 40 bits).
    ///
    /// ```no_run
    /// let y = nvshmem_device::math::approx::rsqrt_f64(4.0);
    /// ```
    rsqrt_f64: f64, reg64, "rsqrt.approx.f64";
    /// 1 / x (`rcp.approx.f32`).
    ///
    /// ```no_run
    /// let y = nvshmem_device::math::approx::rcp(3.0);
    /// ```
    rcp: f32, reg32, "rcp.approx.f32";
    /// 1 / x in `f64` (`rcp.approx.ftz.f64`, about 40 bits, subnormals flushed).
    ///
    /// ```no_run
    /// let y = nvshmem_device::math::approx::rcp_f64(3.0);
    /// ```
    rcp_f64: f64, reg64, "rcp.approx.ftz.f64";
}

/// x / y (`div.approx.f32`; `__fdividef`).
///
/// ```no_run
/// let q = nvshmem_device::math::approx::div(1.0, 3.0);
/// ```
#[inline(always)]
pub fn div(x: f32, y: f32) -> f32 {
    let q: f32;
    // SAFETY: register arithmetic only.
    unsafe {
        nvvm::ptx!("div.approx.f32 {0}, {1}, {2};", out(reg32) q, in(reg32) x, in(reg32) y, options(pure, nomem, nostack));
    }
    q
}

/// e^x as `ex2.approx(x · log2 e)` (`__expf`).
///
/// ```no_run
/// let y = nvshmem_device::math::approx::exp(1.0);
/// ```
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    exp2(x * core::f32::consts::LOG2_E)
}

/// 10^x as `ex2.approx(x · log2 10)` (`__exp10f`).
///
/// ```no_run
/// let y = nvshmem_device::math::approx::exp10(2.0);
/// ```
#[inline(always)]
pub fn exp10(x: f32) -> f32 {
    exp2(x * core::f32::consts::LOG2_10)
}

/// ln x as `lg2.approx(x) · ln 2` (`__logf`).
///
/// ```no_run
/// let y = nvshmem_device::math::approx::log(2.0);
/// ```
#[inline(always)]
pub fn log(x: f32) -> f32 {
    log2(x) * core::f32::consts::LN_2
}

/// log10 x as `lg2.approx(x) · log10 2` (`__log10f`).
///
/// ```no_run
/// let y = nvshmem_device::math::approx::log10(100.0);
/// ```
#[inline(always)]
pub fn log10(x: f32) -> f32 {
    log2(x) * core::f32::consts::LOG10_2
}
