//! Scoped atomics and fences on local memory (this GPU's global or shared
//! memory), as PTX has them: every operation names its memory **ordering**
//! and its **scope** (the threads it synchronizes with).
//!
//! ```no_run
//! use nvshmem_device::atomic::{self, AcqRel, Acquire, Cta, Gpu, Relaxed, Release};
//!
//! // A grid-wide "last block done" counter, then a flag another block waits on.
//! unsafe fn finish(counter: *mut u32, flag: *mut u32, blocks: u32) -> bool {
//!     let arrived = unsafe { atomic::fetch_add(counter, 1, AcqRel, Gpu) };
//!     if arrived + 1 == blocks {
//!         unsafe { atomic::store(flag, 1, Release, Gpu) };
//!     }
//!     while unsafe { atomic::load(flag, Acquire, Gpu) } == 0 {}
//!     arrived + 1 == blocks
//! }
//! ```
//!
//! (For symmetric memory on other PEs use the crate's `atomic_*` functions,
//! NVSHMEM's AMOs; these are for memory this GPU addresses directly.)
//!
//! # Orderings and scopes
//! | Marker | PTX | Allowed on |
//! |---|---|---|
//! | [`Relaxed`] | `.relaxed` | everything but fences |
//! | [`Acquire`] | `.acquire` | loads, read-modify-writes, fences |
//! | [`Release`] | `.release` | stores, read-modify-writes, reductions, fences |
//! | [`AcqRel`] | `.acq_rel` | read-modify-writes, fences |
//! | [`SeqCst`] | `fence.sc` first, then the acquire/release/acq_rel form | loads, stores, read-modify-writes, fences |
//!
//! Scopes: [`Cta`] (the block, `.cta`), [`Gpu`] (the device, `.gpu`),
//! [`Sys`] (the device, the host and peer GPUs, `.sys`). A wrong pairing does
//! not compile: `load(p, Release, Gpu)` has no [`LoadOrdering`].
//!
//! PTX has no sequentially consistent load, store or RMW; `SeqCst` is
//! libcu++'s mapping: `fence.sc.<scope>` before an acquire load, a release
//! store, or an acq_rel read-modify-write.
//!
//! # Memory spaces
//! The functions in this module use generic addresses (any pointer to global
//! or shared memory), like CUDA's `cuda::atomic_ref`. [`shared`] and
//! [`global`] have the same functions with `.shared` and `.global` forms,
//! for pointers known to be in that space: the address is converted with
//! `cvta.to.shared`/`cvta.to.global` and the instruction skips the
//! generic-to-space resolution. Passing a pointer of the other space to them
//! is undefined behaviour.
//!
//! # Operations and element types
//! | Operation | PTX | Types |
//! |---|---|---|
//! | [`load`], [`store`] | `ld.{relaxed,acquire}`, `st.{relaxed,release}` | [`AtomicValue`]: `u32 i32 f32 u64 i64 f64`, [`F16x2`], [`Bf16x2`] |
//! | [`swap`], [`compare_exchange`] | `atom.exch`, `atom.cas` | [`AtomicValue`] |
//! | [`fetch_add`] / [`add`] | `atom.add` / `red.add` | [`AtomicAdd`]: `u32 i32 u64 i64 f32 f64`, [`F16x2`] (`.noftz.f16x2`), [`Bf16x2`] (`.noftz.bf16x2`, sm_90+) |
//! | [`fetch_sub`] / [`sub`] | `atom.add`/`red.add` of the negation | [`AtomicInteger`] |
//! | [`fetch_and`], [`fetch_or`], [`fetch_xor`] / [`and`], [`or`], [`xor`] | `atom`/`red` `.and .or .xor` (`.b32 .b64`) | [`AtomicInteger`]: `u32 i32 u64 i64` |
//! | [`fetch_min`], [`fetch_max`] / [`min`], [`max`] | `atom`/`red` `.min .max` (`.u32 .s32 .u64 .s64`) | [`AtomicInteger`] |
//! | [`fetch_inc`], [`fetch_dec`] / [`inc`], [`dec`] | `atom`/`red` `.inc .dec` (`.u32`, wrapping at a limit) | `u32` |
//! | [`fence`] | `fence.{acq_rel,sc}.{cta,gpu,sys}` | |
//!
//! The `fetch_*` functions (`atom`) return the old value; the plain ones
//! (`red`) only update memory, which is cheaper. `red` takes [`Relaxed`] or
//! [`Release`] ([`ReduceOrdering`]). Orderings and scopes need sm_70 or later.
//!
//! # Why not `core::sync::atomic`
//! On nvptx64 `core::sync::atomic` compiles, but LLVM 22's NVPTX backend
//! (nightly-2026-05-20, checked with `-C target-cpu=sm_90`) drops the
//! ordering of read-modify-write operations and cannot express a scope.
//! For `&AtomicU32` on global memory rustc emitted:
//!
//! | Rust | PTX |
//! |---|---|
//! | `fetch_add(1, Acquire)` | `atom.global.add.u32` (no `.sem`: relaxed; no fence) |
//! | `swap(3, SeqCst)` | `atom.global.exch.b32` (relaxed; no fence) |
//! | `compare_exchange(1, 2, AcqRel, Acquire)` | `atom.acq_rel.sys.global.cas.b32` |
//! | `load(Acquire)` / `store(_, Release)` | `ld.acquire.sys.global.b32` / `st.release.sys.global.b32` |
//!
//! So an acquire `fetch_add` used as a lock or a "last block" counter gets
//! no acquire semantics at all, a silent data race, and what ordering does
//! survive (compare-exchange, loads, stores) is always at system scope, the
//! slowest, where a block-local flag wants `.cta`. Here every operation is
//! inline PTX with the ordering and scope spelled out.

use crate::nvvm;

mod impls;

pub use crate::math::{Bf16x2, F16x2};

mod sealed {
    pub trait Sealed {}
}
use sealed::Sealed;

/// PTX memory ordering of an operation (not API).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sem {
    Relaxed,
    Acquire,
    Release,
    AcqRel,
}

/// PTX scope (not API).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScopeKind {
    Cta,
    Gpu,
    Sys,
}

/// PTX state space of the address (not API).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    Generic,
    Global,
    Shared,
}

/// A memory ordering marker: [`Relaxed`], [`Acquire`], [`Release`], [`AcqRel`], [`SeqCst`].
pub trait Ordering: Copy + Sealed {
    /// The PTX `.sem` (for `SeqCst`, the one the operation pairs with `fence.sc`).
    #[doc(hidden)]
    const SEM: Sem;
    /// Whether a `fence.sc` precedes the operation.
    #[doc(hidden)]
    const FENCE_SC: bool = false;
}
/// Orderings a load can have: [`Relaxed`], [`Acquire`], [`SeqCst`].
pub trait LoadOrdering: Ordering {}
/// Orderings a store can have: [`Relaxed`], [`Release`], [`SeqCst`].
pub trait StoreOrdering: Ordering {}
/// Orderings a read-modify-write (`atom`) can have: all five.
pub trait RmwOrdering: Ordering {}
/// Orderings a reduction (`red`) can have: [`Relaxed`], [`Release`].
pub trait ReduceOrdering: Ordering {}
/// Orderings a fence can have: [`Acquire`], [`Release`], [`AcqRel`] (all
/// `fence.acq_rel`) and [`SeqCst`] (`fence.sc`).
pub trait FenceOrdering: Ordering {}

/// A scope marker: [`Cta`], [`Gpu`], [`Sys`].
pub trait Scope: Copy + Sealed {
    /// The PTX `.scope`.
    #[doc(hidden)]
    const KIND: ScopeKind;
}

markers! {
    /// No ordering beyond the atomicity of the operation itself (`.relaxed`).
    Relaxed: Ordering { const SEM: Sem = Sem::Relaxed; }, LoadOrdering, StoreOrdering, RmwOrdering, ReduceOrdering;
    /// Later accesses stay after it (`.acquire`): pairs with a [`Release`] it reads from.
    Acquire: Ordering { const SEM: Sem = Sem::Acquire; }, LoadOrdering, RmwOrdering, FenceOrdering;
    /// Earlier accesses stay before it (`.release`).
    Release: Ordering { const SEM: Sem = Sem::Release; }, StoreOrdering, RmwOrdering, ReduceOrdering, FenceOrdering;
    /// Both [`Acquire`] and [`Release`] (`.acq_rel`).
    AcqRel: Ordering { const SEM: Sem = Sem::AcqRel; }, RmwOrdering, FenceOrdering;
    /// Sequentially consistent: `fence.sc` at the scope, then the acquire (load),
    /// release (store) or acq_rel (read-modify-write) operation.
    SeqCst: Ordering { const SEM: Sem = Sem::AcqRel; const FENCE_SC: bool = true; },
        LoadOrdering, StoreOrdering, RmwOrdering, FenceOrdering;
    /// The thread block (`.cta`).
    Cta: Scope { const KIND: ScopeKind = ScopeKind::Cta; };
    /// Every thread of this GPU (`.gpu`).
    Gpu: Scope { const KIND: ScopeKind = ScopeKind::Gpu; };
    /// This GPU, the host and peer GPUs (`.sys`): for memory others map.
    Sys: Scope { const KIND: ScopeKind = ScopeKind::Sys; };
}

/// A type with atomic loads, stores, [`swap`] and [`compare_exchange`]:
/// 32- and 64-bit words (`u32 i32 f32 u64 i64 f64`, [`F16x2`], [`Bf16x2`]).
///
/// Sealed; its methods are the implementation, not API.
///
/// # Safety
/// Sealed: implemented only in this crate.
pub unsafe trait AtomicValue: Copy + Sealed {
    #[doc(hidden)]
    unsafe fn __load(addr: u64, sem: Sem, scope: ScopeKind, space: Space) -> Self;
    #[doc(hidden)]
    unsafe fn __store(addr: u64, value: Self, sem: Sem, scope: ScopeKind, space: Space);
    #[doc(hidden)]
    unsafe fn __swap(addr: u64, value: Self, sem: Sem, scope: ScopeKind, space: Space) -> Self;
    #[doc(hidden)]
    unsafe fn __cas(
        addr: u64,
        current: Self,
        new: Self,
        sem: Sem,
        scope: ScopeKind,
        space: Space,
    ) -> Self;
    #[doc(hidden)]
    fn __same_bits(self, other: Self) -> bool;
}

/// The hidden methods of a read-modify-write operation: `$fetch` (`atom`,
/// returns the old value) and `$red` (`red`, returns nothing).
macro_rules! rmw_methods {
    ($($fetch:ident, $red:ident),*) => {$(
        #[doc(hidden)]
        unsafe fn $fetch(addr: u64, value: Self, sem: Sem, scope: ScopeKind, space: Space) -> Self;
        #[doc(hidden)]
        unsafe fn $red(addr: u64, value: Self, sem: Sem, scope: ScopeKind, space: Space);
    )*};
}

/// A type with atomic addition (`atom.add`/`red.add`): `u32 i32 u64 i64 f32
/// f64`, [`F16x2`] and [`Bf16x2`] (sm_90+).
///
/// # Safety
/// Sealed: implemented only in this crate.
pub unsafe trait AtomicAdd: AtomicValue {
    rmw_methods!(__fetch_add, __red_add);
}

/// An integer with atomic subtraction, bitwise operations, minimum and
/// maximum: `u32 i32 u64 i64`.
///
/// # Safety
/// Sealed: implemented only in this crate.
pub unsafe trait AtomicInteger: AtomicAdd {
    #[doc(hidden)]
    fn __neg(self) -> Self;
    rmw_methods!(
        __fetch_and,
        __red_and,
        __fetch_or,
        __red_or,
        __fetch_xor,
        __red_xor,
        __fetch_min,
        __red_min,
        __fetch_max,
        __red_max
    );
}

/// `fence.acq_rel.<scope>` ([`Acquire`], [`Release`], [`AcqRel`]) or
/// `fence.sc.<scope>` ([`SeqCst`]): orders this thread's memory accesses
/// before the fence against those after it, as seen by threads in `scope`.
///
/// ```no_run
/// use nvshmem_device::atomic::{fence, AcqRel, SeqCst, Gpu, Sys};
/// fence(AcqRel, Gpu);
/// fence(SeqCst, Sys);
/// ```
#[inline(always)]
pub fn fence<O: FenceOrdering, S: Scope>(_order: O, _scope: S) {
    // SAFETY: a fence orders memory accesses; it accesses none itself.
    unsafe {
        if O::FENCE_SC {
            fence_sc(S::KIND)
        } else {
            match S::KIND {
                ScopeKind::Cta => nvvm::ptx!("fence.acq_rel.cta;", options(nostack)),
                ScopeKind::Gpu => nvvm::ptx!("fence.acq_rel.gpu;", options(nostack)),
                ScopeKind::Sys => nvvm::ptx!("fence.acq_rel.sys;", options(nostack)),
            }
        }
    }
}

#[inline(always)]
unsafe fn fence_sc(scope: ScopeKind) {
    // SAFETY: as in fence.
    unsafe {
        match scope {
            ScopeKind::Cta => nvvm::ptx!("fence.sc.cta;", options(nostack)),
            ScopeKind::Gpu => nvvm::ptx!("fence.sc.gpu;", options(nostack)),
            ScopeKind::Sys => nvvm::ptx!("fence.sc.sys;", options(nostack)),
        }
    }
}

/// The address `ptr` as the instruction for `space` wants it.
#[inline(always)]
fn space_addr<T>(ptr: *const T, space: Space) -> u64 {
    let generic = ptr as u64;
    let out: u64;
    // SAFETY: an address conversion; no memory access.
    unsafe {
        match space {
            Space::Generic => return generic,
            Space::Global => {
                nvvm::ptx!("cvta.to.global.u64 {0}, {1};", out(reg64) out, in(reg64) generic, options(pure, nomem, nostack))
            }
            Space::Shared => {
                nvvm::ptx!("cvta.to.shared.u64 {0}, {1};", out(reg64) out, in(reg64) generic, options(pure, nomem, nostack))
            }
        }
    }
    out
}

/// The address of `ptr` for `space`, after the `fence.sc` that a
/// [`SeqCst`] operation starts with: the prologue of every ordered atomic.
///
/// # Safety
/// As the atomic's own (the fence accesses no memory).
#[inline(always)]
unsafe fn ordered_addr<T, O: Ordering, S: Scope>(ptr: *const T, space: Space) -> u64 {
    let addr = space_addr(ptr, space);
    if O::FENCE_SC {
        // SAFETY: a fence.
        unsafe { fence_sc(S::KIND) };
    }
    addr
}

/// The `.sem` a read-modify-write with ordering `O` uses.
const fn rmw_sem<O: Ordering>() -> Sem {
    O::SEM
}
/// The `.sem` a load with ordering `O` uses (`SeqCst`: acquire after `fence.sc`).
const fn load_sem<O: Ordering>() -> Sem {
    if O::FENCE_SC { Sem::Acquire } else { O::SEM }
}
/// The `.sem` a store with ordering `O` uses (`SeqCst`: release after `fence.sc`).
const fn store_sem<O: Ordering>() -> Sem {
    if O::FENCE_SC { Sem::Release } else { O::SEM }
}

/// The functions of one memory space: the module's own (generic addresses),
/// `shared` and `global`.
macro_rules! space_api {
    ($space:expr, $where:literal, $path:literal) => {
        /// Atomically loads `*ptr` (`ld.<order>.<scope>`).
        ///
        /// # Safety
        #[doc = concat!("`ptr` is valid for reads, aligned to `T`'s size, ", $where, ".")]
        /// Concurrent non-atomic writes to it are a data race.
        ///
        /// ```no_run
        #[doc = concat!("use nvshmem_device::atomic::{", $path, "load, Acquire, Gpu};")]
        /// # let flag: *mut u32 = core::ptr::null_mut();
        /// let seen = unsafe { load(flag, Acquire, Gpu) };
        /// ```
        #[inline(always)]
        pub unsafe fn load<T: AtomicValue, O: LoadOrdering, S: Scope>(ptr: *const T, _order: O, _scope: S) -> T {
            // SAFETY: the caller's promise; the ordering is valid for a load.
            unsafe { T::__load(ordered_addr::<_, O, S>(ptr, $space), load_sem::<O>(), S::KIND, $space) }
        }

        /// Atomically stores `value` into `*ptr` (`st.<order>.<scope>`).
        ///
        /// # Safety
        #[doc = concat!("`ptr` is valid for writes, aligned to `T`'s size, ", $where, ".")]
        /// Concurrent non-atomic accesses to it are a data race.
        ///
        /// ```no_run
        #[doc = concat!("use nvshmem_device::atomic::{", $path, "store, Release, Gpu};")]
        /// # let flag: *mut u32 = core::ptr::null_mut();
        /// unsafe { store(flag, 1, Release, Gpu) };
        /// ```
        #[inline(always)]
        pub unsafe fn store<T: AtomicValue, O: StoreOrdering, S: Scope>(ptr: *mut T, value: T, _order: O, _scope: S) {
            // SAFETY: as in load.
            unsafe { T::__store(ordered_addr::<_, O, S>(ptr, $space), value, store_sem::<O>(), S::KIND, $space) }
        }

        /// Atomically replaces `*ptr` with `value`; returns the old value (`atom.exch`).
        ///
        /// # Safety
        #[doc = concat!("`ptr` is valid for reads and writes, aligned to `T`'s size, ", $where, ".")]
        /// Concurrent non-atomic accesses to it are a data race.
        ///
        /// ```no_run
        #[doc = concat!("use nvshmem_device::atomic::{", $path, "swap, AcqRel, Gpu};")]
        /// # let slot: *mut u64 = core::ptr::null_mut();
        /// let old = unsafe { swap(slot, 0, AcqRel, Gpu) };
        /// ```
        #[inline(always)]
        pub unsafe fn swap<T: AtomicValue, O: RmwOrdering, S: Scope>(ptr: *mut T, value: T, _order: O, _scope: S) -> T {
            // SAFETY: as in load.
            unsafe { T::__swap(ordered_addr::<_, O, S>(ptr, $space), value, rmw_sem::<O>(), S::KIND, $space) }
        }

        /// Atomically: if `*ptr` equals `current` bit for bit, stores `new`
        /// (`atom.cas`). Returns `Ok(old)` when it stored, `Err(old)` when not.
        /// One ordering for both outcomes (PTX has no separate failure ordering).
        ///
        /// # Safety
        #[doc = concat!("`ptr` is valid for reads and writes, aligned to `T`'s size, ", $where, ".")]
        /// Concurrent non-atomic accesses to it are a data race.
        ///
        /// ```no_run
        #[doc = concat!("use nvshmem_device::atomic::{", $path, "compare_exchange, Acquire, Cta};")]
        /// # let lock: *mut u32 = core::ptr::null_mut();
        /// while unsafe { compare_exchange(lock, 0, 1, Acquire, Cta) }.is_err() {}
        /// ```
        #[inline(always)]
        pub unsafe fn compare_exchange<T: AtomicValue, O: RmwOrdering, S: Scope>(
            ptr: *mut T,
            current: T,
            new: T,
            _order: O,
            _scope: S,
        ) -> Result<T, T> {
            // SAFETY: as in load.
            let old = unsafe { T::__cas(ordered_addr::<_, O, S>(ptr, $space), current, new, rmw_sem::<O>(), S::KIND, $space) };
            if old.__same_bits(current) { Ok(old) } else { Err(old) }
        }

        space_api!(@rmw $space, $where, $path, AtomicAdd, fetch_add, add, __fetch_add, __red_add,
            "adds `value` to `*ptr`", "`atom.add`", "`red.add`", u32, 1);
        space_api!(@rmw $space, $where, $path, AtomicInteger, fetch_and, and, __fetch_and, __red_and,
            "ANDs `value` into `*ptr`", "`atom.and`", "`red.and`", u32, 0xf0);
        space_api!(@rmw $space, $where, $path, AtomicInteger, fetch_or, or, __fetch_or, __red_or,
            "ORs `value` into `*ptr`", "`atom.or`", "`red.or`", u64, 1 << 40);
        space_api!(@rmw $space, $where, $path, AtomicInteger, fetch_xor, xor, __fetch_xor, __red_xor,
            "XORs `value` into `*ptr`", "`atom.xor`", "`red.xor`", u32, 1);
        space_api!(@rmw $space, $where, $path, AtomicInteger, fetch_min, min, __fetch_min, __red_min,
            "stores the minimum of `*ptr` and `value`", "`atom.min`", "`red.min`", i32, -5);
        space_api!(@rmw $space, $where, $path, AtomicInteger, fetch_max, max, __fetch_max, __red_max,
            "stores the maximum of `*ptr` and `value`", "`atom.max`", "`red.max`", i64, 7);

        /// Atomically subtracts `value` from `*ptr` (wrapping); returns the old
        /// value (`atom.add` of the two's-complement negation).
        ///
        /// # Safety
        #[doc = concat!("`ptr` is valid for reads and writes, aligned to `T`'s size, ", $where, ".")]
        ///
        /// ```no_run
        #[doc = concat!("use nvshmem_device::atomic::{", $path, "fetch_sub, Relaxed, Gpu};")]
        /// # let n: *mut u32 = core::ptr::null_mut();
        /// let before = unsafe { fetch_sub(n, 1, Relaxed, Gpu) };
        /// ```
        #[inline(always)]
        pub unsafe fn fetch_sub<T: AtomicInteger, O: RmwOrdering, S: Scope>(ptr: *mut T, value: T, order: O, scope: S) -> T {
            // SAFETY: the caller's promise.
            unsafe { fetch_add(ptr, value.__neg(), order, scope) }
        }

        /// Atomically subtracts `value` from `*ptr` (wrapping), returning
        /// nothing (`red.add` of the negation).
        ///
        /// # Safety
        #[doc = concat!("`ptr` is valid for reads and writes, aligned to `T`'s size, ", $where, ".")]
        ///
        /// ```no_run
        #[doc = concat!("use nvshmem_device::atomic::{", $path, "sub, Relaxed, Gpu};")]
        /// # let n: *mut u32 = core::ptr::null_mut();
        /// unsafe { sub(n, 1, Relaxed, Gpu) };
        /// ```
        #[inline(always)]
        pub unsafe fn sub<T: AtomicInteger, O: ReduceOrdering, S: Scope>(ptr: *mut T, value: T, order: O, scope: S) {
            // SAFETY: the caller's promise.
            unsafe { add(ptr, value.__neg(), order, scope) }
        }

        /// Atomically `*ptr = if *ptr >= limit { 0 } else { *ptr + 1 }`;
        /// returns the old value (`atom.inc.u32`, a ring-buffer index).
        ///
        /// # Safety
        #[doc = concat!("`ptr` is valid for reads and writes, aligned to 4, ", $where, ".")]
        ///
        /// ```no_run
        #[doc = concat!("use nvshmem_device::atomic::{", $path, "fetch_inc, Relaxed, Gpu};")]
        /// # let head: *mut u32 = core::ptr::null_mut();
        /// let slot = unsafe { fetch_inc(head, 63, Relaxed, Gpu) }; // 0..=63, wrapping
        /// ```
        #[inline(always)]
        pub unsafe fn fetch_inc<O: RmwOrdering, S: Scope>(ptr: *mut u32, limit: u32, _order: O, _scope: S) -> u32 {
            // SAFETY: the caller's promise.
            unsafe { impls::fetch_inc(ordered_addr::<_, O, S>(ptr, $space), limit, rmw_sem::<O>(), S::KIND, $space) }
        }

        /// Atomically `*ptr = if *ptr == 0 || *ptr > limit { limit } else { *ptr - 1 }`;
        /// returns the old value (`atom.dec.u32`).
        ///
        /// # Safety
        #[doc = concat!("`ptr` is valid for reads and writes, aligned to 4, ", $where, ".")]
        ///
        /// ```no_run
        #[doc = concat!("use nvshmem_device::atomic::{", $path, "fetch_dec, Relaxed, Gpu};")]
        /// # let tail: *mut u32 = core::ptr::null_mut();
        /// let slot = unsafe { fetch_dec(tail, 63, Relaxed, Gpu) };
        /// ```
        #[inline(always)]
        pub unsafe fn fetch_dec<O: RmwOrdering, S: Scope>(ptr: *mut u32, limit: u32, _order: O, _scope: S) -> u32 {
            // SAFETY: the caller's promise.
            unsafe { impls::fetch_dec(ordered_addr::<_, O, S>(ptr, $space), limit, rmw_sem::<O>(), S::KIND, $space) }
        }

        /// [`fetch_inc`] without the old value (`red.inc.u32`).
        ///
        /// # Safety
        #[doc = concat!("`ptr` is valid for reads and writes, aligned to 4, ", $where, ".")]
        ///
        /// ```no_run
        #[doc = concat!("use nvshmem_device::atomic::{", $path, "inc, Relaxed, Gpu};")]
        /// # let head: *mut u32 = core::ptr::null_mut();
        /// unsafe { inc(head, 63, Relaxed, Gpu) };
        /// ```
        #[inline(always)]
        pub unsafe fn inc<O: ReduceOrdering, S: Scope>(ptr: *mut u32, limit: u32, _order: O, _scope: S) {
            // SAFETY: the caller's promise.
            unsafe { impls::red_inc(ordered_addr::<_, O, S>(ptr, $space), limit, O::SEM, S::KIND, $space) }
        }

        /// [`fetch_dec`] without the old value (`red.dec.u32`).
        ///
        /// # Safety
        #[doc = concat!("`ptr` is valid for reads and writes, aligned to 4, ", $where, ".")]
        ///
        /// ```no_run
        #[doc = concat!("use nvshmem_device::atomic::{", $path, "dec, Relaxed, Gpu};")]
        /// # let tail: *mut u32 = core::ptr::null_mut();
        /// unsafe { dec(tail, 63, Relaxed, Gpu) };
        /// ```
        #[inline(always)]
        pub unsafe fn dec<O: ReduceOrdering, S: Scope>(ptr: *mut u32, limit: u32, _order: O, _scope: S) {
            // SAFETY: the caller's promise.
            unsafe { impls::red_dec(ordered_addr::<_, O, S>(ptr, $space), limit, O::SEM, S::KIND, $space) }
        }
    };
    (@rmw $space:expr, $where:literal, $path:literal, $trait:ident, $fetch:ident, $red:ident, $fetch_impl:ident,
     $red_impl:ident, $what:literal, $atom:literal, $redi:literal, $ex_ty:ty, $ex_val:expr) => {
        #[doc = concat!("Atomically ", $what, "; returns the old value (", $atom, ").")]
        ///
        /// # Safety
        #[doc = concat!("`ptr` is valid for reads and writes, aligned to `T`'s size, ", $where, ".")]
        /// Concurrent non-atomic accesses to it are a data race.
        ///
        /// ```no_run
        #[doc = concat!("use nvshmem_device::atomic::{", $path, stringify!($fetch), ", Relaxed, Gpu};")]
        #[doc = concat!("# let p: *mut ", stringify!($ex_ty), " = core::ptr::null_mut();")]
        #[doc = concat!("let old = unsafe { ", stringify!($fetch), "(p, ", stringify!($ex_val), ", Relaxed, Gpu) };")]
        /// ```
        #[inline(always)]
        pub unsafe fn $fetch<T: $trait, O: RmwOrdering, S: Scope>(ptr: *mut T, value: T, _order: O, _scope: S) -> T {
            // SAFETY: the caller's promise; the ordering is valid for `atom`.
            unsafe { T::$fetch_impl(ordered_addr::<_, O, S>(ptr, $space), value, rmw_sem::<O>(), S::KIND, $space) }
        }

        #[doc = concat!("Atomically ", $what, ", returning nothing (", $redi, ": cheaper than `", stringify!($fetch), "`).")]
        ///
        /// # Safety
        #[doc = concat!("`ptr` is valid for reads and writes, aligned to `T`'s size, ", $where, ".")]
        /// Concurrent non-atomic accesses to it are a data race.
        ///
        /// ```no_run
        #[doc = concat!("use nvshmem_device::atomic::{", $path, stringify!($red), ", Release, Gpu};")]
        #[doc = concat!("# let p: *mut ", stringify!($ex_ty), " = core::ptr::null_mut();")]
        #[doc = concat!("unsafe { ", stringify!($red), "(p, ", stringify!($ex_val), ", Release, Gpu) };")]
        /// ```
        #[inline(always)]
        pub unsafe fn $red<T: $trait, O: ReduceOrdering, S: Scope>(ptr: *mut T, value: T, _order: O, _scope: S) {
            // SAFETY: the caller's promise; the ordering is valid for `red`.
            unsafe { T::$red_impl(ordered_addr::<_, O, S>(ptr, $space), value, O::SEM, S::KIND, $space) }
        }
    };
}

space_api!(Space::Generic, "in global or shared memory", "");

/// The atomics with `.shared` addresses, for pointers into this block's
/// shared memory (a [`static_shared!`](crate::static_shared) array or a
/// [`DynamicShared`](crate::shared::DynamicShared) slice). A pointer
/// elsewhere is undefined behaviour.
pub mod shared {
    use super::*;
    space_api!(Space::Shared, "in this block's shared memory", "shared::");
}

/// The atomics with `.global` addresses, for pointers into global memory
/// (device allocations, symmetric buffers). A pointer elsewhere is undefined
/// behaviour.
pub mod global {
    use super::*;
    space_api!(Space::Global, "in global memory", "global::");
}
