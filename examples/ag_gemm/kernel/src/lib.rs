//! All-gather + GEMM, the first half of a tensor-parallel MLP layer.
//!
//! Every PE `p` holds a row shard `A_p` (`m_loc × k`, row-major f32) of the
//! activations `A = [A_0; A_1; ...; A_{n-1}]` (`M × k`, `M = n_pes · m_loc`)
//! and its own weight shard `B` (`k × n`, row-major): its column shard of the
//! full weight. Every PE computes `C = A · B` (`M × n`), which needs every
//! other PE's rows of `A`.
//!
//! Kernels (every GEMM kernel: 256 threads, [`SMEM_BYTES`] of dynamic shared
//! memory, one [`BM`]` × `[`BN`] tile of `C` per block; `m_loc` and `M` are
//! multiples of [`BM`], `n` of [`BN`], `k` of [`BK`]):
//!
//! | Kernel | Grid | What it does |
//! |---|---|---|
//! | [`ag_allgather`] | any (grid-stride) | Unfused step 1: pulls every PE's shard into the local `a_full` with `get_block`. |
//! | [`gemm`] | `(n/BN, M/BM)` | Unfused step 2 (and a plain GEMM): `C = a · b`. |
//! | [`ag_gemm_fused`] | `M/BM · n/BN` (1-D) | Fused, staged: blocks compute this PE's own shard's tiles first, then the other shards' in ring order. Block `t` first prefetches remote 128-row panel `t` (if `t` < their number) with `get_block` into `a_full` and publishes it with a flag, so the panels arrive while the local tiles are computed; a block whose tile needs a panel that is not there yet fetches it itself or waits for the block that claimed it. |
//! | [`ag_gemm_fused_p2p`] | `M/BM · n/BN` (1-D) | Fused, direct: the GEMM loads remote panels straight from the owner's memory through `nvshmem_ptr` (P2P peers only). |
//!
//! # Shared memory
//! The tiles live in the launch's dynamic shared memory ([`SMEM_BYTES`]),
//! CUDA's `extern __shared__ float smem[]`:
//! `nvshmem_device::shared::dynamic_base()`, 16-byte aligned, which the
//! builder places in `.shared`, so the accesses are `ld.shared`/`st.shared`.
//!
//! # Ordering of the fused kernel's hand-off
//! Communication and computation overlap across blocks: the gets run in a
//! few blocks while the rest of the GPU computes (on P2P, NVSHMEM's get is a
//! copy by the calling block, so a block cannot overlap its own get with its
//! own math).
//!
//! The hand-off of a fetched panel is between blocks of one PE, so it uses
//! the CUTLASS semaphore pattern on a local flag word: the fetching block
//! writes the panel, a block barrier (`sync_threads`), then one thread
//! stores the flag with release semantics; a waiting block's thread 0 spins
//! with acquire loads, then a block barrier, and only then does the block
//! read the panel. Flags count launch
//! epochs (`2e - 1` claimed, `2e` ready in epoch `e`), so they never need a
//! reset. A block only ever waits for a panel that a *running* block has
//! claimed, so the kernel cannot deadlock, whatever the grid size and however
//! many blocks are resident. Nothing waits for another PE: remote shards are
//! only read, and they are ready before the launch (the host's barrier).
#![no_std]

use core::sync::atomic::{AtomicU32, Ordering, fence};
use nvshmem_device::thread::{block_idx_x, block_idx_y, grid_dim_x, sync_threads, thread_idx_x};
use nvshmem_device::{Pe, SymPtr, get_block, kernel, math, my_pe, n_pes, ptr, shared};

nvshmem_device::panic_handler!();

/// Rows of `C` (and of `A`) per block tile; also the all-gather's panel height.
pub const BM: usize = 128;
/// Columns of `C` (and of `B`) per block tile.
pub const BN: usize = 128;
/// Depth of one shared-memory stage along `k`.
pub const BK: usize = 8;
/// Threads per block of the GEMM kernels.
pub const THREADS: usize = 256;
/// Rows of `A` per piece that [`ag_allgather`] moves with one `get_block`.
pub const AG_ROWS: usize = 8;

/// Floats per shared-memory stage: `As[BK][BM]` (transposed) then `Bs[BK][BN]`.
const STAGE: usize = BK * BM + BK * BN;
/// Two stages of floats, then two control words (the fused kernel's claim results).
const CTL_WORD: usize = 2 * STAGE;
/// Dynamic shared memory every GEMM kernel must be launched with: 16 KiB of
/// double-buffered tiles plus 16 bytes for the control words.
pub const SMEM_BYTES: usize = CTL_WORD * 4 + 16;

/// Four floats, 16-byte aligned: one 128-bit load or store.
#[repr(C, align(16))]
#[derive(Clone, Copy)]
struct F4([f32; 4]);

/// The block's dynamic shared memory (16-byte aligned).
#[inline(always)]
fn smem() -> *mut f32 {
    shared::dynamic_base().cast()
}

#[inline(always)]
unsafe fn ld4(p: *const f32) -> F4 {
    // SAFETY: the caller passes a 16-byte aligned address of 4 readable floats.
    unsafe { *p.cast::<F4>() }
}

#[inline(always)]
unsafe fn st4(p: *mut f32, v: F4) {
    // SAFETY: the caller passes a 16-byte aligned address of 4 writable floats.
    unsafe { *p.cast::<F4>() = v }
}

/// One `BM × BN` tile of `C = A · B`, computed by the whole block (256 threads).
///
/// `a` points at the tile's first row of `A` (row stride `k`), `b` at the
/// tile's first column of `B` (row stride `n`), `c` at the tile's origin in `C`
/// (row stride `n`). Each thread accumulates an 8 × 8 sub-tile in registers,
/// from rows `{4ty..4ty+4} ∪ {64+4ty..}` and columns `{4tx..4tx+4} ∪ {64+4tx..}`,
/// so that its shared-memory reads are conflict-free 128-bit loads. Global
/// loads of stage `kt + 1` are in flight while stage `kt` is computed
/// (double-buffered shared memory, one barrier per stage).
#[inline(always)]
unsafe fn gemm_tile(a: *const f32, b: *const f32, c: *mut f32, n: usize, k: usize) {
    let tid = thread_idx_x() as usize;
    let sm = smem();
    // Global → shared: one float4 of A and one of B per thread per stage.
    let (ar, ac) = (tid / 2, (tid % 2) * 4); // A tile: 128 rows × 8
    let (br, bc) = (tid / 32, (tid % 32) * 4); // B tile: 8 rows × 128
    // Register tile position.
    let (tx, ty) = (tid % 16, tid / 16);
    // SAFETY (whole function): the caller guarantees a full tile's rows and
    // columns, k a multiple of BK, 16-byte aligned rows, and SMEM_BYTES of
    // dynamic shared memory.
    let a_src = unsafe { a.add(ar * k + ac) };
    let b_src = unsafe { b.add(br * n + bc) };
    // Where this thread stores its float4s of a stage: A transposed to
    // `As[ac..ac+4][ar]`, B as is to `Bs[br][bc..bc+4]`.
    let a_dst = unsafe { sm.add(ac * BM + ar) };
    let b_dst = unsafe { sm.add(BK * BM + br * BN + bc) };
    // Where it reads its fragments from: `As[kk][4ty..]`, `Bs[kk][4tx..]`.
    let a_frag = unsafe { sm.add(ty * 4) };
    let b_frag = unsafe { sm.add(BK * BM + tx * 4) };

    let mut acc = [[0f32; 8]; 8];
    let stages = k / BK;
    let mut va = unsafe { ld4(a_src) }.0;
    let mut vb = unsafe { ld4(b_src) }.0;
    unsafe { store_stage(a_dst, b_dst, va, vb) };
    sync_threads();
    for kt in 0..stages {
        let cur = (kt & 1) * STAGE;
        // Stage kt + 1's loads are in flight during stage kt's math.
        let more = kt + 1 < stages;
        if more {
            unsafe {
                va = ld4(a_src.add((kt + 1) * BK)).0;
                vb = ld4(b_src.add((kt + 1) * BK * n)).0;
            }
        }
        macro_rules! step {
            ($($kk:literal)*) => {$(
                // SAFETY: inside stage `cur`.
                let (a0, a1, b0, b1) = unsafe {
                    let row = a_frag.add(cur + $kk * BM);
                    let col = b_frag.add(cur + $kk * BN);
                    (ld4(row), ld4(row.add(64)), ld4(col), ld4(col.add(64)))
                };
                let av = [a0.0[0], a0.0[1], a0.0[2], a0.0[3], a1.0[0], a1.0[1], a1.0[2], a1.0[3]];
                let bv = [b0.0[0], b0.0[1], b0.0[2], b0.0[3], b1.0[0], b1.0[1], b1.0[2], b1.0[3]];
                for (acc_row, &x) in acc.iter_mut().zip(av.iter()) {
                    for (acc, &y) in acc_row.iter_mut().zip(bv.iter()) {
                        *acc = math::fma(x, y, *acc);
                    }
                }
            )*};
        }
        step!(0 1 2 3 4 5 6 7);
        if more {
            let next = STAGE - cur;
            unsafe { store_stage(a_dst.add(next), b_dst.add(next), va, vb) };
        }
        sync_threads();
    }

    for (i, acc_row) in acc.iter().enumerate() {
        let row = if i < 4 {
            ty * 4 + i
        } else {
            64 + ty * 4 + (i - 4)
        };
        unsafe {
            let dst = c.add(row * n);
            st4(
                dst.add(tx * 4),
                F4([acc_row[0], acc_row[1], acc_row[2], acc_row[3]]),
            );
            st4(
                dst.add(64 + tx * 4),
                F4([acc_row[4], acc_row[5], acc_row[6], acc_row[7]]),
            );
        }
    }
}

/// Stores one thread's part of a stage: A's float4 transposed (a column of
/// `As`), B's float4 as is.
#[inline(always)]
unsafe fn store_stage(a_dst: *mut f32, b_dst: *mut f32, va: [f32; 4], vb: [f32; 4]) {
    // SAFETY: the caller's addresses are inside the stage.
    unsafe {
        *a_dst = va[0];
        *a_dst.add(BM) = va[1];
        *a_dst.add(2 * BM) = va[2];
        *a_dst.add(3 * BM) = va[3];
        st4(b_dst, F4([vb[0], vb[1], vb[2], vb[3]]));
    }
}

/// Plain GEMM `C = A · B` (`A`: `M × k`, `B`: `k × n`, `C`: `M × n`, all
/// row-major f32): the unfused path's second kernel.
///
/// Launch: grid `(n / BN, M / BM)`, 256 threads, [`SMEM_BYTES`] dynamic shared memory.
///
/// # Safety
/// `a`, `b` and `c` hold `M × k`, `k × n` and `M × n` floats (`M` the grid's
/// `y` times [`BM`]), rows 16-byte aligned; `n` and `k` are multiples of [`BN`]
/// and [`BK`]; the launch is as above.
#[kernel]
pub unsafe fn gemm(a: *const f32, b: *const f32, c: *mut f32, n: u32, k: u32) {
    let (n, k) = (n as usize, k as usize);
    let (tn, tm) = (block_idx_x() as usize, block_idx_y() as usize);
    // SAFETY: the grid covers exactly M × n; the host checks the sizes.
    unsafe {
        gemm_tile(
            a.add(tm * BM * k),
            b.add(tn * BN),
            c.add(tm * BM * n + tn * BN),
            n,
            k,
        )
    }
}

/// Unfused all-gather: every PE's shard (`m_loc × k` at `a_shard` there) into
/// the local `a_full` (`M × k`, shard `q` at row `q · m_loc`), with one
/// `get_block` per [`AG_ROWS`]-row piece, grid-stride over the pieces.
///
/// Launch: any grid (a few blocks per SM), any block size.
///
/// # Safety
/// Every PE launches it with the same `m_loc` (a multiple of [`AG_ROWS`])
/// and `k`; `a_shard` holds `m_loc × k` floats on every PE, and `a_full`
/// `n_pes · m_loc × k` writable floats.
#[kernel]
pub unsafe fn ag_allgather(a_shard: SymPtr<f32>, a_full: *mut f32, m_loc: u32, k: u32) {
    let (m_loc, k) = (m_loc as usize, k as usize);
    let per_pe = m_loc / AG_ROWS;
    let total = per_pe * n_pes() as usize;
    let mut piece = block_idx_x() as usize;
    while piece < total {
        let (pe, off) = (piece / per_pe, (piece % per_pe) * AG_ROWS * k);
        // SAFETY: `off + AG_ROWS·k ≤ m_loc·k` on every PE; `a_full` holds `M × k`.
        unsafe {
            get_block(
                a_full.add(pe * m_loc * k + off),
                a_shard.add(off),
                AG_ROWS * k,
                Pe::new(pe as u32),
            )
        };
        piece += grid_dim_x() as usize;
    }
}

/// The tile that block `t` of a fused kernel computes: `(shard, panel, column tile)`.
///
/// Blocks start on this PE's own shard (no communication), then walk the
/// other shards in ring order (`me+1`, `me+2`, ...), so that the PEs fetch
/// from different peers at a time; within a shard, one panel's column tiles
/// are consecutive, so one block fetches a panel and its neighbours wait
/// only for that one get.
#[inline(always)]
fn fused_tile(m_loc: usize, n: usize) -> (usize, usize, usize) {
    let (me, npes) = (my_pe().index() as usize, n_pes() as usize);
    let nt = n / BN;
    let per_shard = (m_loc / BM) * nt;
    let t = block_idx_x() as usize;
    let shard = (me + t / per_shard) % npes;
    (shard, (t % per_shard) / nt, t % nt)
}

/// What [`claim`] found.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Claim {
    /// The panel is here (published in this epoch).
    Ready,
    /// This block claimed it: it must fetch and [`publish`] it.
    Fetch,
    /// Another (running) block claimed it and is fetching it.
    Busy,
}

/// Tries to claim the panel behind `flag` for this block in `epoch`; the
/// result is block-uniform. `slot` picks the shared control word that carries
/// the result to the block (one per call site, so no barrier is needed
/// between two claims). Flags: below `2e - 1` free, `2e - 1` claimed, `2e` ready.
#[inline(always)]
fn claim(flag: &AtomicU32, epoch: u32, slot: usize) -> Claim {
    let (claimed, ready) = (2 * epoch - 1, 2 * epoch);
    // SAFETY: the control words follow the two stages in SMEM_BYTES.
    let ctl = unsafe { smem().add(CTL_WORD + slot).cast::<u32>() };
    if thread_idx_x() == 0 {
        // One atomic decides. LLVM 22's NVPTX backend emits every `atomicrmw`
        // as a relaxed `atom` whatever its ordering (only cmpxchg, loads,
        // stores and fences keep theirs), so the acquire is an explicit fence.
        let before = flag.fetch_max(claimed, Ordering::Relaxed);
        let state = if before == ready {
            fence(Ordering::Acquire);
            Claim::Ready
        } else if before == claimed {
            Claim::Busy
        } else {
            Claim::Fetch
        };
        // SAFETY: a shared u32 that only thread 0 writes, before the barrier.
        unsafe { ctl.write_volatile(state as u32) };
    }
    sync_threads();
    // SAFETY: written by thread 0 before the barrier.
    match unsafe { ctl.read_volatile() } {
        0 => Claim::Ready,
        1 => Claim::Fetch,
        _ => Claim::Busy,
    }
}

/// After this block has written a claimed panel: marks it ready for `epoch`.
#[inline(always)]
fn publish(flag: &AtomicU32, epoch: u32) {
    // Every thread's part of the panel is written before the flag.
    sync_threads();
    if thread_idx_x() == 0 {
        flag.store(2 * epoch, Ordering::Release);
    }
}

/// Waits until the panel behind `flag` is ready in `epoch`.
#[inline(always)]
fn wait_ready(flag: &AtomicU32, epoch: u32) {
    if thread_idx_x() == 0 {
        while flag.load(Ordering::Acquire) != 2 * epoch {
            core::hint::spin_loop();
        }
    }
    sync_threads();
}

/// Remote panel `r` (`0..(n_pes - 1) · m_loc / BM`) in the order the fused
/// kernel's blocks need them: `(shard, panel)`.
#[inline(always)]
fn remote_panel(r: usize, m_loc: usize) -> (usize, usize) {
    let (me, npes) = (my_pe().index() as usize, n_pes() as usize);
    let per = m_loc / BM;
    ((me + 1 + r / per) % npes, r % per)
}

/// Fused all-gather + GEMM, staged: `C = [A_0; ...; A_{n-1}] · B` in one
/// kernel, with remote panels fetched by `get_block` into `a_full` (this PE's
/// `M × k` staging buffer; its own slot is never touched) while the other
/// blocks compute. `flags` holds one u32 per 128-row panel of `A` (`M / BM`),
/// zero before the first launch; `epoch` is 1 for the first launch and one
/// more for each later one.
///
/// Launch: 1-D grid of `(M / BM) · (n / BN)` blocks, 256 threads,
/// [`SMEM_BYTES`] dynamic shared memory.
///
/// # Safety
/// As [`gemm`] for `b` and `c` (`M = n_pes · m_loc`, `m_loc` a multiple of
/// [`BM`]); every PE launches it with the same `m_loc`, `n`, `k` and `epoch`,
/// with `a_shard` holding `m_loc × k` floats, `a_full` `M × k`, `flags` `M / BM`
/// words that nothing else touches during the launch; `epoch` as above.
#[kernel]
pub unsafe fn ag_gemm_fused(
    a_shard: SymPtr<f32>,
    a_full: *mut f32,
    flags: *mut u32,
    b: *const f32,
    c: *mut f32,
    m_loc: u32,
    n: u32,
    k: u32,
    epoch: u32,
) {
    let (m_loc, n, k) = (m_loc as usize, n as usize, k as usize);
    let me = my_pe().index() as usize;
    let per = m_loc / BM;
    // Panel `panel` of shard `shard`: its flag, its staging slot, and the get.
    let flag =
        |shard: usize, panel: usize| unsafe { AtomicU32::from_ptr(flags.add(shard * per + panel)) };
    let slot = |shard: usize, panel: usize| unsafe { a_full.add((shard * per + panel) * BM * k) };
    let fetch = |shard: usize, panel: usize| unsafe {
        get_block(
            slot(shard, panel),
            a_shard.add(panel * BM * k),
            BM * k,
            Pe::new(shard as u32),
        )
    };
    // SAFETY of the above: `flags` holds M / BM words that only this kernel
    // touches (atomically) while it runs; slot `shard` of `a_full` is only
    // written by the block that claims its panel, and read after the flag
    // says ready; every PE's `a_shard` holds m_loc × k floats.

    // Prefetch: block `t` fetches remote panel `t` (if nobody has yet) before
    // its own tile, so the first blocks, which compute local tiles, bring in
    // the panels that later blocks need while everyone else computes.
    let t = block_idx_x() as usize;
    if t < (n_pes() as usize - 1) * per {
        let (shard, panel) = remote_panel(t, m_loc);
        let f = flag(shard, panel);
        if claim(f, epoch, 0) == Claim::Fetch {
            fetch(shard, panel);
            publish(f, epoch);
        }
    }

    let (shard, panel, tn) = fused_tile(m_loc, n);
    let a = if shard == me {
        unsafe { a_shard.as_ptr().add(panel * BM * k) }
    } else {
        // Normally prefetched by now; otherwise fetch it or wait for it.
        let f = flag(shard, panel);
        match claim(f, epoch, 1) {
            Claim::Ready => {}
            Claim::Fetch => {
                fetch(shard, panel);
                publish(f, epoch);
            }
            Claim::Busy => wait_ready(f, epoch),
        }
        slot(shard, panel)
    };
    let row0 = shard * m_loc + panel * BM;
    // SAFETY: the grid covers exactly M × n; the host checks the sizes.
    unsafe { gemm_tile(a, b.add(tn * BN), c.add(row0 * n + tn * BN), n, k) }
}

/// Fused all-gather + GEMM, direct: as [`ag_gemm_fused`], but the GEMM loads
/// remote panels straight from the owner's `a_shard` through `nvshmem_ptr`
/// (NVLink / PCIe P2P), with no staging and no flags. Each remote panel is
/// then read once per column tile (`n / BN` times) over the link instead of
/// once. Traps if a peer is not P2P-reachable (the host checks first).
///
/// Launch: as [`ag_gemm_fused`].
///
/// # Safety
/// As [`ag_gemm_fused`], without `a_full` and `flags`; no PE writes its
/// `a_shard` while the kernel runs.
#[kernel]
pub unsafe fn ag_gemm_fused_p2p(
    a_shard: SymPtr<f32>,
    b: *const f32,
    c: *mut f32,
    m_loc: u32,
    n: u32,
    k: u32,
) {
    let (m_loc, n, k) = (m_loc as usize, n as usize, k as usize);
    let (shard, panel, tn) = fused_tile(m_loc, n);
    let off = panel * BM * k;
    let Some(a) = ptr(unsafe { a_shard.add(off) }, Pe::new(shard as u32)) else {
        panic!("ag_gemm_fused_p2p: a peer is not P2P-reachable");
    };
    let row0 = shard * m_loc + panel * BM;
    // SAFETY: as in `ag_gemm_fused`; the owner never writes its shard.
    unsafe { gemm_tile(a.as_ptr(), b.add(tn * BN), c.add(row0 * n + tn * BN), n, k) }
}
