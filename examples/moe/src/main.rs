//! One mixture-of-experts layer across PEs: MoE **dispatch** (the `moe`
//! crate, `examples/moe/kernel`), a **grouped bf16 GEMM**, one launch per
//! local expert with the tensor-core GEMM of `examples/tc_gemm` (`wgmma` +
//! TMA on sm_90a, `mma.sync` otherwise), then **combine** back into every
//! token's row with its top-k weights. Checked against an f64 CPU reference.
//!
//! ```text
//! cargo build --release -p moe --bin moe_layer && cargo build --release -p nvshmem-host --features cli --bin nvshmem-run
//! target/release/moe_layer                                     # 1 PE
//! target/release/nvshmem-run -n 2 -- target/release/moe_layer
//! target/release/nvshmem-run --mps -n 4 -- target/release/moe_layer --tokens 512
//! ```
//!
//! Expert `e` is `y = x · W_eᵀ` (`W_e`: `hidden × hidden` bf16). Dispatch
//! runs in normal mode with each expert's rows aligned to 128, the GEMM
//! tile height, so expert `j`'s GEMM reads its rows in place (`m` rounded up
//! to 128; the padding rows' outputs are never sent back). Each PE checks
//! `--samples` tokens: `Σ_k w_k · bf16(x · W_{e_k}ᵀ)` in f64, within bf16
//! roundings (GEMM output, combine output) and f32 accumulation.

use clap::Parser;
use example_cli::{KernelSet, Res};
use half::bf16;
use moe::reference::{self, Routing};
use moe::{Config, Mode, Moe};
use nvshmem_host::exchange::WordExchange;
use nvshmem_host::{DevicePtr, Nvshmem};
use std::process::ExitCode;
use tc_gemm::{DeviceMaps, GROUP_M, Gemm, bf16_value, wgmma};

/// moe: dispatch → grouped bf16 GEMM per expert → combine, on every PE.
#[derive(Parser, Debug)]
#[command(name = "moe_layer", after_help = example_cli::after_help("moe_layer"))]
struct Opts {
    /// Tokens per PE.
    #[arg(long, default_value_t = 256)]
    tokens: usize,
    /// Channels per token (GEMM K and N), a multiple of 256.
    #[arg(long, default_value_t = 1024, value_parser = example_cli::multiple_of(256))]
    hidden: usize,
    /// Experts in the job, a multiple of the PE count.
    #[arg(long, default_value_t = 16)]
    experts: usize,
    /// Experts per token.
    #[arg(long, default_value_t = 4)]
    topk: usize,
    /// Tokens per PE checked against the CPU.
    #[arg(long, default_value_t = 12)]
    samples: usize,
}

fn main() -> ExitCode {
    let opts = Opts::parse();
    let nv = example_cli::init_or_exit();
    example_cli::exit_code(run(&nv, &opts))
}

fn run(nv: &Nvshmem, o: &Opts) -> Res<bool> {
    let (me, np) = (nv.my_pe().index(), nv.n_pes());
    let cfg = Config {
        hidden: o.hidden,
        experts: o.experts,
        topk: o.topk,
        max_tokens: o.tokens,
        mode: Mode::Normal { sms: 64 },
        fp8: false,
        align: wgmma::BM,
    };
    let moe = Moe::new(nv, cfg)?;
    let gemm = Gemm::load(nv)?;
    let ex = WordExchange::new(nv, 3)?;
    let (h, local, s) = (o.hidden, o.experts / np as usize, nv.stream());
    let inp = reference::inputs(&cfg, np, me, o.tokens, Routing::Uniform, 7);
    let x = nv.alloc_from(&inp.x)?;
    let idx = nv.alloc_from(&inp.idx)?;
    let w = nv.alloc_from(&inp.w)?;
    // This PE's experts' weights, scaled so outputs stay near 1.
    let weight = |e: usize, i: usize| {
        bf16::from_f32(bf16_value(1000 + e as u64, i as u64).to_f32() / (h as f32).sqrt())
    };
    let wts: Vec<bf16> = (0..local * h * h)
        .map(|i| weight(me as usize * local + i / (h * h), i % (h * h)))
        .collect();
    let wts = nv.alloc_from(&wts)?;
    let y = nv.alloc_zeroed::<bf16>(moe.rows_cap() * h)?;
    let out = nv.alloc::<bf16>(o.tokens * h)?;
    out.fill(s, bf16::NAN)?;
    let grid = gemm.wgmma_grid(nv, &ex, moe.rows_cap().next_multiple_of(wgmma::BM), h)?;

    moe.dispatch(&x, &idx, &w, o.tokens)?;
    let layout = moe.layout()?;
    let recv = moe.recv_bf16().expect("bf16 dispatch");
    let at = |base: DevicePtr<bf16>, row: usize| {
        DevicePtr::<bf16>::new(base.addr() + (row * h * 2) as u64)
    };
    // One tensor map pair per local expert (every PE makes as many: collective).
    let rows = |j: usize| {
        (layout.counts[j] as usize)
            .next_multiple_of(wgmma::BM)
            .max(wgmma::BM)
    };
    let maps = match grid {
        Some(_) => Some(DeviceMaps::operands(
            nv,
            &(0..local)
                .flat_map(|j| {
                    [
                        (
                            at(recv.device_ptr(), layout.offsets[j] as usize),
                            rows(j),
                            h,
                            wgmma::A_BOX,
                        ),
                        (at(wts.device_ptr(), j * h), h, h, wgmma::B_BOX),
                    ]
                })
                .collect::<Vec<_>>(),
        )?),
        None => None,
    };
    for j in (0..local).filter(|&j| layout.counts[j] > 0) {
        let (m, c) = (rows(j), at(y.device_ptr(), layout.offsets[j] as usize));
        // SAFETY: expert j's rows (padded to the tile, inside the receive
        // buffer: offsets are 128-aligned), its weight and output rows.
        unsafe {
            match (grid, &maps) {
                (Some(g), Some(maps)) => gemm.wgmma(
                    nv,
                    g,
                    (maps.ptr(2 * j), maps.ptr(2 * j + 1), c),
                    (m, h, h),
                    GROUP_M,
                )?,
                _ => gemm.mma(
                    nv,
                    (
                        at(recv.device_ptr(), layout.offsets[j] as usize),
                        at(wts.device_ptr(), j * h),
                        c,
                    ),
                    (m, h, h),
                    GROUP_M,
                )?,
            }
        }
    }
    moe.combine(&y, &idx, &w, &out)?;
    let got = out.to_vec(s)?;
    moe.status()?;

    // The CPU: each sampled token through its experts, in f64.
    let mut worst = 0.0f64;
    let mut ok = true;
    for t in (0..o.tokens)
        .step_by((o.tokens / o.samples.max(1)).max(1))
        .take(o.samples)
    {
        let xt: Vec<f64> = inp.x[t * h..(t + 1) * h]
            .iter()
            .map(|v| v.to_f64())
            .collect();
        let mut want = vec![0.0f64; h];
        let mut tol = vec![0.0f64; h];
        for k in 0..o.topk {
            let Some(e) =
                moe::plan::slot_expert(&inp.idx[t * o.topk..(t + 1) * o.topk], k, o.experts as u32)
            else {
                continue;
            };
            let (e, wk) = (e as usize, inp.w[t * o.topk + k] as f64);
            for n in 0..h {
                let (mut dot, mut mag) = (0.0f64, 0.0f64);
                for (i, xv) in xt.iter().enumerate() {
                    let p = xv * weight(e, n * h + i).to_f64();
                    dot += p;
                    mag += p.abs();
                }
                want[n] += wk * bf16::from_f64(dot).to_f64();
                tol[n] += wk * (dot.abs() / 128.0 + h as f64 * f32::EPSILON as f64 * mag);
            }
        }
        for n in 0..h {
            let g = got[t * h + n].to_f64();
            let err = (g - want[n]).abs();
            let limit = tol[n] + want[n].abs() / 128.0 + 1e-4;
            worst = worst.max(err / limit);
            if (err > limit || g.is_nan()) && ok {
                println!(
                    "moe PE {me}: token {t} channel {n}: {g}, expected {} (limit {limit:e})",
                    want[n]
                );
                ok = false;
            }
        }
    }
    let rows_here: u32 = layout.counts.iter().sum();
    println!(
        "moe PE {me}/{np}: {} tokens, hidden {h}, {} experts top-{}, {rows_here} expert rows here, GEMM {}: {} (worst error {:.2} of its limit)",
        o.tokens,
        o.experts,
        o.topk,
        if grid.is_some() { "wgmma" } else { "mma.sync" },
        if ok { "PASS" } else { "FAIL" },
        worst
    );
    Ok(ok)
}
