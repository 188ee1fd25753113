//! Thread, block and grid indices, and block-wide synchronization.
//!
//! The small part of `cuda_std` that kernels need, over `core::arch::nvptx`.
//!
//! ```no_run
//! use nvshmem_device::thread;
//! // One element per thread, grid-stride loop.
//! unsafe fn scale(data: *mut f32, len: usize) {
//!     let mut i = thread::global_index_x();
//!     while i < len {
//!         unsafe { *data.add(i) *= 2.0 };
//!         i += thread::global_stride_x();
//!     }
//! }
//! ```

#[cfg(target_arch = "nvptx64")]
use core::arch::nvptx as arch;

/// On the host the intrinsics are only declared, so kernels type-check there;
/// calling them from host code fails to link.
#[cfg(not(target_arch = "nvptx64"))]
mod arch {
    unsafe extern "C" {
        pub fn _thread_idx_x() -> i32;
        pub fn _thread_idx_y() -> i32;
        pub fn _thread_idx_z() -> i32;
        pub fn _block_idx_x() -> i32;
        pub fn _block_idx_y() -> i32;
        pub fn _block_idx_z() -> i32;
        pub fn _block_dim_x() -> i32;
        pub fn _block_dim_y() -> i32;
        pub fn _block_dim_z() -> i32;
        pub fn _grid_dim_x() -> i32;
        pub fn _grid_dim_y() -> i32;
        pub fn _grid_dim_z() -> i32;
        pub fn bar_warp_sync(mask: u32);
        pub fn barrier_cta_sync_all(id: u32);
    }
}

#[cfg(target_arch = "nvptx64")]
unsafe extern "C" {
    /// `bar.warp.sync` (`__syncwarp(mask)`); `core::arch::nvptx` has no wrapper.
    #[link_name = "llvm.nvvm.bar.warp.sync"]
    fn bar_warp_sync(mask: u32);
    /// `barrier.sync id`: the barrier without `.aligned` (LLVM 22's name;
    /// `core::arch::nvptx::_syncthreads` is the aligned `bar.sync 0`).
    #[link_name = "llvm.nvvm.barrier.cta.sync.all"]
    fn barrier_cta_sync_all(id: u32);
}

/// Threads per warp on every NVIDIA GPU.
pub const WARP_SIZE: u32 = 32;

macro_rules! index_fns {
    ($($(#[$doc:meta])* $name:ident => $intrinsic:ident;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name() -> u32 {
            // SAFETY: reads a special register; always defined in a kernel.
            unsafe { arch::$intrinsic() as u32 }
        }
    )*};
}

index_fns! {
    /// `threadIdx.x`. Example: `let t = nvshmem_device::thread::thread_idx_x();`
    thread_idx_x => _thread_idx_x;
    /// `threadIdx.y`. Example: `let t = nvshmem_device::thread::thread_idx_y();`
    thread_idx_y => _thread_idx_y;
    /// `threadIdx.z`. Example: `let t = nvshmem_device::thread::thread_idx_z();`
    thread_idx_z => _thread_idx_z;
    /// `blockIdx.x`. Example: `let b = nvshmem_device::thread::block_idx_x();`
    block_idx_x => _block_idx_x;
    /// `blockIdx.y`. Example: `let b = nvshmem_device::thread::block_idx_y();`
    block_idx_y => _block_idx_y;
    /// `blockIdx.z`. Example: `let b = nvshmem_device::thread::block_idx_z();`
    block_idx_z => _block_idx_z;
    /// `blockDim.x`. Example: `let n = nvshmem_device::thread::block_dim_x();`
    block_dim_x => _block_dim_x;
    /// `blockDim.y`. Example: `let n = nvshmem_device::thread::block_dim_y();`
    block_dim_y => _block_dim_y;
    /// `blockDim.z`. Example: `let n = nvshmem_device::thread::block_dim_z();`
    block_dim_z => _block_dim_z;
    /// `gridDim.x`. Example: `let g = nvshmem_device::thread::grid_dim_x();`
    grid_dim_x => _grid_dim_x;
    /// `gridDim.y`. Example: `let g = nvshmem_device::thread::grid_dim_y();`
    grid_dim_y => _grid_dim_y;
    /// `gridDim.z`. Example: `let g = nvshmem_device::thread::grid_dim_z();`
    grid_dim_z => _grid_dim_z;
}

/// `blockIdx.x * blockDim.x + threadIdx.x`, as an index.
///
/// ```no_run
/// let i = nvshmem_device::thread::global_index_x();
/// ```
#[inline(always)]
pub fn global_index_x() -> usize {
    block_idx_x() as usize * block_dim_x() as usize + thread_idx_x() as usize
}

/// `gridDim.x * blockDim.x`: the step of a grid-stride loop.
///
/// ```no_run
/// let step = nvshmem_device::thread::global_stride_x();
/// ```
#[inline(always)]
pub fn global_stride_x() -> usize {
    grid_dim_x() as usize * block_dim_x() as usize
}

/// This thread's rank in its block, counting x fastest, then y, then z.
///
/// ```no_run
/// let rank = nvshmem_device::thread::block_thread_rank();
/// ```
#[inline(always)]
pub fn block_thread_rank() -> u32 {
    (thread_idx_z() * block_dim_y() + thread_idx_y()) * block_dim_x() + thread_idx_x()
}

/// The number of threads in this block.
///
/// ```no_run
/// let n = nvshmem_device::thread::block_size();
/// ```
#[inline(always)]
pub fn block_size() -> u32 {
    block_dim_x() * block_dim_y() * block_dim_z()
}

/// This thread's lane in its warp (0..32), for blocks laid out as in CUDA.
///
/// ```no_run
/// let leader = nvshmem_device::thread::lane_id() == 0;
/// ```
#[inline(always)]
pub fn lane_id() -> u32 {
    block_thread_rank() % WARP_SIZE
}

/// This thread's warp within its block.
///
/// ```no_run
/// let w = nvshmem_device::thread::warp_id();
/// ```
#[inline(always)]
pub fn warp_id() -> u32 {
    block_thread_rank() / WARP_SIZE
}

/// `clock64()`: the SM's cycle counter (`%clock64`), for timing and spin
/// waits. Each SM has its own; compare readings of one thread (or one SM).
/// Every call reads the register anew (the compiler neither merges nor
/// hoists two reads).
///
/// ```no_run
/// let start = nvshmem_device::thread::clock64();
/// while nvshmem_device::thread::clock64().wrapping_sub(start) < 1000 {}
/// ```
#[inline(always)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    allow(unreachable_code, unused, unused_unsafe)
)] // host stub
pub fn clock64() -> u64 {
    let t: u64;
    // SAFETY: reads a special register. Not `pure`, so that the compiler
    // keeps every read (a `pure` one could be merged or hoisted out of a loop).
    unsafe {
        crate::nvvm::ptx!("mov.u64 {0}, %clock64;", out(reg64) t, options(nomem, nostack));
    }
    t
}

/// `__syncwarp()`: waits until every thread of the warp reaches it, and orders
/// their memory accesses before it against those after it.
///
/// ```no_run
/// nvshmem_device::thread::sync_warp();
/// ```
#[inline(always)]
pub fn sync_warp() {
    // SAFETY: a warp barrier over all 32 lanes; every lane must reach it, as in CUDA.
    #[cfg(target_arch = "nvptx64")]
    unsafe {
        bar_warp_sync(0xffff_ffff)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    unsafe {
        arch::bar_warp_sync(0xffff_ffff)
    }
}

#[cfg(not(target_arch = "nvptx64"))]
use arch::barrier_cta_sync_all;

/// `__syncthreads()`: waits until every thread of the block has reached a
/// `sync_threads`, and orders their memory accesses (global and shared)
/// before it against those after it.
///
/// ```no_run
/// nvshmem_device::thread::sync_threads();
/// ```
///
/// # Divergent calls hang; they are not undefined behaviour
/// This is PTX's `barrier.sync 0`, **not** CUDA's `bar.sync 0`
/// (`barrier.sync.aligned 0`, what `__syncthreads()` and
/// `core::arch::nvptx::_syncthreads` emit). The `.aligned` form promises
/// that every thread of the block executes the *same* barrier instruction,
/// and the PTX ISA makes it undefined behaviour otherwise, which no safe
/// function could rule out, and an `unsafe` one could not honestly ask
/// for: the source may be uniform while the machine code is not, since
/// Rust does not model convergent operations (core's `_syncthreads` docs
/// say so; rust-lang/rust#137086 was a MIR pass that copied a barrier into
/// both arms of a branch), and inline PTX is not even `convergent` to LLVM.
/// CUDA's cooperative groups sync a block with `barrier.sync` for the same
/// reason, and CCCL calls its aligned cluster barriers undefined behaviour.
///
/// Without `.aligned` the barrier counts threads, not instructions: threads
/// may arrive from different `sync_threads` calls, and from divergent code
/// (on sm_70 and later; every arch this crate supports). The block's other
/// threads still have to arrive: a thread that waits for threads that never
/// come hangs the kernel (threads that have exited are not waited for). A hang, not
/// undefined behaviour, so the function is safe.
///
/// The cost is `ptxas`'s: where it can prove the call block-uniform (the
/// GEMM main loops of this repository) the machine code is the same as
/// `bar.sync 0`'s. Where it cannot (a barrier after a thread-0-only branch
/// or a branch on a value read from shared memory), it first reconverges
/// the warp (`WARPSYNC`, `BSSY`/`BSYNC`): 2 % more instructions in
/// `ag_gemm_fused` (examples/ag_gemm), and 155 registers instead of 128.
#[inline(always)]
pub fn sync_threads() {
    // SAFETY: a barrier; wrong use hangs (see above), it touches no memory of the caller's.
    unsafe { barrier_cta_sync_all(0) }
}
