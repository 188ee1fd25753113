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

/// An `mma.sync` tile configuration: a block of `WARPS_M × WARPS_N` warps,
/// each computing a 64 × 64 sub-tile ([`Acc`]), K [`BK`](Config::BK) per
/// stage in a ring of [`STAGES`](Config::STAGES). [`Base`] is the kernels'
/// (and this module's constants'); the others are the GEMM benchmark's
/// candidates (issue 24).
pub trait Config {
    /// Warps along M (the tile is `64 · WARPS_M` rows).
    const WARPS_M: u32;
    /// Warps along N (the tile is `64 · WARPS_N` columns).
    const WARPS_N: u32;
    /// K per stage: 32 (64-byte smem rows) or 64 (128-byte rows).
    const BK: usize;
    /// Pipeline depth.
    const STAGES: usize;
    /// Load the `ldmatrix` fragments of k16 step `kk + 1` before the MMAs of
    /// step `kk` (double-buffered fragments: more registers).
    const PREFETCH: bool = false;
    /// Rows of A (and C) per tile.
    const BM: usize = 64 * Self::WARPS_M as usize;
    /// Rows of B (columns of C) per tile.
    const BN: usize = 64 * Self::WARPS_N as usize;
    /// Threads per block.
    const THREADS: u32 = 32 * Self::WARPS_M * Self::WARPS_N;
    /// Bytes of one stage: the A tile then the B tile.
    const STAGE_BYTES: u32 = ((Self::BM + Self::BN) * Self::BK * 2) as u32;
    /// Dynamic shared memory the kernels need.
    const SMEM_BYTES: u32 = Self::STAGES as u32 * Self::STAGE_BYTES;
}

/// The kernels' configuration: 128 × 128, 4 warps, BK 32, 4 stages.
pub struct Base;
impl Config for Base {
    const WARPS_M: u32 = 2;
    const WARPS_N: u32 = 2;
    const BK: usize = 32;
    const STAGES: usize = 4;
}

/// Rows of A (and C) per tile.
pub const BM: usize = <Base as Config>::BM;
/// Rows of B (columns of C) per tile.
pub const BN: usize = <Base as Config>::BN;
/// K per pipeline stage.
pub const BK: usize = <Base as Config>::BK;
/// Pipeline depth.
pub const STAGES: usize = <Base as Config>::STAGES;
/// Threads per block.
pub const THREADS: u32 = <Base as Config>::THREADS;
/// Dynamic shared memory the kernels need.
pub const SMEM_BYTES: u32 = <Base as Config>::SMEM_BYTES;

/// One warp's accumulators: 4 (m16) × 8 (n8) fragments.
pub type Acc = [[FragC<f32, M16N8K16>; 8]; 4];

/// Byte offset of 16-byte chunk `chunk` of row `row` in a swizzled tile of
/// `chunks` chunks per row (4 or 8): the chunk is XORed with the row's
/// 128-byte line modulo `chunks` (`(row / 2) % 4` for 64-byte rows, `row % 8`
/// for 128-byte rows), so that `ldmatrix`'s eight row reads and the
/// `cp.async` writes hit distinct banks.
#[inline(always)]
const fn swz(row: u32, chunk: u32, chunks: u32) -> u32 {
    row * chunks * 16 + ((chunk ^ ((row / (8 / chunks)) % chunks)) << 4)
}

/// Issues the `cp.async` copies of K-stage `kt` into ring slot `slot`.
///
/// # Safety
/// As [`mainloop`].
#[inline(always)]
unsafe fn load_stage<C: Config>(
    a: *const bf16,
    lda: usize,
    b: *const bf16,
    ldb: usize,
    smem: SharedAddr,
    slot: usize,
    kt: usize,
) {
    let tid = thread_idx_x();
    let base = smem.add(slot as u32 * C::STAGE_BYTES);
    let k0 = kt * C::BK;
    let chunks = (C::BK / 8) as u32;
    let per_thread = |rows: usize| rows * C::BK / 8 / C::THREADS as usize;
    let (a_n, b_n) = (per_thread(C::BM), per_thread(C::BN));
    for i in 0..a_n.max(b_n) {
        let id = tid + C::THREADS * i as u32;
        let (row, chunk) = (id / chunks, id % chunks);
        let col = k0 + chunk as usize * 8;
        // SAFETY: inside the tile's rows and K (the caller's contract); 16-byte aligned.
        unsafe {
            if i < a_n {
                cp_async::cg16(
                    base.add(swz(row, chunk, chunks)),
                    a.add(row as usize * lda + col).cast(),
                );
            }
            if i < b_n {
                cp_async::cg16(
                    base.add((C::BM * C::BK * 2) as u32 + swz(row, chunk, chunks)),
                    b.add(row as usize * ldb + col).cast(),
                );
            }
        }
    }
}

/// `cp.async.wait_group` leaving `stages - 2` groups pending (the wait's
/// count must be a constant): stage `kt` has landed. Deeper rings than 5
/// wait for every group (correct, slower).
#[inline(always)]
fn wait_stage(stages: usize) {
    match stages {
        2 => cp_async::wait_group::<0>(),
        3 => cp_async::wait_group::<1>(),
        4 => cp_async::wait_group::<2>(),
        5 => cp_async::wait_group::<3>(),
        _ => cp_async::wait_all(),
    }
}

/// One warp's fragments of one k16 step: A for its 4 row blocks of 16, B
/// for its 8 column blocks of 8.
type Frags = ([FragA<bf16, M16N8K16>; 4], [FragB<bf16, M16N8K16>; 8]);

/// This warp's fragments of k16 step `kk` of the stage at `a_base` (its B
/// tile at `b_base`), from `ldmatrix`.
///
/// # Safety
/// The stage is in shared memory (written and fenced by the pipeline); every
/// lane of the warp calls it together.
#[inline(always)]
unsafe fn load_frags<C: Config>(a_base: SharedAddr, b_base: SharedAddr, kk: u32) -> Frags {
    let warp = thread_idx_x() / 32;
    let lane = lane_id();
    let (wm, wn) = (warp / C::WARPS_N, warp % C::WARPS_N);
    let chunks = (C::BK / 8) as u32;
    let mut fa = [FragA::<bf16, M16N8K16>::zero(); 4];
    let mut fb = [FragB::<bf16, M16N8K16>::zero(); 8];
    unroll!(mi in [0 1 2 3] {
        let row = wm * 64 + mi as u32 * 16 + lane % 16;
        let chunk = kk * 2 + lane / 16;
        // SAFETY: the stage's A tile.
        fa[mi] = unsafe { FragA::<bf16, M16N8K16>::ldmatrix(a_base.add(swz(row, chunk, chunks))) };
    });
    unroll!(nj in [0 1 2 3] {
        let row = wn * 64 + nj as u32 * 16 + lane % 8 + 8 * (lane / 16);
        let chunk = kk * 2 + (lane / 8) % 2;
        // SAFETY: the stage's B tile.
        let pair = unsafe { FragB::<bf16, M16N8K16>::ldmatrix_pair(b_base.add(swz(row, chunk, chunks))) };
        fb[2 * nj] = pair[0];
        fb[2 * nj + 1] = pair[1];
    });
    (fa, fb)
}

/// Computes one K-stage from ring slot `slot` into `acc` (this warp's 64 × 64).
// The last unrolled step's `cur = next` is never read.
#[allow(unused_assignments)]
#[inline(always)]
unsafe fn compute_stage<C: Config>(acc: &mut Acc, smem: SharedAddr, slot: usize) {
    let a_base = smem.add(slot as u32 * C::STAGE_BYTES);
    let b_base = a_base.add((C::BM * C::BK * 2) as u32);
    let steps = C::BK / 16;
    if C::PREFETCH {
        // SAFETY (loads and MMAs): the stage is in its slot; every lane of
        // the warp runs this together (no branch on the lane).
        let mut cur = unsafe { load_frags::<C>(a_base, b_base, 0) };
        unroll!(kk in [0 1 2 3] {
            if kk < steps {
                let next = if kk + 1 < steps {
                    // SAFETY: as above.
                    unsafe { load_frags::<C>(a_base, b_base, kk as u32 + 1) }
                } else {
                    cur
                };
                // SAFETY: as above.
                unsafe { mma_step(acc, &cur) };
                cur = next;
            }
        });
    } else {
        unroll!(kk in [0 1 2 3] {
            if kk < steps {
                // SAFETY: the stage is in its slot; every lane of the warp
                // runs this together (no branch on the lane).
                let f = unsafe { load_frags::<C>(a_base, b_base, kk as u32) };
                // SAFETY: as above.
                unsafe { mma_step(acc, &f) };
            }
        });
    }
}

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
    // SAFETY: the caller's contract.
    unsafe { mainloop_with::<Base>(a, lda, b, ldb, k, smem) }
}

/// [`mainloop`] for the tile of configuration `C`: `C::BM` rows at `a`,
/// `C::BN` at `b`, `k` a multiple of `C::BK`, `C::SMEM_BYTES` at `smem`,
/// all `C::THREADS` threads of the block.
///
/// # Safety
/// As [`mainloop`], with `C`'s figures.
#[inline(always)]
pub unsafe fn mainloop_with<C: Config>(
    a: *const bf16,
    lda: usize,
    b: *const bf16,
    ldb: usize,
    k: usize,
    smem: SharedAddr,
) -> Acc {
    let mut acc = [[FragC::<f32, M16N8K16>::zero(); 8]; 4];
    let ktiles = k / C::BK;
    // Prologue: stages 0..STAGES-1 in flight (empty groups past the end keep the count).
    for s in 0..C::STAGES - 1 {
        if s < ktiles {
            // SAFETY: the caller's contract.
            unsafe { load_stage::<C>(a, lda, b, ldb, smem, s, s) };
        }
        cp_async::commit_group();
    }
    for kt in 0..ktiles {
        // Stage kt has landed (at most STAGES - 2 newer groups pending), for every thread.
        wait_stage(C::STAGES);
        sync_threads();
        // The slot of stage kt - 1 is free: every warp finished it before the barrier.
        let next = kt + C::STAGES - 1;
        if next < ktiles {
            // SAFETY: the caller's contract.
            unsafe { load_stage::<C>(a, lda, b, ldb, smem, next % C::STAGES, next) };
        }
        cp_async::commit_group();
        // SAFETY: stage kt is in its slot.
        unsafe { compute_stage::<C>(&mut acc, smem, kt % C::STAGES) };
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
    epilogue_with::<Base>(acc, store);
}

/// [`epilogue`] for a tile of configuration `C`.
#[inline(always)]
pub fn epilogue_with<C: Config>(acc: &Acc, store: impl FnMut(usize, usize, f32, f32)) {
    let warp = thread_idx_x() / 32;
    let (wm, wn) = ((warp / C::WARPS_N) as usize, (warp % C::WARPS_N) as usize);
    warp_epilogue(acc, (wm * 64, wn * 64), store);
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
    unsafe { store_bf16_with::<Base>(acc, c, ldc, (m0, n0)) }
}

/// [`store_bf16`] for a tile of configuration `C`.
///
/// # Safety
/// As [`store_bf16`], for `C`'s tile.
#[inline(always)]
pub unsafe fn store_bf16_with<C: Config>(
    acc: &Acc,
    c: *mut bf16,
    ldc: usize,
    (m0, n0): (usize, usize),
) {
    // SAFETY: the caller's contract.
    epilogue_with::<C>(acc, unsafe { bf16_pairs(c, ldc, (m0, n0)) });
}

/// `C = A · Bᵀ` of `m × n` (A `m × k`, B `n × k`, C bf16) with tiles of
/// configuration `C`, one per block: block `t` of a 1-D grid computes tile
/// `raster::grouped(t, m / C::BM, n / C::BN, group)`; blocks past the last
/// tile return. The body of the `gemm_bf16_mma*` kernels.
///
/// # Safety
/// `a`, `b`, `c` hold `m × k`, `n × k`, `m × n` bf16, 16-byte aligned; `m`,
/// `n` multiples of the tile, `k` of `C::BK`; the launch has `C::THREADS`
/// threads and `C::SMEM_BYTES` of dynamic shared memory.
#[inline(always)]
pub unsafe fn gemm<C: Config>(
    a: *const bf16,
    b: *const bf16,
    c: *mut bf16,
    (m, n, k): (usize, usize, usize),
    group: usize,
) {
    let (mt, nt) = (m / C::BM, n / C::BN);
    let t = block_idx_x() as usize;
    if t >= mt * nt {
        return;
    }
    let (tm, tn) = crate::raster::grouped(t, mt, nt, group);
    let (m0, n0) = (tm * C::BM, tn * C::BN);
    let smem = SharedAddr::from_ptr(shared::dynamic_base());
    // SAFETY: a whole tile inside A, B and C (the caller's sizes).
    unsafe {
        let acc = mainloop_with::<C>(a.add(m0 * k), k, b.add(n0 * k), k, k, smem);
        store_bf16_with::<C>(&acc, c, n, (m0, n0));
    }
}

/// The GEMM benchmark's candidate configurations (issue 24), each a kernel
/// of `tc-gemm-kernels` (`gemm_bf16_mma_<name>`).
pub mod candidates {
    use super::Config;

    /// `Name = (WARPS_M, WARPS_N, BK, STAGES, PREFETCH);` as a [`Config`].
    macro_rules! configs {
        ($($(#[$doc:meta])* $name:ident = ($wm:literal, $wn:literal, $bk:literal, $stages:literal, $pf:literal);)*) => {$(
            $(#[$doc])*
            pub struct $name;
            impl Config for $name {
                const WARPS_M: u32 = $wm;
                const WARPS_N: u32 = $wn;
                const BK: usize = $bk;
                const STAGES: usize = $stages;
                const PREFETCH: bool = $pf;
            }
        )*};
    }

    configs! {
        /// 128 × 128, BK 64 in 3 stages (96 KiB): half the barriers and waits per K.
        K64 = (2, 2, 64, 3, false);
        /// The kernels' tile with the next k16 step's fragments loaded before
        /// the current step's MMAs.
        Prefetch = (2, 2, 32, 4, true);
        /// [`K64`] with prefetched fragments.
        K64Prefetch = (2, 2, 64, 3, true);
        /// 256 × 128 on 8 warps, BK 32, 4 stages (96 KiB): a third less L2
        /// traffic per flop than 128 × 128.
        M256 = (4, 2, 32, 4, false);
        /// 256 × 128, BK 64 in 3 stages (144 KiB).
        M256K64 = (4, 2, 64, 3, false);
        /// 128 × 256 on 8 warps, BK 32, 4 stages (96 KiB).
        N256 = (2, 4, 32, 4, false);
    }
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
