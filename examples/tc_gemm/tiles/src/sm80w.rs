//! A wider `mma.sync` mainloop (sm_80+): one 128 × 256 tile of `C = A · Bᵀ`
//! per block of [`THREADS`] = 256 threads, 64 of K per stage.
//!
//! - Warps: 2 (M) × 4 (N), each a 64 × 64 sub-tile as in [`sm80`]
//!   (its [`Acc`]: 128 f32 registers per thread).
//! - Shared memory: [`STAGES`] stages of an A tile (128 × 64 bf16) and a B
//!   tile (256 × 64), 128-byte rows whose eight 16-byte chunks are XORed with
//!   `row % 8`: each 8-lane phase of `ldmatrix` reads eight consecutive rows
//!   of one chunk column, and of a `cp.async` writes one whole row, both in
//!   eight distinct bank groups. [`SMEM_BYTES`] (192 KiB) in all: one block
//!   per SM.
//! - Pipeline: as `sm80`'s (`cp.async.cg`, stage `kt + STAGES - 1` loading
//!   while `kt` computes), with the fragments of the next k16 step loaded
//!   from shared memory before the MMAs of the current one.
//!
//! Against `sm80`'s 128 × 128 × 32 tile, per FLOP: a quarter fewer bytes from
//! L2 and into shared memory (`(BM + BN) / (BM · BN)`), and half as many
//! block barriers per MMA (one per 64 of K instead of 32).

use crate::sm80::{self, Acc, Frags};
use nvshmem_device::cp_async::{self, SharedAddr};
use nvshmem_device::half::bf16;
use nvshmem_device::mma::{FragA, FragB, FragC, M16N8K16};
use nvshmem_device::thread::{lane_id, thread_idx_x};

/// Rows of A (and C) per tile.
pub const BM: usize = 128;
/// Rows of B (columns of C) per tile.
pub const BN: usize = 256;
/// K per pipeline stage: one 128-byte row of bf16.
pub const BK: usize = 64;
/// Pipeline depth.
pub const STAGES: usize = 4;
/// Threads per block: 8 warps.
pub const THREADS: u32 = 256;
/// Bytes of one stage's A tile.
const A_BYTES: u32 = (BM * BK * 2) as u32;
/// Bytes of one stage: the A tile then the B tile.
const STAGE_BYTES: u32 = ((BM + BN) * BK * 2) as u32;
/// Dynamic shared memory the kernels need.
pub const SMEM_BYTES: u32 = STAGES as u32 * STAGE_BYTES;

/// Byte offset of 16-byte chunk `chunk` (0..8) of row `row` in a swizzled
/// 128-byte-row tile.
#[inline(always)]
const fn swz(row: u32, chunk: u32) -> u32 {
    row * 128 + ((chunk ^ (row & 7)) << 4)
}

/// Issues this thread's `cp.async` copies of `ROWS` rows of K-stage `kt`
/// (eight 16-byte chunks a row) from `src` (row stride `ld`) into `dst`.
///
/// # Safety
/// As [`mainloop`], for the operand.
#[inline(always)]
unsafe fn load_rows<const ROWS: u32>(src: *const bf16, ld: usize, dst: SharedAddr, kt: usize) {
    let tid = thread_idx_x();
    for i in 0..ROWS * 8 / THREADS {
        let id = tid + THREADS * i;
        let (row, chunk) = (id / 8, id % 8);
        let col = kt * BK + chunk as usize * 8;
        // SAFETY: inside the tile's rows and K (the caller's contract); 16-byte aligned.
        unsafe {
            cp_async::cg16(
                dst.add(swz(row, chunk)),
                src.add(row as usize * ld + col).cast(),
            )
        };
    }
}

/// Loads this warp's fragments of k16 step `kk` (0..4) from a stage's A and
/// B tiles; the warp's sub-tile starts at row `wm · 64` of A and `wn · 64`
/// of B.
///
/// # Safety
/// The stage is in shared memory (the pipeline's contract).
#[inline(always)]
unsafe fn load_frags(a: SharedAddr, b: SharedAddr, (wm, wn): (u32, u32), kk: u32) -> Frags {
    let lane = lane_id();
    let mut fa = [FragA::<bf16, M16N8K16>::zero(); 4];
    let mut fb = [FragB::<bf16, M16N8K16>::zero(); 8];
    unroll!(mi in [0 1 2 3] {
        let row = wm * 64 + mi as u32 * 16 + lane % 16;
        // SAFETY: the caller's contract.
        fa[mi] = unsafe { FragA::<bf16, M16N8K16>::ldmatrix(a.add(swz(row, kk * 2 + lane / 16))) };
    });
    unroll!(nj in [0 1 2 3] {
        let row = wn * 64 + nj as u32 * 16 + lane % 8 + 8 * (lane / 16);
        // SAFETY: the caller's contract.
        let pair = unsafe {
            FragB::<bf16, M16N8K16>::ldmatrix_pair(b.add(swz(row, kk * 2 + (lane / 8) % 2)))
        };
        fb[2 * nj] = pair[0];
        fb[2 * nj + 1] = pair[1];
    });
    (fa, fb)
}

/// Computes one K-stage from ring slot `slot` into `acc` (this warp's 64 × 64).
///
/// # Safety
/// The stage is in its slot (the pipeline's contract); all the block's
/// threads call it.
#[inline(always)]
unsafe fn compute_stage(acc: &mut Acc, smem: SharedAddr, slot: usize) {
    let warp = thread_idx_x() / 32;
    let w = (warp / 4, warp % 4);
    let a = smem.add(slot as u32 * STAGE_BYTES);
    let b = a.add(A_BYTES);
    // Each k16 step's fragments are loaded one step ahead: their latency
    // hides behind the previous step's MMAs.
    // SAFETY: the caller's contract (the stage is there, the whole block).
    unsafe {
        let f0 = load_frags(a, b, w, 0);
        let f1 = load_frags(a, b, w, 1);
        sm80::mma_step(acc, &f0);
        let f2 = load_frags(a, b, w, 2);
        sm80::mma_step(acc, &f1);
        let f3 = load_frags(a, b, w, 3);
        sm80::mma_step(acc, &f2);
        sm80::mma_step(acc, &f3);
    }
}

/// [`sm80::mainloop`] for this module's 128 × 256 tile: [`BM`] rows at `a`,
/// [`BN`] at `b`; [`THREADS`] threads call it; pass the result to
/// [`epilogue`].
///
/// # Safety
/// As [`sm80::mainloop`], with [`BN`] rows of B, `k` a multiple of [`BK`],
/// [`THREADS`] threads and [`SMEM_BYTES`] at `smem` (192 KiB: more than
/// sm_86/89 and A100 give a block; Hopper gives 227 KiB).
#[inline(always)]
pub unsafe fn mainloop(
    a: *const bf16,
    lda: usize,
    b: *const bf16,
    ldb: usize,
    k: usize,
    smem: SharedAddr,
) -> Acc {
    let mut acc = [[FragC::<f32, M16N8K16>::zero(); 8]; 4];
    sm80::pipeline::<STAGES, { STAGES as u32 - 2 }>(
        k / BK,
        |slot, kt| {
            let base = smem.add(slot as u32 * STAGE_BYTES);
            // SAFETY: the caller's contract.
            unsafe {
                load_rows::<{ BM as u32 }>(a, lda, base, kt);
                load_rows::<{ BN as u32 }>(b, ldb, base.add(A_BYTES), kt);
            }
        },
        // SAFETY: the stage is in its slot; every thread calls the pipeline.
        |slot| unsafe { compute_stage(&mut acc, smem, slot) },
    );
    acc
}

/// Hands this warp's accumulators to `store(row, col, v0, v1)`: the values
/// at (`row`, `col`) and (`row`, `col + 1`) of the 128 × 256 tile.
#[inline(always)]
pub fn epilogue(acc: &Acc, store: impl FnMut(usize, usize, f32, f32)) {
    let warp = (thread_idx_x() / 32) as usize;
    sm80::warp_epilogue(acc, ((warp / 4) * 64, (warp % 4) * 64), store);
}

/// The [`epilogue`] that writes the tile in bf16 to the row-major `c` (row
/// stride `ldc` elements), the tile's element (0, 0) at `c[m0][n0]`, a
/// 4-byte pair per store.
///
/// # Safety
/// `c` holds the 128 × 256 tile at (`m0`, `n0`), 4-byte aligned (`ldc` and
/// `n0` even).
#[inline(always)]
pub unsafe fn store_bf16(acc: &Acc, c: *mut bf16, ldc: usize, (m0, n0): (usize, usize)) {
    // SAFETY: the caller's contract.
    epilogue(acc, unsafe { sm80::bf16_pairs(c, ldc, (m0, n0)) });
}

/// This module's 128 × 256 block tile as an [`MmaTile`](crate::MmaTile).
#[derive(Clone, Copy, Debug)]
pub struct Block;
mma_tile!();
