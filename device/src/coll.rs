//! Teams and in-kernel collectives: team queries, team barriers and syncs,
//! `broadcast`, `fcollect` (all-gather), `alltoall`, `reduce` and
//! `reducescatter`, each in thread, warp and block scope.
//!
//! OpenSHMEM's variable-size `collect` is not here: NVSHMEM (3.4.5 and 3.8.0)
//! does not implement it. [`fcollect`] is the all-gather.
//!
//! Every PE of the team calls a collective, with the same arguments (except
//! the data), in the same order. **A kernel that calls one must be launched
//! collectively** (every block co-resident): the builder marks such kernels
//! `collective` in the manifest and the host refuses a plain launch of them
//! (`Kernel::launch_collective` does the checked cooperative launch).
//!
//! ```no_run
//! use nvshmem_device::{Sum, SymPtr, Team, reduce_block};
//! // An all-reduce of `n` floats over every PE, by the whole block.
//! unsafe fn allreduce(dest: SymPtr<f32>, src: SymPtr<f32>, n: usize) {
//!     unsafe { reduce_block(Sum, Team::WORLD, dest, src, n) };
//! }
//! ```

use crate::__private::{Scope, Sealed};
use crate::{Pe, SymPtr, ffi};
use core::ffi::{c_int, c_void};
use half::{bf16, f16};

pub use nvshmem_types::{And, Max, Min, Or, Prod, ReduceOp, ReduceOpKind, Sum, Team, Xor};

/// This PE's number in `team` (`nvshmem_team_my_pe`), or `None` when it is
/// not a member.
///
/// ```no_run
/// use nvshmem_device::{Team, team_my_pe};
/// let rank_on_node = team_my_pe(Team::NODE);
/// ```
#[inline(always)]
pub fn team_my_pe(team: Team) -> Option<Pe> {
    // SAFETY: a team handle by value; NVSHMEM returns -1 for non-members.
    let pe = unsafe { ffi::nvshmem_team_my_pe(team.raw()) };
    (pe >= 0).then(|| Pe::new(pe as u32))
}

/// The number of PEs in `team` (`nvshmem_team_n_pes`).
///
/// ```no_run
/// use nvshmem_device::{Team, team_n_pes};
/// let on_node = team_n_pes(Team::NODE);
/// ```
#[inline(always)]
pub fn team_n_pes(team: Team) -> u32 {
    // SAFETY: a team handle by value; NVSHMEM returns -1 for an invalid team.
    let n = unsafe { ffi::nvshmem_team_n_pes(team.raw()) };
    if n < 0 { 0 } else { n as u32 }
}

/// The number in `dest` of PE `pe` of team `src` (`nvshmem_team_translate_pe`),
/// or `None` when it is not in `dest`, or not in `src` (`pe >= team_n_pes(src)`).
///
/// ```no_run
/// use nvshmem_device::{Pe, Team, team_translate_pe};
/// // The world number of PE 0 of the node team.
/// let world = team_translate_pe(Team::NODE, Pe::new(0), Team::WORLD);
/// ```
#[inline(always)]
pub fn team_translate_pe(src: Team, pe: Pe, dest: Team) -> Option<Pe> {
    // NVSHMEM refuses `src_pe > size` only (one past the end gets through,
    // and a number above `i32::MAX` turns negative) before it indexes the
    // team's PE table: check the range here.
    if pe.index() >= team_n_pes(src) {
        return None;
    }
    // SAFETY: live teams (the `Team` invariant) and a PE of `src`; NVSHMEM
    // returns -1 when it is not in `dest`.
    let out = unsafe { ffi::nvshmem_team_translate_pe(src.raw(), pe.to_c(), dest.raw()) };
    (out >= 0).then(|| Pe::new(out as u32))
}

macro_rules! team_fns {
    ($(
        $(#[$doc:meta])*
        $([$unsafe:ident])? fn $name:ident => $ffi:ident;
    )*) => {$(
        $(#[$doc])*
        ///
        /// ```no_run
        #[doc = call_doc!($($unsafe)? concat!("nvshmem_device::", stringify!($name), "(nvshmem_device::Team::WORLD)"))]
        /// ```
        #[inline(always)]
        pub $($unsafe)? fn $name(team: Team) {
            // SAFETY: a live team (the `Team` invariant), by value; a
            // collective over it. Warp and block scope: the caller's group
            // calls it together (their `# Safety`).
            unsafe { ffi::$ffi(team.raw()) };
        }
    )*};
}

team_fns! {
    /// Barrier over `team` (`nvshmem_barrier`): completes this thread's
    /// operations (as [`quiet`](crate::quiet)), then waits for every PE of the
    /// team. One thread per PE calls it; the kernel must be launched
    /// collectively. A call outside that discipline (two threads of a PE, a
    /// PE that never calls, a plain launch) hangs or lets the barrier return
    /// early; it reads and writes nothing outside NVSHMEM's own team state.
    fn barrier => nvshmem_barrier;
    /// [`barrier`] called by every thread of one warp per PE (`nvshmemx_barrier_warp`).
    ///
    /// # Safety
    #[doc = warp_safety!()]
    [unsafe] fn barrier_warp => nvshmemx_barrier_warp;
    /// [`barrier`] called by every thread of one block per PE (`nvshmemx_barrier_block`).
    ///
    /// # Safety
    #[doc = block_safety!()]
    [unsafe] fn barrier_block => nvshmemx_barrier_block;
    /// [`barrier`] called by every thread of one warpgroup (4 warps, 128
    /// threads) per PE (`nvshmemx_barrier_warpgroup`).
    ///
    /// # Safety
    /// Every thread of the warpgroup calls it together, converged and with
    /// the same `team`: NVSHMEM synchronizes the warpgroup with `.aligned`
    /// barriers, which are undefined behaviour in divergent code.
    [unsafe] fn barrier_warpgroup => nvshmemx_barrier_warpgroup;
    /// Synchronizes `team` without completing outstanding operations
    /// (`nvshmem_team_sync`, OpenSHMEM's `shmem_sync`); otherwise as [`barrier`].
    fn sync => nvshmem_team_sync;
    /// [`sync`](fn@sync) called by every thread of one warp per PE (`nvshmemx_team_sync_warp`).
    ///
    /// # Safety
    #[doc = warp_safety!()]
    [unsafe] fn sync_warp => nvshmemx_team_sync_warp;
    /// [`sync`](fn@sync) called by every thread of one block per PE (`nvshmemx_team_sync_block`).
    ///
    /// # Safety
    #[doc = block_safety!()]
    [unsafe] fn sync_block => nvshmemx_team_sync_block;
}

/// An element type of the typed `broadcast`, `fcollect` and `alltoall`
/// (`NVSHMEMI_REPT_FOR_STANDARD_RMA_TYPES`): the same types as
/// [`RmaElement`](crate::RmaElement). Other plain data goes through the `_pod` forms.
///
/// ```
/// use nvshmem_device::CollectElement;
/// assert_eq!(<f32 as CollectElement>::COLLECT_NAME, "float");
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an element type of NVSHMEM's typed collectives",
    note = "structs and other plain data go through the `_pod` forms (`broadcast_pod`, `fcollect_pod`, ...); the typed forms take the integers, `f32`, `f64`, `f16` and `bf16`"
)]
pub trait CollectElement: Copy + Sealed {
    /// The NVSHMEM type name used (`float` in `nvshmem_float_broadcast`).
    const COLLECT_NAME: &'static str;
    #[doc(hidden)]
    unsafe fn __broadcast(s: Scope, t: i32, d: *mut Self, src: *const Self, n: usize, root: c_int);
    #[doc(hidden)]
    unsafe fn __fcollect(s: Scope, t: i32, d: *mut Self, src: *const Self, n: usize);
    #[doc(hidden)]
    unsafe fn __alltoall(s: Scope, t: i32, d: *mut Self, src: *const Self, n: usize);
}

macro_rules! impl_collect {
    ($($t:ty => $n:ident),* $(,)?) => {$(
        impl CollectElement for $t {
            const COLLECT_NAME: &'static str = stringify!($n);
            #[inline(always)]
            unsafe fn __broadcast(s: Scope, t: i32, d: *mut Self, src: *const Self, n: usize, root: c_int) {
                unsafe { scoped_ffi!(s, [$n _broadcast], t, d, src, n, root) };
            }
            #[inline(always)]
            unsafe fn __fcollect(s: Scope, t: i32, d: *mut Self, src: *const Self, n: usize) {
                unsafe { scoped_ffi!(s, [$n _fcollect], t, d, src, n) };
            }
            #[inline(always)]
            unsafe fn __alltoall(s: Scope, t: i32, d: *mut Self, src: *const Self, n: usize) {
                unsafe { scoped_ffi!(s, [$n _alltoall], t, d, src, n) };
            }
        }
    )*};
}

// The same types as the typed RMA functions.
crate::rma::rma_types!(impl_collect!);

/// An element type of [`reduce`] and [`reducescatter`]: every type that
/// some [`ReduceOp`] covers (`isize` has none: NVSHMEM's lists have no
/// `ptrdiff`). Which operators a type takes is [`ReduceOp`]'s table.
///
/// ```
/// fn reducible<T: nvshmem_device::ReduceElement>() {}
/// reducible::<nvshmem_device::half::bf16>();
/// ```
#[diagnostic::on_unimplemented(
    message = "NVSHMEM has no reduction over `{Self}`",
    note = "NVSHMEM reduces the integer types (not `isize`), `f32`, `f64`, `f16` and `bf16`; see `ReduceOp` for which operator takes which type"
)]
pub trait ReduceElement: Copy + Sealed {
    #[doc(hidden)]
    unsafe fn __reduce(k: ReduceOpKind, s: Scope, t: i32, d: *mut Self, src: *const Self, n: usize);
    #[doc(hidden)]
    unsafe fn __reducescatter(
        k: ReduceOpKind,
        s: Scope,
        t: i32,
        d: *mut Self,
        src: *const Self,
        n: usize,
    );
}

// One type's dispatch from the operator kind to NVSHMEM's function. The
// kind is a constant of the operator type, so only one arm survives
// inlining; kinds outside the type's list have no `ReduceOp` impl.
macro_rules! impl_reduce_element {
    ($ops:tt $($t:ty => $n:ident),* $(,)?) => {$( impl_reduce_element!(@one $ops $t => $n); )*};
    (@one [$($Op:ident => $o:ident),*] $t:ty => $n:ident) => { pastey::paste! {
        impl ReduceElement for $t {
            #[inline(always)]
            unsafe fn __reduce(k: ReduceOpKind, s: Scope, t: i32, d: *mut $t, src: *const $t, n: usize) {
                #[allow(unreachable_patterns)]
                match k {
                    // SAFETY: the caller's contract.
                    $( ReduceOpKind::$Op => { unsafe { scoped_ffi!(s, [$n _ $o _reduce], t, d, src, n) }; } )*
                    _ => unreachable!("no ReduceOp<{}> for {:?}", stringify!($t), k),
                }
            }
            #[inline(always)]
            unsafe fn __reducescatter(k: ReduceOpKind, s: Scope, t: i32, d: *mut $t, src: *const $t, n: usize) {
                #[allow(unreachable_patterns)]
                match k {
                    // SAFETY: the caller's contract.
                    $( ReduceOpKind::$Op => { unsafe { scoped_ffi!(s, [$n _ $o _reducescatter], t, d, src, n) }; } )*
                    _ => unreachable!("no ReduceOp<{}> for {:?}", stringify!($t), k),
                }
            }
        }
    } };
}

// NVSHMEMI_REPT_FOR_BITWISE_REDUCE_TYPES take every operator; the floats
// of NVSHMEMI_REPT_FOR_STANDARD_REDUCE_TYPES the arithmetic ones.
impl_reduce_element!(
    [And => and, Or => or, Xor => xor, Min => min, Max => max, Sum => sum, Prod => prod]
    i8 => int8, i16 => int16, i32 => int32, i64 => int64,
    u8 => uint8, u16 => uint16, u32 => uint32, u64 => uint64, usize => size,
);
impl_reduce_element!(
    [Min => min, Max => max, Sum => sum, Prod => prod]
    f32 => float, f64 => double, f16 => half, bf16 => bfloat16,
);

scoped! {
    /// Copies `nelems` elements of `source` on the team's PE `root` into
    /// `dest` on every PE of `team` (`nvshmem_TYPE_broadcast`), the root included.
    collective: collective;
    safety: "`dest` and `source` must be live symmetric allocations of at least `nelems` elements; \
        `root` is a PE number within `team`; every PE of `team` calls it with the same `team`, `nelems` \
        and `root`, and nothing else touches `dest` meanwhile.";
    example: ("dest: SymPtr<f32>, src: SymPtr<f32>", "(Team::WORLD, dest, src, 7, Pe::new(0))");
    pub unsafe fn [broadcast, broadcast_warp, broadcast_block]<T: CollectElement>(
        team: Team, dest: SymPtr<T>, source: SymPtr<T>, nelems: usize, root: Pe,
    ) |scope| {
        // SAFETY: the caller's contract.
        unsafe { T::__broadcast(scope, team.raw(), dest.as_ptr(), source.as_ptr(), nelems, root.to_c()) }
    }
}

scoped! {
    /// All-gather (`nvshmem_TYPE_fcollect`): the `nelems` elements of `source`
    /// of the team's PE `i` land at `dest[i * nelems..]` on every PE of `team`.
    collective: collective;
    safety: "`source` must be a live symmetric allocation of at least `nelems` elements and `dest` one \
        of at least `team_n_pes(team) * nelems`, distinct; every PE of `team` calls it with the same \
        `team` and `nelems`.";
    example: ("dest: SymPtr<u64>, src: SymPtr<u64>", "(Team::WORLD, dest, src, 5)");
    pub unsafe fn [fcollect, fcollect_warp, fcollect_block]<T: CollectElement>(
        team: Team, dest: SymPtr<T>, source: SymPtr<T>, nelems: usize,
    ) |scope| {
        // SAFETY: the caller's contract.
        unsafe { T::__fcollect(scope, team.raw(), dest.as_ptr(), source.as_ptr(), nelems) }
    }
}

scoped! {
    /// All-to-all (`nvshmem_TYPE_alltoall`): block `j` (`nelems` elements at
    /// `source[j * nelems..]`) of the team's PE `i` lands in block `i` of
    /// `dest` on the team's PE `j`.
    collective: collective;
    safety: "`dest` and `source` must be live, distinct symmetric allocations of at least \
        `team_n_pes(team) * nelems` elements; every PE of `team` calls it with the same `team` and `nelems`.";
    example: ("dest: SymPtr<i32>, src: SymPtr<i32>", "(Team::WORLD, dest, src, 3)");
    pub unsafe fn [alltoall, alltoall_warp, alltoall_block]<T: CollectElement>(
        team: Team, dest: SymPtr<T>, source: SymPtr<T>, nelems: usize,
    ) |scope| {
        // SAFETY: the caller's contract.
        unsafe { T::__alltoall(scope, team.raw(), dest.as_ptr(), source.as_ptr(), nelems) }
    }
}

const fn bytes<T>(n: usize) -> usize {
    n * core::mem::size_of::<T>()
}

scoped! {
    /// [`broadcast`] of any plain data, byte-wise (`nvshmem_broadcastmem`).
    collective: collective;
    safety: "As for [`broadcast`], for `nelems * size_of::<T>()` bytes.";
    example: ("dest: SymPtr<[f32; 3]>, src: SymPtr<[f32; 3]>", "(Team::WORLD, dest, src, 9, Pe::new(1))");
    pub unsafe fn [broadcast_pod, broadcast_pod_warp, broadcast_pod_block]<T: bytemuck::Pod>(
        team: Team, dest: SymPtr<T>, source: SymPtr<T>, nelems: usize, root: Pe,
    ) |scope| {
        let (d, s) = (dest.as_ptr() as *mut c_void, source.as_ptr() as *const c_void);
        // SAFETY: the caller's contract.
        unsafe { scoped_ffi!(scope, [broadcastmem], team.raw(), d, s, bytes::<T>(nelems), root.to_c()) };
    }
}

scoped! {
    /// [`fcollect`] of any plain data, byte-wise (`nvshmem_fcollectmem`).
    collective: collective;
    safety: "As for [`fcollect`], for `nelems * size_of::<T>()` bytes per PE.";
    example: ("dest: SymPtr<[u8; 6]>, src: SymPtr<[u8; 6]>", "(Team::WORLD, dest, src, 2)");
    pub unsafe fn [fcollect_pod, fcollect_pod_warp, fcollect_pod_block]<T: bytemuck::Pod>(
        team: Team, dest: SymPtr<T>, source: SymPtr<T>, nelems: usize,
    ) |scope| {
        let (d, s) = (dest.as_ptr() as *mut c_void, source.as_ptr() as *const c_void);
        // SAFETY: the caller's contract.
        unsafe { scoped_ffi!(scope, [fcollectmem], team.raw(), d, s, bytes::<T>(nelems)) };
    }
}

scoped! {
    /// [`alltoall`] of any plain data, byte-wise (`nvshmem_alltoallmem`).
    collective: collective;
    safety: "As for [`alltoall`], for blocks of `nelems * size_of::<T>()` bytes.";
    example: ("dest: SymPtr<[u16; 3]>, src: SymPtr<[u16; 3]>", "(Team::WORLD, dest, src, 4)");
    pub unsafe fn [alltoall_pod, alltoall_pod_warp, alltoall_pod_block]<T: bytemuck::Pod>(
        team: Team, dest: SymPtr<T>, source: SymPtr<T>, nelems: usize,
    ) |scope| {
        let (d, s) = (dest.as_ptr() as *mut c_void, source.as_ptr() as *const c_void);
        // SAFETY: the caller's contract.
        unsafe { scoped_ffi!(scope, [alltoallmem], team.raw(), d, s, bytes::<T>(nelems)) };
    }
}

scoped! {
    /// All-reduce (`nvshmem_TYPE_OP_reduce`): `dest[k]` on every PE of `team`
    /// becomes `op` over the team's `source[k]`, for `k < nreduce`. `op` is
    /// [`And`], [`Or`], [`Xor`], [`Min`], [`Max`], [`Sum`] or [`Prod`]; see
    /// [`ReduceOp`] for the types each takes. `dest` may equal `source`.
    collective: collective;
    safety: "`dest` and `source` must be live symmetric allocations of at least `nreduce` elements \
        (equal or not overlapping); every PE of `team` calls it with the same `team`, `op` and `nreduce`.";
    example: ("dest: SymPtr<f32>, src: SymPtr<f32>", "(Sum, Team::WORLD, dest, src, 1001)");
    pub unsafe fn [reduce, reduce_warp, reduce_block]<T: ReduceElement, O: ReduceOp<T>>(
        op: O, team: Team, dest: SymPtr<T>, source: SymPtr<T>, nreduce: usize,
    ) |scope| {
        let _ = op;
        // SAFETY: the caller's contract.
        unsafe { T::__reduce(O::KIND, scope, team.raw(), dest.as_ptr(), source.as_ptr(), nreduce) }
    }
}

scoped! {
    /// Reduce-scatter (`nvshmem_TYPE_OP_reducescatter`): `source` holds
    /// `team_n_pes(team)` blocks of `nreduce` elements; `dest` on the team's PE
    /// `i` becomes `op` over every PE's block `i`.
    collective: collective;
    safety: "`source` must be a live symmetric allocation of at least `team_n_pes(team) * nreduce` \
        elements and `dest` a distinct one of at least `nreduce`; every PE of `team` calls it with the \
        same `team`, `op` and `nreduce`.";
    example: ("dest: SymPtr<i64>, src: SymPtr<i64>", "(Max, Team::WORLD, dest, src, 7)");
    pub unsafe fn [reducescatter, reducescatter_warp, reducescatter_block]<T: ReduceElement, O: ReduceOp<T>>(
        op: O, team: Team, dest: SymPtr<T>, source: SymPtr<T>, nreduce: usize,
    ) |scope| {
        let _ = op;
        // SAFETY: the caller's contract.
        unsafe { T::__reducescatter(O::KIND, scope, team.raw(), dest.as_ptr(), source.as_ptr(), nreduce) }
    }
}

/// Max-loc all-reduce over `team` of `(value, index)` pairs of `f64`, by
/// the whole block (`nvshmemx_double2_maxloc_reduce_block`, CUDA's
/// `double2`): `dest[k]` on every PE becomes the pair with the largest
/// value among the team's `source[k]`. NVSHMEM has it in block scope only.
///
/// Collective over `team`: every PE of the team calls it, and the kernel
/// must be launched collectively.
///
/// # Safety
/// `dest` and `source` must be live symmetric allocations of at least
/// `nreduce` pairs (equal or not overlapping); every PE of `team` calls it
/// with the same `team` and `nreduce`.
///
#[doc = block_safety!()]
///
/// # Example
/// ```no_run
/// use nvshmem_device::{SymPtr, Team, maxloc_reduce_block};
/// unsafe fn kernel(dest: SymPtr<[f64; 2]>, src: SymPtr<[f64; 2]>) {
///     unsafe { maxloc_reduce_block(Team::WORLD, dest, src, 16) };
/// }
/// ```
#[inline(always)]
pub unsafe fn maxloc_reduce_block(
    team: Team,
    dest: SymPtr<[f64; 2]>,
    source: SymPtr<[f64; 2]>,
    nreduce: usize,
) {
    // SAFETY: the caller's contract.
    unsafe {
        ffi::nvshmemx_double2_maxloc_reduce_block(
            team.raw(),
            dest.as_ptr(),
            source.as_ptr(),
            nreduce,
        )
    };
}
