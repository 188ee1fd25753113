//! GPU tests of MoE dispatch and combine at 1, 2 and 4 PEs (4 under MPS),
//! through `nvshmem_host::harness`: every routing pattern in both modes,
//! bf16 and fp8, two rounds each (the signals only grow), a CUDA graph
//! replayed with new inputs, and refusals on one PE. Dispatch is checked
//! bit-exactly against the CPU reference (`moe::reference`), combine within
//! one bf16 rounding. Outputs are NaN-poisoned before every call, so a
//! kernel that writes nothing fails. Prints SKIPPED without a GPU.

use half::bf16;
use moe::reference::{self, Inputs, Routing};
use moe::{Config, Error, Mode, Moe, Received};
use nvshmem_host::cudarc::driver::sys;
use nvshmem_host::harness::{self, Failure, GpuTest, TestPe, TestResult, ensure};
use nvshmem_host::{Nvshmem, SymBuffer};

const PES: &[u32] = &[1, 2, 4];
const MAX_TOKENS: usize = 40;

fn fail(e: Error) -> Failure {
    Failure::new(e.to_string())
}

fn config(mode: Mode, fp8: bool) -> Config {
    Config {
        hidden: 256,
        experts: 16,
        topk: 4,
        max_tokens: MAX_TOKENS,
        mode,
        fp8,
        align: if mode == Mode::LowLatency { 1 } else { 8 },
    }
}

/// The inputs of one PE, in device buffers sized for `max_tokens`.
struct Bufs {
    x: SymBuffer<bf16>,
    idx: SymBuffer<i32>,
    w: SymBuffer<f32>,
    y: SymBuffer<bf16>,
    out: SymBuffer<bf16>,
}

impl Bufs {
    fn new(nv: &Nvshmem, moe: &Moe) -> Result<Bufs, Failure> {
        let c = moe.config();
        Ok(Bufs {
            x: nv.alloc_zeroed(c.max_tokens * c.hidden)?,
            idx: nv.alloc_zeroed(c.max_tokens * c.topk)?,
            w: nv.alloc_zeroed(c.max_tokens * c.topk)?,
            y: nv.alloc_zeroed(moe.rows_cap() * c.hidden)?,
            out: nv.alloc_zeroed(c.max_tokens * c.hidden)?,
        })
    }

    fn load(&self, nv: &Nvshmem, inp: &Inputs) -> TestResult {
        let s = nv.stream();
        self.x.view(..inp.x.len())?.copy_from_host(s, &inp.x)?;
        self.idx
            .view(..inp.idx.len())?
            .copy_from_host(s, &inp.idx)?;
        self.w.view(..inp.w.len())?.copy_from_host(s, &inp.w)?;
        self.out.fill(s, bf16::NAN)?;
        Ok(())
    }
}

/// Every PE's inputs of round `round`.
fn all_inputs(cfg: &Config, n_pes: u32, routing: Routing, round: u64) -> Vec<Inputs> {
    (0..n_pes)
        .map(|p| {
            let t = reference::tokens_for(p, cfg.max_tokens);
            reference::inputs(cfg, n_pes, p, t, routing, round)
        })
        .collect()
}

/// The receive buffers as bytes and scales.
fn received(nv: &Nvshmem, moe: &Moe) -> Result<(Vec<u8>, Vec<f32>), Failure> {
    let s = nv.stream();
    Ok(match moe.received() {
        Received::Bf16(x) => (bytemuck::cast_slice(&x.to_vec(s)?).to_vec(), Vec::new()),
        Received::Fp8 { x, scales } => (x.to_vec(s)?, scales.to_vec(s)?),
    })
}

/// Two rounds of dispatch, the test's expert on the CPU, combine; checked.
fn run(pe: &mut TestPe, mode: Mode, fp8: bool, routing: Routing) -> TestResult {
    let nv = pe.nvshmem();
    let (me, np) = (nv.my_pe().index(), nv.n_pes());
    let cfg = config(mode, fp8);
    let moe = Moe::new(nv, cfg).map_err(fail)?;
    let b = Bufs::new(nv, &moe)?;
    for round in 0..2 {
        let all = all_inputs(&cfg, np, routing, round);
        let mine = &all[me as usize];
        b.load(nv, mine)?;
        moe.poison().map_err(fail)?;
        moe.dispatch(&b.x, &b.idx, &b.w, mine.tokens)
            .map_err(fail)?;
        let layout = moe.layout().map_err(fail)?;
        let (rows, scales) = received(nv, &moe)?;
        reference::check_dispatch(&cfg, &all, me, &layout, &rows, &scales)
            .map_err(|e| Failure::new(format!("round {round}, dispatch: {e}")))?;
        let y = reference::expert_outputs(&cfg, me, &layout, &rows, &scales, moe.rows_cap());
        b.y.copy_from_host(nv.stream(), &y)?;
        moe.combine(&b.y, &b.idx, &b.w, &b.out).map_err(fail)?;
        let got = b.out.to_vec(nv.stream())?;
        let want = reference::combine_reference(&cfg, mine);
        reference::check_combine(&got[..want.len()], &want)
            .map_err(|e| Failure::new(format!("round {round}: {e}")))?;
        moe.status().map_err(fail)?;
    }
    Ok(())
}

/// Low-latency dispatch + combine captured once in a CUDA graph (the
/// received rows themselves as the expert outputs), replayed for three
/// rounds of new inputs.
fn graph(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let (me, np) = (nv.my_pe().index(), nv.n_pes());
    let cfg = config(Mode::LowLatency, false);
    let mut moe = Moe::new(nv, cfg).map_err(fail)?;
    let b = Bufs::new(nv, &moe)?;
    let tokens = reference::tokens_for(me, cfg.max_tokens);
    // Capture needs the buffers' sizes only; the data comes before each replay.
    let s = nv.stream();
    let begin = || {
        s.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED)
            .map_err(|e| Failure::new(format!("begin_capture: {e}")))
    };
    // Refused (nothing launched) until the handle allows capture.
    begin()?;
    let refused = moe.dispatch(&b.x, &b.idx, &b.w, tokens);
    let _ = s.end_capture(sys::CUgraphInstantiate_flags(0));
    match refused {
        Err(moe::Error::CaptureNotAllowed) => {}
        other => {
            return Err(Failure::new(format!(
                "a dispatch under capture gave {other:?}"
            )));
        }
    }
    // SAFETY: the graph is launched below only, while `moe` and `b` live.
    unsafe { moe.allow_graph_capture() };
    let recv = moe.recv_bf16().expect("bf16 mode");
    begin()?;
    let captured = moe
        .dispatch(&b.x, &b.idx, &b.w, tokens)
        .and_then(|()| moe.combine(recv, &b.idx, &b.w, &b.out));
    let graph = s.end_capture(sys::CUgraphInstantiate_flags(0));
    captured.map_err(fail)?;
    let graph = graph
        .map_err(|e| Failure::new(format!("end_capture: {e}")))?
        .ok_or_else(|| Failure::new("the capture recorded nothing"))?;
    for round in 0..3 {
        let all = all_inputs(&cfg, np, Routing::Uniform, 10 + round);
        let mine = &all[me as usize];
        b.load(nv, mine)?;
        moe.poison().map_err(fail)?;
        graph
            .launch()
            .map_err(|e| Failure::new(format!("graph launch: {e}")))?;
        let layout = moe.layout().map_err(fail)?;
        let (rows, scales) = received(nv, &moe)?;
        reference::check_dispatch(&cfg, &all, me, &layout, &rows, &scales)
            .map_err(|e| Failure::new(format!("graph round {round}, dispatch: {e}")))?;
        let got = b.out.to_vec(s)?;
        let want = reference::combine_reference_with(&cfg, mine, |x, _| {
            x.iter().map(|v| bf16::from_f32(*v)).collect()
        });
        reference::check_combine(&got[..want.len()], &want)
            .map_err(|e| Failure::new(format!("graph round {round}: {e}")))?;
    }
    Ok(())
}

/// A configuration wrong on the last PE only fails on every PE (none
/// waits); then a dispatch wrong on the last PE only: that PE gets
/// `Refused`, the others complete and see it in `status`, and the next
/// round works everywhere.
fn refused_on_one_pe(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let (me, np) = (nv.my_pe().index(), nv.n_pes());
    let last = me + 1 == np;
    let good = config(Mode::Normal { sms: 8 }, false);
    let mut bad = good;
    bad.hidden = if last { 100 } else { good.hidden };
    match Moe::new(nv, bad) {
        Err(Error::Config(e)) => {
            let says = if last {
                "hidden 100"
            } else {
                "refused their configuration"
            };
            ensure(e.contains(says), || {
                format!("Moe::new refused with `{e}`, expected it to say `{says}`")
            })?
        }
        Err(e) => return Err(fail(e)),
        Ok(_) => {
            return Err(Failure::new(
                "Moe::new accepted a configuration wrong on one PE",
            ));
        }
    }
    let moe = Moe::new(nv, good).map_err(fail)?;
    let b = Bufs::new(nv, &moe)?;
    let all = all_inputs(&good, np, Routing::Uniform, 0);
    let mine = &all[me as usize];
    b.load(nv, mine)?;
    let tokens = if last {
        good.max_tokens + 1
    } else {
        mine.tokens
    };
    match (moe.dispatch(&b.x, &b.idx, &b.w, tokens), last) {
        (Err(Error::Refused(e)), true) => {
            ensure(e.contains("at most 40"), || format!("refusal says `{e}`"))?
        }
        (Ok(()), false) => {}
        (r, _) => return Err(Failure::new(format!("dispatch on PE {me}: {r:?}"))),
    }
    // Combine the rows that did arrive (the refusing PE sent none).
    let layout = moe.layout().map_err(fail)?;
    let (rows, scales) = received(nv, &moe)?;
    let y = reference::expert_outputs(&good, me, &layout, &rows, &scales, moe.rows_cap());
    b.y.copy_from_host(nv.stream(), &y)?;
    moe.combine(&b.y, &b.idx, &b.w, &b.out).map_err(fail)?;
    match moe.status() {
        Err(Error::Status(e)) => {
            let says = format!("PE(s) [{}] refused", np - 1);
            ensure(e.contains(&says), || {
                format!("status says `{e}`, expected `{says}`")
            })?
        }
        r => {
            return Err(Failure::new(format!(
                "status after a refusal on PE {}: {r:?}",
                np - 1
            )));
        }
    }
    // The next round is whole again.
    let all = all_inputs(&good, np, Routing::Skewed, 1);
    let mine = &all[me as usize];
    b.load(nv, mine)?;
    moe.dispatch(&b.x, &b.idx, &b.w, mine.tokens)
        .map_err(fail)?;
    let layout = moe.layout().map_err(fail)?;
    let (rows, scales) = received(nv, &moe)?;
    reference::check_dispatch(&good, &all, me, &layout, &rows, &scales).map_err(Failure)?;
    let y = reference::expert_outputs(&good, me, &layout, &rows, &scales, moe.rows_cap());
    b.y.copy_from_host(nv.stream(), &y)?;
    moe.combine(&b.y, &b.idx, &b.w, &b.out).map_err(fail)?;
    let got = b.out.to_vec(nv.stream())?;
    let want = reference::combine_reference(&good, mine);
    reference::check_combine(&got[..want.len()], &want).map_err(Failure)?;
    moe.status().map_err(fail)
}

macro_rules! cases {
    ($($name:ident: $mode:expr, $fp8:expr, $routing:ident;)*) => {
        $(fn $name(pe: &mut TestPe) -> TestResult {
            run(pe, $mode, $fp8, Routing::$routing)
        })*
        const CASES: &[GpuTest] = &[$(GpuTest::new(stringify!($name), $name).pes(PES)),*];
    };
}

const NORMAL: Mode = Mode::Normal { sms: 16 };
cases! {
    normal_uniform: NORMAL, false, Uniform;
    normal_skewed: NORMAL, false, Skewed;
    normal_duplicate_pes: NORMAL, false, DuplicatePes;
    normal_empty_experts: NORMAL, false, EmptyExperts;
    normal_fp8: NORMAL, true, Uniform;
    ll_uniform: Mode::LowLatency, false, Uniform;
    ll_skewed: Mode::LowLatency, false, Skewed;
    ll_duplicate_pes: Mode::LowLatency, false, DuplicatePes;
    ll_empty_experts: Mode::LowLatency, false, EmptyExperts;
    ll_fp8: Mode::LowLatency, true, Skewed;
}

fn main() {
    let mut tests = CASES.to_vec();
    tests.push(GpuTest::new("ll_graph", graph).pes(PES));
    tests.push(GpuTest::new("refused_on_one_pe", refused_on_one_pe).pes(&[2, 4]));
    harness::main(env!("MOE_PTX_DIR"), &tests);
}
