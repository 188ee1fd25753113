//! Point-to-point synchronization (`wait_until*`, `test*`, signals), memory
//! ordering, PE queries and the whole-job barriers.

use super::lists::wait_types;
use core::ffi::{c_int, c_void};

// The `test` and `wait_until` form of one variant (`$sfx`: `_all`, ...):
// the same parameters; `test` returns `$tr`, `wait_until` `$wr` or nothing.
macro_rules! decl_test_wait {
    (
        $n:ident, $t:ty; $($sfx:ident)?: test -> $tr:ty [$trc:literal], wait_until $(-> $wr:ty)? [$wrc:literal];
        c ($($cp:expr),*); rust ($($arg:ident: $ty:ty),*)
    ) => { pastey::paste! {
        extern_fn! {
            concat!("`", $trc, " (", $($cp,)* ")`. Typed: [`crate::test", $(stringify!($sfx),)?
                "`](fn@crate::test", $(stringify!($sfx),)? ").");
            fn [<nvshmem_ $n _test $($sfx)?>]($($arg: $ty),*) -> $tr
        }
        extern_fn! {
            concat!("`", $wrc, " (", $($cp,)* ")`. Typed: [`crate::wait_until", $(stringify!($sfx),)?
                "`](fn@crate::wait_until", $(stringify!($sfx),)? ").");
            fn [<nvshmem_ $n _wait_until $($sfx)?>]($($arg: $ty),*) $(-> $wr)?
        }
    } };
}

// NVSHMEM_TEST*, NVSHMEM_WAIT_UNTIL* over NVSHMEMI_REPT_FOR_WAIT_TYPES.
macro_rules! decl_wait {
    ($n:ident, $c:literal, $t:ty) => {
        decl_test_wait! { $n, $t; : test -> c_int ["int"], wait_until ["void"];
            c ($c, " *ivar, int cmp, ", $c, " cmp_value"); rust (ivar: *mut $t, cmp: c_int, cmp_value: $t) }
        decl_test_wait! { $n, $t; _all: test -> c_int ["int"], wait_until ["void"];
            c ($c, " *ivars, size_t nelems, const int *status, int cmp, ", $c, " cmp_value");
            rust (ivars: *mut $t, nelems: usize, status: *const c_int, cmp: c_int, cmp_value: $t) }
        decl_test_wait! { $n, $t; _any: test -> usize ["size_t"], wait_until -> usize ["size_t"];
            c ($c, " *ivars, size_t nelems, const int *status, int cmp, ", $c, " cmp_value");
            rust (ivars: *mut $t, nelems: usize, status: *const c_int, cmp: c_int, cmp_value: $t) }
        decl_test_wait! { $n, $t; _some: test -> usize ["size_t"], wait_until -> usize ["size_t"];
            c ($c, " *ivars, size_t nelems, size_t *indices, const int *status, int cmp, ", $c, " cmp_value");
            rust (ivars: *mut $t, nelems: usize, indices: *mut usize, status: *const c_int, cmp: c_int,
                cmp_value: $t) }
        decl_test_wait! { $n, $t; _all_vector: test -> c_int ["int"], wait_until ["void"];
            c ($c, " *ivars, size_t nelems, const int *status, int cmp, ", $c, " *cmp_values");
            rust (ivars: *mut $t, nelems: usize, status: *const c_int, cmp: c_int, cmp_values: *const $t) }
        decl_test_wait! { $n, $t; _any_vector: test -> usize ["size_t"], wait_until -> usize ["size_t"];
            c ($c, " *ivars, size_t nelems, const int *status, int cmp, ", $c, " *cmp_values");
            rust (ivars: *mut $t, nelems: usize, status: *const c_int, cmp: c_int, cmp_values: *const $t) }
        decl_test_wait! { $n, $t; _some_vector: test -> usize ["size_t"], wait_until -> usize ["size_t"];
            c ($c, " *ivars, size_t nelems, size_t *indices, const int *status, int cmp, ", $c, " *cmp_values");
            rust (ivars: *mut $t, nelems: usize, indices: *mut usize, status: *const c_int, cmp: c_int,
                cmp_values: *const $t) }
    };
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

#[cfg(any(doc, feature = "nvshmem-3-8"))]
extern_fn! {
    "`void (uint64_t *signal_addr)` (NVSHMEM 3.8+): sets this PE's signal word to 0. \
     Typed: [`crate::signal_counted_reset`].";
    fn nvshmemx_signal_counted_reset(signal_addr: *mut u64)
}

extern_fn! { "`void (void)`. Typed: [`crate::quiet`]."; fn nvshmem_quiet() }
extern_fn! { "`void (void)`. Typed: [`crate::fence`]."; fn nvshmem_fence() }
#[cfg(any(doc, feature = "nvshmem-3-7"))]
extern_fn! { "`void (void)` (NVSHMEM 3.7+). Typed: [`crate::flush`]."; fn nvshmemx_flush() }
#[cfg(any(doc, feature = "nvshmem-3-7"))]
extern_fn! { "`void (void)` (NVSHMEM 3.7+). Typed: [`crate::flush_warp`]."; fn nvshmemx_flush_warp() }
#[cfg(any(doc, feature = "nvshmem-3-7"))]
extern_fn! { "`void (void)` (NVSHMEM 3.7+). Typed: [`crate::flush_block`]."; fn nvshmemx_flush_block() }

extern_fn! { "`int (void)`. Typed: [`crate::my_pe`]."; fn nvshmem_my_pe() -> c_int }
extern_fn! { "`int (void)`. Typed: [`crate::n_pes`]."; fn nvshmem_n_pes() -> c_int }
extern_fn! {
    "`void *(const void *ptr, int pe)`. Typed: [`crate::ptr`].";
    fn nvshmem_ptr(ptr: *const c_void, pe: c_int) -> *mut c_void
}

extern_fn! {
    "`void *(nvshmem_team_t team, const void *ptr)`: the NVLS multicast address of `ptr` for `team`, \
     or null. Typed: [`crate::mc_ptr`].";
    fn nvshmemx_mc_ptr(team: super::nvshmem_team_t, ptr: *const c_void) -> *mut c_void
}

extern_fn! { "`void (void)`. Typed: [`crate::barrier_all`]."; fn nvshmem_barrier_all() }
extern_fn! { "`void (void)`. Typed: [`crate::barrier_all_warp`]."; fn nvshmemx_barrier_all_warp() }
extern_fn! { "`void (void)`. Typed: [`crate::barrier_all_block`]."; fn nvshmemx_barrier_all_block() }
extern_fn! { "`void (void)`. Typed: [`crate::sync_all`]."; fn nvshmem_sync_all() }
extern_fn! { "`void (void)`. Typed: [`crate::sync_all_warp`]."; fn nvshmemx_sync_all_warp() }
extern_fn! { "`void (void)`. Typed: [`crate::sync_all_block`]."; fn nvshmemx_sync_all_block() }
