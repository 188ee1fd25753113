//! Deterministic inputs (every PE can make every PE's), the routing
//! patterns the tests cover, and the CPU reference of dispatch and combine.

use crate::{Config, Layout, RowSrc};
use half::bf16;
use moe_kernels::num;
use moe_kernels::plan::slot_expert;

/// How tokens pick their experts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Routing {
    /// `topk` distinct experts, spread evenly at random.
    Uniform,
    /// Expert 0 in every token's list (one hot expert), the rest at random.
    Skewed,
    /// All of a token's experts on one PE (needs `topk <= experts / n_pes`):
    /// normal mode sends it there once.
    DuplicatePes,
    /// Only experts `e % 4 == 1`; one token in 5 routes nowhere and one
    /// slot in 7 is -1: most experts get nothing.
    EmptyExperts,
}

/// One PE's dispatch inputs.
#[derive(Clone, Debug)]
pub struct Inputs {
    /// `tokens × hidden`.
    pub x: Vec<bf16>,
    /// `tokens × topk` expert ids (negative: none).
    pub idx: Vec<i32>,
    /// `tokens × topk` weights.
    pub w: Vec<f32>,
    /// Tokens.
    pub tokens: usize,
}

fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A deterministic number in `[0, 1)` from three keys.
pub fn unit(a: u64, b: u64, c: u64) -> f32 {
    let x = mix(a.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ mix(b ^ mix(c)));
    (x >> 40) as f32 / (1u64 << 24) as f32
}

/// The tokens PE `pe` dispatches in the tests: `max - 3·pe`, at least 1.
pub fn tokens_for(pe: u32, max: usize) -> usize {
    max.saturating_sub(3 * pe as usize).max(1)
}

/// PE `pe`'s inputs for round `seed`.
pub fn inputs(
    cfg: &Config,
    n_pes: u32,
    pe: u32,
    tokens: usize,
    routing: Routing,
    seed: u64,
) -> Inputs {
    let x = (0..tokens).flat_map(|t| x_row(cfg, pe, t, seed)).collect();
    let (idx, w) = route(cfg, n_pes, pe, tokens, routing, seed);
    Inputs { x, idx, w, tokens }
}

/// Token `t` of PE `pe` in round `seed` (the `x` of [`inputs`]).
pub fn x_row(cfg: &Config, pe: u32, t: usize, seed: u64) -> Vec<bf16> {
    let h = cfg.hidden;
    let key = seed.wrapping_mul(1000) + pe as u64;
    (t * h..(t + 1) * h)
        .map(|i| bf16::from_f32(unit(key, 1, i as u64) * 2.0 - 1.0))
        .collect()
}

/// The expert ids and weights of [`inputs`] (`tokens × topk` each), without
/// the activations.
pub fn route(
    cfg: &Config,
    n_pes: u32,
    pe: u32,
    tokens: usize,
    routing: Routing,
    seed: u64,
) -> (Vec<i32>, Vec<f32>) {
    let (k, e) = (cfg.topk, cfg.experts);
    let key = seed.wrapping_mul(1000) + pe as u64;
    let local = e / n_pes as usize;
    let mut idx = vec![-1i32; tokens * k];
    for t in 0..tokens {
        let row = &mut idx[t * k..(t + 1) * k];
        let pick = |n: u64| (unit(key, 2, (t * 64) as u64 + n) * e as f32) as usize % e;
        let mut taken = Vec::new();
        let mut n = 0u64;
        for (s, slot) in row.iter_mut().enumerate() {
            let choice = match routing {
                Routing::Skewed if s == 0 => Some(0),
                Routing::DuplicatePes => {
                    let q = (t + pe as usize) % n_pes as usize;
                    Some(q * local + (s + t) % local)
                }
                Routing::EmptyExperts if t % 5 == 0 || (t + s) % 7 == 0 => None,
                _ => loop {
                    let mut c = pick(n);
                    n += 1;
                    if routing == Routing::EmptyExperts {
                        c = (c & !3) | 1;
                        if c >= e {
                            c = 1;
                        }
                    }
                    // Distinct ids, unless the pattern has run out of them.
                    if !taken.contains(&c) || n > 64 {
                        break Some(c);
                    }
                },
            };
            if let Some(c) = choice {
                taken.push(c);
                *slot = c as i32;
            }
        }
    }
    let w = (0..tokens * k)
        .map(|i| unit(key, 3, i as u64) + 0.25)
        .collect();
    (idx, w)
}

/// Each local expert's expected row sources on PE `me`, sorted, from every
/// PE's inputs.
pub fn expected_sources(cfg: &Config, all: &[Inputs], me: u32) -> Vec<Vec<RowSrc>> {
    let n_pes = all.len();
    let local = cfg.experts / n_pes;
    let mut out = vec![Vec::new(); local];
    for (pe, inp) in all.iter().enumerate() {
        for t in 0..inp.tokens {
            let ids = &inp.idx[t * cfg.topk..(t + 1) * cfg.topk];
            for k in 0..cfg.topk {
                if let Some(e) = slot_expert(ids, k, cfg.experts as u32) {
                    let e = e as usize;
                    if e / local == me as usize {
                        out[e % local].push(RowSrc {
                            pe: pe as u32,
                            tok: t as u32,
                            k: k as u32,
                            w: inp.w[t * cfg.topk + k],
                        });
                    }
                }
            }
        }
    }
    for v in &mut out {
        v.sort_by_key(|r| (r.pe, r.tok, r.k));
    }
    out
}

/// A token's row as dispatch delivers it: its bf16 bits, or its fp8 bytes
/// and scales (bit-exact with the kernel).
pub fn wire_row(cfg: &Config, x: &[bf16]) -> (Vec<u8>, Vec<f32>) {
    if !cfg.fp8 {
        return (bytemuck::cast_slice(x).to_vec(), Vec::new());
    }
    let bits: Vec<u16> = x.iter().map(|v| v.to_bits()).collect();
    let mut q = vec![0u8; x.len()];
    let scales = bits
        .chunks(128)
        .zip(q.chunks_mut(128))
        .map(|(src, dst)| num::quantize_group(src, dst))
        .collect();
    (q, scales)
}

/// The f32 values of a delivered row.
pub fn dequantize(cfg: &Config, bytes: &[u8], scales: &[f32]) -> Vec<f32> {
    if !cfg.fp8 {
        let v: &[bf16] = bytemuck::cast_slice(bytes);
        return v.iter().map(|b| b.to_f32()).collect();
    }
    bytes
        .iter()
        .enumerate()
        .map(|(i, &b)| num::e4m3_to_f32(b) * scales[i / 128])
        .collect()
}

/// The test's expert: `y = bf16(x · (1 + e/16))` for global expert `e`.
pub fn expert_fn(x: &[f32], e: usize) -> Vec<bf16> {
    let s = 1.0 + e as f32 / 16.0;
    x.iter()
        .map(|v| bf16::from_f32(bf16::from_f32(*v).to_f32() * s))
        .collect()
}

/// Checks a dispatch on PE `me`: counts, offsets, the sources of every row
/// (as a set per expert), and every row's bytes (and scales) bit-exactly.
/// `rows`/`scales`: the whole receive buffers, as bytes and f32.
pub fn check_dispatch(
    cfg: &Config,
    all: &[Inputs],
    me: u32,
    layout: &Layout,
    rows: &[u8],
    scales: &[f32],
) -> Result<(), String> {
    let n_pes = all.len() as u32;
    let local = cfg.experts / n_pes as usize;
    let wants = expected_sources(cfg, all, me);
    let row_bytes = if cfg.fp8 { cfg.hidden } else { 2 * cfg.hidden };
    let groups = cfg.hidden / 128;
    let mut end = 0u32;
    for (j, want) in wants.iter().enumerate().take(local) {
        let (c, o) = (layout.counts[j], layout.offsets[j]);
        let e = me as usize * local + j;
        if c as usize != want.len() {
            return Err(format!("expert {e}: {c} rows, expected {}", want.len()));
        }
        let align = if cfg.mode == crate::Mode::LowLatency {
            let at = (j * n_pes as usize * cfg.max_tokens) as u32;
            if o != at {
                return Err(format!("expert {e}: rows at {o}, expected {at}"));
            }
            1
        } else {
            cfg.align as u32
        };
        if o % align != 0 || o < end {
            return Err(format!(
                "expert {e}: rows at {o}: not aligned to {align} or before {end}"
            ));
        }
        end = o + c;
        let mut got = layout.sources[j].clone();
        got.sort_by_key(|r| (r.pe, r.tok, r.k));
        for (g, w) in got.iter().zip(want) {
            if (g.pe, g.tok, g.k, g.w.to_bits()) != (w.pe, w.tok, w.k, w.w.to_bits()) {
                return Err(format!("expert {e}: a row from {g:?}, expected {w:?}"));
            }
        }
        for (r, src) in layout.sources[j].iter().enumerate() {
            let row = o as usize + r;
            let inp = &all[src.pe as usize];
            let t = src.tok as usize;
            let (bytes, sc) = wire_row(cfg, &inp.x[t * cfg.hidden..(t + 1) * cfg.hidden]);
            let got = &rows[row * row_bytes..(row + 1) * row_bytes];
            if let Some(i) = (0..row_bytes).find(|&i| got[i] != bytes[i]) {
                return Err(format!(
                    "expert {e} row {row} (PE {} token {t}): byte {i} is {:#04x}, expected {:#04x}",
                    src.pe, got[i], bytes[i]
                ));
            }
            let got_sc = &scales[row * groups.min(scales.len())..][..sc.len()];
            if let Some(g) = (0..sc.len()).find(|&g| got_sc[g].to_bits() != sc[g].to_bits()) {
                return Err(format!(
                    "expert {e} row {row}: scale {g} is {}, expected {}",
                    got_sc[g], sc[g]
                ));
            }
        }
    }
    Ok(())
}

/// The expert outputs `y` for the received rows (all `rows_cap` of them;
/// rows no expert owns stay NaN): [`expert_fn`] of each row's values.
pub fn expert_outputs(
    cfg: &Config,
    me: u32,
    layout: &Layout,
    rows: &[u8],
    scales: &[f32],
    rows_cap: usize,
) -> Vec<bf16> {
    let h = cfg.hidden;
    let local = layout.counts.len();
    let row_bytes = if cfg.fp8 { h } else { 2 * h };
    let mut y = vec![bf16::NAN; rows_cap * h];
    for j in 0..local {
        let o = layout.offsets[j] as usize;
        for r in o..o + layout.counts[j] as usize {
            let sc = if cfg.fp8 {
                &scales[r * h / 128..(r + 1) * h / 128]
            } else {
                &[][..]
            };
            let v = dequantize(cfg, &rows[r * row_bytes..(r + 1) * row_bytes], sc);
            y[r * h..(r + 1) * h].copy_from_slice(&expert_fn(&v, me as usize * local + j));
        }
    }
    y
}

/// What combine should give PE `me` (f32, before its bf16 rounding):
/// `Σ_k w · expert_fn(delivered x, e_k)` per token.
pub fn combine_reference(cfg: &Config, inp: &Inputs) -> Vec<f32> {
    combine_reference_with(cfg, inp, expert_fn)
}

/// [`combine_reference`] with another expert: `expert(x, e)` gives expert
/// `e`'s bf16 output for the delivered values `x`.
pub fn combine_reference_with(
    cfg: &Config,
    inp: &Inputs,
    expert: impl Fn(&[f32], usize) -> Vec<bf16>,
) -> Vec<f32> {
    let (h, k) = (cfg.hidden, cfg.topk);
    let mut out = vec![0.0f32; inp.tokens * h];
    for t in 0..inp.tokens {
        let (bytes, sc) = wire_row(cfg, &inp.x[t * h..(t + 1) * h]);
        let v = dequantize(cfg, &bytes, &sc);
        let ids = &inp.idx[t * k..(t + 1) * k];
        for s in 0..k {
            if let Some(e) = slot_expert(ids, s, cfg.experts as u32) {
                let y = expert(&v, e as usize);
                let wk = inp.w[t * k + s];
                for (o, yv) in out[t * h..(t + 1) * h].iter_mut().zip(&y) {
                    *o += wk * yv.to_f32();
                }
            }
        }
    }
    out
}

/// Checks combine's bf16 output against the f32 reference: one bf16
/// rounding (`|want| / 128`) plus f32 summation-order slack.
pub fn check_combine(got: &[bf16], want: &[f32]) -> Result<(), String> {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let g = g.to_f32();
        let tol = w.abs() / 128.0 + 1e-5;
        if (g - w).abs() > tol || g.is_nan() {
            return Err(format!(
                "combine: element {i} is {g}, expected {w} (tolerance {tol:e})"
            ));
        }
    }
    if got.len() != want.len() {
        return Err(format!(
            "combine: {} values, expected {}",
            got.len(),
            want.len()
        ));
    }
    Ok(())
}
