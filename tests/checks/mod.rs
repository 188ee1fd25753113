//! The host checks of representative kernels, as functions of what a kernel
//! left in its buffers (copied to host memory). The GPU tests call them on
//! what came back from the GPU; `tests/checks.rs` (CPU only, in CI) calls
//! the same functions on deliberately broken outputs (a kernel that did
//! nothing, leaving its poisoned destination untouched, or one that wrote
//! one element short) and shows that they reject them.
#![allow(dead_code)]

use nvshmem_host::harness::{TestResult, check_eq, ensure};

/// The value the runtime kernels' `pattern` gives for PE `pe`, index `i`, round `round`.
pub fn pattern(pe: u32, i: usize, round: u64) -> u64 {
    (pe as u64 + 1) * 1_000_000 + i as u64 * 7 + round
}

/// What PE `pe` sends at index `i` in `put_block_to_next`.
pub fn put_block_value(pe: u32, i: usize) -> f32 {
    pe as f32 * 1000.0 + i as f32
}

/// `put_block_to_next`: this PE's `dest` holds the previous PE's `n` values.
pub fn put_block(prev: u32, n: usize, dest: &[f32]) -> TestResult {
    let want: Vec<f32> = (0..n).map(|i| put_block_value(prev, i)).collect();
    check_eq("put_block_to_next", dest, &want)
}

/// `iput_every_other`: `dest[2 i]` holds element `i` of the previous PE's
/// source (`prev * 1000 + i`), the odd elements still hold `poison`.
pub fn iput(prev: u32, n: usize, poison: i32, dest: &[i32]) -> TestResult {
    let want: Vec<i32> = (0..2 * n)
        .map(|j| {
            if j % 2 == 0 {
                prev as i32 * 1000 + j as i32 / 2
            } else {
                poison
            }
        })
        .collect();
    check_eq("iput_every_other", dest, &want)
}

/// `ring_put_signal` of `n` elements, round `round`: `recv` holds the
/// previous PE's pattern of this round, `signal` the round, and the kernel's own count of wrong
/// elements (`errors[0]`) is 0.
pub fn put_signal_ring(
    prev: u32,
    (n, round): (usize, u64),
    (recv, signal, errors): (&[u64], u64, u32),
) -> TestResult {
    let want: Vec<u64> = (0..n).map(|i| pattern(prev, i, round)).collect();
    let what = |w: &str| format!("ring_put_signal (round {round}: {w})");
    check_eq(&what("what arrived"), recv, &want)?;
    check_eq(&what("signal"), &[signal], &[round])?;
    check_eq(
        &what("the kernel's count of wrong elements"),
        &[errors],
        &[0],
    )
}

/// `rma_path`: `out[0]` is 1 for the direct path, 0 for NVSHMEM's, and the
/// build must take `expected` (`direct` or `nvshmem`).
pub fn rma_path(out: u32, expected: &str) -> TestResult {
    let built = match out {
        1 => "direct",
        0 => "nvshmem",
        other => return Err(format!("kernel `rma_path` wrote {other:#x}, not 0 or 1").into()),
    };
    ensure(matches!(expected, "direct" | "nvshmem"), || {
        format!("the expected RMA path is `{expected}`, not `direct` or `nvshmem`")
    })?;
    ensure(built == expected, || {
        format!("the kernels take the {built} path, expected the {expected} path")
    })
}

/// `team_info`: `[team rank, team size, world PE of team rank 0, team rank]`.
pub fn team_info(out: &[i32], rank: i32, members: &[u32]) -> TestResult {
    check_eq(
        "team_info",
        out,
        &[rank, members.len() as i32, members[0] as i32, rank],
    )
}

/// Element-wise `fold` over the `members`' inputs at `base..base + n`,
/// where `val(pe, i)` is PE `pe`'s input element `i`.
pub fn reduced<T>(
    members: &[u32],
    base: usize,
    n: usize,
    val: impl Fn(u32, usize) -> T,
    fold: fn(T, T) -> T,
) -> Vec<T> {
    (0..n)
        .map(|i| {
            let mut vals = members.iter().map(|&p| val(p, base + i));
            let first = vals.next().expect("a team has members");
            vals.fold(first, fold)
        })
        .collect()
}

/// A collective's destination: the first `want.len()` elements are `want`,
/// and the rest (beyond what the team writes) still hold `poison`, bit for
/// bit (a NaN poison equals nothing, itself included).
pub fn destination<T: bytemuck::Pod + PartialEq + std::fmt::Debug>(
    label: &str,
    got: &[T],
    want: &[T],
    poison: T,
) -> TestResult {
    ensure(got.len() >= want.len(), || {
        format!(
            "kernel `{label}`: {} elements, expected at least {}",
            got.len(),
            want.len()
        )
    })?;
    check_eq(label, &got[..want.len()], want)?;
    let bytes = |v: &T| bytemuck::bytes_of(v).to_vec();
    let rest: Vec<Vec<u8>> = got[want.len()..].iter().map(bytes).collect();
    check_eq(
        &format!("{label} (bytes past the team's part: untouched)"),
        &rest,
        &vec![bytes(&poison); rest.len()],
    )
}

/// The collectives tests' i32 input of PE `pe` at index `i`: small, of both
/// signs, so products of 4 stay exact.
pub fn collective_i32(pe: u32, i: usize) -> i32 {
    ((pe as i32 + 1) * 53 + i as i32 * 27) % 97 - 40
}

/// `cp_async_copy`'s result for source `src`: 16-byte chunk `c` is copied,
/// but for the zero-fill forms (`c % 6` 4 and 5), whose bytes from
/// `c % 17` on are zero (the kernel's shared memory held non-zero bytes
/// before).
pub fn cp_async_copy(src: &[u8], dst: &[u8]) -> TestResult {
    let want: Vec<u8> = (0..src.len())
        .map(|i| {
            let c = i / 16;
            if c % 6 >= 4 && i % 16 >= c % 17 {
                0
            } else {
                src[i]
            }
        })
        .collect();
    check_eq("cp_async_copy", dst, &want)
}

/// (initial value, expected final value; `None` for slots checked otherwise).
pub type Slots<T> = Vec<(T, Option<T>)>;

/// Slots of `atomics_global`'s `w` (u32) and `d` (u64) for `t` threads on
/// an `sm_<sm>` build. No expected value equals its slot's initial value,
/// so a kernel that skipped an operation fails (`atomics_global` checks that).
pub fn atomic_slots(t: u32, sm: u32) -> (Slots<u32>, Slots<u64>) {
    let dec =
        |limit: u32| (0..t).fold(0u32, |v, _| if v == 0 || v > limit { limit } else { v - 1 });
    let max7 = (0..t).map(|g| g * 7 % 1000).max().unwrap();
    let xor_bits = (0..t).fold(0u32, |v, g| v ^ 1 << (g % 32));
    let f16 = |x: f32| half::f16::from_f32(x).to_bits() as u32;
    let bf16 = |x: f32| half::bf16::from_f32(x).to_bits() as u32;
    let w = vec![
        (0, Some(t)),
        (0, Some(2 * t)),
        (3 * t, Some(2 * t)),
        (0, Some(!0)),
        (!0, Some(0)),
        (0, Some(xor_bits)),
        (0, Some(max7)),
        (u32::MAX, Some(5)),
        (0, Some(t % 10)),
        (0, Some(dec(9))),
        (0, Some(t % 16)),
        (0, Some(3 * t)),
        (1_000_000, None),
        (0, Some(-(t as i32 - 1) as u32)),
        (i32::MIN as u32, Some((t as i32 - 1 - 100) as u32)),
        (0, Some(t)),
        (0, Some(t)),
        (0, Some(f16(t as f32) | f16(t as f32 * 0.5) << 16)),
        (
            0,
            Some(if sm >= 90 {
                bf16(64.0) | bf16(16.0) << 16
            } else {
                0xdead_beef
            }),
        ),
        (0, Some(dec(4))),
        (0, Some(t % 2)),
        (0, Some(42)),
        (7, None),
        (0, Some((t as f32 * 0.5).to_bits())),
        (10 * t, Some(7 * t)),
        (0, Some(t)),
    ];
    let t64 = t as u64;
    let d = vec![
        (0, Some(t64 << 33)),
        (0, Some((-(t as i64)) as u64)),
        (0, Some(if t >= 64 { !0 } else { (1 << t) - 1 })),
        (i64::MIN as u64, Some(((t as i64 - 1) * 3 - 1000) as u64)),
        (0, Some((t as f64 * 0.25).to_bits())),
        (0, Some((t as f64 * 1.5).to_bits())),
        (0, Some(5.0f64.to_bits())),
        (0, Some(5 * t64)),
        (u64::MAX, None),
        (0, Some((-(t as i64 - 1)) as u64)),
        (10 * t64, Some(8 * t64)),
        (0, Some(if t.is_multiple_of(2) { 0 } else { 1 << 40 })),
        (u64::MAX, Some(if t >= 64 { 0 } else { !((1u64 << t) - 1) })),
    ];
    (w, d)
}

/// `atomics_global` on `t` threads: the final `w` and `d` (see
/// [`atomic_slots`]), each thread's `fetch_add` ticket and the values its
/// `swap` of slot 12 returned.
pub fn atomics_global(
    t: u32,
    sm: u32,
    (gw, gd): (&[u32], &[u64]),
    (tickets, olds): (&[u32], &[u32]),
) -> TestResult {
    let (w, d) = atomic_slots(t, sm);
    ensure(gw.len() == w.len() && gd.len() == d.len(), || {
        format!(
            "atomics_global: {} and {} slots, expected {} and {}",
            gw.len(),
            gd.len(),
            w.len(),
            d.len()
        )
    })?;
    for (i, (init, want)) in w.iter().enumerate() {
        ensure(*want != Some(*init), || {
            format!("atomics_global: w[{i}] expects its initial value {init:#x}: a no-op passes")
        })?;
    }
    for (i, (init, want)) in d.iter().enumerate() {
        ensure(*want != Some(*init), || {
            format!("atomics_global: d[{i}] expects its initial value {init:#x}: a no-op passes")
        })?;
    }
    for (i, (g, (_, want))) in gw.iter().zip(&w).enumerate() {
        if let Some(want) = want {
            ensure(g == want, || {
                format!("atomics_global: w[{i}] is {g:#x}, expected {want:#x}")
            })?;
        }
    }
    for (i, (g, (_, want))) in gd.iter().zip(&d).enumerate() {
        if let Some(want) = want {
            ensure(g == want, || {
                format!("atomics_global: d[{i}] is {g:#x}, expected {want:#x}")
            })?;
        }
    }
    let mut got = tickets.to_vec();
    got.sort();
    check_eq(
        "atomics_global (fetch_add tickets)",
        &got,
        &(0..t).collect::<Vec<_>>(),
    )?;
    // swap: the old values and the final one are the initial value and every thread's index.
    let mut seen = olds.to_vec();
    seen.push(gw[12]);
    seen.sort();
    let mut want: Vec<u32> = (0..t).chain([1_000_000]).collect();
    want.sort();
    check_eq("atomics_global (swap)", &seen, &want)?;
    ensure(gd[8] < t as u64, || {
        format!("atomics_global: d[8] (swap) is {}", gd[8])
    })?;
    ensure((8..t + 8).contains(&gw[22]), || {
        format!(
            "atomics_global: w[22] (one compare_exchange of 7 wins) is {}, expected 8..{}",
            gw[22],
            t + 8
        )
    })
}
