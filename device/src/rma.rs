//! Remote memory access: `p`/`g`, `put`/`get` (blocking and `_nbi`), strided
//! `iput`/`iget`, `put_signal`, and their byte-wise `_pod` forms for any
//! [`bytemuck::Pod`] type.
//!
//! Scopes follow NVSHMEM's names: `put` is called by one thread, `put_warp`
//! by every thread of a warp together (NVSHMEM's `nvshmemx_*_warp`), and
//! `put_block` by every thread of a block together (`nvshmemx_*_block`); the
//! group shares the copy.
//!
//! ```no_run
//! use nvshmem_device::{Pe, SymPtr, put_block, quiet, thread};
//! // Every thread of the block calls it with the same arguments.
//! unsafe fn send_tile(dest: SymPtr<f32>, tile: *const f32, to: Pe) {
//!     unsafe { put_block(dest, tile, 1024, to) };
//!     if thread::block_thread_rank() == 0 {
//!         quiet();
//!     }
//! }
//! ```

use crate::__private::{Scope, Sealed};
use crate::debug::check_pe;
use crate::{Pe, SignalOp, SymPtr, ffi};
use core::ffi::{c_int, c_void};
use half::{bf16, f16};

/// An element type of NVSHMEM's typed RMA functions (`NVSHMEMI_REPT_FOR_STANDARD_RMA_TYPES`).
///
/// Implemented for `i8`, `i16`, `i32`, `i64`, `u8`, `u16`, `u32`, `u64`,
/// `usize`, `isize`, `f32`, `f64`, [`half::f16`] and [`half::bf16`], each
/// mapped to one NVSHMEM name ([`RMA_NAME`](Self::RMA_NAME)). Other plain data
/// goes through the byte-wise [`put_pod`]/[`get_pod`] family.
///
/// ```
/// use nvshmem_device::RmaElement;
/// assert_eq!(<u64 as RmaElement>::RMA_NAME, "uint64");
/// assert_eq!(<half::bf16 as RmaElement>::RMA_NAME, "bfloat16");
/// ```
///
/// A struct is not one; the compiler's note points to `put_pod`:
///
/// ```compile_fail
/// # use nvshmem_device::{Pe, SymPtr};
/// #[derive(Clone, Copy)]
/// struct Particle { x: f32, y: f32 }
/// unsafe fn send(dest: SymPtr<Particle>, src: *const Particle, pe: Pe) {
///     unsafe { nvshmem_device::put(dest, src, 1, pe) } // use put_pod
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an element type of NVSHMEM's typed put/get",
    note = "structs and other plain data go through `put_pod`, `get_pod` and the other `_pod` forms (derive `bytemuck::Pod`, re-exported as `nvshmem_device::bytemuck`); the typed forms take the integers, `f32`, `f64`, `f16` and `bf16`"
)]
pub trait RmaElement: Copy + Sealed {
    /// The NVSHMEM type name used (`int32` in `nvshmem_int32_put`).
    const RMA_NAME: &'static str;
    #[doc(hidden)]
    unsafe fn __p(dest: *mut Self, value: Self, pe: c_int);
    #[doc(hidden)]
    unsafe fn __g(source: *const Self, pe: c_int) -> Self;
    #[doc(hidden)]
    unsafe fn __put(s: Scope, dest: *mut Self, source: *const Self, nelems: usize, pe: c_int);
    #[doc(hidden)]
    unsafe fn __put_nbi(s: Scope, dest: *mut Self, source: *const Self, nelems: usize, pe: c_int);
    #[doc(hidden)]
    unsafe fn __get(s: Scope, dest: *mut Self, source: *const Self, nelems: usize, pe: c_int);
    #[doc(hidden)]
    unsafe fn __get_nbi(s: Scope, dest: *mut Self, source: *const Self, nelems: usize, pe: c_int);
    #[doc(hidden)]
    unsafe fn __iput(
        s: Scope,
        dest: *mut Self,
        source: *const Self,
        dst: isize,
        sst: isize,
        n: usize,
        pe: c_int,
    );
    #[doc(hidden)]
    unsafe fn __iget(
        s: Scope,
        dest: *mut Self,
        source: *const Self,
        dst: isize,
        sst: isize,
        n: usize,
        pe: c_int,
    );
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn __put_signal(
        s: Scope,
        dest: *mut Self,
        source: *const Self,
        nelems: usize,
        sig: *mut u64,
        signal: u64,
        op: c_int,
        pe: c_int,
    );
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn __put_signal_nbi(
        s: Scope,
        dest: *mut Self,
        source: *const Self,
        nelems: usize,
        sig: *mut u64,
        signal: u64,
        op: c_int,
        pe: c_int,
    );
}

macro_rules! rma_p {
    // `half`/`__nv_bfloat16` values travel as `ptr byval`: pass a pointer to a copy.
    (half, $d:expr, $v:expr, $pe:expr) => { ffi::nvshmem_half_p($d, &$v, $pe) };
    (bfloat16, $d:expr, $v:expr, $pe:expr) => { ffi::nvshmem_bfloat16_p($d, &$v, $pe) };
    ($n:ident, $d:expr, $v:expr, $pe:expr) => { pastey::paste!( ffi::[<nvshmem_ $n _p>]($d, $v, $pe) ) };
}

macro_rules! rma_g {
    // `nvshmem_half_g` returns `%struct.__half`, which Rust cannot match: a
    // blocking one-element get does the same.
    (half, $s:expr, $pe:expr) => { g_by_get::<f16>($s, $pe) };
    (bfloat16, $s:expr, $pe:expr) => { g_by_get::<bf16>($s, $pe) };
    ($n:ident, $s:expr, $pe:expr) => { pastey::paste!( ffi::[<nvshmem_ $n _g>]($s, $pe) ) };
}

#[inline(always)]
unsafe fn g_by_get<T: RmaElement>(source: *const T, pe: c_int) -> T {
    let mut value = core::mem::MaybeUninit::<T>::uninit();
    // SAFETY: the caller's contract for `g`; `get` returns once `value` is written.
    unsafe {
        T::__get(Scope::Thread, value.as_mut_ptr(), source, 1, pe);
        value.assume_init()
    }
}

macro_rules! impl_rma {
    ($($t:ty => $n:ident),* $(,)?) => {$(
        impl RmaElement for $t {
            const RMA_NAME: &'static str = stringify!($n);
            #[inline(always)]
            unsafe fn __p(dest: *mut Self, value: Self, pe: c_int) {
                unsafe { rma_p!($n, dest, value, pe) }
            }
            #[inline(always)]
            unsafe fn __g(source: *const Self, pe: c_int) -> Self {
                unsafe { rma_g!($n, source, pe) }
            }
            #[inline(always)]
            unsafe fn __put(s: Scope, dest: *mut Self, source: *const Self, nelems: usize, pe: c_int) {
                unsafe { scoped_ffi!(s, [$n _put], dest, source, nelems, pe) }
            }
            #[inline(always)]
            unsafe fn __put_nbi(s: Scope, dest: *mut Self, source: *const Self, nelems: usize, pe: c_int) {
                unsafe { scoped_ffi!(s, [$n _put_nbi], dest, source, nelems, pe) }
            }
            #[inline(always)]
            unsafe fn __get(s: Scope, dest: *mut Self, source: *const Self, nelems: usize, pe: c_int) {
                unsafe { scoped_ffi!(s, [$n _get], dest, source, nelems, pe) }
            }
            #[inline(always)]
            unsafe fn __get_nbi(s: Scope, dest: *mut Self, source: *const Self, nelems: usize, pe: c_int) {
                unsafe { scoped_ffi!(s, [$n _get_nbi], dest, source, nelems, pe) }
            }
            #[inline(always)]
            unsafe fn __iput(
                s: Scope, dest: *mut Self, source: *const Self, dst: isize, sst: isize, n: usize, pe: c_int,
            ) {
                unsafe { scoped_ffi!(s, [$n _iput], dest, source, dst, sst, n, pe) }
            }
            #[inline(always)]
            unsafe fn __iget(
                s: Scope, dest: *mut Self, source: *const Self, dst: isize, sst: isize, n: usize, pe: c_int,
            ) {
                unsafe { scoped_ffi!(s, [$n _iget], dest, source, dst, sst, n, pe) }
            }
            #[inline(always)]
            unsafe fn __put_signal(
                s: Scope, dest: *mut Self, source: *const Self, nelems: usize,
                sig: *mut u64, signal: u64, op: c_int, pe: c_int,
            ) {
                unsafe { scoped_ffi!(s, [$n _put_signal], dest, source, nelems, sig, signal, op, pe) }
            }
            #[inline(always)]
            unsafe fn __put_signal_nbi(
                s: Scope, dest: *mut Self, source: *const Self, nelems: usize,
                sig: *mut u64, signal: u64, op: c_int, pe: c_int,
            ) {
                unsafe { scoped_ffi!(s, [$n _put_signal_nbi], dest, source, nelems, sig, signal, op, pe) }
            }
        }
    )*};
}

/// The Rust types of `NVSHMEMI_REPT_FOR_STANDARD_RMA_TYPES` and the NVSHMEM
/// names they use: the element types of the typed RMA functions and of the
/// typed collectives (`crate::coll`), listed once.
macro_rules! rma_types {
    ($m:ident!) => {
        $m! {
            i8 => int8, i16 => int16, i32 => int32, i64 => int64,
            u8 => uint8, u16 => uint16, u32 => uint32, u64 => uint64,
            usize => size, isize => ptrdiff,
            f32 => float, f64 => double, f16 => half, bf16 => bfloat16,
        }
    };
}
pub(crate) use rma_types;

rma_types!(impl_rma!);

/// A put or get of `$len` bytes through the peer's address when `nvshmem_ptr`
/// gives one (see `direct`), else `$fallback` (NVSHMEM's own path). With the
/// `nvshmem-path` feature, always `$fallback`: the choice is made when the
/// kernel is compiled, not per call.
#[cfg(not(feature = "nvshmem-path"))]
macro_rules! direct_or {
    (put, $scope:expr, $sym:expr, $pe:expr, $local:expr, $len:expr, $fallback:expr) => {
        match crate::symmetric::ptr_in_range($sym, $pe) {
            Some(peer) => crate::direct::put($scope, peer.as_ptr().cast(), $local.cast(), $len),
            None => $fallback,
        }
    };
    (get, $scope:expr, $sym:expr, $pe:expr, $local:expr, $len:expr, $fallback:expr) => {
        match crate::symmetric::ptr_in_range($sym, $pe) {
            Some(peer) => crate::direct::get($scope, $local.cast(), peer.as_ptr().cast(), $len),
            None => $fallback,
        }
    };
}

/// See above: the `nvshmem-path` feature takes NVSHMEM's path for every peer.
#[cfg(feature = "nvshmem-path")]
macro_rules! direct_or {
    ($dir:ident, $scope:expr, $sym:expr, $pe:expr, $local:expr, $len:expr, $fallback:expr) => {
        $fallback
    };
}

/// The body of every scoped put, get, strided put or get, and
/// put-with-signal, typed (`T::__op`) or byte-wise (`[putmem..]`, `[iput]`):
/// the PE check, then the direct copy (contiguous puts and gets) or NVSHMEM's
/// function. The arguments after the length are passed on as they are.
macro_rules! copy {
    (put, $scope:ident, $dest:ident, $source:ident, $n:ident, $pe:ident, $f:tt) => {{
        check_pe($pe);
        // SAFETY: the caller's contract.
        unsafe {
            direct_or!(put, $scope, $dest, $pe, $source, bytes::<T>($n),
                copy!(@call $f, $scope, $dest.as_ptr(), $source, $n, $pe.to_c()))
        }
    }};
    (get, $scope:ident, $dest:ident, $source:ident, $n:ident, $pe:ident, $f:tt) => {{
        check_pe($pe);
        // SAFETY: the caller's contract.
        unsafe {
            direct_or!(get, $scope, $source, $pe, $dest, bytes::<T>($n),
                copy!(@call $f, $scope, $dest, $source.as_ptr(), $n, $pe.to_c()))
        }
    }};
    // Strided: NVSHMEM's path only (it has no direct copy with strides).
    (iput, $scope:ident, $dest:ident, $source:ident, $ds:ident, $ss:ident, $n:ident, $pe:ident, $f:tt) => {{
        check_pe($pe);
        // SAFETY: the caller's contract.
        unsafe { copy!(@strided $f, $scope, $dest.as_ptr(), $source, $ds, $ss, $n, $pe.to_c()) }
    }};
    (iget, $scope:ident, $dest:ident, $source:ident, $ds:ident, $ss:ident, $n:ident, $pe:ident, $f:tt) => {{
        check_pe($pe);
        // SAFETY: the caller's contract.
        unsafe { copy!(@strided $f, $scope, $dest, $source.as_ptr(), $ds, $ss, $n, $pe.to_c()) }
    }};
    // NVSHMEM's path only: the signal must follow the data.
    (signal, $scope:ident, $dest:ident, $source:ident, $n:ident, $sig:ident, $v:ident, $op:ident,
        $pe:ident, $f:tt) => {{
        check_pe($pe);
        // SAFETY: the caller's contract.
        unsafe {
            copy!(@call $f, $scope, $dest.as_ptr(), $source, $n, $sig.as_ptr(), $v, $op.to_c(), $pe.to_c())
        }
    }};
    // Typed: NVSHMEM counts elements; byte-wise: bytes.
    (@call (T::$op:ident), $scope:ident, $($a:expr),*) => {
        T::$op($scope, $($a),*)
    };
    (@call [$mem:ident], $scope:ident, $d:expr, $s:expr, $n:ident, $($rest:expr),*) => {
        scoped_ffi!($scope, [$mem], $d as *mut c_void, $s as *const c_void, bytes::<T>($n), $($rest),*)
    };
    // Strided byte-wise: NVSHMEM's function of `T`'s size (`iput8` .. `iput128`).
    (@strided (T::$op:ident), $($a:tt)*) => { copy!(@call (T::$op), $($a)*) };
    (@strided [$op:ident], $scope:ident, $d:expr, $s:expr, $($rest:expr),*) => {
        strided_pod!($scope, $op, $d as *mut c_void, $s as *const c_void, $($rest,)* T)
    };
}

#[inline(always)]
const fn bytes<T>(nelems: usize) -> usize {
    nelems * core::mem::size_of::<T>()
}

/// Writes `value` to `dest` on PE `pe` (`nvshmem_TYPE_p`): the cheapest way
/// to send one element.
///
/// Returns once the store is issued; [`quiet`](crate::quiet) waits for it to
/// complete, [`fence`](crate::fence) orders it before later puts to the same PE.
///
/// # Safety
/// `dest` must be a live symmetric allocation holding a `T`, on every PE;
/// no other access may race with the write unless it is atomic. `pe` must
/// be a PE of the job (`pe < n_pes()`; `debug-checks` traps otherwise).
///
/// # Example
/// ```no_run
/// use nvshmem_device::{Pe, SymPtr, p};
/// unsafe fn kernel(flag: SymPtr<u32>) {
///     unsafe { p(flag, 1, Pe::new(0)) };
/// }
/// ```
#[inline(always)]
#[cfg_attr(feature = "debug-checks", track_caller)]
pub unsafe fn p<T: RmaElement>(dest: SymPtr<T>, value: T, pe: Pe) {
    check_pe(pe);
    // SAFETY: the caller's contract.
    unsafe { T::__p(dest.as_ptr(), value, pe.to_c()) }
}

/// Reads one element from `source` on PE `pe` (`nvshmem_TYPE_g`); blocks until
/// it arrives.
///
/// For `f16`/`bf16` this is a one-element [`get`] (NVSHMEM's `nvshmem_half_g`
/// returns a struct by value, which Rust cannot call).
///
/// # Safety
/// `source` must be a live symmetric allocation holding an initialized `T`,
/// on every PE. `pe` must be a PE of the job (`pe < n_pes()`; `debug-checks`
/// traps otherwise).
///
/// # Example
/// ```no_run
/// use nvshmem_device::{Pe, SymPtr, g};
/// unsafe fn kernel(counter: SymPtr<u64>) -> u64 {
///     unsafe { g(counter, Pe::new(1)) }
/// }
/// ```
#[inline(always)]
#[cfg_attr(feature = "debug-checks", track_caller)]
pub unsafe fn g<T: RmaElement>(source: SymPtr<T>, pe: Pe) -> T {
    check_pe(pe);
    // SAFETY: the caller's contract.
    unsafe { T::__g(source.as_ptr(), pe.to_c()) }
}

/// The `iputBITS`/`igetBITS` of a plain-data type of 1, 2, 4, 8 or 16
/// bytes; any other size does not compile.
macro_rules! strided_pod {
    ($scope:expr, $op:ident, $d:expr, $s:expr, $dst:expr, $sst:expr, $n:expr, $pe:expr, $T:ty) => {{
        const {
            assert!(
                matches!(core::mem::size_of::<$T>(), 1 | 2 | 4 | 8 | 16),
                "iput_pod/iget_pod move elements of 1, 2, 4, 8 or 16 bytes (NVSHMEM's iput8..iput128)"
            )
        };
        match core::mem::size_of::<$T>() {
            1 => scoped_ffi!($scope, [$op 8], $d, $s, $dst, $sst, $n, $pe),
            2 => scoped_ffi!($scope, [$op 16], $d, $s, $dst, $sst, $n, $pe),
            4 => scoped_ffi!($scope, [$op 32], $d, $s, $dst, $sst, $n, $pe),
            8 => scoped_ffi!($scope, [$op 64], $d, $s, $dst, $sst, $n, $pe),
            _ => scoped_ffi!($scope, [$op 128], $d, $s, $dst, $sst, $n, $pe),
        }
    }};
}

/// The scoped RMA functions, one row each: the docs, safety and example of
/// [`scoped!`], the three names, the element bound ([`RmaElement`] for the
/// typed forms, [`bytemuck::Pod`] for the byte-wise ones), and the kind and
/// function of [`copy!`]. The kind gives the parameters.
macro_rules! rma_fns {
    ($(
        $(#[$doc:meta])*
        safety: $safety:expr;
        example: $example:tt;
        fn $names:tt<T: $bound:path> = $kind:ident $f:tt;
    )*) => {$(
        rma_fns! { @$kind [$(#[$doc])* safety: $safety; example: $example; $names $bound, $kind $f] }
    )*};
    (@put $row:tt) => { rma_fns! { @fn $row (dest: SymPtr<T>, source: *const T, nelems: usize, pe: Pe) } };
    (@get $row:tt) => { rma_fns! { @fn $row (dest: *mut T, source: SymPtr<T>, nelems: usize, pe: Pe) } };
    (@iput $row:tt) => { rma_fns! { @fn $row
        (dest: SymPtr<T>, source: *const T, dest_stride: isize, source_stride: isize, nelems: usize, pe: Pe) } };
    (@iget $row:tt) => { rma_fns! { @fn $row
        (dest: *mut T, source: SymPtr<T>, dest_stride: isize, source_stride: isize, nelems: usize, pe: Pe) } };
    (@signal $row:tt) => { rma_fns! { @fn $row
        (dest: SymPtr<T>, source: *const T, nelems: usize, signal: SymPtr<u64>, value: u64, op: SignalOp, pe: Pe) } };
    (@fn [$(#[$doc:meta])* safety: $safety:expr; example: ($p:literal, $c:literal);
        [$t:ident, $w:ident, $b:ident] $bound:path, $kind:ident $f:tt] ($($arg:ident: $ty:ty),*)) => {
        scoped! {
            $(#[$doc])*
            safety: $safety;
            example: ($p, $c);
            pub unsafe fn [$t, $w, $b]<T: $bound>($($arg: $ty),*) |scope| { copy!($kind, scope, $($arg,)* $f) }
        }
    };
}

rma_fns! {
    /// Copies `nelems` elements from this PE's `source` to `dest` on PE `pe`
    /// (`nvshmem_TYPE_put`). Returns once `source` may be reused; the data is
    /// delivered by the next [`quiet`](crate::quiet).
    safety: concat!("`dest` must be a live symmetric allocation of at least `nelems` elements; `source` must \
        be readable for `nelems` elements in GPU memory and not change until the call returns. Nothing \
        may race with the writes to `dest` on PE `pe`.", pe_safety!());
    example: ("dest: SymPtr<f32>, src: *const f32", "(dest, src, 256, Pe::new(1))");
    fn [put, put_warp, put_block]<T: RmaElement> = put (T::__put);

    /// Starts copying `nelems` elements from `source` to `dest` on PE `pe` and
    /// returns at once (`nvshmem_TYPE_put_nbi`). `source` may be reused, and
    /// the data is delivered, after the next [`quiet`](crate::quiet).
    safety: "As for [`put`], and `source` must stay unchanged until the next `quiet`.";
    example: ("dest: SymPtr<u64>, src: *const u64", "(dest, src, 64, Pe::new(0))");
    fn [put_nbi, put_nbi_warp, put_nbi_block]<T: RmaElement> = put (T::__put_nbi);

    /// Copies `nelems` elements from `source` on PE `pe` to this PE's `dest`
    /// (`nvshmem_TYPE_get`); returns when `dest` holds them.
    safety: concat!("`source` must be a live symmetric allocation of at least `nelems` initialized elements; \
        `dest` must be writable for `nelems` elements in GPU memory, with no other access racing.", pe_safety!());
    example: ("dest: *mut f64, src: SymPtr<f64>", "(dest, src, 32, Pe::new(2))");
    fn [get, get_warp, get_block]<T: RmaElement> = get (T::__get);

    /// Starts copying `nelems` elements from `source` on PE `pe` to `dest` and
    /// returns at once (`nvshmem_TYPE_get_nbi`); `dest` is valid after the next
    /// [`quiet`](crate::quiet).
    safety: "As for [`get`], and `dest` must not be read or written until the next `quiet`.";
    example: ("dest: *mut i32, src: SymPtr<i32>", "(dest, src, 8, Pe::new(1))");
    fn [get_nbi, get_nbi_warp, get_nbi_block]<T: RmaElement> = get (T::__get_nbi);

    /// Strided put (`nvshmem_TYPE_iput`): element `i` goes from
    /// `source[i * source_stride]` to `dest[i * dest_stride]` on PE `pe`, for
    /// `i < nelems`. Strides count elements.
    ///
    /// NVSHMEM implements it over direct load/store only (NVLink/PCIe peers);
    /// over a network transport it prints an error and asserts.
    safety: concat!("Every addressed element must lie in `dest`'s symmetric allocation and in readable GPU \
        memory at `source`; nothing may race with the writes.", pe_safety!());
    example: ("dest: SymPtr<f32>, src: *const f32", "(dest, src, 4, 1, 16, Pe::new(1))");
    fn [iput, iput_warp, iput_block]<T: RmaElement> = iput (T::__iput);

    /// Strided get (`nvshmem_TYPE_iget`): element `i` comes from
    /// `source[i * source_stride]` on PE `pe` into `dest[i * dest_stride]`.
    /// Strides count elements. Direct load/store peers only, as [`iput`].
    safety: concat!("Every addressed element must lie in `source`'s symmetric allocation and in writable GPU \
        memory at `dest`; nothing may race with the writes.", pe_safety!());
    example: ("dest: *mut u32, src: SymPtr<u32>", "(dest, src, 1, 8, 16, Pe::new(0))");
    fn [iget, iget_warp, iget_block]<T: RmaElement> = iget (T::__iget);

    /// Copies `nelems` elements to `dest` on PE `pe`, then updates the signal
    /// word `signal` there with `op` and `value` (`nvshmem_TYPE_put_signal`):
    /// a receiver that sees the signal (see
    /// [`signal_wait_until`](crate::signal_wait_until)) sees the data.
    safety: "As for [`put`]; `signal` must be a live symmetric `u64` that is only updated by \
        signal operations and atomics while in use.";
    example: (
        "dest: SymPtr<f32>, src: *const f32, flag: SymPtr<u64>",
        "(dest, src, 256, flag, 1, SignalOp::Set, Pe::new(1))"
    );
    fn [put_signal, put_signal_warp, put_signal_block]<T: RmaElement> = signal (T::__put_signal);

    /// [`put_signal`] that returns at once (`nvshmem_TYPE_put_signal_nbi`);
    /// `source` may be reused after the next [`quiet`](crate::quiet).
    safety: "As for [`put_signal`], and `source` must stay unchanged until the next `quiet`.";
    example: (
        "dest: SymPtr<i64>, src: *const i64, flag: SymPtr<u64>",
        "(dest, src, 16, flag, 1, SignalOp::Add, Pe::new(3))"
    );
    fn [put_signal_nbi, put_signal_nbi_warp, put_signal_nbi_block]<T: RmaElement> = signal (T::__put_signal_nbi);

    // The byte-wise forms, for any plain-data type.

    /// Copies `nelems` values of any plain-data type `T` to `dest` on PE `pe`,
    /// byte-wise (`nvshmem_putmem`). Otherwise as [`put`].
    safety: "As for [`put`], for `nelems * size_of::<T>()` bytes.";
    example: ("dest: SymPtr<[f32; 4]>, src: *const [f32; 4]", "(dest, src, 10, Pe::new(1))");
    fn [put_pod, put_pod_warp, put_pod_block]<T: bytemuck::Pod> = put [putmem];

    /// [`put_pod`] that returns at once (`nvshmem_putmem_nbi`); as [`put_nbi`].
    safety: "As for [`put_nbi`], for `nelems * size_of::<T>()` bytes.";
    example: ("dest: SymPtr<u8>, src: *const u8", "(dest, src, 4096, Pe::new(1))");
    fn [put_pod_nbi, put_pod_nbi_warp, put_pod_nbi_block]<T: bytemuck::Pod> = put [putmem_nbi];

    /// Copies `nelems` plain-data values from `source` on PE `pe` to `dest`,
    /// byte-wise (`nvshmem_getmem`). Otherwise as [`get`].
    safety: "As for [`get`], for `nelems * size_of::<T>()` bytes.";
    example: ("dest: *mut [u16; 3], src: SymPtr<[u16; 3]>", "(dest, src, 5, Pe::new(0))");
    fn [get_pod, get_pod_warp, get_pod_block]<T: bytemuck::Pod> = get [getmem];

    /// [`get_pod`] that returns at once (`nvshmem_getmem_nbi`); as [`get_nbi`].
    safety: "As for [`get_nbi`], for `nelems * size_of::<T>()` bytes.";
    example: ("dest: *mut u8, src: SymPtr<u8>", "(dest, src, 512, Pe::new(1))");
    fn [get_pod_nbi, get_pod_nbi_warp, get_pod_nbi_block]<T: bytemuck::Pod> = get [getmem_nbi];

    /// Strided put of any plain-data type of 1, 2, 4, 8 or 16 bytes
    /// (`nvshmem_iput8` ... `nvshmem_iput128`, by `size_of::<T>()`): element
    /// `i` goes from `source[i * source_stride]` to `dest[i * dest_stride]`
    /// on PE `pe`. Direct load/store peers only, as [`iput`]; another size
    /// does not compile.
    safety: "As for [`iput`].";
    example: ("dest: SymPtr<[u64; 2]>, src: *const [u64; 2]", "(dest, src, 2, 1, 8, Pe::new(1))");
    fn [iput_pod, iput_pod_warp, iput_pod_block]<T: bytemuck::Pod> = iput [iput];

    /// Strided get of any plain-data type of 1, 2, 4, 8 or 16 bytes
    /// (`nvshmem_iget8` ... `nvshmem_iget128`): element `i` comes from
    /// `source[i * source_stride]` on PE `pe` into `dest[i * dest_stride]`.
    /// Direct load/store peers only, as [`iget`].
    safety: "As for [`iget`].";
    example: ("dest: *mut [f32; 4], src: SymPtr<[f32; 4]>", "(dest, src, 1, 4, 8, Pe::new(0))");
    fn [iget_pod, iget_pod_warp, iget_pod_block]<T: bytemuck::Pod> = iget [iget];

    /// [`put_signal`] for any plain-data type, byte-wise (`nvshmem_putmem_signal`).
    safety: "As for [`put_signal`], for `nelems * size_of::<T>()` bytes.";
    example: (
        "dest: SymPtr<[u32; 2]>, src: *const [u32; 2], flag: SymPtr<u64>",
        "(dest, src, 8, flag, 1, SignalOp::Set, Pe::new(1))"
    );
    fn [put_signal_pod, put_signal_pod_warp, put_signal_pod_block]<T: bytemuck::Pod> = signal [putmem_signal];

    /// [`put_signal_nbi`] for any plain-data type, byte-wise (`nvshmem_putmem_signal_nbi`).
    safety: "As for [`put_signal_nbi`], for `nelems * size_of::<T>()` bytes.";
    example: (
        "dest: SymPtr<u8>, src: *const u8, flag: SymPtr<u64>",
        "(dest, src, 100, flag, 1, SignalOp::Add, Pe::new(1))"
    );
    fn [put_signal_pod_nbi, put_signal_pod_nbi_warp, put_signal_pod_nbi_block]<T: bytemuck::Pod> = signal [putmem_signal_nbi];
}
