//! The library itself: its version and name, [`global_exit`], and NVSHMEM
//! 3.8's shared-memory lease for TMA transfers (`ask_smem`, `give_smem`,
//! `release_smem`) and RMA regions (`region_start_block`,
//! `region_stop_block`, `region_is_active`), which need the `nvshmem-3-8`
//! feature.

use crate::ffi;
use core::ffi::c_int;

/// The OpenSHMEM specification version NVSHMEM implements, `(major, minor)`
/// (`nvshmem_info_get_version`): 1.3 for 3.4.5 and 3.8.0.
///
/// ```no_run
/// let (major, minor) = nvshmem_device::info_get_version();
/// ```
#[inline(always)]
pub fn info_get_version() -> (i32, i32) {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: writes the two locals.
    unsafe { ffi::nvshmem_info_get_version(&mut major, &mut minor) };
    (major, minor)
}

/// NVSHMEM's version, as its device code was built (`nvshmemx_vendor_get_version_info`):
/// the version of the bitcode this kernel was linked with.
///
/// ```no_run
/// let v = nvshmem_device::vendor_version();
/// if v.major == 3 && v.minor >= 8 { /* ... */ }
/// ```
#[inline(always)]
pub fn vendor_version() -> nvshmem_types::Version {
    let (mut major, mut minor, mut patch): (c_int, c_int, c_int) = (0, 0, 0);
    // SAFETY: writes the three locals.
    unsafe { ffi::nvshmemx_vendor_get_version_info(&mut major, &mut minor, &mut patch) };
    nvshmem_types::Version {
        major: major as u32,
        minor: minor as u32,
        patch: patch as u32,
    }
}

/// `NVSHMEM_MAX_NAME_LEN`: the size of [`info_get_name`]'s buffer.
pub const MAX_NAME_LEN: usize = 256;

/// NVSHMEM's vendor string (`nvshmem_info_get_name`), NUL-terminated in a
/// [`MAX_NAME_LEN`]-byte buffer: `"NVSHMEM v3.4.5"`, say.
///
/// ```no_run
/// let name = nvshmem_device::info_get_name();
/// let len = name.iter().position(|&b| b == 0).unwrap_or(name.len());
/// ```
#[inline(always)]
pub fn info_get_name() -> [u8; MAX_NAME_LEN] {
    let mut name = [0u8; MAX_NAME_LEN];
    // SAFETY: NVSHMEM writes at most MAX_NAME_LEN bytes, the NUL included.
    unsafe { ffi::nvshmem_info_get_name(name.as_mut_ptr().cast()) };
    name
}

/// Ends every PE's process with exit status `status` (`nvshmem_global_exit`):
/// NVSHMEM's proxy thread takes the request, and this thread waits until
/// then; it never returns. Without a proxy (`NVSHMEM_DISABLE_LOCAL_ONLY_PROXY`
/// and no remote transport) NVSHMEM traps instead.
///
/// ```no_run
/// fn give_up() -> ! {
///     nvshmem_device::global_exit(3)
/// }
/// ```
#[inline(always)]
pub fn global_exit(status: i32) -> ! {
    // SAFETY: a value by argument; ends the job. `trap` only ends this
    // thread, should NVSHMEM's call ever return.
    unsafe {
        ffi::nvshmem_global_exit(status);
        crate::panic::trap()
    }
}

/// How much shared memory `ask_smem` (NVSHMEM 3.8) asks for (`nvshmemx_smem_amount_t`).
///
/// ```
/// assert_eq!(nvshmem_device::SmemAmount::Minimum as i32, 1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum SmemAmount {
    /// `NVSHMEMX_SMEM_RECOMMENDED`: for the best throughput (double-buffered).
    Recommended = 0,
    /// `NVSHMEMX_SMEM_MINIMUM`: single-buffered TMA transfers.
    Minimum = 1,
    /// `NVSHMEMX_SMEM_BARRIERS_ONLY`: barriers and descriptors only.
    BarriersOnly = 2,
}

/// The shared memory, in bytes, that NVSHMEM 3.8's TMA transfers want from
/// a block (`nvshmemx_ask_smem`); give it with [`give_smem`].
///
/// ```no_run
/// # nvshmem_device::with_nvshmem_3_8! { fn f() {
/// let bytes = nvshmem_device::ask_smem(nvshmem_device::SmemAmount::Minimum);
/// # } }
/// ```
#[cfg(any(doc, feature = "nvshmem-3-8"))]
#[inline(always)]
pub fn ask_smem(amount: SmemAmount) -> usize {
    // SAFETY: a constant by value.
    unsafe { ffi::nvshmemx_ask_smem(amount as c_int) as usize }
}

/// Lends `bytes` bytes of this block's shared memory at `smem` to NVSHMEM
/// 3.8's TMA path (`nvshmemx_give_smem`), which NVSHMEM's own puts and gets
/// to P2P peers then use; take it back with [`release_smem`] before the block
/// exits. Synchronize the block (`thread::sync_threads`) after it, before any
/// put. Below sm_90, or with TMA off, it does nothing.
///
/// NVSHMEM's own path is what [`put_signal`](crate::put_signal), the strided
/// `iput`/`iget` and the `ffi` functions take. The typed contiguous
/// [`put`](crate::put)/[`get`](crate::get) (and their `_nbi`, `_pod` and
/// scoped forms) reach a peer that [`ptr`](crate::ptr) maps through this
/// crate's own loads and stores, which do not use the lease, unless the
/// kernel crate turns on the `nvshmem-path` feature (`nvshmem-device/nvshmem-path`).
///
/// # Safety
/// Every thread of the block calls it, with the same arguments. `smem` is
/// 16-byte aligned shared memory of at least `bytes` bytes, `bytes >=
/// ask_smem(SmemAmount::Minimum)`, and nothing else touches it until
/// [`release_smem`] returns; every block that calls it calls `release_smem`.
///
/// ```no_run
/// # nvshmem_device::with_nvshmem_3_8! { unsafe fn f(smem: *mut u8) {
/// use nvshmem_device::{SmemAmount, ask_smem, give_smem, release_smem};
/// unsafe { give_smem(smem, ask_smem(SmemAmount::Minimum)) };
/// // ... puts ...
/// unsafe { release_smem() };
/// # } }
/// ```
#[cfg(any(doc, feature = "nvshmem-3-8"))]
#[inline(always)]
pub unsafe fn give_smem(smem: *mut u8, bytes: usize) {
    // SAFETY: the caller's contract.
    unsafe { ffi::nvshmemx_give_smem(smem.cast(), bytes) }
}

/// Takes back the shared memory lent by [`give_smem`], once the block's
/// transfers through it are done (`nvshmemx_release_smem`, NVSHMEM 3.8+).
///
/// # Safety
/// Every thread of the block calls it; the block called [`give_smem`].
///
/// ```no_run
/// # nvshmem_device::with_nvshmem_3_8! { unsafe fn f() {
/// unsafe { nvshmem_device::release_smem() };
/// # } }
/// ```
#[cfg(any(doc, feature = "nvshmem-3-8"))]
#[inline(always)]
pub unsafe fn release_smem() {
    // SAFETY: the caller's contract.
    unsafe { ffi::nvshmemx_release_smem() }
}

/// The attributes of an RMA region (`nvshmemx_region_attrs_t`, 64 bytes).
///
/// ```
/// let attrs = nvshmem_device::RegionAttrs::new(nvshmem_device::REGION_HINT_BATCH_RMA);
/// assert_eq!(core::mem::size_of_val(&attrs), 64);
/// ```
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct RegionAttrs {
    /// `NVSHMEMX_REGION_HINT_*` bits.
    pub hints: u32,
    reserved: [u8; 60],
}

impl RegionAttrs {
    /// Attributes with these hints (`NVSHMEMX_REGION_ATTRS_INITIALIZER` and `hints`).
    ///
    /// ```
    /// let none = nvshmem_device::RegionAttrs::new(0);
    /// ```
    pub const fn new(hints: u32) -> Self {
        RegionAttrs {
            hints,
            reserved: [0; 60],
        }
    }
}

/// `NVSHMEMX_REGION_HINT_BATCH_RMA`: the region's RMA may be batched.
pub const REGION_HINT_BATCH_RMA: u32 = 1;

/// An open RMA region of this block (`nvshmemx_region_handle_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region(u64);

/// An NVSHMEM error code (`NVSHMEMX_ERROR_*`, non-zero).
pub type ErrorCode = i32;

/// Opens an RMA region for this block (`nvshmemx_region_start_block`,
/// NVSHMEM 3.8+): RMA until [`region_stop_block`] may follow `attrs`' hints.
///
/// # Safety
/// Every thread of the block calls it, with the same `attrs`.
///
/// ```no_run
/// # nvshmem_device::with_nvshmem_3_8! { unsafe fn f() {
/// use nvshmem_device::{REGION_HINT_BATCH_RMA, RegionAttrs, region_start_block, region_stop_block};
/// if let Ok(region) = unsafe { region_start_block(&RegionAttrs::new(REGION_HINT_BATCH_RMA)) } {
///     // ... puts ...
///     let _ = unsafe { region_stop_block(region) };
/// }
/// # } }
/// ```
#[cfg(any(doc, feature = "nvshmem-3-8"))]
#[inline(always)]
pub unsafe fn region_start_block(attrs: &RegionAttrs) -> Result<Region, ErrorCode> {
    let mut handle = 0;
    // SAFETY: the caller's contract; `handle` and `attrs` are valid.
    match unsafe { ffi::nvshmemx_region_start_block(&mut handle, attrs) } {
        0 => Ok(Region(handle)),
        e => Err(e),
    }
}

/// Closes this block's RMA region (`nvshmemx_region_stop_block`, NVSHMEM 3.8+).
///
/// # Safety
/// Every thread of the block calls it, with the same `region`.
///
/// ```no_run
/// # nvshmem_device::with_nvshmem_3_8! { unsafe fn f(r: nvshmem_device::Region) {
/// let _ = unsafe { nvshmem_device::region_stop_block(r) };
/// # } }
/// ```
#[cfg(any(doc, feature = "nvshmem-3-8"))]
#[inline(always)]
pub unsafe fn region_stop_block(region: Region) -> Result<(), ErrorCode> {
    // SAFETY: the caller's contract.
    match unsafe { ffi::nvshmemx_region_stop_block(region.0) } {
        0 => Ok(()),
        e => Err(e),
    }
}

/// Whether this block has an open RMA region with all of `hints`
/// (`nvshmemx_region_is_active`, NVSHMEM 3.8+).
///
/// ```no_run
/// # nvshmem_device::with_nvshmem_3_8! { fn f() {
/// let batching = nvshmem_device::region_is_active(nvshmem_device::REGION_HINT_BATCH_RMA);
/// # } }
/// ```
#[cfg(any(doc, feature = "nvshmem-3-8"))]
#[inline(always)]
pub fn region_is_active(hints: u32) -> Result<bool, ErrorCode> {
    let mut active = 0;
    // SAFETY: a value and a local to write; NVSHMEM checks the hints.
    match unsafe { ffi::nvshmemx_region_is_active(hints, &mut active) } {
        0 => Ok(active != 0),
        e => Err(e),
    }
}
