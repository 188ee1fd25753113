//! Atomic memory operations, as `host/nvshmem_api.h` declares them: each op
//! over the op groups (bitwise, standard, extended AMO types) it applies to.

#[cfg(any(doc, feature = "nvshmem-3-7"))]
use super::lists::extended_amo_half_types;
use super::lists::{bitwise_amo_types, extended_amo_types, standard_amo_types};
use core::ffi::c_int;

// NVSHMEMI_DECL_TYPE_<KIND>(type, TYPE, opname), with the device code's
// omissions (`device/nvshmem_defines.h`) first.
macro_rules! decl_amo {
    // "the following types are not implemented for FADD/ADD/INC because of
    // lack of CUDA support: ptrdiff_t longlong int64_t": not in the bitcode.
    (INC, $op:ident, int64, $($rest:tt)*) => {};
    (INC, $op:ident, longlong, $($rest:tt)*) => {};
    (INC, $op:ident, ptrdiff, $($rest:tt)*) => {};
    (FINC, $op:ident, int64, $($rest:tt)*) => {};
    (FINC, $op:ident, longlong, $($rest:tt)*) => {};
    (FINC, $op:ident, ptrdiff, $($rest:tt)*) => {};
    (ADD_SET, add, int64, $($rest:tt)*) => {};
    (ADD_SET, add, longlong, $($rest:tt)*) => {};
    (ADD_SET, add, ptrdiff, $($rest:tt)*) => {};
    (FADD_SWAP, fetch_add, int64, $($rest:tt)*) => {};
    (FADD_SWAP, fetch_add, longlong, $($rest:tt)*) => {};
    (FADD_SWAP, fetch_add, ptrdiff, $($rest:tt)*) => {};
    // Returns `%struct.__half` by value: no Rust equivalent.
    (XFADD, $op:ident, half, $($rest:tt)*) => {};

    (INC, $op:ident, $n:ident, $c:literal, $t:ty) => { pastey::paste! {
        extern_fn! {
            concat!("`void (", $c, " *dest, int pe)`. Typed: [`crate::atomic_inc`].");
            fn [<nvshmem_ $n _atomic_ $op>](dest: *mut $t, pe: c_int)
        }
    } };
    (FINC, $op:ident, $n:ident, $c:literal, $t:ty) => { pastey::paste! {
        extern_fn! {
            concat!("`", $c, " (", $c, " *dest, int pe)`. Typed: [`crate::atomic_fetch_inc`].");
            fn [<nvshmem_ $n _atomic_ $op>](dest: *mut $t, pe: c_int) -> $t
        }
    } };
    (FETCH, $op:ident, $n:ident, $c:literal, $t:ty) => { pastey::paste! {
        extern_fn! {
            concat!("`", $c, " (const ", $c, " *dest, int pe)`. Typed: [`crate::atomic_fetch`].");
            fn [<nvshmem_ $n _atomic_ $op>](dest: *const $t, pe: c_int) -> $t
        }
    } };
    (ADD_SET, $op:ident, $n:ident, $c:literal, $t:ty) => { pastey::paste! {
        extern_fn! {
            concat!("`void (", $c, " *dest, ", $c, " value, int pe)`. Typed: [`crate::atomic_",
                stringify!($op), "`].");
            fn [<nvshmem_ $n _atomic_ $op>](dest: *mut $t, value: byval!($n $t), pe: c_int)
        }
    } };
    (FADD_SWAP, $op:ident, $n:ident, $c:literal, $t:ty) => { pastey::paste! {
        extern_fn! {
            concat!("`", $c, " (", $c, " *dest, ", $c, " value, int pe)`. Typed: [`crate::atomic_",
                stringify!($op), "`].");
            fn [<nvshmem_ $n _atomic_ $op>](dest: *mut $t, value: byval!($n $t), pe: c_int) -> $t
        }
    } };
    (CSWAP, $op:ident, $n:ident, $c:literal, $t:ty) => { pastey::paste! {
        extern_fn! {
            concat!("`", $c, " (", $c, " *dest, ", $c, " cond, ", $c,
                " value, int pe)`. Typed: [`crate::atomic_compare_swap`].");
            fn [<nvshmem_ $n _atomic_ $op>](dest: *mut $t, cond: $t, value: $t, pe: c_int) -> $t
        }
    } };
    (AND_OR_XOR, $op:ident, $n:ident, $c:literal, $t:ty) => { pastey::paste! {
        extern_fn! {
            concat!("`void (", $c, " *dest, ", $c, " value, int pe)`. Typed: [`crate::atomic_",
                stringify!($op), "`].");
            fn [<nvshmem_ $n _atomic_ $op>](dest: *mut $t, value: $t, pe: c_int)
        }
    } };
    (FAND_FOR_FXOR, $op:ident, $n:ident, $c:literal, $t:ty) => { pastey::paste! {
        extern_fn! {
            concat!("`", $c, " (", $c, " *dest, ", $c, " value, int pe)`. Typed: [`crate::atomic_fetch_",
                stringify!($op), "`].");
            fn [<nvshmem_ $n _atomic_fetch_ $op>](dest: *mut $t, value: $t, pe: c_int) -> $t
        }
    } };
    // 3.7+: nvshmemx half/float/double atomic add and fetch_add.
    (XADD, $op:ident, $n:ident, $c:literal, $t:ty) => { pastey::paste! {
        extern_fn! {
            concat!("`void (", $c, " *dest, ", $c, " value, int pe)` (NVSHMEM 3.7+). Typed: [`crate::atomic_",
                stringify!($op), "`].");
            fn [<nvshmemx_ $n _atomic_ $op>](dest: *mut $t, value: byval!($n $t), pe: c_int)
        }
    } };
    (XFADD, $op:ident, $n:ident, $c:literal, $t:ty) => { pastey::paste! {
        extern_fn! {
            concat!("`", $c, " (", $c, " *dest, ", $c, " value, int pe)` (NVSHMEM 3.7+). Typed: [`crate::atomic_",
                stringify!($op), "`].");
            fn [<nvshmemx_ $n _atomic_ $op>](dest: *mut $t, value: byval!($n $t), pe: c_int) -> $t
        }
    } };
}

// The op-group invocations of `host/nvshmem_api.h`, in its order.
bitwise_amo_types!(each! decl_amo! INC, inc,);
standard_amo_types!(each! decl_amo! INC, inc,);

bitwise_amo_types!(each! decl_amo! FINC, fetch_inc,);
standard_amo_types!(each! decl_amo! FINC, fetch_inc,);

bitwise_amo_types!(each! decl_amo! FETCH, fetch,);
standard_amo_types!(each! decl_amo! FETCH, fetch,);
extended_amo_types!(each! decl_amo! FETCH, fetch,);

bitwise_amo_types!(each! decl_amo! ADD_SET, add,);
standard_amo_types!(each! decl_amo! ADD_SET, add,);

#[cfg(any(doc, feature = "nvshmem-3-7"))]
extended_amo_half_types!(each! decl_amo! XADD, add,);
#[cfg(any(doc, feature = "nvshmem-3-7"))]
extended_amo_types!(each! decl_amo! XADD, add,);
#[cfg(any(doc, feature = "nvshmem-3-7"))]
extended_amo_half_types!(each! decl_amo! XFADD, fetch_add,);
#[cfg(any(doc, feature = "nvshmem-3-7"))]
extended_amo_types!(each! decl_amo! XFADD, fetch_add,);

bitwise_amo_types!(each! decl_amo! ADD_SET, set,);
standard_amo_types!(each! decl_amo! ADD_SET, set,);
extended_amo_types!(each! decl_amo! ADD_SET, set,);

bitwise_amo_types!(each! decl_amo! FADD_SWAP, fetch_add,);
standard_amo_types!(each! decl_amo! FADD_SWAP, fetch_add,);

bitwise_amo_types!(each! decl_amo! FADD_SWAP, swap,);
standard_amo_types!(each! decl_amo! FADD_SWAP, swap,);
extended_amo_types!(each! decl_amo! FADD_SWAP, swap,);

bitwise_amo_types!(each! decl_amo! CSWAP, compare_swap,);
standard_amo_types!(each! decl_amo! CSWAP, compare_swap,);

bitwise_amo_types!(each! decl_amo! AND_OR_XOR, and,);
bitwise_amo_types!(each! decl_amo! AND_OR_XOR, or,);
bitwise_amo_types!(each! decl_amo! AND_OR_XOR, xor,);

bitwise_amo_types!(each! decl_amo! FAND_FOR_FXOR, and,);
bitwise_amo_types!(each! decl_amo! FAND_FOR_FXOR, or,);
bitwise_amo_types!(each! decl_amo! FAND_FOR_FXOR, xor,);
