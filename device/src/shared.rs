//! Shared memory: static arrays declared in Rust ([`static_shared!`](crate::static_shared)) and a
//! typed, bounds-checked view of the launch's dynamic shared memory
//! ([`DynamicShared`]).
//!
//! ```no_run
//! use nvshmem_device::{shared::DynamicShared, static_shared, thread};
//!
//! static_shared! {
//!     /// One tile per block.
//!     static TILE: [f32; 256];
//! }
//!
//! unsafe fn reverse_in_block(data: *mut f32) {
//!     let t = thread::thread_idx_x() as usize;
//!     // SAFETY: each thread writes its own element, then reads another's after the barrier.
//!     unsafe { TILE.write(t, *data.add(t)) };
//!     thread::sync_threads();
//!     unsafe { *data.add(t) = TILE.read(255 - t) };
//!
//!     // Dynamic shared memory (its size chosen at launch), carved into typed slices.
//!     let mut dynamic = DynamicShared::get();
//!     let counts = dynamic.carve::<u32>(32);
//!     let sums = dynamic.carve::<f64>(32); // aligned to 8 bytes, after `counts`
//! }
//! ```
//!
//! # How static shared memory is made
//! Rust has no address-space attribute, so [`static_shared!`](crate::static_shared) makes an
//! ordinary `static` placed in the link section `.nvshmem.shared`, and
//! `nvshmem-builder` rewrites it in the linked LLVM IR, before optimizing:
//! the global moves to `addrspace(3)` (PTX `.shared`) with an `undef`
//! initializer, and every use becomes `addrspacecast (ptr addrspace(3) @x to
//! ptr)`. LLVM's address-space inference then turns the accesses into
//! `ld.shared`/`st.shared`, and `ptxas` counts the array in the kernel's
//! static shared memory (recorded in the manifest). A kernel crate built
//! without the builder would get an ordinary global (one copy for the whole
//! grid): with the `debug-checks` feature, [`Shared::as_ptr`] traps then.
//!
//! The alternative, a `.shared` declaration in inline PTX, was rejected:
//! `asm!` text is per call site, so a helper inlined into two kernels, or a
//! loop the optimizer unrolls, declares the array again (a duplicate name for
//! `ptxas`, or a second array); its address comes back as a generic pointer,
//! so every access stays a generic `ld`/`st`; and the manifest could not see
//! it before `ptxas`.
//!
//! The dynamic shared memory is an `extern` array, `nvshmem_rs_dynamic_shared`,
//! that the builder moves to `addrspace(3)` the same way
//! (`.extern .shared .align 16 .b8 nvshmem_rs_dynamic_shared[]`); its size is
//! `%dynamic_smem_size`. [`dynamic_base`] is its address,
//! [`DynamicShared`] a typed view.
//!
//! # Uninitialized and shared by the block
//! Shared memory starts uninitialized (the PTX state space has no
//! initializers) and every thread of the block sees the same bytes. So the
//! API gives raw pointers (safe to get) and `unsafe` element reads and
//! writes: the caller promises the element was written before it is read,
//! and that no other thread writes it at the same time (separate the phases
//! with [`sync_threads`](crate::thread::sync_threads)). Element types must be
//! `Copy`; nothing is ever dropped.

use crate::nvvm;
use core::cell::UnsafeCell;
use core::mem::{MaybeUninit, align_of, size_of};

/// The link section that marks a static for the builder to move into shared
/// memory. Not API: use [`static_shared!`].
#[doc(hidden)]
pub const SECTION: &str = ".nvshmem.shared";

/// A `T` in the block's shared memory, declared with [`static_shared!`](crate::static_shared).
///
/// Every block has its own copy; every thread of the block sees it. It starts
/// uninitialized.
#[repr(transparent)]
pub struct Shared<T> {
    cell: UnsafeCell<MaybeUninit<T>>,
}

// SAFETY: a `Shared` only hands out raw pointers and `unsafe` accessors whose
// callers promise the absence of data races.
unsafe impl<T> Sync for Shared<T> {}

impl<T> Shared<T> {
    /// Used by [`static_shared!`]; a `Shared` anywhere else is not in shared memory.
    #[doc(hidden)]
    pub const fn __uninit() -> Self {
        Shared {
            cell: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    /// The address of the block's copy, as a generic pointer. Its contents
    /// start uninitialized.
    ///
    /// With the `debug-checks` feature this traps when the static is not in
    /// shared memory (a crate built without `nvshmem-builder`).
    ///
    /// ```no_run
    /// nvshmem_device::static_shared! { static FLAG: u32; }
    /// let p: *mut u32 = FLAG.as_ptr();
    /// ```
    #[inline(always)]
    pub fn as_ptr(&self) -> *mut T {
        let p = self.cell.get().cast::<T>();
        #[cfg(feature = "debug-checks")]
        if !is_shared(p) {
            panic!(
                "static_shared! array not in shared memory: build the kernel crate with nvshmem-builder"
            );
        }
        p
    }

    /// [`as_ptr`](Self::as_ptr) as `MaybeUninit`, to initialize it field by field.
    ///
    /// ```no_run
    /// nvshmem_device::static_shared! { static FLAG: u32; }
    /// unsafe { (*FLAG.as_uninit_ptr()).write(0) };
    /// ```
    #[inline(always)]
    pub fn as_uninit_ptr(&self) -> *mut MaybeUninit<T> {
        self.as_ptr().cast()
    }

    /// Bytes of shared memory this takes.
    ///
    /// ```
    /// nvshmem_device::static_shared! { static TILE: [f32; 64]; }
    /// assert_eq!(TILE.size_bytes(), 256);
    /// ```
    pub const fn size_bytes(&self) -> usize {
        size_of::<T>()
    }
}

impl<T: Copy, const N: usize> Shared<[T; N]> {
    /// The number of elements.
    ///
    /// ```
    /// nvshmem_device::static_shared! { static TILE: [f32; 64]; }
    /// assert_eq!(TILE.len(), 64);
    /// ```
    pub const fn len(&self) -> usize {
        N
    }

    /// Whether the array has no elements.
    ///
    /// ```
    /// nvshmem_device::static_shared! { static NONE: [u8; 0]; }
    /// assert!(NONE.is_empty());
    /// ```
    pub const fn is_empty(&self) -> bool {
        N == 0
    }

    /// The address of element `i`; panics (traps) when `i >= N`.
    ///
    /// ```no_run
    /// nvshmem_device::static_shared! { static TILE: [f32; 64]; }
    /// let p = TILE.index_ptr(3);
    /// ```
    #[inline(always)]
    pub fn index_ptr(&self, i: usize) -> *mut T {
        self.as_slice().index_ptr(i)
    }

    /// Reads element `i`; panics when `i >= N`.
    ///
    /// # Safety
    /// Element `i` was written, as a `T`, by some thread of this block, and
    /// that write is ordered before this read (a barrier between them), with
    /// no other thread writing it concurrently. (Shared memory can be reached
    /// under other types, through another [`DynamicShared`] carve: bytes
    /// written as a `u32` are no valid `bool`.)
    ///
    /// ```no_run
    /// nvshmem_device::static_shared! { static TILE: [f32; 64]; }
    /// unsafe { TILE.write(0, 1.0) };
    /// let x = unsafe { TILE.read(0) };
    /// ```
    #[inline(always)]
    pub unsafe fn read(&self, i: usize) -> T {
        // SAFETY: the caller's promise.
        unsafe { self.as_slice().read(i) }
    }

    /// Writes element `i`; panics when `i >= N`.
    ///
    /// # Safety
    /// No other thread reads or writes element `i` concurrently.
    ///
    /// ```no_run
    /// nvshmem_device::static_shared! { static TILE: [f32; 64]; }
    /// let t = nvshmem_device::thread::thread_idx_x() as usize;
    /// unsafe { TILE.write(t % 64, 0.0) };
    /// ```
    #[inline(always)]
    pub unsafe fn write(&self, i: usize, value: T) {
        // SAFETY: the caller's promise.
        unsafe { self.as_slice().write(i, value) }
    }

    /// The whole array as a [`SharedSlice`].
    ///
    /// ```no_run
    /// nvshmem_device::static_shared! { static TILE: [f32; 64]; }
    /// let s = TILE.as_slice();
    /// assert_eq!(s.len(), 64);
    /// ```
    #[inline(always)]
    pub fn as_slice(&self) -> SharedSlice<T> {
        SharedSlice {
            ptr: self.as_ptr().cast(),
            len: N,
        }
    }
}

/// Declares statics in the block's shared memory (CUDA's `__shared__`), each
/// a [`Shared<T>`]. They start uninitialized, and need `nvshmem-builder` (see
/// the [module docs](crate::shared)).
///
/// ```no_run
/// nvshmem_device::static_shared! {
///     /// Partial sums, one per warp.
///     static PARTIAL: [f32; 32];
///     pub(crate) static COUNTER: u32;
/// }
/// ```
#[macro_export]
macro_rules! static_shared {
    ($($(#[$attr:meta])* $vis:vis static $name:ident: $ty:ty;)*) => {$(
        $(#[$attr])*
        #[unsafe(link_section = ".nvshmem.shared")]
        $vis static $name: $crate::shared::Shared<$ty> = $crate::shared::Shared::__uninit();
    )*};
}

/// `isspacep.shared`: whether a generic address lies in this block's shared memory.
///
/// ```no_run
/// nvshmem_device::static_shared! { static X: u32; }
/// assert!(nvshmem_device::shared::is_shared(X.as_ptr()));
/// ```
#[inline(always)]
pub fn is_shared<T>(ptr: *const T) -> bool {
    // SAFETY: classifies an address; no memory access.
    unsafe { nvvm::isspacep_shared(ptr.cast()) }
}

/// `%dynamic_smem_size`: bytes of dynamic shared memory this launch gave each block.
///
/// ```no_run
/// let bytes = nvshmem_device::shared::dynamic_size();
/// ```
#[inline(always)]
pub fn dynamic_size() -> usize {
    let size: u32;
    // SAFETY: reads a special register.
    unsafe {
        nvvm::ptx!("mov.u32 {0}, %dynamic_smem_size;", out(reg32) size, options(pure, nomem, nostack));
    }
    size as usize
}

/// `%total_smem_size`: bytes of shared memory (static and dynamic) each block of this launch has.
///
/// ```no_run
/// let bytes = nvshmem_device::shared::total_size();
/// ```
#[inline(always)]
pub fn total_size() -> usize {
    let size: u32;
    // SAFETY: reads a special register.
    unsafe {
        nvvm::ptx!("mov.u32 {0}, %total_smem_size;", out(reg32) size, options(pure, nomem, nostack));
    }
    size as usize
}

unsafe extern "C" {
    /// The start of the dynamic shared memory (`extern __shared__` in CUDA);
    /// the builder moves it to `addrspace(3)` with 16-byte alignment.
    #[link_name = "nvshmem_rs_dynamic_shared"]
    static DYNAMIC_SHARED: [u8; 0];
}

/// The start of the launch's dynamic shared memory, as a generic pointer:
/// CUDA's `extern __shared__ __align__(16) char smem[]`. Aligned to 16
/// bytes; [`dynamic_size`] bytes follow, uninitialized.
///
/// For kernels that lay the memory out themselves (a GEMM's stages, say);
/// [`DynamicShared`] carves it into typed, bounds-checked slices instead.
/// The builder declares it as `.extern .shared .align 16 .b8
/// nvshmem_rs_dynamic_shared[]`, so accesses through it become
/// `ld.shared`/`st.shared`. More alignment (1024 bytes for TMA's 128-byte
/// swizzle) is the kernel's to add, with the launch's bytes to spare.
///
/// ```no_run
/// use nvshmem_device::{shared, thread};
/// // One f32 per thread, launched with 4 · block size bytes.
/// let tile = shared::dynamic_base().cast::<f32>();
/// let t = thread::thread_idx_x() as usize;
/// unsafe { tile.add(t).write(0.0) };
/// ```
#[inline(always)]
pub fn dynamic_base() -> *mut u8 {
    (&raw const DYNAMIC_SHARED).cast::<u8>().cast_mut()
}

/// The launch's dynamic shared memory, carved into typed slices front to
/// back. Every thread that carves the same sequence gets the same slices.
///
/// Carving only computes addresses (safe); the slices' contents start
/// uninitialized, and their element accessors are `unsafe`.
///
/// ```no_run
/// use nvshmem_device::shared::DynamicShared;
/// let mut smem = DynamicShared::get();
/// let keys = smem.carve::<u64>(256);
/// let flags = smem.carve_aligned::<u8>(256, 128);
/// assert!(smem.remaining() <= smem.size());
/// ```
#[derive(Clone, Copy, Debug)]
pub struct DynamicShared {
    base: *mut u8,
    size: usize,
    offset: usize,
}

impl DynamicShared {
    /// The whole dynamic shared memory of this launch ([`dynamic_size`] bytes), nothing carved yet.
    ///
    /// ```no_run
    /// let smem = nvshmem_device::shared::DynamicShared::get();
    /// ```
    #[inline(always)]
    pub fn get() -> Self {
        DynamicShared {
            base: dynamic_base(),
            size: dynamic_size(),
            offset: 0,
        }
    }

    /// Bytes of dynamic shared memory in all.
    ///
    /// ```no_run
    /// let n = nvshmem_device::shared::DynamicShared::get().size();
    /// ```
    pub fn size(&self) -> usize {
        self.size
    }

    /// Bytes not carved yet (before any alignment padding).
    ///
    /// ```no_run
    /// let left = nvshmem_device::shared::DynamicShared::get().remaining();
    /// ```
    pub fn remaining(&self) -> usize {
        self.size - self.offset
    }

    /// The next `len` elements of `T`, aligned for `T`. Panics (traps) when
    /// they do not fit.
    ///
    /// ```no_run
    /// let vals = nvshmem_device::shared::DynamicShared::get().carve::<f32>(1024);
    /// ```
    #[inline(always)]
    pub fn carve<T: Copy>(&mut self, len: usize) -> SharedSlice<T> {
        self.carve_aligned(len, align_of::<T>())
    }

    /// [`carve`](Self::carve) with the start aligned to `align` bytes (a
    /// power of two, at least `T`'s alignment: 128 for TMA tiles, say).
    /// Panics when `align` is not a power of two or the slice does not fit.
    ///
    /// ```no_run
    /// let tile = nvshmem_device::shared::DynamicShared::get().carve_aligned::<f32>(1024, 128);
    /// ```
    #[inline(always)]
    pub fn carve_aligned<T: Copy>(&mut self, len: usize, align: usize) -> SharedSlice<T> {
        match self.try_carve_aligned(len, align) {
            Some(s) => s,
            None => panic!("dynamic shared memory overflow: launch with more shared_mem_bytes"),
        }
    }

    /// [`carve_aligned`](Self::carve_aligned), or `None` when it does not fit
    /// (nothing is carved then).
    ///
    /// ```no_run
    /// let mut smem = nvshmem_device::shared::DynamicShared::get();
    /// let big = smem.try_carve_aligned::<f64>(1 << 20, 8);
    /// ```
    #[inline(always)]
    pub fn try_carve_aligned<T: Copy>(
        &mut self,
        len: usize,
        align: usize,
    ) -> Option<SharedSlice<T>> {
        let align = if align.is_power_of_two() {
            align.max(align_of::<T>())
        } else {
            panic!("carve alignment must be a power of two")
        };
        let (start, end) = carve_range(
            self.base as usize,
            self.offset,
            self.size,
            len,
            size_of::<T>(),
            align,
        )?;
        self.offset = end;
        Some(SharedSlice {
            // SAFETY: `start..end` lies within the dynamic shared memory.
            ptr: unsafe { self.base.add(start) }.cast(),
            len,
        })
    }
}

/// Where `len` elements of `elem` bytes go, aligned to `align` (a power of
/// two), after `offset` bytes of `size` starting at address `base`: the
/// byte range relative to `base`, or `None` when it does not fit.
#[inline(always)]
fn carve_range(
    base: usize,
    offset: usize,
    size: usize,
    len: usize,
    elem: usize,
    align: usize,
) -> Option<(usize, usize)> {
    let addr = base.checked_add(offset)?;
    let aligned = addr.checked_add(align - 1)? & !(align - 1);
    let start = aligned - base;
    let end = start.checked_add(len.checked_mul(elem)?)?;
    (end <= size).then_some((start, end))
}

/// `len` elements of `T` in shared memory: a static array's
/// ([`Shared::as_slice`]) or carved from the dynamic shared memory
/// ([`DynamicShared::carve`]). A copyable handle: the elements are shared by
/// the block and start uninitialized.
#[derive(Debug)]
pub struct SharedSlice<T> {
    ptr: *mut T,
    len: usize,
}

impl<T> Clone for SharedSlice<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for SharedSlice<T> {}

impl<T: Copy> SharedSlice<T> {
    /// The first element's address.
    ///
    /// ```no_run
    /// let p = nvshmem_device::shared::DynamicShared::get().carve::<u32>(4).as_ptr();
    /// ```
    pub fn as_ptr(&self) -> *mut T {
        self.ptr
    }

    /// The number of elements.
    ///
    /// ```no_run
    /// let n = nvshmem_device::shared::DynamicShared::get().carve::<u32>(4).len();
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it has no elements.
    ///
    /// ```no_run
    /// assert!(nvshmem_device::shared::DynamicShared::get().carve::<u32>(0).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The address of element `i`; panics when `i >= len`.
    ///
    /// ```no_run
    /// let p = nvshmem_device::shared::DynamicShared::get().carve::<u32>(4).index_ptr(3);
    /// ```
    #[inline(always)]
    pub fn index_ptr(&self, i: usize) -> *mut T {
        assert!(i < self.len, "shared slice index out of bounds");
        // SAFETY: in bounds.
        unsafe { self.ptr.add(i) }
    }

    /// Reads element `i`; panics when `i >= len`.
    ///
    /// # Safety
    /// As [`Shared::read`]: written before as a `T` (ordered by a barrier),
    /// and not being written concurrently. Two carves of one
    /// [`DynamicShared`] (or of two, from [`DynamicShared::get`] twice) may
    /// cover the same bytes under different types.
    ///
    /// ```no_run
    /// let s = nvshmem_device::shared::DynamicShared::get().carve::<u32>(4);
    /// unsafe { s.write(0, 7) };
    /// let x = unsafe { s.read(0) };
    /// ```
    #[inline(always)]
    pub unsafe fn read(&self, i: usize) -> T {
        // SAFETY: the caller's promise.
        unsafe { self.index_ptr(i).read() }
    }

    /// Writes element `i`; panics when `i >= len`.
    ///
    /// # Safety
    /// As [`Shared::write`]: no other thread accesses element `i` concurrently.
    ///
    /// ```no_run
    /// let s = nvshmem_device::shared::DynamicShared::get().carve::<u32>(4);
    /// unsafe { s.write(3, 1) };
    /// ```
    #[inline(always)]
    pub unsafe fn write(&self, i: usize, value: T) {
        // SAFETY: the caller's promise.
        unsafe { self.index_ptr(i).write(value) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn carving_aligns_and_refuses_overflow() {
        // 16-aligned base, 100 bytes.
        let base = 0x1000;
        assert_eq!(carve_range(base, 0, 100, 3, 1, 1), Some((0, 3)));
        // After 3 bytes, 8-byte elements start at 8.
        assert_eq!(carve_range(base, 3, 100, 2, 8, 8), Some((8, 24)));
        // Alignment is of the address, not the offset.
        assert_eq!(carve_range(base + 4, 0, 100, 1, 4, 16), Some((12, 16)));
        assert_eq!(carve_range(base, 24, 100, 10, 8, 8), None);
        assert_eq!(carve_range(base, 0, 100, 100, 1, 1), Some((0, 100)));
        assert_eq!(carve_range(base, 0, 100, 101, 1, 1), None);
        assert_eq!(
            carve_range(base, 0, 100, usize::MAX, 8, 8),
            None,
            "overflowing length"
        );
    }

    static_shared! {
        static TEST_TILE: [u16; 12];
    }

    #[test]
    fn static_shared_sizes() {
        assert_eq!(TEST_TILE.len(), 12);
        assert_eq!(TEST_TILE.size_bytes(), 24);
        assert!(!TEST_TILE.is_empty());
    }
}
