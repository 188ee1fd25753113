//! Kernels for the GPU tests in `tests/gpu.rs`: each exercises one family of
//! the device API across PEs, and the host checks every value it writes.
#![no_std]
// Each kernel's contract is kept by its one caller (tests/gpu.rs).
#![allow(clippy::missing_safety_doc)]

use nvshmem_device::thread::{
    WARP_SIZE, block_dim_x, block_idx_x, clock64, global_index_x, lane_id, sync_threads,
    thread_idx_x, warp_id,
};
use nvshmem_device::*;

nvshmem_device::panic_handler!();

/// The value PE `pe` writes at index `i` in round `round`: never zero, distinct per PE.
#[inline(always)]
fn pattern(pe: Pe, i: usize, round: u64) -> u64 {
    (pe.index() as u64 + 1) * 1_000_000 + i as u64 * 7 + round
}

/// Block-scope `put` of `n` floats from this PE's `src` into `dest` on the next PE.
#[kernel]
pub unsafe fn put_block_to_next(dest: SymPtr<f32>, src: SymPtr<f32>, n: u64) {
    let next = my_pe().ring_next(n_pes());
    unsafe { put_block(dest, src.as_ptr(), n as usize, next) };
    if thread_idx_x() == 0 {
        quiet();
    }
}

/// Thread-scope non-blocking `get` of this block's slice from the previous PE, then `quiet`.
#[kernel]
pub unsafe fn get_nbi_from_prev(dest: SymPtr<u64>, src: SymPtr<u64>, chunk: u64) {
    let prev = my_pe().ring_prev(n_pes());
    let start = block_idx_x() as usize * chunk as usize;
    if thread_idx_x() == 0 {
        unsafe {
            get_nbi(
                dest.add(start).as_ptr(),
                src.add(start),
                chunk as usize,
                prev,
            )
        };
        quiet();
    }
}

/// Scalar `p` of a pattern to the next PE, then (after the host's barrier) see `g_from_next`.
#[kernel]
pub unsafe fn p_to_next(dest: SymPtr<u64>, n: u64) {
    let i = global_index_x();
    if i < n as usize {
        let next = my_pe().ring_next(n_pes());
        unsafe { p(dest.add(i), pattern(my_pe(), i, 0), next) };
    }
    quiet();
}

/// Scalar `g` from the next PE into a local array.
#[kernel]
pub unsafe fn g_from_next(out: *mut u64, src: SymPtr<u64>, n: u64) {
    let i = global_index_x();
    if i < n as usize {
        let next = my_pe().ring_next(n_pes());
        unsafe { *out.add(i) = g(src.add(i), next) };
    }
}

/// Every thread adds one to the counter on PE 0 with `atomic_fetch_add`, and
/// records the value it fetched (the host checks they are all distinct).
#[kernel]
pub unsafe fn count_on_pe0(counter: SymPtr<u64>, fetched: *mut u64) {
    let i = global_index_x();
    unsafe { *fetched.add(i) = atomic_fetch_add(counter, 1, Pe::new(0)) };
}

/// One thread runs a fixed sequence of atomics on its own slot of the next PE's
/// `slots`, recording each fetched value in `out[0..8]`.
#[kernel]
pub unsafe fn atomic_sequence(slots: SymPtr<u32>, out: *mut u32) {
    if global_index_x() != 0 {
        return;
    }
    let me = my_pe();
    let next = me.ring_next(n_pes());
    let slot = unsafe { slots.add(me.index() as usize) };
    unsafe {
        atomic_set(slot, 5, next);
        *out.add(0) = atomic_fetch_add(slot, 3, next); // 5 -> 8
        *out.add(1) = atomic_compare_swap(slot, 8, 20, next); // 8 -> 20
        *out.add(2) = atomic_compare_swap(slot, 8, 99, next); // no change: 20
        *out.add(3) = atomic_swap(slot, 7, next); // 20 -> 7
        *out.add(4) = atomic_fetch_inc(slot, next); // 7 -> 8
        *out.add(5) = atomic_fetch_or(slot, 0x30, next); // 8 -> 0x38
        *out.add(6) = atomic_fetch_and(slot, 0x1c, next); // 0x38 -> 0x18
        *out.add(7) = atomic_fetch_xor(slot, 0xff, next); // 0x18 -> 0xe7
        atomic_inc(slot, next); // 0xe8
        atomic_add(slot, 2, next); // 0xea
        atomic_xor(slot, 1, next); // 0xeb
        atomic_or(slot, 0x100, next); // 0x1eb
        atomic_and(slot, 0x10f, next); // 0x10b
        *out.add(8) = atomic_fetch(slot, next); // 0x10b
    }
    quiet();
}

/// Ring with `put_signal_nbi`: the block sends `n` values to the next PE and
/// sets its signal to `round`; thread 0 then waits for its own signal to reach
/// `round` (the previous PE's data has landed) and checks it: `errors[0]`
/// counts wrong elements.
#[kernel]
pub unsafe fn ring_put_signal(
    send: SymPtr<u64>,
    recv: SymPtr<u64>,
    signal: SymPtr<u64>,
    n: u64,
    round: u64,
    errors: *mut u32,
) {
    let me = my_pe();
    let (next, prev) = (me.ring_next(n_pes()), me.ring_prev(n_pes()));
    let mut i = thread_idx_x() as usize;
    while i < n as usize {
        unsafe { *send.as_ptr().add(i) = pattern(me, i, round) };
        i += block_dim_x() as usize;
    }
    sync_threads();
    unsafe {
        put_signal_nbi_block(
            recv,
            send.as_ptr(),
            n as usize,
            signal,
            round,
            SignalOp::Set,
            next,
        )
    };
    if thread_idx_x() == 0 {
        unsafe { signal_wait_until(signal, Cmp::Ge, round) };
        let mut wrong = 0;
        for i in 0..n as usize {
            if unsafe { *recv.as_ptr().add(i) } != pattern(prev, i, round) {
                wrong += 1;
            }
        }
        unsafe { *errors = wrong };
        quiet();
    }
}

/// Ring with `p` + `fence` + an atomic flag and `wait_until`: writes its rank to
/// the next PE's `value`, then raises that PE's `flag` to `round`, then waits
/// for its own flag and reports what arrived in `out[0]`.
#[kernel]
pub unsafe fn ring_wait_until(value: SymPtr<i32>, flag: SymPtr<i64>, round: i64, out: *mut i32) {
    if global_index_x() != 0 {
        return;
    }
    let next = my_pe().ring_next(n_pes());
    unsafe {
        p(value, my_pe().index() as i32 * 10 + round as i32, next);
        fence(); // the value is delivered before the flag
        atomic_set(flag, round, next);
        wait_until(flag, Cmp::Eq, round);
        *out = *value.as_ptr();
        // `test` sees the same flag without blocking.
        *out.add(1) = test(flag, Cmp::Ge, round) as i32;
    }
    quiet();
}

/// Strided put: element `i` of `src` (stride 1) goes to `dest[2 i]` on the next PE.
#[kernel]
pub unsafe fn iput_every_other(dest: SymPtr<i32>, src: SymPtr<i32>, n: u64) {
    if global_index_x() == 0 {
        let next = my_pe().ring_next(n_pes());
        unsafe { iput(dest, src.as_ptr(), 2, 1, n as usize, next) };
        quiet();
    }
}

/// Direct stores through `ptr` where the next PE is load/store reachable;
/// `out[0]` = 1 if it was, 0 if not (then nothing is written).
#[kernel]
pub unsafe fn store_through_ptr(dest: SymPtr<u32>, n: u64, out: *mut u32) {
    let next = my_pe().ring_next(n_pes());
    let reachable = ptr(dest, next);
    let i = global_index_x();
    if let Some(peer) = reachable
        && i < n as usize
    {
        unsafe { *peer.as_ptr().add(i) = my_pe().index() * 1000 + i as u32 };
    }
    if i == 0 {
        unsafe { *out = reachable.is_some() as u32 };
    }
}

/// `ptr` against NVSHMEM's own `nvshmem_ptr`, for every PE and addresses at
/// the start and the last byte of `dest` (`bytes` long), one past it, far
/// below and far above the heap; and `ptr` for PEs past the job (`None`),
/// up to `u32::MAX`, in a loop the lookup may be hoisted out of.
/// Thread 0 writes `out[0]` = disagreements, `out[1]` = comparisons,
/// `out[2]` = how many of them `ptr` found reachable.
#[kernel]
pub unsafe fn ptr_matches_nvshmem_ptr(dest: SymPtr<u8>, bytes: u64, out: *mut u32) {
    if global_index_x() != 0 {
        return;
    }
    let base = dest.addr();
    let addrs = [
        base,
        base + bytes - 1,
        base + bytes,
        0x1000,
        u64::MAX - 0xfff,
    ];
    let (mut wrong, mut compared, mut reachable) = (0u32, 0u32, 0u32);
    for pe in 0..n_pes() {
        for a in addrs {
            // SAFETY: only translated, never dereferenced.
            let sym = unsafe { SymPtr::<u8>::from_raw(a as *mut u8) };
            let ours = ptr(sym, Pe::new(pe)).map_or(core::ptr::null_mut(), |p| p.as_ptr());
            // SAFETY: `nvshmem_ptr` reads its peer table at `pe < n_pes()`.
            let theirs = unsafe { nvshmem_device::ffi::nvshmem_ptr(a as *const _, pe as i32) };
            wrong += (ours.cast() != theirs) as u32;
            reachable += !ours.is_null() as u32;
            compared += 1;
        }
    }
    for far in [n_pes(), n_pes() + 1, 1 << 30, u32::MAX] {
        for a in addrs {
            // SAFETY: only translated.
            let sym = unsafe { SymPtr::<u8>::from_raw(a as *mut u8) };
            wrong += ptr(sym, Pe::new(far)).is_some() as u32;
        }
    }
    unsafe {
        *out = wrong;
        *out.add(1) = compared;
        *out.add(2) = reachable;
    }
}

/// Needs a collective launch: every thread of the block adds one to PE 0's
/// counter, then the block joins a device-side barrier across PEs, then
/// thread 0 reads the total, which must be `n_pes * blockDim.x`.
#[kernel]
pub unsafe fn barrier_then_count(counter: SymPtr<u64>, out: *mut u64) {
    unsafe { atomic_add(counter, 1, Pe::new(0)) };
    // SAFETY: every thread of the block gets here.
    unsafe { barrier_all_block() };
    if thread_idx_x() == 0 {
        unsafe { *out = atomic_fetch(counter, Pe::new(0)) };
    }
}

/// Writes through a null pointer: the host must report a fault naming this kernel.
#[kernel]
pub unsafe fn fault(target: *mut u64) {
    unsafe { core::ptr::write_volatile(target, 1) };
}

/// Copies `len` bytes between this PE and the next in the scope `scope` picks
/// (0 thread 0, 1 warp 0, 2 the block): `get = 0` puts `local[soff..]` to
/// `sym[doff..]` on the next PE; `get = 1` gets the next PE's `sym[soff..]`
/// into `local[doff..]`. Every alignment mix goes through one of the direct
/// copy's word widths.
#[kernel]
pub unsafe fn copy_bytes(
    sym: SymPtr<u8>,
    local: *mut u8,
    doff: u64,
    soff: u64,
    len: u64,
    scope: u32,
    get: u32,
) {
    let next = my_pe().ring_next(n_pes());
    let (d, s, n) = (doff as usize, soff as usize, len as usize);
    let t = thread_idx_x();
    unsafe {
        match (scope, get) {
            (0, 0) if t == 0 => put_pod(sym.add(d), local.add(s), n, next),
            (1, 0) if t < 32 => put_pod_warp(sym.add(d), local.add(s), n, next),
            (2, 0) => put_pod_block(sym.add(d), local.add(s), n, next),
            (0, _) if t == 0 => get_pod_nbi(local.add(d), sym.add(s), n, next),
            (1, _) if t < 32 => get_pod_warp(local.add(d), sym.add(s), n, next),
            (2, _) => get_pod_block(local.add(d), sym.add(s), n, next),
            _ => {}
        }
    }
    if t == 0 {
        quiet();
    }
}

/// Spins for about `cycles` clock cycles.
#[inline(always)]
fn spin(cycles: u64) {
    let start = clock64();
    while clock64().wrapping_sub(start) < cycles {}
}

/// The group of the race tests: `scope` 1 is each warp on its own
/// `chunk = n / warps` elements, 2 the whole block on all `n`. Returns the
/// group's first element, its length, this thread's rank in it, the group's
/// size, and whether this thread lags (the upper half of each warp, or the
/// block's last warp).
#[inline(always)]
fn race_group(n: usize, scope: u32) -> (usize, usize, usize, usize, bool) {
    let (t, bs) = (thread_idx_x() as usize, block_dim_x() as usize);
    if scope == 1 {
        let chunk = n / (bs / WARP_SIZE as usize);
        let lane = lane_id() as usize;
        (
            warp_id() as usize * chunk,
            chunk,
            lane,
            WARP_SIZE as usize,
            lane >= 16,
        )
    } else {
        (
            0,
            n,
            t,
            bs,
            warp_id() as usize == bs / WARP_SIZE as usize - 1,
        )
    }
}

/// The entry-sync race of a put (`scope` 1: `put_warp`, 2: `put_block`):
/// each thread writes its share of `stage` (a local buffer, holding the
/// previous round's values) with `pattern(me, i, round)`, the lagging
/// threads `lag` cycles late, and the group puts `stage` to the next PE's
/// `dest` **without a barrier of its own**. The put must wait for every
/// thread's writes: the host checks that `dest` holds this round's values.
// The host launches 1024 threads (RACE_THREADS); told so, ptxas keeps the
// kernel within the 64 registers a thread can have then.
#[kernel(max_threads = 1024)]
pub unsafe fn staged_put(
    dest: SymPtr<u64>,
    stage: *mut u64,
    n: u64,
    round: u64,
    lag: u64,
    scope: u32,
) {
    let me = my_pe();
    let next = me.ring_next(n_pes());
    let (first, len, rank, size, lags) = race_group(n as usize, scope);
    if lags {
        spin(lag);
    }
    let mut i = first + rank;
    while i < first + len {
        unsafe { *stage.add(i) = pattern(me, i, round) };
        i += size;
    }
    unsafe {
        let (d, s) = (dest.add(first), stage.add(first));
        if scope == 1 {
            put_warp(d, s, len, next)
        } else {
            put_block(d, s, len, next)
        }
    }
    if thread_idx_x() == 0 {
        quiet();
    }
}

/// The mirror race of a get (`scope` 1: `get_warp`, 2: `get_block`): each
/// thread copies its share of `local` (which the host filled) to `seen`, the
/// lagging threads `lag` cycles late, and the group then gets the next PE's
/// `src` into `local` **without a barrier of its own**. The get must not
/// overwrite what a thread has yet to read: the host checks that `seen`
/// holds the old contents and `local` the next PE's `src`.
// 1024 threads, as `staged_put`.
#[kernel(max_threads = 1024)]
pub unsafe fn get_in_use(
    local: *mut u64,
    src: SymPtr<u64>,
    seen: *mut u64,
    n: u64,
    lag: u64,
    scope: u32,
) {
    let next = my_pe().ring_next(n_pes());
    let (first, len, rank, size, lags) = race_group(n as usize, scope);
    if lags {
        spin(lag);
    }
    let mut i = first + rank;
    while i < first + len {
        unsafe { *seen.add(i) = *local.add(i) };
        i += size;
    }
    unsafe {
        let (d, s) = (local.add(first), src.add(first));
        if scope == 1 {
            get_warp(d, s, len, next)
        } else {
            get_block(d, s, len, next)
        }
    }
}

/// Registers for `block_too_large`: the length of `many_registers`' sums.
pub const LIVE_SUMS: usize = 96;

/// Keeps [`LIVE_SUMS`] running sums live across a loop over `input[..n]`, so
/// that it needs more than the 64 registers a thread of a 1024-thread block
/// can have: the host checks that a 1024-thread launch is refused as
/// `Error::BlockTooLarge` and that a small block runs and computes. Thread
/// `t` writes its sums to `out[t * LIVE_SUMS..]`.
#[kernel]
pub unsafe fn many_registers(input: *const f32, out: *mut f32, n: u64) {
    let mut sums = [0f32; LIVE_SUMS];
    // Every index a constant (a loop over them stays a loop, and the array
    // in local memory), so the sums live in registers.
    macro_rules! each_sum {
        ($($j:literal)*) => {
            for i in 0..n as usize {
                // Volatile: one load per step, which every sum then needs.
                let x = unsafe { core::ptr::read_volatile(input.add(i)) };
                $(sums[$j] = sums[$j] * x + $j as f32;)*
            }
        };
    }
    each_sum!(
            0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15
            16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
            32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47
            48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63
            64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79
            80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95
    );
    let t = global_index_x() as usize;
    for (j, s) in sums.iter().enumerate() {
        unsafe { *out.add(t * LIVE_SUMS + j) = *s };
    }
}

/// `out[0]` = 1 when the typed put/get copy directly to P2P peers, 0 when
/// they were built with `nvshmem-device/nvshmem-path` (NVSHMEM's path only).
#[kernel]
pub unsafe fn rma_path(out: *mut u32) {
    if global_index_x() == 0 {
        unsafe { *out = DIRECT_COPY as u32 };
    }
}

/// `out[0]` = 1 when `buf` has an NVLS multicast address for the world team,
/// else 0; `out[1]` = 1 when `ptr` refuses PE `n_pes()` (out of range).
/// Nothing is accessed through either address.
#[kernel]
pub unsafe fn address_queries(buf: SymPtr<u32>, out: *mut u32) {
    if global_index_x() == 0 {
        unsafe {
            *out = mc_ptr(Team::WORLD, buf).is_some() as u32;
            *out.add(1) = ptr(buf, Pe::new(n_pes())).is_none() as u32;
        }
    }
}

/// A by-value `#[repr(C)]` parameter (24 bytes, 8-aligned): the host passes
/// this crate's own struct through the typed bindings.
#[derive(Clone, Copy, KernelParam)]
#[repr(C)]
pub struct Affine {
    /// The factor.
    pub a: f64,
    /// The offset.
    pub b: f64,
    /// Elements to transform.
    pub n: u64,
}

/// `x[i] = a * x[i] + b` for the first `p.n` elements, the struct as the
/// last parameter (where the builder once misread its size).
#[kernel]
pub unsafe fn affine(x: *mut f32, p: Affine) {
    let i = global_index_x();
    if (i as u64) < p.n {
        unsafe { *x.add(i) = (p.a * *x.add(i) as f64 + p.b) as f32 };
    }
}
