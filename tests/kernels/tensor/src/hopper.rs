//! The sm_90a kernels: TMA + mbarrier, and one `wgmma` tile per shape.

use super::{STALE, smem};
use nvshmem_device::cp_async::SharedAddr;
use nvshmem_device::half::bf16;
use nvshmem_device::kernel;
use nvshmem_device::thread::{block_dim_x, sync_threads, thread_idx_x};
use nvshmem_device::tma::{self, TensorMap};
use nvshmem_device::wgmma::{self, Accum, KMajor, M64, MatDesc, Swizzle};

/// The first 1024-byte aligned address of the dynamic shared memory (launch
/// with 1024 bytes of slack), as a pointer and a shared-window address.
#[inline(always)]
fn smem_1k() -> (*mut u8, SharedAddr) {
    let p = smem();
    let a = SharedAddr::from_ptr(p);
    let pad = (1024 - a.0 % 1024) % 1024;
    // SAFETY: the launch has the slack.
    (unsafe { p.add(pad as usize) }, a.add(pad))
}

/// One TMA load: the box of `map` at (`x`, `y`) into shared memory through an
/// mbarrier transaction, then its `box_bytes` raw bytes (in the map's
/// swizzle) to `out`. 128 threads; shared memory `box_bytes + 1024 + 16`.
/// The tile holds [`STALE`] first, so zero fill that did not happen shows.
#[kernel]
pub unsafe fn tma_load_box(map: *const TensorMap, x: i32, y: i32, box_bytes: u32, out: *mut u8) {
    let (tile, tile_addr) = smem_1k();
    let bar = tile_addr.add(box_bytes.next_multiple_of(16));
    let t = thread_idx_x();
    let mut i = t as usize;
    while i < box_bytes as usize {
        // SAFETY: the tile holds `box_bytes`.
        unsafe { *tile.add(i) = STALE };
        i += block_dim_x() as usize;
    }
    // The generic proxy's stores before the TMA's (async proxy) writes.
    tma::fence_proxy_async_shared_cta();
    if t == 0 {
        // SAFETY: an 8-byte aligned word after the tile.
        unsafe { tma::mbarrier_init(bar, 1) };
        tma::fence_mbarrier_init();
    }
    sync_threads();
    if t < 32 && tma::elect_one_sync() {
        // SAFETY: the host's map in global memory; the tile and barrier above.
        unsafe {
            tma::fence_proxy_tensormap_acquire(map);
            tma::prefetch_tensormap(map);
            tma::mbarrier_arrive_expect_tx(bar, box_bytes);
            tma::load_2d(tile_addr, map, x, y, bar);
        }
    }
    // SAFETY: the barrier initialized above; phase 0 completes with the bytes.
    unsafe { tma::mbarrier_wait_parity(bar, 0) };
    let mut i = t as usize;
    while i < box_bytes as usize {
        // SAFETY: the tile and `out` hold `box_bytes`.
        unsafe { *out.add(i) = *tile.add(i) };
        i += block_dim_x() as usize;
    }
    sync_threads();
    if t == 0 {
        // SAFETY: nobody uses the barrier any more.
        unsafe { tma::mbarrier_inval(bar) };
    }
}

/// One TMA store: `box_bytes` raw bytes of `src` (already in the map's
/// swizzle) into shared memory, then to the box of `map` at (`x`, `y`).
/// 128 threads; shared memory `box_bytes + 1024`.
#[kernel]
pub unsafe fn tma_store_box(map: *const TensorMap, x: i32, y: i32, box_bytes: u32, src: *const u8) {
    let (tile, tile_addr) = smem_1k();
    let t = thread_idx_x();
    let mut i = t as usize;
    while i < box_bytes as usize {
        // SAFETY: the tile and `src` hold `box_bytes`.
        unsafe { *tile.add(i) = *src.add(i) };
        i += block_dim_x() as usize;
    }
    tma::fence_proxy_async_shared_cta();
    sync_threads();
    if t == 0 {
        // SAFETY: the host's map; the tile written and fenced above.
        unsafe {
            tma::fence_proxy_tensormap_acquire(map);
            tma::store_2d(map, x, y, tile_addr);
        }
        tma::bulk_commit_group();
        tma::bulk_wait_group_read::<0>();
        tma::bulk_wait_group::<0>();
    }
}

/// Byte offset of element (`row`, `k`) of a K-major tile with 64 columns
/// (128-byte rows): 128-byte swizzle (`swizzled`) or the interleaved core
/// matrices of 8 rows × 16 bytes (LBO 128 between k-chunks, SBO 1024 between
/// 8-row groups).
#[inline(always)]
fn k_major_offset(row: usize, k: usize, swizzled: bool) -> usize {
    if swizzled {
        row * 128 + (((k / 8) ^ (row % 8)) * 16) + (k % 8) * 2
    } else {
        (row / 8) * 1024 + (k / 8) * 128 + (row % 8) * 16 + (k % 8) * 2
    }
}

/// One `64 × N × 64` product on one warpgroup: 4 `wgmma.mma_async` k16 steps.
/// `a` is 64 × 64 (row-major), `b` is N × 64 (K-major: B stored as `N × K`),
/// `out` 64 × N f32 (row-major) = `a · bᵀ`. `swizzle` 1 stages both in the
/// 128-byte swizzle, 0 in interleaved core matrices. 128 threads; shared
/// memory `(64 + N) · 128 + 1024` bytes.
macro_rules! wgmma_kernel {
    ($($name:ident: $n:literal;)*) => {$(
        #[kernel]
        pub unsafe fn $name(a: *const bf16, b: *const bf16, out: *mut f32, swizzle: u32) {
            let (tile, tile_addr) = smem_1k();
            let sw = swizzle != 0;
            let t = thread_idx_x() as usize;
            let b_off = 64 * 128;
            for i in (t..64 * 64).step_by(128) {
                // SAFETY: 64 × 64 in, inside the A tile.
                unsafe { *tile.add(k_major_offset(i / 64, i % 64, sw)).cast::<bf16>() = *a.add(i) };
            }
            for i in (t..$n * 64).step_by(128) {
                // SAFETY: N × 64 in, inside the B tile.
                unsafe { *tile.add(b_off + k_major_offset(i / 64, i % 64, sw)).cast::<bf16>() = *b.add(i) };
            }
            // Generic-proxy stores, read by wgmma through the async proxy.
            tma::fence_proxy_async_shared_cta();
            sync_threads();
            let (da, db) = if sw {
                (
                    MatDesc::<bf16, KMajor>::k_major_sw128(tile_addr),
                    MatDesc::<bf16, KMajor>::k_major_sw128(tile_addr.add(b_off as u32)),
                )
            } else {
                (
                    MatDesc::<bf16, KMajor>::new(tile_addr, 128, 1024, Swizzle::None),
                    MatDesc::<bf16, KMajor>::new(tile_addr.add(b_off as u32), 128, 1024, Swizzle::None),
                )
            };
            // A k16 step is 32 bytes along a swizzled row, two core matrices otherwise.
            let step = if sw { 32 } else { 256 };
            let mut acc = Accum::<M64<$n>>::zero();
            // SAFETY: the block is one warpgroup (128 threads), all of which reach
            // this line together (`sw` is a kernel argument, the loops above end).
            unsafe { wgmma::fence() };
            for s in 0..4u32 {
                // SAFETY: the tiles above, fenced; the whole warpgroup.
                unsafe { wgmma::mma_async(&mut acc, da.advance(s * step), db.advance(s * step), s > 0) };
            }
            // SAFETY: as for `fence`, the whole warpgroup together.
            unsafe {
                wgmma::commit_group();
                wgmma::wait_group::<0>();
            }
            wgmma::fence_operand(&mut acc);
            acc.for_each(t as u32, |r, c, v| unsafe { *out.add(r * $n + c) = v });
        }
    )*};
}

wgmma_kernel! {
    wgmma_m64n8k16: 8;
    wgmma_m64n16k16: 16;
    wgmma_m64n64k16: 64;
    wgmma_m64n128k16: 128;
    wgmma_m64n256k16: 256;
}
