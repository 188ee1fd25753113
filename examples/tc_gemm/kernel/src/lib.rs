//! Standalone bf16 tensor-core GEMMs, `C = A · Bᵀ` (A `M × K`, B `N × K`, C
//! `M × N`, all row-major, C in bf16, f32 accumulation): what the benchmark
//! times against cuBLAS and the GPU tests check.
//!
//! | Kernel | Launch |
//! |---|---|
//! | [`gemm_bf16_mma`] | grid `(N / 128, M / 128)`, 128 threads, `tc_gemm_tiles::sm80::SMEM_BYTES` |
//! | [`gemm_bf16_mma_v2`] | 1-D grid of `(M / 128) · (N / 128)`, 128 threads, `sm80::SMEM_BYTES` |
//! | [`gemm_bf16_mma_v3`] | 1-D grid of `(M / 128) · (N / 256)`, 256 threads, `sm80w::SMEM_BYTES` |
//! | `gemm_bf16_wgmma` (feature `sm90a`) | any 1-D grid (persistent; one block per SM), 384 threads, `tc_gemm_tiles::sm90::SMEM_BYTES` |
//! | `gemm_bf16_wgmma_v2` (feature `sm90a`) | as `gemm_bf16_wgmma` |
//!
//! The `_v2`/`_v3` kernels are candidates beside the first ones, which they
//! leave as they are: `mma_v2` is `mma` with its tiles in grouped order
//! (`tc_gemm_tiles::raster`), `mma_v3` the wider `sm80w` tile in grouped
//! order, `wgmma_v2` `wgmma` with its persistent walk in grouped order.
//! Their `group` argument is the band height in tile rows.
#![no_std]

use nvshmem_device::cp_async::SharedAddr;
use nvshmem_device::half::bf16;
use nvshmem_device::thread::block_idx_x;
use nvshmem_device::{kernel, shared};
use tc_gemm_tiles::{MmaTile, raster, sm80, sm80w};

nvshmem_device::panic_handler!();

/// `C = A · Bᵀ` with `mma.sync`, one 128 × 128 tile per block. `M`, `N`
/// multiples of 128, `k` of 32.
///
/// # Safety
/// `a`, `b` and `c` hold `M × k`, `N × k` and `M × n` bf16 (`M`, `N` the
/// grid's `y` and `x` times 128), 16-byte aligned, with `n = N`; the launch
/// has 128 threads and `sm80::SMEM_BYTES` of dynamic shared memory.
#[kernel(max_threads = 128)]
pub unsafe fn gemm_bf16_mma(a: *const bf16, b: *const bf16, c: *mut bf16, n: u32, k: u32) {
    let (n, k) = (n as usize, k as usize);
    let at = sm80::grid_tile();
    // SAFETY: the grid covers M × N in whole tiles (the host checks the sizes).
    let acc = unsafe { sm80::tile(a, b, k, at) };
    // SAFETY: the tile is inside C.
    unsafe { sm80::store_bf16(&acc, c, n, at) };
}

/// [`gemm_bf16_mma`] with its tiles in grouped order: block `t` of a 1-D
/// grid computes tile `raster::grouped(t, m / 128, n / 128, group)`, so the
/// blocks resident together read `group` A panels and about `W / group` B
/// panels (`W` blocks), not one A panel and `W` B panels. `m`, `n`
/// multiples of 128, `k` of 32.
///
/// # Safety
/// `a`, `b` and `c` hold `m × k`, `n × k` and `m × n` bf16, 16-byte aligned;
/// the grid has at most `(m / 128) · (n / 128)` blocks of 128 threads and
/// `sm80::SMEM_BYTES` of dynamic shared memory.
#[kernel(max_threads = 128)]
pub unsafe fn gemm_bf16_mma_v2(
    a: *const bf16,
    b: *const bf16,
    c: *mut bf16,
    m: u32,
    n: u32,
    k: u32,
    group: u32,
) {
    // SAFETY: the caller's contract.
    unsafe { grouped_mma::<sm80::Block>(a, b, c, (m, n, k), group) };
}

/// `C = A · Bᵀ` with `mma.sync` on the wider `sm80w` tile (128 × 256, 8
/// warps, 64 of K per stage), tiles in grouped order as in
/// [`gemm_bf16_mma_v2`]. `m` a multiple of 128, `n` of 256, `k` of 64.
///
/// # Safety
/// `a`, `b` and `c` hold `m × k`, `n × k` and `m × n` bf16, 16-byte aligned;
/// the grid has at most `(m / 128) · (n / 256)` blocks of 256 threads and
/// `sm80w::SMEM_BYTES` of dynamic shared memory.
#[kernel(max_threads = 256)]
pub unsafe fn gemm_bf16_mma_v3(
    a: *const bf16,
    b: *const bf16,
    c: *mut bf16,
    m: u32,
    n: u32,
    k: u32,
    group: u32,
) {
    // SAFETY: the caller's contract.
    unsafe { grouped_mma::<sm80w::Block>(a, b, c, (m, n, k), group) };
}

/// The `mma.sync` GEMM on tile `T` with block `t` of a 1-D grid computing
/// tile `raster::grouped(t, ...)` (nothing past the last tile).
///
/// # Safety
/// As [`gemm_bf16_mma_v2`], with `T`'s tile, threads and shared memory.
#[inline(always)]
unsafe fn grouped_mma<T: MmaTile>(
    a: *const bf16,
    b: *const bf16,
    c: *mut bf16,
    (m, n, k): (u32, u32, u32),
    group: u32,
) {
    let (m, n, k) = (m as usize, n as usize, k as usize);
    let (mt, nt) = (m / T::BM, n / T::BN);
    let t = block_idx_x() as usize;
    if t >= mt * nt {
        return;
    }
    let (tm, tn) = raster::grouped(t, mt, nt, group as usize);
    let (m0, n0) = (tm * T::BM, tn * T::BN);
    // SAFETY: a whole tile inside A, B and C (the caller's sizes).
    unsafe {
        let acc = T::mainloop(
            a.add(m0 * k),
            k,
            b.add(n0 * k),
            k,
            k,
            SharedAddr::from_ptr(shared::dynamic_base()),
        );
        T::store_bf16(&acc, c, n, (m0, n0));
    }
}

#[cfg(feature = "sm90a")]
mod hopper {
    use super::*;
    use nvshmem_device::tma::TensorMap;
    use tc_gemm_tiles::sm90;

    /// `C = A · Bᵀ` with `wgmma` + TMA, persistent: block `b` computes tiles
    /// `b`, `b + grid`, ... of the `(M / 128) × (N / 256)` tiles, M-fastest.
    /// `a_map`: A (`m × k`, box 64 × 128), `b_map`: B (`n × k`, box 64 × 256),
    /// both bf16 with 128-byte swizzle. `m` a multiple of 128, `n` of 256,
    /// `k` of 64.
    ///
    /// # Safety
    /// `a_map` and `b_map` are TMA descriptors (in device memory) of A and B
    /// as above, `c` holds `m × n` bf16; the launch has 384 threads and
    /// `sm90::SMEM_BYTES` of dynamic shared memory, and runs on sm_90a.
    #[kernel(max_threads = 384)]
    pub unsafe fn gemm_bf16_wgmma(
        a_map: *const TensorMap,
        b_map: *const TensorMap,
        c: *mut bf16,
        m: u32,
        n: u32,
        k: u32,
    ) {
        let dims = (m as usize, n as usize, k as usize);
        // SAFETY: the host's maps and sizes.
        unsafe { sm90::run_m_fastest(a_map, b_map, dims, sm90::Bf16Out { c, ldc: dims.1 }) };
    }

    /// [`gemm_bf16_wgmma`] with its persistent walk in grouped order: the
    /// `j`-th tile of block `b` is `raster::grouped(b + j · grid, m / 128,
    /// n / 256, group)`, so the ~one block per SM that run together share
    /// `group` A panels and about `grid / group` B panels in L2. Same maps,
    /// sizes and launch as [`gemm_bf16_wgmma`].
    ///
    /// # Safety
    /// As [`gemm_bf16_wgmma`].
    #[kernel(max_threads = 384)]
    pub unsafe fn gemm_bf16_wgmma_v2(
        a_map: *const TensorMap,
        b_map: *const TensorMap,
        c: *mut bf16,
        m: u32,
        n: u32,
        k: u32,
        group: u32,
    ) {
        let dims = (m as usize, n as usize, k as usize);
        let out = sm90::Bf16Out { c, ldc: dims.1 };
        // SAFETY: the host's maps and sizes.
        unsafe { sm90::run_grouped(a_map, b_map, dims, group as usize, out) };
    }
}
#[cfg(feature = "sm90a")]
pub use hopper::*;
