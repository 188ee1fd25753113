//! Coverage kernels for the teams and collectives of `nvshmem-device`:
//! together they call every public function of that part (every scope, every
//! element type of `broadcast`/`fcollect`/`alltoall`, every (op, type) pair of
//! `reduce`/`reducescatter`, the `_pod` forms, barriers, syncs, team queries).
//!
//! Built by the builder tests, which check that ptxas accepts the result and
//! that no unresolved `.extern .func` remains. Never launched.
#![no_std]
// Never launched: the kernels have no contract to document.
#![allow(clippy::missing_safety_doc)]

use nvshmem_device::half::{bf16, f16};
use nvshmem_device::*;

nvshmem_device::panic_handler!();

include!("../../every_scope.rs");

/// broadcast, fcollect and alltoall in every scope: the typed forms, or
/// with `pod` the byte-wise ones (`broadcast_pod`, ...).
macro_rules! collect_calls {
    ($team:ident, $d:ident, $s:ident, $n:ident $(, $pod:ident)?) => { pastey::paste! {
        every_scope! {
            [<broadcast $(_ $pod)?>]($team, $d, $s, $n, Pe::new(0));
            [<fcollect $(_ $pod)?>]($team, $d, $s, $n);
            [<alltoall $(_ $pod)?>]($team, $d, $s, $n);
        }
    } };
}

/// broadcast, fcollect, alltoall in every scope for one element type.
#[inline(always)]
unsafe fn collect_all<T: CollectElement>(team: Team, d: SymPtr<T>, s: SymPtr<T>, n: usize) {
    unsafe {
        collect_calls!(team, d, s, n);
    }
}

/// reduce and reducescatter with `op` in every scope.
#[inline(always)]
unsafe fn reduce_all<T: ReduceElement, O: ReduceOp<T>>(
    op: O,
    team: Team,
    d: SymPtr<T>,
    s: SymPtr<T>,
    n: usize,
) {
    unsafe {
        every_scope! {
            reduce(op, team, d, s, n);
            reducescatter(op, team, d, s, n);
        }
    }
}

// One kernel per element type: its collectives and every reduction NVSHMEM
// has for it (the bitwise ops only for the integer types).
macro_rules! kernels {
    ($($t:ty => $name:ident [$($op:ident),*];)*) => {$(
        #[kernel]
        pub unsafe fn $name(team: Team, d: SymPtr<$t>, s: SymPtr<$t>, n: usize) {
            unsafe {
                collect_all::<$t>(team, d, s, n);
                $( reduce_all($op, team, d, s, n); )*
            }
        }
    )*};
}

kernels! {
    i8 => coll_i8 [And, Or, Xor, Min, Max, Sum, Prod];
    i16 => coll_i16 [And, Or, Xor, Min, Max, Sum, Prod];
    i32 => coll_i32 [And, Or, Xor, Min, Max, Sum, Prod];
    i64 => coll_i64 [And, Or, Xor, Min, Max, Sum, Prod];
    u8 => coll_u8 [And, Or, Xor, Min, Max, Sum, Prod];
    u16 => coll_u16 [And, Or, Xor, Min, Max, Sum, Prod];
    u32 => coll_u32 [And, Or, Xor, Min, Max, Sum, Prod];
    u64 => coll_u64 [And, Or, Xor, Min, Max, Sum, Prod];
    usize => coll_usize [And, Or, Xor, Min, Max, Sum, Prod];
    isize => coll_isize [];
    f32 => coll_f32 [Min, Max, Sum, Prod];
    f64 => coll_f64 [Min, Max, Sum, Prod];
    f16 => coll_f16 [Min, Max, Sum, Prod];
    bf16 => coll_bf16 [Min, Max, Sum, Prod];
}

/// The byte-wise collectives, every scope.
#[kernel]
pub unsafe fn coll_pod(team: Team, d: SymPtr<[u16; 3]>, s: SymPtr<[u16; 3]>, n: usize) {
    unsafe {
        collect_calls!(team, d, s, n, pod);
    }
}

/// The max-loc reduction of `(value, index)` pairs (block scope only).
#[kernel]
pub unsafe fn maxloc(team: Team, d: SymPtr<[f64; 2]>, s: SymPtr<[f64; 2]>, n: usize) {
    unsafe { maxloc_reduce_block(team, d, s, n) };
}

/// Team queries, barriers and syncs, every scope.
#[kernel]
pub unsafe fn teams(team: Team, out: *mut i32) {
    let me = team_my_pe(team).map_or(-1, |p| p.to_c());
    let root = team_translate_pe(team, Pe::new(0), Team::WORLD).map_or(-1, |p| p.to_c());
    unsafe { *out = me + root + team_n_pes(team) as i32 };
    barrier(team);
    sync(team);
    // SAFETY: every thread of the block calls them.
    unsafe {
        barrier_warp(team);
        barrier_block(team);
        barrier_warpgroup(team);
        sync_warp(team);
        sync_block(team);
    }
    let _ = (Team::SHARED, Team::NODE, Team::SAME_MYPE_NODE);
}
