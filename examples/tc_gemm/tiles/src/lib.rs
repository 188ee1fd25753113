//! Tensor-core bf16 GEMM tiles, `C = A · Bᵀ` with A `M × K` and B `N × K`,
//! both row-major (K contiguous: the "TN" GEMM, PyTorch's `x @ W.T` with
//! `W` a `Linear` weight), f32 accumulation.
//!
//! - [`sm80`]: one 128 × 128 tile per block of 128 threads (4 warps of
//!   64 × 64), `mma.sync.m16n8k16` fed by `ldmatrix` from XOR-swizzled shared
//!   memory, a 4-stage `cp.async` pipeline along K (BK = 32). sm_80+.
//! - `sm90` (feature `sm90a`): 128 × 256 tiles on 384 threads: a producer
//!   warpgroup whose one elected thread issues TMA loads into a 4-stage ring
//!   (BK = 64, 128-byte swizzle, `mbarrier` full/empty pairs), and two
//!   consumer warpgroups that each run `wgmma.m64n256k16` on 64 rows.
//!   Persistent: a block walks tiles, the pipeline runs on across them.
//!
//! [`raster`] orders the tiles (grouped order, for L2 reuse between the
//! blocks that run together).
//!
//! All give the caller the accumulators through an epilogue closure called
//! with `(row, col, v0, v1)` for the two adjacent columns `col`, `col + 1` of
//! the tile, so a kernel can write bf16, f32, add into a peer's memory, ...
//!
//! Shared memory is the launch's dynamic shared memory
//! (`nvshmem_device::shared::dynamic_base()`, 16-byte aligned), which the
//! caller passes in (`sm80`) or the mainloop takes itself (`sm90`).
#![no_std]
// The one piece of inline PTX with no device-crate API (the staged
// epilogues' 16-byte shared → global copy, [`copy16`]); on the host it is a stub.
#![cfg_attr(target_arch = "nvptx64", feature(asm_experimental_arch))]

/// Runs `$body` once per listed index with `$i` bound to it: loops over
/// accumulator arrays must be unrolled, or LLVM puts the array in local memory.
macro_rules! unroll {
    ($i:ident in [$($n:literal)*] $body:block) => {
        $( { let $i: usize = $n; $body } )*
    };
}

pub mod raster;
pub mod sm80;
#[cfg(feature = "sm90a")]
pub mod sm90;

use nvshmem_device::cp_async::SharedAddr;

/// Copies 16 bytes shared → global in one `ld.shared.v4.b32` and one
/// `st.global.v4.b32` (a plain 16-byte struct copy becomes two 8-byte ones):
/// the staged epilogues of [`sm80`] (`Config::STAGED_EPILOGUE`) and `sm90`.
///
/// # Safety
/// `src` 16 readable bytes of shared memory, `dst` 16 writable bytes of
/// global memory, both 16-byte aligned.
#[inline(always)]
unsafe fn copy16(src: SharedAddr, dst: *mut u8) {
    // SAFETY: the caller's contract.
    #[cfg(target_arch = "nvptx64")]
    unsafe {
        core::arch::asm!(
            "{{ .reg .b32 r0, r1, r2, r3;",
            "ld.shared.v4.b32 {{r0, r1, r2, r3}}, [{s}];",
            "st.global.v4.b32 [{d}], {{r0, r1, r2, r3}}; }}",
            s = in(reg32) src.raw(),
            d = in(reg64) dst as u64,
            options(nostack)
        )
    };
    // The crate type-checks on the host; nothing runs there.
    #[cfg(not(target_arch = "nvptx64"))]
    unreachable!("copy16 {src:?} -> {dst:?}: inline PTX called on the host");
}

/// `x`, through an inline-PTX `mov` the compiler may not hoist out of a loop
/// or merge with another (not `pure`): whatever is computed from it stays
/// where it is used instead of living in registers across the loop.
#[inline(always)]
fn opaque(x: u32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let y: u32;
        // SAFETY: a register move.
        unsafe {
            core::arch::asm!("mov.b32 {0}, {1};", out(reg32) y, in(reg32) x, options(nomem, nostack))
        };
        y
    }
    #[cfg(not(target_arch = "nvptx64"))]
    x
}
