//! Tensor-core bf16 GEMM tiles, `C = A · Bᵀ` with A `M × K` and B `N × K`,
//! both row-major (K contiguous: the "TN" GEMM, PyTorch's `x @ W.T` with
//! `W` a `Linear` weight), f32 accumulation.
//!
//! - [`sm80`]: one 128 × 128 tile per block of 128 threads (4 warps of
//!   64 × 64), `mma.sync.m16n8k16` fed by `ldmatrix` from XOR-swizzled shared
//!   memory, a 4-stage `cp.async` pipeline along K (BK = 32). sm_80+.
//! - [`sm90`] (feature `sm90a`): 128 × 256 tiles on 384 threads: a producer
//!   warpgroup whose one elected thread issues TMA loads into a 4-stage ring
//!   (BK = 64, 128-byte swizzle, `mbarrier` full/empty pairs), and two
//!   consumer warpgroups that each run `wgmma.m64n256k16` on 64 rows.
//!   Persistent: a block walks tiles, the pipeline runs on across them.
//!
//! Both give the caller the accumulators through an epilogue closure called
//! with `(row, col, v0, v1)` for the two adjacent columns `col`, `col + 1` of
//! the tile, so a kernel can write bf16, f32, add into a peer's memory, ...
//!
//! Shared memory comes from the launch's dynamic shared memory
//! ([`dyn_smem`]), `gpu_launch_sized_workgroup_mem`, until the device crate
//! has a shared-memory module.
#![no_std]
#![feature(core_intrinsics, gpu_intrinsics, gpu_launch_sized_workgroup_mem)]
#![feature(asm_experimental_arch)]
#![allow(internal_features)]

/// Runs `$body` once per listed index with `$i` bound to it: loops over
/// accumulator arrays must be unrolled, or LLVM puts the array in local memory.
macro_rules! unroll {
    ($i:ident in [$($n:literal)*] $body:block) => {
        $( { let $i: usize = $n; $body } )*
    };
}

pub mod sm80;
#[cfg(feature = "sm90a")]
pub mod sm90;

/// 16-byte units of dynamic shared memory.
#[repr(C, align(16))]
#[derive(Clone, Copy)]
struct U4([u32; 4]);

/// The start of the block's dynamic shared memory (16-byte aligned).
#[inline(always)]
pub fn dyn_smem() -> *mut u8 {
    core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<U4>().cast()
}

/// Two f32 as two bf16 in one u32 (round to nearest even), `lo` in the low
/// half: `cvt.rn.bf16x2.f32`.
#[inline(always)]
pub fn pack_bf16x2(lo: f32, hi: f32) -> u32 {
    let out: u32;
    // SAFETY: a register conversion.
    unsafe {
        core::arch::asm!("cvt.rn.bf16x2.f32 {o}, {h}, {l};", o = out(reg32) out, h = in(reg32) hi, l = in(reg32) lo,
            options(pure, nomem, nostack))
    };
    out
}
