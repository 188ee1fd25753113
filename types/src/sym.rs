//! Symmetric addresses and processing elements (PEs).

use core::marker::PhantomData;

/// The address of a `T` in NVSHMEM's symmetric heap.
///
/// Every PE holds an object at the same symmetric address, so a `SymPtr` names
/// "this object, on whichever PE the operation targets". Only the host runtime
/// (`nvshmem-host`, from `nvshmem_malloc`) hands these out; a plain local
/// pointer cannot pass for one without `unsafe`.
///
/// It is `#[repr(transparent)]` over a pointer, so it is a valid kernel
/// parameter and has the ABI of `T*` in C.
///
/// ```
/// use nvshmem_types::SymPtr;
/// fn second(buf: SymPtr<u64>) -> SymPtr<u64> {
///     unsafe { buf.add(1) }
/// }
/// ```
#[repr(transparent)]
pub struct SymPtr<T> {
    ptr: *mut T,
    _marker: PhantomData<*mut T>,
}

impl<T> Clone for SymPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for SymPtr<T> {}

// SAFETY: a symmetric address is a plain number naming memory on some PE; it
// confers no access by itself, and every access through it is `unsafe`.
unsafe impl<T> Send for SymPtr<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for SymPtr<T> {}

impl<T> core::fmt::Debug for SymPtr<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "SymPtr({:p})", self.ptr)
    }
}

impl<T> PartialEq for SymPtr<T> {
    fn eq(&self, other: &Self) -> bool {
        core::ptr::eq(self.ptr, other.ptr)
    }
}
impl<T> Eq for SymPtr<T> {}

impl<T> SymPtr<T> {
    /// Wraps an address returned by `nvshmem_malloc` (or an offset into one).
    ///
    /// ```
    /// # use nvshmem_types::SymPtr;
    /// let addr = 0x7f00_0000_0000u64 as *mut f32; // from nvshmem_malloc
    /// let sym = unsafe { SymPtr::from_raw(addr) };
    /// ```
    ///
    /// # Safety
    /// `ptr` must point into NVSHMEM's symmetric heap, in an allocation that
    /// every PE made collectively.
    pub const unsafe fn from_raw(ptr: *mut T) -> Self {
        Self {
            ptr,
            _marker: PhantomData,
        }
    }

    /// The symmetric address as this PE's local pointer.
    ///
    /// ```
    /// # use nvshmem_types::SymPtr;
    /// # let buf = unsafe { SymPtr::<u32>::from_raw(0x1000 as *mut u32) };
    /// let local: *mut u32 = buf.as_ptr(); // this PE's copy of the object
    /// ```
    pub const fn as_ptr(self) -> *mut T {
        self.ptr
    }

    /// The address as an integer, as a CUDA host sees a device pointer.
    ///
    /// ```
    /// # use nvshmem_types::SymPtr;
    /// let buf = unsafe { SymPtr::<u32>::from_raw(0x1000 as *mut u32) };
    /// assert_eq!(buf.addr(), 0x1000);
    /// ```
    pub fn addr(self) -> u64 {
        self.ptr as usize as u64
    }

    /// The symmetric address `count` elements further on.
    ///
    /// ```
    /// # use nvshmem_types::SymPtr;
    /// let buf = unsafe { SymPtr::<u32>::from_raw(0x1000 as *mut u32) };
    /// assert_eq!(unsafe { buf.add(9) }.addr(), 0x1024);
    /// ```
    ///
    /// # Safety
    /// The result must stay inside the same symmetric allocation.
    pub const unsafe fn add(self, count: usize) -> Self {
        // SAFETY: the caller keeps the offset inside the allocation.
        unsafe { Self::from_raw(self.ptr.add(count)) }
    }

    /// The same address seen as another element type.
    ///
    /// ```
    /// # use nvshmem_types::SymPtr;
    /// # let buf = unsafe { SymPtr::<u64>::from_raw(0x1000 as *mut u64) };
    /// let bytes = buf.cast::<u8>();
    /// ```
    pub const fn cast<U>(self) -> SymPtr<U> {
        SymPtr {
            ptr: self.ptr.cast(),
            _marker: PhantomData,
        }
    }
}

/// A processing element: one member of the NVSHMEM job, numbered from 0.
///
/// Any number can be written down. The safe device functions that take a
/// `Pe` (`ptr`, `team_translate_pe`) check it against the job's size; the
/// `unsafe` ones require `pe < n_pes()` (NVSHMEM indexes its peer tables
/// with it unchecked), and with `nvshmem-device`'s `debug-checks` feature
/// trap instead.
///
/// ```
/// use nvshmem_types::Pe;
/// let pe = Pe::new(3);
/// assert_eq!(pe.ring_next(4), Pe::new(0));
/// assert_eq!(pe.ring_prev(4), Pe::new(2));
/// ```
#[repr(transparent)]
#[derive(
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Debug,
    Default,
    bytemuck::Pod,
    bytemuck::Zeroable,
)]
pub struct Pe(u32);

impl Pe {
    /// PE number `index`.
    ///
    /// ```
    /// # use nvshmem_types::Pe;
    /// assert_eq!(Pe::new(1).index(), 1);
    /// ```
    pub const fn new(index: u32) -> Self {
        Self(index)
    }

    /// This PE's number.
    ///
    /// ```
    /// # use nvshmem_types::Pe;
    /// assert_eq!(Pe::new(7).index(), 7);
    /// ```
    pub const fn index(self) -> u32 {
        self.0
    }

    /// The number as NVSHMEM's C API takes it (`int pe`).
    ///
    /// ```
    /// # use nvshmem_types::Pe;
    /// assert_eq!(Pe::new(2).to_c(), 2i32);
    /// ```
    pub const fn to_c(self) -> i32 {
        self.0 as i32
    }

    /// The next PE around a ring of `n_pes` PEs.
    ///
    /// ```
    /// # use nvshmem_types::Pe;
    /// assert_eq!(Pe::new(0).ring_next(1), Pe::new(0));
    /// ```
    pub const fn ring_next(self, n_pes: u32) -> Self {
        Self((self.0 + 1) % n_pes)
    }

    /// The previous PE around a ring of `n_pes` PEs.
    ///
    /// ```
    /// # use nvshmem_types::Pe;
    /// assert_eq!(Pe::new(0).ring_prev(3), Pe::new(2));
    /// ```
    pub const fn ring_prev(self, n_pes: u32) -> Self {
        Self((self.0 + n_pes - 1) % n_pes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_wraps_both_ways() {
        for n in 1..9 {
            for i in 0..n {
                let pe = Pe::new(i);
                assert_eq!(pe.ring_next(n).ring_prev(n), pe);
                assert!(pe.ring_next(n).index() < n);
            }
        }
    }

    #[test]
    fn sym_ptr_is_pointer_sized_and_offsets_by_elements() {
        assert_eq!(core::mem::size_of::<SymPtr<f64>>(), 8);
        let p = unsafe { SymPtr::from_raw(0x1000 as *mut u32) };
        assert_eq!(unsafe { p.add(4) }.addr(), 0x1010);
        assert_eq!(p.cast::<u8>().addr(), 0x1000);
    }
}
