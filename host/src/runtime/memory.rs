//! Typed buffers in NVSHMEM's symmetric heap.
//!
//! # The collective rule
//! **Allocation and free are collective: every PE must allocate the same
//! buffers, of the same sizes, in the same order, and free them in the same
//! order.** NVSHMEM gives each allocation the same symmetric address on every
//! PE only because the calls match; a PE that allocates, frees or sizes
//! differently hangs the job or corrupts its peers' memory.
//!
//! This API makes the rule easy to keep:
//! - the only ways to allocate are [`Nvshmem::alloc`], [`Nvshmem::alloc_zeroed`]
//!   and [`Nvshmem::alloc_from`], on the PE's one `Nvshmem` (it is neither
//!   `Send` nor `Sync`, and neither are buffers, so one thread per PE makes
//!   every collective call);
//! - a buffer is freed when it is dropped (or by [`SymBuffer::free`]), so
//!   the same program frees in the same order on every PE. Keep control flow
//!   that allocates or drops buffers the same on all PEs: a PE that returns
//!   early with an error drops its buffers alone. On an error, prefer ending
//!   the whole job;
//! - sizes are checked before NVSHMEM sees them (zero, overflow and element
//!   size), with the same outcome on every PE when they agree;
//! - with more than one PE, every allocation is compared across PEs before
//!   NVSHMEM sees it (the count of allocations so far, the size asked for,
//!   the alignment, and which buffers were freed in which order): a PE that
//!   asks or freed differently gets [`Error::AllocationMismatch`], as does
//!   every other PE, instead of one-sided operations that run past a peer's
//!   smaller buffer. A refused allocation leaves the heap as it was, so the
//!   next matching one succeeds; after frees in different orders the heaps
//!   differ for good, and every later allocation is refused. (A PE that
//!   skips an allocation the others make still hangs them: that cannot be
//!   told from a slow PE.)
//!
//! Copies between host and symmetric memory are ordered on a stream and wait
//! for it, so the host slice is free to reuse when they return.

use crate::error::record_drop_error;
use crate::error::{Error, Result};
use crate::runtime::heap::HeapLimit;
use crate::runtime::nvshmem::{AllocCheck, Inner, Nvshmem};
use bytemuck::Pod;
use cudarc::driver::{CudaStream, result, sys};
use nvshmem_types::{Pe, SymPtr};
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};
use std::rc::Rc;

/// The alignment of every allocation: CUDA's own for `cudaMalloc`, enough for
/// vector loads of any element type.
const MIN_ALIGN: usize = 256;

/// The alignment of a buffer of `T`: [`MIN_ALIGN`], or `T`'s when larger.
const fn alloc_align<T>() -> usize {
    if std::mem::align_of::<T>() > MIN_ALIGN {
        std::mem::align_of::<T>()
    } else {
        MIN_ALIGN
    }
}

/// A device address that is not symmetric: memory of a peer as this GPU
/// addresses it ([`SymBuffer::peer_ptr`]) or any other device allocation.
/// A valid kernel argument (`T*` in C).
#[repr(transparent)]
pub struct DevicePtr<T> {
    addr: u64,
    _marker: PhantomData<*mut T>,
}

impl<T> DevicePtr<T> {
    /// Wraps a device address. Dereferencing it is up to the kernel that receives it.
    pub const fn new(addr: u64) -> Self {
        DevicePtr {
            addr,
            _marker: PhantomData,
        }
    }

    /// The address.
    pub const fn addr(self) -> u64 {
        self.addr
    }
}

impl<T> Clone for DevicePtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for DevicePtr<T> {}
impl<T> PartialEq for DevicePtr<T> {
    fn eq(&self, other: &Self) -> bool {
        self.addr == other.addr
    }
}
impl<T> Eq for DevicePtr<T> {}
impl<T> std::fmt::Debug for DevicePtr<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DevicePtr({:#x})", self.addr)
    }
}

/// `Name<T>(address, len N)`.
fn debug_sym<T>(
    f: &mut std::fmt::Formatter<'_>,
    name: &str,
    ptr: *mut T,
    len: usize,
) -> std::fmt::Result {
    let t = std::any::type_name::<T>();
    write!(f, "{name}<{t}>({ptr:p}, len {len})")
}

/// `len` elements of `T` as bytes, or an error when that overflows.
pub(crate) fn byte_len<T>(len: usize) -> Result<usize> {
    let size = std::mem::size_of::<T>();
    if size == 0 {
        return Err(Error::bad_size(format!(
            "{} is zero-sized; symmetric buffers need elements of at least one byte",
            std::any::type_name::<T>()
        )));
    }
    if len == 0 {
        return Err(Error::bad_size(
            "a symmetric buffer needs at least one element",
        ));
    }
    len.checked_mul(size)
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or_else(|| {
            Error::bad_size(format!(
                "{len} elements of {} ({size} bytes each) overflow the address space",
                std::any::type_name::<T>()
            ))
        })
}

/// The element range `range` of a buffer of `len`, or an error when out of bounds.
pub(crate) fn element_range(range: impl RangeBounds<usize>, len: usize) -> Result<(usize, usize)> {
    let start = match range.start_bound() {
        Bound::Included(&s) => Some(s),
        Bound::Excluded(&s) => s.checked_add(1),
        Bound::Unbounded => Some(0),
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.checked_add(1),
        Bound::Excluded(&e) => Some(e),
        Bound::Unbounded => Some(len),
    };
    match (start, end) {
        (Some(s), Some(e)) if s <= e && e <= len => Ok((s, e - s)),
        _ => Err(Error::bad_size(format!(
            "range {:?}..{:?} is outside the buffer of {len} elements",
            range.start_bound(),
            range.end_bound()
        ))),
    }
}

/// A typed allocation in the symmetric heap: the same address holds a `[T; len]`
/// on every PE. Freed (collectively) when dropped; see [the collective
/// rule](crate::memory#the-collective-rule).
///
/// ```no_run
/// use nvshmem_host::Nvshmem;
/// let nv = Nvshmem::init()?;
/// let data: Vec<u32> = (0..256).collect();
/// let buf = nv.alloc_from(&data)?;
/// let ptr = buf.sym_ptr(); // a kernel argument
/// assert_eq!(buf.to_vec(nv.stream())?, data);
/// # Ok::<(), nvshmem_host::Error>(())
/// ```
pub struct SymBuffer<T: Pod> {
    ptr: *mut T,
    len: usize,
    nv: Rc<Inner>,
    /// Its allocation number (`Nvshmem::alloc`); `None` for the runtime's
    /// own unchecked buffers.
    seq: Option<u64>,
}

impl<T: Pod> std::fmt::Debug for SymBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        debug_sym::<T>(f, "SymBuffer", self.ptr, self.len)
    }
}

/// A range of a [`SymBuffer`]: symmetric too, and accepted wherever a buffer is.
///
/// ```no_run
/// # let nv = nvshmem_host::Nvshmem::init()?;
/// let buf = nv.alloc_zeroed::<u64>(100)?;
/// let tail = buf.view(90..)?;
/// assert_eq!(tail.len(), 10);
/// # Ok::<(), nvshmem_host::Error>(())
/// ```
pub struct SymView<'a, T: Pod> {
    ptr: *mut T,
    len: usize,
    nv: &'a Rc<Inner>,
}

impl<T: Pod> Clone for SymView<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: Pod> Copy for SymView<'_, T> {}

impl<T: Pod> std::fmt::Debug for SymView<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        debug_sym::<T>(f, "SymView", self.ptr, self.len)
    }
}

/// Symmetric memory of `T`s: a [`SymBuffer`] or a [`SymView`] of one.
pub trait AsSymView<T: Pod> {
    /// The whole of it as a view.
    fn as_sym_view(&self) -> SymView<'_, T>;
}

impl<T: Pod> AsSymView<T> for SymBuffer<T> {
    fn as_sym_view(&self) -> SymView<'_, T> {
        SymView {
            ptr: self.ptr,
            len: self.len,
            nv: &self.nv,
        }
    }
}

impl<T: Pod> AsSymView<T> for SymView<'_, T> {
    fn as_sym_view(&self) -> SymView<'_, T> {
        *self
    }
}

/// The words of an allocation's record that every PE must have alike (see
/// `Nvshmem::agree_on_allocation`); three more carry its GPU and limit.
const AGREED: [&str; 6] = [
    "allocation number",
    "bytes asked",
    "alignment",
    "frees",
    "free order",
    "bytes live",
];

/// The PE with the least room and its limit, from every PE's allocation
/// record (`[.., gpu key, limit, GPU memory or 0]` after the [`AGREED`]
/// words): each PE's limit, [shared](HeapLimit::shared_by) by the PEs with
/// its GPU key. `me` is this PE, whose limit's origin `my_from` tells.
fn tightest_limit(records: &[Vec<u64>], me: usize, my_from: &'static str) -> (usize, HeapLimit) {
    let at = AGREED.len();
    let sharing = |key: u64| records.iter().filter(|r| r[at] == key).count();
    records
        .iter()
        .enumerate()
        .map(|(pe, r)| {
            let limit = HeapLimit {
                bytes: r[at + 1] as usize,
                from: if pe == me {
                    my_from
                } else {
                    "that PE's heap limit"
                },
                gpu_memory: (r[at + 2] > 0).then_some(r[at + 2] as usize),
            };
            (pe, limit.shared_by(sharing(r[at])))
        })
        .min_by_key(|(pe, l)| (l.bytes, *pe != me))
        .expect("every PE's record")
}

impl Nvshmem {
    /// Allocates `len` elements of `T` in the symmetric heap. **Collective**:
    /// every PE makes the same call in the same order ([the
    /// rule](crate::memory#the-collective-rule)). The contents are whatever the
    /// heap held (`T: Pod`, so any bytes are a valid `T`).
    ///
    /// Errors: [`Error::BadSize`] for zero elements, zero-sized `T` or a size
    /// that overflows; [`Error::HeapExhausted`] when the heap has no room.
    /// NVSHMEM cannot recover from an allocation it fails to serve (it faults),
    /// so every PE refuses one that would take the live buffers past any
    /// PE's limit: `NVSHMEM_MAX_MEMORY_PER_GPU` (128 GiB by default) or the
    /// GPU's memory divided among the PEs on it, whichever is less
    /// (`NVSHMEM_SYMMETRIC_SIZE` when CUDA VMM is disabled). Other programs'
    /// memory on the GPU can still exhaust it first.
    ///
    /// ```no_run
    /// # let nv = nvshmem_host::Nvshmem::init()?;
    /// let buf = nv.alloc::<f32>(1 << 20)?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn alloc<T: Pod>(&self, len: usize) -> Result<SymBuffer<T>> {
        let seq = self.agree_on_allocation::<T>(len)?;
        let mut buf = self.alloc_unchecked::<T>(len)?;
        buf.seq = Some(seq);
        Ok(buf)
    }

    /// Checks with every PE, before NVSHMEM allocates, that this allocation
    /// is the same on all: the same number (allocation calls so far), size
    /// asked for, alignment, frees so far (their count, and a fingerprint of
    /// which buffers, in order) and bytes in live buffers (which differ after
    /// an allocation failed on some PEs only). Identical histories give
    /// identical heap offsets: that is what makes NVSHMEM's allocations
    /// symmetric. A mismatch is an [`Error::AllocationMismatch`] on every PE
    /// (each sees every PE's record) and nothing is allocated, so a heap that
    /// agreed still agrees. Without this, a PE could put past the end of a
    /// peer's smaller buffer from safe code.
    ///
    /// The records also carry each PE's heap limit, and the allocation must
    /// fit the tightest ([`HeapLimit::shared_by`] the PEs on its GPU): limits
    /// differ between GPU models and environments, and a PE that refused
    /// alone would leave the others in NVSHMEM's collective allocation.
    /// Returns the allocation's number.
    fn agree_on_allocation<T: Pod>(&self, len: usize) -> Result<u64> {
        let seq = self.allocations.get();
        self.allocations.set(seq + 1);
        if self.n_pes() < 2 {
            return Ok(seq);
        }
        // On a stream of its own: work queued on the PE's streams (a kernel
        // waiting for a peer that allocates first) must not hold it up.
        let check = match self.alloc_check.get() {
            Some(check) => check,
            None => {
                // Local queries first: a PE failing one must not leave the
                // others in the exchange's collective allocation.
                let gpu_key = self.gpu_key()?;
                let stream = self.new_stream()?;
                let exchange = crate::runtime::exchange::WordExchange::new_unchecked(
                    self,
                    &stream,
                    AGREED.len() + 3,
                )?;
                self.alloc_check.get_or_init(|| AllocCheck {
                    exchange,
                    stream,
                    gpu_key,
                })
            }
        };
        // The size as asked, even if invalid: the PEs agree first, then all
        // refuse a bad size alike.
        let asked = (len as u64).saturating_mul(std::mem::size_of::<T>() as u64);
        let (frees, fingerprint) = self.inner.frees.get();
        let (used, limit) = (self.inner.heap_used.get(), self.inner.heap_limit);
        let record = [
            seq,
            asked,
            alloc_align::<T>() as u64,
            frees,
            fingerprint,
            used as u64,
            // AGREED.len() onwards: tightest_limit's words.
            check.gpu_key,
            limit.bytes as u64,
            limit.gpu_memory.unwrap_or(0) as u64,
        ];
        let records = check.exchange.all_gather_on(self, &check.stream, &record)?;
        let agreed = AGREED.len();
        if !records.iter().all(|r| r[..agreed] == records[0][..agreed]) {
            let detail = records
                .iter()
                .enumerate()
                .map(|(pe, r)| {
                    format!(
                        "PE {pe}: allocation #{}, {} bytes, aligned to {}, after {} frees (order \
                         {:016x}), {} bytes live",
                        r[0], r[1], r[2], r[3], r[4], r[5]
                    )
                })
                .collect::<Vec<_>>()
                .join("; ");
            return Err(Error::AllocationMismatch {
                what: "Nvshmem::alloc",
                detail,
            });
        }
        // A bad size is refused alike below, by every PE.
        let Ok(bytes) = byte_len::<T>(len) else {
            return Ok(seq);
        };
        let (pe, tightest) = tightest_limit(&records, self.my_pe().index() as usize, limit.from);
        tightest.charge(bytes, alloc_align::<T>(), used, Pe::new(pe as u32))?;
        Ok(seq)
    }

    /// [`Nvshmem::alloc`] without the check that every PE allocates alike,
    /// for the check's own buffers.
    pub(crate) fn alloc_unchecked<T: Pod>(&self, len: usize) -> Result<SymBuffer<T>> {
        let bytes = byte_len::<T>(len)?;
        self.inner.enter("Nvshmem::alloc")?;
        let align = alloc_align::<T>();
        let (used, limit) = (self.inner.heap_used.get(), self.inner.heap_limit);
        // NVSHMEM faults on an allocation it cannot serve; refuse it first
        // (with several PEs, `agree_on_allocation` refused it on all alike).
        let charged = limit.charge(bytes, align, used, self.my_pe())?;
        // SAFETY: initialized; the caller keeps the collective rule, and the
        // size and alignment are valid.
        let ptr = unsafe { self.inner.lib.raw().nvshmem_align(align, bytes) };
        if ptr.is_null() {
            return Err(limit.exhausted(bytes, used, self.my_pe()));
        }
        self.inner.heap_used.set(used + charged);
        Ok(SymBuffer {
            ptr: ptr.cast(),
            len,
            nv: self.inner.clone(),
            seq: None,
        })
    }

    /// [`Nvshmem::alloc`], then zeroes the buffer. **Collective**; it returns
    /// once the buffer is zero on *every* PE (it ends with a barrier), so a
    /// peer's kernel may write into it at once: without that barrier, this
    /// PE's zeroing could land after, and erase, a peer's early put.
    pub fn alloc_zeroed<T: Pod>(&self, len: usize) -> Result<SymBuffer<T>> {
        let buf = self.alloc::<T>(len)?;
        let stream = self.stream();
        buf.as_sym_view().memset_bytes(stream, 0)?;
        self.barrier_all_on_stream(stream)?;
        buf.as_sym_view().wait(stream)?;
        Ok(buf)
    }

    /// [`Nvshmem::alloc`] of `data.len()` elements, then copies `data` in.
    /// **Collective** (every PE passes a slice of the same length); it
    /// returns once every PE's copy is in place (it ends with a barrier), so
    /// a peer's kernel may read it at once.
    pub fn alloc_from<T: Pod>(&self, data: &[T]) -> Result<SymBuffer<T>> {
        let buf = self.alloc::<T>(data.len())?;
        let stream = self.stream();
        buf.copy_from_host(stream, data)?;
        self.barrier_all_on_stream(stream)?;
        buf.as_sym_view().wait(stream)?;
        Ok(buf)
    }
}

/// Methods shared by buffers and views, written once.
macro_rules! sym_memory_methods {
    () => {
        /// The number of elements.
        pub fn len(&self) -> usize {
            self.len
        }

        /// Always false: symmetric memory holds at least one element.
        pub fn is_empty(&self) -> bool {
            self.len == 0
        }

        /// The size in bytes.
        pub fn size_bytes(&self) -> usize {
            self.len * std::mem::size_of::<T>()
        }

        /// The symmetric address, for kernel arguments and device-side
        /// NVSHMEM calls: the same on every PE.
        pub fn sym_ptr(&self) -> SymPtr<T> {
            // SAFETY: the address is in the symmetric heap, from a collective
            // allocation (or a range of one).
            unsafe { SymPtr::from_raw(self.ptr) }
        }

        /// This PE's copy as a plain device address: a kernel argument for a
        /// `*mut T` / `*const T` parameter (a `T*` in C), for kernels that
        /// read or write this PE's copy directly with loads and stores.
        /// NVSHMEM's device calls take the [`sym_ptr`](Self::sym_ptr) instead.
        ///
        /// ```no_run
        /// # let nv = nvshmem_host::Nvshmem::init()?;
        /// # let module = nv.load_module("kernels.json")?;
        /// // Kernel: `fn scale(data: *mut f32, n: u32)` (no NVSHMEM call on `data`).
        /// let data = nv.alloc_from(&[1.0f32; 1024])?;
        /// let k = module.kernel("scale")?;
        /// unsafe { k.launch(nv.stream(), 4, 256, (data.device_ptr(), 1024u32))? };
        /// # Ok::<(), nvshmem_host::Error>(())
        /// ```
        pub fn device_ptr(&self) -> DevicePtr<T> {
            DevicePtr::new(self.ptr as u64)
        }

        /// Copies `src` (exactly [`len`](Self::len) elements) from the host into
        /// this PE's copy, ordered on `stream`, and waits for it.
        ///
        /// ```no_run
        /// # let nv = nvshmem_host::Nvshmem::init()?;
        /// let buf = nv.alloc::<i32>(4)?;
        /// buf.copy_from_host(nv.stream(), &[1, 2, 3, 4])?;
        /// # Ok::<(), nvshmem_host::Error>(())
        /// ```
        pub fn copy_from_host(&self, stream: &CudaStream, src: &[T]) -> Result<()> {
            let v = self.as_sym_view();
            v.check_len("copy_from_host", src.len())?;
            v.enter(stream, "copy_from_host")?;
            // SAFETY: the destination holds `len` elements (checked); the wait
            // below keeps `src` borrowed until the copy is done.
            unsafe {
                result::memcpy_htod_async(v.ptr as sys::CUdeviceptr, src, stream.cu_stream())
            }
            .map_err(|e| v.nv.classify("cuMemcpyHtoDAsync", Some(stream), e))?;
            v.wait(stream)
        }

        /// Copies this PE's copy into `dst` (exactly [`len`](Self::len) elements),
        /// ordered on `stream`, and waits for it.
        pub fn copy_to_host(&self, stream: &CudaStream, dst: &mut [T]) -> Result<()> {
            let v = self.as_sym_view();
            v.check_len("copy_to_host", dst.len())?;
            v.enter(stream, "copy_to_host")?;
            // SAFETY: the source holds `len` elements; `dst` stays borrowed until the wait.
            unsafe {
                result::memcpy_dtoh_async(dst, v.ptr as sys::CUdeviceptr, stream.cu_stream())
            }
            .map_err(|e| v.nv.classify("cuMemcpyDtoHAsync", Some(stream), e))?;
            v.wait(stream)
        }

        /// This PE's copy as a `Vec`, read on `stream`.
        pub fn to_vec(&self, stream: &CudaStream) -> Result<Vec<T>> {
            let mut out = vec![T::zeroed(); self.len];
            self.copy_to_host(stream, &mut out)?;
            Ok(out)
        }

        /// Sets every element of this PE's copy to `value`, ordered on `stream`
        /// (without waiting, unless `T` is not 1, 2 or 4 bytes: then it copies
        /// from the host and waits).
        pub fn fill(&self, stream: &CudaStream, value: T) -> Result<()> {
            let v = self.as_sym_view();
            v.enter(stream, "fill")?;
            let bytes = bytemuck::bytes_of(&value);
            let (dst, stream_raw) = (v.ptr as sys::CUdeviceptr, stream.cu_stream());
            // SAFETY: `len` elements of `bytes.len()` bytes each are in the allocation.
            let status = unsafe {
                match *bytes {
                    [b] => sys::cuMemsetD8Async(dst, b, v.len, stream_raw),
                    [a, b] => {
                        sys::cuMemsetD16Async(dst, u16::from_ne_bytes([a, b]), v.len, stream_raw)
                    }
                    [a, b, c, d] => sys::cuMemsetD32Async(
                        dst,
                        u32::from_ne_bytes([a, b, c, d]),
                        v.len,
                        stream_raw,
                    ),
                    _ => return self.copy_from_host(stream, &vec![value; v.len]),
                }
            };
            status
                .result()
                .map_err(|e| v.nv.classify("cuMemsetAsync", Some(stream), e))
        }

        /// Elements `range` as a [`SymView`] (symmetric as well).
        ///
        /// ```no_run
        /// # let nv = nvshmem_host::Nvshmem::init()?;
        /// # let buf = nv.alloc::<u8>(64)?;
        /// let head = buf.view(..16)?;
        /// assert!(buf.view(60..70).is_err());
        /// # Ok::<(), nvshmem_host::Error>(())
        /// ```
        pub fn view(&self, range: impl RangeBounds<usize>) -> Result<SymView<'_, T>> {
            let v = self.as_sym_view();
            let (start, len) = element_range(range, v.len)?;
            if len == 0 {
                return Err(Error::bad_size("an empty view of symmetric memory"));
            }
            // SAFETY: start + len <= self.len, so it stays in the allocation.
            Ok(SymView {
                ptr: unsafe { v.ptr.add(start) },
                len,
                nv: v.nv,
            })
        }

        /// Element `index` as a one-element [`SymView`] (a signal word, say).
        pub fn at(&self, index: usize) -> Result<SymView<'_, T>> {
            self.view(index..=index)
        }

        /// The address of `pe`'s copy as this GPU can load and store it
        /// directly (`nvshmem_ptr`): `Some` for this PE and peers reachable over
        /// NVLink/PCIe P2P, `None` when only NVSHMEM's put/get reach it.
        ///
        /// ```no_run
        /// # let nv = nvshmem_host::Nvshmem::init()?;
        /// # let buf = nv.alloc::<f32>(8)?;
        /// if let Some(peer) = buf.peer_ptr(nv.my_pe().ring_next(nv.n_pes()))? {
        ///     // pass `peer` to a kernel that stores to it
        /// }
        /// # Ok::<(), nvshmem_host::Error>(())
        /// ```
        pub fn peer_ptr(&self, pe: Pe) -> Result<Option<DevicePtr<T>>> {
            let v = self.as_sym_view();
            v.nv.check_active("peer_ptr")?;
            v.nv.check_pe(pe)?;
            // SAFETY: a symmetric address and a valid PE.
            let p = unsafe { v.nv.lib.raw().nvshmem_ptr(v.ptr.cast(), pe.to_c()) };
            Ok((!p.is_null()).then(|| DevicePtr::new(p as u64)))
        }
    };
}

impl<T: Pod> SymBuffer<T> {
    sym_memory_methods!();

    /// Frees the buffer now. **Collective**, like its allocation; waits for
    /// the GPU first so no queued work still uses it. Dropping does the same,
    /// recording an error instead of returning it.
    pub fn free(mut self) -> Result<()> {
        self.free_now()
    }

    fn free_now(&mut self) -> Result<()> {
        let ptr = std::mem::replace(&mut self.ptr, std::ptr::null_mut());
        if !ptr.is_null() {
            let charged = self.size_bytes().next_multiple_of(alloc_align::<T>());
            self.nv
                .heap_used
                .set(self.nv.heap_used.get().saturating_sub(charged));
            if let Some(seq) = self.seq {
                // FNV-style over the freed buffers' numbers: order-sensitive.
                let (n, h) = self.nv.frees.get();
                self.nv
                    .frees
                    .set((n + 1, (h ^ (seq + 1)).wrapping_mul(0x0100_0000_01b3)));
            }
        }
        if ptr.is_null() || self.nv.check_active("SymBuffer::free").is_err() {
            // Already freed, or NVSHMEM finalized (which released the heap).
            return Ok(());
        }
        if self.nv.poisoned() {
            // NVSHMEM's free aborts the process on a faulted context.
            return Ok(());
        }
        let synced = self.nv.sync_context();
        if self.nv.poisoned() {
            return synced;
        }
        // SAFETY: from nvshmem_align, freed once (the pointer is taken above);
        // the collective rule is the caller's, as documented.
        unsafe { self.nv.lib.raw().nvshmem_free(ptr.cast()) };
        synced
    }
}

impl<T: Pod> Drop for SymBuffer<T> {
    fn drop(&mut self) {
        record_drop_error(self.free_now());
    }
}

impl<'a, T: Pod> SymView<'a, T> {
    sym_memory_methods!();

    fn check_len(&self, what: &str, host_len: usize) -> Result<()> {
        if host_len == self.len {
            Ok(())
        } else {
            Err(Error::bad_size(format!(
                "{what}: the host slice has {host_len} elements, the symmetric memory {}",
                self.len
            )))
        }
    }

    /// Checks the state and the stream, and makes the context current.
    pub(crate) fn enter(&self, stream: &CudaStream, what: &'static str) -> Result<()> {
        self.nv.enter_stream(stream, what)
    }

    pub(crate) fn inner(&self) -> &'a Rc<Inner> {
        self.nv
    }

    pub(crate) fn raw(&self) -> *mut T {
        self.ptr
    }

    fn memset_bytes(&self, stream: &CudaStream, byte: u8) -> Result<()> {
        self.enter(stream, "alloc_zeroed")?;
        // SAFETY: the whole allocation, in bytes.
        unsafe {
            sys::cuMemsetD8Async(
                self.ptr as sys::CUdeviceptr,
                byte,
                self.size_bytes(),
                stream.cu_stream(),
            )
        }
        .result()
        .map_err(|e| self.nv.classify("cuMemsetD8Async", Some(stream), e))
    }

    fn wait(&self, stream: &CudaStream) -> Result<()> {
        stream
            .synchronize()
            .map_err(|e| self.nv.classify("cuStreamSynchronize", Some(stream), e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tightest_limit_is_every_pes_share_of_its_gpu() {
        const G: u64 = 1 << 30;
        let record = |key, limit, gpu| {
            let mut r = vec![0; AGREED.len()];
            r.extend([key, limit, gpu]);
            r
        };
        let from = "mine";
        // Two GPU models: PE 1's smaller GPU sets the limit for both.
        let mixed = [record(1, 80 * G, 80 * G), record(2, 64 * G, 64 * G)];
        let (pe, l) = tightest_limit(&mixed, 0, from);
        assert_eq!((pe, l.bytes), (1, 64 << 30));
        assert_ne!(l.from, from);
        // Three PEs on GPU 1 (MPS) get a third of it each; PE 3 has its own.
        let shared = [
            record(1, 128 * G, 90 * G),
            record(1, 128 * G, 90 * G),
            record(1, 128 * G, 90 * G),
            record(2, 128 * G, 90 * G),
        ];
        let (pe, l) = tightest_limit(&shared, 2, from);
        assert_eq!((pe, l.bytes), (2, 30 << 30));
        assert!(l.from.contains("divided"));
        // Equal limits name this PE, with its own origin; a fixed heap (no
        // VMM, GPU memory 0) is not divided.
        let fixed = [record(1, G, 0), record(1, G, 0)];
        assert_eq!(tightest_limit(&fixed, 1, from).0, 1);
        assert_eq!(tightest_limit(&fixed, 1, from).1.bytes, 1 << 30);
        assert_eq!(tightest_limit(&fixed, 1, from).1.from, from);
    }

    #[test]
    fn sizes_are_checked_before_nvshmem_sees_them() {
        assert_eq!(byte_len::<f32>(10).unwrap(), 40);
        assert!(matches!(byte_len::<f32>(0), Err(Error::BadSize { .. })));
        assert!(matches!(byte_len::<()>(4), Err(Error::BadSize { .. })));
        let err = byte_len::<u64>(usize::MAX / 4).unwrap_err();
        assert!(err.to_string().contains("overflow"), "{err}");
        assert!(byte_len::<u8>(isize::MAX as usize + 1).is_err());
    }

    #[test]
    fn ranges_are_checked() {
        assert_eq!(element_range(.., 10).unwrap(), (0, 10));
        assert_eq!(element_range(2..5, 10).unwrap(), (2, 3));
        assert_eq!(element_range(3..=3, 10).unwrap(), (3, 1));
        assert_eq!(element_range(8.., 10).unwrap(), (8, 2));
        for bad in [
            element_range(5..11, 10),
            element_range(11.., 10),
            element_range(..=usize::MAX, 10),
        ] {
            assert!(matches!(bad, Err(Error::BadSize { .. })), "{bad:?}");
        }
        #[allow(clippy::reversed_empty_ranges)]
        let reversed = element_range(6..2, 10);
        assert!(reversed.is_err());
    }

    #[test]
    fn device_ptr_is_a_plain_address() {
        assert_eq!(std::mem::size_of::<DevicePtr<f64>>(), 8);
        let p = DevicePtr::<u8>::new(0x1000);
        assert_eq!(format!("{p:?}"), "DevicePtr(0x1000)");
    }
}
