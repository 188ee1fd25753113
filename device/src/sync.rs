//! Waiting and ordering: `wait_until`/`test` (single, `_all`, `_any`,
//! `_some`, `_vector`), signals, `quiet`/`fence`, and the job-wide barriers.
//!
//! ```no_run
//! use nvshmem_device::{Cmp, Pe, SignalOp, SymPtr, put_signal, signal_wait_until};
//! // PE 0 sends a buffer with a flag; PE 1 waits for the flag, then reads.
//! unsafe fn hand_over(buf: SymPtr<f32>, src: *const f32, flag: SymPtr<u64>, me: Pe) {
//!     if me == Pe::new(0) {
//!         unsafe { put_signal(buf, src, 256, flag, 1, SignalOp::Set, Pe::new(1)) };
//!     } else {
//!         unsafe { signal_wait_until(flag, Cmp::Eq, 1) };
//!     }
//! }
//! ```

use crate::__private::Sealed;
use crate::debug::{check_len, check_pe};
use crate::{Pe, SymPtr, ffi};
use core::ffi::c_int;

pub use nvshmem_types::{Cmp, SignalOp};

/// Every `wait_until`/`test` function of one element type, as `(name,
/// (parameters), return type)`: the one list that [`WaitElement`]'s methods
/// and their implementations come from (`__<name>` calls `nvshmem_TYPE_<name>`).
macro_rules! wait_ops {
    ($m:ident! $($args:tt)*) => { $m! { $($args)* [
        (test, (ivar: *mut Self, cmp: c_int, value: Self), c_int)
        (wait_until, (ivar: *mut Self, cmp: c_int, value: Self), ())
        (test_all, (ivars: *mut Self, n: usize, status: *const c_int, cmp: c_int, value: Self), c_int)
        (wait_until_all, (ivars: *mut Self, n: usize, status: *const c_int, cmp: c_int, value: Self), ())
        (test_any, (ivars: *mut Self, n: usize, status: *const c_int, cmp: c_int, value: Self), usize)
        (wait_until_any, (ivars: *mut Self, n: usize, status: *const c_int, cmp: c_int, value: Self), usize)
        (test_some, (ivars: *mut Self, n: usize, indices: *mut usize, status: *const c_int, cmp: c_int,
            value: Self), usize)
        (wait_until_some, (ivars: *mut Self, n: usize, indices: *mut usize, status: *const c_int,
            cmp: c_int, value: Self), usize)
        (test_all_vector, (ivars: *mut Self, n: usize, status: *const c_int, cmp: c_int,
            values: *const Self), c_int)
        (wait_until_all_vector, (ivars: *mut Self, n: usize, status: *const c_int, cmp: c_int,
            values: *const Self), ())
        (test_any_vector, (ivars: *mut Self, n: usize, status: *const c_int, cmp: c_int,
            values: *const Self), usize)
        (wait_until_any_vector, (ivars: *mut Self, n: usize, status: *const c_int, cmp: c_int,
            values: *const Self), usize)
        (test_some_vector, (ivars: *mut Self, n: usize, indices: *mut usize, status: *const c_int,
            cmp: c_int, values: *const Self), usize)
        (wait_until_some_vector, (ivars: *mut Self, n: usize, indices: *mut usize,
            status: *const c_int, cmp: c_int, values: *const Self), usize)
    ] } };
}

macro_rules! declare_wait_ops {
    ([$( ($op:ident, ($($a:ident: $t:ty),*), $r:ty) )*]) => { pastey::paste! { $(
        #[doc(hidden)]
        unsafe fn [<__ $op>]($($a: $t),*) -> $r;
    )* } };
}

macro_rules! impl_wait_ops {
    ($n:ident [$( ($op:ident, ($($a:ident: $t:ty),*), $r:ty) )*]) => { pastey::paste! { $(
        #[inline(always)]
        unsafe fn [<__ $op>]($($a: $t),*) -> $r {
            unsafe { ffi::[<nvshmem_ $n _ $op>]($($a),*) }
        }
    )* } };
}

/// An element type of NVSHMEM's `wait_until`/`test` functions
/// (`NVSHMEMI_REPT_FOR_WAIT_TYPES`): `i32 i64 u32 u64 usize isize`, and
/// `i16`/`u16` through `short`/`ushort` (the list has no `int16`/`uint16`).
///
/// ```
/// use nvshmem_device::WaitElement;
/// assert_eq!(<i16 as WaitElement>::WAIT_NAME, "short");
/// assert_eq!(<usize as WaitElement>::WAIT_NAME, "size");
/// ```
#[diagnostic::on_unimplemented(
    message = "NVSHMEM cannot wait on a `{Self}`",
    note = "`wait_until` and friends take `i16`, `u16`, `i32`, `u32`, `i64`, `u64`, `isize` and `usize`; wait on a flag of one of those beside your data"
)]
pub trait WaitElement: Copy + Sealed {
    /// The NVSHMEM type name used (`uint64` in `nvshmem_uint64_wait_until`).
    const WAIT_NAME: &'static str;
    wait_ops!(declare_wait_ops!);
}

macro_rules! impl_wait {
    ($($t:ty => $n:ident),* $(,)?) => {$(
        impl WaitElement for $t {
            const WAIT_NAME: &'static str = stringify!($n);
            wait_ops!(impl_wait_ops! $n);
        }
    )*};
}

impl_wait! {
    // The wait list has no int16/uint16; `short`/`ushort` are the same C types.
    i16 => short, u16 => ushort,
    i32 => int32, i64 => int64, u32 => uint32, u64 => uint64, usize => size, isize => ptrdiff,
}

/// `status` as NVSHMEM takes it: null for "every element takes part".
#[inline(always)]
#[cfg_attr(feature = "debug-checks", track_caller)]
fn status_ptr(status: Option<&[i32]>, nelems: usize) -> *const c_int {
    match status {
        Some(s) => {
            check_len(s.len(), nelems, c"status");
            s.as_ptr()
        }
        None => core::ptr::null(),
    }
}

/// `SIZE_MAX` (NVSHMEM's "none") as `None`.
#[inline(always)]
fn index(i: usize) -> Option<usize> {
    (i != usize::MAX).then_some(i)
}

/// Waits until `*ivar <cmp> value` holds for this PE's `ivar`
/// (`nvshmem_TYPE_wait_until`), then makes the updates that led to it visible.
///
/// # Safety
/// `ivar` must be a live symmetric object of this PE that other PEs update
/// with NVSHMEM operations.
///
/// # Example
/// ```no_run
/// use nvshmem_device::{Cmp, SymPtr, wait_until};
/// unsafe fn kernel(flag: SymPtr<u64>) {
///     unsafe { wait_until(flag, Cmp::Ne, 0) };
/// }
/// ```
#[inline(always)]
pub unsafe fn wait_until<T: WaitElement>(ivar: SymPtr<T>, cmp: Cmp, value: T) {
    // SAFETY: the caller's contract.
    unsafe { T::__wait_until(ivar.as_ptr(), cmp.to_c(), value) }
}

/// Whether `*ivar <cmp> value` holds now (`nvshmem_TYPE_test`); does not wait.
///
/// # Safety
/// As for [`wait_until`].
///
/// # Example
/// ```no_run
/// use nvshmem_device::{Cmp, SymPtr, test};
/// unsafe fn kernel(flag: SymPtr<i32>) -> bool {
///     unsafe { test(flag, Cmp::Eq, 1) }
/// }
/// ```
#[inline(always)]
pub unsafe fn test<T: WaitElement>(ivar: SymPtr<T>, cmp: Cmp, value: T) -> bool {
    // SAFETY: the caller's contract.
    unsafe { T::__test(ivar.as_ptr(), cmp.to_c(), value) != 0 }
}

/// The array forms: `wait_until_{all,any,some}` and `test_{all,any,some}`,
/// each with one comparison value (`value: T`) or one per element
/// (`_vector`, `values: &[T]`). `some` also takes `indices`. The entries:
/// `fn name(value or values, [indices]) -> kind`, where the kind says what
/// NVSHMEM's return means: `unit`, `bool` (non-zero), `index` (`SIZE_MAX` is
/// none), `count`.
macro_rules! wait_array_fns {
    ($(
        $(#[$doc:meta])*
        fn $name:ident($cmp_arg:ident $(, $indices:ident)?) -> $kind:ident;
    )*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// `ivars` must be a live symmetric array of at least `nelems` elements on this PE that
        /// other PEs update with NVSHMEM operations; `status`, when given, holds at least `nelems`
        /// flags (non-zero: skip that element), as must `indices` and `values` where taken
        /// (`debug-checks` checks the slices' lengths).
        #[inline(always)]
        #[cfg_attr(feature = "debug-checks", track_caller)]
        pub unsafe fn $name<T: WaitElement>(
            ivars: SymPtr<T>,
            nelems: usize,
            $($indices: &mut [usize],)?
            status: Option<&[i32]>,
            cmp: Cmp,
            $cmp_arg: wait_array_fns!(@arg $cmp_arg),
        ) -> wait_array_fns!(@ret $kind) {
            $( check_len($indices.len(), nelems, c"indices"); )?
            let $cmp_arg = wait_array_fns!(@pass $cmp_arg $cmp_arg nelems);
            let status = status_ptr(status, nelems);
            // SAFETY: the caller's contract; the slices are long enough.
            let r = pastey::paste! { unsafe {
                T::[<__ $name>](ivars.as_ptr(), nelems, $($indices.as_mut_ptr(),)? status, cmp.to_c(), $cmp_arg)
            } };
            wait_array_fns!(@convert $kind r)
        }
    )*};
    (@arg value) => { T };
    (@arg values) => { &[T] };
    (@pass value $v:ident $n:ident) => { $v };
    (@pass values $v:ident $n:ident) => {{
        check_len($v.len(), $n, c"values");
        $v.as_ptr()
    }};
    (@ret unit) => { () };
    (@ret bool) => { bool };
    (@ret index) => { Option<usize> };
    (@ret count) => { usize };
    (@convert unit $r:ident) => { $r };
    (@convert bool $r:ident) => { $r != 0 };
    (@convert index $r:ident) => { index($r) };
    (@convert count $r:ident) => { $r };
}

wait_array_fns! {
    /// Waits until `ivars[i] <cmp> value` for every `i < nelems` whose `status[i]`
    /// is 0 (every `i` with `status = None`) (`nvshmem_TYPE_wait_until_all`).
    ///
    /// ```no_run
    /// use nvshmem_device::{Cmp, SymPtr, wait_until_all};
    /// unsafe fn kernel(flags: SymPtr<u64>) {
    ///     unsafe { wait_until_all(flags, 8, None, Cmp::Eq, 1) };
    /// }
    /// ```
    fn wait_until_all(value) -> unit;
    /// Waits until `ivars[i] <cmp> value` for some taking part `i` and returns
    /// that `i`; `None` if no element takes part (`nvshmem_TYPE_wait_until_any`).
    ///
    /// ```no_run
    /// use nvshmem_device::{Cmp, SymPtr, wait_until_any};
    /// unsafe fn kernel(flags: SymPtr<u32>) -> Option<usize> {
    ///     unsafe { wait_until_any(flags, 4, None, Cmp::Gt, 0) }
    /// }
    /// ```
    fn wait_until_any(value) -> index;
    /// Waits until `ivars[i] <cmp> value` for at least one taking part `i`; writes
    /// the indices that satisfy it to `indices` and returns how many
    /// (`nvshmem_TYPE_wait_until_some`).
    ///
    /// ```no_run
    /// use nvshmem_device::{Cmp, SymPtr, wait_until_some};
    /// unsafe fn kernel(flags: SymPtr<u64>, ready: &mut [usize; 8]) -> usize {
    ///     unsafe { wait_until_some(flags, 8, ready, None, Cmp::Eq, 1) }
    /// }
    /// ```
    fn wait_until_some(value, indices) -> count;
    /// [`wait_until_all`] with one comparison value per element:
    /// `ivars[i] <cmp> values[i]` (`nvshmem_TYPE_wait_until_all_vector`).
    ///
    /// ```no_run
    /// use nvshmem_device::{Cmp, SymPtr, wait_until_all_vector};
    /// unsafe fn kernel(seq: SymPtr<u64>, want: &[u64; 4]) {
    ///     unsafe { wait_until_all_vector(seq, 4, None, Cmp::Ge, want) };
    /// }
    /// ```
    fn wait_until_all_vector(values) -> unit;
    /// [`wait_until_any`] with one comparison value per element
    /// (`nvshmem_TYPE_wait_until_any_vector`).
    ///
    /// ```no_run
    /// use nvshmem_device::{Cmp, SymPtr, wait_until_any_vector};
    /// unsafe fn kernel(seq: SymPtr<i32>, want: &[i32; 2]) -> Option<usize> {
    ///     unsafe { wait_until_any_vector(seq, 2, None, Cmp::Eq, want) }
    /// }
    /// ```
    fn wait_until_any_vector(values) -> index;
    /// [`wait_until_some`] with one comparison value per element
    /// (`nvshmem_TYPE_wait_until_some_vector`).
    ///
    /// ```no_run
    /// use nvshmem_device::{Cmp, SymPtr, wait_until_some_vector};
    /// unsafe fn kernel(seq: SymPtr<u32>, idx: &mut [usize; 3], want: &[u32; 3]) -> usize {
    ///     unsafe { wait_until_some_vector(seq, 3, idx, None, Cmp::Ge, want) }
    /// }
    /// ```
    fn wait_until_some_vector(values, indices) -> count;
    /// Whether `ivars[i] <cmp> value` holds now for every taking part `i`
    /// (`nvshmem_TYPE_test_all`); does not wait.
    ///
    /// ```no_run
    /// use nvshmem_device::{Cmp, SymPtr, test_all};
    /// unsafe fn kernel(flags: SymPtr<u64>, skip: &[i32; 4]) -> bool {
    ///     unsafe { test_all(flags, 4, Some(skip), Cmp::Eq, 1) }
    /// }
    /// ```
    fn test_all(value) -> bool;
    /// The index of a taking part element with `ivars[i] <cmp> value` now, if
    /// any (`nvshmem_TYPE_test_any`); does not wait.
    ///
    /// ```no_run
    /// use nvshmem_device::{Cmp, SymPtr, test_any};
    /// unsafe fn kernel(flags: SymPtr<i64>) -> Option<usize> {
    ///     unsafe { test_any(flags, 16, None, Cmp::Ne, 0) }
    /// }
    /// ```
    fn test_any(value) -> index;
    /// Writes to `indices` every taking part `i` with `ivars[i] <cmp> value` now
    /// and returns how many (`nvshmem_TYPE_test_some`); does not wait.
    ///
    /// ```no_run
    /// use nvshmem_device::{Cmp, SymPtr, test_some};
    /// unsafe fn kernel(flags: SymPtr<u32>, idx: &mut [usize; 4]) -> usize {
    ///     unsafe { test_some(flags, 4, idx, None, Cmp::Eq, 1) }
    /// }
    /// ```
    fn test_some(value, indices) -> count;
    /// [`test_all`] with one comparison value per element (`nvshmem_TYPE_test_all_vector`).
    ///
    /// ```no_run
    /// use nvshmem_device::{Cmp, SymPtr, test_all_vector};
    /// unsafe fn kernel(seq: SymPtr<u64>, want: &[u64; 2]) -> bool {
    ///     unsafe { test_all_vector(seq, 2, None, Cmp::Ge, want) }
    /// }
    /// ```
    fn test_all_vector(values) -> bool;
    /// [`test_any`] with one comparison value per element (`nvshmem_TYPE_test_any_vector`).
    ///
    /// ```no_run
    /// use nvshmem_device::{Cmp, SymPtr, test_any_vector};
    /// unsafe fn kernel(seq: SymPtr<usize>, want: &[usize; 2]) -> Option<usize> {
    ///     unsafe { test_any_vector(seq, 2, None, Cmp::Eq, want) }
    /// }
    /// ```
    fn test_any_vector(values) -> index;
    /// [`test_some`] with one comparison value per element (`nvshmem_TYPE_test_some_vector`).
    ///
    /// ```no_run
    /// use nvshmem_device::{Cmp, SymPtr, test_some_vector};
    /// unsafe fn kernel(seq: SymPtr<i32>, idx: &mut [usize; 2], want: &[i32; 2]) -> usize {
    ///     unsafe { test_some_vector(seq, 2, idx, None, Cmp::Lt, want) }
    /// }
    /// ```
    fn test_some_vector(values, indices) -> count;
}

/// Updates the signal word `signal` on PE `pe` with `op` and `value`
/// (`nvshmemx_signal_op`), atomically, without a data transfer.
///
/// # Safety
/// `signal` must be a live symmetric `u64` that is only updated by signal
/// operations and atomics while in use.
#[doc = pe_safety!()]
///
/// # Example
/// ```no_run
/// use nvshmem_device::{Pe, SignalOp, SymPtr, signal_op};
/// unsafe fn kernel(flag: SymPtr<u64>) {
///     unsafe { signal_op(flag, 1, SignalOp::Add, Pe::new(1)) };
/// }
/// ```
#[inline(always)]
#[cfg_attr(feature = "debug-checks", track_caller)]
pub unsafe fn signal_op(signal: SymPtr<u64>, value: u64, op: SignalOp, pe: Pe) {
    check_pe(pe);
    // SAFETY: the caller's contract.
    unsafe { ffi::nvshmemx_signal_op(signal.as_ptr(), value, op.to_c(), pe.to_c()) }
}

/// Reads this PE's signal word `signal` (`nvshmem_signal_fetch`).
///
/// # Safety
/// `signal` must be a live symmetric `u64`.
///
/// # Example
/// ```no_run
/// use nvshmem_device::{SymPtr, signal_fetch};
/// unsafe fn kernel(flag: SymPtr<u64>) -> u64 {
///     unsafe { signal_fetch(flag) }
/// }
/// ```
#[inline(always)]
pub unsafe fn signal_fetch(signal: SymPtr<u64>) -> u64 {
    // SAFETY: the caller's contract.
    unsafe { ffi::nvshmem_signal_fetch(signal.as_ptr()) }
}

/// Waits until this PE's signal word satisfies `*signal <cmp> value` and
/// returns its value then (`nvshmem_signal_wait_until`). Data sent with
/// [`put_signal`](crate::put_signal) is visible afterwards.
///
/// # Safety
/// `signal` must be a live symmetric `u64` that other PEs update with signal
/// operations.
///
/// # Example
/// ```no_run
/// use nvshmem_device::{Cmp, SymPtr, signal_wait_until};
/// unsafe fn kernel(flag: SymPtr<u64>) -> u64 {
///     unsafe { signal_wait_until(flag, Cmp::Ge, 4) }
/// }
/// ```
#[inline(always)]
pub unsafe fn signal_wait_until(signal: SymPtr<u64>, cmp: Cmp, value: u64) -> u64 {
    // SAFETY: the caller's contract.
    unsafe { ffi::nvshmem_signal_wait_until(signal.as_ptr(), cmp.to_c(), value) }
}

/// Sets this PE's signal word `signal` to 0 with a volatile store
/// (`nvshmemx_signal_counted_reset`, NVSHMEM 3.8+), to reuse it.
///
/// # Safety
/// `signal` must be a live symmetric `u64` that no other PE updates until
/// the reset is visible to it (a barrier or signal after this).
///
/// # Example
/// ```no_run
/// # nvshmem_device::with_nvshmem_3_8! {
/// use nvshmem_device::{SymPtr, signal_counted_reset};
/// unsafe fn kernel(flag: SymPtr<u64>) {
///     unsafe { signal_counted_reset(flag) };
/// }
/// # }
/// ```
#[cfg(any(doc, feature = "nvshmem-3-8"))]
#[inline(always)]
pub unsafe fn signal_counted_reset(signal: SymPtr<u64>) {
    // SAFETY: the caller's contract.
    unsafe { ffi::nvshmemx_signal_counted_reset(signal.as_ptr()) }
}

/// Waits until every put, AMO and signal this thread issued has completed
/// and is visible at its target (`nvshmem_quiet`).
///
/// ```no_run
/// nvshmem_device::quiet();
/// ```
#[inline(always)]
pub fn quiet() {
    // SAFETY: no arguments; orders this thread's earlier operations.
    unsafe { ffi::nvshmem_quiet() }
}

/// Orders this thread's puts, AMOs and signals: those before it reach each
/// target PE before those after it (`nvshmem_fence`). Does not wait.
///
/// ```no_run
/// nvshmem_device::fence();
/// ```
#[inline(always)]
pub fn fence() {
    // SAFETY: no arguments; only orders operations.
    unsafe { ffi::nvshmem_fence() }
}

macro_rules! void_fns {
    ($( $(#[$doc:meta])* $(cfg($cfg:meta))? $([$unsafe:ident])? fn $name:ident => $ffi:ident; )*) => {$(
        $(#[$doc])*
        ///
        /// ```no_run
        #[doc = call_doc!($($unsafe)? concat!("nvshmem_device::", stringify!($name), "()"))]
        /// ```
        $(#[cfg($cfg)])?
        #[inline(always)]
        pub $($unsafe)? fn $name() {
            // SAFETY: no arguments; a collective or ordering operation. Warp
            // and block scope: the caller's group calls it together (their
            // `# Safety`).
            unsafe { ffi::$ffi() }
        }
    )*};
}

void_fns! {
    /// Waits until the source buffers of this thread's earlier non-blocking
    /// puts may be reused (`nvshmemx_flush`, NVSHMEM 3.7+). Unlike
    /// [`quiet`], the data need not have arrived.
    cfg(any(doc, feature = "nvshmem-3-7")) fn flush => nvshmemx_flush;
    /// [`flush`] for the warp's puts (`nvshmemx_flush_warp`, NVSHMEM 3.7+).
    ///
    /// # Safety
    #[doc = warp_safety!()]
    cfg(any(doc, feature = "nvshmem-3-7")) [unsafe] fn flush_warp => nvshmemx_flush_warp;
    /// [`flush`] for the block's puts (`nvshmemx_flush_block`, NVSHMEM 3.7+).
    ///
    /// # Safety
    #[doc = block_safety!()]
    cfg(any(doc, feature = "nvshmem-3-7")) [unsafe] fn flush_block => nvshmemx_flush_block;

    /// Job-wide barrier (`nvshmem_barrier_all`): completes this thread's
    /// operations (as [`quiet`]), then waits for every PE. One thread per PE
    /// calls it; the kernel must be launched cooperatively (every block
    /// resident), or it can hang. A call outside that discipline hangs or
    /// lets the barrier return early; it touches nothing but NVSHMEM's own
    /// synchronization state.
    fn barrier_all => nvshmem_barrier_all;
    /// [`barrier_all`] called by every thread of one warp per PE (`nvshmemx_barrier_all_warp`).
    ///
    /// # Safety
    #[doc = warp_safety!()]
    [unsafe] fn barrier_all_warp => nvshmemx_barrier_all_warp;
    /// [`barrier_all`] called by every thread of one block per PE (`nvshmemx_barrier_all_block`).
    ///
    /// # Safety
    #[doc = block_safety!()]
    [unsafe] fn barrier_all_block => nvshmemx_barrier_all_block;
    /// Job-wide synchronization without completing outstanding operations
    /// (`nvshmem_sync_all`); otherwise as [`barrier_all`].
    fn sync_all => nvshmem_sync_all;
    /// [`sync_all`] called by every thread of one warp per PE (`nvshmemx_sync_all_warp`).
    ///
    /// # Safety
    #[doc = warp_safety!()]
    [unsafe] fn sync_all_warp => nvshmemx_sync_all_warp;
    /// [`sync_all`] called by every thread of one block per PE (`nvshmemx_sync_all_block`).
    ///
    /// # Safety
    #[doc = block_safety!()]
    [unsafe] fn sync_all_block => nvshmemx_sync_all_block;
}
