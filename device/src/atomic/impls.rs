//! The per-type implementations, generated from macro tables: one inline PTX
//! instruction per (ordering, scope, space) combination, chosen by a `match`
//! on constants that folds away once inlined.

use super::{AtomicAdd, AtomicInteger, AtomicValue, ScopeKind, Sealed, Sem, Space};
use crate::math::{Bf16x2, F16x2};
use crate::nvvm;

/// Calls `$cb!(".sem", ".scope", ".space", $args)` for the runtime-constant
/// `(sem, scope, space)`, over the orderings listed (the others cannot reach
/// here: the ordering traits exclude them).
macro_rules! dispatch {
    ($sem:expr, $scope:expr, $space:expr, [$($s:ident $sl:literal),*], $cb:ident! $args:tt) => {
        match $sem {
            $(Sem::$s => dispatch!(@scope $scope, $space, $sl, $cb! $args),)*
            #[allow(unreachable_patterns)]
            _ => unreachable!("ordering not allowed for this operation"),
        }
    };
    (@scope $scope:expr, $space:expr, $sl:literal, $cb:ident! $args:tt) => {
        match ($scope, $space) {
            (ScopeKind::Cta, Space::Generic) => { $cb!($sl, ".cta", "", $args) }
            (ScopeKind::Cta, Space::Global) => { $cb!($sl, ".cta", ".global", $args) }
            (ScopeKind::Cta, Space::Shared) => { $cb!($sl, ".cta", ".shared", $args) }
            (ScopeKind::Gpu, Space::Generic) => { $cb!($sl, ".gpu", "", $args) }
            (ScopeKind::Gpu, Space::Global) => { $cb!($sl, ".gpu", ".global", $args) }
            (ScopeKind::Gpu, Space::Shared) => { $cb!($sl, ".gpu", ".shared", $args) }
            (ScopeKind::Sys, Space::Generic) => { $cb!($sl, ".sys", "", $args) }
            (ScopeKind::Sys, Space::Global) => { $cb!($sl, ".sys", ".global", $args) }
            (ScopeKind::Sys, Space::Shared) => { $cb!($sl, ".sys", ".shared", $args) }
        }
    };
}

macro_rules! ld {
    ($sem:literal, $scope:literal, $space:literal, ($ty:literal, $reg:ident, $out:ident, $addr:ident)) => {
        nvvm::ptx!(concat!("ld", $sem, $scope, $space, ".", $ty, " {0}, [{1}];"),
            out($reg) $out, in(reg64) $addr, options(nostack))
    };
}
macro_rules! st {
    ($sem:literal, $scope:literal, $space:literal, ($ty:literal, $reg:ident, $addr:ident, $v:ident)) => {
        nvvm::ptx!(concat!("st", $sem, $scope, $space, ".", $ty, " [{0}], {1};"),
            in(reg64) $addr, in($reg) $v, options(nostack))
    };
}
macro_rules! atom {
    ($sem:literal, $scope:literal, $space:literal, ($op:literal, $ty:literal, $reg:ident, $out:ident, $addr:ident, $v:ident)) => {
        nvvm::ptx!(concat!("atom", $sem, $scope, $space, ".", $op, ".", $ty, " {0}, [{1}], {2};"),
            out($reg) $out, in(reg64) $addr, in($reg) $v, options(nostack))
    };
}
macro_rules! cas {
    ($sem:literal, $scope:literal, $space:literal, ($ty:literal, $reg:ident, $out:ident, $addr:ident, $cmp:ident, $new:ident)) => {
        nvvm::ptx!(concat!("atom", $sem, $scope, $space, ".cas.", $ty, " {0}, [{1}], {2}, {3};"),
            out($reg) $out, in(reg64) $addr, in($reg) $cmp, in($reg) $new, options(nostack))
    };
}
macro_rules! red {
    ($sem:literal, $scope:literal, $space:literal, ($op:literal, $ty:literal, $reg:ident, $addr:ident, $v:ident)) => {
        nvvm::ptx!(concat!("red", $sem, $scope, $space, ".", $op, ".", $ty, " [{0}], {1};"),
            in(reg64) $addr, in($reg) $v, options(nostack))
    };
}

/// Bits of a value as the integer register the instruction takes.
trait Bits: Copy {
    type Raw: Copy + PartialEq;
    fn to_raw(self) -> Self::Raw;
    fn from_raw(raw: Self::Raw) -> Self;
}

macro_rules! bits {
    ($($t:ty => $raw:ty, |$x:ident| $to:expr, |$r:ident| $from:expr;)*) => {$(
        impl Bits for $t {
            type Raw = $raw;
            #[inline(always)]
            fn to_raw(self) -> $raw { let $x = self; $to }
            #[inline(always)]
            fn from_raw(raw: $raw) -> Self { let $r = raw; $from }
        }
    )*};
}

bits! {
    u32 => u32, |x| x, |r| r;
    i32 => u32, |x| x as u32, |r| r as i32;
    f32 => u32, |x| x.to_bits(), |r| f32::from_bits(r);
    u64 => u64, |x| x, |r| r;
    i64 => u64, |x| x as u64, |r| r as i64;
    f64 => u64, |x| x.to_bits(), |r| f64::from_bits(r);
    F16x2 => u32, |x| x.to_bits(), |r| F16x2::from_bits(r);
    Bf16x2 => u32, |x| x.to_bits(), |r| Bf16x2::from_bits(r);
}

/// Loads, stores, exchange and compare-and-swap, on the `.bN` type of the size.
macro_rules! value_impls {
    ($($t:ty => $b:literal, $reg:ident;)*) => {$(
        impl Sealed for $t {}
        // SAFETY: the instructions match the type's size and register class.
        unsafe impl AtomicValue for $t {
            #[inline(always)]
            unsafe fn __load(addr: u64, sem: Sem, scope: ScopeKind, space: Space) -> Self {
                let out: <$t as Bits>::Raw;
                // SAFETY: the caller's (the public function's) promise.
                unsafe { dispatch!(sem, scope, space, [Relaxed ".relaxed", Acquire ".acquire"], ld!($b, $reg, out, addr)) }
                <$t>::from_raw(out)
            }
            #[inline(always)]
            unsafe fn __store(addr: u64, value: Self, sem: Sem, scope: ScopeKind, space: Space) {
                let v = value.to_raw();
                // SAFETY: as above.
                unsafe { dispatch!(sem, scope, space, [Relaxed ".relaxed", Release ".release"], st!($b, $reg, addr, v)) }
            }
            #[inline(always)]
            unsafe fn __swap(addr: u64, value: Self, sem: Sem, scope: ScopeKind, space: Space) -> Self {
                let v = value.to_raw();
                let out: <$t as Bits>::Raw;
                // SAFETY: as above.
                unsafe { dispatch!(sem, scope, space, [Relaxed ".relaxed", Acquire ".acquire", Release ".release", AcqRel ".acq_rel"],
                    atom!("exch", $b, $reg, out, addr, v)) }
                <$t>::from_raw(out)
            }
            #[inline(always)]
            unsafe fn __cas(addr: u64, current: Self, new: Self, sem: Sem, scope: ScopeKind, space: Space) -> Self {
                let (cmp, new) = (current.to_raw(), new.to_raw());
                let out: <$t as Bits>::Raw;
                // SAFETY: as above.
                unsafe { dispatch!(sem, scope, space, [Relaxed ".relaxed", Acquire ".acquire", Release ".release", AcqRel ".acq_rel"],
                    cas!($b, $reg, out, addr, cmp, new)) }
                <$t>::from_raw(out)
            }
            #[inline(always)]
            fn __same_bits(self, other: Self) -> bool {
                self.to_raw() == other.to_raw()
            }
        }
    )*};
}

value_impls! {
    u32 => "b32", reg32;
    i32 => "b32", reg32;
    f32 => "b32", reg32;
    u64 => "b64", reg64;
    i64 => "b64", reg64;
    f64 => "b64", reg64;
    F16x2 => "b32", reg32;
    Bf16x2 => "b32", reg32;
}

/// One `atom.<op>` and one `red.<op>` method for a type.
macro_rules! rmw_methods {
    ($fetch:ident, $red:ident, $op:literal, $t:ty, $ty:literal, $reg:ident) => {
        #[inline(always)]
        unsafe fn $fetch(addr: u64, value: Self, sem: Sem, scope: ScopeKind, space: Space) -> Self {
            let v = value.to_raw();
            let out: <$t as Bits>::Raw;
            // SAFETY: the caller's (the public function's) promise.
            unsafe { dispatch!(sem, scope, space, [Relaxed ".relaxed", Acquire ".acquire", Release ".release", AcqRel ".acq_rel"],
                atom!($op, $ty, $reg, out, addr, v)) }
            <$t>::from_raw(out)
        }
        #[inline(always)]
        unsafe fn $red(addr: u64, value: Self, sem: Sem, scope: ScopeKind, space: Space) {
            let v = value.to_raw();
            // SAFETY: as above.
            unsafe { dispatch!(sem, scope, space, [Relaxed ".relaxed", Release ".release"], red!($op, $ty, $reg, addr, v)) }
        }
    };
}

macro_rules! add_impls {
    ($($t:ty => $ty:literal, $reg:ident;)*) => {$(
        // SAFETY: `atom.add` of the type's PTX type.
        unsafe impl AtomicAdd for $t {
            rmw_methods!(__fetch_add, __red_add, "add", $t, $ty, $reg);
        }
    )*};
}

add_impls! {
    u32 => "u32", reg32;
    i32 => "s32", reg32;
    u64 => "u64", reg64;
    // Two's complement: adding as u64 is adding as s64 (PTX has no atom.add.s64).
    i64 => "u64", reg64;
    f32 => "f32", reg32;
    f64 => "f64", reg64;
    F16x2 => "noftz.f16x2", reg32;
    Bf16x2 => "noftz.bf16x2", reg32;
}

macro_rules! integer_impls {
    ($($t:ty => $bits:literal, $num:literal, $reg:ident;)*) => {$(
        // SAFETY: bitwise ops on `.bN`, min/max on the signed or unsigned type.
        unsafe impl AtomicInteger for $t {
            #[inline(always)]
            fn __neg(self) -> Self {
                self.wrapping_neg()
            }
            rmw_methods!(__fetch_and, __red_and, "and", $t, $bits, $reg);
            rmw_methods!(__fetch_or, __red_or, "or", $t, $bits, $reg);
            rmw_methods!(__fetch_xor, __red_xor, "xor", $t, $bits, $reg);
            rmw_methods!(__fetch_min, __red_min, "min", $t, $num, $reg);
            rmw_methods!(__fetch_max, __red_max, "max", $t, $num, $reg);
        }
    )*};
}

integer_impls! {
    u32 => "b32", "u32", reg32;
    i32 => "b32", "s32", reg32;
    u64 => "b64", "u64", reg64;
    i64 => "b64", "s64", reg64;
}

/// `atom.inc.u32` / `atom.dec.u32` and their `red` forms (only `u32` has them).
macro_rules! inc_dec {
    ($($fetch:ident, $red:ident, $op:literal;)*) => {$(
        #[inline(always)]
        pub(super) unsafe fn $fetch(addr: u64, limit: u32, sem: Sem, scope: ScopeKind, space: Space) -> u32 {
            let out: u32;
            // SAFETY: the caller's promise.
            unsafe { dispatch!(sem, scope, space, [Relaxed ".relaxed", Acquire ".acquire", Release ".release", AcqRel ".acq_rel"],
                atom!($op, "u32", reg32, out, addr, limit)) }
            out
        }
        #[inline(always)]
        pub(super) unsafe fn $red(addr: u64, limit: u32, sem: Sem, scope: ScopeKind, space: Space) {
            // SAFETY: the caller's promise.
            unsafe { dispatch!(sem, scope, space, [Relaxed ".relaxed", Release ".release"], red!($op, "u32", reg32, addr, limit)) }
        }
    )*};
}

inc_dec! {
    fetch_inc, red_inc, "inc";
    fetch_dec, red_dec, "dec";
}
