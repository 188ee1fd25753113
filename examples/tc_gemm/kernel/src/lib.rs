//! Standalone bf16 tensor-core GEMMs, `C = A · Bᵀ` (A `M × K`, B `N × K`, C
//! `M × N`, all row-major, C in bf16, f32 accumulation): what the benchmark
//! times against cuBLAS and the GPU tests check.
//!
//! | Kernel | Launch |
//! |---|---|
//! | [`gemm_bf16_mma`] | 1-D grid of `(M / 128) · (N / 128)`, 128 threads, `tc_gemm_tiles::sm80::SMEM_BYTES` |
//! | `gemm_bf16_wgmma` (feature `sm90a`) | any 1-D grid (persistent; one block per SM), 384 threads, `tc_gemm_tiles::sm90::SMEM_BYTES` |
//! | [`mma_peak_bf16`] | any 1-D grid, at most 256 threads (whole warps), no shared memory |
//!
//! Both take their tiles in grouped order (`tc_gemm_tiles::raster`), for L2
//! reuse between the blocks that run together; their `group` argument is the
//! band height in tile rows (1: row-major order).
#![no_std]

use nvshmem_device::half::bf16;
use nvshmem_device::kernel;
use tc_gemm_tiles::sm80;

nvshmem_device::panic_handler!();

/// `C = A · Bᵀ` with `mma.sync`, one 128 × 128 tile per block, the tiles in
/// grouped order: block `t` of a 1-D grid computes tile
/// `raster::grouped(t, m / 128, n / 128, group)` (bands of `group` tile
/// rows), so the blocks resident together read `group` A panels and about
/// `W / group` B panels (`W` blocks), not one A panel and `W` B panels.
/// Blocks past the last tile do nothing. `m`, `n` multiples of 128, `k` of 32.
///
/// # Safety
/// `a`, `b` and `c` hold `m × k`, `n × k` and `m × n` bf16, 16-byte aligned;
/// the grid has at most `(m / 128) · (n / 128)` blocks of 128 threads and
/// `sm80::SMEM_BYTES` of dynamic shared memory.
#[kernel(max_threads = 128)]
pub unsafe fn gemm_bf16_mma(
    a: *const bf16,
    b: *const bf16,
    c: *mut bf16,
    m: u32,
    n: u32,
    k: u32,
    group: u32,
) {
    let dims = (m as usize, n as usize, k as usize);
    // SAFETY: the caller's sizes and launch.
    unsafe { sm80::gemm::<sm80::Base>(a, b, c, dims, group as usize) };
}

/// The GEMM benchmark's `mma.sync` candidates (issue 24): [`gemm_bf16_mma`]
/// with another `sm80::Config` each (`sm80::candidates`), the same
/// arguments; the host's `tensor::mma::CANDIDATES` gives each one's tile,
/// threads and shared memory. No `max_threads` (the builder reads it only
/// outside macros): ptxas may use up to 255 registers, which 256 threads
/// still fit.
macro_rules! mma_candidates {
    ($($(#[$doc:meta])* $name:ident: $cfg:ident;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// As [`gemm_bf16_mma`], with the configuration's tile, threads and
        /// shared memory.
        #[kernel]
        pub unsafe fn $name(
            a: *const bf16,
            b: *const bf16,
            c: *mut bf16,
            m: u32,
            n: u32,
            k: u32,
            group: u32,
        ) {
            let dims = (m as usize, n as usize, k as usize);
            // SAFETY: the caller's sizes and launch.
            unsafe { sm80::gemm::<sm80::candidates::$cfg>(a, b, c, dims, group as usize) };
        }
    )*};
}

mma_candidates! {
    /// 128 × 128, BK 64, 3 stages.
    gemm_bf16_mma_k64: K64;
    /// 128 × 128, BK 32, 4 stages, fragments prefetched one k16 step ahead.
    gemm_bf16_mma_pf: Prefetch;
    /// 128 × 128, BK 64, 3 stages, fragments prefetched.
    gemm_bf16_mma_k64_pf: K64Prefetch;
    /// 256 × 128 on 256 threads, BK 32, 4 stages.
    gemm_bf16_mma_256x128: M256;
    /// 256 × 128 on 256 threads, BK 64, 3 stages.
    gemm_bf16_mma_256x128_k64: M256K64;
    /// 128 × 256 on 256 threads, BK 32, 4 stages.
    gemm_bf16_mma_128x256: N256;
    /// 128 × 128, BK 32, 4 stages, fragments pipelined across the stage barrier.
    gemm_bf16_mma_pipe: Pipelined;
    /// 128 × 128 on 256 threads (8 warps of 64 × 32), BK 32, 4 stages.
    gemm_bf16_mma_w64x32: Warp64x32;
}

/// Independent accumulator chains per warp in [`mma_peak_bf16`]: enough
/// that the issue rate, not one `mma.sync`'s latency, bounds it.
pub const PEAK_CHAINS: usize = 8;

/// The `mma.sync` ceiling probe (issue 24): `iters` rounds of
/// [`PEAK_CHAINS`] back-to-back `mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32`
/// on register operands only, each round one `mma.sync` per independent
/// accumulator, so the GEMMs' % of it is the share of what the instruction
/// can do on this GPU. Thread `t` of the grid writes its accumulators to
/// `out[t · 4 · PEAK_CHAINS ..][.. 4 · PEAK_CHAINS]` (so nothing is
/// optimised away); one `mma.sync` is `2 · 16 · 8 · 16` FLOP per warp.
///
/// # Safety
/// `out` holds `4 · PEAK_CHAINS` f32 per thread of the grid; the block size
/// is a multiple of 32 (the instruction is `.aligned`: whole warps).
#[kernel(max_threads = 256)]
pub unsafe fn mma_peak_bf16(out: *mut f32, iters: u32) {
    use nvshmem_device::mma::{FragA, FragB, FragC, M16N8K16, mma};
    let t = nvshmem_device::thread::global_index_x();
    // Operands from the thread index: not constants the compiler could fold.
    let x = bf16::from_f32(1.0 + (t % 7) as f32 / 64.0);
    let a = FragA::<bf16, M16N8K16>::from_fn(0, |_, _| x);
    let b = FragB::<bf16, M16N8K16>::from_fn(0, |_, _| x);
    let mut acc = [FragC::<f32, M16N8K16>::zero(); PEAK_CHAINS];
    for _ in 0..iters {
        for c in acc.iter_mut() {
            // SAFETY: every lane of the warp runs the same trip count
            // (`iters` is uniform), whole warps by the caller's launch.
            *c = unsafe { mma(a, b, *c) };
        }
    }
    let base = t * 4 * PEAK_CHAINS;
    for (i, c) in acc.iter().enumerate() {
        for j in 0..4 {
            // SAFETY: the caller's `out` holds this thread's 4 · PEAK_CHAINS.
            unsafe { out.add(base + 4 * i + j).write(f32::from_bits(c.regs[j])) };
        }
    }
}

#[cfg(feature = "sm90a")]
mod hopper {
    use super::*;
    use nvshmem_device::tma::TensorMap;
    use tc_gemm_tiles::sm90;

    /// `C = A · Bᵀ` with `wgmma` + TMA, persistent, the walk in grouped
    /// order: the `j`-th tile of block `b` is `raster::grouped(b + j · grid,
    /// m / 128, n / 256, group)` (bands of `group` tile rows), so the ~one
    /// block per SM that run together share `group` A panels and about
    /// `grid / group` B panels in L2. `a_map`: A (`m × k`, box 64 × 128),
    /// `b_map`: B (`n × k`, box 64 × 256), both bf16 with 128-byte swizzle.
    /// `m` a multiple of 128, `n` of 256, `k` of 64.
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
