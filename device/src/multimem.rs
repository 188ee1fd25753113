//! NVLink SHARP (NVLS) multicast: [`mc_ptr`] and the `multimem` instructions
//! that load-reduce, store and reduce through a multicast address, for
//! sm_90 and later.
//!
//! A multicast address names one symmetric object on **every** PE of a team at
//! once: `multimem.ld_reduce` reads it from every PE and returns the reduction
//! (the NVSwitch does the arithmetic), `multimem.st` writes a value to every
//! PE, and `multimem.red` reduces a value into every PE's copy. With them a
//! one-shot all-reduce is one load-reduce and one store per element, as in
//! NCCL's NVLS algorithms:
//!
//! ```no_run
//! use nvshmem_device::{McPtr, Sum, SymPtr, Team, mc_ptr, multimem_ld_reduce, multimem_st, thread};
//! // Every PE calls it after a barrier (so every PE's `data` is written), each
//! // on its own quarter; a barrier after it publishes the result.
//! unsafe fn allreduce_quarter(data: SymPtr<[f32; 4]>, n: usize) -> bool {
//!     let Some(mc) = mc_ptr(Team::WORLD, data) else {
//!         return false; // no NVLS: take another path (`reduce`, say)
//!     };
//!     let mut i = thread::global_index_x();
//!     while i < n {
//!         let m = unsafe { mc.add(i) };
//!         unsafe { multimem_st(m, multimem_ld_reduce(Sum, m)) };
//!         i += thread::global_stride_x();
//!     }
//!     true
//! }
//! ```
//!
//! # When there is a multicast address
//! Only where NVSHMEM set up NVLS for the team: GPUs connected by an NVSwitch
//! with multicast support (HGX/DGX H100/H200/B200 and later), NVSHMEM built
//! and run with NVLS on (`NVSHMEM_DISABLE_NVLS=0`), and the team created with
//! NVLS resources. Everywhere else [`mc_ptr`] returns `None` and a kernel
//! must take another path.
//!
//! **This project keeps NVLS off** (`nvshmem-host` sets
//! `NVSHMEM_DISABLE_NVLS=1` unless the environment says otherwise, and its
//! GPU tests refuse to run without it): multicast objects on a shared machine
//! can take its GPUs out of service. So the `multimem` functions are only
//! checked through `ptxas` here (`tests/kernels/multimem`); running them needs
//! your own NVSwitch machine.
//!
//! # Element types and operators
//! | Type | PTX type | [`multimem_st`] | [`multimem_ld_reduce`], [`multimem_red`] |
//! |---|---|---|---|
//! | `f32` | `.f32` | yes | [`Sum`] |
//! | `[f32; 4]` | `.v4.f32` | yes | [`Sum`] (`ld_reduce` only) |
//! | `f64` | `.f64` | yes | [`Sum`] |
//! | `[f16; 2]` | `.f16x2` | yes | [`Sum`], [`Min`], [`Max`] (`red`: [`Sum`] only) |
//! | `[bf16; 2]` | `.bf16x2` | yes | [`Sum`], [`Min`], [`Max`] (`red`: [`Sum`] only) |
//! | `[[f16; 2]; 4]`, `[[bf16; 2]; 4]` | `.v4.f16x2`, `.v4.bf16x2` | yes | [`Sum`], [`Min`], [`Max`] (`ld_reduce` only) |
//! | `u32`, `u64` | `.u32`, `.u64` (`.b32`, `.b64`) | yes | [`Sum`], [`Min`], [`Max`], [`And`], [`Or`], [`Xor`] |
//! | `i32` | `.s32` | yes | [`Sum`], [`Min`], [`Max`] |
//! | `i64` | `.s64` | yes | [`Min`], [`Max`] (PTX has no `.s64` add) |
//!
//! Every form in this table is checked by `ptxas` (sm_90) in this project's
//! builder tests (`nvls_every_form` in `tests/kernels/multimem`, for sm_90
//! and sm_100).
//!
//! Loads and stores are weak (`multimem.ld_reduce.global.add.f32`, as
//! NVSHMEM's own NVLS collectives issue them): order them against other PEs
//! with a barrier, as the example says.

use crate::__private::Sealed;
use crate::{And, Max, Min, Or, Sum, SymPtr, Team, Xor, ffi};
use core::ptr::NonNull;
use half::{bf16, f16};

// PTX's `.f16x2` and `.bf16x2` are `[f16; 2]` and `[bf16; 2]` here (two
// halves in one 32-bit word, the first in the low half).

/// A multicast address of a symmetric `T` ([`mc_ptr`]): an access through it
/// reaches the object on every PE of the team.
///
/// ```no_run
/// use nvshmem_device::{McPtr, SymPtr, Team, mc_ptr};
/// fn nvls(data: SymPtr<f32>) -> Option<McPtr<f32>> {
///     mc_ptr(Team::WORLD, data)
/// }
/// ```
#[repr(transparent)]
pub struct McPtr<T>(NonNull<T>);

impl<T> Clone for McPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for McPtr<T> {}

// SAFETY: a multicast address is a number naming memory on the team's PEs;
// it confers no access by itself, and every access through it is `unsafe`
// (as for `SymPtr`).
unsafe impl<T> Send for McPtr<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for McPtr<T> {}

impl<T> core::fmt::Debug for McPtr<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "McPtr({:p})", self.0)
    }
}

impl<T> McPtr<T> {
    /// The multicast address itself. Plain loads and stores through it are
    /// not defined by CUDA; use the `multimem_*` functions.
    ///
    /// ```no_run
    /// # fn f(m: nvshmem_device::McPtr<u32>) {
    /// let raw: *mut u32 = m.as_ptr();
    /// # }
    /// ```
    pub const fn as_ptr(self) -> *mut T {
        self.0.as_ptr()
    }

    /// The multicast address `count` elements further on.
    ///
    /// # Safety
    /// The result must stay inside the same symmetric allocation.
    ///
    /// ```no_run
    /// # unsafe fn f(m: nvshmem_device::McPtr<u32>) {
    /// let third = unsafe { m.add(2) };
    /// # }
    /// ```
    pub const unsafe fn add(self, count: usize) -> Self {
        // SAFETY: the caller stays in the allocation, which is not at address 0.
        McPtr(unsafe { self.0.add(count) })
    }

    /// The same address seen as another element type.
    ///
    /// ```no_run
    /// # fn f(m: nvshmem_device::McPtr<f32>) {
    /// let v4 = m.cast::<[f32; 4]>();
    /// # }
    /// ```
    pub const fn cast<U>(self) -> McPtr<U> {
        McPtr(self.0.cast())
    }
}

/// The multicast address of `dest` for every PE of `team`
/// (`nvshmemx_mc_ptr`), or `None` where NVLS is not set up for the team (see
/// the [module docs](self)): always `None` with `NVSHMEM_DISABLE_NVLS=1`.
///
/// ```no_run
/// use nvshmem_device::{SymPtr, Team, mc_ptr};
/// fn has_nvls(data: SymPtr<u64>) -> bool {
///     mc_ptr(Team::WORLD, data).is_some()
/// }
/// ```
#[inline(always)]
pub fn mc_ptr<T>(team: Team, dest: SymPtr<T>) -> Option<McPtr<T>> {
    // SAFETY: a live team (the `Team` invariant) and an address that NVSHMEM
    // only compares with its heap's bounds and offsets; nothing is dereferenced
    // but the team's own multicast base.
    let p = unsafe { ffi::nvshmemx_mc_ptr(team.raw(), dest.as_ptr() as *const core::ffi::c_void) };
    NonNull::new(p.cast()).map(McPtr)
}

/// A type that `multimem.st` and `multimem.ld_reduce` move (see the table in
/// the [module docs](self)).
///
/// ```
/// fn takes<T: nvshmem_device::MultimemElement>() {}
/// takes::<[f32; 4]>();
/// ```
pub trait MultimemElement: Copy + Sealed {
    /// The PTX type, with its vector width (`v4.f32`).
    const PTX_TYPE: &'static str;
    #[doc(hidden)]
    unsafe fn __st(dest: *mut Self, value: Self);
}

/// A type whose `multimem.ld_reduce` (and, for scalars, `multimem.red`)
/// takes the operator `O` ([`Sum`], [`Min`], [`Max`], [`And`], [`Or`], [`Xor`]).
///
/// ```
/// fn sums<T: nvshmem_device::MultimemReduce<nvshmem_device::Sum>>() {}
/// sums::<[nvshmem_device::half::bf16; 2]>();
/// ```
pub trait MultimemReduce<O>: MultimemElement {
    #[doc(hidden)]
    unsafe fn __ld_reduce(src: *const Self) -> Self;
}

/// A scalar type whose `multimem.red` takes the operator `O`.
///
/// ```
/// fn adds<T: nvshmem_device::MultimemRed<nvshmem_device::Sum>>() {}
/// adds::<u64>();
/// ```
pub trait MultimemRed<O>: MultimemReduce<O> {
    #[doc(hidden)]
    unsafe fn __red(dest: *mut Self, value: Self);
}

/// Writes `value` to `dest` on every PE of the multicast address's team
/// (`multimem.st`).
///
/// # Safety
/// `dest` comes from [`mc_ptr`] for a live symmetric allocation that holds a
/// `T` at that offset, aligned to `size_of::<T>()`; nothing else writes those
/// bytes on any PE meanwhile.
///
/// Needs sm_90 or later: `ptxas` refuses the instruction below (the
/// builder compiles Rust once for every arch, so this cannot be checked
/// earlier).
///
/// ```no_run
/// use nvshmem_device::{McPtr, multimem_st};
/// unsafe fn broadcast_flag(flag: McPtr<u32>) {
///     unsafe { multimem_st(flag, 1) };
/// }
/// ```
#[inline(always)]
pub unsafe fn multimem_st<T: MultimemElement>(dest: McPtr<T>, value: T) {
    // SAFETY: the caller's contract.
    unsafe { T::__st(dest.as_ptr(), value) }
}

/// Reads `src` from every PE of the multicast address's team and returns
/// their reduction by `op` (`multimem.ld_reduce`).
///
/// # Safety
/// `src` comes from [`mc_ptr`] for a live symmetric allocation that holds an
/// initialized `T` at that offset on every PE, aligned to `size_of::<T>()`.
/// Needs sm_90 or later.
///
/// ```no_run
/// use nvshmem_device::{McPtr, Sum, multimem_ld_reduce};
/// unsafe fn total(x: McPtr<f32>) -> f32 {
///     unsafe { multimem_ld_reduce(Sum, x) }
/// }
/// ```
#[inline(always)]
pub unsafe fn multimem_ld_reduce<O, T: MultimemReduce<O>>(op: O, src: McPtr<T>) -> T {
    let _ = op;
    // SAFETY: the caller's contract.
    unsafe { T::__ld_reduce(src.as_ptr()) }
}

/// Reduces `value` by `op` into `dest` on every PE of the multicast
/// address's team (`multimem.red`), atomically per element.
///
/// # Safety
/// As for [`multimem_st`]; other accesses to those bytes meanwhile must be
/// `multimem.red` too.
///
/// ```no_run
/// use nvshmem_device::{McPtr, Sum, multimem_red};
/// unsafe fn count_everywhere(counter: McPtr<u64>) {
///     unsafe { multimem_red(Sum, counter, 1) };
/// }
/// ```
#[inline(always)]
pub unsafe fn multimem_red<O, T: MultimemRed<O>>(op: O, dest: McPtr<T>, value: T) {
    let _ = op;
    // SAFETY: the caller's contract.
    unsafe { T::__red(dest.as_ptr(), value) }
}

// The instructions. Every value travels as 32- or 64-bit registers (`.f16x2`
// and `.bf16x2` are `.b32`), as NVSHMEM's own NVLS code passes them.

/// The register words of a value of 1 or 4 words: the operand list of the
/// instruction, and local variables for them (named by the caller, so that
/// every use sees the same names).
macro_rules! words {
    (1, $bits:tt) => { "{v0}" };
    (4, $bits:tt) => { "{{{v0}, {v1}, {v2}, {v3}}}" };
    (@bind $words:ident 1 [$v0:ident $($_:ident)*]) => { let $v0 = $words[0]; };
    (@bind $words:ident 4 [$v0:ident $v1:ident $v2:ident $v3:ident]) => {
        let [$v0, $v1, $v2, $v3] = $words;
    };
    (@decl $word:ty, 1 [$v0:ident $($_:ident)*]) => { let $v0: $word; };
    (@decl $word:ty, 4 [$v0:ident $v1:ident $v2:ident $v3:ident]) => {
        let ($v0, $v1, $v2, $v3): ($word, $word, $word, $word);
    };
    (@collect 1 [$v0:ident $($_:ident)*]) => { [$v0] };
    (@collect 4 [$($v:ident)*]) => { [$($v),*] };
    (@call $m:ident, ($($a:tt)*), 1, $reg:ident [$v0:ident $($_:ident)*]) => { $m!($($a)*, [$v0] $reg) };
    (@call $m:ident, ($($a:tt)*), 4, $reg:ident [$($v:ident)*]) => { $m!($($a)*, [$($v),*] $reg) };
    // `value` as `$w` `$word`s, given to the store-like instruction `$m`.
    (@store $m:ident, ($($a:tt)*), $value:expr, $word:ty, $w:tt, $reg:ident) => {{
        let words: [$word; $w] = bytemuck::cast($value);
        words!(@bind words $w [v0 v1 v2 v3]);
        // SAFETY: the caller's contract.
        #[allow(unused_unsafe)]
        unsafe { words!(@call $m, ($($a)*), $w, $reg [v0 v1 v2 v3]) }
    }};
}

#[cfg(target_arch = "nvptx64")]
macro_rules! asm_st {
    ($ty:literal, $w:tt, $bits:tt, $p:expr, [$($v:ident),*] $reg:ident) => {
        core::arch::asm!(
            concat!("multimem.st.global.", $ty, " [{p}], ", words!($w, $bits), ";"),
            p = in(reg64) $p, $($v = in($reg) $v,)* options(nostack)
        )
    };
}

#[cfg(target_arch = "nvptx64")]
macro_rules! asm_ld_reduce {
    ($op:literal, $ty:literal, $w:tt, $bits:tt, $p:expr, [$($v:ident),*] $reg:ident) => {
        core::arch::asm!(
            concat!("multimem.ld_reduce.global.", $op, ".", $ty, " ", words!($w, $bits), ", [{p}];"),
            p = in(reg64) $p, $($v = out($reg) $v,)* options(nostack, readonly)
        )
    };
}

#[cfg(target_arch = "nvptx64")]
macro_rules! asm_red {
    ($op:literal, $ty:literal, $w:tt, $bits:tt, $p:expr, [$($v:ident),*] $reg:ident) => {
        core::arch::asm!(
            concat!("multimem.red.global.", $op, ".", $ty, " [{p}], ", words!($w, $bits), ";"),
            p = in(reg64) $p, $($v = in($reg) $v,)* options(nostack)
        )
    };
}

// Off the GPU the instructions do not exist: the crate type-checks on the
// host, and calling these there is a bug.
#[cfg(not(target_arch = "nvptx64"))]
macro_rules! asm_st {
    ($($t:tt)*) => {
        unreachable!("multimem instructions run only on the GPU")
    };
}
#[cfg(not(target_arch = "nvptx64"))]
macro_rules! asm_ld_reduce {
    ($($t:tt)*) => {
        unreachable!("multimem instructions run only on the GPU")
    };
}
#[cfg(not(target_arch = "nvptx64"))]
macro_rules! asm_red {
    ($($t:tt)*) => {
        unreachable!("multimem instructions run only on the GPU")
    };
}

/// `multimem.st` of `$t`: PTX type `$ty`, moved as `$w` words of `$bits`-bit
/// `$word`s in `$reg` registers.
macro_rules! multimem_st {
    ($t:ty, $ty:literal, $w:tt x $word:ty, $bits:tt, $reg:ident) => {
        impl MultimemElement for $t {
            const PTX_TYPE: &'static str = $ty;
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), allow(unused_variables))]
            unsafe fn __st(dest: *mut Self, value: Self) {
                words!(@store asm_st, ($ty, $w, $bits, dest), value, $word, $w, $reg)
            }
        }
    };
}

/// `multimem.ld_reduce` (operators `$O`, PTX `$op`) and `multimem.red`
/// (operators `$RO`) of `$t`, as PTX type `$ty`; the rest as [`multimem_st`].
macro_rules! multimem_ops {
    (
        $t:ty, $ty:literal, $w:tt x $word:ty, $bits:tt, $reg:ident,
        ld_reduce [$($O:ident => $op:literal),*] red [$($RO:ident => $rop:literal),*]
    ) => {
        $(
            impl MultimemReduce<$O> for $t {
                #[inline(always)]
                #[cfg_attr(not(target_arch = "nvptx64"), allow(unused_variables))]
                unsafe fn __ld_reduce(src: *const Self) -> Self {
                        words!(@decl $word, $w [v0 v1 v2 v3]);
                    // SAFETY: the caller's contract.
                    #[allow(unused_unsafe)]
                    unsafe { words!(@call asm_ld_reduce, ($op, $ty, $w, $bits, src), $w, $reg [v0 v1 v2 v3]) };
                    #[allow(unreachable_code)]
                    bytemuck::cast::<[$word; $w], Self>(words!(@collect $w [v0 v1 v2 v3]))
                }
            }
        )*
        $(
            impl MultimemRed<$RO> for $t {
                #[inline(always)]
                #[cfg_attr(not(target_arch = "nvptx64"), allow(unused_variables))]
                unsafe fn __red(dest: *mut Self, value: Self) {
                    words!(@store asm_red, ($rop, $ty, $w, $bits, dest), value, $word, $w, $reg)
                }
            }
        )*
    };
}

impl Sealed for [f32; 4] {}
impl Sealed for [f16; 2] {}
impl Sealed for [bf16; 2] {}
impl Sealed for [[f16; 2]; 4] {}
impl Sealed for [[bf16; 2]; 4] {}

multimem_st!(f32, "f32", 1 x u32, 32, reg32);
multimem_ops!(f32, "f32", 1 x u32, 32, reg32, ld_reduce [Sum => "add"] red [Sum => "add"]);
multimem_st!([f32; 4], "v4.f32", 4 x u32, 32, reg32);
multimem_ops!([f32; 4], "v4.f32", 4 x u32, 32, reg32, ld_reduce [Sum => "add"] red []);
multimem_st!(f64, "f64", 1 x u64, 64, reg64);
multimem_ops!(f64, "f64", 1 x u64, 64, reg64, ld_reduce [Sum => "add"] red [Sum => "add"]);

/// The integers but `i64`: sum, min and max, loaded and reduced.
macro_rules! multimem_int {
    ($($t:ty, $ty:literal, $word:ty, $bits:tt, $reg:ident;)*) => {$(
        multimem_st!($t, $ty, 1 x $word, $bits, $reg);
        multimem_ops!($t, $ty, 1 x $word, $bits, $reg,
            ld_reduce [Sum => "add", Min => "min", Max => "max"]
            red [Sum => "add", Min => "min", Max => "max"]);
    )*};
}

multimem_int! {
    u32, "u32", u32, 32, reg32;
    i32, "s32", u32, 32, reg32;
    u64, "u64", u64, 64, reg64;
}

// PTX has no `.s64` add; the half-precision pairs have no `multimem.red` min/max.
multimem_st!(i64, "s64", 1 x u64, 64, reg64);
multimem_ops!(i64, "s64", 1 x u64, 64, reg64,
    ld_reduce [Min => "min", Max => "max"] red [Min => "min", Max => "max"]);
multimem_st!([f16; 2], "f16x2", 1 x u32, 32, reg32);
multimem_ops!([f16; 2], "f16x2", 1 x u32, 32, reg32,
    ld_reduce [Sum => "add", Min => "min", Max => "max"] red [Sum => "add"]);
multimem_st!([bf16; 2], "bf16x2", 1 x u32, 32, reg32);
multimem_ops!([bf16; 2], "bf16x2", 1 x u32, 32, reg32,
    ld_reduce [Sum => "add", Min => "min", Max => "max"] red [Sum => "add"]);

multimem_st!([[f16; 2]; 4], "v4.f16x2", 4 x u32, 32, reg32);
multimem_ops!([[f16; 2]; 4], "v4.f16x2", 4 x u32, 32, reg32,
    ld_reduce [Sum => "add", Min => "min", Max => "max"] red []);
multimem_st!([[bf16; 2]; 4], "v4.bf16x2", 4 x u32, 32, reg32);
multimem_ops!([[bf16; 2]; 4], "v4.bf16x2", 4 x u32, 32, reg32,
    ld_reduce [Sum => "add", Min => "min", Max => "max"] red []);

// The bitwise operators take the untyped `.b32`/`.b64`.
multimem_ops!(u32, "b32", 1 x u32, 32, reg32,
    ld_reduce [And => "and", Or => "or", Xor => "xor"]
    red [And => "and", Or => "or", Xor => "xor"]);
multimem_ops!(u64, "b64", 1 x u64, 64, reg64,
    ld_reduce [And => "and", Or => "or", Xor => "xor"]
    red [And => "and", Or => "or", Xor => "xor"]);
