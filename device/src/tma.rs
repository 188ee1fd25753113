//! Hopper's Tensor Memory Accelerator and the barriers around it (sm_90):
//! `mbarrier` transaction barriers, 2-D tensor copies global ↔ shared
//! (`cp.async.bulk.tensor`), the proxy fences that order them against
//! ordinary loads and stores, and `elect.sync`.
//!
//! # Tensor maps
//! A TMA copy is described by a [`TensorMap`] (CUDA's 128-byte `CUtensorMap`)
//! that the host encodes with `cuTensorMapEncodeTiled`
//! (`nvshmem_host::tensor_map`). CUDA C++ passes it as a
//! `const __grid_constant__ CUtensorMap` kernel parameter; stock rustc cannot
//! (checked with nightly-2026-05-20: a by-value `#[repr(align(64))]` kernel
//! parameter is an internal compiler error, and an `align(16)` one is copied
//! to local memory as soon as its address is taken, where TMA cannot read it).
//! So here the map lives in **global memory**: the host copies it to a device
//! buffer before the launch and the kernel takes a `*const TensorMap`. The
//! thread that issues copies first calls [`fence_proxy_tensormap_acquire`]
//! (the map was written through the generic proxy, TMA reads it through the
//! tensormap proxy) and may [`prefetch_tensormap`].
//!
//! # A pipeline stage
//! ```no_run
//! use nvshmem_device::cp_async::SharedAddr;
//! use nvshmem_device::tma::{self, TensorMap};
//! # unsafe fn f(map: *const TensorMap, tile: SharedAddr, full: SharedAddr, x: i32, y: i32) {
//! // Producer (one elected thread): expect the bytes, start the copy.
//! unsafe {
//!     tma::mbarrier_arrive_expect_tx(full, 64 * 64 * 2);
//!     tma::load_2d(tile, map, x, y, full);
//! }
//! // Consumers: wait for phase 0 of `full`, then read `tile`.
//! unsafe { tma::mbarrier_wait_parity(full, 0) };
//! # }
//! ```

use crate::cp_async::SharedAddr;

pub use nvshmem_types::TensorMap;

// --- mbarrier ---------------------------------------------------------------

device_asm! {
    /// Initializes the 8-byte shared-memory barrier at `bar` for `count`
    /// arrivals per phase, in phase 0 (`mbarrier.init.shared::cta.b64`).
    ///
    /// # Safety
    /// `bar` must be an 8-byte aligned address of this block's shared memory
    /// that nothing else uses as a barrier now; other threads may use it only
    /// after a [`fence_mbarrier_init`] and a block barrier.
    pub unsafe fn mbarrier_init(bar: SharedAddr, count: u32) =
        "mbarrier.init.shared::cta.b64 [{b}], {c};", [b = in(reg32) bar.0, c = in(reg32) count,];

    /// Arrives once at `bar` (`mbarrier.arrive.shared::cta.b64`, release at CTA scope).
    ///
    /// # Safety
    /// `bar` must be an initialized barrier of this block's shared memory
    /// whose current phase still expects an arrival.
    pub unsafe fn mbarrier_arrive(bar: SharedAddr) =
        "{{ .reg .b64 st; mbarrier.arrive.shared::cta.b64 st, [{b}]; }}", [b = in(reg32) bar.0,];

    /// Arrives once at `bar` and adds `bytes` to the transaction count the
    /// current phase waits for (`mbarrier.arrive.expect_tx.shared::cta.b64`):
    /// the producer's call before its TMA copies, which complete those bytes.
    ///
    /// # Safety
    /// As [`mbarrier_arrive`]; exactly `bytes` must then arrive through
    /// copies that signal `bar` (or the phase never completes).
    pub unsafe fn mbarrier_arrive_expect_tx(bar: SharedAddr, bytes: u32) =
        "mbarrier.arrive.expect_tx.shared::cta.b64 _, [{b}], {n};", [b = in(reg32) bar.0, n = in(reg32) bytes,];

    /// Adds `bytes` to the transaction count of `bar`'s current phase without
    /// arriving (`mbarrier.expect_tx.relaxed.cta.shared::cta.b64`).
    ///
    /// # Safety
    /// As [`mbarrier_arrive_expect_tx`].
    pub unsafe fn mbarrier_expect_tx(bar: SharedAddr, bytes: u32) =
        "mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [{b}], {n};", [b = in(reg32) bar.0, n = in(reg32) bytes,];

    /// Makes `bar` arrive once when all of this thread's earlier `cp.async`
    /// copies have completed, without counting as an arrival now
    /// (`cp.async.mbarrier.arrive.noinc.shared::cta.b64`, sm_80+): the
    /// `cp.async` counterpart of a TMA's `complete_tx`.
    ///
    /// # Safety
    /// As [`mbarrier_arrive`] (the arrival count must include this thread).
    pub unsafe fn cp_async_mbarrier_arrive(bar: SharedAddr) =
        "cp.async.mbarrier.arrive.noinc.shared::cta.b64 [{b}];", [b = in(reg32) bar.0,];

    /// Invalidates `bar` so that its memory can be reused for other data
    /// (`mbarrier.inval.shared::cta.b64`).
    ///
    /// # Safety
    /// `bar` must be an initialized barrier that no thread waits on or
    /// arrives at any more, and no copy signals.
    pub unsafe fn mbarrier_inval(bar: SharedAddr) =
        "mbarrier.inval.shared::cta.b64 [{b}];", [b = in(reg32) bar.0,];
}

/// Whether the phase of `bar` with parity `parity` (0 or 1) has completed
/// (`mbarrier.try_wait.parity.shared::cta.b64`, acquire at CTA scope). The
/// hardware may suspend the thread a while before answering `false`.
///
/// # Safety
/// `bar` must be an initialized barrier of this block's shared memory.
#[inline(always)]
pub unsafe fn mbarrier_try_wait_parity(bar: SharedAddr, parity: u32) -> bool {
    #[cfg(target_arch = "nvptx64")]
    {
        let done: u32;
        // SAFETY: the caller's contract.
        unsafe {
            core::arch::asm!(
                "{{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [{b}], {ph}; selp.u32 {d}, 1, 0, p; }}",
                b = in(reg32) bar.0,
                ph = in(reg32) parity,
                d = out(reg32) done,
                options(nostack)
            )
        };
        done != 0
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let _ = (bar, parity);
        crate::device_only()
    }
}

/// Waits until the phase of `bar` with parity `parity` has completed (a loop
/// of [`mbarrier_try_wait_parity`]). A pipeline's consumer waits for phase
/// `(iteration / stages) % 2` of each stage's "full" barrier.
///
/// # Safety
/// As [`mbarrier_try_wait_parity`].
#[inline(always)]
pub unsafe fn mbarrier_wait_parity(bar: SharedAddr, parity: u32) {
    // SAFETY: the caller's contract.
    while !unsafe { mbarrier_try_wait_parity(bar, parity) } {}
}

device_asm! {
    /// Makes barrier initializations visible to other threads and to the
    /// async proxy (TMA) before they use the barriers
    /// (`fence.mbarrier_init.release.cluster`); follow it with a block barrier.
    pub fn fence_mbarrier_init() = "fence.mbarrier_init.release.cluster;";
}

// --- proxy fences -------------------------------------------------------------

device_asm! {
    /// Orders this thread's generic-proxy accesses (ordinary loads/stores)
    /// against async-proxy ones (TMA, `wgmma` operand reads) in every state
    /// space (`fence.proxy.async`).
    pub fn fence_proxy_async() = "fence.proxy.async;";

    /// [`fence_proxy_async`] for shared memory only
    /// (`fence.proxy.async.shared::cta`): after writing shared memory with
    /// ordinary stores that a TMA store or `wgmma` will read.
    pub fn fence_proxy_async_shared_cta() = "fence.proxy.async.shared::cta;";

    /// [`fence_proxy_async`] for global memory only (`fence.proxy.async.global`):
    /// after observing data that other threads or PEs wrote with ordinary
    /// stores (an NVSHMEM put, acquired through its signal) and before TMA
    /// reads it.
    pub fn fence_proxy_async_global() = "fence.proxy.async.global;";

    /// Makes the tensor map at `map`, written by the host (or any generic
    /// store) before the launch, visible to this thread's TMA copies
    /// (`fence.proxy.tensormap::generic.acquire.sys [map], 128`, PTX 8.3).
    ///
    /// # Safety
    /// `map` must point to a 64-byte aligned [`TensorMap`] in global memory
    /// (the host's `tensor_map` module allocates it 128-byte aligned).
    pub unsafe fn fence_proxy_tensormap_acquire(map: *const TensorMap) =
        "fence.proxy.tensormap::generic.acquire.sys [{m}], 128;", [m = in(reg64) map as u64,];

    /// Prefetches the tensor map at `map` into the TMA unit's cache
    /// (`prefetch.tensormap`).
    ///
    /// # Safety
    /// As [`fence_proxy_tensormap_acquire`].
    pub unsafe fn prefetch_tensormap(map: *const TensorMap) =
        "prefetch.tensormap [{m}];", [m = in(reg64) map as u64,];
}

// --- TMA copies ---------------------------------------------------------------

device_asm! {
    /// Starts a 2-D tile copy global → shared: the box of `map` at element
    /// coordinates (`x` innermost, `y`) into shared memory at `dst`, in the
    /// map's swizzle; its bytes complete a transaction of barrier `bar`
    /// (`cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes`).
    /// Out-of-bounds elements are filled with zeros.
    ///
    /// # Safety
    /// `map` as in [`fence_proxy_tensormap_acquire`] (fenced by this thread),
    /// describing memory that is readable and not written during the copy;
    /// `dst` a shared-memory address of this block with room for the box,
    /// aligned to 128 bytes (1024 for a 128-byte swizzle), not accessed until
    /// the barrier phase completes; `bar` an initialized barrier whose phase
    /// expects these bytes.
    pub unsafe fn load_2d(dst: SharedAddr, map: *const TensorMap, x: i32, y: i32, bar: SharedAddr) =
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{m}, {{{x}, {y}}}], [{b}];",
        [d = in(reg32) dst.0, m = in(reg64) map as u64, x = in(reg32) x, y = in(reg32) y, b = in(reg32) bar.0,];

    /// Starts a 2-D tile copy shared → global: the map's box from `src` to
    /// element coordinates (`x`, `y`), out-of-bounds elements skipped
    /// (`cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group`). Close
    /// the group with [`bulk_commit_group`] and wait with
    /// [`bulk_wait_group_read`] before reusing `src`.
    ///
    /// # Safety
    /// `map` as in [`load_2d`], describing writable memory nothing else
    /// accesses during the copy; `src` 128-byte aligned shared memory
    /// holding the box in the map's swizzle, written before a
    /// [`fence_proxy_async_shared_cta`].
    pub unsafe fn store_2d(map: *const TensorMap, x: i32, y: i32, src: SharedAddr) =
        "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [{m}, {{{x}, {y}}}], [{s}];",
        [m = in(reg64) map as u64, x = in(reg32) x, y = in(reg32) y, s = in(reg32) src.0,];

    /// Closes the group of this thread's bulk (TMA store) copies
    /// (`cp.async.bulk.commit_group`).
    pub fn bulk_commit_group() = "cp.async.bulk.commit_group;";

    /// Waits until at most `N` of this thread's bulk copy groups still read
    /// their shared-memory source (`cp.async.bulk.wait_group.read N`).
    pub fn bulk_wait_group_read<const N: u32>() = "cp.async.bulk.wait_group.read {n};", [n = const N,];

    /// Waits until at most `N` of this thread's bulk copy groups are incomplete
    /// (their writes done: `cp.async.bulk.wait_group N`).
    pub fn bulk_wait_group<const N: u32>() = "cp.async.bulk.wait_group {n};", [n = const N,];
}

/// Elects one lane of the active ones of the warp (`elect.sync _|p, 0xffffffff`):
/// `true` in exactly one lane. All 32 lanes must call it together.
#[inline(always)]
pub fn elect_one_sync() -> bool {
    // SAFETY: a warp vote, no memory access; LLVM's intrinsic is
    // convergent, so it stays where all 32 lanes reach it.
    unsafe { crate::nvvm::elect_sync(u32::MAX) }.1
}
