//! Kernels for the GPU tests of the tensor-core primitives (`tests/tensor.rs`).
//! Each runs one primitive on known data and writes every register or byte it
//! produced, so the host can check it element by element against a CPU model.
//!
//! Without the `sm90a` feature: `mma.sync` (every shape/type of the table),
//! `ldmatrix` (every width, plain and `.trans`), the typed fragment loads and
//! `cp.async` (sm_80+). With it (build for `sm_90a`): TMA loads/stores with
//! `mbarrier`, and one `wgmma` tile per shape.
#![no_std]
// Each kernel's contract is kept by its one caller (tests/tensor.rs).
#![allow(clippy::missing_safety_doc)]

use nvshmem_device::cp_async::{self, SharedAddr};
use nvshmem_device::half::{bf16, f16};
use nvshmem_device::kernel;
use nvshmem_device::mma::{
    self, ColMajor, FragA, FragB, FragC, M16N8K8, M16N8K16, RowMajor, SmemMatrix, Tf32,
};
use nvshmem_device::shared::dynamic_base as smem;
use nvshmem_device::thread::{block_dim_x, lane_id, sync_threads, thread_idx_x};

nvshmem_device::panic_handler!();

/// `D = A · B + C` for one tile: A `M × K`, B `K × N`, C and D `M × N`, all
/// row-major in global memory. One warp.
macro_rules! mma_kernel {
    ($($name:ident: $t:ty, $c:ty, $s:ty, $m:literal, $n:literal, $k:literal;)*) => {$(
        #[kernel]
        pub unsafe fn $name(a: *const $t, b: *const $t, c: *const $c, d: *mut $c) {
            let lane = lane_id();
            // SAFETY (all): the host passes M×K, K×N and M×N elements.
            let fa = FragA::<$t, $s>::from_fn(lane, |r, k| unsafe { *a.add(r * $k + k) });
            let fb = FragB::<$t, $s>::from_fn(lane, |k, n| unsafe { *b.add(k * $n + n) });
            let fc = FragC::<$c, $s>::from_fn(lane, |r, n| unsafe { *c.add(r * $n + n) });
            // SAFETY: the host launches one warp, whose 32 lanes all reach this
            // line together (no branch on the lane before it).
            let fd = unsafe { mma::mma(fa, fb, fc) };
            fd.for_each(lane, |r, n, v| unsafe { *d.add(r * $n + n) = v });
        }
    )*};
}

mma_kernel! {
    mma_m16n8k16_bf16_f32: bf16, f32, M16N8K16, 16, 8, 16;
    mma_m16n8k16_f16_f32: f16, f32, M16N8K16, 16, 8, 16;
    mma_m16n8k16_f16_f16: f16, f16, M16N8K16, 16, 8, 16;
    mma_m16n8k8_bf16_f32: bf16, f32, M16N8K8, 16, 8, 8;
    mma_m16n8k8_f16_f32: f16, f32, M16N8K8, 16, 8, 8;
    mma_m16n8k8_f16_f16: f16, f16, M16N8K8, 16, 8, 8;
    mma_m16n8k8_tf32_f32: Tf32, f32, M16N8K8, 16, 8, 8;
}

/// Copies `n` u16 from global to the start of shared memory (one block).
#[inline(always)]
unsafe fn stage_u16(src: *const u16, n: usize) {
    let sm = smem().cast::<u16>();
    let mut i = thread_idx_x() as usize;
    while i < n {
        // SAFETY: the host launches with room for `n` u16 and passes them.
        unsafe { *sm.add(i) = *src.add(i) };
        i += block_dim_x() as usize;
    }
    sync_threads();
}

/// Every `ldmatrix` form on a 16 × 16 u16 matrix `src` (row-major, 32-byte
/// rows), staged in shared memory. One warp, 512 bytes of shared memory.
/// Lane `l` passes row `l % 8 + 8 · ((l / 8) % 2)`, column `8 · (l / 16)` of
/// the matrix, so matrix `i` (lanes `8i..8i+8`) is block
/// `(rows 8·(i%2).., cols 8·(i/2)..)`. Output: 6 forms (x1, x2, x4, then
/// the `.trans` ones) × 32 lanes × 4 registers (unused ones 0).
#[kernel]
pub unsafe fn ldmatrix_forms(src: *const u16, out: *mut u32) {
    unsafe { stage_u16(src, 256) };
    let lane = lane_id();
    let row = lane % 8 + 8 * ((lane / 8) % 2);
    let col = 8 * (lane / 16);
    let addr = SharedAddr::from_ptr(smem()).add(row * 32 + col * 2);
    let mut regs = [[0u32; 4]; 6];
    // SAFETY: 16-byte aligned rows of the staged matrix; the whole warp.
    unsafe {
        let r = mma::ldmatrix_x1(addr);
        regs[0][0] = r[0];
        let r = mma::ldmatrix_x2(addr);
        regs[1][..2].copy_from_slice(&r);
        regs[2] = mma::ldmatrix_x4(addr);
        let r = mma::ldmatrix_x1_trans(addr);
        regs[3][0] = r[0];
        let r = mma::ldmatrix_x2_trans(addr);
        regs[4][..2].copy_from_slice(&r);
        regs[5] = mma::ldmatrix_x4_trans(addr);
    }
    for (f, r) in regs.iter().enumerate() {
        for (i, v) in r.iter().enumerate() {
            // SAFETY: the host passes 6 × 32 × 4 u32.
            unsafe { *out.add((f * 32 + lane as usize) * 4 + i) = *v };
        }
    }
}

/// The typed fragment loads of a 16 × 16 bf16 matrix `x` (row-major in
/// global memory), staged twice in shared memory: as is (row-major, at 0)
/// and transposed (at 512 bytes). One warp, 1024 bytes of shared memory.
/// Output, per lane, 24 u32: A = x through `SmemMatrix<RowMajor>` (4) and
/// through the transposed copy as `ColMajor` (4); B = x (as K × N) through
/// `RowMajor` at n0 = 0 and 8 (2 + 2); B = xᵀ... as `ColMajor` (the
/// transposed copy read as N × K) at n0 = 0 and 8 (2 + 2); the `ldmatrix_pair`
/// of the transposed copy (4) and the `ldmatrix_trans_pair` of x (4).
#[kernel]
pub unsafe fn frag_loads(x: *const bf16, out: *mut u32) {
    let sm = smem().cast::<bf16>();
    let t = thread_idx_x() as usize;
    for i in (t..256).step_by(32) {
        let (r, c) = (i / 16, i % 16);
        // SAFETY: 256 elements in, 1024 bytes of shared memory.
        unsafe {
            *sm.add(i) = *x.add(i);
            *sm.add(256 + c * 16 + r) = *x.add(i);
        }
    }
    sync_threads();
    let lane = lane_id();
    let base = SharedAddr::from_ptr(sm);
    let rm = SmemMatrix::<bf16, RowMajor>::new(base, 16);
    let cm = SmemMatrix::<bf16, ColMajor>::new(base.add(512), 16);
    let mut o = [0u32; 24];
    // SAFETY: the staged matrices; the whole warp.
    unsafe {
        o[0..4].copy_from_slice(&FragA::<bf16, M16N8K16>::load(&rm, 0, 0, lane).regs);
        o[4..8].copy_from_slice(&FragA::<bf16, M16N8K16>::load(&cm, 0, 0, lane).regs);
        o[8..10].copy_from_slice(&FragB::<bf16, M16N8K16>::load(&rm, 0, 0, lane).regs);
        o[10..12].copy_from_slice(&FragB::<bf16, M16N8K16>::load(&rm, 0, 8, lane).regs);
        o[12..14].copy_from_slice(&FragB::<bf16, M16N8K16>::load(&cm, 0, 0, lane).regs);
        o[14..16].copy_from_slice(&FragB::<bf16, M16N8K16>::load(&cm, 0, 8, lane).regs);
        // Pair loads: K-contiguous storage is the transposed copy (stored rows n).
        let n_row = lane % 8 + 8 * (lane / 16);
        let k_col = 8 * ((lane / 8) % 2);
        let p = FragB::<bf16, M16N8K16>::ldmatrix_pair(cm.addr(n_row, k_col));
        o[16..18].copy_from_slice(&p[0].regs);
        o[18..20].copy_from_slice(&p[1].regs);
        let p = FragB::<bf16, M16N8K16>::ldmatrix_trans_pair(rm.addr(lane % 16, 8 * (lane / 16)));
        o[20..22].copy_from_slice(&p[0].regs);
        o[22..24].copy_from_slice(&p[1].regs);
    }
    for (i, v) in o.iter().enumerate() {
        // SAFETY: the host passes 32 × 24 u32.
        unsafe { *out.add(lane as usize * 24 + i) = *v };
    }
}

/// `cp.async` of `n` bytes (a multiple of 16, at most the launch's shared
/// memory) from `src` to shared memory and back to `dst`, 16-byte chunk `c`
/// by form `c % 6`: `ca4` ×4, `ca8` ×2, `ca16`, `cg16`, `ca16_zfill` and
/// `cg16_zfill` with `src_bytes = c % 17` (the rest of the chunk zero).
/// Groups: chunk `c` goes into group `c % 3`... committed in order, then
/// `wait_group::<1>`, `wait_group::<0>` and `wait_all`. Any block size.
/// The shared memory holds [`STALE`] first, so zeros the copy did not
/// write show.
#[kernel]
pub unsafe fn cp_async_copy(src: *const u8, dst: *mut u8, n: u32) {
    let sm = smem();
    let base = SharedAddr::from_ptr(sm);
    let chunks = n as usize / 16;
    let mut i = thread_idx_x() as usize;
    while i < n as usize {
        // SAFETY: `n` bytes of shared memory.
        unsafe { *sm.add(i) = STALE };
        i += block_dim_x() as usize;
    }
    sync_threads();
    let mut round = 0;
    while round < 3 {
        let mut c = thread_idx_x() as usize;
        while c < chunks {
            if c % 3 == round {
                let (d, s) = (base.add(c as u32 * 16), unsafe { src.add(c * 16) });
                // SAFETY: inside both buffers, aligned to the copy size.
                unsafe {
                    match c % 6 {
                        0 => {
                            for j in 0..4 {
                                cp_async::ca4(d.add(j * 4), s.add(j as usize * 4));
                            }
                        }
                        1 => {
                            cp_async::ca8(d, s);
                            cp_async::ca8(d.add(8), s.add(8));
                        }
                        2 => cp_async::ca16(d, s),
                        3 => cp_async::cg16(d, s),
                        4 => cp_async::ca16_zfill(d, s, (c % 17) as u32),
                        _ => cp_async::cg16_zfill(d, s, (c % 17) as u32),
                    }
                }
            }
            c += block_dim_x() as usize;
        }
        cp_async::commit_group();
        round += 1;
    }
    cp_async::wait_group::<1>();
    cp_async::wait_group::<0>();
    cp_async::wait_all();
    sync_threads();
    let mut i = thread_idx_x() as usize;
    while i < n as usize {
        // SAFETY: `n` bytes of shared memory and of `dst`.
        unsafe { *dst.add(i) = *sm.add(i) };
        i += block_dim_x() as usize;
    }
}

/// What shared memory holds before a copy with zero fill (`cp_async_copy`,
/// `tma_load_box`): not zero, so a zero the copy should have written but
/// did not shows.
pub const STALE: u8 = 0xa5;

#[cfg(feature = "sm90a")]
mod hopper;
#[cfg(feature = "sm90a")]
pub use hopper::*;
