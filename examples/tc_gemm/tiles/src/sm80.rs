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
/// each computing a [`WARP_M`](Config::WARP_M) × [`WARP_N`](Config::WARP_N)
/// sub-tile (64 × 64 unless told: the whole of [`Acc`]), K
/// [`BK`](Config::BK) per stage in a ring of [`STAGES`](Config::STAGES).
/// [`Base`] is the kernels' (and this module's constants'); the others are
/// the GEMM benchmark's candidates (issue 24).
pub trait Config {
    /// Warps along M (the tile is `WARP_M · WARPS_M` rows).
    const WARPS_M: u32;
    /// Warps along N (the tile is `WARP_N · WARPS_N` columns).
    const WARPS_N: u32;
    /// Rows of one warp's sub-tile: 16, 32, 48 or 64 (`WARP_M / 16` m16
    /// fragments of [`Acc`] are used).
    const WARP_M: usize = 64;
    /// Columns of one warp's sub-tile: 16, 32, 48 or 64 (`WARP_N / 8` n8
    /// fragments of [`Acc`]; B is read 16 columns per `ldmatrix.x4`).
    const WARP_N: usize = 64;
    /// K per stage: 32 (64-byte smem rows) or 64 (128-byte rows).
    const BK: usize;
    /// Pipeline depth.
    const STAGES: usize;
    /// Load the `ldmatrix` fragments of k16 step `kk + 1` before the MMAs of
    /// step `kk` (double-buffered fragments: more registers).
    const PREFETCH: bool = false;
    /// Software-pipeline the fragments across the stage barrier (CUTLASS's
    /// multistage order): the wait and barrier for stage `kt + 1` come
    /// before the last k16 step of stage `kt`, whose fragments are already
    /// in registers, and stage `kt + 1`'s first `ldmatrix` is issued right
    /// after the barrier, so its latency hides behind that step's MMAs (and
    /// the `cp.async` of the next stage is issued after `ldmatrix`, not
    /// before). Double-buffered fragments: more registers. Overrides
    /// [`PREFETCH`](Config::PREFETCH); needs `BK` ≥ 32.
    const PIPELINED: bool = false;
    /// [`gemm`]'s epilogue stages the bf16 tile in shared memory (the ring,
    /// free after the mainloop; 16-byte chunks XOR-swizzled by `row % 8`)
    /// and writes C in 16-byte vectors, whole rows of the tile per warp,
    /// instead of one 4-byte pair per store straight from the accumulators.
    /// On by default (measured: 6–16 % faster on an H100), so that every
    /// candidate differs from [`Base`] by its own idea only.
    const STAGED_EPILOGUE: bool = true;
    /// Rows of A (and C) per tile.
    const BM: usize = Self::WARP_M * Self::WARPS_M as usize;
    /// Rows of B (columns of C) per tile.
    const BN: usize = Self::WARP_N * Self::WARPS_N as usize;
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

/// One warp's accumulators: 4 (m16) × 8 (n8) fragments. A configuration
/// with a smaller warp tile uses the first `WARP_M / 16` × `WARP_N / 8`
/// (the rest stay zero, unread: LLVM drops them).
pub type Acc = [[FragC<f32, M16N8K16>; 8]; 4];

/// m16 fragments per warp of configuration `C`.
const fn mi_of<C: Config>() -> usize {
    C::WARP_M / 16
}

/// n8 fragments per warp of configuration `C`.
const fn nj_of<C: Config>() -> usize {
    C::WARP_N / 8
}

/// Byte offset of 16-byte chunk `chunk` of row `row` in a swizzled tile of
/// `chunks` chunks per row (4 or 8): the chunk is XORed with the row's
/// 128-byte line modulo `chunks` (`(row / 2) % 4` for 64-byte rows, `row % 8`
/// for 128-byte rows), so that `ldmatrix`'s eight row reads and the
/// `cp.async` writes hit distinct banks.
#[inline(always)]
const fn swz(row: u32, chunk: u32, chunks: u32) -> u32 {
    row * chunks * 16 + ((chunk ^ ((row / (8 / chunks)) % chunks)) << 4)
}

/// The 16-byte copies of one stage per thread: of the A tile, of the B
/// tile (copy `i` of thread `tid` is chunk `tid + THREADS · i`, row-major).
#[inline(always)]
const fn copies_per_thread<C: Config>() -> (usize, usize) {
    let chunks_per_thread = C::BK / 8;
    let threads = C::THREADS as usize;
    (
        C::BM * chunks_per_thread / threads,
        C::BN * chunks_per_thread / threads,
    )
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
    let (a_n, b_n) = copies_per_thread::<C>();
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
    let (wrows, wcols) = (C::WARP_M as u32, C::WARP_N as u32);
    let mut fa = [FragA::<bf16, M16N8K16>::zero(); 4];
    let mut fb = [FragB::<bf16, M16N8K16>::zero(); 8];
    unroll!(mi in [0 1 2 3] {
        if mi < mi_of::<C>() {
            let row = wm * wrows + mi as u32 * 16 + lane % 16;
            let chunk = kk * 2 + lane / 16;
            // SAFETY: the stage's A tile.
            fa[mi] = unsafe { FragA::<bf16, M16N8K16>::ldmatrix(a_base.add(swz(row, chunk, chunks))) };
        }
    });
    unroll!(nj in [0 1 2 3] {
        if 2 * nj < nj_of::<C>() {
            let row = wn * wcols + nj as u32 * 16 + lane % 8 + 8 * (lane / 16);
            let chunk = kk * 2 + (lane / 8) % 2;
            // SAFETY: the stage's B tile.
            let pair = unsafe { FragB::<bf16, M16N8K16>::ldmatrix_pair(b_base.add(swz(row, chunk, chunks))) };
            fb[2 * nj] = pair[0];
            fb[2 * nj + 1] = pair[1];
        }
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
                unsafe { mma_step::<C>(acc, &cur) };
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
                unsafe { mma_step::<C>(acc, &f) };
            }
        });
    }
}

/// The MMAs of one k16 step of this warp's sub-tile (32 for 64 × 64).
///
/// # Safety
/// Every lane of the warp calls it together.
#[inline(always)]
unsafe fn mma_step<C: Config>(acc: &mut Acc, (fa, fb): &Frags) {
    unroll!(mi in [0 1 2 3] {
        unroll!(nj in [0 1 2 3 4 5 6 7] {
            if mi < mi_of::<C>() && nj < nj_of::<C>() {
                // SAFETY: the caller's contract; the loop is unrolled, with no branch on the lane.
                acc[mi][nj] = unsafe { mma::mma(fa[mi], fb[nj], acc[mi][nj]) };
            }
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
    if C::PIPELINED {
        // SAFETY: the caller's contract.
        return unsafe { mainloop_pipelined::<C>(a, lda, b, ldb, k, smem) };
    }
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

/// The operations of [`Config::PIPELINED`]'s schedule ([`pipelined`]): on
/// the device [`Device`] (the real `cp.async`, barriers, `ldmatrix` and
/// MMAs), on the host a recorder that checks the schedule's hazards.
trait PipeOps {
    /// One k16 step's fragments.
    type Frags: Copy;
    /// Issue the copies of K-stage `kt` into ring slot `slot`.
    fn load_stage(&mut self, slot: usize, kt: usize);
    /// `cp.async.commit_group`.
    fn commit(&mut self);
    /// [`wait_stage`]: at most `STAGES - 2` groups left in flight.
    fn wait_stage(&mut self);
    /// `cp.async.wait_all`.
    fn wait_all(&mut self);
    /// The block barrier.
    fn barrier(&mut self);
    /// `ldmatrix` of k16 step `kk` of the stage in slot `slot`.
    fn load_frags(&mut self, slot: usize, kk: usize) -> Self::Frags;
    /// The MMAs of one k16 step.
    fn mma(&mut self, f: &Self::Frags);
}

/// The device's [`PipeOps`] for [`mainloop_pipelined`].
struct Device {
    a: *const bf16,
    lda: usize,
    b: *const bf16,
    ldb: usize,
    smem: SharedAddr,
    acc: Acc,
}

impl Device {
    /// The A and B tiles of ring slot `slot`.
    #[inline(always)]
    fn bases<C: Config>(&self, slot: usize) -> (SharedAddr, SharedAddr) {
        let a_base = self.smem.add(slot as u32 * C::STAGE_BYTES);
        (a_base, a_base.add((C::BM * C::BK * 2) as u32))
    }
}

/// [`Device`] under configuration `C` (the ops need `C`'s figures).
struct DeviceOps<C>(Device, core::marker::PhantomData<C>);

impl<C: Config> PipeOps for DeviceOps<C> {
    type Frags = Frags;
    #[inline(always)]
    fn load_stage(&mut self, slot: usize, kt: usize) {
        let d = &self.0;
        // SAFETY: `mainloop_pipelined`'s caller's contract; `pipelined`
        // only writes a slot that every warp is done with.
        unsafe { load_stage::<C>(d.a, d.lda, d.b, d.ldb, d.smem, slot, kt) };
    }
    #[inline(always)]
    fn commit(&mut self) {
        cp_async::commit_group();
    }
    #[inline(always)]
    fn wait_stage(&mut self) {
        wait_stage(C::STAGES);
    }
    #[inline(always)]
    fn wait_all(&mut self) {
        cp_async::wait_all();
    }
    #[inline(always)]
    fn barrier(&mut self) {
        sync_threads();
    }
    #[inline(always)]
    fn load_frags(&mut self, slot: usize, kk: usize) -> Frags {
        let (a, b) = self.0.bases::<C>(slot);
        // SAFETY: `pipelined` reads a slot only after its stage's wait and
        // a barrier; every lane of the warp runs it (no branch on the lane).
        unsafe { load_frags::<C>(a, b, kk as u32) }
    }
    #[inline(always)]
    fn mma(&mut self, f: &Frags) {
        // SAFETY: every lane of the warp runs it together.
        unsafe { mma_step::<C>(&mut self.0.acc, f) };
    }
}

/// [`Config::PIPELINED`]'s schedule of `ktiles` K-stages: per stage `kt`,
/// k16 step `kk` loads the fragments of step `kk + 1` before the MMAs of
/// step `kk`; for the last step, `kk + 1` is step 0 of stage `kt + 1`,
/// loaded after the wait for that stage and the block barrier. The
/// `cp.async` of stage `kt + STAGES - 1` is issued in step 0, after its
/// `ldmatrix`, into the slot of stage `kt - 1`: every warp read that slot
/// for the last time before the barrier of stage `kt - 1`. Ends with every
/// copy landed and a barrier (the ring is free).
// The last unrolled step's `cur = next` is never read.
#[allow(unused_assignments)]
#[inline(always)]
fn pipelined<C: Config, P: PipeOps>(p: &mut P, ktiles: usize) {
    // Two k16 steps or more: the wait for stage kt + 1 (in the last step)
    // comes after step 0's commit, which its group count assumes.
    const { assert!(C::BK >= 32) };
    let steps = C::BK / 16;
    // Prologue: stages 0..STAGES-1 in flight (empty groups past the end keep the count).
    for s in 0..C::STAGES - 1 {
        if s < ktiles {
            p.load_stage(s, s);
        }
        p.commit();
    }
    if ktiles == 0 {
        p.wait_all();
        return;
    }
    // Stage 0 has landed, for every thread.
    p.wait_stage();
    p.barrier();
    let mut cur = p.load_frags(0, 0);
    for kt in 0..ktiles {
        let slot = kt % C::STAGES;
        unroll!(kk in [0 1 2 3] {
            if kk < steps {
                let next = if kk + 1 < steps {
                    p.load_frags(slot, kk + 1)
                } else if kt + 1 < ktiles {
                    // Stage kt + 1 has landed (at most STAGES - 2 newer
                    // groups pending), for every thread; and every warp has
                    // read stage kt's slot for the last time.
                    p.wait_stage();
                    p.barrier();
                    p.load_frags((kt + 1) % C::STAGES, 0)
                } else {
                    cur
                };
                if kk == 0 {
                    let next_stage = kt + C::STAGES - 1;
                    if next_stage < ktiles {
                        p.load_stage(next_stage % C::STAGES, next_stage);
                    }
                    p.commit();
                }
                p.mma(&cur);
                cur = next;
            }
        });
    }
    p.wait_all();
    // The next tile's prologue overwrites the ring: everyone must be done with it.
    p.barrier();
}

/// [`mainloop_with`] for [`Config::PIPELINED`]: the schedule of
/// [`pipelined`] on the device.
///
/// # Safety
/// As [`mainloop_with`].
#[inline(always)]
unsafe fn mainloop_pipelined<C: Config>(
    a: *const bf16,
    lda: usize,
    b: *const bf16,
    ldb: usize,
    k: usize,
    smem: SharedAddr,
) -> Acc {
    let acc = [[FragC::<f32, M16N8K16>::zero(); 8]; 4];
    let dev = Device {
        a,
        lda,
        b,
        ldb,
        smem,
        acc,
    };
    let mut ops = DeviceOps::<C>(dev, core::marker::PhantomData);
    pipelined::<C, _>(&mut ops, k / C::BK);
    ops.0.acc
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
    epilogue_at::<C>(thread_idx_x() / 32, lane_id(), acc, store);
}

/// [`epilogue_with`] for lane `lane` of warp `warp`: hands its accumulators
/// (the warp's `WARP_M × WARP_N` sub-tile) to `store(row, col, v0, v1)` in
/// tile coordinates.
#[inline(always)]
fn epilogue_at<C: Config>(
    warp: u32,
    lane: u32,
    acc: &Acc,
    mut store: impl FnMut(usize, usize, f32, f32),
) {
    let (wm, wn) = ((warp / C::WARPS_N) as usize, (warp % C::WARPS_N) as usize);
    let (row0, col0) = (wm * C::WARP_M, wn * C::WARP_N);
    let (g, t) = ((lane / 4) as usize, (lane % 4) as usize);
    unroll!(mi in [0 1 2 3] {
        unroll!(nj in [0 1 2 3 4 5 6 7] {
            if mi < mi_of::<C>() && nj < nj_of::<C>() {
                let c = &acc[mi][nj];
                let r = row0 + mi * 16 + g;
                let col = col0 + nj * 8 + 2 * t;
                store(r, col, c.get(0), c.get(1));
                store(r + 8, col, c.get(2), c.get(3));
            }
        });
    });
}

/// Byte offset of tile element (`row`, `col`) in [`Config::STAGED_EPILOGUE`]'s
/// bf16 staging tile of `cols` columns (a multiple of 64): row-major, the
/// 16-byte chunks of a row XORed with `row % 8`, so that a warp's pair
/// stores (8 rows, one chunk) and its 16-byte reads (8 chunks of a row per
/// phase) hit distinct banks.
#[inline(always)]
const fn staged_offset(row: usize, col: usize, cols: usize) -> usize {
    row * cols * 2 + (((col / 8) ^ (row % 8)) * 16) + (col % 8) * 2
}

/// The 16-byte copies per thread of [`store_bf16_staged`]'s copy-out.
#[inline(always)]
const fn staged_copies<C: Config>() -> usize {
    C::BM * (C::BN / 8) / C::THREADS as usize
}

/// The (row, 8-column chunk) of copy `i` of thread `tid` in
/// [`store_bf16_staged`]'s copy-out: chunk `i · THREADS + tid`, row-major.
#[inline(always)]
const fn staged_chunk<C: Config>(tid: usize, i: usize) -> (usize, usize) {
    let id = i * C::THREADS as usize + tid;
    (id / (C::BN / 8), id % (C::BN / 8))
}

/// The [`Config::STAGED_EPILOGUE`] store: this warp's accumulators as bf16
/// pairs into the staging tile at the ring's start, a block barrier, then
/// each thread copies 16-byte chunks to C (chunk `i · THREADS + tid`, row
/// by row, so a warp writes two whole 256-byte rows of a 128-column tile).
///
/// # Safety
/// As [`store_bf16_with`], `ldc` and `n0` multiples of 8 (16-byte rows);
/// `smem` holds `C::BM × C::BN` bf16 that no thread of the block reads or
/// writes until every thread has returned (after [`mainloop_with`], which
/// ends with a barrier); all `C::THREADS` threads of the block call it.
#[inline(always)]
unsafe fn store_bf16_staged<C: Config>(
    acc: &Acc,
    c: *mut bf16,
    ldc: usize,
    (m0, n0): (usize, usize),
    (stage, stage_addr): (*mut u8, SharedAddr),
) {
    // SAFETY: the caller's contract.
    unsafe { store_bf16_staged_via::<C, false>(acc, c, ldc, (m0, n0), (stage, stage_addr)) };
}

/// [`store_bf16_staged`] that, when `OPAQUE`, reads this thread's indices
/// (warp, lane, `threadIdx.x`) through [`crate::opaque`] where it uses them
/// (with `false` the code is [`store_bf16_staged`]'s as it was).
///
/// # Safety
/// As [`store_bf16_staged`].
#[inline(always)]
unsafe fn store_bf16_staged_via<C: Config, const OPAQUE: bool>(
    acc: &Acc,
    c: *mut bf16,
    ldc: usize,
    (m0, n0): (usize, usize),
    (stage, stage_addr): (*mut u8, SharedAddr),
) {
    const {
        assert!(C::BM * C::BN * 2 <= C::SMEM_BYTES as usize && C::BN % 64 == 0);
    }
    // This thread's indices, through `opaque` when `OPAQUE`.
    let index = |x: u32| if OPAQUE { crate::opaque(x) } else { x };
    let (warp, lane) = (index(thread_idx_x() / 32), index(lane_id()));
    epilogue_at::<C>(warp, lane, acc, |r, col, v0, v1| {
        // SAFETY: inside the staging tile; 4-byte aligned (col even).
        unsafe {
            *stage.add(staged_offset(r, col, C::BN)).cast::<u32>() =
                Bf16x2::from_f32s(v0, v1).to_bits()
        };
    });
    sync_threads();
    let tid = index(thread_idx_x()) as usize;
    for i in 0..staged_copies::<C>() {
        let (row, chunk) = staged_chunk::<C>(tid, i);
        // SAFETY: the tile written above; C holds it (the caller's contract),
        // 16-byte aligned.
        unsafe {
            crate::copy16(
                stage_addr.add(staged_offset(row, chunk * 8, C::BN) as u32),
                c.add((m0 + row) * ldc + n0 + chunk * 8).cast(),
            )
        };
    }
}

/// [`gemm`]'s epilogue for a block that computes several tiles: the tile in
/// bf16 to the row-major `c` (row stride `ldc`), staged in
/// the ring `smem` and written in 16-byte stores ([`Config::STAGED_EPILOGUE`];
/// on an H100 it made the GEMM 6–16 % faster than [`store_bf16_with`]'s 4-byte
/// pairs), then a block barrier, so that the next tile's [`mainloop`] may
/// refill the ring.
///
/// The staging addresses depend on the thread's indices only, so in a loop
/// over tiles LLVM would compute them once before the loop and keep them
/// live across every [`mainloop`] (the sm_80 fused AG+GEMM spilled 28
/// bytes so); here the indices come through an opaque inline-PTX `mov`, and
/// the addresses are computed in the epilogue, after the last MMA.
///
/// # Safety
/// As [`store_bf16_with`], with `ldc` and `n0` multiples of 8; `smem` is the
/// ring [`mainloop`] just used (its return is after its last barrier), and
/// all [`THREADS`] threads of the block call it.
#[inline(always)]
pub unsafe fn store_bf16_staged_tile(
    acc: &Acc,
    c: *mut bf16,
    ldc: usize,
    (m0, n0): (usize, usize),
    smem: *mut u8,
) {
    // SAFETY: the caller's contract.
    unsafe {
        store_bf16_staged_via::<Base, true>(
            acc,
            c,
            ldc,
            (m0, n0),
            (smem, SharedAddr::from_ptr(smem)),
        )
    };
    sync_threads();
}

/// The [`epilogue`] that writes configuration `C`'s tile in bf16 to the
/// row-major `c` (row stride `ldc` elements), the tile's element (0, 0) at
/// `c[m0][n0]`, a 4-byte pair per store.
///
/// # Safety
/// `c` holds `C`'s tile at (`m0`, `n0`), 4-byte aligned (`ldc` and `n0`
/// even).
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
/// tile return. The body of the `gemm_bf16_mma*` kernels. The epilogue is
/// [`store_bf16_with`], or the staged one of [`Config::STAGED_EPILOGUE`].
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
    let base = shared::dynamic_base();
    let smem = SharedAddr::from_ptr(base);
    // SAFETY: a whole tile inside A, B and C (the caller's sizes); the
    // mainloop ends with a barrier, after which the ring is free.
    unsafe {
        let acc = mainloop_with::<C>(a.add(m0 * k), k, b.add(n0 * k), k, k, smem);
        if C::STAGED_EPILOGUE {
            store_bf16_staged::<C>(&acc, c, n, (m0, n0), (base, smem));
        } else {
            store_bf16_with::<C>(&acc, c, n, (m0, n0));
        }
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

    /// The kernels' tile with [`Config::PIPELINED`]: the fragments of each
    /// stage's first k16 step loaded across the stage barrier, the
    /// `cp.async` issue after the `ldmatrix` (the SASS of the kernels' tile
    /// runs 40 address instructions, the 8 `LDGSTS` and 16 `LDSM` between
    /// the barrier and its first `HMMA`).
    pub struct Pipelined;
    impl Config for Pipelined {
        const WARPS_M: u32 = 2;
        const WARPS_N: u32 = 2;
        const BK: usize = 32;
        const STAGES: usize = 4;
        const PIPELINED: bool = true;
    }

    /// 128 × 128 on 8 warps of 64 × 32 (2 × 4): half the accumulators per
    /// thread, so (at ≤ 128 registers) two blocks of 8 warps per SM, twice
    /// the kernels' warps, for a half more `ldmatrix` traffic per MMA.
    pub struct Warp64x32;
    impl Config for Warp64x32 {
        const WARPS_M: u32 = 2;
        const WARPS_N: u32 = 4;
        const WARP_N: usize = 32;
        const BK: usize = 32;
        const STAGES: usize = 4;
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

/// Host checks of the index math and of [`pipelined`]'s schedule (no GPU:
/// the kernels' results are checked by the GEMM benchmark against the CPU).
#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::collections::BTreeSet;
    use std::vec;
    use std::vec::Vec;

    /// Every (row, col) of a `rows × cols` tile exactly once.
    fn covers(rows: usize, cols: usize, coords: impl IntoIterator<Item = (usize, usize)>) {
        let mut seen = vec![0u32; rows * cols];
        for (r, c) in coords {
            assert!(r < rows && c < cols, "({r}, {c}) outside {rows} × {cols}");
            seen[r * cols + c] += 1;
        }
        assert!(seen.iter().all(|&n| n == 1), "not every element once");
    }

    /// The 4-byte bank of a shared-memory byte offset.
    fn bank(byte: usize) -> usize {
        (byte / 4) % 32
    }

    /// A configuration's tile: the warps' accumulators cover it once, each
    /// value where its fragment says; the stage copies cover A and B; the
    /// staged copy-out covers C, its layout is a bijection, and its stores
    /// and 16-byte reads are free of bank conflicts.
    fn check_tile<C: Config>() {
        let (bm, bn) = (C::BM, C::BN);
        // The epilogue: value = its own tile position.
        let mut coords = Vec::new();
        let mut writes: Vec<Vec<usize>> = Vec::new();
        for warp in 0..C::THREADS / 32 {
            let (wm, wn) = ((warp / C::WARPS_N) as usize, (warp % C::WARPS_N) as usize);
            let (row0, col0) = (wm * C::WARP_M, wn * C::WARP_N);
            let mut per_call: Vec<Vec<usize>> = Vec::new();
            for lane in 0..32 {
                let mut acc: Acc = [[FragC::zero(); 8]; 4];
                for (mi, row) in acc.iter_mut().enumerate() {
                    for (nj, f) in row.iter_mut().enumerate() {
                        *f = FragC::from_fn(lane, |r, n| {
                            ((row0 + mi * 16 + r) * bn + col0 + nj * 8 + n) as f32
                        });
                    }
                }
                let mut call = 0;
                epilogue_at::<C>(warp, lane, &acc, |r, c, v0, v1| {
                    assert_eq!((v0, v1), ((r * bn + c) as f32, (r * bn + c + 1) as f32));
                    coords.extend([(r, c), (r, c + 1)]);
                    if per_call.len() <= call {
                        per_call.push(Vec::new());
                    }
                    per_call[call].push(staged_offset(r, c, bn));
                    call += 1;
                });
            }
            writes.extend(per_call);
        }
        covers(bm, bn, coords);
        // One warp-wide 4-byte store per call: 32 distinct banks.
        for w in &writes {
            assert_eq!(w.len(), 32);
            let banks: BTreeSet<usize> = w.iter().map(|&b| bank(b)).collect();
            assert_eq!(banks.len(), 32, "staged store bank conflict");
        }
        // The stage copies.
        let chunks = C::BK / 8;
        let (a_n, b_n) = copies_per_thread::<C>();
        for (n, rows) in [(a_n, bm), (b_n, bn)] {
            assert_eq!(
                n * C::THREADS as usize,
                rows * chunks,
                "copies do not divide"
            );
            covers(
                rows,
                chunks,
                (0..n * C::THREADS as usize).map(|id| (id / chunks, id % chunks)),
            );
        }
        // The staged copy-out: every chunk once, conflict-free 8-lane phases.
        let n = staged_copies::<C>();
        assert_eq!(n * C::THREADS as usize * 8, bm * bn);
        let mut out = Vec::new();
        for i in 0..n {
            for tid in 0..C::THREADS as usize {
                let (r, ch) = staged_chunk::<C>(tid, i);
                out.push((r, ch));
            }
            for phase in (0..C::THREADS as usize).step_by(8) {
                let lines: BTreeSet<usize> = (phase..phase + 8)
                    .map(|tid| {
                        let (r, ch) = staged_chunk::<C>(tid, i);
                        (staged_offset(r, ch * 8, bn) / 16) % 8
                    })
                    .collect();
                assert_eq!(lines.len(), 8, "staged read bank conflict");
            }
        }
        covers(bm, bn / 8, out);
        let offs: BTreeSet<usize> = (0..bm)
            .flat_map(|r| (0..bn).map(move |c| staged_offset(r, c, bn)))
            .collect();
        assert_eq!(offs.len(), bm * bn);
        assert!(offs.iter().all(|&o| o < bm * bn * 2));
    }

    #[test]
    fn tiles_cover_and_staging_is_conflict_free() {
        check_tile::<Base>();
        check_tile::<candidates::K64>();
        check_tile::<candidates::M256>();
        check_tile::<candidates::N256>();
        check_tile::<candidates::Pipelined>();
        check_tile::<candidates::Warp64x32>();
    }

    /// `ldmatrix`'s 8-row phases and the `cp.async` writes of a swizzled
    /// stage hit 8 distinct 16-byte bank groups.
    #[test]
    fn ring_swizzle_is_conflict_free() {
        for chunks in [4u32, 8] {
            for kk in 0..chunks / 2 {
                for half in 0..2 {
                    for r0 in (0..128).step_by(8) {
                        let groups: BTreeSet<u32> = (r0..r0 + 8)
                            .map(|r| (swz(r, kk * 2 + half, chunks) / 16) % 8)
                            .collect();
                        assert_eq!(groups.len(), 8, "ldmatrix conflict");
                    }
                }
            }
            for id0 in (0..512).step_by(8) {
                let groups: BTreeSet<u32> = (id0..id0 + 8)
                    .map(|id| (swz(id / chunks, id % chunks, chunks) / 16) % 8)
                    .collect();
                assert_eq!(groups.len(), 8, "cp.async conflict");
            }
        }
    }

    /// A [`PipeOps`] that checks the schedule, for one thread (all run the
    /// same ops): a slot is read only once its stage was waited for before a
    /// barrier, written only when no read of it happened since the last
    /// barrier; the MMAs see every step of every stage once, in order.
    struct Recorder<C> {
        slots: Vec<Option<usize>>,
        open: Vec<usize>,
        groups: Vec<Vec<usize>>,
        done: usize,
        landed: BTreeSet<usize>,
        visible: BTreeSet<usize>,
        read_since_barrier: BTreeSet<usize>,
        loaded: Vec<usize>,
        mmas: Vec<(usize, usize)>,
        last_barrier: bool,
        _c: core::marker::PhantomData<C>,
    }

    impl<C: Config> Recorder<C> {
        fn new() -> Self {
            Recorder {
                slots: vec![None; C::STAGES],
                open: Vec::new(),
                groups: Vec::new(),
                done: 0,
                landed: BTreeSet::new(),
                visible: BTreeSet::new(),
                read_since_barrier: BTreeSet::new(),
                loaded: Vec::new(),
                mmas: Vec::new(),
                last_barrier: false,
                _c: core::marker::PhantomData,
            }
        }

        fn complete_until(&mut self, n: usize) {
            while self.done < n {
                self.landed.extend(self.groups[self.done].iter().copied());
                self.done += 1;
            }
        }
    }

    impl<C: Config> PipeOps for Recorder<C> {
        type Frags = (usize, usize);
        fn load_stage(&mut self, slot: usize, kt: usize) {
            assert!(
                !self.read_since_barrier.contains(&slot),
                "slot {slot} overwritten while read"
            );
            if let Some(old) = self.slots[slot] {
                assert!(
                    self.landed.contains(&old),
                    "slot {slot} rewritten in flight"
                );
                self.landed.remove(&old);
                self.visible.remove(&old);
            }
            self.slots[slot] = Some(kt);
            self.open.push(kt);
            self.loaded.push(kt);
            self.last_barrier = false;
        }
        fn commit(&mut self) {
            self.groups.push(core::mem::take(&mut self.open));
            self.last_barrier = false;
        }
        fn wait_stage(&mut self) {
            let n = self.groups.len().saturating_sub(C::STAGES - 2);
            self.complete_until(n.max(self.done));
            self.last_barrier = false;
        }
        fn wait_all(&mut self) {
            self.complete_until(self.groups.len());
            self.last_barrier = false;
        }
        fn barrier(&mut self) {
            self.visible = self.landed.clone();
            self.read_since_barrier.clear();
            self.last_barrier = true;
        }
        fn load_frags(&mut self, slot: usize, kk: usize) -> (usize, usize) {
            let stage = self.slots[slot].expect("read of an empty slot");
            assert!(
                self.visible.contains(&stage),
                "stage {stage} read before it is visible"
            );
            self.read_since_barrier.insert(slot);
            self.last_barrier = false;
            (stage, kk)
        }
        fn mma(&mut self, f: &(usize, usize)) {
            self.mmas.push(*f);
            self.last_barrier = false;
        }
    }

    fn check_schedule<C: Config>() {
        for ktiles in 0..12 {
            let mut r = Recorder::<C>::new();
            pipelined::<C, _>(&mut r, ktiles);
            let steps = C::BK / 16;
            let want: Vec<(usize, usize)> = (0..ktiles)
                .flat_map(|kt| (0..steps).map(move |kk| (kt, kk)))
                .collect();
            assert_eq!(
                r.mmas,
                want,
                "{} ktiles {ktiles}",
                core::any::type_name::<C>()
            );
            assert_eq!(r.loaded, (0..ktiles).collect::<Vec<_>>());
            assert_eq!(r.done, r.groups.len(), "copies left in flight");
            assert!(r.open.is_empty());
            assert!(ktiles == 0 || r.last_barrier, "no final barrier");
        }
    }

    /// Test-only configurations of the pipelined schedule's corners.
    macro_rules! pipe_configs {
        ($($name:ident = ($bk:literal, $stages:literal);)*) => {$(
            struct $name;
            impl Config for $name {
                const WARPS_M: u32 = 2;
                const WARPS_N: u32 = 2;
                const BK: usize = $bk;
                const STAGES: usize = $stages;
                const PIPELINED: bool = true;
            }
        )*};
    }
    pipe_configs! {
        PipeK64S3 = (64, 3);
        PipeK32S2 = (32, 2);
        PipeK32S5 = (32, 5);
    }

    #[test]
    fn pipelined_schedule_has_no_hazard() {
        check_schedule::<candidates::Pipelined>();
        check_schedule::<PipeK64S3>();
        check_schedule::<PipeK32S2>();
        check_schedule::<PipeK32S5>();
    }
}
