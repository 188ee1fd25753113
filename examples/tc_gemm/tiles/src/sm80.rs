//! The `mma.sync` mainloop (sm_80+): one 128 × 128 tile of `C = A · Bᵀ` per
//! block of [`THREADS`] threads.
//!
//! - Warps: 2 × 2, each a 64 × 64 sub-tile = 4 × 8 `m16n8k16` accumulators
//!   (128 f32 registers per thread).
//! - Shared memory: [`STAGES`] stages of an A tile (128 × 32 bf16) and a B
//!   tile (128 × 32), 64-byte rows whose four 16-byte chunks are XOR-swizzled
//!   with `(row / 2) % 4`, so that `ldmatrix`'s eight row reads and the
//!   `cp.async` writes hit distinct banks. [`SMEM_BYTES`] in all.
//! - Pipeline: stage `kt + STAGES - 1` is loaded with `cp.async.cg` (16 bytes
//!   per copy, 8 per thread per stage) while stage `kt` is computed; one
//!   `cp.async.wait_group` and one block barrier per stage.

use nvshmem_device::cp_async::{self, SharedAddr};
use nvshmem_device::half::bf16;
use nvshmem_device::math::Bf16x2;
use nvshmem_device::mma::{self, FragA, FragB, FragC, M16N8K16};
use nvshmem_device::shared;
use nvshmem_device::thread::{block_idx_x, block_idx_y, lane_id, sync_threads, thread_idx_x};

/// Rows of A (and C) per tile.
pub const BM: usize = 128;
/// Rows of B (columns of C) per tile.
pub const BN: usize = 128;
/// K per pipeline stage.
pub const BK: usize = 32;
/// Pipeline depth.
pub const STAGES: usize = 4;
/// Threads per block.
pub const THREADS: u32 = 128;
/// Bytes of one stage: the A tile then the B tile.
const STAGE_BYTES: u32 = ((BM + BN) * BK * 2) as u32;
/// Dynamic shared memory the kernels need.
pub const SMEM_BYTES: u32 = STAGES as u32 * STAGE_BYTES;

/// One warp's accumulators: 4 (m16) × 8 (n8) fragments.
pub type Acc = [[FragC<f32, M16N8K16>; 8]; 4];

/// Byte offset of 16-byte chunk `chunk` (0..4) of row `row` in a swizzled
/// 64-byte-row tile.
#[inline(always)]
const fn swz(row: u32, chunk: u32) -> u32 {
    row * 64 + ((chunk ^ ((row >> 1) & 3)) << 4)
}

/// Issues the `cp.async` copies of K-stage `kt` into ring slot `slot`.
///
/// # Safety
/// As [`mainloop`].
#[inline(always)]
unsafe fn load_stage(
    a: *const bf16,
    lda: usize,
    b: *const bf16,
    ldb: usize,
    smem: SharedAddr,
    slot: usize,
    kt: usize,
) {
    let tid = thread_idx_x();
    let base = smem.add(slot as u32 * STAGE_BYTES);
    let k0 = kt * BK;
    for i in 0..4 {
        let id = tid + THREADS * i;
        let (row, chunk) = (id / 4, id % 4);
        let col = k0 + chunk as usize * 8;
        // SAFETY: inside the tile's rows and K (the caller's contract); 16-byte aligned.
        unsafe {
            cp_async::cg16(
                base.add(swz(row, chunk)),
                a.add(row as usize * lda + col).cast(),
            );
            cp_async::cg16(
                base.add((BM * BK * 2) as u32 + swz(row, chunk)),
                b.add(row as usize * ldb + col).cast(),
            );
        }
    }
}

/// Computes one K-stage from ring slot `slot` into `acc` (this warp's 64 × 64).
#[inline(always)]
unsafe fn compute_stage(acc: &mut Acc, smem: SharedAddr, slot: usize) {
    let warp = thread_idx_x() / 32;
    let lane = lane_id();
    let (wm, wn) = (warp / 2, warp % 2);
    let a_base = smem.add(slot as u32 * STAGE_BYTES);
    let b_base = a_base.add((BM * BK * 2) as u32);
    unroll!(kk in [0 1] {
        let kk = kk as u32;
        let mut fa = [FragA::<bf16, M16N8K16>::zero(); 4];
        let mut fb = [FragB::<bf16, M16N8K16>::zero(); 8];
        unroll!(mi in [0 1 2 3] {
            let row = wm * 64 + mi as u32 * 16 + lane % 16;
            let chunk = kk * 2 + lane / 16;
            // SAFETY: the stage's A tile, written and fenced by the pipeline.
            fa[mi] = unsafe { FragA::<bf16, M16N8K16>::ldmatrix(a_base.add(swz(row, chunk))) };
        });
        unroll!(nj in [0 1 2 3] {
            let row = wn * 64 + nj as u32 * 16 + lane % 8 + 8 * (lane / 16);
            let chunk = kk * 2 + (lane / 8) % 2;
            // SAFETY: the stage's B tile.
            let pair = unsafe { FragB::<bf16, M16N8K16>::ldmatrix_pair(b_base.add(swz(row, chunk))) };
            fb[2 * nj] = pair[0];
            fb[2 * nj + 1] = pair[1];
        });
        // SAFETY: every lane of the warp runs this together (no branch on
        // the lane; all THREADS threads call the mainloop).
        unsafe { mma_step(acc, &(fa, fb)) };
    });
}

/// One warp's fragments of one k16 step: A for its 4 row blocks of 16, B
/// for its 8 column blocks of 8.
type Frags = ([FragA<bf16, M16N8K16>; 4], [FragB<bf16, M16N8K16>; 8]);

/// The 32 MMAs of one k16 step of this warp's 64 × 64.
///
/// # Safety
/// Every lane of the warp calls it together.
#[inline(always)]
unsafe fn mma_step(acc: &mut Acc, (fa, fb): &Frags) {
    unroll!(mi in [0 1 2 3] {
        unroll!(nj in [0 1 2 3 4 5 6 7] {
            // SAFETY: the caller's contract; the loop is unrolled, with no branch on the lane.
            acc[mi][nj] = unsafe { mma::mma(fa[mi], fb[nj], acc[mi][nj]) };
        });
    });
}

/// Computes one 128 × 128 tile: `a` points at the tile's first row of A
/// (row stride `lda` elements), `b` at its first row of B (stride `ldb`),
/// `k` the depth. Returns this warp's accumulators; pass them to
/// [`epilogue`]. All [`THREADS`] threads of the block call it.
///
/// # Safety
/// 128 rows of `k` readable bf16 at `a` and at `b`, 16-byte aligned rows
/// (`lda`, `ldb` multiples of 8), `k` a multiple of [`BK`]; the launch has
/// [`SMEM_BYTES`] of dynamic shared memory at `smem`, which this overwrites.
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
    let ktiles = k / BK;
    // Prologue: stages 0..STAGES-1 in flight (empty groups past the end keep the count).
    for s in 0..STAGES - 1 {
        if s < ktiles {
            // SAFETY: the caller's contract.
            unsafe { load_stage(a, lda, b, ldb, smem, s, s) };
        }
        cp_async::commit_group();
    }
    for kt in 0..ktiles {
        // Stage kt has landed (at most STAGES - 2 newer groups pending), for every thread.
        cp_async::wait_group::<{ STAGES as u32 - 2 }>();
        sync_threads();
        // The slot of stage kt - 1 is free: every warp finished it before the barrier.
        let next = kt + STAGES - 1;
        if next < ktiles {
            // SAFETY: the caller's contract.
            unsafe { load_stage(a, lda, b, ldb, smem, next % STAGES, next) };
        }
        cp_async::commit_group();
        // SAFETY: stage kt is in its slot.
        unsafe { compute_stage(&mut acc, smem, kt % STAGES) };
    }
    cp_async::wait_all();
    // The next tile's prologue overwrites the ring: everyone must be done with it.
    sync_threads();
    acc
}

/// The first row and column of C of this block's tile, in a grid of whole
/// tiles (`y` over rows, `x` over columns).
#[inline(always)]
pub fn grid_tile() -> (usize, usize) {
    (block_idx_y() as usize * BM, block_idx_x() as usize * BN)
}

/// [`mainloop`] for the tile of `C = A · Bᵀ` at row `m0`, column `n0`: A and
/// B row-major with `k` elements per row, the ring in the kernel's dynamic
/// shared memory.
///
/// # Safety
/// As [`mainloop`], for rows `m0..m0 + BM` of A and `n0..n0 + BN` of B.
#[inline(always)]
pub unsafe fn tile(a: *const bf16, b: *const bf16, k: usize, (m0, n0): (usize, usize)) -> Acc {
    let smem = SharedAddr::from_ptr(shared::dynamic_base());
    // SAFETY: the caller's rows.
    unsafe { mainloop(a.add(m0 * k), k, b.add(n0 * k), k, k, smem) }
}

/// Hands this warp's accumulators to `store(row, col, v0, v1)`: the values
/// at (`row`, `col`) and (`row`, `col + 1`) of the 128 × 128 tile.
#[inline(always)]
pub fn epilogue(acc: &Acc, store: impl FnMut(usize, usize, f32, f32)) {
    let warp = (thread_idx_x() / 32) as usize;
    warp_epilogue(acc, ((warp / 2) * 64, (warp % 2) * 64), store);
}

/// Hands a warp's 64 × 64 accumulators, at (`row0`, `col0`) of its block's
/// tile, to `store(row, col, v0, v1)` in tile coordinates.
#[inline(always)]
fn warp_epilogue(
    acc: &Acc,
    (row0, col0): (usize, usize),
    mut store: impl FnMut(usize, usize, f32, f32),
) {
    let lane = lane_id();
    let (g, t) = ((lane / 4) as usize, (lane % 4) as usize);
    unroll!(mi in [0 1 2 3] {
        unroll!(nj in [0 1 2 3 4 5 6 7] {
            let c = &acc[mi][nj];
            let r = row0 + mi * 16 + g;
            let col = col0 + nj * 8 + 2 * t;
            store(r, col, c.get(0), c.get(1));
            store(r + 8, col, c.get(2), c.get(3));
        });
    });
}

/// The [`epilogue`] that writes the tile in bf16 to the row-major `c` (row
/// stride `ldc` elements), the tile's element (0, 0) at `c[m0][n0]`, a 4-byte
/// pair per store.
///
/// # Safety
/// `c` holds the 128 × 128 tile at (`m0`, `n0`), 4-byte aligned (`ldc` and
/// `n0` even).
#[inline(always)]
pub unsafe fn store_bf16(acc: &Acc, c: *mut bf16, ldc: usize, (m0, n0): (usize, usize)) {
    // SAFETY: the caller's contract.
    epilogue(acc, unsafe { bf16_pairs(c, ldc, (m0, n0)) });
}

/// The epilogue store of bf16 pairs into the row-major `c` (row stride
/// `ldc`), tile element (0, 0) at `c[m0][n0]`.
///
/// # Safety
/// The closure is called only for pairs inside C, with `col` and `n0` even.
#[inline(always)]
unsafe fn bf16_pairs(
    c: *mut bf16,
    ldc: usize,
    (m0, n0): (usize, usize),
) -> impl FnMut(usize, usize, f32, f32) {
    move |r, col, v0, v1| {
        // SAFETY: the function's contract: inside C, 4-byte aligned.
        unsafe {
            *c.add((m0 + r) * ldc + n0 + col).cast::<u32>() = Bf16x2::from_f32s(v0, v1).to_bits()
        };
    }
}
