//! Private plumbing for the compute modules: LLVM's NVVM intrinsics, inline
//! PTX that compiles away on the host, and the host stubs.
//!
//! On nvptx64 the intrinsics are `extern "C"` declarations with LLVM's names
//! (`link_llvm_intrinsics`); LLVM knows their semantics (warp collectives are
//! `convergent`, special-register reads are pure). On the host the same names
//! are Rust functions that panic, so the crate type-checks there.

/// Called by device-only functions when the crate is built for the host.
#[cfg(not(target_arch = "nvptx64"))]
#[cold]
#[inline(never)]
pub(crate) fn host_unsupported() -> ! {
    panic!("nvshmem-device: a device-only function was called on the host")
}

/// Inline PTX on nvptx64; on the host, a call to [`host_unsupported`]. Outputs
/// go to `let` bindings declared before it, which the host never reads.
macro_rules! ptx {
    ($($t:tt)*) => {{
        #[cfg(target_arch = "nvptx64")]
        {
            core::arch::asm!($($t)*);
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            $crate::nvvm::host_unsupported();
        }
    }};
}
pub(crate) use ptx;

/// Declares NVVM intrinsics: `extern` with the LLVM name on nvptx64, a
/// panicking stub with the same signature on the host.
macro_rules! intrinsics {
    ($($llvm:literal => fn $name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)?;)*) => {
        #[cfg(target_arch = "nvptx64")]
        // A tuple return is LLVM's literal struct return (`elect.sync`'s
        // `{i32, i1}`), as in `core::arch`'s intrinsic declarations.
        #[allow(improper_ctypes)]
        unsafe extern "C" {
            $(
                #[link_name = $llvm]
                pub(crate) fn $name($($arg: $ty),*) $(-> $ret)?;
            )*
        }
        $(
            #[cfg(not(target_arch = "nvptx64"))]
            #[allow(unused_variables, clippy::missing_safety_doc)]
            pub(crate) unsafe fn $name($($arg: $ty),*) $(-> $ret)? {
                host_unsupported()
            }
        )*
    };
}

intrinsics! {
    "llvm.nvvm.shfl.sync.idx.i32" => fn shfl_sync_idx(mask: u32, value: u32, lane: u32, clamp: u32) -> u32;
    "llvm.nvvm.shfl.sync.up.i32" => fn shfl_sync_up(mask: u32, value: u32, delta: u32, clamp: u32) -> u32;
    "llvm.nvvm.shfl.sync.down.i32" => fn shfl_sync_down(mask: u32, value: u32, delta: u32, clamp: u32) -> u32;
    "llvm.nvvm.shfl.sync.bfly.i32" => fn shfl_sync_bfly(mask: u32, value: u32, lane_mask: u32, clamp: u32) -> u32;
    "llvm.nvvm.vote.all.sync" => fn vote_all_sync(mask: u32, predicate: bool) -> bool;
    "llvm.nvvm.vote.any.sync" => fn vote_any_sync(mask: u32, predicate: bool) -> bool;
    "llvm.nvvm.vote.uni.sync" => fn vote_uni_sync(mask: u32, predicate: bool) -> bool;
    "llvm.nvvm.vote.ballot.sync" => fn vote_ballot_sync(mask: u32, predicate: bool) -> u32;
    "llvm.nvvm.match.any.sync.i32" => fn match_any_sync_i32(mask: u32, value: u32) -> u32;
    "llvm.nvvm.match.any.sync.i64" => fn match_any_sync_i64(mask: u32, value: u64) -> u32;
    "llvm.nvvm.activemask" => fn activemask() -> u32;
    "llvm.nvvm.bar.warp.sync" => fn bar_warp_sync(mask: u32);
    "llvm.nvvm.isspacep.shared" => fn isspacep_shared(ptr: *const u8) -> bool;
    "llvm.nvvm.read.ptx.sreg.laneid" => fn laneid() -> u32;
    "llvm.nvvm.read.ptx.sreg.lanemask.eq" => fn lanemask_eq() -> u32;
    "llvm.nvvm.read.ptx.sreg.lanemask.lt" => fn lanemask_lt() -> u32;
    "llvm.nvvm.read.ptx.sreg.lanemask.le" => fn lanemask_le() -> u32;
    "llvm.nvvm.read.ptx.sreg.lanemask.gt" => fn lanemask_gt() -> u32;
    "llvm.nvvm.read.ptx.sreg.lanemask.ge" => fn lanemask_ge() -> u32;
    // `.aligned` warpgroup instructions: as intrinsics they are `convergent`,
    // which `asm!` is not, so LLVM cannot duplicate them into divergent paths.
    "llvm.nvvm.wgmma.fence.sync.aligned" => fn wgmma_fence();
    "llvm.nvvm.wgmma.commit_group.sync.aligned" => fn wgmma_commit_group();
    "llvm.nvvm.wgmma.wait_group.sync.aligned" => fn wgmma_wait_group(pending: i64);
    "llvm.nvvm.setmaxnreg.inc.sync.aligned.u32" => fn setmaxnreg_inc(registers: u32);
    "llvm.nvvm.setmaxnreg.dec.sync.aligned.u32" => fn setmaxnreg_dec(registers: u32);
    "llvm.nvvm.elect.sync" => fn elect_sync(mask: u32) -> (u32, bool);
}
