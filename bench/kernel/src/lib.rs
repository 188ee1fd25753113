//! The benchmark's Rust kernels. Every kernel here has a twin of the same
//! name, parameters and algorithm in CUDA C++ (`bench/cpp/kernels.cu`); the
//! bench host launches both with the same grid and block and compares them.
//!
//! - latency (one thread, `iters` dependent operations per launch):
//!   [`lat_p`], [`lat_g`], [`lat_put`], [`lat_get`], `lat_amo_*`,
//!   [`pingpong`] (put-with-signal), [`barrier_lat`];
//! - bandwidth (`iters` messages of `bytes` per launch, split over the
//!   threads, warps or blocks of the grid, rotating over `nbuf` buffers):
//!   `bw_{put,get}[_nbi]_{thread,warp,block}`;
//! - atomic throughput (every thread its own word): `tput_amo_*`;
//! - helpers that are not timed: [`fill_bytes`], [`check_bytes`].
//!
//! The in-kernel all-reduce is the allreduce example's (`allreduce-kernels`).
#![no_std]
// Each kernel's contract is kept by its one caller (the tests / the benchmark).
#![allow(clippy::missing_safety_doc)]

use core::sync::atomic::{AtomicU32, Ordering};
use nvshmem_device::thread::{block_dim_x, block_idx_x, grid_dim_x, thread_idx_x};
use nvshmem_device::thread::{global_index_x, global_stride_x};
use nvshmem_device::{Cmp, Pe, SignalOp, SymPtr};
use nvshmem_device::{atomic_add, atomic_compare_swap, atomic_fetch_add, atomic_swap};
use nvshmem_device::{barrier_all, g, p, put_signal, quiet, signal_wait_until};
use nvshmem_device::{get_pod, get_pod_block, get_pod_nbi, get_pod_nbi_block, get_pod_nbi_warp};
use nvshmem_device::{get_pod_warp, put_pod, put_pod_block, put_pod_nbi, put_pod_nbi_block};
use nvshmem_device::{put_pod_nbi_warp, put_pod_warp};

nvshmem_device::panic_handler!();

/// The byte pattern, the same function the host checks with.
pub use example_patterns::pattern_byte;

/// Writes [`pattern_byte`]`(i, seed)` to `buf[i]` for `i < bytes` (`seed` 0: zeros, as poison).
///
/// # Safety
/// `buf` is writable device memory for `bytes` bytes. Any 1-D launch.
#[nvshmem_device::kernel]
pub unsafe fn fill_bytes(buf: *mut u8, bytes: u64, seed: u32) {
    let mut i = global_index_x();
    while i < bytes as usize {
        let v = if seed == 0 {
            0
        } else {
            pattern_byte(i as u64, seed)
        };
        unsafe { *buf.add(i) = v };
        i += global_stride_x();
    }
}

/// Writes the complement of [`pattern_byte`]`(i, seed)` to `buf[i]` for
/// `i < bytes`: a poison no byte of that pattern equals, for a destination
/// that [`check_bytes`] checks against it.
///
/// # Safety
/// `buf` is writable device memory for `bytes` bytes. Any 1-D launch.
#[nvshmem_device::kernel]
pub unsafe fn poison_bytes(buf: *mut u8, bytes: u64, seed: u32) {
    let mut i = global_index_x();
    while i < bytes as usize {
        unsafe { *buf.add(i) = !pattern_byte(i as u64, seed) };
        i += global_stride_x();
    }
}

/// Adds to `*errors` the count of `i < bytes` with `buf[i] != pattern_byte(i % period, seed)`.
///
/// # Safety
/// `buf` is readable for `bytes` bytes, `errors` a device `u32`. Any 1-D launch.
#[nvshmem_device::kernel]
pub unsafe fn check_bytes(buf: *const u8, bytes: u64, period: u64, seed: u32, errors: *mut u32) {
    let mut wrong = 0u32;
    let mut i = global_index_x();
    while i < bytes as usize {
        if unsafe { *buf.add(i) } != pattern_byte(i as u64 % period, seed) {
            wrong += 1;
        }
        i += global_stride_x();
    }
    if wrong != 0 {
        // SAFETY: a valid, aligned u32 in device memory.
        unsafe { AtomicU32::from_ptr(errors) }.fetch_add(wrong, Ordering::Relaxed);
    }
}

// ---------------------------------------------------------------- latency

/// `iters` times: `p(dest, i + 1)` to PE `pe`, then `quiet`. One thread.
///
/// # Safety
/// `dest` a symmetric `u64`; launch 1 x 1.
#[nvshmem_device::kernel]
pub unsafe fn lat_p(dest: SymPtr<u64>, pe: u32, iters: u64) {
    for i in 0..iters {
        unsafe { p(dest, i + 1, Pe::new(pe)) };
        quiet();
    }
}

/// `iters` dependent `g`s on PE `pe`: each reads `src[idx]` and takes the next
/// `idx` from its low 3 bits. Writes the sum of the values to `*out`. One thread.
///
/// # Safety
/// `src` a symmetric array of 8 `u64`; `out` a device `u64`; launch 1 x 1.
#[nvshmem_device::kernel]
pub unsafe fn lat_g(src: SymPtr<u64>, pe: u32, iters: u64, out: *mut u64) {
    let (mut acc, mut idx) = (0u64, 0usize);
    for _ in 0..iters {
        let v = unsafe { g(src.add(idx), Pe::new(pe)) };
        acc = acc.wrapping_add(v);
        idx = (v & 7) as usize;
    }
    unsafe { *out = acc };
}

/// `iters` times: a blocking `putmem` of `bytes` to PE `pe`, then `quiet`. One thread.
///
/// # Safety
/// `dest` symmetric and `src` device memory of `bytes` bytes; launch 1 x 1.
#[nvshmem_device::kernel]
pub unsafe fn lat_put(dest: SymPtr<u8>, src: *const u8, bytes: u64, pe: u32, iters: u64) {
    for _ in 0..iters {
        unsafe { put_pod(dest, src, bytes as usize, Pe::new(pe)) };
        quiet();
    }
}

/// `iters` blocking `getmem`s of `bytes` from PE `pe`. One thread.
///
/// # Safety
/// `src` symmetric and `dest` device memory of `bytes` bytes; launch 1 x 1.
#[nvshmem_device::kernel]
pub unsafe fn lat_get(dest: *mut u8, src: SymPtr<u8>, bytes: u64, pe: u32, iters: u64) {
    for _ in 0..iters {
        unsafe { get_pod(dest, src, bytes as usize, Pe::new(pe)) };
    }
}

/// Put-with-signal ping-pong of `nelem` `u64`s between this PE and `peer`,
/// `iters` round trips. The initiator (`first != 0`) sends round `i` with
/// signal value `base + i + 1` and waits for the answer; the other PE waits
/// and answers. With `peer` = this PE, it answers itself. One thread.
///
/// # Safety
/// `data` symmetric `nelem` u64s, `sig` a symmetric u64 whose value is at
/// most `base`, `src` device memory of `nelem` u64s; both PEs launch with the
/// same `iters` and `base`; launch 1 x 1 (with MPS when both share a GPU).
#[nvshmem_device::kernel]
pub unsafe fn pingpong(
    data: SymPtr<u64>,
    sig: SymPtr<u64>,
    src: *const u64,
    nelem: u64,
    peer: u32,
    first: u32,
    iters: u64,
    base: u64,
) {
    let to = Pe::new(peer);
    for i in 0..iters {
        let e = base + i + 1;
        if first != 0 {
            unsafe { put_signal(data, src, nelem as usize, sig, e, SignalOp::Set, to) };
            unsafe { signal_wait_until(sig, Cmp::Ge, e) };
        } else {
            unsafe { signal_wait_until(sig, Cmp::Ge, e) };
            unsafe { put_signal(data, src, nelem as usize, sig, e, SignalOp::Set, to) };
        }
    }
}

/// `iters` device-side `barrier_all`s by thread 0. Collective (cooperative launch).
///
/// # Safety
/// Every PE launches it with the same `iters`.
#[nvshmem_device::kernel]
pub unsafe fn barrier_lat(iters: u64) {
    if thread_idx_x() == 0 && block_idx_x() == 0 {
        for _ in 0..iters {
            barrier_all();
        }
    }
}

// ---------------------------------------------------------------- bandwidth

/// Part `part` of `total` bytes cut into `parts`: `(start, len)`, starts 16-byte aligned.
#[inline(always)]
pub fn split(total: usize, parts: usize, part: usize) -> (usize, usize) {
    let unit = total.div_ceil(parts).next_multiple_of(16);
    let start = (part * unit).min(total);
    (start, (start + unit).min(total) - start)
}

/// This actor's index and the count of actors: threads, warps or blocks of the grid.
#[inline(always)]
fn actor(scope: u32) -> (usize, usize) {
    let (b, bd, t, gd) = (
        block_idx_x() as usize,
        block_dim_x() as usize,
        thread_idx_x() as usize,
        grid_dim_x() as usize,
    );
    match scope {
        0 => (b * bd + t, gd * bd),
        1 => (b * (bd / 32) + t / 32, gd * (bd / 32)),
        _ => (b, gd),
    }
}

/// The bandwidth kernels of one direction (`dest` and `src` of the given
/// types), from rows of three: the kernel names and the functions they call,
/// in thread, warp and block scope (`actor` 0, 1, 2).
macro_rules! bw_kernels {
    (
        $(#[$doc:meta])* ($dest:ty, $src:ty):
        $([$t:ident, $w:ident, $b:ident] = [$ft:ident, $fw:ident, $fb:ident];)*
    ) => {
        bw_kernels! { @each [$(#[$doc])*] ($dest, $src) $($t $ft 0, $w $fw 1, $b $fb 2,)* }
    };
    (@each $docs:tt $types:tt $($name:ident $f:ident $scope:literal,)*) => {$(
        bw_kernels! { @one $docs $types $name $f $scope }
    )*};
    (@one [$(#[$doc:meta])*] ($dest:ty, $src:ty) $name:ident $f:ident $scope:literal) => {
        $(#[$doc])*
        #[nvshmem_device::kernel]
        pub unsafe fn $name(dest: $dest, src: $src, bytes: u64, pe: u32, iters: u64, nbuf: u64) {
            let (a, na) = actor($scope);
            let (off, len) = split(bytes as usize, na, a);
            if len > 0 {
                for i in 0..iters {
                    let b = (i % nbuf) as usize * bytes as usize + off;
                    unsafe { $f(dest.add(b), src.add(b), len, Pe::new(pe)) };
                }
            }
            quiet();
        }
    };
}

bw_kernels! {
    /// Bandwidth: `iters` puts of `bytes` to PE `pe`, message `i` from/to
    /// buffer `i % nbuf` (`bytes` apart), split over the grid's actors; `quiet` at the end.
    ///
    /// # Safety
    /// `dest` symmetric and `src` device memory of `nbuf * bytes` bytes. Any 1-D launch
    /// (warp scope: whole warps).
    (SymPtr<u8>, *const u8):
    [bw_put_thread, bw_put_warp, bw_put_block] = [put_pod, put_pod_warp, put_pod_block];
    [bw_put_nbi_thread, bw_put_nbi_warp, bw_put_nbi_block] =
        [put_pod_nbi, put_pod_nbi_warp, put_pod_nbi_block];
}

bw_kernels! {
    /// Bandwidth: `iters` gets of `bytes` from PE `pe`, as the puts.
    ///
    /// # Safety
    /// `src` symmetric and `dest` device memory of `nbuf * bytes` bytes. Any 1-D launch.
    (*mut u8, SymPtr<u8>):
    [bw_get_thread, bw_get_warp, bw_get_block] = [get_pod, get_pod_warp, get_pod_block];
    [bw_get_nbi_thread, bw_get_nbi_warp, bw_get_nbi_block] =
        [get_pod_nbi, get_pod_nbi_warp, get_pod_nbi_block];
}

// ---------------------------------------------------------------- atomics

// A chain of `iters` atomics on the word `d` of PE `pe`, returning what goes
// to `out`. A latency kernel runs it on one thread on `dest`; a throughput
// kernel on every thread `t` of the grid on `dest[t]`.

/// `iters` dependent fetch-adds of 1; the sum of the fetched values.
#[inline(always)]
unsafe fn fetch_add_chain(d: SymPtr<u64>, pe: Pe, iters: u64) -> u64 {
    let mut acc = 0u64;
    for _ in 0..iters {
        acc = acc.wrapping_add(unsafe { atomic_fetch_add(d, 1, pe) });
    }
    acc
}

/// `iters` adds of 1, each completed by a `quiet` (`QUIET_EACH`) or all by
/// one at the end; `iters`.
#[inline(always)]
unsafe fn add_chain<const QUIET_EACH: bool>(d: SymPtr<u64>, pe: Pe, iters: u64) -> u64 {
    for _ in 0..iters {
        unsafe { atomic_add(d, 1, pe) };
        if QUIET_EACH {
            quiet();
        }
    }
    if !QUIET_EACH {
        quiet();
    }
    iters
}

/// `iters` dependent compare-and-swaps that each raise `d` by one; the last
/// value seen.
#[inline(always)]
unsafe fn compare_swap_chain(d: SymPtr<u64>, pe: Pe, iters: u64) -> u64 {
    let mut cur = 0u64;
    for _ in 0..iters {
        let old = unsafe { atomic_compare_swap(d, cur, cur + 1, pe) };
        cur = if old == cur { cur + 1 } else { old };
    }
    cur
}

/// `iters` dependent swaps: each writes one more than the value the previous
/// one returned; the last value written.
#[inline(always)]
unsafe fn swap_chain(d: SymPtr<u64>, pe: Pe, iters: u64) -> u64 {
    let mut cur = 0u64;
    for _ in 0..iters {
        cur = unsafe { atomic_swap(d, cur + 1, pe) } + 1;
    }
    cur
}

/// The latency kernel (one thread: its chain on `dest`, the result in
/// `*out`) and the throughput kernel (every thread `t` of the grid: its
/// chain on `dest[t]`, the result in `out[t]`) of each atomic.
macro_rules! amo_kernels {
    ($($(#[$ld:meta])* $lat:ident = $lc:path, $(#[$td:meta])* $tput:ident = $tc:path;)*) => {$(
        $(#[$ld])*
        #[nvshmem_device::kernel]
        pub unsafe fn $lat(dest: SymPtr<u64>, pe: u32, iters: u64, out: *mut u64) {
            unsafe { *out = $lc(dest, Pe::new(pe), iters) };
        }

        $(#[$td])*
        #[nvshmem_device::kernel]
        pub unsafe fn $tput(dest: SymPtr<u64>, pe: u32, iters: u64, out: *mut u64) {
            let t = global_index_x();
            unsafe { *out.add(t) = $tc(dest.add(t), Pe::new(pe), iters) };
        }
    )*};
}

amo_kernels! {
    /// `iters` dependent `atomic_fetch_add(dest, 1)` on PE `pe`; the sum of the
    /// fetched values goes to `*out`. One thread.
    ///
    /// # Safety
    /// `dest` a symmetric `u64` nothing else touches; `out` a device `u64`; launch 1 x 1.
    lat_amo_fetch_add = fetch_add_chain,
    /// Throughput: every thread `t` of the grid does `iters` fetch-adds of 1 on
    /// `dest[t]` of PE `pe`; sums the fetched values into `out[t]`.
    ///
    /// # Safety
    /// `dest` symmetric and `out` device memory, `grid * block` u64s each. Any 1-D launch.
    tput_amo_fetch_add = fetch_add_chain;

    /// `iters` times `atomic_add(dest, 1)` on PE `pe`, each completed by `quiet`. One thread.
    ///
    /// # Safety
    /// As [`lat_amo_fetch_add`].
    lat_amo_add = add_chain::<true>,
    /// Throughput: `iters` adds of 1 on `dest[t]` of PE `pe` per thread, one `quiet` at the end.
    ///
    /// # Safety
    /// As [`tput_amo_fetch_add`].
    tput_amo_add = add_chain::<false>;

    /// `iters` dependent compare-and-swaps that each raise `dest` on PE `pe` by
    /// one; the last value seen goes to `*out`. One thread.
    ///
    /// # Safety
    /// As [`lat_amo_fetch_add`].
    lat_amo_compare_swap = compare_swap_chain,
    /// Throughput: `iters` dependent compare-and-swaps raising `dest[t]` by one, per thread.
    ///
    /// # Safety
    /// As [`tput_amo_fetch_add`].
    tput_amo_compare_swap = compare_swap_chain;

    /// `iters` dependent swaps: each writes one more than the value the previous
    /// one returned. The last value written goes to `*out`. One thread.
    ///
    /// # Safety
    /// As [`lat_amo_fetch_add`].
    lat_amo_swap = swap_chain,
    /// Throughput: `iters` dependent swaps per thread, as [`lat_amo_swap`].
    ///
    /// # Safety
    /// As [`tput_amo_fetch_add`].
    tput_amo_swap = swap_chain;
}

// ---------------------------------------------------------------- direct-store puts

/// This thread's lane within its actor, and the actor's thread count.
#[inline(always)]
fn lane(scope: u32) -> (usize, usize) {
    let t = thread_idx_x() as usize;
    match scope {
        0 => (0, 1),
        1 => (t % 32, 32),
        _ => (t, block_dim_x() as usize),
    }
}

/// Copies `len` bytes (`dst`, `src` 16-byte aligned) with 16-byte accesses,
/// lane `l` of `lanes` taking every `lanes`-th vector; the tail byte-wise.
#[inline(always)]
unsafe fn copy16(dst: *mut u8, src: *const u8, len: usize, l: usize, lanes: usize) {
    let n = len / 16;
    let (d, s) = (dst as *mut u128, src as *const u128);
    let mut j = l;
    while j < n {
        unsafe { *d.add(j) = *s.add(j) };
        j += lanes;
    }
    let mut k = n * 16 + l;
    while k < len {
        unsafe { *dst.add(k) = *src.add(k) };
        k += lanes;
    }
}

macro_rules! p2p_kernels {
    ($($name:ident, $scope:literal, $fallback:ident;)*) => {$(
        /// Bandwidth, as the `bw_put_*` kernels, but a peer that `nvshmem_ptr`
        /// reaches is written with plain 16-byte stores (then `quiet`); other
        /// peers get the library's put.
        ///
        /// # Safety
        /// As the `bw_put_*` kernels.
        #[nvshmem_device::kernel]
        pub unsafe fn $name(
            dest: SymPtr<u8>, src: *const u8, bytes: u64, pe: u32, iters: u64, nbuf: u64,
        ) {
            let (a, na) = actor($scope);
            let (l, lanes) = lane($scope);
            let (off, len) = split(bytes as usize, na, a);
            let direct = nvshmem_device::ptr(dest, Pe::new(pe));
            if len > 0 {
                for i in 0..iters {
                    let b = (i % nbuf) as usize * bytes as usize + off;
                    match direct {
                        Some(d) => unsafe { copy16(d.as_ptr().add(b), src.add(b), len, l, lanes) },
                        None => unsafe { $fallback(dest.add(b), src.add(b), len, Pe::new(pe)) },
                    }
                }
            }
            quiet();
        }
    )*};
}

p2p_kernels! {
    bw_put_p2p_thread, 0, put_pod;
    bw_put_p2p_warp, 1, put_pod_warp;
    bw_put_p2p_block, 2, put_pod_block;
}
