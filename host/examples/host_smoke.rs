//! GPU smoke test of the host runtime, with no kernels: init, symmetric
//! buffers, host copies, stream-ordered barrier, put, get and put-with-signal,
//! peer pointers, error paths, finalize. Prints a PASS/FAIL table and exits
//! non-zero on any failure.
//!
//! One PE:    cargo run -p nvshmem-host --example host_smoke
//! N PEs:     nvshmem-run -n 2 -- target/debug/examples/host_smoke
//! (3 or more PEs on one GPU need CUDA MPS: nvshmem-run --mps -n 4 ...)

use nvshmem_host::{Cmp, Error, Nvshmem, Pe, SignalOp, SymBuffer, Team};
use std::fmt::Display;
use std::process::ExitCode;

const N: usize = 1 << 16;

struct Table {
    pe: u32,
    failed: usize,
    passed: usize,
}

impl Table {
    fn row(&mut self, name: &str, result: Result<String, String>) {
        let (status, detail) = match result {
            Ok(d) => {
                self.passed += 1;
                ("PASS", d)
            }
            Err(d) => {
                self.failed += 1;
                ("FAIL", d)
            }
        };
        println!("PE {:<2} | {status} | {name:<34} | {detail}", self.pe);
    }
}

fn fail(e: impl Display) -> String {
    e.to_string()
}

fn check(
    cond: bool,
    ok: impl Into<String>,
    bad: impl FnOnce() -> String,
) -> Result<String, String> {
    if cond { Ok(ok.into()) } else { Err(bad()) }
}

/// Element `i` of PE `pe`'s source data.
fn value(pe: u32, i: usize) -> u32 {
    pe * 1_000_000 + i as u32
}

fn main() -> ExitCode {
    let nv = match Nvshmem::options().symmetric_size(512 << 20).init() {
        Ok(nv) => nv,
        Err(e) => {
            println!("PE ?  | FAIL | {:<34} | {e}", "init");
            return ExitCode::FAILURE;
        }
    };
    let me = nv.my_pe();
    let n_pes = nv.n_pes();
    let mut t = Table {
        pe: me.index(),
        failed: 0,
        passed: 0,
    };
    t.row(
        "init",
        Ok(format!(
            "PE {} of {n_pes}, GPU {} ({}), NVSHMEM {} from {}, {}{}",
            me.index(),
            nv.gpu(),
            nv.gpu_reason(),
            nv.version(),
            nv.library_path().display(),
            nv.bootstrap(),
            if nv.limited_mpg() {
                ", limited MPG (no MPS)"
            } else {
                ""
            }
        )),
    );
    let stream = nv.stream().clone();
    let next = me.ring_next(n_pes);
    let prev = me.ring_prev(n_pes);

    t.row(
        "double init is an error",
        match Nvshmem::init() {
            Err(Error::AlreadyInitialized) => Ok("AlreadyInitialized".into()),
            other => Err(format!("{other:?}")),
        },
    );

    // Allocation, host copies, fill.
    let src_data: Vec<u32> = (0..N).map(|i| value(me.index(), i)).collect();
    let src = nv.alloc_from(&src_data);
    let dst = nv.alloc_zeroed::<u32>(N);
    let signal = nv.alloc_zeroed::<u64>(1);
    let (src, dst, signal) = match (src, dst, signal) {
        (Ok(a), Ok(b), Ok(c)) => (a, b, c),
        (a, b, c) => {
            t.row(
                "alloc",
                Err(format!("{:?} {:?} {:?}", a.err(), b.err(), c.err())),
            );
            return ExitCode::FAILURE;
        }
    };
    t.row(
        "alloc_from / alloc_zeroed",
        Ok(format!("{} + {} + 1 elements, {:?}", N, N, src.sym_ptr())),
    );
    t.row(
        "copy round trip",
        src.to_vec(&stream).map_err(fail).and_then(|v| {
            check(
                v == src_data,
                format!("{} u32 back intact", v.len()),
                || "data differs".into(),
            )
        }),
    );
    t.row(
        "alloc_zeroed is zero",
        dst.to_vec(&stream).map_err(fail).and_then(|v| {
            check(v.iter().all(|&x| x == 0), "all zero", || {
                "not zeroed".into()
            })
        }),
    );
    let scratch: Result<SymBuffer<f32>, _> = nv.alloc(1000);
    t.row(
        "fill f32 (memset 32)",
        scratch.map_err(fail).and_then(|b| {
            b.fill(&stream, 2.5).map_err(fail)?;
            let v = b.to_vec(&stream).map_err(fail)?;
            check(v.iter().all(|&x| x == 2.5), "1000 x 2.5", || {
                format!("got {:?}", &v[..4])
            })
        }),
    );
    let wide: Result<SymBuffer<[u64; 3]>, _> = nv.alloc(100);
    t.row(
        "fill 24-byte elements (host copy)",
        wide.map_err(fail).and_then(|b| {
            b.fill(&stream, [1, 2, 3]).map_err(fail)?;
            let v = b.to_vec(&stream).map_err(fail)?;
            check(v.iter().all(|&x| x == [1, 2, 3]), "100 x [1,2,3]", || {
                format!("got {:?}", v[0])
            })
        }),
    );
    t.row(
        "view copy",
        src.view(10..20).map_err(fail).and_then(|v| {
            let got = v.to_vec(&stream).map_err(fail)?;
            check(got == src_data[10..20], "elements 10..20", || {
                format!("got {got:?}")
            })
        }),
    );

    // Stream-ordered barrier, then a ring put: each PE writes its data into the next PE's dst.
    t.row(
        "barrier_all_on_stream",
        nv.barrier_all_on_stream(&stream)
            .and_then(|_| nv.synchronize(&stream))
            .map(|_| "ok".into())
            .map_err(fail),
    );
    let put = (|| -> Result<String, Error> {
        nv.put_on_stream(&stream, &dst, &src, next)?;
        nv.barrier_all_on_stream(&stream)?;
        let got = dst.to_vec(&stream)?;
        let want: Vec<u32> = (0..N).map(|i| value(prev.index(), i)).collect();
        Ok(if got == want {
            format!("PE {} -> PE {}: {N} u32 correct", me.index(), next.index())
        } else {
            let bad = got.iter().zip(&want).position(|(a, b)| a != b).unwrap_or(0);
            format!("WRONG at {bad}: {} != {}", got[bad], want[bad])
        })
    })();
    t.row(
        "putmem_on_stream (ring)",
        put.map_err(fail)
            .and_then(|s| check(!s.starts_with("WRONG"), s.clone(), || s)),
    );

    // Get: read the next PE's src into dst.
    let get = (|| -> Result<bool, Error> {
        nv.barrier_all_on_stream(&stream)?;
        nv.get_on_stream(&stream, &dst, &src, next)?;
        nv.quiet_on_stream(&stream)?;
        let got = dst.to_vec(&stream)?;
        Ok(got
            .iter()
            .enumerate()
            .all(|(i, &x)| x == value(next.index(), i)))
    })();
    t.row(
        "getmem_on_stream",
        get.map_err(fail).and_then(|ok| {
            check(ok, format!("from PE {}", next.index()), || {
                "data differs".into()
            })
        }),
    );

    // Put with signal. The receiver's stream waits for the signal, except in
    // limited MPG (several PEs on one GPU without MPS), where NVSHMEM does not
    // support that wait: there a barrier stands in, and the wait must be refused.
    let limited = nv.limited_mpg();
    let signalled = (|| -> Result<bool, Error> {
        dst.fill(&stream, 0)?;
        nv.barrier_all_on_stream(&stream)?;
        nv.put_signal_on_stream(&stream, &dst, &src, &signal, 1, SignalOp::Set, next)?;
        if limited {
            nv.barrier_all_on_stream(&stream)?;
        } else {
            nv.signal_wait_until_on_stream(&stream, &signal, Cmp::Eq, 1)?;
        }
        let got = dst.to_vec(&stream)?;
        Ok(got
            .iter()
            .enumerate()
            .all(|(i, &x)| x == value(prev.index(), i))
            && signal.to_vec(&stream)?[0] == 1)
    })();
    t.row(
        "put_signal (+ signal_wait_until)",
        signalled
            .map_err(fail)
            .and_then(|ok| check(ok, "data and signal there", || "data differs".into())),
    );
    let add = (|| -> Result<u64, Error> {
        nv.barrier_all_on_stream(&stream)?;
        nv.signal_op_on_stream(&stream, &signal, 41, SignalOp::Add, me)?;
        nv.quiet_on_stream(&stream)?;
        Ok(signal.to_vec(&stream)?[0])
    })();
    t.row(
        "signal_op_on_stream (add)",
        add.map_err(fail)
            .and_then(|v| check(v == 42, "1 + 41 = 42", || format!("got {v}"))),
    );

    // Collectives over all PEs (refused in limited MPG).
    let unsupported = |r: Result<bool, Error>| match r {
        Err(Error::Unsupported { .. }) => Ok("Unsupported (limited MPG)".to_string()),
        other => Err(format!("{other:?}")),
    };
    let bcast = (|| -> Result<bool, Error> {
        nv.barrier_all_on_stream(&stream)?;
        nv.broadcast_on_stream(&stream, Team::WORLD, &dst, &src, Pe::new(0))?;
        nv.barrier_all_on_stream(&stream)?;
        Ok(dst
            .to_vec(&stream)?
            .iter()
            .enumerate()
            .all(|(i, &x)| x == value(0, i)))
    })();
    t.row(
        "broadcast_on_stream from PE 0",
        if limited {
            unsupported(bcast)
        } else {
            bcast
                .map_err(fail)
                .and_then(|ok| check(ok, "PE 0's data everywhere", || "data differs".into()))
        },
    );
    let mine = nv.alloc_from(&[me.index(); 4]);
    let all = nv.alloc_zeroed::<u32>(4 * n_pes as usize);
    let gathered = (|| -> Result<bool, Error> {
        let (mine, all) = (
            mine.as_ref().map_err(|e| Error::InvalidArgument {
                reason: e.to_string(),
            })?,
            all.as_ref().map_err(|e| Error::InvalidArgument {
                reason: e.to_string(),
            })?,
        );
        nv.fcollect_on_stream(&stream, Team::WORLD, all, mine)?;
        nv.barrier_all_on_stream(&stream)?;
        let got = all.to_vec(&stream)?;
        Ok(got
            .chunks(4)
            .enumerate()
            .all(|(pe, c)| c.iter().all(|&x| x == pe as u32)))
    })();
    t.row(
        "fcollect_on_stream",
        if limited {
            unsupported(gathered)
        } else {
            gathered
                .map_err(fail)
                .and_then(|ok| check(ok, "every PE's block in order", || "data differs".into()))
        },
    );
    t.row(
        "signal_wait_until (limited MPG)",
        if limited {
            unsupported(
                nv.signal_wait_until_on_stream(&stream, &signal, Cmp::Ge, 0)
                    .map(|_| true),
            )
        } else {
            Ok("not limited: checked above".into())
        },
    );
    t.row(
        "host barrier_all / sync_all",
        nv.barrier_all()
            .and_then(|_| nv.sync_all())
            .map(|_| "ok".into())
            .map_err(fail),
    );

    // Peer pointers and team queries.
    t.row(
        "peer_ptr(my_pe)",
        src.peer_ptr(me).map_err(fail).and_then(|p| {
            check(p == Some(src.device_ptr()), format!("{:?}", p), || {
                format!("{p:?} != {:?}", src.device_ptr())
            })
        }),
    );
    t.row(
        "peer_ptr(next)",
        src.peer_ptr(next).map(|p| format!("{p:?}")).map_err(fail),
    );
    t.row(
        "team_n_pes(Node)",
        nv.team_n_pes(nvshmem_host::Team::NODE)
            .map_err(fail)
            .and_then(|n| check(n >= 1 && n <= n_pes, format!("{n}"), || format!("{n}"))),
    );

    // Error paths that need a live NVSHMEM.
    t.row(
        "alloc(0) is BadSize",
        match nv.alloc::<u32>(0) {
            Err(Error::BadSize { .. }) => Ok("BadSize".into()),
            other => Err(format!("{other:?}")),
        },
    );
    t.row(
        "invalid PE is InvalidPe",
        match nv.put_on_stream(&stream, &dst, &src, Pe::new(n_pes)) {
            Err(Error::InvalidPe { .. }) => Ok("InvalidPe".into()),
            other => Err(format!("{other:?}")),
        },
    );
    t.row(
        "length mismatch is BadSize",
        match nv.put_on_stream(&stream, &dst.view(..10).unwrap(), &src, me) {
            Err(Error::BadSize { .. }) => Ok("BadSize".into()),
            other => Err(format!("{other:?}")),
        },
    );
    let two_words = nv.alloc_zeroed::<u64>(2);
    t.row(
        "signal of 2 words is BadSize",
        match two_words
            .as_ref()
            .map(|w| nv.signal_wait_until_on_stream(&stream, w, Cmp::Eq, 0))
        {
            Ok(Err(Error::BadSize { .. })) => Ok("BadSize".into()),
            other => Err(format!("{other:?}")),
        },
    );
    // More than any GPU has (the heap grows on demand up to NVSHMEM_MAX_MEMORY_PER_GPU).
    t.row(
        "exhausted heap is HeapExhausted",
        match nv.alloc::<u8>(1 << 40) {
            Err(e @ Error::HeapExhausted { .. }) => Ok(e.to_string()),
            other => Err(format!("{other:?}")),
        },
    );
    t.row(
        "heap usable after exhaustion",
        nv.alloc::<u8>(1 << 20)
            .map(|b| format!("{:?}", b.sym_ptr()))
            .map_err(fail),
    );

    drop((dst, signal, two_words, mine, all));
    // Finalize with a buffer still alive: it must become unusable, not crash.
    let kept = src;
    let finalized = nv.finalize();
    t.row("finalize", finalized.map(|_| "ok".into()).map_err(fail));
    t.row(
        "use after finalize is Finalized",
        match kept.to_vec(&stream) {
            Err(Error::Finalized { .. }) => Ok("Finalized".into()),
            other => Err(format!("{:?}", other.map(|v| v.len()))),
        },
    );
    drop(kept);
    t.row(
        "no errors recorded by drops",
        match nvshmem_host::take_drop_error() {
            None => Ok("none".into()),
            Some(e) => Err(e.to_string()),
        },
    );

    // NVSHMEM can start again after finalize (one PE only: the UID bootstrap
    // would need a new unique id).
    if n_pes == 1 && std::env::var_os(nvshmem_host::launcher::env::RANK).is_none() {
        t.row(
            "init again after finalize",
            Nvshmem::init()
                .and_then(|nv| {
                    let b = nv.alloc_from(&[7u8; 64])?;
                    let ok = b.to_vec(nv.stream())? == [7u8; 64];
                    drop(b);
                    nv.finalize()?;
                    Ok(ok)
                })
                .map_err(fail)
                .and_then(|ok| check(ok, "alloc and copy work", || "data differs".into())),
        );
    }

    println!("PE {:<2} | {} passed, {} failed", t.pe, t.passed, t.failed);
    if t.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
