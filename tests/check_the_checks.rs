//! Tests of the GPU tests' checks, on the CPU (they run in CI): for
//! representative kernels, the check the GPU test runs (`tests/checks`)
//! accepts the correct output and rejects deliberately broken ones, built in
//! host memory: a kernel that did nothing (its poisoned destination left as
//! it was), one that wrote one element short, and the failure each kernel's
//! old check let through (a zeroed destination, a counter that starts at 0).

mod checks;
use nvshmem_host::harness::{Poison, TestResult, sentinel_seed};

/// The poison of a test, as its GPU run would have it.
fn poison<T: Poison>(test: &str) -> T {
    T::poison(sentinel_seed(test))
}

/// Asserts `check` accepts `good` and rejects a no-op (every element the
/// poison) and an output one element short (the last one the poison).
fn rejects_noop_and_short<T: Clone>(
    what: &str,
    good: &[T],
    poison: T,
    check: impl Fn(&[T]) -> TestResult,
) {
    if let Err(e) = check(good) {
        panic!("{what}: the correct output was rejected: {e}");
    }
    let noop = vec![poison.clone(); good.len()];
    assert!(check(&noop).is_err(), "{what}: a no-op passed");
    let mut short = good.to_vec();
    *short.last_mut().expect("not empty") = poison;
    assert!(check(&short).is_err(), "{what}: one element short passed");
}

#[test]
fn put_block() {
    let (prev, n) = (3, 1000);
    let good: Vec<f32> = (0..n).map(|i| checks::put_block_value(prev, i)).collect();
    rejects_noop_and_short("put_block", &good, poison("put_block"), |d| {
        checks::put_block(prev, n, d)
    });
    // The previous PE's data is not this PE's.
    let own: Vec<f32> = (0..n).map(|i| checks::put_block_value(0, i)).collect();
    assert!(checks::put_block(prev, n, &own).is_err());
}

#[test]
fn iput() {
    let (prev, n, p) = (1, 100, poison::<i32>("iput"));
    let good: Vec<i32> = (0..2 * n)
        .map(|j| {
            if j % 2 == 0 {
                prev as i32 * 1000 + j as i32 / 2
            } else {
                p
            }
        })
        .collect();
    let check = |d: &[i32]| checks::iput(prev, n, p, d);
    check(&good).expect("the correct output");
    assert!(check(&vec![p; 2 * n]).is_err(), "iput: a no-op passed");
    // One element short (the last one sent is at 2n - 2: the last element
    // of the buffer is a gap), and a write to a gap.
    let mut short = good.clone();
    short[2 * n - 2] = p;
    assert!(
        check(&short).is_err(),
        "iput: the last element missing passed"
    );
    let mut over = good;
    over[1] = 0;
    assert!(
        check(&over).is_err(),
        "iput: a write between the strides passed"
    );
}

#[test]
fn put_signal_ring() {
    let (prev, n, round) = (2, 1000, 3);
    let good: Vec<u64> = (0..n).map(|i| checks::pattern(prev, i, round)).collect();
    let p = poison::<u64>("put_signal_ring");
    rejects_noop_and_short("put_signal_ring", &good, p, |recv| {
        checks::put_signal_ring(prev, (n, round), (recv, round, 0))
    });
    // The old check read only the kernel's error counter, which starts at
    // 0: with nothing received and no signal it passed.
    let noop = vec![p; n];
    assert!(checks::put_signal_ring(prev, (n, round), (&noop, 0, 0)).is_err());
    // Last round's data, or no signal, or an error counter never written.
    let stale: Vec<u64> = (0..n)
        .map(|i| checks::pattern(prev, i, round - 1))
        .collect();
    assert!(checks::put_signal_ring(prev, (n, round), (&stale, round, 0)).is_err());
    assert!(checks::put_signal_ring(prev, (n, round), (&good, round - 1, 0)).is_err());
    let unwritten = poison::<u32>("put_signal_ring");
    assert!(checks::put_signal_ring(prev, (n, round), (&good, round, unwritten)).is_err());
}

#[test]
fn rma_path() {
    assert!(checks::rma_path(1, "direct").is_ok());
    assert!(checks::rma_path(0, "nvshmem").is_ok());
    // Whichever path the build took, it is checked (the old test passed any
    // when NVSHMEM_RS_EXPECT_RMA_PATH was unset).
    assert!(checks::rma_path(0, "direct").is_err());
    assert!(checks::rma_path(1, "nvshmem").is_err());
    assert!(checks::rma_path(poison("rma_path"), "direct").is_err());
    assert!(checks::rma_path(1, "fast").is_err());
}

/// What a correct `atomics_global` on `t` threads leaves.
fn atomics_good(t: u32) -> (Vec<u32>, Vec<u64>, Vec<u32>, Vec<u32>) {
    let (w, d) = checks::atomic_slots(t, 90);
    let mut gw: Vec<u32> = w.iter().map(|s| s.1.unwrap_or(s.0)).collect();
    let mut gd: Vec<u64> = d.iter().map(|s| s.1.unwrap_or(s.0)).collect();
    // swap: the last thread's index stays; every thread got the one before.
    gw[12] = t - 1;
    let olds: Vec<u32> = [1_000_000].into_iter().chain(0..t - 1).collect();
    gw[22] = 8 + t / 2;
    gd[8] = 5;
    (gw, gd, (0..t).rev().collect(), olds)
}

#[test]
fn atomics_global() {
    let t = 501;
    let (gw, gd, tickets, olds) = atomics_good(t);
    let check = |gw: &[u32], gd: &[u64], tickets: &[u32], olds: &[u32]| {
        checks::atomics_global(t, 90, (gw, gd), (tickets, olds))
    };
    check(&gw, &gd, &tickets, &olds).expect("the correct slots");
    // Every slot fails alone when the kernel left its initial value there.
    let (w, d) = checks::atomic_slots(t, 90);
    for (i, (init, _)) in w.iter().enumerate() {
        let mut bad = gw.clone();
        bad[i] = *init;
        assert!(
            check(&bad, &gd, &tickets, &olds).is_err(),
            "w[{i}] untouched passed"
        );
    }
    for (i, (init, _)) in d.iter().enumerate() {
        let mut bad = gd.clone();
        bad[i] = *init;
        assert!(
            check(&gw, &bad, &tickets, &olds).is_err(),
            "d[{i}] untouched passed"
        );
    }
    let p = poison::<u32>("atomics");
    let untouched = vec![p; t as usize];
    assert!(check(&gw, &gd, &untouched, &olds).is_err());
    assert!(check(&gw, &gd, &tickets, &untouched).is_err());
    let mut short = tickets.clone();
    short[0] = p;
    assert!(check(&gw, &gd, &short, &olds).is_err());
    // On an even thread count the xor slots would end where they start:
    // the check refuses such a slot list itself.
    let (w, d) = checks::atomic_slots(512, 90);
    let (gw, gd): (Vec<u32>, Vec<u64>) = (
        w.iter().map(|s| s.1.unwrap_or(s.0)).collect(),
        d.iter().map(|s| s.1.unwrap_or(s.0)).collect(),
    );
    let e = checks::atomics_global(512, 90, (&gw, &gd), (&tickets, &olds)).unwrap_err();
    assert!(e.0.contains("a no-op passes"), "{}", e.0);
}

#[test]
fn reduce_and_i32_at_4_pes() {
    let (members, n) = ([0, 1, 2, 3], 1001);
    let want = checks::reduced(&members, 0, n, checks::collective_i32, |a, b| a & b);
    let zeros = want.iter().filter(|&&v| v == 0).count();
    assert!(
        zeros > n / 2,
        "the case this test is about: most results are 0"
    );
    let p = poison::<i32>("reduce");
    rejects_noop_and_short("reduce_and_i32", &want, p, |d| {
        checks::destination("reduce_and_i32", d, &want, p)
    });
    // The old destinations were zeroed: a no-op then matched `zeros` elements.
    assert!(checks::destination("reduce_and_i32", &vec![0; n], &want, p).is_err());
}

#[test]
fn collective_writes_only_its_part() {
    // fcollect of 7 elements on a 2-member team into a 4-PE destination.
    let want: Vec<i32> = (0..14).collect();
    let p = poison::<i32>("fcollect");
    let mut got = want.clone();
    got.resize(28, p);
    checks::destination("fcollect", &got, &want, p).expect("the correct output");
    got[14] = 5;
    assert!(checks::destination("fcollect", &got, &want, p).is_err());
    assert!(checks::destination("fcollect", &[p; 28], &want, p).is_err());
}

#[test]
fn team_info() {
    let members = [0, 1, 2, 3];
    checks::team_info(&[0, 4, 0, 0], 0, &members).expect("PE 0 of the world");
    // PE 0's answer is mostly zeros: a zeroed buffer was 3 of 4 right.
    let p = poison::<i32>("team_queries");
    assert!(checks::team_info(&[p; 4], 0, &members).is_err());
    assert!(checks::team_info(&[0, 4, 0, p], 0, &members).is_err());
}

#[test]
fn cp_async_zero_fill() {
    let n = 4096;
    let src: Vec<u8> = (0..n).map(|i| (i * 31 % 251) as u8 + 1).collect();
    let good: Vec<u8> = (0..n)
        .map(|i| {
            let c = i / 16;
            if c % 6 >= 4 && i % 16 >= c % 17 {
                0
            } else {
                src[i]
            }
        })
        .collect();
    rejects_noop_and_short("cp_async_copy", &good, poison("cp_async_copy"), |d| {
        checks::cp_async_copy(&src, d)
    });
    // Zero fill that did not happen: the bytes the kernel's shared memory
    // held before (not zero) come out.
    let mut stale = good.clone();
    let at = good
        .iter()
        .zip(&src)
        .position(|(g, s)| *g == 0 && *s != 0)
        .expect("a zero-filled byte");
    stale[at] = 0xa5;
    assert!(checks::cp_async_copy(&src, &stale).is_err());
}
