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
/// or PCIe peer access (always for this PE), `None` otherwise, and `None`
/// for a PE that is not in the job (`pe >= n_pes()`).
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
pub fn ptr<T>(dest: SymPtr<T>, pe: Pe) -> Option<core::ptr::NonNull<T>> {
    // NVSHMEM reads its peer table at index `pe` unchecked: a PE out of
    // range would read past it. The check is one compare against a value in
    // NVSHMEM's device state.
    if pe.index() >= n_pes() {
        return None;
    }
    // SAFETY: `pe` is a PE of the job.
    unsafe { ptr_in_range(dest, pe) }
}

/// [`ptr`] without the range check, for the typed RMA functions, whose
/// callers promise `pe < n_pes()` (checked with `debug-checks`).
///
/// # Safety
/// `pe < n_pes()`.
#[inline(always)]
#[cfg_attr(feature = "nvshmem-path", allow(dead_code))]
pub(crate) unsafe fn ptr_in_range<T>(dest: SymPtr<T>, pe: Pe) -> Option<core::ptr::NonNull<T>> {
    // SAFETY: `nvshmem_ptr` only translates the address (it dereferences
    // nothing of `dest`); `pe` indexes its peer table within bounds.
    let p =
        unsafe { crate::ffi::nvshmem_ptr(dest.as_ptr() as *const core::ffi::c_void, pe.to_c()) };
    core::ptr::NonNull::new(p.cast())
}

/// Whether the typed `put`/`get` family copies directly to peers that
/// [`ptr`] reaches (`true`, the default) or always takes NVSHMEM's own path
/// (`false`: the `nvshmem-path` feature).
///
/// ```
/// if nvshmem_device::DIRECT_COPY { /* loads and stores to P2P peers */ }
/// ```
pub const DIRECT_COPY: bool = !cfg!(feature = "nvshmem-path");
