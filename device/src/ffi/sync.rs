//! Point-to-point synchronization (`wait_until*`, `test*`, signals), memory
//! ordering, PE queries and the whole-job barriers.

use super::lists::wait_types;
use core::ffi::{c_int, c_void};

// NVSHMEM_TEST*, NVSHMEM_WAIT_UNTIL* over NVSHMEMI_REPT_FOR_WAIT_TYPES.
macro_rules! decl_wait {
    ($n:ident, $c:literal, $t:ty) => { pastey::paste! {
        extern_fn! {
            concat!("`int (", $c, " *ivar, int cmp, ", $c, " cmp_value)`. Typed: [`crate::test`](fn@crate::test).");
            fn [<nvshmem_ $n _test>](ivar: *mut $t, cmp: c_int, cmp_value: $t) -> c_int
        }
        extern_fn! {
            concat!("`int (", $c, " *ivars, size_t nelems, const int *status, int cmp, ", $c,
                " cmp_value)`. Typed: [`crate::test_all`].");
            fn [<nvshmem_ $n _test_all>](
                ivars: *mut $t, nelems: usize, status: *const c_int, cmp: c_int, cmp_value: $t) -> c_int
        }
        extern_fn! {
            concat!("`size_t (", $c, " *ivars, size_t nelems, const int *status, int cmp, ", $c,
                " cmp_value)`. Typed: [`crate::test_any`].");
            fn [<nvshmem_ $n _test_any>](
                ivars: *mut $t, nelems: usize, status: *const c_int, cmp: c_int, cmp_value: $t) -> usize
        }
        extern_fn! {
            concat!("`size_t (", $c, " *ivars, size_t nelems, size_t *indices, const int *status, int cmp, ", $c,
                " cmp_value)`. Typed: [`crate::test_some`].");
            fn [<nvshmem_ $n _test_some>](ivars: *mut $t, nelems: usize, indices: *mut usize,
                status: *const c_int, cmp: c_int, cmp_value: $t) -> usize
        }
        extern_fn! {
            concat!("`int (", $c, " *ivars, size_t nelems, const int *status, int cmp, ", $c,
                " *cmp_values)`. Typed: [`crate::test_all_vector`].");
            fn [<nvshmem_ $n _test_all_vector>](
                ivars: *mut $t, nelems: usize, status: *const c_int, cmp: c_int, cmp_values: *const $t) -> c_int
        }
        extern_fn! {
            concat!("`size_t (", $c, " *ivars, size_t nelems, const int *status, int cmp, ", $c,
                " *cmp_values)`. Typed: [`crate::test_any_vector`].");
            fn [<nvshmem_ $n _test_any_vector>](
                ivars: *mut $t, nelems: usize, status: *const c_int, cmp: c_int, cmp_values: *const $t) -> usize
        }
        extern_fn! {
            concat!("`size_t (", $c, " *ivars, size_t nelems, size_t *indices, const int *status, int cmp, ", $c,
                " *cmp_values)`. Typed: [`crate::test_some_vector`].");
            fn [<nvshmem_ $n _test_some_vector>](ivars: *mut $t, nelems: usize, indices: *mut usize,
                status: *const c_int, cmp: c_int, cmp_values: *const $t) -> usize
        }
        extern_fn! {
            concat!("`void (", $c, " *ivar, int cmp, ", $c, " cmp_value)`. Typed: [`crate::wait_until`].");
            fn [<nvshmem_ $n _wait_until>](ivar: *mut $t, cmp: c_int, cmp_value: $t)
        }
        extern_fn! {
            concat!("`void (", $c, " *ivars, size_t nelems, const int *status, int cmp, ", $c,
                " cmp_value)`. Typed: [`crate::wait_until_all`].");
            fn [<nvshmem_ $n _wait_until_all>](
                ivars: *mut $t, nelems: usize, status: *const c_int, cmp: c_int, cmp_value: $t)
        }
        extern_fn! {
            concat!("`size_t (", $c, " *ivars, size_t nelems, const int *status, int cmp, ", $c,
                " cmp_value)`. Typed: [`crate::wait_until_any`].");
            fn [<nvshmem_ $n _wait_until_any>](
                ivars: *mut $t, nelems: usize, status: *const c_int, cmp: c_int, cmp_value: $t) -> usize
        }
        extern_fn! {
            concat!("`size_t (", $c, " *ivars, size_t nelems, size_t *indices, const int *status, int cmp, ", $c,
                " cmp_value)`. Typed: [`crate::wait_until_some`].");
            fn [<nvshmem_ $n _wait_until_some>](ivars: *mut $t, nelems: usize, indices: *mut usize,
                status: *const c_int, cmp: c_int, cmp_value: $t) -> usize
        }
        extern_fn! {
            concat!("`void (", $c, " *ivars, size_t nelems, const int *status, int cmp, ", $c,
                " *cmp_values)`. Typed: [`crate::wait_until_all_vector`].");
            fn [<nvshmem_ $n _wait_until_all_vector>](
                ivars: *mut $t, nelems: usize, status: *const c_int, cmp: c_int, cmp_values: *const $t)
        }
        extern_fn! {
            concat!("`size_t (", $c, " *ivars, size_t nelems, const int *status, int cmp, ", $c,
                " *cmp_values)`. Typed: [`crate::wait_until_any_vector`].");
            fn [<nvshmem_ $n _wait_until_any_vector>](
                ivars: *mut $t, nelems: usize, status: *const c_int, cmp: c_int, cmp_values: *const $t) -> usize
        }
        extern_fn! {
            concat!("`size_t (", $c, " *ivars, size_t nelems, size_t *indices, const int *status, int cmp, ", $c,
                " *cmp_values)`. Typed: [`crate::wait_until_some_vector`].");
            fn [<nvshmem_ $n _wait_until_some_vector>](ivars: *mut $t, nelems: usize,
                indices: *mut usize, status: *const c_int, cmp: c_int, cmp_values: *const $t) -> usize
        }
    } };
}

wait_types!(each! decl_wait!);

extern_fn! {
    "`uint64_t (uint64_t *sig_addr)`. Typed: [`crate::signal_fetch`].";
    fn nvshmem_signal_fetch(sig_addr: *mut u64) -> u64
}
extern_fn! {
    "`uint64_t (uint64_t *sig_addr, int cmp, uint64_t cmp_val)`. Typed: [`crate::signal_wait_until`].";
    fn nvshmem_signal_wait_until(sig_addr: *mut u64, cmp: c_int, cmp_val: u64) -> u64
}
extern_fn! {
    "`void (uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)`. Typed: [`crate::signal_op`].";
    fn nvshmemx_signal_op(sig_addr: *mut u64, signal: u64, sig_op: c_int, pe: c_int)
}

extern_fn! { "`void (void)`. Typed: [`crate::quiet`]."; fn nvshmem_quiet() }
extern_fn! { "`void (void)`. Typed: [`crate::fence`]."; fn nvshmem_fence() }
#[cfg(feature = "nvshmem-3-8")]
extern_fn! { "`void (void)` (NVSHMEM 3.8+). Typed: [`crate::flush`]."; fn nvshmemx_flush() }
#[cfg(feature = "nvshmem-3-8")]
extern_fn! { "`void (void)` (NVSHMEM 3.8+). Typed: [`crate::flush_warp`]."; fn nvshmemx_flush_warp() }
#[cfg(feature = "nvshmem-3-8")]
extern_fn! { "`void (void)` (NVSHMEM 3.8+). Typed: [`crate::flush_block`]."; fn nvshmemx_flush_block() }

extern_fn! { "`int (void)`. Typed: [`crate::my_pe`]."; fn nvshmem_my_pe() -> c_int }
extern_fn! { "`int (void)`. Typed: [`crate::n_pes`]."; fn nvshmem_n_pes() -> c_int }
extern_fn! {
    "`void *(const void *ptr, int pe)`. Typed: [`crate::ptr`].";
    fn nvshmem_ptr(ptr: *const c_void, pe: c_int) -> *mut c_void
}

extern_fn! { "`void (void)`. Typed: [`crate::barrier_all`]."; fn nvshmem_barrier_all() }
extern_fn! { "`void (void)`. Typed: [`crate::barrier_all_warp`]."; fn nvshmemx_barrier_all_warp() }
extern_fn! { "`void (void)`. Typed: [`crate::barrier_all_block`]."; fn nvshmemx_barrier_all_block() }
extern_fn! { "`void (void)`. Typed: [`crate::sync_all`]."; fn nvshmem_sync_all() }
extern_fn! { "`void (void)`. Typed: [`crate::sync_all_warp`]."; fn nvshmemx_sync_all_warp() }
extern_fn! { "`void (void)`. Typed: [`crate::sync_all_block`]."; fn nvshmemx_sync_all_block() }
