//! RMA: `p`, `g`, `put`, `get`, `iput`, `iget`, `put_signal`, per type, per
//! size and byte-wise (`putmem`), in every scope.

use super::lists::{sizes, standard_rma_types};
use core::ffi::{c_int, c_void};

// NVSHMEMI_TYPENAME_P_IMPL / NVSHMEMI_TYPENAME_G_IMPL (thread scope only).
macro_rules! decl_p_g {
    ($n:ident, $c:literal, $t:ty) => { pastey::paste! {
        extern_fn! {
            concat!("`void (", $c, " *dest, const ", $c, " value, int pe)`. Typed: [`crate::p`].");
            fn [<nvshmem_ $n _p>](dest: *mut $t, value: byval!($n $t), pe: c_int)
        }
        decl_g! { $n, $c, $t }
    } };
}

macro_rules! decl_g {
    // `half`/`__nv_bfloat16` are returned as `%struct.__half`: no Rust
    // equivalent, a documented gap. `crate::g` uses a one-element `get`.
    (half, $c:literal, $t:ty) => {};
    (bfloat16, $c:literal, $t:ty) => {};
    ($n:ident, $c:literal, $t:ty) => {
        pastey::paste! {
            extern_fn! {
                concat!("`", $c, " (const ", $c, " *source, int pe)`. Typed: [`crate::g`].");
                fn [<nvshmem_ $n _g>](source: *const $t, pe: c_int) -> $t
            }
        }
    };
}

// NVSHMEMI_REPT_FOR_STANDARD_RMA_TYPES_AND_SCOPES2 over the typed put/get
// families: `<prefix>_<type>_<op><scope suffix>`.
macro_rules! decl_rma_scoped {
    ($pre:ident, $sfx:literal, $scope:literal, $n:ident, $c:literal, $t:ty) => { pastey::paste! {
        extern_fn! {
            concat!("`void (", $c, " *dest, const ", $c, " *source, size_t nelems, int pe)`, ",
                $scope, " scope. Typed: [`crate::put`].");
            fn [<$pre _ $n _put $sfx>](dest: *mut $t, source: *const $t, nelems: usize, pe: c_int)
        }
        extern_fn! {
            concat!("`void (", $c, " *dest, const ", $c, " *source, size_t nelems, int pe)`, ",
                $scope, " scope. Typed: [`crate::put_nbi`].");
            fn [<$pre _ $n _put_nbi $sfx>](dest: *mut $t, source: *const $t, nelems: usize, pe: c_int)
        }
        extern_fn! {
            concat!("`void (", $c, " *dest, const ", $c, " *source, size_t nelems, int pe)`, ",
                $scope, " scope. Typed: [`crate::get`].");
            fn [<$pre _ $n _get $sfx>](dest: *mut $t, source: *const $t, nelems: usize, pe: c_int)
        }
        extern_fn! {
            concat!("`void (", $c, " *dest, const ", $c, " *source, size_t nelems, int pe)`, ",
                $scope, " scope. Typed: [`crate::get_nbi`].");
            fn [<$pre _ $n _get_nbi $sfx>](dest: *mut $t, source: *const $t, nelems: usize, pe: c_int)
        }
        extern_fn! {
            concat!("`void (", $c, " *dest, const ", $c,
                " *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe)`, ",
                $scope, " scope. Typed: [`crate::iput`].");
            fn [<$pre _ $n _iput $sfx>](
                dest: *mut $t, source: *const $t, dst: isize, sst: isize, nelems: usize, pe: c_int)
        }
        extern_fn! {
            concat!("`void (", $c, " *dest, const ", $c,
                " *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe)`, ",
                $scope, " scope. Typed: [`crate::iget`].");
            fn [<$pre _ $n _iget $sfx>](
                dest: *mut $t, source: *const $t, dst: isize, sst: isize, nelems: usize, pe: c_int)
        }
        extern_fn! {
            concat!("`void (", $c, " *dest, const ", $c,
                " *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)`, ",
                $scope, " scope. Typed: [`crate::put_signal`].");
            fn [<$pre _ $n _put_signal $sfx>](dest: *mut $t, source: *const $t, nelems: usize,
                sig_addr: *mut u64, signal: u64, sig_op: c_int, pe: c_int)
        }
        extern_fn! {
            concat!("`void (", $c, " *dest, const ", $c,
                " *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)`, ",
                $scope, " scope. Typed: [`crate::put_signal_nbi`].");
            fn [<$pre _ $n _put_signal_nbi $sfx>](dest: *mut $t, source: *const $t, nelems: usize,
                sig_addr: *mut u64, signal: u64, sig_op: c_int, pe: c_int)
        }
    } };
}

// Byte-wise: `putmem`, `getmem`, `putmem_signal`, blocking and `_nbi`.
macro_rules! decl_mem {
    ($pre:ident, $sfx:literal, $scope:literal,) => { pastey::paste! {
        extern_fn! {
            concat!("`void (void *dest, const void *source, size_t bytes, int pe)`, ", $scope,
                " scope. Typed: [`crate::put_pod`].");
            fn [<$pre _putmem $sfx>](dest: *mut c_void, source: *const c_void, bytes: usize, pe: c_int)
        }
        extern_fn! {
            concat!("`void (void *dest, const void *source, size_t bytes, int pe)`, ", $scope,
                " scope. Typed: [`crate::put_pod_nbi`].");
            fn [<$pre _putmem_nbi $sfx>](dest: *mut c_void, source: *const c_void, bytes: usize, pe: c_int)
        }
        extern_fn! {
            concat!("`void (void *dest, const void *source, size_t bytes, int pe)`, ", $scope,
                " scope. Typed: [`crate::get_pod`].");
            fn [<$pre _getmem $sfx>](dest: *mut c_void, source: *const c_void, bytes: usize, pe: c_int)
        }
        extern_fn! {
            concat!("`void (void *dest, const void *source, size_t bytes, int pe)`, ", $scope,
                " scope. Typed: [`crate::get_pod_nbi`].");
            fn [<$pre _getmem_nbi $sfx>](dest: *mut c_void, source: *const c_void, bytes: usize, pe: c_int)
        }
        extern_fn! {
            concat!("`void (void *dest, const void *source, size_t bytes, uint64_t *sig_addr, ",
                "uint64_t signal, int sig_op, int pe)`, ", $scope, " scope. Typed: [`crate::put_signal_pod`].");
            fn [<$pre _putmem_signal $sfx>](dest: *mut c_void, source: *const c_void, bytes: usize,
                sig_addr: *mut u64, signal: u64, sig_op: c_int, pe: c_int)
        }
        extern_fn! {
            concat!("`void (void *dest, const void *source, size_t bytes, uint64_t *sig_addr, ",
                "uint64_t signal, int sig_op, int pe)`, ", $scope, " scope. Typed: [`crate::put_signal_pod_nbi`].");
            fn [<$pre _putmem_signal_nbi $sfx>](dest: *mut c_void, source: *const c_void, bytes: usize,
                sig_addr: *mut u64, signal: u64, sig_op: c_int, pe: c_int)
        }
    } };
}

// NVSHMEMI_REPT_FOR_SIZES: `put8`, `get16_nbi`, `iput64`, ... (nelems counts
// elements of BITS bits).
macro_rules! decl_sized {
    // 3.4.5's NVSHMEMI_REPT_FOR_SIZES_WITH_SCOPE2 lists `6` where 3.8 has
    // `16`: the warp/block 16-bit signal puts exist from 3.8 on (a gap in 3.4.5).
    (nvshmemx, $sfx:literal, $scope:literal, 16) => {
        decl_sized! { @plain nvshmemx, $sfx, $scope, 16 }
        #[cfg(any(doc, feature = "nvshmem-3-8"))]
        decl_sized! { @signal nvshmemx, $sfx, $scope, 16 }
    };
    ($pre:ident, $sfx:literal, $scope:literal, $bits:literal) => {
        decl_sized! { @plain $pre, $sfx, $scope, $bits }
        decl_sized! { @signal $pre, $sfx, $scope, $bits }
    };
    (@plain $pre:ident, $sfx:literal, $scope:literal, $bits:literal) => { pastey::paste! {
        extern_fn! {
            concat!("`void (void *dest, const void *source, size_t nelems, int pe)`: ", $bits,
                "-bit elements, ", $scope, " scope.");
            fn [<$pre _put $bits $sfx>](dest: *mut c_void, source: *const c_void, nelems: usize, pe: c_int)
        }
        extern_fn! {
            concat!("`void (void *dest, const void *source, size_t nelems, int pe)`: ", $bits,
                "-bit elements, ", $scope, " scope.");
            fn [<$pre _put $bits _nbi $sfx>](
                dest: *mut c_void, source: *const c_void, nelems: usize, pe: c_int)
        }
        extern_fn! {
            concat!("`void (void *dest, const void *source, size_t nelems, int pe)`: ", $bits,
                "-bit elements, ", $scope, " scope.");
            fn [<$pre _get $bits $sfx>](dest: *mut c_void, source: *const c_void, nelems: usize, pe: c_int)
        }
        extern_fn! {
            concat!("`void (void *dest, const void *source, size_t nelems, int pe)`: ", $bits,
                "-bit elements, ", $scope, " scope.");
            fn [<$pre _get $bits _nbi $sfx>](
                dest: *mut c_void, source: *const c_void, nelems: usize, pe: c_int)
        }
        extern_fn! {
            concat!("`void (void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe)`: ",
                $bits, "-bit elements, ", $scope, " scope.");
            fn [<$pre _iput $bits $sfx>](
                dest: *mut c_void, source: *const c_void, dst: isize, sst: isize, nelems: usize, pe: c_int)
        }
        extern_fn! {
            concat!("`void (void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe)`: ",
                $bits, "-bit elements, ", $scope, " scope.");
            fn [<$pre _iget $bits $sfx>](
                dest: *mut c_void, source: *const c_void, dst: isize, sst: isize, nelems: usize, pe: c_int)
        }
    } };
    (@signal $pre:ident, $sfx:literal, $scope:literal, $bits:literal) => { pastey::paste! {
        extern_fn! {
            concat!("`void (void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, ",
                "int sig_op, int pe)`: ", $bits, "-bit elements, ", $scope, " scope.");
            fn [<$pre _put $bits _signal $sfx>](dest: *mut c_void, source: *const c_void, nelems: usize,
                sig_addr: *mut u64, signal: u64, sig_op: c_int, pe: c_int)
        }
        extern_fn! {
            concat!("`void (void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, ",
                "int sig_op, int pe)`: ", $bits, "-bit elements, ", $scope, " scope.");
            fn [<$pre _put $bits _signal_nbi $sfx>](dest: *mut c_void, source: *const c_void,
                nelems: usize, sig_addr: *mut u64, signal: u64, sig_op: c_int, pe: c_int)
        }
    } };
}

standard_rma_types!(each! decl_p_g!);
scopes2!(standard_rma_types! each! decl_rma_scoped!);
scopes2!(decl_mem!);
scopes2!(sizes! each! decl_sized!);
