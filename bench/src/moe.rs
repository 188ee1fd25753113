//! `nvshmem-bench moe`: MoE dispatch and combine (`examples/moe`), reported
//! like DeepEP: hidden 7168, top-8, 64 and 256 experts; low-latency mode at
//! 128 tokens per PE (bf16 and fp8 dispatch), normal mode at 4096 tokens
//! per PE on `--sms` blocks; and, in the same run, the unfused baseline of
//! normal dispatch at both token counts: a local permutation kernel,
//! NVSHMEM's `alltoall` collective (blocks sized for every token), and a
//! local permutation into the same per-expert rows.
//!
//! Each case is first checked: every expert's row sources exactly, sampled
//! rows bit-exactly (bf16), and, with the received rows as the experts'
//! outputs, sampled tokens of combine within one bf16 rounding. Then
//! dispatch and combine are timed in pairs (calls must alternate), each
//! between CUDA events after a barrier; medians of `--reps`.
//!
//! **Bandwidth** is algorithm bandwidth on this PE: the bytes that reached
//! it (normal: one message per token and source PE, `hidden` bf16; low
//! latency: one per token and expert, bf16 or fp8 with scales; combine: one
//! bf16 row per token and expert) over the time. Every PE of a one-GPU run
//! shares the same HBM, so these are not NVLink figures.

use crate::{Record, Res};
use example_measure::{Timer, median};
use half::bf16;
use moe::reference::{self, Routing};
use moe::{Config, Mode, Moe};
use nvshmem_host::Nvshmem;

/// Options of `nvshmem-bench moe`.
#[derive(Clone, Debug)]
pub struct MoeOptions {
    /// Expert counts (each a multiple of the PE count, at most 256 per PE).
    pub experts: Vec<usize>,
    /// Blocks of the normal-mode kernels.
    pub sms: u32,
    /// Timed repetitions.
    pub reps: usize,
    /// Untimed repetitions first.
    pub warmup: usize,
    /// Also the unfused baseline.
    pub baseline: bool,
}

impl Default for MoeOptions {
    fn default() -> Self {
        MoeOptions {
            experts: vec![64, 256],
            sms: 24,
            reps: 20,
            warmup: 3,
            baseline: true,
        }
    }
}

/// Hidden size and top-k of every case (DeepSeek-V3's).
pub const HIDDEN: usize = 7168;
/// Experts per token.
pub const TOPK: usize = 8;
/// Tokens per PE of the low-latency cases.
pub const LL_TOKENS: usize = 128;
/// Tokens per PE of the normal cases.
pub const NORMAL_TOKENS: usize = 4096;

/// The symmetric heap the largest case needs on `n_pes` PEs, with room to spare.
pub fn heap_bytes(n_pes: u32, o: &MoeOptions) -> usize {
    let p = n_pes as usize;
    let largest = o.experts.iter().map(|&e| {
        let cfg = config(e, Mode::Normal { sms: o.sms }, NORMAL_TOKENS, false);
        let rows = cfg.rows_cap(n_pes) as usize;
        let msg = moe::plan::msg_bytes(HIDDEN as u32, TOPK as u32, false) as usize;
        // Rows, the combine landing zone, staging, send and baseline blocks, y, inputs.
        rows * HIDDEN * 4
            + NORMAL_TOKENS * TOPK * HIDDEN * 2
            + 4 * p * NORMAL_TOKENS * msg
            + NORMAL_TOKENS * HIDDEN * 4
    });
    largest.max().unwrap_or(0) + (512 << 20)
}

fn config(experts: usize, mode: Mode, tokens: usize, fp8: bool) -> Config {
    Config {
        hidden: HIDDEN,
        experts,
        topk: TOPK,
        max_tokens: tokens,
        mode,
        fp8,
        align: 1,
    }
}

/// The records, and what failed its check.
pub struct MoeResult {
    /// One per timed operation.
    pub records: Vec<Record>,
    /// Failed checks and skipped cases, said in words.
    pub failures: Vec<String>,
}

/// One case: its label, configuration, and whether it is the baseline.
struct Case {
    label: String,
    cfg: Config,
    baseline: bool,
}

/// Runs every case on every PE. **Collective.**
pub fn run(nv: &Nvshmem, o: &MoeOptions) -> Res<MoeResult> {
    let np = nv.n_pes();
    let mut cases = Vec::new();
    for &e in &o.experts {
        if e % np as usize != 0 || e / np as usize > 256 {
            continue;
        }
        let ll = |fp8| config(e, Mode::LowLatency, LL_TOKENS, fp8);
        let normal = |t| config(e, Mode::Normal { sms: o.sms }, t, false);
        cases.push(Case {
            label: format!("ll-e{e}"),
            cfg: ll(false),
            baseline: false,
        });
        cases.push(Case {
            label: format!("ll-fp8-e{e}"),
            cfg: ll(true),
            baseline: false,
        });
        cases.push(Case {
            label: format!("normal-e{e}"),
            cfg: normal(NORMAL_TOKENS),
            baseline: false,
        });
        if o.baseline {
            for t in [LL_TOKENS, NORMAL_TOKENS] {
                cases.push(Case {
                    label: format!("alltoall-t{t}-e{e}"),
                    cfg: normal(t),
                    baseline: true,
                });
            }
        }
    }
    let mut res = MoeResult {
        records: Vec::new(),
        failures: Vec::new(),
    };
    if o.baseline && nv.limited_mpg() {
        res.failures.push("alltoall baseline skipped: NVSHMEM refuses collectives with several PEs per GPU without MPS".into());
    }
    for case in cases {
        if case.baseline && nv.limited_mpg() {
            continue;
        }
        run_case(nv, o, &case, &mut res)?;
    }
    Ok(res)
}

fn run_case(nv: &Nvshmem, o: &MoeOptions, case: &Case, res: &mut MoeResult) -> Res<()> {
    let (me, np) = (nv.my_pe().index(), nv.n_pes());
    let cfg = case.cfg;
    let t = cfg.max_tokens;
    let moe = if case.baseline {
        Moe::with_baseline(nv, cfg)?
    } else {
        Moe::new(nv, cfg)?
    };
    let seed = 5;
    let routes: Vec<(Vec<i32>, Vec<f32>)> = (0..np)
        .map(|p| reference::route(&cfg, np, p, t, Routing::Uniform, seed))
        .collect();
    let x: Vec<bf16> = (0..t)
        .flat_map(|i| reference::x_row(&cfg, me, i, seed))
        .collect();
    let (idx, w) = &routes[me as usize];
    let (x, idx, w) = (nv.alloc_from(&x)?, nv.alloc_from(idx)?, nv.alloc_from(w)?);
    let out = nv.alloc::<bf16>(t * HIDDEN)?;
    let y_own = match moe.recv_bf16() {
        Some(_) => None,
        None => Some(nv.alloc_from(&vec![bf16::from_f32(0.5); moe.rows_cap() * HIDDEN])?),
    };
    let y = match (&y_own, moe.recv_bf16()) {
        (Some(y), _) | (None, Some(y)) => y,
        (None, None) => unreachable!("one of the two"),
    };
    let dispatch = || -> Res<()> {
        if case.baseline {
            moe.baseline_dispatch(&x, &idx, &w, t)?;
        } else {
            moe.dispatch(&x, &idx, &w, t)?;
        }
        Ok(())
    };
    // Check once.
    moe.poison()?;
    out.fill(nv.stream(), bf16::NAN)?;
    dispatch()?;
    let layout = moe.layout()?;
    let mut problems = check_layout(nv, &cfg, &routes, me, seed, &moe, &layout)?;
    if !case.baseline {
        moe.combine(y, &idx, &w, &out)?;
        if y_own.is_none() {
            problems.extend(check_combine(
                &cfg,
                &routes[me as usize],
                me,
                seed,
                &out.to_vec(nv.stream())?,
            ));
        }
    }
    moe.status()?;
    let pass = problems.is_empty();
    for p in problems.into_iter().take(3) {
        res.failures.push(format!("{} PE {me}: {p}", case.label));
    }
    // Time pairs: dispatch | combine (the baseline: dispatch only).
    let timer = Timer::new(nv, o.warmup, o.reps)?;
    let mid = timer.event()?;
    let (mut td, mut tc) = (Vec::new(), Vec::new());
    timer.each_run(
        &|| {
            dispatch()?;
            mid.record(nv.stream())?;
            if !case.baseline {
                moe.combine(y, &idx, &w, &out)?;
            }
            Ok(())
        },
        |start, end| {
            td.push(start.elapsed_ms(&mid)? as f64 * 1e3);
            tc.push(mid.elapsed_ms(end)? as f64 * 1e3);
            Ok(())
        },
    )?;
    // What reached this PE.
    let local = cfg.experts / np as usize;
    let rows: u64 = layout.counts.iter().map(|&c| c as u64).sum();
    let msgs: u64 = routes
        .iter()
        .map(|(idx, _)| {
            idx.chunks(TOPK)
                .filter(|ids| {
                    (0..TOPK).any(|k| {
                        moe::plan::slot_expert(ids, k, cfg.experts as u32)
                            .is_some_and(|e| e as usize / local == me as usize)
                    })
                })
                .count() as u64
        })
        .sum();
    let payload = moe::plan::payload_bytes(HIDDEN as u32, cfg.fp8) as u64;
    let disp_bytes = if cfg.mode == Mode::LowLatency {
        rows * payload
    } else {
        msgs * payload
    };
    let comb_bytes = rows * HIDDEN as u64 * 2;
    let imp = if case.baseline { "alltoall" } else { "rust" };
    let mut push = |case_name: &str, bytes: u64, times: &mut Vec<f64>| {
        let us = median(times);
        res.records.push(Record {
            case: case_name.into(),
            variant: case.label.clone(),
            bytes,
            imp: imp.into(),
            time_us: us,
            value: bytes as f64 / (us * 1e3),
            unit: "GB/s".into(),
            pass,
            checked: true,
        });
    };
    push("moe_dispatch", disp_bytes, &mut td);
    if !case.baseline {
        push("moe_combine", comb_bytes, &mut tc);
    }
    Ok(())
}

/// Counts and sources of every expert's rows exactly; up to 64 rows' bytes
/// (bf16 mode) against the regenerated tokens.
fn check_layout(
    nv: &Nvshmem,
    cfg: &Config,
    routes: &[(Vec<i32>, Vec<f32>)],
    me: u32,
    seed: u64,
    moe: &Moe,
    layout: &moe::Layout,
) -> Res<Vec<String>> {
    let all: Vec<reference::Inputs> = routes
        .iter()
        .map(|(idx, w)| reference::Inputs {
            x: Vec::new(),
            idx: idx.clone(),
            w: w.clone(),
            tokens: cfg.max_tokens,
        })
        .collect();
    let want = reference::expected_sources(cfg, &all, me);
    let mut problems = Vec::new();
    for (j, want) in want.iter().enumerate() {
        let mut got = layout.sources[j].clone();
        got.sort_by_key(|r| (r.pe, r.tok, r.k));
        if got != *want {
            problems.push(format!(
                "expert {j} here: {} rows, expected {} (or other sources)",
                got.len(),
                want.len()
            ));
        }
    }
    if let Some(recv) = moe.recv_bf16() {
        let all_rows = recv.to_vec(nv.stream())?;
        let mut checked = 0;
        'outer: for (j, srcs) in layout.sources.iter().enumerate() {
            for (r, s) in srcs.iter().enumerate().step_by(srcs.len() / 8 + 1) {
                let row = layout.offsets[j] as usize + r;
                let want = reference::x_row(cfg, s.pe, s.tok as usize, seed);
                let got = &all_rows[row * cfg.hidden..(row + 1) * cfg.hidden];
                if got
                    .iter()
                    .zip(&want)
                    .any(|(a, b)| a.to_bits() != b.to_bits())
                {
                    problems.push(format!(
                        "row {row} (PE {} token {}) differs from the token",
                        s.pe, s.tok
                    ));
                }
                checked += 1;
                if checked >= 64 {
                    break 'outer;
                }
            }
        }
    }
    Ok(problems)
}

/// Combine with the received rows as the outputs: `Σ_k w_k · x` on 16 tokens.
fn check_combine(
    cfg: &Config,
    route: &(Vec<i32>, Vec<f32>),
    me: u32,
    seed: u64,
    out: &[bf16],
) -> Vec<String> {
    let (h, k) = (cfg.hidden, cfg.topk);
    let mut problems = Vec::new();
    for t in (0..cfg.max_tokens).step_by(cfg.max_tokens / 16 + 1) {
        let x = reference::x_row(cfg, me, t, seed);
        let ids = &route.0[t * k..(t + 1) * k];
        let sum: f32 = (0..k)
            .filter(|&s| moe::plan::slot_expert(ids, s, cfg.experts as u32).is_some())
            .map(|s| route.1[t * k + s])
            .sum();
        for c in 0..h {
            let want = sum * x[c].to_f32();
            let got = out[t * h + c].to_f32();
            if (got - want).abs() > want.abs() / 64.0 + 1e-4 || got.is_nan() {
                problems.push(format!(
                    "combine token {t} channel {c}: {got}, expected {want}"
                ));
                break;
            }
        }
    }
    problems
}

/// The records as a table: case, time, bandwidth, and the baseline's time
/// over ours where both ran.
pub fn table(records: &[Record]) -> String {
    let mut s = format!(
        "{:<14} {:<20} {:<9} {:>10} {:>10} {:>8}\n",
        "op", "case", "impl", "µs", "GB/s", "check"
    );
    for r in records {
        s += &format!(
            "{:<14} {:<20} {:<9} {:>10.1} {:>10.1} {:>8}\n",
            r.case,
            r.variant,
            r.imp,
            r.time_us,
            r.value,
            if r.pass { "PASS" } else { "FAIL" }
        );
    }
    s
}
