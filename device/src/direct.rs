//! The direct-copy path of `put`/`get` (typed, `_pod`, `_nbi`, every scope)
//! for a peer that this GPU reaches with loads and stores: `nvshmem_ptr` is
//! not null (the same GPU, or P2P over NVLink or PCIe).
//!
//! Why not NVSHMEM's own P2P path: the copy loop in its device bitcode moves
//! 16 bytes as four 32-bit loads and one volatile vector store, in a loop
//! marked not to unroll, so each thread has one step in flight; mid-size puts
//! ran 1.5–3× slower than the same C++ built from NVSHMEM's headers
//! (BENCHMARKS.md). Here each thread moves 16-byte words when source and
//! destination share their alignment (else 8, 4 or 1), in a loop that
//! unrolls. Peers without a pointer (remote transports) take NVSHMEM's path.
//!
//! The semantics are those of NVSHMEM's P2P path as its headers compile it
//! for C++: plain loads and stores, which `fence` orders and `quiet` completes
//! (both fence at system scope), and the acquire of a `wait_until`, barrier or
//! signal wait makes a peer's writes visible to later loads.
//!
//! A warp- or block-scope call synchronizes its group **before** the copy and
//! after it, as NVSHMEM's `nvshmemi_{put,get}{,_nbi}_threadgroup` do: before,
//! so that a thread copies what the other threads of the group wrote to the
//! source just before the call (a block that stages its data and then calls
//! `put_block`), and overwrites nothing that they still read (`get_block`
//! into a buffer in use); after, so that a returning call's copies are all
//! done. The group's threads share every word of the copy, so without the
//! first barrier a fast warp would copy a slow warp's unfinished writes.

use crate::__private::Scope;
use crate::thread;
use core::mem::size_of;

/// This thread's lane in the group that shares the copy, and the group's size.
#[inline(always)]
fn lanes(scope: Scope) -> (usize, usize) {
    match scope {
        Scope::Thread => (0, 1),
        Scope::Warp => (thread::lane_id() as usize, thread::WARP_SIZE as usize),
        Scope::Block => (
            thread::block_thread_rank() as usize,
            thread::block_size() as usize,
        ),
    }
}

/// Waits for the group: before a copy (every thread's writes to the source,
/// and reads of the destination, are done) and after it (the copy is done).
#[inline(always)]
fn group_sync(scope: Scope) {
    match scope {
        Scope::Thread => {}
        Scope::Warp => thread::sync_warp(),
        Scope::Block => thread::sync_threads(),
    }
}

/// `len` bytes as words of `W` (with byte-wise head and tail), lane `lane` of
/// `lanes` taking every `lanes`-th word. `dst` and `src` must have the same
/// address modulo `size_of::<W>()`.
#[inline(always)]
unsafe fn copy_as<W: Copy>(dst: *mut u8, src: *const u8, len: usize, lane: usize, lanes: usize) {
    let w = size_of::<W>();
    let head = ((w - dst as usize % w) % w).min(len);
    let words = (len - head) / w;
    let tail = head + words * w;
    let mut i = lane;
    while i < head {
        // SAFETY: within both ranges.
        unsafe { *dst.add(i) = *src.add(i) };
        i += lanes;
    }
    // SAFETY: `head` aligns both to `W` (same residue), and the words end
    // within `len`.
    let (d, s) = unsafe { (dst.add(head) as *mut W, src.add(head) as *const W) };
    let mut i = lane;
    while i < words {
        // SAFETY: as above.
        unsafe { d.add(i).write(s.add(i).read()) };
        i += lanes;
    }
    let mut i = tail + lane;
    while i < len {
        // SAFETY: within both ranges.
        unsafe { *dst.add(i) = *src.add(i) };
        i += lanes;
    }
}

/// The largest copy the small path takes (one access, or a few bytes, by lane 0).
const SMALL: usize = 8;

/// Whether `scope` copies 16-byte words with the software-pipelined loop
/// ([`copy_words16_pipe`]): block scope. On an H100 (issue 24) it made
/// one-block 32 KiB – 512 KiB puts and gets 1.01–1.03x the C++ twin, from
/// 1.07–1.09x with [`copy_words16`]; in warp scope it was slower, in thread
/// scope no faster.
#[inline(always)]
const fn pipelined(scope: Scope) -> bool {
    matches!(scope, Scope::Block)
}

/// Whether thread scope copies one 16-byte word at a time, each load then its
/// store ([`copy_words16_serial`]), as NVSHMEM's thread copy compiles: the
/// `copy-thread-serial` candidate, off by default. On an H100 (issue 24) it
/// matched the C++ twin on every thread-scope row (0.96–1.02x), where the
/// default's four loads in flight run 1.38–1.5x at 32 KiB (one to sixteen
/// blocks of 128 threads, 256 bytes each) but 0.5–0.7x at most other sizes;
/// two loads in flight ran 1.24x at 32 KiB, four to distinct sectors 1.38x,
/// four as a rolling pipeline (each store, then the load four words ahead)
/// 1.10x but 0.65–0.85x where the default runs 0.5–0.7x, four through
/// `ld.cg` (bypassing L1) 1.29x. Every row's geomean: 0.94 with it, 0.90
/// without (0.91 rolling, 0.95 `ld.cg`).
const THREAD_SERIAL: bool = cfg!(feature = "copy-thread-serial");

/// Synchronizes the group of `scope`, copies `len` bytes with it, then
/// synchronizes it again (see the module docs). The common case (both
/// addresses and the length multiples of 16) is inlined and unrolled; it adds
/// registers to a kernel (the all-reduce example went from 95 to ~150 before
/// it moved its remote fallback to the raw layer).
///
/// Any other copy of at most [`SMALL`] bytes is one access (or a few bytes) by
/// lane 0, inlined in thread and warp scope and through
/// [`copy_small_out_of_line`] in block scope, not [`copy_general`]'s loops. On
/// an H100 (issue 24) this made 8-byte puts and gets 0.91–0.94x the C++ twin
/// from 1.06x, latencies 0.95x from 0.97x, and block scope's 8-byte rows
/// 1.03x from 1.17x.
#[inline(always)]
unsafe fn copy(scope: Scope, dst: *mut u8, src: *const u8, len: usize) {
    let (lane, n) = lanes(scope);
    group_sync(scope);
    // SAFETY: the caller's ranges; the inlined loop needs 16-byte alignment.
    unsafe {
        if (dst as usize | src as usize | len).is_multiple_of(16) {
            if THREAD_SERIAL && matches!(scope, Scope::Thread) {
                copy_words16_serial(dst.cast(), src.cast(), len / 16)
            } else if pipelined(scope) {
                copy_words16_pipe(dst.cast(), src.cast(), len / 16, lane, n)
            } else {
                copy_words16(dst.cast(), src.cast(), len / 16, lane, n)
            }
        } else if len <= SMALL {
            if lane == 0 {
                if matches!(scope, Scope::Block) {
                    copy_small_out_of_line(dst, src, len)
                } else {
                    copy_small(dst, src, len)
                }
            }
        } else {
            copy_general(dst, src, len, lane, n)
        }
    }
    group_sync(scope);
}

/// [`copy_small`] out of line and cold, for block scope's small arm. Inlined
/// there, ptxas laid it out as the fall-through after the 16-byte test, the
/// hot 16-byte loop behind a taken branch (`core::hint::cold_path` did not
/// move it), and block scope's 32 B – 512 KiB rows ran 1.13–1.14x the C++
/// twin instead of 1.07–1.09x; out of line they run 1.00–1.01x (H100, issue
/// 24).
#[cold]
#[inline(never)]
unsafe fn copy_small_out_of_line(dst: *mut u8, src: *const u8, len: usize) {
    // SAFETY: the caller's.
    unsafe { copy_small(dst, src, len) }
}

/// At most [`SMALL`] bytes by one thread: one access when `len` is 8, 4 or
/// 2 and both addresses are aligned to it (a `p`-sized put), else bytes.
/// Ordered tests, not a `match`: LLVM made the `match` a jump table (an
/// indexed constant load and an indirect branch, `BRX`, on every call);
/// 8-byte put/get ran 0.914 of the C++ twin's time with it, 0.850 without
/// (issue 24 run 9).
#[inline(always)]
unsafe fn copy_small(dst: *mut u8, src: *const u8, len: usize) {
    let both = dst as usize | src as usize;
    // SAFETY: the caller's ranges of `len` bytes; each width's alignment checked.
    unsafe {
        if len == 8 && both.is_multiple_of(8) {
            dst.cast::<u64>().write(src.cast::<u64>().read())
        } else if len == 4 && both.is_multiple_of(4) {
            dst.cast::<u32>().write(src.cast::<u32>().read())
        } else if len == 2 && both.is_multiple_of(2) {
            dst.cast::<u16>().write(src.cast::<u16>().read())
        } else {
            for i in 0..len {
                *dst.add(i) = *src.add(i);
            }
        }
    }
}

/// `words` 16-byte words, lane `lane` of `lanes` taking every `lanes`-th,
/// four loads before their stores, so that each thread keeps four words in
/// flight (measured: up to 2x the bandwidth of one at a time, in every scope;
/// the compiler does not unroll a loop whose stride is the group size). No
/// head or tail: the fast path's alignment is checked once, by the caller.
#[inline(always)]
unsafe fn copy_words16(d: *mut u128, s: *const u128, words: usize, lane: usize, lanes: usize) {
    let mut i = lane;
    // The bound of the unrolled loop, computed once (`i + 3·lanes < words`).
    let unrolled_end = words.saturating_sub(3 * lanes);
    while i < unrolled_end {
        // SAFETY: the caller's ranges hold `words` words; the last read,
        // `i + 3·lanes`, is below `words`.
        unsafe {
            let w0 = s.add(i).read();
            let w1 = s.add(i + lanes).read();
            let w2 = s.add(i + 2 * lanes).read();
            let w3 = s.add(i + 3 * lanes).read();
            d.add(i).write(w0);
            d.add(i + lanes).write(w1);
            d.add(i + 2 * lanes).write(w2);
            d.add(i + 3 * lanes).write(w3);
        }
        i += 4 * lanes;
    }
    while i < words {
        // SAFETY: as above.
        unsafe { d.add(i).write(s.add(i).read()) };
        i += lanes;
    }
}

/// [`copy_words16`] software-pipelined: the next four words of this lane are
/// loaded before the current four are stored, so that eight loads can be in
/// flight instead of four (16 more registers).
#[inline(always)]
unsafe fn copy_words16_pipe(d: *mut u128, s: *const u128, words: usize, lane: usize, lanes: usize) {
    // SAFETY (every access): the caller's ranges hold `words` words; a batch
    // at `i < unrolled_end` reads up to `i + 3·lanes < words`.
    let load = |i: usize| unsafe {
        [
            s.add(i).read(),
            s.add(i + lanes).read(),
            s.add(i + 2 * lanes).read(),
            s.add(i + 3 * lanes).read(),
        ]
    };
    let store = |i: usize, w: [u128; 4]| unsafe {
        d.add(i).write(w[0]);
        d.add(i + lanes).write(w[1]);
        d.add(i + 2 * lanes).write(w[2]);
        d.add(i + 3 * lanes).write(w[3]);
    };
    let step = 4 * lanes;
    let unrolled_end = words.saturating_sub(3 * lanes);
    let mut i = lane;
    if i < unrolled_end {
        let mut w = load(i);
        let mut next = i + step;
        while next < unrolled_end {
            let ahead = load(next);
            store(i, w);
            w = ahead;
            i = next;
            next += step;
        }
        store(i, w);
        i = next;
    }
    while i < words {
        // SAFETY: as above.
        unsafe { d.add(i).write(s.add(i).read()) };
        i += lanes;
    }
}

/// `words` 16-byte words by one thread, each load followed by its store (the
/// order of NVSHMEM's thread copy: one load in flight).
#[inline(always)]
unsafe fn copy_words16_serial(d: *mut u128, s: *const u128, words: usize) {
    for i in 0..words {
        // SAFETY: the caller's ranges hold `words` words.
        unsafe { d.add(i).write(s.add(i).read()) };
    }
}

/// Any other alignment, out of line: inlining every width's loop at each put
/// and get costs a kernel that calls several of them its registers.
#[inline(never)]
unsafe fn copy_general(dst: *mut u8, src: *const u8, len: usize, lane: usize, n: usize) {
    // SAFETY: the caller's ranges.
    unsafe { copy_widest(dst, src, len, lane, n) }
}

/// The widest word whose alignment the two addresses share and that the
/// length fills at least once; the ends not so aligned go byte-wise.
#[inline(always)]
unsafe fn copy_widest(dst: *mut u8, src: *const u8, len: usize, lane: usize, n: usize) {
    let shared = dst as usize ^ src as usize;
    let fits = |w: usize| shared.is_multiple_of(w) && len >= w;
    // SAFETY: the caller's ranges; each width's alignment condition is checked.
    unsafe {
        if fits(16) {
            copy_as::<u128>(dst, src, len, lane, n)
        } else if fits(8) {
            copy_as::<u64>(dst, src, len, lane, n)
        } else if fits(4) {
            copy_as::<u32>(dst, src, len, lane, n)
        } else {
            copy_as::<u8>(dst, src, len, lane, n)
        }
    }
}

/// A put of `len` bytes from local `src` to `peer`, an address that
/// `nvshmem_ptr` returned.
///
/// # Safety
/// Both ranges valid for `len` bytes; every thread of the group calls it with
/// the same arguments.
#[inline(always)]
pub(crate) unsafe fn put(scope: Scope, peer: *mut u8, src: *const u8, len: usize) {
    // SAFETY: the caller's.
    unsafe { copy(scope, peer, src, len) }
}

/// A get of `len` bytes from `peer` (from `nvshmem_ptr`) to local `dst`.
///
/// # Safety
/// As [`put`].
#[inline(always)]
pub(crate) unsafe fn get(scope: Scope, dst: *mut u8, peer: *const u8, len: usize) {
    // SAFETY: the caller's.
    unsafe { copy(scope, dst, peer, len) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast path: every lane of a group together copies exactly `words`
    /// 16-byte words, for counts around the unrolled loop's bound.
    #[test]
    fn every_lane_together_copies_exactly_the_words() {
        let src: [u128; 200] = core::array::from_fn(|i| i as u128 * 0x1_0000_0001 + 7);
        for lanes in [1usize, 3, 32, 128] {
            for words in (0..140).chain([199]) {
                for kind in ["default", "pipe"] {
                    let mut dst = [0u128; 200];
                    for lane in 0..lanes {
                        let (d, s) = (dst.as_mut_ptr(), src.as_ptr());
                        // SAFETY: both arrays hold 200 words, `words` < 200.
                        unsafe {
                            match kind {
                                "pipe" => copy_words16_pipe(d, s, words, lane, lanes),
                                _ => copy_words16(d, s, words, lane, lanes),
                            }
                        };
                    }
                    for (i, &w) in dst.iter().enumerate() {
                        let want = if i < words { src[i] } else { 0 };
                        assert_eq!(w, want, "{kind} lanes {lanes} words {words}: word {i}");
                    }
                }
            }
        }
    }

    /// The serial thread-scope loop copies exactly `words` words.
    #[test]
    fn serial_thread_copy_is_exact() {
        let src: [u128; 40] = core::array::from_fn(|i| i as u128 * 3 + 1);
        for words in 0..40 {
            let mut dst = [0u128; 40];
            // SAFETY: both arrays hold 40 words, `words` < 40.
            unsafe { copy_words16_serial(dst.as_mut_ptr(), src.as_ptr(), words) };
            for (i, &w) in dst.iter().enumerate() {
                assert_eq!(
                    w,
                    if i < words { src[i] } else { 0 },
                    "words {words}: word {i}"
                );
            }
        }
    }

    /// The small path copies exactly `len` bytes at every alignment.
    #[test]
    fn small_copies_are_exact() {
        #[repr(align(16))]
        struct Buf([u8; 32]);
        let src = Buf(core::array::from_fn(|i| i as u8 + 1));
        for len in 0..=SMALL {
            for soff in 0..9 {
                for doff in 0..9 {
                    let mut dst = Buf([0; 32]);
                    // SAFETY: offsets + len stay within both 32-byte buffers.
                    unsafe {
                        copy_small(dst.0.as_mut_ptr().add(doff), src.0.as_ptr().add(soff), len)
                    };
                    for (i, &b) in dst.0.iter().enumerate() {
                        let want = if (doff..doff + len).contains(&i) {
                            src.0[soff + i - doff]
                        } else {
                            0
                        };
                        assert_eq!(b, want, "src+{soff} dst+{doff} len {len}: byte {i}");
                    }
                }
            }
        }
    }

    /// Every lane of a group, run one after another, copies exactly the bytes
    /// asked for, at every alignment mix, length and group size.
    #[test]
    fn every_lane_together_copies_exactly_the_range() {
        #[repr(align(16))]
        struct Buf([u8; 400]);
        let src = Buf(core::array::from_fn(|i| (i * 7 + 3) as u8 | 1));
        for lanes in [1usize, 3, 32] {
            for soff in 0..20 {
                for doff in 0..20 {
                    for len in [
                        0usize, 1, 2, 3, 4, 7, 8, 15, 16, 17, 31, 33, 64, 100, 255, 333,
                    ] {
                        let mut dst = Buf([0; 400]);
                        for lane in 0..lanes {
                            // SAFETY: offsets + len stay within both 400-byte buffers.
                            unsafe {
                                let (d, s) =
                                    (dst.0.as_mut_ptr().add(doff), src.0.as_ptr().add(soff));
                                copy_widest(d, s, len, lane, lanes)
                            }
                        }
                        for (i, &b) in dst.0.iter().enumerate() {
                            let want = if (doff..doff + len).contains(&i) {
                                src.0[soff + i - doff]
                            } else {
                                0
                            };
                            assert_eq!(
                                b, want,
                                "lanes {lanes} src+{soff} dst+{doff} len {len}: byte {i}"
                            );
                        }
                    }
                }
            }
        }
    }
}
