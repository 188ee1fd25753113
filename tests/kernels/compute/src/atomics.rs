//! Atomics: every operation, ordering, scope and space, on counters whose
//! final values (and returned tickets) the host checks.

use nvshmem_device::atomic::{
    self, AcqRel, Acquire, Bf16x2, Cta, F16x2, Gpu, Relaxed, Release, SeqCst, Sys,
};
use nvshmem_device::math::cuda_arch;
use nvshmem_device::static_shared;
use nvshmem_device::thread::{block_idx_x, global_index_x, sync_threads, thread_idx_x};

/// Every thread of the grid (`T` threads, global index `g`) updates the
/// counters `w` (`u32`) and `d` (`u64`) with `Gpu` or `Sys` scope
/// (`Cta`-scoped atomics of different blocks on one location would race, by
/// the PTX memory model); `tickets[g]` and `olds[g]` get what it fetched. The host sets the initial values and checks the final ones
/// (see `tests/compute.rs`, `atomics_global`, for the slot list).
#[nvshmem_device::kernel]
pub unsafe fn atomics_global(w: *mut u32, d: *mut u64, tickets: *mut u32, olds: *mut u32) {
    let g = global_index_x();
    let (g32, bit) = (g as u32, 1u32 << (g % 32));
    let s = |i: usize| unsafe { w.add(i) };
    let s64 = |i: usize| unsafe { d.add(i) };
    let as_i32 = |i: usize| s(i).cast::<i32>();
    let as_i64 = |i: usize| s64(i).cast::<i64>();
    unsafe {
        *tickets.add(g) = atomic::fetch_add(s(0), 1, Relaxed, Gpu);
        atomic::add(s(1), 2, Release, Gpu);
        atomic::fetch_sub(s(2), 1, AcqRel, Gpu);
        atomic::fetch_or(s(3), bit, Relaxed, Sys);
        atomic::fetch_and(s(4), !bit, Acquire, Gpu);
        atomic::fetch_xor(s(5), bit, SeqCst, Gpu);
        atomic::fetch_max(s(6), g32 * 7 % 1000, Relaxed, Gpu);
        atomic::fetch_min(s(7), g32 + 5, Release, Gpu);
        atomic::fetch_inc(s(8), 9, Relaxed, Gpu);
        atomic::fetch_dec(s(9), 9, AcqRel, Gpu);
        atomic::inc(s(10), 15, Relaxed, Gpu);
        let mut cur = atomic::load(s(11), Relaxed, Gpu);
        while let Err(seen) = atomic::compare_exchange(s(11), cur, cur + 3, SeqCst, Gpu) {
            cur = seen;
        }
        *olds.add(g) = atomic::swap(s(12), g32, AcqRel, Gpu);
        atomic::min(as_i32(13), -(g as i32), Relaxed, Gpu);
        atomic::fetch_max(as_i32(14), g as i32 - 100, Relaxed, Gpu);
        atomic::global::fetch_add(s(15), 1, SeqCst, Gpu);
        atomic::global::add(s(16), 1, Relaxed, Sys);
        atomic::fetch_add(
            s(17).cast::<F16x2>(),
            F16x2::from_bits(0x3800_3c00),
            Relaxed,
            Gpu,
        ); // (1.0, 0.5)
        if g < 64 {
            if cuda_arch() >= 900 {
                atomic::add(
                    s(18).cast::<Bf16x2>(),
                    Bf16x2::from_bits(0x3e80_3f80),
                    Relaxed,
                    Gpu,
                ); // (1.0, 0.25)
            } else {
                atomic::store(s(18), 0xdead_beef, Relaxed, Gpu);
            }
        }
        atomic::dec(s(19), 4, Release, Gpu);
        atomic::global::fetch_xor(s(20), 1, Relaxed, Gpu);
        // One thread wins: the slot ends as some `g + 8`.
        let _ = atomic::global::compare_exchange(s(22), 7, g32 + 8, Relaxed, Sys);
        atomic::fetch_add(s(23).cast::<f32>(), 0.5, Relaxed, Gpu);
        atomic::global::sub(s(24), 3, Relaxed, Gpu);
        atomic::global::fetch_inc(s(25), u32::MAX, SeqCst, Sys);

        atomic::fetch_add(s64(0), 1 << 33, Relaxed, Gpu);
        atomic::fetch_add(as_i64(1), -1, Relaxed, Gpu);
        atomic::fetch_or(s64(2), 1 << (g % 64), Relaxed, Gpu);
        atomic::max(as_i64(3), g as i64 * 3 - 1000, Relaxed, Gpu);
        atomic::add(s64(4).cast::<f64>(), 0.25, Release, Gpu);
        atomic::fetch_add(s64(5).cast::<f64>(), 1.5, AcqRel, Sys);
        let mut cur = atomic::load(s64(7), Acquire, Gpu);
        while let Err(seen) = atomic::compare_exchange(s64(7), cur, cur + 5, AcqRel, Gpu) {
            cur = seen;
        }
        atomic::swap(s64(8), g as u64, Relaxed, Gpu);
        atomic::fetch_min(as_i64(9), -(g as i64), Relaxed, Gpu);
        atomic::sub(s64(10), 2, Relaxed, Gpu);
        atomic::fetch_xor(s64(11), 1 << 40, Relaxed, Gpu);
        atomic::global::fetch_and(s64(12), !(1 << (g % 64)), Relaxed, Gpu);
    }
    // Stores and loads of every ordering, once per block.
    if thread_idx_x() == 0 && block_idx_x() == 0 {
        unsafe {
            atomic::store(s(21), 41, Relaxed, Cta);
            let a = atomic::load(s(21), SeqCst, Gpu);
            atomic::store(s(21), a + 1, SeqCst, Sys);
            atomic::store(s64(6).cast::<f64>(), 2.5, Release, Gpu);
            let x = atomic::load(s64(6).cast::<f64>(), Acquire, Sys);
            atomic::global::store(s64(6).cast::<f64>(), x * 2.0, Release, Gpu);
            atomic::fence(SeqCst, Cta);
            atomic::fence(AcqRel, Gpu);
            atomic::fence(Acquire, Sys);
        }
    }
}

/// Message passing between block 0 (producer) and block 1 (consumer), both
/// with thread 0 only: `data[0..4]` published with a release store of
/// `flags[0]`, then `data[4..8]` with a release fence and a relaxed store of
/// `flags[1]`. The consumer spins with acquire loads (and a relaxed load plus
/// an acquire fence) and copies what it saw into `seen[0..8]`: the host
/// expects `1..=8`. Launch with 2 blocks.
#[nvshmem_device::kernel]
pub unsafe fn atomics_message(data: *mut u32, flags: *mut u32, seen: *mut u32) {
    if thread_idx_x() != 0 {
        return;
    }
    unsafe {
        if block_idx_x() == 0 {
            for i in 0..4 {
                data.add(i).write_volatile(i as u32 + 1);
            }
            atomic::store(flags, 1, Release, Gpu);
            for i in 4..8 {
                data.add(i).write_volatile(i as u32 + 1);
            }
            atomic::fence(Release, Gpu);
            atomic::store(flags.add(1), 1, Relaxed, Gpu);
        } else {
            while atomic::load(flags, Acquire, Gpu) == 0 {}
            for i in 0..4 {
                seen.add(i).write(data.add(i).read_volatile());
            }
            while atomic::load(flags.add(1), Relaxed, Gpu) == 0 {}
            atomic::fence(Acquire, Gpu);
            for i in 4..8 {
                seen.add(i).write(data.add(i).read_volatile());
            }
        }
    }
}

static_shared! {
    /// Per-block counters for `atomics_shared`.
    static COUNTERS: [u32; 6];
}

/// `.shared` atomics on a block's counters. Per block `b`, `out[b * 6 + k]`:
/// 0 `shared::add` 1 per thread (`n`), 1 `shared::fetch_max(t)` (`n - 1`),
/// 2 a `shared::compare_exchange` loop adding 2 (`2n`), 3 `shared::fetch_inc`
/// with limit 7 (`n % 8`), 4 generic `fetch_add` 3 on the shared address
/// (`3n`), 5 `shared::swap` then `shared::fetch_or` of bit 31 (`t' | 1 << 31`
/// for some thread `t'`: the host checks the bit and the range).
#[nvshmem_device::kernel]
pub unsafe fn atomics_shared(out: *mut u32) {
    use atomic::shared;
    let (t, b) = (thread_idx_x() as usize, block_idx_x() as usize);
    if t < 6 {
        unsafe { COUNTERS.write(t, 0) };
    }
    sync_threads();
    let c = |i: usize| COUNTERS.index_ptr(i);
    unsafe {
        shared::add(c(0), 1, Relaxed, Cta);
        shared::fetch_max(c(1), t as u32, AcqRel, Cta);
        let mut cur = shared::load(c(2), Relaxed, Cta);
        while let Err(seen) = shared::compare_exchange(c(2), cur, cur + 2, AcqRel, Cta) {
            cur = seen;
        }
        shared::fetch_inc(c(3), 7, Relaxed, Cta);
        atomic::fetch_add(c(4), 3, Relaxed, Cta);
        shared::swap(c(5), t as u32, Relaxed, Cta);
    }
    sync_threads();
    if t == 0 {
        unsafe { shared::fetch_or(c(5), 1 << 31, SeqCst, Cta) };
    }
    sync_threads();
    if t < 6 {
        unsafe { *out.add(b * 6 + t) = shared::load(c(t), Acquire, Cta) };
    }
}
