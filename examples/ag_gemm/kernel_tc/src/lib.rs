//! All-gather + GEMM in bf16 on the tensor cores: `C = A · Bᵀ` where
//! `A = [A_0; ...; A_{n-1}]` (`M × K`, `M = n_pes · m_loc`) is gathered from
//! every PE's row shard `A_p` (`m_loc × K`) and B (`N × K`, this PE's weight
//! shard in `Linear` layout) is local. C is `M × N` bf16.
//!
//! The all-gather is a *push*: each PE writes its shard, one 128-row panel at
//! a time, into every other PE's symmetric `a_full` (`M × K`, shard `q` at row
//! `q · m_loc`) with `put_signal_block`, setting that panel's signal word
//! `sig[q · panels + panel]` there to the launch's `epoch` (so the words need
//! no reset between launches).
//!
//! | Kernel | Launch | What |
//! |---|---|---|
//! | [`ag_push`] | any grid, any block | Unfused step 1: every panel to every PE, itself included. The host then needs a barrier (`barrier_all_on_stream`) before the GEMM reads `a_full`. |
//! | [`ag_gemm_mma_fused`] | persistent 1-D grid, 128 threads, `sm80::SMEM_BYTES` | Fused, `mma.sync`: blocks `0..pushers` first push this PE's panels (ring order: PE `me+1` first), then every block walks the 128 × 128 tiles: this PE's own shard first (read from `a_shard`, no waiting), then shards `me-1`, `me-2`, ... (the order in which they arrive), waiting for each panel's signal. |
//! | `ag_gemm_wgmma_fused` (feature `sm90a`) | persistent 1-D grid, 384 threads, `sm90::SMEM_BYTES` | The same with the warp-specialized `wgmma` + TMA mainloop and 128 × 256 tiles; the producer thread waits for the signal, then `fence.proxy.async.global`, then TMA. |
//!
//! # Progress
//! A fused block waits only for panels that *other PEs'* blocks push, and
//! pushing happens before any waiting, in the first `pushers` blocks. So the
//! kernel finishes as long as every PE's first `pushers` blocks get to run:
//! the host keeps the persistent grid within what can be co-resident on the
//! GPU for all the PEs that share it.
#![no_std]

use nvshmem_device::cp_async::SharedAddr;
use nvshmem_device::half::bf16;
use nvshmem_device::thread::{block_idx_x, grid_dim_x, sync_threads, thread_idx_x};
use nvshmem_device::{
    Cmp, Pe, SignalOp, SymPtr, kernel, my_pe, n_pes, put_signal_block, shared, signal_wait_until,
};
use tc_gemm_tiles::sm80;

nvshmem_device::panic_handler!();

/// Rows per panel of A: the unit of the all-gather and of its signals.
pub const PANEL: usize = 128;

/// Pushes items `first`, `first + stride`, ... of this PE's
/// `(destination, panel)` list: destinations in ring order `me+1, me+2, ...`
/// (and `me` itself last when `with_self`), all panels of one destination
/// before the next. Block scope.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // the kernels' own arguments, passed on
unsafe fn push(
    a_shard: SymPtr<bf16>,
    a_full: SymPtr<bf16>,
    sig: SymPtr<u64>,
    m_loc: usize,
    k: usize,
    epoch: u64,
    (first, stride): (usize, usize),
    with_self: bool,
) {
    let (me, np) = (my_pe().index() as usize, n_pes() as usize);
    let panels = m_loc / PANEL;
    let dests = if with_self { np } else { np - 1 };
    let mut item = first;
    while item < panels * dests {
        let (d, panel) = (item / panels, item % panels);
        let dest = (me + 1 + d) % np;
        let off = panel * PANEL * k;
        // SAFETY: a_full holds M × K on every PE, a_shard m_loc × K, sig n_pes · panels words.
        unsafe {
            put_signal_block(
                a_full.add(me * m_loc * k + off),
                a_shard.as_ptr().add(off),
                PANEL * k,
                sig.add(me * panels + panel),
                epoch,
                SignalOp::Set,
                Pe::new(dest as u32),
            )
        };
        item += stride;
    }
}

/// Unfused all-gather: every panel of this PE's `a_shard` (`m_loc × k`) into
/// every PE's `a_full` (itself included), signalled with `epoch`. Grid-stride
/// over the `(destination, panel)` items, one `put_signal_block` each.
///
/// # Safety
/// Every PE launches it with the same `m_loc` (a multiple of [`PANEL`]), `k`
/// and `epoch`; `a_shard` holds `m_loc × k` bf16 on every PE, `a_full`
/// `n_pes · m_loc × k`, `sig` `n_pes · m_loc / PANEL` words; nothing else
/// writes `a_full` or `sig` until the host's barrier after the kernel.
#[kernel]
pub unsafe fn ag_push(
    a_shard: SymPtr<bf16>,
    a_full: SymPtr<bf16>,
    sig: SymPtr<u64>,
    m_loc: u32,
    k: u32,
    epoch: u64,
) {
    let items = (block_idx_x() as usize, grid_dim_x() as usize);
    // SAFETY: the host's buffers (see the crate docs).
    unsafe {
        push(
            a_shard,
            a_full,
            sig,
            m_loc as usize,
            k as usize,
            epoch,
            items,
            true,
        )
    };
}

/// A fused kernel's push: blocks `0..pushers` (at least one, at most the
/// grid) push this PE's panels to every other PE, before any block waits.
///
/// # Safety
/// As [`ag_push`].
#[inline(always)]
unsafe fn push_first(
    a_shard: SymPtr<bf16>,
    a_full: SymPtr<bf16>,
    sig: SymPtr<u64>,
    m_loc: usize,
    k: usize,
    epoch: u64,
    pushers: u32,
) {
    // Every push item must have a block: never more pushers than blocks.
    let pushers = pushers.clamp(1, grid_dim_x());
    if block_idx_x() < pushers {
        let items = (block_idx_x() as usize, pushers as usize);
        // SAFETY: the caller's buffers.
        unsafe { push(a_shard, a_full, sig, m_loc, k, epoch, items, false) };
    }
}

/// The `j`-th tile of this block in a fused kernel's order: `(shard, panel,
/// column tile)`, shards `me, me-1, me-2, ...`, `None` past the end.
#[inline(always)]
fn fused_tile(j: usize, m_loc: usize, n_tiles: usize) -> Option<(usize, usize, usize)> {
    let (me, np) = (my_pe().index() as usize, n_pes() as usize);
    let panels = m_loc / PANEL;
    let t = block_idx_x() as usize + j * grid_dim_x() as usize;
    let per_shard = panels * n_tiles;
    if n_tiles == 0 || t >= np * per_shard {
        return None;
    }
    let shard = (me + np - t / per_shard) % np;
    Some((shard, (t % per_shard) / n_tiles, t % n_tiles))
}

/// Waits (this thread) until panel `panel` of shard `shard` has arrived in
/// this launch (`epoch`).
#[inline(always)]
unsafe fn wait_panel(sig: SymPtr<u64>, shard: usize, panel: usize, panels: usize, epoch: u64) {
    // SAFETY: sig holds n_pes · panels words.
    unsafe { signal_wait_until(sig.add(shard * panels + panel), Cmp::Ge, epoch) };
}

/// Fused all-gather + GEMM with `mma.sync` (see the crate docs). `b` is
/// `n × k`, `c` `M × n` bf16; `m_loc` a multiple of 128, `n` of 128, `k` of 32.
///
/// # Safety
/// As [`ag_push`] for the shared arguments, with `epoch` above every earlier
/// launch's; `b` and `c` hold `n × k` and `M × n` bf16, 16-byte aligned; the
/// launch has 128 threads and `sm80::SMEM_BYTES` of dynamic shared memory,
/// and every PE's first `pushers` blocks get to run (see Progress above).
#[kernel(max_threads = 128)]
pub unsafe fn ag_gemm_mma_fused(
    a_shard: SymPtr<bf16>,
    a_full: SymPtr<bf16>,
    sig: SymPtr<u64>,
    b: *const bf16,
    c: *mut bf16,
    m_loc: u32,
    n: u32,
    k: u32,
    epoch: u64,
    pushers: u32,
) {
    let (m_loc, n, k) = (m_loc as usize, n as usize, k as usize);
    let me = my_pe().index() as usize;
    let panels = m_loc / PANEL;
    // SAFETY: the host's buffers.
    unsafe { push_first(a_shard, a_full, sig, m_loc, k, epoch, pushers) };
    let ring = shared::dynamic_base();
    let smem = SharedAddr::from_ptr(ring);
    let mut j = 0;
    while let Some((shard, panel, nt)) = fused_tile(j, m_loc, n / sm80::BN) {
        j += 1;
        let a = if shard == me {
            // SAFETY: inside this PE's shard.
            unsafe { a_shard.as_ptr().add(panel * PANEL * k) }
        } else {
            if thread_idx_x() == 0 {
                // SAFETY: the host's signal array.
                unsafe { wait_panel(sig, shard, panel, panels, epoch) };
            }
            // Thread 0's acquire, then the barrier: every thread reads after it.
            sync_threads();
            // SAFETY: inside a_full.
            unsafe { a_full.as_ptr().add((shard * m_loc + panel * PANEL) * k) }
        };
        let (m0, n0) = (shard * m_loc + panel * PANEL, nt * sm80::BN);
        // SAFETY: a whole tile of A and B; the launch's shared memory.
        let acc = unsafe { sm80::mainloop(a, k, b.add(n0 * k), k, k, smem) };
        // `gemm_bf16_mma`'s staged epilogue (16-byte stores through the
        // ring), then a barrier before the next tile's mainloop refills it.
        // SAFETY: the tile is inside C (`n` and `n0` multiples of 128); the
        // ring the mainloop used, every thread here.
        unsafe { sm80::store_bf16_staged_tile(&acc, c, n, (m0, n0), ring) };
    }
}

#[cfg(feature = "sm90a")]
mod hopper {
    use super::*;
    use nvshmem_device::tma::{self, TensorMap};
    use tc_gemm_tiles::sm90;

    /// Fused all-gather + GEMM with `wgmma` + TMA (see the crate docs).
    /// `a_local_map` is this PE's `a_shard` (`m_loc × k`), `a_full_map` its
    /// `a_full` (`M × k`), both with box 64 × 128; `b_map` is B (`n × k`, box
    /// 64 × 256); all bf16, 128-byte swizzle. `m_loc` a multiple of 128, `n`
    /// of 256, `k` of 64.
    ///
    /// # Safety
    /// As [`ag_gemm_mma_fused`], with the three maps TMA descriptors (in
    /// device memory) of the buffers above; the launch has 384 threads and
    /// `sm90::SMEM_BYTES` of dynamic shared memory, and runs on sm_90a.
    #[kernel(max_threads = 384)]
    pub unsafe fn ag_gemm_wgmma_fused(
        a_shard: SymPtr<bf16>,
        a_full: SymPtr<bf16>,
        sig: SymPtr<u64>,
        a_local_map: *const TensorMap,
        a_full_map: *const TensorMap,
        b_map: *const TensorMap,
        c: *mut bf16,
        m_loc: u32,
        n: u32,
        k: u32,
        epoch: u64,
        pushers: u32,
    ) {
        let (m_loc, n, k) = (m_loc as usize, n as usize, k as usize);
        let me = my_pe().index() as usize;
        let panels = m_loc / PANEL;
        // SAFETY: the host's buffers.
        unsafe { push_first(a_shard, a_full, sig, m_loc, k, epoch, pushers) };
        let schedule = |j: usize| {
            let (shard, panel, nt) = fused_tile(j, m_loc, n / sm90::BN)?;
            let m0 = shard * m_loc + panel * PANEL;
            let (a_map, a_row) = if shard == me {
                (a_local_map, panel * PANEL)
            } else {
                (a_full_map, m0)
            };
            Some(sm90::Tile {
                a_map,
                a_row,
                m0,
                n0: nt * sm90::BN,
                user: 0,
            })
        };
        let ready = |t: &sm90::Tile| {
            let shard = t.m0 / m_loc;
            if shard != me {
                // SAFETY: the host's signal array.
                unsafe { wait_panel(sig, shard, (t.m0 % m_loc) / PANEL, panels, epoch) };
                // The panel was written by (remote) generic stores; TMA reads
                // through the async proxy.
                tma::fence_proxy_async_global();
            }
        };
        // SAFETY: the host's maps, sizes and launch.
        unsafe {
            sm90::run(
                [a_local_map, a_full_map],
                b_map,
                k,
                schedule,
                ready,
                sm90::Bf16Out { c, ldc: n },
            )
        };
    }
}
#[cfg(feature = "sm90a")]
pub use hopper::*;
