//! Tensor-core bf16 GEMM tiles, `C = A · Bᵀ` with A `M × K` and B `N × K`,
//! both row-major (K contiguous: the "TN" GEMM, PyTorch's `x @ W.T` with
//! `W` a `Linear` weight), f32 accumulation.
//!
//! - [`sm80`]: one 128 × 128 tile per block of 128 threads (4 warps of
//!   64 × 64), `mma.sync.m16n8k16` fed by `ldmatrix` from XOR-swizzled shared
//!   memory, a 4-stage `cp.async` pipeline along K (BK = 32). sm_80+.
//! - [`sm80w`]: the same on a 128 × 256 tile of 256 threads (8 warps of
//!   64 × 64), BK = 64, 128-byte swizzled rows: fewer bytes moved per FLOP.
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
//! caller passes in (`sm80`, `sm80w`) or the mainloop takes itself (`sm90`).
#![no_std]
// The one piece of inline PTX with no device-crate API (`sm90`'s 16-byte
// shared → global copy); on the host it is a stub.
#![cfg_attr(
    all(target_arch = "nvptx64", feature = "sm90a"),
    feature(asm_experimental_arch)
)]

/// Runs `$body` once per listed index with `$i` bound to it: loops over
/// accumulator arrays must be unrolled, or LLVM puts the array in local memory.
macro_rules! unroll {
    ($i:ident in [$($n:literal)*] $body:block) => {
        $( { let $i: usize = $n; $body } )*
    };
}

/// Implements [`MmaTile`] for a module's `Block` with its functions.
macro_rules! mma_tile {
    () => {
        impl $crate::MmaTile for Block {
            const BM: usize = BM;
            const BN: usize = BN;
            #[inline(always)]
            unsafe fn mainloop(
                a: *const bf16,
                lda: usize,
                b: *const bf16,
                ldb: usize,
                k: usize,
                smem: SharedAddr,
            ) -> Acc {
                // SAFETY: the caller's contract.
                unsafe { mainloop(a, lda, b, ldb, k, smem) }
            }
            #[inline(always)]
            unsafe fn store_bf16(acc: &Acc, c: *mut bf16, ldc: usize, at: (usize, usize)) {
                // SAFETY: the caller's contract.
                unsafe { store_bf16(acc, c, ldc, at) }
            }
        }
    };
}

pub mod raster;
pub mod sm80;
pub mod sm80w;
#[cfg(feature = "sm90a")]
pub mod sm90;

/// An `mma.sync` block tile ([`sm80::Block`], [`sm80w::Block`]), for kernels
/// written once for either.
pub trait MmaTile {
    /// Rows of C per tile.
    const BM: usize;
    /// Columns of C per tile.
    const BN: usize;

    /// The tile's `mainloop` (as [`sm80::mainloop`]).
    ///
    /// # Safety
    /// As the module's `mainloop`.
    unsafe fn mainloop(
        a: *const nvshmem_device::half::bf16,
        lda: usize,
        b: *const nvshmem_device::half::bf16,
        ldb: usize,
        k: usize,
        smem: nvshmem_device::cp_async::SharedAddr,
    ) -> sm80::Acc;

    /// The tile's `store_bf16` (as [`sm80::store_bf16`]).
    ///
    /// # Safety
    /// As the module's `store_bf16`.
    unsafe fn store_bf16(
        acc: &sm80::Acc,
        c: *mut nvshmem_device::half::bf16,
        ldc: usize,
        at: (usize, usize),
    );
}
