//! Warp-level primitives: shuffles, votes, matches, lane masks, reductions
//! and scans, as CUDA's `__shfl_*_sync`, `__all_sync`, `__ballot_sync`,
//! `__match_any_sync`, `__activemask` and cooperative groups' `reduce`/scan.
//!
//! ```no_run
//! use nvshmem_device::warp;
//! // Every lane gets the warp's sum; lane 0 of each warp writes it.
//! unsafe fn warp_sums(x: *const f32, out: *mut f32) {
//!     let i = nvshmem_device::thread::global_index_x();
//!     let total = warp::reduce_sum(unsafe { *x.add(i) });
//!     if warp::lane_id() == 0 {
//!         unsafe { *out.add(i / 32) = total };
//!     }
//! }
//! ```
//!
//! # Convergence
//! The `_sync` functions take a `mask` of the lanes that take part, as in
//! CUDA: every lane named in `mask` must call the same function with the same
//! `mask` before any of them can go on. The functions without a mask (`shfl`,
//! `all`, `reduce_sum`, ...) are the same with the full mask `0xffff_ffff`:
//! **all 32 lanes** of the warp must reach them together (lanes that exited
//! are not waited for). Breaking this hangs the warp or gives unspecified
//! values; it does not touch memory, so these functions are safe.
//!
//! PTX leaves a call from a lane outside its own `mask` undefined, so the
//! `_sync` functions always add the calling lane to `mask` (one `or` with
//! [`lanemask_eq`]; nothing for a constant full mask).
//!
//! The collectives are LLVM's NVVM intrinsics (`llvm.nvvm.shfl.sync.*`,
//! `vote.*.sync`, `match.any.sync.*`), which LLVM marks `convergent`: the
//! optimizer never moves them into or out of a branch, which inline PTX
//! (`asm!`, not convergent) would not guarantee.
//!
//! # Values of any type
//! Shuffles, broadcasts and matches take any [`bytemuck::Pod`] value: a value
//! of 4 bytes is one shuffle, 8 bytes two, and larger or odd-sized values go
//! 32-bit word by word (the last word padded). Reductions and scans take any
//! `Copy` type with an operator closure, and `Pod` for the shuffles.

use crate::nvvm;
use bytemuck::Pod;
use core::mem::size_of;

/// Every lane of a warp: the mask of a full-warp collective.
pub const FULL_MASK: u32 = 0xffff_ffff;

/// Lanes per warp.
pub const WARP_SIZE: u32 = 32;

/// Applies `f` to each 32-bit word of `value` (the last one zero-padded) and
/// reassembles the results. Constant-folds to straight-line code per type.
#[inline(always)]
fn map_words<T: Pod>(value: T, mut f: impl FnMut(u32) -> u32) -> T {
    let mut out = T::zeroed();
    let src = bytemuck::bytes_of(&value);
    let dst = bytemuck::bytes_of_mut(&mut out);
    let n = size_of::<T>();
    let mut i = 0;
    while i < n {
        let len = if n - i < 4 { n - i } else { 4 };
        let mut w = [0u8; 4];
        w[..len].copy_from_slice(&src[i..i + len]);
        let r = f(u32::from_ne_bytes(w)).to_ne_bytes();
        dst[i..i + len].copy_from_slice(&r[..len]);
        i += 4;
    }
    out
}

/// `mask` with the calling lane added: PTX leaves a `*.sync` from a lane
/// outside its member mask undefined. Free for the full mask.
#[inline(always)]
fn with_self(mask: u32) -> u32 {
    if mask == FULL_MASK {
        mask
    } else {
        mask | lanemask_eq()
    }
}

/// `c` operand of `shfl.sync`: segment mask from `width`, and the clamp lane.
#[inline(always)]
fn segment(width: u32) -> u32 {
    // Out-of-range widths are clamped, not undefined: 32 - 32 = full warp.
    let width = if width == 0 || width > WARP_SIZE {
        WARP_SIZE
    } else {
        width
    };
    (WARP_SIZE - width) << 8
}

/// The `__shfl_*_sync` functions and their whole-warp forms: `$intrinsic`
/// word by word, with `width`'s segment mask and the clamp lane `$clamp`.
macro_rules! shuffles {
    ($(
        $(#[$doc:meta])* $sync:ident($arg:ident) = $intrinsic:ident, clamp $clamp:literal;
        $(#[$wdoc:meta])* $whole:ident;
    )*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $sync<T: Pod>(mask: u32, value: T, $arg: u32, width: u32) -> T {
            let (mask, c) = (with_self(mask), segment(width) | $clamp);
            // SAFETY: a register exchange between lanes, this lane in `mask`.
            map_words(value, |w| unsafe { nvvm::$intrinsic(mask, w, $arg, c) })
        }

        $(#[$wdoc])*
        #[inline(always)]
        pub fn $whole<T: Pod>(value: T, $arg: u32) -> T {
            $sync(FULL_MASK, value, $arg, WARP_SIZE)
        }
    )*};
}

shuffles! {
    /// `__shfl_sync(mask, value, src_lane, width)`: `value` from lane `src_lane`
    /// of this lane's `width`-lane segment (`src_lane` taken modulo `width`).
    ///
    /// `width` is a power of two from 1 to 32; another value gives unspecified
    /// (but not undefined) results. See [Convergence](self#convergence) for `mask`.
    ///
    /// ```no_run
    /// use nvshmem_device::warp;
    /// // Broadcast lane 0's pair to every lane.
    /// let got: [u32; 2] = warp::shfl_sync(warp::FULL_MASK, [7u32, 8], 0, 32);
    /// ```
    shfl_sync(src_lane) = shfl_sync_idx, clamp 0x1f;
    /// [`shfl_sync`] over the whole warp (`mask` all lanes, `width` 32).
    ///
    /// ```no_run
    /// let from_lane_3 = nvshmem_device::warp::shfl(1.5f32, 3);
    /// ```
    shfl;
    /// `__shfl_up_sync(mask, value, delta, width)`: `value` from lane
    /// `lane - delta` of this lane's segment; lanes below `delta` keep their own.
    ///
    /// ```no_run
    /// let prev = nvshmem_device::warp::shfl_up_sync(!0, 5u64, 1, 32);
    /// ```
    shfl_up_sync(delta) = shfl_sync_up, clamp 0;
    /// [`shfl_up_sync`] over the whole warp.
    ///
    /// ```no_run
    /// let prev = nvshmem_device::warp::shfl_up(1u32, 1);
    /// ```
    shfl_up;
    /// `__shfl_down_sync(mask, value, delta, width)`: `value` from lane
    /// `lane + delta` of this lane's segment; lanes past its end keep their own.
    ///
    /// ```no_run
    /// let next = nvshmem_device::warp::shfl_down_sync(!0, 5i32, 1, 32);
    /// ```
    shfl_down_sync(delta) = shfl_sync_down, clamp 0x1f;
    /// [`shfl_down_sync`] over the whole warp.
    ///
    /// ```no_run
    /// let next = nvshmem_device::warp::shfl_down(1u32, 1);
    /// ```
    shfl_down;
    /// `__shfl_xor_sync(mask, value, lane_mask, width)`: `value` from lane
    /// `lane ^ lane_mask` (the butterfly exchange of reductions).
    ///
    /// ```no_run
    /// let partner = nvshmem_device::warp::shfl_xor_sync(!0, 2.5f64, 16, 32);
    /// ```
    shfl_xor_sync(lane_mask) = shfl_sync_bfly, clamp 0x1f;
    /// [`shfl_xor_sync`] over the whole warp.
    ///
    /// ```no_run
    /// let partner = nvshmem_device::warp::shfl_xor(1u32, 1);
    /// ```
    shfl_xor;
}

/// The `__*_sync` votes (`$intrinsic`) and their whole-warp forms.
macro_rules! votes {
    ($($(#[$doc:meta])* $sync:ident -> $ret:ty = $intrinsic:ident $(, $(#[$wdoc:meta])* $whole:ident)?;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $sync(mask: u32, predicate: bool) -> $ret {
            // SAFETY: a vote, this lane in the mask.
            unsafe { nvvm::$intrinsic(with_self(mask), predicate) }
        }
        $(
            $(#[$wdoc])*
            #[inline(always)]
            pub fn $whole(predicate: bool) -> $ret {
                $sync(FULL_MASK, predicate)
            }
        )?
    )*};
}

votes! {
    /// `__all_sync(mask, predicate)`: whether `predicate` holds on every lane of `mask`.
    ///
    /// ```no_run
    /// let done = nvshmem_device::warp::all_sync(!0, true);
    /// ```
    all_sync -> bool = vote_all_sync,
        /// [`all_sync`] over the whole warp.
        ///
        /// ```no_run
        /// let all = nvshmem_device::warp::all(true);
        /// ```
        all;
    /// `__any_sync(mask, predicate)`: whether `predicate` holds on some lane of `mask`.
    ///
    /// ```no_run
    /// let someone = nvshmem_device::warp::any_sync(!0, false);
    /// ```
    any_sync -> bool = vote_any_sync,
        /// [`any_sync`] over the whole warp.
        ///
        /// ```no_run
        /// let any = nvshmem_device::warp::any(false);
        /// ```
        any;
    /// `__uni_sync(mask, predicate)`: whether `predicate` is the same on every lane of `mask`.
    ///
    /// ```no_run
    /// let uniform = nvshmem_device::warp::uni_sync(!0, true);
    /// ```
    uni_sync -> bool = vote_uni_sync;
    /// `__ballot_sync(mask, predicate)`: bit `i` set when lane `i` of `mask` has `predicate`.
    ///
    /// ```no_run
    /// let voters = nvshmem_device::warp::ballot_sync(!0, true).count_ones();
    /// ```
    ballot_sync -> u32 = vote_ballot_sync,
        /// [`ballot_sync`] over the whole warp.
        ///
        /// ```no_run
        /// let bits = nvshmem_device::warp::ballot(true);
        /// ```
        ballot;
}

/// `__match_any_sync(mask, value)` (sm_70+): the lanes of `mask` whose
/// `value` equals this lane's, compared bit for bit (`-0.0 != 0.0`; a NaN
/// equals the same NaN).
///
/// A value of 4 or 8 bytes is one `match.any.sync`; other sizes match word
/// by word and intersect the masks.
///
/// ```no_run
/// let same_key = nvshmem_device::warp::match_any_sync(!0, 42u64);
/// ```
#[inline(always)]
pub fn match_any_sync<T: Pod>(mask: u32, value: T) -> u32 {
    let mask = with_self(mask);
    if size_of::<T>() == 8 {
        let v: u64 = bytemuck::pod_read_unaligned(bytemuck::bytes_of(&value));
        // SAFETY: a warp match, this lane in `mask`.
        return unsafe { nvvm::match_any_sync_i64(mask, v) };
    }
    let mut same = mask;
    map_words(value, |w| {
        // SAFETY: as above.
        same &= unsafe { nvvm::match_any_sync_i32(mask, w) };
        w
    });
    same
}

/// `__match_all_sync(mask, value)` (sm_70+): whether every lane of `mask`
/// holds the same `value` (bit for bit). CUDA also returns `mask` or 0; that
/// is `if match_all_sync(m, v) { m } else { 0 }`.
///
/// Built on `match.any.sync` (all lanes agree exactly when the lanes equal
/// to this one are all of `mask`), which LLVM exposes as a convergent
/// intrinsic, where `match.all.sync` returns a predicate pair Rust cannot
/// declare.
///
/// ```no_run
/// let uniform = nvshmem_device::warp::match_all_sync(!0, 3u32);
/// ```
#[inline(always)]
pub fn match_all_sync<T: Pod>(mask: u32, value: T) -> bool {
    match_any_sync(mask, value) == with_self(mask)
}

/// `__activemask()`: the lanes of this warp executing this instruction now.
/// (Which lanes that is depends on the compiler's scheduling of divergent
/// code; use it to build a mask, not to synchronize.)
///
/// ```no_run
/// let leader = nvshmem_device::warp::activemask().trailing_zeros();
/// ```
#[inline(always)]
pub fn activemask() -> u32 {
    // SAFETY: reads which lanes are active; no memory access.
    unsafe { nvvm::activemask() }
}

/// `__syncwarp(mask)`: waits for every lane of `mask`, and orders their
/// memory accesses before it against those after it.
///
/// ```no_run
/// nvshmem_device::warp::sync(0x0000_ffff); // lanes 0..16 (all must call it)
/// ```
#[inline(always)]
pub fn sync(mask: u32) {
    // SAFETY: a warp barrier, this lane in the mask.
    unsafe { nvvm::bar_warp_sync(with_self(mask)) }
}

/// This thread's lane in its warp (0..32), from `%laneid`.
///
/// ```no_run
/// let lane = nvshmem_device::warp::lane_id();
/// ```
#[inline(always)]
pub fn lane_id() -> u32 {
    // SAFETY: reads a special register.
    unsafe { nvvm::laneid() }
}

macro_rules! lane_masks {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name() -> u32 {
            // SAFETY: reads a special register.
            unsafe { nvvm::$name() }
        }
    )*};
}

lane_masks! {
    /// `%lanemask_eq`: only this lane's bit.
    ///
    /// ```no_run
    /// assert_eq!(nvshmem_device::warp::lanemask_eq(), 1 << nvshmem_device::warp::lane_id());
    /// ```
    lanemask_eq;
    /// `%lanemask_lt`: the lanes below this one (`ballot(p) & lanemask_lt()`
    /// counts the lanes before this one with `p`: a warp-wide compaction index).
    ///
    /// ```no_run
    /// use nvshmem_device::warp;
    /// let slot = (warp::ballot(true) & warp::lanemask_lt()).count_ones();
    /// ```
    lanemask_lt;
    /// `%lanemask_le`: this lane and the ones below it.
    ///
    /// ```no_run
    /// let m = nvshmem_device::warp::lanemask_le();
    /// ```
    lanemask_le;
    /// `%lanemask_gt`: the lanes above this one.
    ///
    /// ```no_run
    /// let m = nvshmem_device::warp::lanemask_gt();
    /// ```
    lanemask_gt;
    /// `%lanemask_ge`: this lane and the ones above it.
    ///
    /// ```no_run
    /// let m = nvshmem_device::warp::lanemask_ge();
    /// ```
    lanemask_ge;
}

/// Reduces `value` over the whole warp with `op` (associative and
/// commutative), by butterfly shuffles: every lane gets the result. All 32
/// lanes must call it. Floating-point sums are in tree order, not lane order.
///
/// ```no_run
/// use nvshmem_device::warp;
/// let widest = warp::reduce(3.0f32, |a, b| if a > b { a } else { b });
/// ```
#[inline(always)]
pub fn reduce<T: Pod>(value: T, op: impl Fn(T, T) -> T) -> T {
    let mut x = value;
    let mut offset = WARP_SIZE / 2;
    while offset > 0 {
        x = op(x, shfl_xor(x, offset));
        offset /= 2;
    }
    x
}

/// [`reduce`] with one operator each: `name[bound] = op`.
macro_rules! reductions {
    ($($(#[$doc:meta])* $name:ident[$($bound:tt)*] = $op:expr;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name<T: Pod + $($bound)*>(value: T) -> T {
            reduce(value, $op)
        }
    )*};
}

reductions! {
    /// The warp's sum, on every lane. See [`reduce`].
    ///
    /// ```no_run
    /// let total = nvshmem_device::warp::reduce_sum(1u32); // 32
    /// ```
    reduce_sum[core::ops::Add<Output = T>] = |a, b| a + b;
    /// The warp's minimum (by `PartialOrd`: a NaN is kept only when every
    /// compare with it loses), on every lane. See [`reduce`].
    ///
    /// ```no_run
    /// let lowest = nvshmem_device::warp::reduce_min(5i64);
    /// ```
    reduce_min[PartialOrd] = |a, b| if b < a { b } else { a };
    /// The warp's maximum, on every lane. See [`reduce_min`].
    ///
    /// ```no_run
    /// let highest = nvshmem_device::warp::reduce_max(5.0f64);
    /// ```
    reduce_max[PartialOrd] = |a, b| if b > a { b } else { a };
    /// The bitwise AND over the warp, on every lane.
    ///
    /// ```no_run
    /// let common = nvshmem_device::warp::reduce_and(0xffu32);
    /// ```
    reduce_and[core::ops::BitAnd<Output = T>] = |a, b| a & b;
    /// The bitwise OR over the warp, on every lane.
    ///
    /// ```no_run
    /// let seen = nvshmem_device::warp::reduce_or(1u64 << 3);
    /// ```
    reduce_or[core::ops::BitOr<Output = T>] = |a, b| a | b;
    /// The bitwise XOR over the warp, on every lane.
    ///
    /// ```no_run
    /// let parity = nvshmem_device::warp::reduce_xor(1u32);
    /// ```
    reduce_xor[core::ops::BitXor<Output = T>] = |a, b| a ^ b;
}

/// Inclusive scan over the warp in lane order: lane `i` gets
/// `op(...op(op(v0, v1), v2)..., vi)`. `op` must be associative. All 32
/// lanes must call it (Kogge–Stone, 5 shuffles).
///
/// ```no_run
/// let running = nvshmem_device::warp::inclusive_scan(1u32, |a, b| a + b); // lane + 1
/// ```
#[inline(always)]
pub fn inclusive_scan<T: Pod>(value: T, op: impl Fn(T, T) -> T) -> T {
    let lane = lane_id();
    let mut x = value;
    let mut delta = 1;
    while delta < WARP_SIZE {
        let y = shfl_up(x, delta);
        if lane >= delta {
            x = op(y, x);
        }
        delta *= 2;
    }
    x
}

/// Exclusive scan over the warp: lane 0 gets `identity`, lane `i > 0` the
/// inclusive scan of lanes `0..i`. See [`inclusive_scan`].
///
/// ```no_run
/// let offset = nvshmem_device::warp::exclusive_scan(4u32, 0, |a, b| a + b); // 4 * lane
/// ```
#[inline(always)]
pub fn exclusive_scan<T: Pod>(value: T, identity: T, op: impl Fn(T, T) -> T) -> T {
    let inclusive = inclusive_scan(value, op);
    let before = shfl_up(inclusive, 1);
    if lane_id() == 0 { identity } else { before }
}

/// Inclusive prefix sum over the warp.
///
/// ```no_run
/// let upto = nvshmem_device::warp::inclusive_sum(2.0f32);
/// ```
#[inline(always)]
pub fn inclusive_sum<T: Pod + core::ops::Add<Output = T>>(value: T) -> T {
    inclusive_scan(value, |a, b| a + b)
}

/// Exclusive prefix sum over the warp (lane 0 gets zero).
///
/// ```no_run
/// let start = nvshmem_device::warp::exclusive_sum(3u64);
/// ```
#[inline(always)]
pub fn exclusive_sum<T: Pod + core::ops::Add<Output = T>>(value: T) -> T {
    exclusive_scan(value, T::zeroed(), |a, b| a + b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip_for_every_size() {
        assert_eq!(map_words(0x1234_5678u32, |w| w), 0x1234_5678);
        assert_eq!(map_words([1u8, 2, 3], |w| w), [1, 2, 3]);
        assert_eq!(map_words([1u16, 2, 3], |w| w ^ 0x0001_0001), [0, 3, 2]);
        assert_eq!(map_words(u64::MAX - 1, |w| w), u64::MAX - 1);
        let mut words = 0;
        map_words([0u8; 13], |w| {
            words += 1;
            w
        });
        assert_eq!(words, 4);
    }

    #[test]
    fn segments_follow_cuda() {
        assert_eq!(segment(32), 0);
        assert_eq!(segment(16), 16 << 8);
        assert_eq!(segment(1), 31 << 8);
        assert_eq!(segment(0), 0);
        assert_eq!(segment(64), 0);
    }
}
