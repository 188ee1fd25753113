//! Atomic memory operations on remote (or local) symmetric objects.
//!
//! Which types support which operation follows NVSHMEM's AMO op groups:
//!
//! | Trait | Operations | Types |
//! |---|---|---|
//! | [`AmoElement`] | [`atomic_fetch`], [`atomic_set`], [`atomic_swap`] | `i32 i64 u32 u64 usize isize f32 f64` |
//! | [`AddAmoElement`] | [`atomic_add`] | `i32 i64 u32 u64 usize isize`; with `nvshmem-3-7` also `f32 f64 f16` |
//! | [`FetchAddAmoElement`] | [`atomic_fetch_add`] | `i32 i64 u32 u64 usize isize`; with `nvshmem-3-7` also `f32 f64` |
//! | [`StandardAmoElement`] | [`atomic_compare_swap`], [`atomic_fetch_inc`], [`atomic_inc`] | `i32 i64 u32 u64 usize isize` |
//! | [`BitwiseAmoElement`] | [`atomic_and`], [`atomic_or`], [`atomic_xor`] and their `atomic_fetch_*` | `i32 i64 u32 u64 usize isize` (the last two through `uint64`/`int64`) |
//!
//! NVSHMEM's device code lacks `int64`/`ptrdiff` add and inc; for `i64` and
//! `isize` those go to NVSHMEM's `long` functions (`long` is `int64_t` and
//! `ptrdiff_t` on nvptx64).
//!
//! ```no_run
//! use nvshmem_device::{Pe, SymPtr, atomic_fetch_add};
//! // A ticket counter on PE 0.
//! unsafe fn ticket(counter: SymPtr<u64>) -> u64 {
//!     unsafe { atomic_fetch_add(counter, 1, Pe::new(0)) }
//! }
//! ```

use crate::__private::Sealed;
use crate::debug::check_pe;
use crate::{Pe, SymPtr, ffi};
use core::ffi::c_int;

/// Types with NVSHMEM's fetch, set and swap atomics (standard, bitwise and
/// extended AMO types).
///
/// ```
/// use nvshmem_device::AmoElement;
/// assert_eq!(<f64 as AmoElement>::AMO_NAME, "double");
/// ```
pub trait AmoElement: Copy + Sealed {
    /// The NVSHMEM type name used (`uint64` in `nvshmem_uint64_atomic_swap`).
    const AMO_NAME: &'static str;
    #[doc(hidden)]
    unsafe fn __fetch(source: *const Self, pe: c_int) -> Self;
    #[doc(hidden)]
    unsafe fn __set(dest: *mut Self, value: Self, pe: c_int);
    #[doc(hidden)]
    unsafe fn __swap(dest: *mut Self, value: Self, pe: c_int) -> Self;
}

/// Types with NVSHMEM's (non-fetching) atomic add.
///
/// `f32`, `f64` and `f16` have it from NVSHMEM 3.7 on (the `nvshmem-3-7`
/// feature, which the builder turns on when it links 3.7+ bitcode).
///
/// ```
/// use nvshmem_device::AddAmoElement;
/// assert_eq!(<i64 as AddAmoElement>::ADD_NAME, "long"); // NVSHMEM has no int64 add
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no NVSHMEM atomic add in this build",
    note = "the integer types always have it; `f32`, `f64` and `f16` need NVSHMEM 3.7: build the \
            kernel crate against NVSHMEM 3.7 or newer (NVSHMEM_RS_NVSHMEM_VERSION=3.7.2, say), which \
            turns on nvshmem-device's `nvshmem-3-7` feature",
    note = "`cargo check` on the host builds without that feature: put code that needs it in \
            `nvshmem_device::with_nvshmem_3_7! {{ ... }}`"
)]
pub trait AddAmoElement: Copy + Sealed {
    /// The NVSHMEM type name the add (and inc) functions use.
    const ADD_NAME: &'static str;
    #[doc(hidden)]
    unsafe fn __add(dest: *mut Self, value: Self, pe: c_int);
}

/// Types with NVSHMEM's atomic fetch-and-add.
///
/// ```
/// use nvshmem_device::FetchAddAmoElement;
/// fn takes<T: FetchAddAmoElement>() {}
/// takes::<u32>();
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no NVSHMEM atomic fetch-and-add in this build",
    note = "the integer types always have it; `f32` and `f64` need NVSHMEM 3.7 (the `nvshmem-3-7` \
            feature, on when the kernel crate is built against NVSHMEM 3.7+, e.g. with \
            NVSHMEM_RS_NVSHMEM_VERSION=3.7.2); `f16` has none",
    note = "`cargo check` on the host builds without that feature: put code that needs it in \
            `nvshmem_device::with_nvshmem_3_7! {{ ... }}`"
)]
pub trait FetchAddAmoElement: AddAmoElement {
    #[doc(hidden)]
    unsafe fn __fetch_add(dest: *mut Self, value: Self, pe: c_int) -> Self;
}

/// Integer types with NVSHMEM's standard AMOs: compare-and-swap and
/// (fetching) increment, on top of add and fetch/set/swap.
///
/// ```
/// use nvshmem_device::StandardAmoElement;
/// fn takes<T: StandardAmoElement>() {}
/// takes::<usize>();
/// ```
pub trait StandardAmoElement: AmoElement + FetchAddAmoElement {
    #[doc(hidden)]
    unsafe fn __compare_swap(dest: *mut Self, cond: Self, value: Self, pe: c_int) -> Self;
    #[doc(hidden)]
    unsafe fn __fetch_inc(dest: *mut Self, pe: c_int) -> Self;
    #[doc(hidden)]
    unsafe fn __inc(dest: *mut Self, pe: c_int);
}

/// Integer types with NVSHMEM's bitwise AMOs (and, or, xor; fetching or not).
///
/// ```
/// use nvshmem_device::BitwiseAmoElement;
/// fn takes<T: BitwiseAmoElement>() {}
/// takes::<i32>();
/// ```
pub trait BitwiseAmoElement: StandardAmoElement {
    #[doc(hidden)]
    unsafe fn __fetch_and(dest: *mut Self, value: Self, pe: c_int) -> Self;
    #[doc(hidden)]
    unsafe fn __fetch_or(dest: *mut Self, value: Self, pe: c_int) -> Self;
    #[doc(hidden)]
    unsafe fn __fetch_xor(dest: *mut Self, value: Self, pe: c_int) -> Self;
    #[doc(hidden)]
    unsafe fn __and(dest: *mut Self, value: Self, pe: c_int);
    #[doc(hidden)]
    unsafe fn __or(dest: *mut Self, value: Self, pe: c_int);
    #[doc(hidden)]
    unsafe fn __xor(dest: *mut Self, value: Self, pe: c_int);
}

macro_rules! impl_amo {
    ($($t:ty => $n:ident),* $(,)?) => { pastey::paste! {$(
        impl AmoElement for $t {
            const AMO_NAME: &'static str = stringify!($n);
            #[inline(always)]
            unsafe fn __fetch(source: *const Self, pe: c_int) -> Self {
                unsafe { ffi::[<nvshmem_ $n _atomic_fetch>](source, pe) }
            }
            #[inline(always)]
            unsafe fn __set(dest: *mut Self, value: Self, pe: c_int) {
                unsafe { ffi::[<nvshmem_ $n _atomic_set>](dest, value, pe) }
            }
            #[inline(always)]
            unsafe fn __swap(dest: *mut Self, value: Self, pe: c_int) -> Self {
                unsafe { ffi::[<nvshmem_ $n _atomic_swap>](dest, value, pe) }
            }
        }
    )*} };
}

// `$n`: the type's canonical name (compare_swap); `$add`: the name NVSHMEM's
// device code has add/inc for (the same C type).
macro_rules! impl_standard_amo {
    ($($t:ty => $n:ident, $add:ident);* $(;)?) => { pastey::paste! {$(
        impl AddAmoElement for $t {
            const ADD_NAME: &'static str = stringify!($add);
            #[inline(always)]
            unsafe fn __add(dest: *mut Self, value: Self, pe: c_int) {
                unsafe { ffi::[<nvshmem_ $add _atomic_add>](dest.cast(), value as _, pe) }
            }
        }
        impl FetchAddAmoElement for $t {
            #[inline(always)]
            unsafe fn __fetch_add(dest: *mut Self, value: Self, pe: c_int) -> Self {
                unsafe { ffi::[<nvshmem_ $add _atomic_fetch_add>](dest.cast(), value as _, pe) as Self }
            }
        }
        impl StandardAmoElement for $t {
            #[inline(always)]
            unsafe fn __compare_swap(dest: *mut Self, cond: Self, value: Self, pe: c_int) -> Self {
                unsafe { ffi::[<nvshmem_ $n _atomic_compare_swap>](dest, cond, value, pe) }
            }
            #[inline(always)]
            unsafe fn __fetch_inc(dest: *mut Self, pe: c_int) -> Self {
                unsafe { ffi::[<nvshmem_ $add _atomic_fetch_inc>](dest.cast(), pe) as Self }
            }
            #[inline(always)]
            unsafe fn __inc(dest: *mut Self, pe: c_int) {
                unsafe { ffi::[<nvshmem_ $add _atomic_inc>](dest.cast(), pe) }
            }
        }
    )*} };
}

// `$t`'s bitwise AMOs through NVSHMEM's `$n` ones (the same C type, or one of
// the same size and signedness-free bits: `usize` through `uint64`).
macro_rules! impl_bitwise_amo {
    ($($t:ty => $n:ident),* $(,)?) => { pastey::paste! {$(
        impl BitwiseAmoElement for $t {
            #[inline(always)]
            unsafe fn __fetch_and(dest: *mut Self, value: Self, pe: c_int) -> Self {
                unsafe { ffi::[<nvshmem_ $n _atomic_fetch_and>](dest.cast(), value as _, pe) as Self }
            }
            #[inline(always)]
            unsafe fn __fetch_or(dest: *mut Self, value: Self, pe: c_int) -> Self {
                unsafe { ffi::[<nvshmem_ $n _atomic_fetch_or>](dest.cast(), value as _, pe) as Self }
            }
            #[inline(always)]
            unsafe fn __fetch_xor(dest: *mut Self, value: Self, pe: c_int) -> Self {
                unsafe { ffi::[<nvshmem_ $n _atomic_fetch_xor>](dest.cast(), value as _, pe) as Self }
            }
            #[inline(always)]
            unsafe fn __and(dest: *mut Self, value: Self, pe: c_int) {
                unsafe { ffi::[<nvshmem_ $n _atomic_and>](dest.cast(), value as _, pe) }
            }
            #[inline(always)]
            unsafe fn __or(dest: *mut Self, value: Self, pe: c_int) {
                unsafe { ffi::[<nvshmem_ $n _atomic_or>](dest.cast(), value as _, pe) }
            }
            #[inline(always)]
            unsafe fn __xor(dest: *mut Self, value: Self, pe: c_int) {
                unsafe { ffi::[<nvshmem_ $n _atomic_xor>](dest.cast(), value as _, pe) }
            }
        }
    )*} };
}

impl_amo! {
    i32 => int32, i64 => int64, u32 => uint32, u64 => uint64,
    usize => size, isize => ptrdiff, f32 => float, f64 => double,
}

impl_standard_amo! {
    i32 => int32, int32;
    // NVSHMEM's device code has no int64/ptrdiff add or inc; `long` is the same C type.
    i64 => int64, long;
    u32 => uint32, uint32;
    u64 => uint64, uint64;
    usize => size, size;
    isize => ptrdiff, long;
}

// NVSHMEM's bitwise list has no `size`/`ptrdiff`: `usize`/`isize` are
// `uint64_t`/`int64_t` on nvptx64.
impl_bitwise_amo! {
    i32 => int32, i64 => int64, u32 => uint32, u64 => uint64, usize => uint64, isize => int64,
}

// NVSHMEM 3.7's `nvshmemx_{half,float,double}_atomic_{add,fetch_add}`.
#[cfg(any(doc, feature = "nvshmem-3-7"))]
macro_rules! impl_float_add {
    ($($t:ty => $n:ident),* $(,)?) => { pastey::paste! {$(
        impl AddAmoElement for $t {
            const ADD_NAME: &'static str = stringify!($n);
            #[inline(always)]
            unsafe fn __add(dest: *mut Self, value: Self, pe: c_int) {
                unsafe { ffi::[<nvshmemx_ $n _atomic_add>](dest, value, pe) }
            }
        }
        impl FetchAddAmoElement for $t {
            #[inline(always)]
            unsafe fn __fetch_add(dest: *mut Self, value: Self, pe: c_int) -> Self {
                unsafe { ffi::[<nvshmemx_ $n _atomic_fetch_add>](dest, value, pe) }
            }
        }
    )*} };
}

#[cfg(any(doc, feature = "nvshmem-3-7"))]
impl_float_add! { f32 => float, f64 => double }

/// `nvshmemx_half_atomic_add`; there is no `f16` fetch-add (NVSHMEM returns
/// `%struct.__half` by value, which Rust cannot call).
#[cfg(any(doc, feature = "nvshmem-3-7"))]
impl AddAmoElement for half::f16 {
    const ADD_NAME: &'static str = "half";
    #[inline(always)]
    unsafe fn __add(dest: *mut Self, value: Self, pe: c_int) {
        // `half` values travel as `ptr byval`: pass a pointer to a copy.
        unsafe { ffi::nvshmemx_half_atomic_add(dest, &value, pe) }
    }
}

macro_rules! amo_fns {
    ($(
        $(#[$doc:meta])*
        fn $name:ident<$bound:ident>($($arg:ident: $argty:ty),*) $(-> $ret:ty)? => $method:ident($($call:expr),*);
        example: ($ex_params:literal, $ex_call:literal);
    )*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// `dest` must be a live symmetric allocation holding a `T` on every PE;
        /// other accesses to it while the atomic runs must be NVSHMEM atomics too.
        #[doc = pe_safety!()]
        ///
        /// # Example
        /// ```no_run
        /// # #![allow(unused)]
        /// use nvshmem_device::*;
        #[doc = concat!("unsafe fn kernel(", $ex_params, ") {")]
        #[doc = concat!("    unsafe { ", stringify!($name), $ex_call, " };")]
        /// }
        /// ```
        #[inline(always)]
        #[cfg_attr(feature = "debug-checks", track_caller)]
        pub unsafe fn $name<T: $bound>($($arg: $argty,)* pe: Pe) $(-> $ret)? {
            check_pe(pe);
            // SAFETY: the caller's contract.
            unsafe { T::$method($($call,)* pe.to_c()) }
        }
    )*};
}

amo_fns! {
    /// Atomically reads `dest` on PE `pe` (`nvshmem_TYPE_atomic_fetch`).
    fn atomic_fetch<AmoElement>(dest: SymPtr<T>) -> T => __fetch(dest.as_ptr());
    example: ("x: SymPtr<f32>", "(x, Pe::new(1))");

    /// Atomically writes `value` to `dest` on PE `pe` (`nvshmem_TYPE_atomic_set`).
    fn atomic_set<AmoElement>(dest: SymPtr<T>, value: T) => __set(dest.as_ptr(), value);
    example: ("x: SymPtr<u64>", "(x, 7, Pe::new(1))");

    /// Atomically writes `value` to `dest` on PE `pe` and returns the old value
    /// (`nvshmem_TYPE_atomic_swap`).
    fn atomic_swap<AmoElement>(dest: SymPtr<T>, value: T) -> T => __swap(dest.as_ptr(), value);
    example: ("x: SymPtr<i64>", "(x, -1, Pe::new(0))");

    /// Atomically adds `value` to `dest` on PE `pe` (`nvshmem_TYPE_atomic_add`;
    /// `nvshmemx_*` for the floating-point types, NVSHMEM 3.7+).
    fn atomic_add<AddAmoElement>(dest: SymPtr<T>, value: T) => __add(dest.as_ptr(), value);
    example: ("x: SymPtr<u32>", "(x, 3, Pe::new(1))");

    /// Atomically adds `value` to `dest` on PE `pe` and returns the old value
    /// (`nvshmem_TYPE_atomic_fetch_add`).
    fn atomic_fetch_add<FetchAddAmoElement>(dest: SymPtr<T>, value: T) -> T => __fetch_add(dest.as_ptr(), value);
    example: ("x: SymPtr<usize>", "(x, 1, Pe::new(0))");

    /// Atomically replaces `dest` on PE `pe` by `value` if it equals `cond`;
    /// returns the old value either way (`nvshmem_TYPE_atomic_compare_swap`).
    fn atomic_compare_swap<StandardAmoElement>(dest: SymPtr<T>, cond: T, value: T) -> T
        => __compare_swap(dest.as_ptr(), cond, value);
    example: ("lock: SymPtr<i32>", "(lock, 0, 1, Pe::new(0))");

    /// Atomically adds one to `dest` on PE `pe` and returns the old value
    /// (`nvshmem_TYPE_atomic_fetch_inc`).
    fn atomic_fetch_inc<StandardAmoElement>(dest: SymPtr<T>) -> T => __fetch_inc(dest.as_ptr());
    example: ("x: SymPtr<u64>", "(x, Pe::new(0))");

    /// Atomically adds one to `dest` on PE `pe` (`nvshmem_TYPE_atomic_inc`).
    fn atomic_inc<StandardAmoElement>(dest: SymPtr<T>) => __inc(dest.as_ptr());
    example: ("x: SymPtr<isize>", "(x, Pe::new(1))");

    /// Atomically ANDs `value` into `dest` on PE `pe` and returns the old value
    /// (`nvshmem_TYPE_atomic_fetch_and`).
    fn atomic_fetch_and<BitwiseAmoElement>(dest: SymPtr<T>, value: T) -> T => __fetch_and(dest.as_ptr(), value);
    example: ("bits: SymPtr<u32>", "(bits, !1, Pe::new(1))");

    /// Atomically ORs `value` into `dest` on PE `pe` and returns the old value
    /// (`nvshmem_TYPE_atomic_fetch_or`).
    fn atomic_fetch_or<BitwiseAmoElement>(dest: SymPtr<T>, value: T) -> T => __fetch_or(dest.as_ptr(), value);
    example: ("bits: SymPtr<u64>", "(bits, 1 << 5, Pe::new(1))");

    /// Atomically XORs `value` into `dest` on PE `pe` and returns the old value
    /// (`nvshmem_TYPE_atomic_fetch_xor`).
    fn atomic_fetch_xor<BitwiseAmoElement>(dest: SymPtr<T>, value: T) -> T => __fetch_xor(dest.as_ptr(), value);
    example: ("bits: SymPtr<i64>", "(bits, 0xff, Pe::new(0))");

    /// Atomically ANDs `value` into `dest` on PE `pe` (`nvshmem_TYPE_atomic_and`).
    fn atomic_and<BitwiseAmoElement>(dest: SymPtr<T>, value: T) => __and(dest.as_ptr(), value);
    example: ("bits: SymPtr<i32>", "(bits, 0x0f, Pe::new(1))");

    /// Atomically ORs `value` into `dest` on PE `pe` (`nvshmem_TYPE_atomic_or`).
    fn atomic_or<BitwiseAmoElement>(dest: SymPtr<T>, value: T) => __or(dest.as_ptr(), value);
    example: ("bits: SymPtr<u32>", "(bits, 0x10, Pe::new(1))");

    /// Atomically XORs `value` into `dest` on PE `pe` (`nvshmem_TYPE_atomic_xor`).
    fn atomic_xor<BitwiseAmoElement>(dest: SymPtr<T>, value: T) => __xor(dest.as_ptr(), value);
    example: ("bits: SymPtr<u64>", "(bits, 1, Pe::new(0))");
}
