//! This PE, the job's size, and direct addresses of peers' symmetric memory.

pub use nvshmem_types::{Pe, SymPtr};

/// This PE's number (`nvshmem_my_pe`).
///
/// ```no_run
/// let me = nvshmem_device::my_pe();
/// ```
#[inline(always)]
pub fn my_pe() -> Pe {
    // SAFETY: reads NVSHMEM's device state; no arguments.
    Pe::new(unsafe { crate::ffi::nvshmem_my_pe() } as u32)
}

/// The number of PEs in the job (`nvshmem_n_pes`).
///
/// ```no_run
/// let next = nvshmem_device::my_pe().ring_next(nvshmem_device::n_pes());
/// ```
#[inline(always)]
pub fn n_pes() -> u32 {
    // SAFETY: reads NVSHMEM's device state; no arguments.
    unsafe { crate::ffi::nvshmem_n_pes() as u32 }
}

/// A local pointer through which this thread can load and store `dest` on PE
/// `pe` directly (`nvshmem_ptr`): `Some` when `pe` is reachable over NVLink
/// or PCIe peer access (always for this PE), `None` otherwise.
///
/// Computing the address is safe; accessing through it is as `unsafe` as any
/// raw pointer, and races with other PEs are the caller's to avoid.
///
/// ```no_run
/// use nvshmem_device::{Pe, SymPtr, ptr};
/// unsafe fn bump(counter: SymPtr<u32>, peer: Pe) {
///     if let Some(p) = ptr(counter, peer) {
///         unsafe { *p.as_ptr() += 1 }; // a plain store over NVLink
///     }
/// }
/// ```
#[inline(always)]
#[cfg_attr(feature = "debug-checks", track_caller)]
pub fn ptr<T>(dest: SymPtr<T>, pe: Pe) -> Option<core::ptr::NonNull<T>> {
    crate::debug::check_pe(pe);
    // SAFETY: `nvshmem_ptr` only translates the address; it dereferences nothing.
    let p =
        unsafe { crate::ffi::nvshmem_ptr(dest.as_ptr() as *const core::ffi::c_void, pe.to_c()) };
    core::ptr::NonNull::new(p.cast())
}
