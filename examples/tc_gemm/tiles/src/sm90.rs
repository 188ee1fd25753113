//! The warp-specialized `wgmma` + TMA mainloop (sm_90a), persistent.
//!
//! A block of [`THREADS`] = 384 threads (its kernels are
//! `#[kernel(max_threads = 384)]`, which the builder emits as `.maxntid 384`) walks the
//! tiles its schedule gives it. Warpgroup 0 is the producer: it lowers its
//! registers to 40 (`setmaxnreg.dec`) and one elected thread issues, per
//! K-stage, the TMA loads of the A tile (128 × 64) and the B tile (256 × 64)
//! into a [`STAGES`]-deep ring of 128-byte-swizzled shared memory, each
//! completing a transaction on the stage's *full* mbarrier. Warpgroups 1 and
//! 2 are consumers (registers raised to 232): each waits on *full*, runs four
//! `wgmma.m64n256k16` on its 64 rows of A and all of B, keeps one wgmma group
//! in flight, and releases the previous stage through its *empty* mbarrier
//! (one arrival per consumer warpgroup). The stage counter runs on across
//! tiles, so the producer loads tile `i + 1` while the consumers finish and
//! store tile `i`.

use nvshmem_device::cp_async::SharedAddr;
use nvshmem_device::half::bf16;
use nvshmem_device::math::Bf16x2;
use nvshmem_device::shared;
use nvshmem_device::thread::{block_idx_x, grid_dim_x, sync_threads, thread_idx_x};
use nvshmem_device::tma::{self, TensorMap};
use nvshmem_device::wgmma::{self, Accum, KMajor, M64, MatDesc, WgShape};

/// Rows of A (and C) per tile.
pub const BM: usize = 128;
/// Rows of B (columns of C) per tile.
pub const BN: usize = 256;
/// K per stage: one 128-byte swizzled row of bf16.
pub const BK: usize = 64;
/// Pipeline depth.
pub const STAGES: usize = 4;
/// Threads per block: a producer and two consumer warpgroups.
pub const THREADS: u32 = 384;
/// Bytes of one stage's A tile.
const A_BYTES: u32 = (BM * BK * 2) as u32;
/// Bytes of one stage: the A tile, then the B tile.
const STAGE_BYTES: u32 = A_BYTES + (BN * BK * 2) as u32;
/// Bytes of one consumer warpgroup's epilogue staging buffer (a 64 × 128
/// bf16 half tile, see [`Bf16Out`]).
const STAGING_BYTES: u32 = 64 * 128 * 2;
/// Dynamic shared memory the kernels need: 1024 bytes of alignment slack,
/// the ring, the two staging buffers, and the 2 × STAGES barriers
/// (230 464 bytes of the 232 448 a block may have).
pub const SMEM_BYTES: u32 =
    1024 + STAGES as u32 * STAGE_BYTES + 2 * STAGING_BYTES + 16 * STAGES as u32;
/// The TMA box of the A map: 64 (K, inner) × 128 rows, 128-byte swizzle.
pub const A_BOX: (u32, u32) = (BK as u32, BM as u32);
/// The TMA box of the B map: 64 (K, inner) × 256 rows, 128-byte swizzle.
pub const B_BOX: (u32, u32) = (BK as u32, BN as u32);

/// The accumulator of one consumer warpgroup: 64 × 256 f32.
type Acc = Accum<M64<256>>;

/// One output tile for [`run`]: where its A rows come from, and where it is.
#[derive(Clone, Copy, Debug)]
pub struct Tile {
    /// The tensor map of A to load the tile's rows from (one of `run`'s `a_maps`).
    pub a_map: *const TensorMap,
    /// The tile's first row in that map.
    pub a_row: usize,
    /// The tile's first row of C (and of the problem's A).
    pub m0: usize,
    /// The tile's first column of C (first row of B).
    pub n0: usize,
    /// Anything the schedule wants `store` to see (a fused kernel's
    /// destination base address, say), computed once per tile.
    pub user: u64,
}

/// The persistent schedule of a plain GEMM whose A is one map: this block's
/// tiles `b`, `b + grid`, ... of the `(m / BM) × (n / BN)` tiles, M fastest
/// (for [`run`]). `None` when `m < BM` (nothing to compute).
#[inline(always)]
pub fn m_fastest(
    a_map: *const TensorMap,
    m: usize,
    n: usize,
) -> Option<impl Fn(usize) -> Option<Tile>> {
    let mt = core::num::NonZeroUsize::new(m / BM)?;
    Some(persistent(a_map, mt.get() * (n / BN), move |t| {
        (t % mt, t / mt)
    }))
}

/// [`m_fastest`] in [`grouped`](crate::raster::grouped) order: bands of
/// `group` tile rows, so that the blocks running together share A and B
/// panels in L2.
#[inline(always)]
pub fn grouped(
    a_map: *const TensorMap,
    m: usize,
    n: usize,
    group: usize,
) -> Option<impl Fn(usize) -> Option<Tile>> {
    let (mt, nt) = (m / BM, n / BN);
    (mt > 0).then(|| {
        persistent(a_map, mt * nt, move |t| {
            crate::raster::grouped(t, mt, nt, group)
        })
    })
}

/// A persistent schedule over `tiles` tiles of A through `a_map`: this
/// block's `j`-th tile is `order(b + j · grid)`, given as (row tile, column tile).
#[inline(always)]
fn persistent(
    a_map: *const TensorMap,
    tiles: usize,
    order: impl Fn(usize) -> (usize, usize),
) -> impl Fn(usize) -> Option<Tile> {
    let (first, stride) = (block_idx_x() as usize, grid_dim_x() as usize);
    move |j: usize| {
        let t = first + j * stride;
        let (mt, nt) = order(t);
        let m0 = mt * BM;
        (t < tiles).then_some(Tile {
            a_map,
            a_row: m0,
            m0,
            n0: nt * BN,
            user: 0,
        })
    }
}

/// Computes the tiles `schedule(0)`, `schedule(1)`, ... (until `None`) of
/// `C = A · Bᵀ` over depth `k`. A is read through the tile's map (one of
/// `a_maps`: `rows × K` bf16, box [`A_BOX`], 128-byte swizzle), B through
/// `b_map` (`N × K`, box [`B_BOX`]). Before the first load of a tile the
/// producer thread calls `ready(&tile)` (where a fused kernel waits for the
/// tile's rows of A to arrive). Each consumer warpgroup hands its 64 × 256
/// accumulator to `store` ([`Pairs`]: a closure per result pair; [`Bf16Out`]:
/// bf16 through shared memory, coalesced).
///
/// All [`THREADS`] threads call it, with the same schedule; the producer
/// warpgroup returns early (do not synchronize the whole block afterwards).
///
/// # Safety
/// The maps must be 64-byte aligned [`TensorMap`]s in global memory,
/// encoded as above over readable memory; `k` a multiple of [`BK`]; every
/// tile inside the maps; the launch has [`SMEM_BYTES`] of dynamic shared
/// memory and 384 threads (built with `.maxntid 384`); `store` writes
/// nothing that the loads read.
#[inline(always)]
pub unsafe fn run<const MAPS: usize>(
    a_maps: [*const TensorMap; MAPS],
    b_map: *const TensorMap,
    k: usize,
    schedule: impl Fn(usize) -> Option<Tile>,
    mut ready: impl FnMut(&Tile),
    mut store: impl TileStore,
) {
    let raw = shared::dynamic_base();
    let base = SharedAddr::from_ptr(raw);
    let ring = base.add((1024 - base.raw() % 1024) % 1024);
    let staging = ring.add(STAGES as u32 * STAGE_BYTES);
    let bars = staging.add(2 * STAGING_BYTES);
    let full = |s: usize| bars.add(8 * s as u32);
    let empty = |s: usize| bars.add(8 * (STAGES + s) as u32);
    let tid = thread_idx_x();
    if tid == 0 {
        for s in 0..STAGES {
            // SAFETY: 8-byte aligned words after the ring, in the launch's shared memory.
            unsafe {
                tma::mbarrier_init(full(s), 1);
                tma::mbarrier_init(empty(s), 2);
            }
        }
        tma::fence_mbarrier_init();
    }
    sync_threads();
    let ktiles = k / BK;
    let wg = tid / 128;
    if wg == 0 {
        // SAFETY: all 128 threads of warpgroup 0 take this branch (`wg` is the
        // warpgroup's) and reach this line together, its only `setmaxnreg`;
        // 40 is below the kernel's register count (ptxas: at most 168 for 384
        // threads).
        unsafe { wgmma::setmaxnreg_dec::<40>() };
        if tid < 32 && tma::elect_one_sync() {
            // SAFETY: the caller's maps.
            unsafe {
                for map in a_maps {
                    tma::fence_proxy_tensormap_acquire(map);
                    tma::prefetch_tensormap(map);
                }
                tma::fence_proxy_tensormap_acquire(b_map);
                tma::prefetch_tensormap(b_map);
            }
            let mut it = 0usize;
            let mut j = 0;
            while let Some(tile) = schedule(j) {
                j += 1;
                ready(&tile);
                for kt in 0..ktiles {
                    let (s, round) = (it % STAGES, it / STAGES);
                    let slot = ring.add(s as u32 * STAGE_BYTES);
                    // SAFETY: the barriers initialized above; the slot is free once
                    // both consumers released its previous use.
                    unsafe {
                        if round > 0 {
                            tma::mbarrier_wait_parity(empty(s), ((round - 1) & 1) as u32);
                        }
                        tma::mbarrier_arrive_expect_tx(full(s), STAGE_BYTES);
                        let x = (kt * BK) as i32;
                        tma::load_2d(slot, tile.a_map, x, tile.a_row as i32, full(s));
                        tma::load_2d(slot.add(A_BYTES), b_map, x, tile.n0 as i32, full(s));
                    }
                    it += 1;
                }
            }
        }
        return;
    }

    // SAFETY: the consumer warpgroups' threads all reach this line together
    // (warpgroup 0 returned above), their only `setmaxnreg`; 232 is above the
    // kernel's register count, and the producer's `setmaxnreg_dec` frees them.
    unsafe { wgmma::setmaxnreg_inc::<232>() };
    let cw = (wg - 1) as usize;
    let wt = tid % 128;
    let mut it = 0usize;
    let mut j = 0;
    while let Some(tile) = schedule(j) {
        j += 1;
        let mut acc = Acc::zero();
        for kt in 0..ktiles {
            let (s, round) = (it % STAGES, it / STAGES);
            let slot = ring.add(s as u32 * STAGE_BYTES);
            let da = MatDesc::<bf16, KMajor>::k_major_sw128(slot.add(cw as u32 * 64 * 128));
            let db = MatDesc::<bf16, KMajor>::k_major_sw128(slot.add(A_BYTES));
            // SAFETY: the full barrier of the slot; the TMA wrote it in the swizzle the descriptors name.
            unsafe { tma::mbarrier_wait_parity(full(s), (round & 1) as u32) };
            // SAFETY: the warpgroup's 128 threads run this loop together (the
            // schedule and `ktiles` are the same for all, the caller's contract).
            unsafe { wgmma::fence() };
            for kk in 0..(BK / 16) as u32 {
                // SAFETY: as above; the whole warpgroup.
                unsafe {
                    wgmma::mma_async(
                        &mut acc,
                        da.advance(32 * kk),
                        db.advance(32 * kk),
                        kt > 0 || kk > 0,
                    )
                };
            }
            // SAFETY: as for `fence` above, the whole warpgroup together.
            unsafe { wgmma::commit_group() };
            // The previous stage's MMAs are done: its slot can be refilled.
            // SAFETY: as above.
            unsafe { wgmma::wait_group::<1>() };
            if kt > 0 && wt == 0 {
                // SAFETY: one arrival per consumer warpgroup and stage use.
                unsafe { tma::mbarrier_arrive(empty((it - 1) % STAGES)) };
            }
            it += 1;
        }
        // SAFETY: as above, after the K loop (the same trip count for all).
        unsafe { wgmma::wait_group::<0>() };
        if ktiles > 0 && wt == 0 {
            // SAFETY: as above, for the tile's last stage.
            unsafe { tma::mbarrier_arrive(empty((it - 1) % STAGES)) };
        }
        wgmma::fence_operand(&mut acc);
        // The generic pointer of this warpgroup's staging buffer.
        // SAFETY: inside the launch's shared memory (the ring's offset from `raw` plus the staging offset).
        let stage =
            unsafe { raw.add((staging.raw() - base.raw()) as usize + cw * STAGING_BYTES as usize) };
        let stage_addr = staging.add(cw as u32 * STAGING_BYTES);
        // SAFETY: the warpgroup's own staging buffer; the whole warpgroup.
        unsafe { store.store(&tile, cw, wt, &acc, (stage, stage_addr)) };
    }
}

/// [`run`] for a plain GEMM: A through one map, the [`m_fastest`] schedule
/// of the `m × n` result, nothing to wait for before a tile's loads.
///
/// # Safety
/// As [`run`], with `a_map` over `m × k` and `b_map` over `n × k`, `m` a
/// multiple of [`BM`] and `n` of [`BN`].
#[inline(always)]
pub unsafe fn run_m_fastest(
    a_map: *const TensorMap,
    b_map: *const TensorMap,
    (m, n, k): (usize, usize, usize),
    store: impl TileStore,
) {
    // SAFETY: the caller's contract.
    unsafe { run_plain(a_map, b_map, k, m_fastest(a_map, m, n), store) };
}

/// [`run_m_fastest`] with the [`grouped`] schedule (bands of `group` tile rows).
///
/// # Safety
/// As [`run_m_fastest`].
#[inline(always)]
pub unsafe fn run_grouped(
    a_map: *const TensorMap,
    b_map: *const TensorMap,
    (m, n, k): (usize, usize, usize),
    group: usize,
    store: impl TileStore,
) {
    // SAFETY: the caller's contract.
    unsafe { run_plain(a_map, b_map, k, grouped(a_map, m, n, group), store) };
}

/// [`run`] over `schedule` (nothing to do when `None`), A through one map.
///
/// # Safety
/// As [`run`].
#[inline(always)]
unsafe fn run_plain(
    a_map: *const TensorMap,
    b_map: *const TensorMap,
    k: usize,
    schedule: Option<impl Fn(usize) -> Option<Tile>>,
    store: impl TileStore,
) {
    if let Some(schedule) = schedule {
        // SAFETY: the caller's contract.
        unsafe { run([a_map], b_map, k, schedule, |_| {}, store) };
    }
}

/// What the consumer warpgroups do with a finished tile (see [`run`]).
pub trait TileStore {
    /// Stores consumer warpgroup `cw`'s part of `tile` (rows `64·cw ..
    /// 64·cw + 64` of the tile): `wt` is this thread's index in the
    /// warpgroup, `stage` the warpgroup's 16 KiB of shared memory (as a
    /// generic pointer and as a shared-window address). Every thread of the
    /// warpgroup calls it.
    ///
    /// # Safety
    /// As [`run`]'s.
    unsafe fn store(
        &mut self,
        tile: &Tile,
        cw: usize,
        wt: u32,
        acc: &Acc,
        stage: (*mut u8, SharedAddr),
    );
}

/// Calls `f(i, row, col, v0, v1)` for each pair of adjacent columns this
/// thread (`wt` of the warpgroup) holds in `acc`: register `i` (even) and
/// `i + 1`, at (`row`, `col`) and (`row`, `col + 1`).
#[inline(always)]
fn each_pair(acc: &Acc, wt: u32, mut f: impl FnMut(usize, usize, usize, f32, f32)) {
    let mut prev = 0.0f32;
    <M64<256> as WgShape>::each(&acc.regs, |i, v| {
        if i % 2 == 0 {
            prev = v;
        } else {
            let (r, c) = Acc::coord(wt, i - 1);
            f(i - 1, r, c, prev, v);
        }
    });
}

/// A closure called per result pair: `f(&tile, row, col, v0, v1)` for tile
/// elements (`row`, `col`) and (`row`, `col + 1`), straight from registers.
pub struct Pairs<F>(pub F);

impl<F: FnMut(&Tile, usize, usize, f32, f32)> TileStore for Pairs<F> {
    #[inline(always)]
    unsafe fn store(
        &mut self,
        tile: &Tile,
        cw: usize,
        wt: u32,
        acc: &Acc,
        _stage: (*mut u8, SharedAddr),
    ) {
        each_pair(acc, wt, |_, r, c, v0, v1| {
            (self.0)(tile, cw * 64 + r, c, v0, v1)
        });
    }
}

/// bf16 output to the row-major `c` (row stride `ldc` elements, a multiple
/// of 8), staged through shared memory so that global stores are whole
/// 512-byte rows of 16-byte vectors: per half tile (64 × 128), each thread
/// writes its pairs into the staging buffer (16-byte chunks XOR-swizzled by
/// `row % 8`: conflict-free), a named barrier of the warpgroup, then 16-byte
/// copies out, and a barrier before the buffer is reused.
pub struct Bf16Out {
    /// Element (0, 0) of C.
    pub c: *mut bf16,
    /// C's row stride in elements.
    pub ldc: usize,
}

impl TileStore for Bf16Out {
    #[inline(always)]
    unsafe fn store(
        &mut self,
        tile: &Tile,
        cw: usize,
        wt: u32,
        acc: &Acc,
        (stage, stage_addr): (*mut u8, SharedAddr),
    ) {
        // Named barriers 1 and 2: one per consumer warpgroup (0 is the block's).
        let bar = 1 + cw as u32;
        for half in 0..2usize {
            // The previous copy-out from this buffer is done.
            wgmma::named_barrier_sync(bar, 128);
            each_pair(acc, wt, |i, r, c, v0, v1| {
                // Registers 64·half .. 64·half + 64 hold columns 128·half ..
                if i / 64 != half {
                    return;
                }
                let c = c - 128 * half;
                let byte = r * 256 + (((c / 8) ^ (r % 8)) * 16) + (c % 8) * 2;
                // SAFETY: inside the 16 KiB buffer; 4-byte aligned (c even).
                unsafe { *stage.add(byte).cast::<u32>() = Bf16x2::from_f32s(v0, v1).to_bits() };
            });
            wgmma::named_barrier_sync(bar, 128);
            for step in 0..8 {
                let id = step * 128 + wt as usize;
                let (row, chunk) = (id / 16, id % 16);
                let (gr, gc) = (tile.m0 + cw * 64 + row, tile.n0 + half * 128 + chunk * 8);
                // SAFETY: the buffer written above; C holds the tile (the caller's contract).
                unsafe {
                    crate::copy16(
                        stage_addr.add((row * 256 + ((chunk ^ (row % 8)) * 16)) as u32),
                        self.c.add(gr * self.ldc + gc).cast(),
                    )
                };
            }
        }
    }
}
