//! GEMM + reduce-scatter, the second half of a tensor-parallel MLP: every PE
//! holds a K-shard of the activations, `A_p` (`M × k_loc`, bf16), and of the
//! weight, `B_p` (`N × k_loc`, `Linear` layout), so its `P_p = A_p · B_pᵀ`
//! (`M × N`) is a partial sum: `C = Σ_p P_p`. PE `q` owns rows
//! `q·m_loc .. (q+1)·m_loc` of C (`M = n_pes · m_loc`), in f32.
//!
//! | Kernel | Launch | What |
//! |---|---|---|
//! | [`gemm_rs_partial_mma`] | grid `(N/128, M/128)`, 128 threads, `sm80::SMEM_BYTES` | Unfused step 1: `P_p` in f32 into the symmetric `partial` (`M × N`). |
//! | [`rs_sum`] | any grid | Unfused step 2, after a barrier: `c = Σ_q partial_q[my rows]`, read from every peer through `nvshmem_ptr` (P2P peers only). |
//! | [`gemm_rs_mma_fused`] | persistent 1-D grid, 128 threads | Fused: tiles ordered by owner `me+1, me+2, ..., me` (spreading the traffic), each tile's f32 values added straight into its owner's `c` (`red.relaxed.sys.add.f32` through `nvshmem_ptr`). `c` must be zero on every PE before the launch. |
//! | `gemm_rs_partial_wgmma`, `gemm_rs_wgmma_fused` (feature `sm90a`) | persistent, 384 threads, `sm90::SMEM_BYTES` | The same with the `wgmma` + TMA mainloop (128 × 256 tiles). |
//!
//! The fused kernels never wait for another PE, so they need no co-residency;
//! the sum's order differs between runs (atomics), so results match the
//! unfused path to rounding, not bit for bit. Both trap when a peer is not
//! reachable with loads and stores (the host checks `peer_ptr` first).
#![no_std]

use nvshmem_device::atomic::{self, Relaxed, Sys};
use nvshmem_device::cp_async::SharedAddr;
use nvshmem_device::half::bf16;
use nvshmem_device::thread::{block_dim_x, block_idx_x, global_index_x, grid_dim_x};
use nvshmem_device::{Pe, SymPtr, kernel, my_pe, n_pes, ptr, shared};
use tc_gemm_tiles::sm80;

nvshmem_device::panic_handler!();

/// `*p += v` atomically, visible system-wide (`red.relaxed.sys.add.f32`,
/// generic address: local or a peer's through `nvshmem_ptr`).
#[inline(always)]
unsafe fn red_add(p: *mut f32, v: f32) {
    // SAFETY: the caller passes a valid f32 address.
    unsafe { atomic::add(p, v, Relaxed, Sys) };
}

/// The base of PE `pe`'s `c` as a pointer this GPU can store to.
#[inline(always)]
fn peer_base(c: SymPtr<f32>, pe: usize) -> *mut f32 {
    match ptr(c, Pe::new(pe as u32)) {
        Some(p) => p.as_ptr(),
        None => panic!("gemm_rs: a peer is not P2P-reachable"),
    }
}

/// Unfused step 1: `partial = A · Bᵀ` in f32 (`a`: `M × k`, `b`: `n × k`,
/// `partial`: `M × n`), one 128 × 128 tile per block.
///
/// # Safety
/// `a`, `b` and `partial` hold `M × k` and `n × k` bf16 and `M × n` f32
/// (`M`, `n` the grid's `y` and `x` times 128), 16-byte aligned; the launch
/// has 128 threads and `sm80::SMEM_BYTES` of dynamic shared memory.
#[kernel(max_threads = 128)]
pub unsafe fn gemm_rs_partial_mma(
    a: *const bf16,
    b: *const bf16,
    partial: *mut f32,
    n: u32,
    k: u32,
) {
    let (n, k) = (n as usize, k as usize);
    let (m0, n0) = sm80::grid_tile();
    // SAFETY: the grid covers M × n in whole tiles.
    let acc = unsafe { sm80::tile(a, b, k, (m0, n0)) };
    sm80::epilogue(&acc, |r, col, v0, v1| {
        // SAFETY: inside `partial`; 8-byte aligned pair.
        unsafe { *partial.add((m0 + r) * n + n0 + col).cast::<[f32; 2]>() = [v0, v1] };
    });
}

/// Unfused step 2: this PE's rows of the sum, `c[i] = Σ_q partial_q[me·m_loc·n + i]`
/// for `i < m_loc · n`, reading every PE's `partial` directly (grid-stride,
/// 4 floats per step). Launch after a barrier that follows step 1 on every PE.
///
/// # Safety
/// Every PE launches it with the same `m_loc` and `n` (`m_loc · n` a
/// multiple of 4); `partial` holds `n_pes · m_loc × n` floats on every PE,
/// written before the barrier and not during the kernel, and every peer is
/// reachable with loads (it traps otherwise); `c` holds `m_loc × n` floats.
#[kernel]
pub unsafe fn rs_sum(partial: SymPtr<f32>, c: *mut f32, m_loc: u32, n: u32) {
    let (me, np) = (my_pe().index() as usize, n_pes() as usize);
    let len = m_loc as usize * n as usize;
    let off = me * len;
    let stride = (grid_dim_x() * block_dim_x()) as usize * 4;
    let mut i = global_index_x() * 4;
    while i < len {
        let mut s = [0f32; 4];
        for d in 0..np {
            let q = (me + d) % np;
            // SAFETY: every PE's partial holds n_pes · len floats; 16-byte aligned (len % 4 == 0).
            let v = unsafe { *peer_base(partial, q).add(off + i).cast::<[f32; 4]>() };
            for (a, b) in s.iter_mut().zip(v) {
                *a += b;
            }
        }
        // SAFETY: c holds len floats.
        unsafe { *c.add(i).cast::<[f32; 4]>() = s };
        i += stride;
    }
}

/// The `j`-th tile of this block in a fused kernel's order: `(owner, row
/// tile within the owner's rows, column tile)`, owners `me+1, ..., me`.
#[inline(always)]
fn fused_tile(j: usize, m_loc: usize, bm: usize, n_tiles: usize) -> Option<(usize, usize, usize)> {
    let (me, np) = (my_pe().index() as usize, n_pes() as usize);
    let per_owner = (m_loc / bm) * n_tiles;
    let t = block_idx_x() as usize + j * grid_dim_x() as usize;
    if n_tiles == 0 || t >= np * per_owner {
        return None;
    }
    Some((
        (me + 1 + t / per_owner) % np,
        (t % per_owner) / n_tiles,
        t % n_tiles,
    ))
}

/// Fused GEMM + reduce-scatter with `mma.sync`: `a` `M × k`, `b` `n × k`
/// (bf16), `c` this PE's `m_loc × n` f32 rows of the sum, zeroed on every PE
/// before the launch. `m_loc` and `n` multiples of 128, `k` of 32.
///
/// # Safety
/// Every PE launches it with the same `m_loc`, `n` and `k`; `a` and `b` hold
/// `n_pes · m_loc × k` and `n × k` bf16, 16-byte aligned; `c` holds
/// `m_loc × n` floats on every PE, which only this kernel's atomics touch
/// while it runs, and every peer is reachable with stores (it traps
/// otherwise); the launch has 128 threads and `sm80::SMEM_BYTES` of dynamic
/// shared memory.
#[kernel(max_threads = 128)]
pub unsafe fn gemm_rs_mma_fused(
    a: *const bf16,
    b: *const bf16,
    c: SymPtr<f32>,
    m_loc: u32,
    n: u32,
    k: u32,
) {
    let (m_loc, n, k) = (m_loc as usize, n as usize, k as usize);
    let smem = SharedAddr::from_ptr(shared::dynamic_base());
    let mut j = 0;
    while let Some((owner, mt, nt)) = fused_tile(j, m_loc, sm80::BM, n / sm80::BN) {
        j += 1;
        let (row0, n0) = (mt * sm80::BM, nt * sm80::BN);
        let dst = peer_base(c, owner);
        // SAFETY: the tile's rows of A (global row owner·m_loc + row0) and of B.
        let acc = unsafe {
            sm80::mainloop(
                a.add((owner * m_loc + row0) * k),
                k,
                b.add(n0 * k),
                k,
                k,
                smem,
            )
        };
        sm80::epilogue(&acc, |r, col, v0, v1| {
            // SAFETY: inside the owner's m_loc × n rows.
            unsafe {
                let p = dst.add((row0 + r) * n + n0 + col);
                red_add(p, v0);
                red_add(p.add(1), v1);
            }
        });
    }
}

#[cfg(feature = "sm90a")]
mod hopper {
    use super::*;
    use nvshmem_device::tma::TensorMap;
    use tc_gemm_tiles::sm90;

    /// Unfused step 1 with `wgmma` + TMA, persistent over the
    /// `(m / 128) × (n / 256)` tiles: `partial = A · Bᵀ` in f32. Maps as in
    /// `tc-gemm-kernels`' `gemm_bf16_wgmma`.
    ///
    /// # Safety
    /// The maps are TMA descriptors (in device memory) of A (`m × k`) and B
    /// (`n × k`); `partial` holds `m × n` floats; the launch has 384 threads
    /// and `sm90::SMEM_BYTES` of dynamic shared memory, and runs on sm_90a.
    #[kernel(max_threads = 384)]
    pub unsafe fn gemm_rs_partial_wgmma(
        a_map: *const TensorMap,
        b_map: *const TensorMap,
        partial: *mut f32,
        m: u32,
        n: u32,
        k: u32,
    ) {
        let dims = (m as usize, n as usize, k as usize);
        let n = dims.1;
        let store = sm90::Pairs(|t: &sm90::Tile, r, col, v0, v1| {
            // SAFETY: inside `partial` (M × n f32); 8-byte aligned pair.
            unsafe { *partial.add((t.m0 + r) * n + t.n0 + col).cast::<[f32; 2]>() = [v0, v1] };
        });
        // SAFETY: the host's maps and sizes.
        unsafe { sm90::run_m_fastest(a_map, b_map, dims, store) };
    }

    /// Fused GEMM + reduce-scatter with `wgmma` + TMA: `a_map` over A
    /// (`M × k`, box 64 × 128), `b_map` over B (`n × k`, box 64 × 256); `c`
    /// as in [`gemm_rs_mma_fused`]. `m_loc` a multiple of 128, `n` of 256, `k` of 64.
    ///
    /// # Safety
    /// As [`gemm_rs_mma_fused`], with the maps TMA descriptors (in device
    /// memory) of A and B; the launch has 384 threads and `sm90::SMEM_BYTES`
    /// of dynamic shared memory, and runs on sm_90a.
    #[kernel(max_threads = 384)]
    pub unsafe fn gemm_rs_wgmma_fused(
        a_map: *const TensorMap,
        b_map: *const TensorMap,
        c: SymPtr<f32>,
        m_loc: u32,
        n: u32,
        k: u32,
    ) {
        let (m_loc, n, k) = (m_loc as usize, n as usize, k as usize);
        let schedule = |j: usize| {
            let (owner, mt, nt) = fused_tile(j, m_loc, sm90::BM, n / sm90::BN)?;
            let row0 = mt * sm90::BM;
            let m0 = owner * m_loc + row0;
            // The owner's rows start at `row0` of its `c`: store through that base.
            // SAFETY: inside the owner's m_loc × n.
            let dst = unsafe { peer_base(c, owner).add(row0 * n) };
            Some(sm90::Tile {
                a_map,
                a_row: m0,
                m0,
                n0: nt * sm90::BN,
                user: dst as u64,
            })
        };
        // SAFETY: the host's maps, sizes and launch.
        unsafe {
            sm90::run(
                [a_map],
                b_map,
                k,
                schedule,
                |_| {},
                sm90::Pairs(|t: &sm90::Tile, r, col, v0, v1| {
                    let p = (t.user as *mut f32).add(r * n + t.n0 + col);
                    red_add(p, v0);
                    red_add(p.add(1), v1);
                }),
            )
        };
    }
}
#[cfg(feature = "sm90a")]
pub use hopper::*;
