//! The allreduce example's kernels: an in-place sum all-reduce of `f32`
//! buffers across every PE, done inside one kernel per call, with NVSHMEM
//! signals as the only synchronization.
//!
//! # The two algorithms
//! - [`allreduce_oneshot`] (small buffers): every PE copies its buffer into a
//!   symmetric staging half, announces it, and then reads the staged buffers
//!   of **all** PEs and sums them. One synchronization round per call; each
//!   PE reads `n_pes * n` elements.
//! - [`allreduce_rs_ag`] (large buffers): reduce-scatter fused with
//!   all-gather. The buffer is cut into `n_pes` shards; PE `k` owns shard `k`.
//!   It reads shard `k` from every PE, sums it in registers and stores the sum
//!   straight into shard `k` of every PE. Two synchronization rounds per call;
//!   each PE reads and writes `n` elements (`2 (n_pes - 1) / n_pes * n` of them
//!   remote), the bandwidth-optimal amount, and no element is touched twice,
//!   so buffers much larger than L2 stream through once.
//!
//! # Work split and signals
//! The grid must be the same on every PE (the host agrees on it). Block `b`
//! of every PE works on the same part of the buffer (range `b` of
//! [`split`]) and synchronizes only with block `b` of the other PEs, through
//! two arrays of `u64` signal words of `grid * n_pes` entries each:
//! - `ready[b * n_pes + j]`, set to `epoch` by block `b` of PE `j` when it has
//!   entered call `epoch` (its input is in place, and it has finished every
//!   earlier call);
//! - `done[b * n_pes + j]`, set to `epoch` by block `b` of PE `j` when it has
//!   stored its part of shard `j` into this PE (only `allreduce_rs_ag`).
//!
//! `epoch` is a call counter (1, 2, 3, ...) that every PE passes identically;
//! words are only ever *set* to a larger epoch and waited on with `>=`, so
//! nothing has to be reset between calls and a stale word never passes.
//!
//! # Peers without direct access
//! When `nvshmem_ptr` gives no address for a peer (a peer on another node,
//! reached through a network transport), the kernels fall back to block-scope
//! `get` into `scratch` (one tile per block) and `put_nbi` out of the local
//! result, completed with `quiet` before the signal. On one node every peer is
//! direct and `scratch` is never touched.
//!
//! None of these kernels calls an NVSHMEM barrier or collective, so the
//! builder does not mark them collective; the host still launches the two
//! all-reduce kernels cooperatively, because block `b` spins until block `b`
//! of every other PE runs: every block must be resident.
#![no_std]

use core::sync::atomic::{AtomicU32, Ordering, fence};
use nvshmem_device::thread::{block_dim_x, block_idx_x, global_index_x, global_stride_x};
use nvshmem_device::thread::{grid_dim_x, sync_threads, thread_idx_x};
use nvshmem_device::{Cmp, Pe, SignalOp, SymPtr};
use nvshmem_device::{ffi, my_pe, n_pes, ptr, quiet};
use nvshmem_device::{signal_op, signal_wait_until};

nvshmem_device::panic_handler!();

/// Vectors (4 floats) per thread per tile. A tile is `block_dim * UNROLL * 4`
/// floats; the host sizes `scratch` with the same formula.
pub const UNROLL: usize = 4;

/// Four floats loaded and stored as one 16-byte access.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct F4([f32; 4]);

impl F4 {
    const ZERO: F4 = F4([0.0; 4]);

    #[inline(always)]
    fn add(self, o: F4) -> F4 {
        let (a, b) = (self.0, o.0);
        F4([a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3]])
    }
}

/// Range `part` of `total` elements cut into `parts` pieces: `(start, len)`.
/// Every piece but the last is a multiple of 4 elements long, so every start
/// is 16-byte aligned when the buffer is.
#[inline(always)]
pub fn split(total: usize, parts: usize, part: usize) -> (usize, usize) {
    let unit = total.div_ceil(parts).next_multiple_of(4);
    let start = (part * unit).min(total);
    let end = (start + unit).min(total);
    (start, end - start)
}

/// A system-scope fence (`fence.sc.sys`): orders this thread's memory
/// accesses for every observer, peer GPUs included.
#[inline(always)]
fn fence_system() {
    fence(Ordering::SeqCst);
}

/// Sets `words[b * n_pes + me]` to `epoch` on every PE, this one included:
/// nobody waits on its own word, but the host reads it to tell a call that
/// ran from one that did not (at 1 PE the only sign). Every thread of the
/// block calls it, after the block's stores that the signal publishes.
#[inline(always)]
unsafe fn announce(words: SymPtr<u64>, epoch: u64) {
    let (me, np) = (my_pe().index(), n_pes());
    fence_system();
    sync_threads();
    let row = unsafe { words.add(block_idx_x() as usize * np as usize) };
    let mut j = thread_idx_x();
    while j < np {
        unsafe { signal_op(row.add(me as usize), epoch, SignalOp::Set, Pe::new(j)) };
        j += block_dim_x();
    }
}

/// Waits until every other PE has set its word of this block's row to at
/// least `epoch`. Every thread of the block calls it; it returns to all of
/// them once every word has arrived.
#[inline(always)]
unsafe fn await_all(words: SymPtr<u64>, epoch: u64) {
    let (me, np) = (my_pe().index(), n_pes());
    let row = unsafe { words.add(block_idx_x() as usize * np as usize) };
    let mut j = thread_idx_x();
    while j < np {
        if j != me {
            unsafe { signal_wait_until(row.add(j as usize), Cmp::Ge, epoch) };
        }
        j += block_dim_x();
    }
    fence_system();
    sync_threads();
}

/// Completes the signals (and puts) this thread issued, so that none is still
/// in flight when the next call starts. A fence for direct peers.
#[inline(always)]
fn complete_signals() {
    if thread_idx_x() < n_pes() {
        quiet();
    }
}

/// The address to read PE `pe`'s copy of `buf[t0..t0 + tlen]` from: directly
/// when the peer is reachable by loads, else a block-scope `get` into this
/// block's `scratch` tile. Every thread of the block calls it.
#[inline(always)]
unsafe fn source_tile(
    buf: SymPtr<f32>,
    t0: usize,
    tlen: usize,
    pe: Pe,
    scratch: SymPtr<f32>,
) -> *const f32 {
    let at = unsafe { buf.add(t0) };
    match ptr(at, pe) {
        Some(p) => p.as_ptr(),
        None => {
            let tile = block_dim_x() as usize * UNROLL * 4;
            let mine = unsafe { scratch.as_ptr().add(block_idx_x() as usize * tile) };
            sync_threads(); // everyone is done with the previous contents
            // NVSHMEM's own path (the raw layer): `get_block` would first try
            // the direct copy, which `ptr` just ruled out, and its inlined
            // loop would cost this kernel registers.
            unsafe { ffi::nvshmemx_float_get_block(mine, at.as_ptr(), tlen, pe.to_c()) };
            sync_threads();
            mine
        }
    }
}

/// Sums `buf[t0..t0 + tlen]` over every PE, in PE order (so every PE that
/// computes an element computes it bit for bit the same). This thread's share:
/// vectors `u * block_dim + tid` of the tile (`U` of them), and scalar `tid`
/// of a tail. A tile of `U` other than [`UNROLL`] must not need `scratch`
/// (every peer direct).
#[inline(always)]
unsafe fn sum_tile<const U: usize>(
    buf: SymPtr<f32>,
    t0: usize,
    tlen: usize,
    scratch: SymPtr<f32>,
) -> ([F4; U], f32) {
    let (tid, bdim) = (thread_idx_x() as usize, block_dim_x() as usize);
    let (vecs, tail) = (tlen / 4, tlen % 4);
    let mut acc = [F4::ZERO; U];
    let mut acc_tail = 0.0f32;
    for j in 0..n_pes() {
        let src = unsafe { source_tile(buf, t0, tlen, Pe::new(j), scratch) };
        for (u, a) in acc.iter_mut().enumerate() {
            let v = u * bdim + tid;
            if v < vecs {
                *a = a.add(unsafe { *(src as *const F4).add(v) });
            }
        }
        if tid < tail {
            acc_tail += unsafe { *src.add(vecs * 4 + tid) };
        }
    }
    (acc, acc_tail)
}

/// Stores this thread's share of a tile sum at `dst` (the tile's first element).
#[inline(always)]
unsafe fn store_tile<const U: usize>(dst: *mut f32, tlen: usize, acc: &[F4; U], acc_tail: f32) {
    let (tid, bdim) = (thread_idx_x() as usize, block_dim_x() as usize);
    let (vecs, tail) = (tlen / 4, tlen % 4);
    for (u, a) in acc.iter().enumerate() {
        let v = u * bdim + tid;
        if v < vecs {
            unsafe { *(dst as *mut F4).add(v) = *a };
        }
    }
    if tid < tail {
        unsafe { *dst.add(vecs * 4 + tid) = acc_tail };
    }
}

/// Copies `len` floats from `src` to `dst` with the block (vectors, then a tail).
#[inline(always)]
unsafe fn copy_block(dst: *mut f32, src: *const f32, len: usize) {
    let (tid, bdim) = (thread_idx_x() as usize, block_dim_x() as usize);
    let vecs = len / 4;
    let mut v = tid;
    while v < vecs {
        unsafe { *(dst as *mut F4).add(v) = *(src as *const F4).add(v) };
        v += bdim;
    }
    if tid < len % 4 {
        unsafe { *dst.add(vecs * 4 + tid) = *src.add(vecs * 4 + tid) };
    }
}

/// One-shot all-reduce of `data[0..n]`, in place. For small buffers.
///
/// Block `b` copies its range of `data` into `stage` (this call's staging
/// half, chosen by the host as `epoch % 2`), sets `ready` on every PE, waits
/// for every PE's `ready`, then sums its range of every PE's `stage` into
/// `data`.
///
/// Why two staging halves are enough: a PE writes half `epoch % 2` in call
/// `epoch` only after finishing call `epoch - 1`, whose `ready` wait proved
/// that every PE had started call `epoch - 1`, that is, had finished call
/// `epoch - 2`, the last one that read that half.
///
/// # Safety
/// Every PE launches it with the same `n`, `epoch` and 1-D grid (block `b`'s
/// range is [`split`]`(n, grid, b)`), any block size, all blocks resident at
/// once (a cooperative launch, and room for the other PEs on a shared GPU),
/// `epoch` larger than in any earlier call on these signal words, and
/// `stage` the staging half for `epoch % 2`. The symmetric buffers hold:
/// `data` and `stage` `n` floats, 16-byte aligned; `ready` `grid * n_pes`
/// words; `scratch` `grid * block * UNROLL * 4` floats when some peer is not
/// directly reachable.
#[nvshmem_device::kernel]
pub unsafe fn allreduce_oneshot(
    data: SymPtr<f32>,
    stage: SymPtr<f32>,
    scratch: SymPtr<f32>,
    ready: SymPtr<u64>,
    n: u64,
    epoch: u64,
) {
    let (s, len) = split(n as usize, grid_dim_x() as usize, block_idx_x() as usize);
    unsafe {
        copy_block(stage.as_ptr().add(s), data.as_ptr().add(s), len);
        announce(ready, epoch);
        await_all(ready, epoch);
    }
    let tile = block_dim_x() as usize * UNROLL * 4;
    let mut t0 = s;
    while t0 < s + len {
        let tlen = tile.min(s + len - t0);
        let (acc, acc_tail) = unsafe { sum_tile::<UNROLL>(stage, t0, tlen, scratch) };
        unsafe { store_tile(data.as_ptr().add(t0), tlen, &acc, acc_tail) };
        t0 += tile;
    }
    complete_signals();
}

/// Whether every PE's `buf` is reachable with loads and stores.
#[inline(always)]
fn all_direct(buf: SymPtr<f32>) -> bool {
    (0..n_pes()).all(|j| ptr(buf, Pe::new(j)).is_some())
}

/// One tile of [`allreduce_rs_ag`]: sums `data[t0..t0 + tlen]` over every PE
/// and stores the sum into every PE. Returns whether some peer was sent to
/// through NVSHMEM (the caller's `quiet` then completes it).
///
/// # Safety
/// As [`allreduce_rs_ag`]; `U` other than [`UNROLL`] only when every peer is direct.
#[inline(always)]
unsafe fn rs_ag_tile<const U: usize>(
    data: SymPtr<f32>,
    scratch: SymPtr<f32>,
    (t0, tlen): (usize, usize),
    (me, np): (Pe, u32),
) -> bool {
    let mut indirect = false;
    let (acc, acc_tail) = unsafe { sum_tile::<U>(data, t0, tlen, scratch) };
    // This PE's copy first: indirect peers are sent from it.
    unsafe { store_tile(data.as_ptr().add(t0), tlen, &acc, acc_tail) };
    for j in 0..np {
        if j == me.index() {
            continue;
        }
        let at = unsafe { data.add(t0) };
        match ptr(at, Pe::new(j)) {
            Some(p) => unsafe { store_tile(p.as_ptr(), tlen, &acc, acc_tail) },
            None => {
                indirect = true;
                fence_system();
                sync_threads();
                // NVSHMEM's own path, as in `source_tile`.
                unsafe {
                    ffi::nvshmemx_float_put_nbi_block(at.as_ptr(), at.as_ptr(), tlen, j as i32)
                };
            }
        }
    }
    indirect
}

/// Reduce-scatter + all-gather of `data[0..n]`, in place, fused into one pass.
/// For large buffers.
///
/// PE `k` owns shard `k` ([`split`]`(n, n_pes, k)`); block `b` handles range
/// `b` of that shard ([`split`]`(shard_len, grid, b)`). After every PE's
/// `ready`, it reads its range from every PE, sums it, and stores the sum into
/// every PE (directly, or by `put_nbi` for peers it cannot address), then sets
/// `done` on every PE and waits for every PE's `done`: by then the whole
/// buffer holds the sum.
///
/// In place is safe: the only PE that reads or writes shard `k` of any PE
/// during a call is PE `k`, which reads each element before it stores it.
/// When a PE's call ends, every peer has stored into it (its `done`) after
/// reading from it, so the caller may overwrite the buffer at once.
///
/// # Safety
/// As for [`allreduce_oneshot`], without `stage`; `done` holds
/// `grid * n_pes` words too.
// The host launches 512 threads: at most 128 registers (the wide tiles
// would take more).
#[nvshmem_device::kernel(max_threads = 512)]
pub unsafe fn allreduce_rs_ag(
    data: SymPtr<f32>,
    scratch: SymPtr<f32>,
    ready: SymPtr<u64>,
    done: SymPtr<u64>,
    n: u64,
    epoch: u64,
) {
    let (me, np) = (my_pe(), n_pes());
    let (shard, shard_len) = split(n as usize, np as usize, me.index() as usize);
    let (sub, len) = split(shard_len, grid_dim_x() as usize, block_idx_x() as usize);
    let s = shard + sub;
    unsafe {
        announce(ready, epoch);
        await_all(ready, epoch);
    }
    // Two tiles per step (`2 · UNROLL` 16-byte loads in flight per thread):
    // as fast as the C++ twin from 2 to 256 MiB where one tile was 1.13x
    // (issue 24, BENCHMARKS.md). Only when no peer needs `scratch`, which
    // holds one tile of `UNROLL`.
    let wide = all_direct(data);
    let tile = block_dim_x() as usize * UNROLL * 4 * if wide { 2 } else { 1 };
    let mut indirect = false;
    let mut t0 = s;
    while t0 < s + len {
        let tlen = tile.min(s + len - t0);
        indirect |= unsafe {
            if wide {
                rs_ag_tile::<{ 2 * UNROLL }>(data, scratch, (t0, tlen), (me, np))
            } else {
                rs_ag_tile::<UNROLL>(data, scratch, (t0, tlen), (me, np))
            }
        };
        t0 += tile;
    }
    if indirect {
        // The puts must have landed before `done` says so (uniform: every
        // thread of the block took the same branches).
        sync_threads();
        if thread_idx_x() == 0 {
            quiet();
        }
    }
    unsafe {
        announce(done, epoch);
        await_all(done, epoch);
    }
    complete_signals();
}

/// The test pattern, the same function the host checks with.
pub use example_patterns::pattern;

/// Writes PE `pe`'s pattern for round `seed` into `data[0..n]` (this PE's copy).
///
/// # Safety
/// `data` is writable device memory for `n` floats. Any 1-D launch (grid-stride).
#[nvshmem_device::kernel]
pub unsafe fn fill_pattern(data: *mut f32, n: u64, pe: u32, seed: u32) {
    let mut i = global_index_x();
    while i < n as usize {
        unsafe { *data.add(i) = pattern(pe, i as u64, seed) as f32 };
        i += global_stride_x();
    }
}

/// Counts into `*errors` the elements of `data[0..n]` that differ from the sum
/// of every PE's pattern for round `seed`.
///
/// # Safety
/// `data` is readable device memory for `n` floats, `errors` a `u32` in device
/// memory. Any 1-D launch (grid-stride).
#[nvshmem_device::kernel]
pub unsafe fn check_pattern(data: *const f32, n: u64, n_pes: u32, seed: u32, errors: *mut u32) {
    let mut wrong = 0u32;
    let mut i = global_index_x();
    while i < n as usize {
        let mut want = 0u32;
        for pe in 0..n_pes {
            want += pattern(pe, i as u64, seed);
        }
        if unsafe { *data.add(i) } != want as f32 {
            wrong += 1;
        }
        i += global_stride_x();
    }
    if wrong != 0 {
        // SAFETY: `errors` is a valid, 4-byte aligned u32 in device memory.
        unsafe { AtomicU32::from_ptr(errors) }.fetch_add(wrong, Ordering::Relaxed);
    }
}
