//! Teams and collectives: team queries, team barriers and syncs, `broadcast`,
//! `fcollect`, `alltoall` (typed and byte-wise), `reduce` and `reducescatter`.
//!
//! NVSHMEM's `nvshmem_team_t` is an `int32_t` handle ([`Team`](crate::Team) on
//! the typed side). Every collective returns an `int` that NVSHMEM's device
//! code always sets to 0.

use super::lists::{bitwise_reduce_types, standard_reduce_types, standard_rma_types};
use core::ffi::{c_int, c_void};

/// `nvshmem_team_t`.
#[allow(non_camel_case_types)]
pub type nvshmem_team_t = i32;

extern_fn! {
    "`int (nvshmem_team_t team)`: this PE's number in `team`, or -1. Typed: [`crate::team_my_pe`].";
    fn nvshmem_team_my_pe(team: nvshmem_team_t) -> c_int
}
extern_fn! {
    "`int (nvshmem_team_t team)`. Typed: [`crate::team_n_pes`].";
    fn nvshmem_team_n_pes(team: nvshmem_team_t) -> c_int
}
extern_fn! {
    "`int (nvshmem_team_t src_team, int src_pe, nvshmem_team_t dest_team)`. Typed: [`crate::team_translate_pe`].";
    fn nvshmem_team_translate_pe(src_team: nvshmem_team_t, src_pe: c_int, dest_team: nvshmem_team_t) -> c_int
}

extern_fn! { "`int (nvshmem_team_t team)`. Typed: [`crate::barrier`]."; fn nvshmem_barrier(team: nvshmem_team_t) -> c_int }
extern_fn! { "`int (nvshmem_team_t team)`. Typed: [`crate::barrier_warp`]."; fn nvshmemx_barrier_warp(team: nvshmem_team_t) -> c_int }
extern_fn! { "`int (nvshmem_team_t team)`. Typed: [`crate::barrier_block`]."; fn nvshmemx_barrier_block(team: nvshmem_team_t) -> c_int }
extern_fn! {
    "`int (nvshmem_team_t team)`. Typed: [`crate::barrier_warpgroup`].";
    fn nvshmemx_barrier_warpgroup(team: nvshmem_team_t) -> c_int
}
extern_fn! { "`int (nvshmem_team_t team)`. Typed: [`sync`](fn@crate::sync)."; fn nvshmem_team_sync(team: nvshmem_team_t) -> c_int }
extern_fn! { "`int (nvshmem_team_t team)`. Typed: [`crate::sync_warp`]."; fn nvshmemx_team_sync_warp(team: nvshmem_team_t) -> c_int }
extern_fn! { "`int (nvshmem_team_t team)`. Typed: [`crate::sync_block`]."; fn nvshmemx_team_sync_block(team: nvshmem_team_t) -> c_int }

// The typed data collectives over NVSHMEMI_REPT_FOR_STANDARD_RMA_TYPES, in
// every scope (nvshmem_TYPE_broadcast, nvshmemx_TYPE_broadcast_warp, ...).
macro_rules! decl_coll_typed {
    ($pre:ident, $sfx:literal, $scope:literal, $n:ident, $c:literal, $t:ty) => { pastey::paste! {
        extern_fn! {
            concat!("`int (nvshmem_team_t team, ", $c, " *dest, const ", $c,
                " *source, size_t nelems, int PE_root)`, ", $scope, " scope. Typed: [`crate::broadcast`].");
            fn [<$pre _ $n _broadcast $sfx>](
                team: nvshmem_team_t, dest: *mut $t, source: *const $t, nelems: usize, pe_root: c_int) -> c_int
        }
        extern_fn! {
            concat!("`int (nvshmem_team_t team, ", $c, " *dest, const ", $c,
                " *source, size_t nelems)`, ", $scope, " scope. Typed: [`crate::fcollect`].");
            fn [<$pre _ $n _fcollect $sfx>](
                team: nvshmem_team_t, dest: *mut $t, source: *const $t, nelems: usize) -> c_int
        }
        extern_fn! {
            concat!("`int (nvshmem_team_t team, ", $c, " *dest, const ", $c,
                " *source, size_t nelems)`, ", $scope, " scope. Typed: [`crate::alltoall`].");
            fn [<$pre _ $n _alltoall $sfx>](
                team: nvshmem_team_t, dest: *mut $t, source: *const $t, nelems: usize) -> c_int
        }
    } };
}

// `scopes2!` appends the scope: put it first for `decl_coll_typed!`.
macro_rules! decl_coll_typed_reorder {
    ($n:ident, $c:literal, $t:ty, $pre:ident, $sfx:literal, $scope:literal,) => {
        decl_coll_typed! { $pre, $sfx, $scope, $n, $c, $t }
    };
}

macro_rules! decl_coll_typed_all {
    ($n:ident, $c:literal, $t:ty) => {
        scopes2! { decl_coll_typed_reorder! $n, $c, $t, }
    };
}

standard_rma_types!(each! decl_coll_typed_all!);

// Byte-wise: broadcastmem, fcollectmem, alltoallmem (`nelems` in bytes).
macro_rules! decl_coll_mem {
    ($pre:ident, $sfx:literal, $scope:literal,) => { pastey::paste! {
        extern_fn! {
            concat!("`int (nvshmem_team_t team, void *dest, const void *source, size_t nelems, int PE_root)`, ",
                $scope, " scope (`nelems` bytes). Typed: [`crate::broadcast_pod`].");
            fn [<$pre _broadcastmem $sfx>](
                team: nvshmem_team_t, dest: *mut c_void, source: *const c_void, nelems: usize, pe_root: c_int) -> c_int
        }
        extern_fn! {
            concat!("`int (nvshmem_team_t team, void *dest, const void *source, size_t nelems)`, ",
                $scope, " scope (`nelems` bytes). Typed: [`crate::fcollect_pod`].");
            fn [<$pre _fcollectmem $sfx>](
                team: nvshmem_team_t, dest: *mut c_void, source: *const c_void, nelems: usize) -> c_int
        }
        extern_fn! {
            concat!("`int (nvshmem_team_t team, void *dest, const void *source, size_t nelems)`, ",
                $scope, " scope (`nelems` bytes). Typed: [`crate::alltoall_pod`].");
            fn [<$pre _alltoallmem $sfx>](
                team: nvshmem_team_t, dest: *mut c_void, source: *const c_void, nelems: usize) -> c_int
        }
    } };
}

scopes2!(decl_coll_mem!);

// DEFN_NVSHMEM_TYPENAME_OP_REDUCE / _REDUCESCATTER and their threadgroup
// forms: `<prefix>_<type>_<op>_reduce<scope suffix>`.
macro_rules! decl_reduce {
    ($op:ident, $n:ident, $c:literal, $t:ty, $pre:ident, $sfx:literal, $scope:literal,) => { pastey::paste! {
        extern_fn! {
            concat!("`int (nvshmem_team_t team, ", $c, " *dest, const ", $c,
                " *source, size_t nreduce)`, ", $scope, " scope. Typed: [`crate::reduce`].");
            fn [<$pre _ $n _ $op _reduce $sfx>](
                team: nvshmem_team_t, dest: *mut $t, source: *const $t, nreduce: usize) -> c_int
        }
        extern_fn! {
            concat!("`int (nvshmem_team_t team, ", $c, " *dest, const ", $c,
                " *source, size_t nreduce)`, ", $scope, " scope. Typed: [`crate::reducescatter`].");
            fn [<$pre _ $n _ $op _reducescatter $sfx>](
                team: nvshmem_team_t, dest: *mut $t, source: *const $t, nreduce: usize) -> c_int
        }
    } };
}

macro_rules! decl_reduce_all {
    ($op:ident, $n:ident, $c:literal, $t:ty) => {
        scopes2! { decl_reduce! $op, $n, $c, $t, }
    };
}

extern_fn! {
    "`int (nvshmem_team_t team, double2 *dest, const double2 *src, size_t nreduce)`, block scope: \
     the max-loc reduction of `(value, index)` pairs (the one reduction outside the type lists). \
     Typed: [`crate::maxloc_reduce_block`].";
    fn nvshmemx_double2_maxloc_reduce_block(
        team: nvshmem_team_t, dest: *mut [f64; 2], src: *const [f64; 2], nreduce: usize) -> c_int
}

// NVSHMEMI_REPT_FOR_{BITWISE,STANDARD,ARITH}_REDUCE_TYPES with their ops.
bitwise_reduce_types!(each! decl_reduce_all! and,);
bitwise_reduce_types!(each! decl_reduce_all! or,);
bitwise_reduce_types!(each! decl_reduce_all! xor,);
standard_reduce_types!(each! decl_reduce_all! min,);
standard_reduce_types!(each! decl_reduce_all! max,);
standard_reduce_types!(each! decl_reduce_all! sum,);
standard_reduce_types!(each! decl_reduce_all! prod,);
