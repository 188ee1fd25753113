//! Kernels for `tests/compute.rs`: every compute primitive of
//! `nvshmem-device` (warp collectives, shared memory, scoped atomics, math),
//! each writing its results to global memory for the host to check element
//! by element. The layouts (`out[k * n + i]`: result `k` of thread `i`) are
//! documented per kernel and mirrored in the test.
#![no_std]
#![feature(abi_ptx)]

mod atomics;
mod math;

use nvshmem_device::shared::{self, DynamicShared};
use nvshmem_device::static_shared;
use nvshmem_device::thread::{block_dim_x, sync_threads, thread_idx_x};
use nvshmem_device::warp::{self, FULL_MASK};

nvshmem_device::panic_handler!();

/// Shuffles of `u32`, one block of whole warps. `out[k * n + t]`, `n` = block size:
/// 0 `shfl(v, (lane*7+3)%32)`, 1 `shfl_up(v, 3)`, 2 `shfl_down(v, 5)`, 3 `shfl_xor(v, 6)`,
/// 4 `shfl_sync(!0, v, lane+1, 8)`, 5 `shfl_up_sync(!0, v, 2, 16)`,
/// 6 `shfl_down_sync(!0, v, 3, 4)`, 7 `shfl_xor_sync(!0, v, 5, 16)`,
/// 8 `shfl_sync(0x0000ffff, v, 15 - lane, 32)` on lanes 0..16 (others write 0).
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn warp_shuffle_u32(input: *const u32, out: *mut u32) {
    let (t, n) = (thread_idx_x() as usize, block_dim_x() as usize);
    let lane = warp::lane_id();
    let v = unsafe { *input.add(t) };
    let r = [
        warp::shfl(v, (lane * 7 + 3) % 32),
        warp::shfl_up(v, 3),
        warp::shfl_down(v, 5),
        warp::shfl_xor(v, 6),
        warp::shfl_sync(FULL_MASK, v, lane + 1, 8),
        warp::shfl_up_sync(FULL_MASK, v, 2, 16),
        warp::shfl_down_sync(FULL_MASK, v, 3, 4),
        warp::shfl_xor_sync(FULL_MASK, v, 5, 16),
    ];
    for (k, x) in r.into_iter().enumerate() {
        unsafe { *out.add(k * n + t) = x };
    }
    let partial = if lane < 16 {
        warp::shfl_sync(0x0000_ffff, v, 15 - lane, 32)
    } else {
        0
    };
    unsafe { *out.add(8 * n + t) = partial };
}

/// Shuffles of wider and odd-sized values. `out[k * n + t]` (`u64`):
/// 0 `shfl(v, 31 - lane)` (u64), 1 `shfl_xor(f64::from_bits(v), 1)` as bits,
/// 2 `shfl_down([u8; 7] = v's low 7 bytes, 1)` widened, 3 `shfl_up([u16; 3] =
/// v's low 6 bytes, 1)` widened, 4 `shfl([u32; 3] = (v, v >> 32, lane), 0)`: word 2.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn warp_shuffle_wide(input: *const u64, out: *mut u64) {
    let (t, n) = (thread_idx_x() as usize, block_dim_x() as usize);
    let lane = warp::lane_id();
    let v = unsafe { *input.add(t) };
    let bytes = v.to_le_bytes();
    let b7: [u8; 7] = [
        bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6],
    ];
    let w3: [u16; 3] = [v as u16, (v >> 16) as u16, (v >> 32) as u16];
    let b7 = warp::shfl_down(b7, 1);
    let w3 = warp::shfl_up(w3, 1);
    let mut wide = [0u8; 8];
    wide[..7].copy_from_slice(&b7);
    let r = [
        warp::shfl(v, 31 - lane),
        warp::shfl_xor(f64::from_bits(v), 1).to_bits(),
        u64::from_le_bytes(wide),
        w3[0] as u64 | (w3[1] as u64) << 16 | (w3[2] as u64) << 32,
        warp::shfl([v as u32, (v >> 32) as u32, lane], 0)[2] as u64,
    ];
    for (k, x) in r.into_iter().enumerate() {
        unsafe { *out.add(k * n + t) = x };
    }
}

/// Votes, matches, lane masks. `p = v & 1`, `q = v & 2 != 0`. `out[k * n + t]`:
/// 0 `all(p)`, 1 `any(p)`, 2 `ballot(p)`, 3 `uni_sync(!0, q)`, 4 `all(true)`,
/// 5 on lanes < 16 `ballot_sync(0xffff, p)` else 0, 6 on lanes < 16 `any_sync(0xffff, q)`,
/// 7 `activemask()` inside `if lane % 3 == 0` (else 0), 8 `match_any_sync(!0, v % 4)`,
/// 9 `match_any_sync(!0, (v % 3) as u64 * 2^40)`, 10 `match_all_sync(!0, v >> 8)`,
/// 11 `match_all_sync(!0, v)`, 12 `match_any_sync(!0, [v % 2, v % 5, 7])` (12 bytes),
/// 13..18 `lanemask_eq, lt, le, gt, ge`, 18 `lane_id`.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn warp_vote(input: *const u32, out: *mut u32) {
    let (t, n) = (thread_idx_x() as usize, block_dim_x() as usize);
    let lane = warp::lane_id();
    let v = unsafe { *input.add(t) };
    let (p, q) = (v & 1 != 0, v & 2 != 0);
    let r = [
        warp::all(p) as u32,
        warp::any(p) as u32,
        warp::ballot(p),
        warp::uni_sync(FULL_MASK, q) as u32,
        warp::all(true) as u32,
        if lane < 16 {
            warp::ballot_sync(0xffff, p)
        } else {
            0
        },
        if lane < 16 {
            warp::any_sync(0xffff, q) as u32
        } else {
            0
        },
        if lane % 3 == 0 { warp::activemask() } else { 0 },
        warp::match_any_sync(FULL_MASK, v % 4),
        warp::match_any_sync(FULL_MASK, (v % 3) as u64 * (1 << 40)),
        warp::match_all_sync(FULL_MASK, v >> 8) as u32,
        warp::match_all_sync(FULL_MASK, v) as u32,
        warp::match_any_sync(FULL_MASK, [v % 2, v % 5, 7]),
        warp::lanemask_eq(),
        warp::lanemask_lt(),
        warp::lanemask_le(),
        warp::lanemask_gt(),
        warp::lanemask_ge(),
        lane,
    ];
    for (k, x) in r.into_iter().enumerate() {
        unsafe { *out.add(k * n + t) = x };
    }
}

/// Warp reductions and scans. `out_i[k * n + t]` (`i32`): 0 sum, 1 min, 2 max,
/// 3 and, 4 or, 5 xor, 6 inclusive_sum, 7 exclusive_sum, 8 inclusive_scan(max),
/// 9 exclusive_scan(max, i32::MIN). `out_f[k * n + t]` (`f32`): 0 sum, 1 min,
/// 2 max, 3 inclusive_sum, 4 exclusive_sum. `out_w[k * n + t]` (`u64`, from
/// `ints as u64 * 2^33`): 0 sum; (`f64` bits, from `floats as f64`): 1 sum.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn warp_reduce(
    ints: *const i32,
    floats: *const f32,
    out_i: *mut i32,
    out_f: *mut f32,
    out_w: *mut u64,
) {
    let (t, n) = (thread_idx_x() as usize, block_dim_x() as usize);
    let (x, f) = unsafe { (*ints.add(t), *floats.add(t)) };
    let max = |a: i32, b: i32| a.max(b);
    let ri = [
        warp::reduce_sum(x),
        warp::reduce_min(x),
        warp::reduce_max(x),
        warp::reduce_and(x),
        warp::reduce_or(x),
        warp::reduce_xor(x),
        warp::inclusive_sum(x),
        warp::exclusive_sum(x),
        warp::inclusive_scan(x, max),
        warp::exclusive_scan(x, i32::MIN, max),
    ];
    for (k, r) in ri.into_iter().enumerate() {
        unsafe { *out_i.add(k * n + t) = r };
    }
    let rf = [
        warp::reduce_sum(f),
        warp::reduce_min(f),
        warp::reduce_max(f),
        warp::inclusive_sum(f),
        warp::exclusive_sum(f),
    ];
    for (k, r) in rf.into_iter().enumerate() {
        unsafe { *out_f.add(k * n + t) = r };
    }
    unsafe {
        *out_w.add(t) = warp::reduce_sum((x as u32 as u64) << 33);
        *out_w.add(n + t) = warp::reduce_sum(f as f64).to_bits();
    }
}

static_shared! {
    /// One element per thread (blocks of at most 256 threads).
    static TILE: [f32; 256];
    /// A block-wide counter.
    static COUNTER: u32;
}

static_shared! {
    /// Only in `shared_static_big`: its manifest entry shows 8 KiB more.
    static BIG: [f64; 1024];
}

/// Static shared memory. `out[k * n + t]` (`f32`): 0 `input` of thread `n-1-t`
/// (through `TILE`, reversed in the block), 1 this thread's `atomic::shared::fetch_add`
/// ticket on `COUNTER` (the tickets are a permutation of 0..n), 2 `COUNTER`
/// after the barrier (`n`), 3 `is_shared(TILE)` (1.0), 4 `is_shared(input)` (0.0).
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn shared_static(input: *const f32, out: *mut f32) {
    use nvshmem_device::atomic::{self, Cta, Relaxed};
    let (t, n) = (thread_idx_x() as usize, block_dim_x() as usize);
    if t == 0 {
        unsafe { COUNTER.as_ptr().write(0) };
    }
    unsafe { TILE.write(t, *input.add(t)) };
    sync_threads();
    let ticket = unsafe { atomic::shared::fetch_add(COUNTER.as_ptr(), 1, Relaxed, Cta) };
    let reversed = unsafe { TILE.read(n - 1 - t) };
    sync_threads();
    let total = unsafe { atomic::shared::load(COUNTER.as_ptr(), Relaxed, Cta) };
    let r = [
        reversed,
        ticket as f32,
        total as f32,
        shared::is_shared(TILE.as_ptr()) as u32 as f32,
        shared::is_shared(input) as u32 as f32,
    ];
    for (k, x) in r.into_iter().enumerate() {
        unsafe { *out.add(k * n + t) = x };
    }
}

/// A second shared array (8 KiB): each thread writes `BIG[t * 4 + j] = t + j/4`,
/// then `out[t] = sum over j of BIG[((t + 1) % n) * 4 + j]`.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn shared_static_big(out: *mut f64) {
    let (t, n) = (thread_idx_x() as usize, block_dim_x() as usize);
    for j in 0..4 {
        unsafe { BIG.write(t * 4 + j, t as f64 + j as f64 / 4.0) };
    }
    sync_threads();
    let next = (t + 1) % n;
    let sum: f64 = (0..4).map(|j| unsafe { BIG.read(next * 4 + j) }).sum();
    unsafe { *out.add(t) = sum };
}

/// Dynamic shared memory carved as `u32 × n`, then `f64 × n`, then `u8 × n`
/// aligned to 128, then `u16 × 3` aligned to 64. `out[k * n + t]` (`u64`):
/// 0 `u32` slot of thread `(t+1) % n` (`t+1 % n` * 3), 1 `f64` slot of thread
/// `(t+2) % n` as bits, 2 `u8` slot of `(t+3) % n`, 3 `dynamic_size()`,
/// 4 `total_size()`, 5 the `f64` slice's address mod 8, 6 the `u8` slice's
/// address mod 128, 7 the `u16` slice's address mod 64, 8 whether
/// `try_carve_aligned::<u8>(remaining + 1, 1)` was refused (1), 9 `remaining()` at the end.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn shared_dynamic(out: *mut u64) {
    let (t, n) = (thread_idx_x() as usize, block_dim_x() as usize);
    let mut smem = DynamicShared::get();
    let words = smem.carve::<u32>(n);
    let doubles = smem.carve::<f64>(n);
    let bytes = smem.carve_aligned::<u8>(n, 128);
    let shorts = smem.carve_aligned::<u16>(3, 64);
    unsafe {
        words.write(t, t as u32 * 3);
        doubles.write(t, t as f64 * 0.5);
        bytes.write(t, t as u8 ^ 0x5a);
    }
    sync_threads();
    let mut probe = smem;
    let refused = probe
        .try_carve_aligned::<u8>(smem.remaining() + 1, 1)
        .is_none();
    let r = [
        unsafe { words.read((t + 1) % n) } as u64,
        unsafe { doubles.read((t + 2) % n) }.to_bits(),
        unsafe { bytes.read((t + 3) % n) } as u64,
        shared::dynamic_size() as u64,
        shared::total_size() as u64,
        doubles.as_ptr() as u64 % 8,
        bytes.as_ptr() as u64 % 128,
        shorts.as_ptr() as u64 % 64,
        refused as u64,
        smem.remaining() as u64,
    ];
    for (k, x) in r.into_iter().enumerate() {
        unsafe { *out.add(k * n + t) = x };
    }
}
