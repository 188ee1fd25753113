//! Expert-parallel mixture-of-experts all-to-all over NVSHMEM: **dispatch**
//! sends each token to the PEs that own its top-k experts and fills
//! per-expert receive rows; **combine** sends the experts' outputs back and
//! sums each token's rows with its top-k weights (f32) into its original row.
//!
//! Expert `e` lives on PE `e / local_experts`. Every call is four launches on
//! one stream, without host synchronization (so a CUDA graph can capture
//! them); each kernel's grid may be any size up to the PEs' share of the GPU
//! that keeps every PE's blocks resident (the host agrees it).
//!
//! | Kernel | Side | What |
//! |---|---|---|
//! | [`moe_dispatch_send`] | source | count messages first (tokens, and rows per expert, per destination), then one message per token and destination PE (normal) or per token and expert (low-latency), each a put with signal |
//! | [`moe_dispatch_recv`] | destination | waits for every source's counts and messages, prefix-sums the per-expert offsets, copies each message's payload into its experts' rows |
//! | [`moe_combine_send`] | destination | puts each expert row back into its token's top-k slot on the source, with signal |
//! | [`moe_combine_recv`] | source | waits for the rows it expects, then `out[t] = Σ_k w[t][k] · row[t][k]` in f32 |
//!
//! **Modes** ([`Plan::low_latency`]). Normal: a token goes once to each
//! destination PE whatever the number of its experts there, and the
//! receiver expands it into the packed per-expert rows (offsets aligned to
//! [`Plan::align`]). Low-latency: one message per (token, expert) straight
//! into that expert's fixed-size bucket, signals per expert and source;
//! expert `j`'s rows start at `j · n_pes · max_tokens`.
//!
//! **Signals never reset.** Each signal only grows; each PE keeps in
//! [`Plan::seen`] what it consumed, and waits for "seen + expected". So a
//! call needs no host work, and replays in a graph. Calls must alternate
//! dispatch, combine on every PE (a peer's next dispatch writes the staging
//! area, which the previous one's readers are done with by then).
//!
//! **Refusals.** A PE whose host refused its arguments still launches, with
//! `refused = 1`: it sends empty counts (with [`plan::REFUSED_BIT`]) so that
//! no peer waits for it, and every receiver records the refusal in its
//! status word.
#![no_std]

pub mod num;
pub mod plan;

use nvshmem_device::atomic::{self, AcqRel, Cta, Gpu, Relaxed, Sys};
use nvshmem_device::thread::{block_idx_x, grid_dim_x, thread_idx_x};
use nvshmem_device::{Cmp, Pe, SignalOp, SymPtr, kernel, warp};
use plan::{BAD_EXPERT_BIT, FP8_GROUP, MAX_LOCAL_EXPERTS, MAX_UNITS, REFUSED_BIT, THREADS};
pub use plan::{MsgHead, Plan, RowSrc};

nvshmem_device::panic_handler!();

nvshmem_device::static_shared! {
    static HIST: [u32; MAX_LOCAL_EXPERTS as usize + 1];
    static OFFS: [u32; MAX_LOCAL_EXPERTS as usize + 1];
    static UNIT_PREFIX: [u32; MAX_UNITS as usize + 1];
    static FLAG: u32;
}

/// 16 bytes, the unit of every copy.
type V4 = [u32; 4];

#[inline(always)]
fn sym<T>(addr: u64) -> SymPtr<T> {
    // SAFETY: the host writes symmetric buffers' addresses into the plan.
    unsafe { SymPtr::from_raw(addr as *mut T) }
}

#[inline(always)]
fn local<T>(addr: u64) -> *mut T {
    addr as *mut T
}

#[inline(always)]
fn lane() -> u32 {
    thread_idx_x() % 32
}

#[inline(always)]
fn sync_threads() {
    nvshmem_device::thread::sync_threads();
}

/// Global warp number and warp count of the grid.
#[inline(always)]
fn warps() -> (u32, u32) {
    let per_block = THREADS / 32;
    (
        block_idx_x() * per_block + thread_idx_x() / 32,
        grid_dim_x() * per_block,
    )
}

/// Copies `bytes` (a multiple of 16) with the whole warp.
///
/// # Safety
/// Both ranges valid, 16-byte aligned, not overlapping.
#[inline(always)]
unsafe fn warp_copy(dst: *mut u8, src: *const u8, bytes: u32) {
    let (d, s) = (dst as *mut V4, src as *const V4);
    let mut i = lane();
    while i < bytes / 16 {
        // SAFETY: the caller's ranges.
        unsafe { *d.add(i as usize) = *s.add(i as usize) };
        i += 32;
    }
}

/// True in every thread of the block that finishes last among the grid's
/// blocks (counted in `*counter`, which it resets for the next launch).
/// Everything the other blocks wrote before is visible to it.
///
/// # Safety
/// Every thread of every block calls it once per launch; `counter` is a
/// local u32 that starts at 0.
#[inline(always)]
unsafe fn last_block(counter: *mut u32) -> bool {
    atomic::fence(AcqRel, Gpu);
    sync_threads();
    if thread_idx_x() == 0 {
        // SAFETY: a local counter (the caller's promise).
        let old = unsafe { atomic::fetch_add(counter, 1, AcqRel, Gpu) };
        let last = old + 1 == grid_dim_x();
        if last {
            // SAFETY: as above; every other block has counted.
            unsafe { atomic::store(counter, 0, atomic::Release, Gpu) };
        }
        // SAFETY: shared memory of this block.
        unsafe { FLAG.as_ptr().write_volatile(last as u32) };
    }
    sync_threads();
    // SAFETY: written above, before the barrier.
    let last = unsafe { FLAG.as_ptr().read_volatile() } != 0;
    atomic::fence(AcqRel, Gpu);
    last
}

/// Which of the `n` buckets of a running count entry `m` is in: the last
/// `i < n` with `prefix[i] <= m` (0 when there is none past the first).
///
/// # Safety
/// `prefix` holds `n` ascending `u32`s, readable by this thread.
#[inline(always)]
unsafe fn bucket_of(prefix: *const u32, n: u32, m: u32) -> u32 {
    let (mut lo, mut hi) = (0u32, n);
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        // SAFETY: mid < n (the caller's promise).
        if unsafe { *prefix.add(mid as usize) } <= m {
            lo = mid
        } else {
            hi = mid
        }
    }
    lo
}

/// Marks `bit` in this PE's status word.
#[inline(always)]
fn flag_status(p: &Plan, bit: u64) {
    // SAFETY: the plan's status word, local memory of this PE.
    unsafe { atomic::or(local::<u64>(p.status), bit, Relaxed, Sys) };
}

/// The expert of slot `k` of token `t`, or `None` (see [`plan::slot_expert`]);
/// an id out of range also flags the status word.
///
/// # Safety
/// `idx` holds the token's `topk` ids.
#[inline(always)]
unsafe fn expert(p: &Plan, idx: *const i32, t: u32, k: u32) -> Option<u32> {
    // SAFETY: the caller's ids.
    let ids =
        unsafe { core::slice::from_raw_parts(idx.add((t * p.topk) as usize), p.topk as usize) };
    let e = ids[k as usize];
    if e >= 0 && e as u32 >= p.experts {
        flag_status(p, BAD_EXPERT_BIT);
    }
    plan::slot_expert(ids, k as usize, p.experts)
}

/// Packs token `t` into `msg` with the warp: payload (bf16 copy or fp8 with
/// scales), then the head and the top-k ids and weights.
///
/// # Safety
/// `x` holds the token's `hidden` bf16, `idx`/`w` its `topk` entries, `msg`
/// has `msg_bytes`.
#[inline(always)]
unsafe fn pack(p: &Plan, msg: *mut u8, x: *const u16, idx: *const i32, w: *const f32, t: u32) {
    let h = p.hidden;
    // SAFETY (whole body): the caller's buffers and sizes.
    unsafe {
        let row = x.add(t as usize * h as usize);
        if p.fp8 == 0 {
            warp_copy(msg, row as *const u8, 2 * h);
        } else {
            let mut g = lane();
            while g < h / FP8_GROUP {
                let src = row.add((g * FP8_GROUP) as usize) as *const V4;
                let mut amax = 0.0f32;
                for i in 0..(FP8_GROUP / 8) as usize {
                    let v = *src.add(i);
                    for word in v {
                        for b in [word as u16, (word >> 16) as u16] {
                            let a = num::bf16_to_f32(b).abs();
                            amax = if a > amax { a } else { amax };
                        }
                    }
                }
                let (scale, inv) = num::fp8_scale(amax);
                let dst = msg.add((g * FP8_GROUP) as usize) as *mut V4;
                for i in 0..(FP8_GROUP / 16) as usize {
                    let (a, b) = (*src.add(2 * i), *src.add(2 * i + 1));
                    let mut out = [0u32; 4];
                    for (o, word) in out.iter_mut().enumerate() {
                        let pair = if o < 2 { a } else { b };
                        let lo = pair[2 * (o % 2)];
                        let hi = pair[2 * (o % 2) + 1];
                        let q = |v: u32, sh: u32| {
                            num::f32_to_e4m3(num::bf16_to_f32((v >> sh) as u16) * inv) as u32
                        };
                        *word = q(lo, 0) | q(lo, 16) << 8 | q(hi, 0) << 16 | q(hi, 16) << 24;
                    }
                    *dst.add(i) = out;
                }
                *(msg.add((h + 4 * g) as usize) as *mut f32) = scale;
                g += 32;
            }
        }
        let meta = msg.add(plan::payload_bytes(h, p.fp8 != 0) as usize);
        let k = lane();
        if k == 0 {
            *(meta as *mut MsgHead) = MsgHead {
                tok: t,
                k: u32::MAX,
            };
        }
        if k < p.topk {
            let ids = meta.add(8) as *mut i32;
            let ws = meta.add(8 + 4 * p.topk as usize) as *mut f32;
            *ids.add(k as usize) = *idx.add((t * p.topk + k) as usize);
            *ws.add(k as usize) = *w.add((t * p.topk + k) as usize);
        }
    }
    warp::sync(warp::FULL_MASK);
}

/// The seen-signal arrays: `(count, data, combine)`.
#[inline(always)]
fn seen(p: &Plan) -> (*mut u64, *mut u64, *mut u64) {
    let units = (p.buckets * p.n_pes) as usize;
    let base = local::<u64>(p.seen);
    // SAFETY: the plan's seen array has 2 · units + n_pes words.
    unsafe { (base, base.add(units), base.add(2 * units)) }
}

/// Dispatch, source side: count messages, then every token's messages.
/// `refused = 1`: send empty counts marked refused, and nothing else.
///
/// # Safety
/// `plan` is the host's plan on every PE; `x`, `idx`, `w` hold `tokens ≤
/// max_tokens` tokens (`hidden` bf16, `topk` i32 and f32 each), or `refused
/// = 1`; 256 threads; launched on every PE, in the order dispatch, combine.
#[kernel(max_threads = 256)]
pub unsafe fn moe_dispatch_send(
    plan: *const Plan,
    x: *const u16,
    idx: *const i32,
    w: *const f32,
    tokens: u32,
    refused: u32,
) {
    // SAFETY: the caller's.
    unsafe { send(&*plan, x, idx, w, tokens, refused, false) }
}

/// The unfused baseline's first step, a local permutation: what
/// [`moe_dispatch_send`] would send (normal mode) goes into this PE's
/// [`Plan::base_send`] (`[n_pes][max_tokens]` messages) and
/// [`Plan::base_counts`] (`[n_pes][count_words]`), for NVSHMEM's `alltoall`
/// into the peers' `stage` and `count_in`.
///
/// # Safety
/// As [`moe_dispatch_send`], on a normal-mode plan with the baseline buffers.
#[kernel(max_threads = 256)]
pub unsafe fn moe_base_pack(
    plan: *const Plan,
    x: *const u16,
    idx: *const i32,
    w: *const f32,
    tokens: u32,
) {
    // SAFETY: the caller's.
    unsafe { send(&*plan, x, idx, w, tokens, 0, true) }
}

/// The body of [`moe_dispatch_send`] (`base`: [`moe_base_pack`]).
///
/// # Safety
/// As [`moe_dispatch_send`].
#[inline(always)]
unsafe fn send(
    p: &Plan,
    x: *const u16,
    idx: *const i32,
    w: *const f32,
    tokens: u32,
    refused: u32,
    base: bool,
) {
    // SAFETY (whole body): the host's plan and buffers.
    unsafe {
        let tokens = if refused != 0 { 0 } else { tokens };
        let me = nvshmem_device::my_pe().index();
        let (np, l, cw) = (p.n_pes, p.local_experts, p.count_words);
        let tid = thread_idx_x();
        let hist = HIST.as_ptr() as *mut u32;
        // 1. Counts, one block per destination PE `q`.
        let mut q = block_idx_x();
        while q < np {
            let mut j = tid;
            while j <= l {
                *hist.add(j as usize) = 0; // hist[l]: tokens for q
                j += THREADS;
            }
            sync_threads();
            let mut t = tid;
            while t < tokens {
                let mut any = false;
                for k in 0..p.topk {
                    if let Some(e) = expert(p, idx, t, k)
                        && e / l == q
                    {
                        atomic::shared::add(hist.add((e % l) as usize), 1u32, Relaxed, Cta);
                        any = true;
                    }
                }
                if any {
                    atomic::shared::add(hist.add(l as usize), 1u32, Relaxed, Cta);
                }
                t += THREADS;
            }
            sync_threads();
            let flag = if refused != 0 { REFUSED_BIT } else { 0 };
            let count_in = sym::<u32>(p.count_in);
            let pe = Pe::new(q);
            if base {
                let v = local::<u32>(p.base_counts).add((q * cw) as usize);
                let mut j = tid;
                while j <= l {
                    *v.add(if j == l { 0 } else { 1 + j as usize }) = *hist.add(j as usize);
                    j += THREADS;
                }
            } else if p.low_latency != 0 {
                // Bucket j's count: its messages (rows of expert j).
                let mut j = tid;
                while j < l {
                    let unit = j * np + me;
                    nvshmem_device::p(
                        count_in.add((unit * cw) as usize),
                        *hist.add(j as usize) | flag,
                        pe,
                    );
                    nvshmem_device::quiet();
                    nvshmem_device::signal_op(
                        sym::<u64>(p.cnt_sig).add(unit as usize),
                        1,
                        SignalOp::Add,
                        pe,
                    );
                    j += THREADS;
                }
            } else {
                let base = count_in.add((me * cw) as usize);
                let mut j = tid;
                while j < l {
                    nvshmem_device::p(base.add(1 + j as usize), *hist.add(j as usize), pe);
                    j += THREADS;
                }
                if tid == 0 {
                    nvshmem_device::p(base, *hist.add(l as usize) | flag, pe);
                }
                nvshmem_device::quiet();
                sync_threads();
                if tid == 0 {
                    atomic::fence(AcqRel, Sys);
                    nvshmem_device::signal_op(
                        sym::<u64>(p.cnt_sig).add(me as usize),
                        1,
                        SignalOp::Add,
                        pe,
                    );
                }
            }
            if tid == 0 {
                let mut rows = 0;
                for j in 0..l {
                    rows += *hist.add(j as usize);
                }
                *local::<u32>(p.expect_rows).add(q as usize) = rows;
            }
            sync_threads();
            q += grid_dim_x();
        }
        // 2. Messages: a warp per token.
        let (gw, nw) = warps();
        let mb = p.msg_bytes;
        let stage = sym::<V4>(p.stage);
        let fill = local::<u32>(p.send_fill);
        let mut t = gw;
        while t < tokens {
            let msg = local::<u8>(p.send_buf).add(t as usize * mb as usize);
            pack(p, msg, x, idx, w, t);
            let put = |unit: u32, fill_at: u32, q: u32| {
                let mut slot = 0;
                if lane() == 0 {
                    slot = atomic::fetch_add(fill.add(fill_at as usize), 1, Relaxed, Gpu);
                }
                let slot = warp::shfl(slot, 0);
                let at = ((unit * p.max_tokens + slot) as usize) * (mb / 16) as usize;
                if base {
                    warp_copy(local::<u8>(p.base_send).add(16 * at), msg, mb);
                    return;
                }
                let sig = sym::<u64>(p.data_sig).add(unit as usize);
                nvshmem_device::put_signal_pod_warp(
                    stage.add(at),
                    msg as *const V4,
                    (mb / 16) as usize,
                    sig,
                    1,
                    SignalOp::Add,
                    Pe::new(q),
                );
            };
            if p.low_latency != 0 {
                let head =
                    msg.add(plan::payload_bytes(p.hidden, p.fp8 != 0) as usize) as *mut MsgHead;
                for k in 0..p.topk {
                    if let Some(e) = expert(p, idx, t, k) {
                        if lane() == 0 {
                            (*head).k = k;
                        }
                        warp::sync(warp::FULL_MASK);
                        put((e % l) * np + me, e, e / l);
                    }
                }
            } else {
                let mut mask = 0u32;
                for k in 0..p.topk {
                    if let Some(e) = expert(p, idx, t, k) {
                        mask |= 1 << (e / l);
                    }
                }
                while mask != 0 {
                    let q = mask.trailing_zeros();
                    mask &= mask - 1;
                    // The baseline's blocks are by destination.
                    put(if base { q } else { me }, q, q);
                }
            }
            t += nw;
        }
        if last_block(local::<u32>(p.done)) {
            let n = if p.low_latency != 0 { p.experts } else { np };
            let mut i = tid;
            while i < n {
                *fill.add(i as usize) = 0;
                i += THREADS;
            }
        }
    }
}

/// Dispatch, destination side: waits for every source's counts and
/// messages, writes the per-expert counts and offsets, and copies each
/// message's payload into its experts' rows (and each row's [`RowSrc`]).
///
/// # Safety
/// As [`moe_dispatch_send`], after it on this PE's stream.
#[kernel(max_threads = 256)]
pub unsafe fn moe_dispatch_recv(plan: *const Plan) {
    // SAFETY: the caller's.
    unsafe { recv(&*plan, true) }
}

/// The unfused baseline's last step, a local permutation: the messages and
/// counts NVSHMEM's `alltoall` put into `stage` and `count_in` into the
/// per-expert rows, as [`moe_dispatch_recv`] (which waits for signals
/// instead).
///
/// # Safety
/// As [`moe_dispatch_recv`], after the alltoalls on this PE's stream.
#[kernel(max_threads = 256)]
pub unsafe fn moe_base_unpack(plan: *const Plan) {
    // SAFETY: the caller's.
    unsafe { recv(&*plan, false) }
}

/// The body of [`moe_dispatch_recv`] (`wait = false`: [`moe_base_unpack`]).
///
/// # Safety
/// As [`moe_dispatch_recv`].
#[inline(always)]
unsafe fn recv(p: &Plan, wait: bool) {
    // SAFETY (whole body): the host's plan and buffers.
    unsafe {
        let me = nvshmem_device::my_pe().index();
        let (np, l, cw, tid) = (p.n_pes, p.local_experts, p.count_words, thread_idx_x());
        let units = p.buckets * np;
        let (seen_cnt, seen_data, _) = seen(p);
        let (cnt_sig, data_sig) = (sym::<u64>(p.cnt_sig), sym::<u64>(p.data_sig));
        let count_in = local::<u32>(p.count_in);
        let prefix = UNIT_PREFIX.as_ptr() as *mut u32;
        let (hist, offs) = (HIST.as_ptr() as *mut u32, OFFS.as_ptr() as *mut u32);
        // 1. Each unit's count, then its messages.
        let mut u = tid;
        while u < units {
            if wait {
                let c = *seen_cnt.add(u as usize) + 1;
                nvshmem_device::signal_wait_until(cnt_sig.add(u as usize), Cmp::Ge, c);
                atomic::fence(AcqRel, Sys);
            }
            let word = core::ptr::read_volatile(count_in.add((u * cw) as usize));
            if word & REFUSED_BIT != 0 && block_idx_x() == 0 {
                flag_status(p, 1 << (u % np));
            }
            let n = word & !REFUSED_BIT;
            *prefix.add(u as usize + 1) = n;
            if wait {
                let d = *seen_data.add(u as usize) + n as u64;
                nvshmem_device::signal_wait_until(data_sig.add(u as usize), Cmp::Ge, d);
                atomic::fence(AcqRel, Sys);
            }
            u += THREADS;
        }
        sync_threads();
        // 2. Rows per local expert, then the offsets.
        let mut j = tid;
        while j < l {
            let mut rows = 0;
            for s in 0..np {
                rows += if p.low_latency != 0 {
                    *prefix.add((j * np + s) as usize + 1)
                } else {
                    core::ptr::read_volatile(count_in.add((s * cw + 1 + j) as usize))
                };
            }
            *hist.add(j as usize) = rows;
            j += THREADS;
        }
        sync_threads();
        if tid == 0 {
            *prefix = 0;
            for u in 0..units as usize {
                *prefix.add(u + 1) += *prefix.add(u);
            }
            let mut off = 0u32;
            for j in 0..l as usize {
                *offs.add(j) = if p.low_latency != 0 {
                    j as u32 * np * p.max_tokens
                } else {
                    off
                };
                off = (off + *hist.add(j)).next_multiple_of(p.align);
            }
            *offs.add(l as usize) = if p.low_latency != 0 {
                l * np * p.max_tokens
            } else {
                off
            };
        }
        sync_threads();
        if block_idx_x() == 0 {
            let mut j = tid;
            while j <= l {
                if j < l {
                    *local::<u32>(p.expert_count).add(j as usize) = *hist.add(j as usize);
                }
                *local::<u32>(p.expert_offset).add(j as usize) = *offs.add(j as usize);
                j += THREADS;
            }
        }
        // 3. Messages into rows: a warp per message.
        let total = *prefix.add(units as usize);
        let (gw, nw) = warps();
        let (mb, h, fp8) = (p.msg_bytes, p.hidden, p.fp8 != 0);
        let row_bytes = if fp8 { h } else { 2 * h };
        let pay = plan::payload_bytes(h, fp8) as usize;
        let fill = local::<u32>(p.fill);
        let mut m = gw;
        while m < total {
            // The unit holding message m.
            let lo = bucket_of(prefix, units, m);
            let (u, i) = (lo, m - *prefix.add(lo as usize));
            let (b, s) = (u / np, u % np);
            let msg = local::<u8>(p.stage).add((u * p.max_tokens + i) as usize * mb as usize);
            let head = *(msg.add(pay) as *const MsgHead);
            let ids = msg.add(pay + 8) as *const i32;
            let ws = msg.add(pay + 8 + 4 * p.topk as usize) as *const f32;
            for k in 0..p.topk {
                let j = if p.low_latency != 0 {
                    if k != head.k {
                        continue;
                    }
                    b
                } else {
                    match expert(p, ids, 0, k) {
                        Some(e) if e / l == me => e % l,
                        _ => continue,
                    }
                };
                let mut slot = 0;
                if lane() == 0 {
                    slot = *offs.add(j as usize)
                        + atomic::fetch_add(fill.add(j as usize), 1, Relaxed, Gpu);
                    *local::<RowSrc>(p.row_src).add(slot as usize) = RowSrc {
                        pe: s,
                        tok: head.tok,
                        k,
                        w: *ws.add(k as usize),
                    };
                }
                let slot = warp::shfl(slot, 0);
                warp_copy(
                    local::<u8>(p.recv_x).add(slot as usize * row_bytes as usize),
                    msg,
                    row_bytes,
                );
                if fp8 {
                    let groups = h / FP8_GROUP;
                    let scales = local::<f32>(p.recv_scales).add((slot * groups) as usize);
                    let mut g = lane();
                    while g < groups {
                        *scales.add(g as usize) = *(msg.add((h + 4 * g) as usize) as *const f32);
                        g += 32;
                    }
                }
            }
            m += nw;
        }
        if last_block(local::<u32>(p.done).add(1)) {
            let mut u = if wait { tid } else { units };
            while u < units {
                *seen_cnt.add(u as usize) += 1;
                *seen_data.add(u as usize) +=
                    (*prefix.add(u as usize + 1) - *prefix.add(u as usize)) as u64;
                u += THREADS;
            }
            let mut j = tid;
            while j < l {
                *fill.add(j as usize) = 0;
                j += THREADS;
            }
        }
    }
}

/// Combine, destination side: puts each expert row of `y` (the rows of the
/// last dispatch, `hidden` bf16 each) back into its token's top-k slot on
/// its source PE. `refused = 1`: puts nothing, but signals every source as
/// if it had (so none waits) and flags its status word.
///
/// # Safety
/// As [`moe_dispatch_send`]; `y` holds `rows_cap × hidden` bf16 (or `refused
/// = 1`); after this PE's dispatch of the same round.
#[kernel(max_threads = 256)]
pub unsafe fn moe_combine_send(plan: *const Plan, y: *const u16, refused: u32) {
    // SAFETY (whole body): the host's plan and buffers.
    unsafe {
        let p = &*plan;
        let me = nvshmem_device::my_pe().index();
        let (np, l, tid) = (p.n_pes, p.local_experts, thread_idx_x());
        let count = local::<u32>(p.expert_count);
        let offset = local::<u32>(p.expert_offset);
        let comb_sig = sym::<u64>(p.comb_sig).add(me as usize);
        if refused != 0 {
            // Rows each source expects from this PE: its rows here.
            if block_idx_x() == 0 {
                let mut s = tid;
                while s < np {
                    let mut rows = 0u64;
                    for j in 0..l {
                        let (o, c) = (*offset.add(j as usize), *count.add(j as usize));
                        for r in o..o + c {
                            rows += ((*local::<RowSrc>(p.row_src).add(r as usize)).pe == s) as u64;
                        }
                    }
                    nvshmem_device::atomic_or(sym::<u64>(p.status), 1u64 << me, Pe::new(s));
                    nvshmem_device::quiet();
                    nvshmem_device::signal_op(comb_sig, rows, SignalOp::Add, Pe::new(s));
                    s += THREADS;
                }
            }
            return;
        }
        let prefix = HIST.as_ptr() as *mut u32;
        if tid == 0 {
            *prefix = 0;
            for j in 0..l as usize {
                *prefix.add(j + 1) = *prefix.add(j) + *count.add(j);
            }
        }
        sync_threads();
        let total = *prefix.add(l as usize);
        let (gw, nw) = warps();
        let h = p.hidden;
        let mut m = gw;
        while m < total {
            let lo = bucket_of(prefix, l, m);
            let slot = *offset.add(lo as usize) + m - *prefix.add(lo as usize);
            let src = *local::<RowSrc>(p.row_src).add(slot as usize);
            let dst = sym::<V4>(p.comb).add((src.tok * p.topk + src.k) as usize * (h / 8) as usize);
            let row = y.add(slot as usize * h as usize) as *const V4;
            nvshmem_device::put_signal_pod_warp(
                dst,
                row,
                (h / 8) as usize,
                comb_sig,
                1,
                SignalOp::Add,
                Pe::new(src.pe),
            );
            m += nw;
        }
    }
}

/// Combine, source side: waits for every row its tokens sent out, then
/// `out[t] = Σ_k w[t][k] · row[t][k]` (f32, rounded to bf16 once) over the
/// slots that routed somewhere; a token that routed nowhere gets zeros.
///
/// # Safety
/// As [`moe_dispatch_send`]; `idx`, `w` are the last dispatch's, `out` holds
/// `tokens × hidden` bf16, `tokens` is the last dispatch's (0 to only
/// consume the signals).
#[kernel(max_threads = 256)]
pub unsafe fn moe_combine_recv(
    plan: *const Plan,
    idx: *const i32,
    w: *const f32,
    out: *mut u16,
    tokens: u32,
) {
    // SAFETY (whole body): the host's plan and buffers.
    unsafe {
        let p = &*plan;
        let (np, tid) = (p.n_pes, thread_idx_x());
        let (_, _, seen_comb) = seen(p);
        let expect = local::<u32>(p.expect_rows);
        let mut q = tid;
        while q < np {
            let v = *seen_comb.add(q as usize) + *expect.add(q as usize) as u64;
            nvshmem_device::signal_wait_until(sym::<u64>(p.comb_sig).add(q as usize), Cmp::Ge, v);
            atomic::fence(AcqRel, Sys);
            q += THREADS;
        }
        sync_threads();
        let (gw, nw) = warps();
        let h = p.hidden;
        let comb = local::<V4>(p.comb);
        let mut t = gw;
        while t < tokens {
            let mut c = lane();
            while c < h / 8 {
                let mut acc = [0.0f32; 8];
                for k in 0..p.topk {
                    if expert(p, idx, t, k).is_none() {
                        continue;
                    }
                    let wk = *w.add((t * p.topk + k) as usize);
                    let v = *comb.add((t * p.topk + k) as usize * (h / 8) as usize + c as usize);
                    for (i, word) in v.iter().enumerate() {
                        acc[2 * i] += wk * num::bf16_to_f32(*word as u16);
                        acc[2 * i + 1] += wk * num::bf16_to_f32((*word >> 16) as u16);
                    }
                }
                let mut o = [0u32; 4];
                for (i, word) in o.iter_mut().enumerate() {
                    let lo = nvshmem_device::math::bf16_from_f32(acc[2 * i]).to_bits() as u32;
                    let hi = nvshmem_device::math::bf16_from_f32(acc[2 * i + 1]).to_bits() as u32;
                    *word = lo | hi << 16;
                }
                *(out as *mut V4).add(t as usize * (h / 8) as usize + c as usize) = o;
                c += 32;
            }
            t += nw;
        }
        if last_block(local::<u32>(p.done).add(3)) {
            let mut q = tid;
            while q < np {
                *seen_comb.add(q as usize) += *expect.add(q as usize) as u64;
                q += THREADS;
            }
        }
    }
}
