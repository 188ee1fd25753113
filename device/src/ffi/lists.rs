//! NVSHMEM's type lists, as X-macros (crate-internal) and as tables (public).
//!
//! Each list is a copy, in the same order, of the list of the same name in
//! NVSHMEM's headers; `tests/abi/` parses the headers and checks that they
//! are equal. An entry is `(NAME, "C type", RustType)`: `NAME` is what goes into
//! the function name (`nvshmem_NAME_p`). The RMA list, which has every name,
//! spells out each entry once; the other lists name theirs (`pick!`).
//!
//! ```
//! use nvshmem_device::ffi::lists;
//! assert_eq!(lists::STANDARD_RMA_TYPES.len(), 25);
//! assert!(lists::WAIT_TYPES.iter().any(|t| t.name == "uint64"));
//! ```

/// One entry of a type list.
///
/// ```
/// let t = nvshmem_device::ffi::lists::STANDARD_RMA_TYPES[7];
/// assert_eq!((t.name, t.c_type, t.size), ("int", "int", 4));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CType {
    /// The name in NVSHMEM's function names (`int32` in `nvshmem_int32_p`).
    pub name: &'static str,
    /// The C type as the header spells it (`int32_t`).
    pub c_type: &'static str,
    /// `size_of` the Rust type the declarations use for it.
    pub size: usize,
}

macro_rules! type_table {
    ([$( ($n:ident, $c:literal, $t:ty) )*]) => {
        &[$( CType { name: stringify!($n), c_type: $c, size: core::mem::size_of::<$t>() } ),*]
    };
}

macro_rules! size_table {
    ([$( ($bits:literal) )*]) => { &[$($bits),*] };
}

/// `NVSHMEMI_REPT_FOR_STANDARD_RMA_TYPES` (`device_host/nvshmem_common.cuh`).
macro_rules! standard_rma_types {
    ($m:ident! $($args:tt)*) => { $m!{ [
        // The order of the header's list, grouped: 16-bit floats, floats,
        // the C integer types, the fixed-width ones, size_t and ptrdiff_t.
        (bfloat16, "__nv_bfloat16", ::half::bf16) (half, "half", ::half::f16)
        (float, "float", ::core::ffi::c_float) (double, "double", ::core::ffi::c_double)
        (char, "char", ::core::ffi::c_char) (short, "short", ::core::ffi::c_short)
        (schar, "signed char", ::core::ffi::c_schar) (int, "int", ::core::ffi::c_int)
        (long, "long", ::core::ffi::c_long) (longlong, "long long", ::core::ffi::c_longlong)
        (uchar, "unsigned char", ::core::ffi::c_uchar)
        (ushort, "unsigned short", ::core::ffi::c_ushort) (uint, "unsigned int", ::core::ffi::c_uint)
        (ulong, "unsigned long", ::core::ffi::c_ulong)
        (ulonglong, "unsigned long long", ::core::ffi::c_ulonglong)
        (int8, "int8_t", i8) (int16, "int16_t", i16) (int32, "int32_t", i32) (int64, "int64_t", i64)
        (uint8, "uint8_t", u8) (uint16, "uint16_t", u16) (uint32, "uint32_t", u32) (uint64, "uint64_t", u64)
        (size, "size_t", usize) (ptrdiff, "ptrdiff_t", isize)
    ] $($args)* } };
}

/// Defines `rma_entry!`, one arm per entry of `$list`: `rma_entry!{name
/// [rest] [done] tail}` appends the entry `(name, "C type", RustType)` to
/// `done` and goes on with [`pick!`]. (`$d` is a `$`, which the arms of the
/// inner macro need.)
macro_rules! entry_lookup {
    ([$(($n:ident, $c:literal, $t:ty))*] $d:tt) => {
        macro_rules! rma_entry {
            $( ($n [$d($d rest:ident)*] [$d($d done:tt)*] $d($d tail:tt)*) => {
                $crate::ffi::lists::pick!{ [$d($d rest)*] [$d($d done)* ($n, $c, $t)] $d($d tail)* }
            }; )*
        }
    };
}
// The C and Rust types of each name, as the RMA list gives them (the other
// lists name a subset, spelled the same), written once.
standard_rma_types!(entry_lookup! $);

/// `pick!{ [names] [] m! args }` calls `m!{ [entries] args }` with the
/// [`standard_rma_types`] entries of `names`, in that order: how the lists
/// below are written, by name.
macro_rules! pick {
    ([] [$($done:tt)*] $m:ident! $($args:tt)*) => { $m!{ [$($done)*] $($args)* } };
    ([$n:ident $($rest:ident)*] $done:tt $($tail:tt)*) => {
        $crate::ffi::lists::rma_entry!{ $n [$($rest)*] $done $($tail)* }
    };
}

/// Defines each list macro `name!(m! args)`: `m!{ [entries] args }`, the
/// entries picked by name. (`$d` is a `$`, as in [`entry_lookup!`].)
macro_rules! named_lists {
    ($d:tt $($(#[$doc:meta])* $name:ident = [$($n:ident)*];)*) => {$(
        $(#[$doc])*
        macro_rules! $name {
            ($m:ident! $d($d args:tt)*) => {
                $crate::ffi::lists::pick!{ [$($n)*] [] $m! $d($d args)* }
            };
        }
    )*};
}

named_lists! { $
    /// `NVSHMEMI_REPT_FOR_WAIT_TYPES` (`device_host/nvshmem_common.cuh`).
    wait_types = [short int long longlong ushort uint ulong ulonglong int32 int64 uint32 uint64 size ptrdiff];
    /// `NVSHMEMI_REPT_OPGROUP_FOR_BITWISE_AMO` (`host/nvshmem_api.h`).
    bitwise_amo_types = [uint ulong ulonglong int32 uint32 int64 uint64];
    /// `NVSHMEMI_REPT_OPGROUP_FOR_STANDARD_AMO` (`host/nvshmem_api.h`).
    standard_amo_types = [int long longlong size ptrdiff];
    /// `NVSHMEMI_REPT_OPGROUP_FOR_EXTENDED_AMO` (`host/nvshmem_api.h`), without
    /// 3.7's C++-only `half` entry (see `extended_amo_half_types`).
    extended_amo_types = [float double];
    /// `NVSHMEMI_REPT_FOR_BITWISE_REDUCE_TYPES` (`device_host/nvshmem_common.cuh`):
    /// the element types of the `and`/`or`/`xor` reductions.
    bitwise_reduce_types = [uchar ushort uint ulong ulonglong int8 int16 int32 int64 uint8 uint16 uint32 uint64 size];
    /// `NVSHMEMI_REPT_FOR_STANDARD_REDUCE_TYPES` (`device_host/nvshmem_common.cuh`):
    /// as there, the bitwise list, then the types of `min`/`max` only.
    /// `NVSHMEMI_REPT_FOR_ARITH_REDUCE_TYPES` (`sum`/`prod`) is the same list
    /// (its `complexf`/`complexd` entries need `NVSHMEM_COMPLEX_SUPPORT`, which the
    /// device bitcode is built without).
    standard_reduce_types = [
        uchar ushort uint ulong ulonglong int8 int16 int32 int64 uint8 uint16 uint32 uint64 size
        char schar short int long longlong bfloat16 half float double
    ];
}

/// `NVSHMEMI_REPT_OPGROUP_FOR_EXTENDED_AMO_HALF` (`host/nvshmem_api.h`, 3.7+,
/// C++ only): the first entry of 3.7's extended AMO list, spelled `__half`
/// there (the RMA list's `half`).
#[allow(unused_macros)]
macro_rules! extended_amo_half_types {
    ($m:ident! $($args:tt)*) => { $m!{ [
        (half, "__half", ::half::f16)
    ] $($args)* } };
}

/// `NVSHMEMI_REPT_FOR_SIZES` (`device_host/nvshmem_common.cuh`): the bit
/// widths of `nvshmem_putBITS` and the rest.
macro_rules! sizes {
    ($m:ident! $($args:tt)*) => { $m!{ [ (8) (16) (32) (64) (128) ] $($args)* } };
}

/// `NVSHMEMI_REPT_FOR_STANDARD_RMA_TYPES`: the element types of `p`, `g`,
/// `put`, `get`, `iput`, `iget`, `put_signal` (all scopes, blocking and `_nbi`).
///
/// ```
/// # use nvshmem_device::ffi::lists::STANDARD_RMA_TYPES;
/// assert_eq!(STANDARD_RMA_TYPES[0].c_type, "__nv_bfloat16");
/// ```
pub const STANDARD_RMA_TYPES: &[CType] = standard_rma_types!(type_table!);

/// `NVSHMEMI_REPT_FOR_WAIT_TYPES`: the element types of `wait_until*` and `test*`.
///
/// ```
/// # use nvshmem_device::ffi::lists::WAIT_TYPES;
/// assert!(!WAIT_TYPES.iter().any(|t| t.name == "int16"));
/// ```
pub const WAIT_TYPES: &[CType] = wait_types!(type_table!);

/// `NVSHMEMI_REPT_OPGROUP_FOR_BITWISE_AMO`: and/or/xor, and (with the
/// standard list) inc, add, compare_swap, fetch, set, swap.
///
/// ```
/// # use nvshmem_device::ffi::lists::BITWISE_AMO_TYPES;
/// assert!(BITWISE_AMO_TYPES.iter().any(|t| t.name == "int64"));
/// ```
pub const BITWISE_AMO_TYPES: &[CType] = bitwise_amo_types!(type_table!);

/// `NVSHMEMI_REPT_OPGROUP_FOR_STANDARD_AMO`: inc, add, compare_swap, fetch, set, swap.
///
/// ```
/// # use nvshmem_device::ffi::lists::STANDARD_AMO_TYPES;
/// assert!(STANDARD_AMO_TYPES.iter().any(|t| t.name == "ptrdiff"));
/// ```
pub const STANDARD_AMO_TYPES: &[CType] = standard_amo_types!(type_table!);

/// `NVSHMEMI_REPT_OPGROUP_FOR_EXTENDED_AMO` without 3.7's `half`: fetch, set,
/// swap (and, from 3.7, `nvshmemx_*_atomic_{add,fetch_add}`).
///
/// ```
/// # use nvshmem_device::ffi::lists::EXTENDED_AMO_TYPES;
/// assert_eq!(EXTENDED_AMO_TYPES.len(), 2);
/// ```
pub const EXTENDED_AMO_TYPES: &[CType] = extended_amo_types!(type_table!);

/// 3.7's `NVSHMEMI_REPT_OPGROUP_FOR_EXTENDED_AMO_HALF` (C++ only), which 3.7
/// puts in front of [`EXTENDED_AMO_TYPES`].
///
/// ```
/// # use nvshmem_device::ffi::lists::EXTENDED_AMO_HALF_TYPES;
/// assert_eq!(EXTENDED_AMO_HALF_TYPES[0].c_type, "__half");
/// ```
pub const EXTENDED_AMO_HALF_TYPES: &[CType] = extended_amo_half_types!(type_table!);

/// `NVSHMEMI_REPT_FOR_BITWISE_REDUCE_TYPES`: the element types of the
/// `and`/`or`/`xor` `reduce` and `reducescatter` functions.
///
/// ```
/// # use nvshmem_device::ffi::lists::BITWISE_REDUCE_TYPES;
/// assert_eq!(BITWISE_REDUCE_TYPES.len(), 14);
/// assert!(!BITWISE_REDUCE_TYPES.iter().any(|t| t.name == "float"));
/// ```
pub const BITWISE_REDUCE_TYPES: &[CType] = bitwise_reduce_types!(type_table!);

/// `NVSHMEMI_REPT_FOR_STANDARD_REDUCE_TYPES`, expanded: the element types of
/// `min`/`max` (and of `sum`/`prod`, see [`ARITH_REDUCE_TYPES`]).
///
/// ```
/// # use nvshmem_device::ffi::lists::STANDARD_REDUCE_TYPES;
/// assert_eq!(STANDARD_REDUCE_TYPES.len(), 24);
/// ```
pub const STANDARD_REDUCE_TYPES: &[CType] = standard_reduce_types!(type_table!);

/// `NVSHMEMI_REPT_FOR_ARITH_REDUCE_TYPES` without `NVSHMEM_COMPLEX_SUPPORT`
/// (as the device bitcode is built): the element types of `sum`/`prod`, the
/// same as [`STANDARD_REDUCE_TYPES`].
///
/// ```
/// # use nvshmem_device::ffi::lists::{ARITH_REDUCE_TYPES, STANDARD_REDUCE_TYPES};
/// assert_eq!(ARITH_REDUCE_TYPES, STANDARD_REDUCE_TYPES);
/// ```
pub const ARITH_REDUCE_TYPES: &[CType] = standard_reduce_types!(type_table!);

/// `NVSHMEMI_REPT_FOR_SIZES`: the bit widths of the sized functions (`nvshmem_put64`, ...).
///
/// ```
/// assert_eq!(nvshmem_device::ffi::lists::SIZES, &[8, 16, 32, 64, 128]);
/// ```
pub const SIZES: &[u32] = sizes!(size_table!);

#[allow(unused_imports)]
pub(crate) use extended_amo_half_types;
pub(crate) use {
    bitwise_amo_types, bitwise_reduce_types, extended_amo_types, pick, rma_entry, sizes,
    standard_amo_types, standard_reduce_types, standard_rma_types, wait_types,
};
