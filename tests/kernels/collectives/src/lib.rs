//! Kernels for the GPU tests in `tests/collectives.rs`: each runs one
//! collective over the team it is given, in the scope `scope` selects
//! (0: thread 0 only, 1: warp 0, 2: the whole block), on a block of 64
//! threads; the host checks every element against a CPU reference.
#![no_std]
#![allow(clippy::missing_safety_doc)]

use nvshmem_device::thread::thread_idx_x;
use nvshmem_device::*;

nvshmem_device::panic_handler!();

/// Runs the thread, warp or block form, by the threads that form takes.
macro_rules! by_scope {
    ($scope:expr, $thread:expr, $warp:expr, $block:expr) => {
        match $scope {
            0 if thread_idx_x() == 0 => $thread,
            1 if thread_idx_x() < 32 => $warp,
            0 | 1 => {}
            _ => $block,
        }
    };
}

/// `out`: [team_my_pe or -1, team_n_pes, world PE of team PE 0, my team PE by translation].
#[nvshmem_device::kernel]
pub unsafe fn team_info(team: Team, out: *mut i32) {
    if thread_idx_x() == 0 {
        let pe = |p: Option<Pe>| p.map_or(-1, |p| p.to_c());
        unsafe {
            *out = pe(team_my_pe(team));
            *out.add(1) = team_n_pes(team) as i32;
            *out.add(2) = pe(team_translate_pe(team, Pe::new(0), Team::WORLD));
            *out.add(3) = pe(team_translate_pe(Team::WORLD, my_pe(), team));
        }
    }
}

/// `rounds` times: every member adds 1 to the counter on the team's PE 0,
/// then the barrier or sync picked by `mode` (0-2: barrier thread/warp/block,
/// 3-5: sync thread/warp/block, 6: warpgroup barrier), then thread 0 reads the
/// counter into `out[round]`, then a second one so nobody adds before all have read.
#[nvshmem_device::kernel]
pub unsafe fn team_barrier_count(
    team: Team,
    counter: SymPtr<u64>,
    out: *mut u64,
    rounds: u32,
    mode: u32,
) {
    let Some(root) = team_translate_pe(team, Pe::new(0), Team::WORLD) else {
        return;
    };
    // SAFETY (warp, warpgroup and block scope): `mode` is the same for the
    // whole block, and the warp/warpgroup forms run on whole warps.
    let wait = || unsafe {
        match mode {
            0 => by_scope!(0, barrier(team), (), ()),
            1 => by_scope!(1, (), barrier_warp(team), ()),
            2 => barrier_block(team),
            3 => by_scope!(0, sync(team), (), ()),
            4 => by_scope!(1, (), sync_warp(team), ()),
            5 => sync_block(team),
            _ => {
                if thread_idx_x() < 128 {
                    barrier_warpgroup(team)
                }
            }
        }
    };
    for r in 0..rounds as usize {
        if thread_idx_x() == 0 {
            unsafe { atomic_add(counter, 1, root) };
            // `sync` does not complete the add: `quiet` does.
            quiet();
        }
        nvshmem_device::thread::sync_threads();
        wait();
        nvshmem_device::thread::sync_threads();
        if thread_idx_x() == 0 {
            unsafe { *out.add(r) = atomic_fetch(counter, root) };
        }
        nvshmem_device::thread::sync_threads();
        wait();
        nvshmem_device::thread::sync_threads();
    }
}

macro_rules! data_kernels {
    ($($t:ty => $bc:ident, $fc:ident, $aa:ident;)*) => {$(
        #[nvshmem_device::kernel]
        pub unsafe fn $bc(team: Team, dest: SymPtr<$t>, src: SymPtr<$t>, n: u64, root: u32, scope: u32) {
            let (n, root) = (n as usize, Pe::new(root));
            unsafe { by_scope!(scope, broadcast(team, dest, src, n, root), broadcast_warp(team, dest, src, n, root),
                broadcast_block(team, dest, src, n, root)) }
        }
        #[nvshmem_device::kernel]
        pub unsafe fn $fc(team: Team, dest: SymPtr<$t>, src: SymPtr<$t>, n: u64, scope: u32) {
            let n = n as usize;
            unsafe { by_scope!(scope, fcollect(team, dest, src, n), fcollect_warp(team, dest, src, n),
                fcollect_block(team, dest, src, n)) }
        }
        #[nvshmem_device::kernel]
        pub unsafe fn $aa(team: Team, dest: SymPtr<$t>, src: SymPtr<$t>, n: u64, scope: u32) {
            let n = n as usize;
            unsafe { by_scope!(scope, alltoall(team, dest, src, n), alltoall_warp(team, dest, src, n),
                alltoall_block(team, dest, src, n)) }
        }
    )*};
}

data_kernels! {
    i32 => broadcast_i32, fcollect_i32, alltoall_i32;
    f64 => broadcast_f64, fcollect_f64, alltoall_f64;
    u8 => broadcast_u8, fcollect_u8, alltoall_u8;
}

/// The byte-wise forms over a 3-byte struct-like element.
#[nvshmem_device::kernel]
pub unsafe fn pods_u8x3(
    team: Team,
    dest: SymPtr<[u8; 3]>,
    src: SymPtr<[u8; 3]>,
    n: u64,
    which: u32,
    scope: u32,
) {
    let n = n as usize;
    unsafe {
        match which {
            0 => by_scope!(
                scope,
                broadcast_pod(team, dest, src, n, Pe::new(0)),
                broadcast_pod_warp(team, dest, src, n, Pe::new(0)),
                broadcast_pod_block(team, dest, src, n, Pe::new(0))
            ),
            1 => by_scope!(
                scope,
                fcollect_pod(team, dest, src, n),
                fcollect_pod_warp(team, dest, src, n),
                fcollect_pod_block(team, dest, src, n)
            ),
            _ => by_scope!(
                scope,
                alltoall_pod(team, dest, src, n),
                alltoall_pod_warp(team, dest, src, n),
                alltoall_pod_block(team, dest, src, n)
            ),
        }
    }
}

macro_rules! reduce_kernels {
    ($($t:ty, $op:ident => $r:ident, $rs:ident;)*) => {$(
        #[nvshmem_device::kernel]
        pub unsafe fn $r(team: Team, dest: SymPtr<$t>, src: SymPtr<$t>, n: u64, scope: u32) {
            let n = n as usize;
            unsafe { by_scope!(scope, reduce($op, team, dest, src, n), reduce_warp($op, team, dest, src, n),
                reduce_block($op, team, dest, src, n)) }
        }
        #[nvshmem_device::kernel]
        pub unsafe fn $rs(team: Team, dest: SymPtr<$t>, src: SymPtr<$t>, n: u64, scope: u32) {
            let n = n as usize;
            unsafe { by_scope!(scope, reducescatter($op, team, dest, src, n),
                reducescatter_warp($op, team, dest, src, n), reducescatter_block($op, team, dest, src, n)) }
        }
    )*};
}

reduce_kernels! {
    i32, And => reduce_and_i32, reducescatter_and_i32;
    i32, Or => reduce_or_i32, reducescatter_or_i32;
    i32, Xor => reduce_xor_i32, reducescatter_xor_i32;
    i32, Min => reduce_min_i32, reducescatter_min_i32;
    i32, Max => reduce_max_i32, reducescatter_max_i32;
    i32, Sum => reduce_sum_i32, reducescatter_sum_i32;
    i32, Prod => reduce_prod_i32, reducescatter_prod_i32;
    u64, Xor => reduce_xor_u64, reducescatter_xor_u64;
    u64, Sum => reduce_sum_u64, reducescatter_sum_u64;
    u8, Or => reduce_or_u8, reducescatter_or_u8;
    f32, Sum => reduce_sum_f32, reducescatter_sum_f32;
    f32, Prod => reduce_prod_f32, reducescatter_prod_f32;
    f32, Min => reduce_min_f32, reducescatter_min_f32;
    f32, Max => reduce_max_f32, reducescatter_max_f32;
    f64, Sum => reduce_sum_f64, reducescatter_sum_f64;
    f64, Min => reduce_min_f64, reducescatter_min_f64;
}
