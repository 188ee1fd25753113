//! Asynchronous global → shared copies (`cp.async`, sm_80+) and the 32-bit
//! shared-memory addresses that they, `ldmatrix`, `mbarrier`, TMA and
//! `wgmma` descriptors take.
//!
//! A copy is issued by one thread, runs in the background and lands in shared
//! memory once its group is waited for: [`commit_group`] closes the group of
//! the copies this thread issued since the last one, [`wait_group`]`::<N>()`
//! waits until at most `N` of this thread's groups are still in flight. The
//! data is then visible to this thread; other threads of the block see it
//! after a barrier (`sync_threads`). This is the multi-stage pipeline of
//! Ampere GEMMs:
//!
//! ```no_run
//! use nvshmem_device::cp_async::{self, SharedAddr};
//! // Stage `s` of a 3-stage pipeline: issue, commit, then wait for the oldest.
//! unsafe fn stage(dst: SharedAddr, src: *const u8) {
//!     unsafe { cp_async::cg16(dst, src) };
//!     cp_async::commit_group();
//!     cp_async::wait_group::<2>();
//!     nvshmem_device::thread::sync_threads();
//! }
//! ```

/// An address in the block's shared memory window (`.shared::cta`), as the
/// 32-bit value that `ldmatrix`, `cp.async`, `mbarrier`, TMA and `wgmma`
/// matrix descriptors take (CUDA's `__cvta_generic_to_shared`).
///
/// It is only an address: making one is safe, using it is not (the functions
/// that read or write through it are `unsafe`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct SharedAddr(pub u32);

impl SharedAddr {
    /// The shared-window address of a generic pointer into shared memory
    /// (`cvta.to.shared.u64`). The pointer must point into this block's shared
    /// memory for the result to mean anything; nothing is dereferenced.
    #[inline(always)]
    pub fn from_ptr<T>(p: *const T) -> SharedAddr {
        #[cfg(target_arch = "nvptx64")]
        {
            let out: u64;
            // SAFETY: an address conversion; no memory access.
            unsafe {
                core::arch::asm!(
                    "cvta.to.shared.u64 {o}, {p};",
                    o = out(reg64) out,
                    p = in(reg64) p as u64,
                    options(pure, nomem, nostack)
                )
            };
            SharedAddr(out as u32)
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = p;
            crate::device_only()
        }
    }

    /// This address plus `bytes`.
    #[inline(always)]
    pub const fn add(self, bytes: u32) -> SharedAddr {
        SharedAddr(self.0.wrapping_add(bytes))
    }

    /// The raw 32-bit value.
    #[inline(always)]
    pub const fn raw(self) -> u32 {
        self.0
    }
}

macro_rules! cp_async_fns {
    ($($(#[$doc:meta])* $name:ident, $zname:ident: $cache:literal, $bytes:literal;)*) => {$(
        device_asm! {
            $(#[$doc])*
            ///
            /// # Safety
            /// `dst` must be a shared-memory address of this block, and `src` a
            /// global-memory address, both readable/writable for the copy's size
            /// and aligned to it; nothing else may access `dst` until the copy's
            /// group has been waited for.
            pub unsafe fn $name(dst: SharedAddr, src: *const u8) =
                concat!("cp.async.", $cache, ".shared.global [{d}], [{s}], ", $bytes, ";"),
                [d = in(reg32) dst.0, s = in(reg64) src as u64,];

            #[doc = concat!("[`", stringify!($name), "`] with zero-fill: copies the first `src_bytes` (0 to ",
                $bytes, ") bytes and writes zeros to the rest (`cp.async.", $cache,
                ".shared.global [dst], [src], ", $bytes, ", src_bytes`). With `src_bytes == 0` nothing is read, so ",
                "`src` may then be any address: the out-of-bounds rows of a tile.")]
            ///
            /// # Safety
            /// As the plain form, for `src_bytes` readable bytes at `src`.
            pub unsafe fn $zname(dst: SharedAddr, src: *const u8, src_bytes: u32) =
                concat!("cp.async.", $cache, ".shared.global [{d}], [{s}], ", $bytes, ", {n};"),
                [d = in(reg32) dst.0, s = in(reg64) src as u64, n = in(reg32) src_bytes,];
        }
    )*};
}

cp_async_fns! {
    /// Copies 4 bytes global → shared, cached in L1 and L2 (`cp.async.ca.shared.global [dst], [src], 4`).
    ca4, ca4_zfill: "ca", "4";
    /// Copies 8 bytes global → shared, cached in L1 and L2 (`cp.async.ca.shared.global [dst], [src], 8`).
    ca8, ca8_zfill: "ca", "8";
    /// Copies 16 bytes global → shared, cached in L1 and L2 (`cp.async.ca.shared.global [dst], [src], 16`).
    ca16, ca16_zfill: "ca", "16";
    /// Copies 16 bytes global → shared, cached in L2 only (`cp.async.cg.shared.global [dst], [src], 16`):
    /// the usual choice for GEMM tiles, which shared memory reuses instead of L1.
    cg16, cg16_zfill: "cg", "16";
}

device_asm! {
    /// Closes the group of `cp.async` copies this thread issued since the last
    /// commit (`cp.async.commit_group`). An empty group is allowed.
    pub fn commit_group() = "cp.async.commit_group;";

    /// Waits until at most `N` of this thread's committed `cp.async` groups are
    /// still in flight (`cp.async.wait_group N`); the others' data is then in
    /// shared memory and visible to this thread.
    pub fn wait_group<const N: u32>() = "cp.async.wait_group {n};", [n = const N,];

    /// Waits for every `cp.async` copy this thread issued, committed or not
    /// (`cp.async.wait_all`).
    pub fn wait_all() = "cp.async.wait_all;";
}
