//! `nvshmem-bench gemm`: the bf16 tensor-core kernels against cuBLAS in the
//! same process.
//!
//! - **GEMM alone** (`C = A · Bᵀ`, M = N = K = each `--sizes` value, bf16 in
//!   and out, f32 accumulation): the Rust `mma.sync` kernel, the Rust
//!   `wgmma` and TMA kernel (sm_90a builds), both in grouped tile order
//!   (`--group` sets the band height), and `cublasGemmEx` (`CUBLAS_COMPUTE_32F`, the same "TN" layout); TFLOP/s and
//!   % of cuBLAS, and for the `mma.sync` kernels % of the `mma.sync` peak.
//! - **The `mma.sync` peak** (issue 24), first: `tc_gemm::MmaPeak`,
//!   register-only `m16n8k16` bf16 `mma.sync` in independent chains on every
//!   block the GPU holds, the ceiling of the instruction itself on this GPU
//!   (cuBLAS on Hopper uses `wgmma`, which `mma.sync` cannot reach). A
//!   `mma_peak` row (`ceiling`).
//! - **Fused with communication**, at the PE count it runs with
//!   (`nvshmem-run -n P -- nvshmem-bench gemm`): all-gather + GEMM (M = N =
//!   K = size, `m_loc = M / P`) fused, unfused (push all-gather + the Rust
//!   GEMM) and all-gather + cuBLAS; GEMM + reduce-scatter (`k_loc = K / P`)
//!   fused, unfused (Rust GEMM + `rs_sum`) and cuBLAS + `rs_sum`.
//!
//! Every timed case is first checked: sampled entries against an f64 CPU
//! reference (bf16 tolerance) and the whole result against cuBLAS's.
//! cuBLAS is loaded at run time by cudarc (`libcublas.so`, `.so.13`, ... on
//! the library path: `bench/run.sh` and `tests/gpu-run.sh` put PyTorch's
//! `nvidia/cu13/lib` there); without it those rows are skipped with a message.

use crate::{Record, Res};
use example_ag_gemm::{AgGemm, AgGemmKernels, PANEL};
use example_cli::KernelSet;
use example_gemm_rs::{GemmRs, GemmRsKernels};
use example_measure::{Samples, Timer, max_abs_diff};
use half::bf16;
use nvshmem_host::Nvshmem;
use nvshmem_host::exchange::WordExchange;
use tc_gemm::{self as tensor, DeviceMaps, Shape, Tc, wgmma};

mod cublas;
mod report;

use cublas::Cublas;
pub use report::{plots, table};

/// Options of `nvshmem-bench gemm`.
#[derive(Clone, Debug)]
pub struct GemmOptions {
    /// Square problem sizes (M = N = K).
    pub sizes: Vec<usize>,
    /// Timed repetitions (the median is reported).
    pub reps: usize,
    /// Untimed repetitions first.
    pub warmup: usize,
    /// Use cuBLAS (when it loads).
    pub cublas: bool,
    /// Also the fused AG+GEMM and GEMM+RS cases.
    pub fused: bool,
    /// Entries checked against the CPU per case.
    pub samples: usize,
    /// Band height (tile rows) of the Rust GEMMs' grouped tile order.
    pub group: u32,
    /// Also the candidate `mma.sync` kernels (`tc_gemm::mma::CANDIDATES`).
    pub candidates: bool,
}

impl Default for GemmOptions {
    fn default() -> Self {
        GemmOptions {
            sizes: vec![1024, 2048, 4096, 8192],
            reps: 20,
            warmup: 5,
            cublas: true,
            fused: true,
            samples: 64,
            group: tensor::GROUP_M,
            candidates: false,
        }
    }
}

/// What the GEMM benchmark measured, and the failures.
#[derive(Default)]
pub struct GemmBench {
    /// One record per (case, variant, size).
    pub records: Vec<Record>,
    /// Failed checks.
    pub failures: Vec<String>,
}

/// Whether a `gemm_bf16` row of implementation `imp` and `variant` is an
/// `mma.sync` kernel (the default or a candidate), measured against the
/// `mma.sync` peak.
pub fn is_mma(imp: &str, variant: &str) -> bool {
    imp == "rust" && variant != "wgmma"
}

/// A benchmark case: (variant, implementation, launch).
type Case<'a> = (&'a str, &'a str, &'a dyn Fn() -> Res<()>);

/// A fused case's runs: whether the wgmma kernels are there, the unfused
/// and the fused launch.
type Runs<'a> = (bool, &'a dyn Fn(Tc) -> Res<()>, &'a dyn Fn(Tc) -> Res<()>);

/// A cuBLAS variant's launch.
type BlasLaunch<'a> = &'a dyn Fn(&Cublas) -> Res<()>;

/// A cuBLAS variant: its name and launch.
type BlasRun<'a> = (&'a str, BlasLaunch<'a>);

/// One run: the kernels, cuBLAS, the options and what was measured.
struct Run<'a> {
    nv: &'a Nvshmem,
    ex: WordExchange,
    o: &'a GemmOptions,
    ag: AgGemmKernels,
    rs: GemmRsKernels,
    blas: Option<Cublas>,
    /// The `mma.sync` peak in TFLOP/s, once measured.
    peak: Option<f64>,
}

/// Rounds of the `mma.sync` peak probe per launch: ~1 ms on an H100.
const PEAK_ITERS: u32 = 2048;

/// Runs every case; the lead PE prints a line per case and size.
pub fn run(nv: &Nvshmem, o: &GemmOptions) -> Res<GemmBench> {
    let blas = if o.cublas { Cublas::new(nv)? } else { None };
    if nv.my_pe().index() == 0 && blas.is_none() {
        println!(
            "gemm: cuBLAS not used ({})",
            if o.cublas {
                "libcublas not found on the library path"
            } else {
                "--no-cublas"
            }
        );
    }
    let mut run = Run {
        nv,
        ex: WordExchange::new(nv, 3)?,
        o,
        ag: AgGemmKernels::load(nv)?,
        rs: GemmRsKernels::load(nv)?,
        blas,
        peak: None,
    };
    let mut out = GemmBench::default();
    run.peak = Some(run.mma_peak(&mut out)?);
    if o.candidates && nv.my_pe().index() == 0 {
        let gemm = &run.ag.gemm;
        let regs = |k: &nvshmem_host::Kernel| {
            k.info()
                .registers
                .map_or("?".into(), |r| format!("{r} registers"))
        };
        println!("gemm: gemm_bf16_mma: {}", regs(gemm.mma_kernel()));
        for (c, k) in gemm.candidates() {
            println!(
                "gemm: {}: {} ({} threads, {} KiB shared): {}",
                c.kernel,
                c.what,
                c.threads,
                c.smem / 1024,
                regs(k)
            );
        }
    }
    for &s in &o.sizes {
        run.gemm_alone(s, &mut out)?;
        if o.fused {
            run.ag_gemm(s, &mut out)?;
            run.gemm_rs(s, &mut out)?;
        }
    }
    Ok(out)
}

impl Run<'_> {
    /// Times the `mma.sync` peak probe, records it and prints
    /// "mma.sync peak: X TFLOP/s"; returns it. Checked: every accumulator
    /// positive and finite (the loop ran). **Collective.**
    fn mma_peak(&self, out: &mut GemmBench) -> Res<f64> {
        let probe = self.ag.gemm.mma_peak(self.nv, &self.ex)?;
        probe.launch(self.nv, 1)?;
        let acc = probe.accumulators(self.nv)?;
        let pass = acc.iter().all(|v| v.is_finite() && *v > 0.0);
        if !pass {
            out.failures
                .push("mma.sync peak: an accumulator is not positive and finite".into());
        }
        let ms = self.time(&|| probe.launch(self.nv, PEAK_ITERS))?;
        let tflops = probe.flops(PEAK_ITERS) / (ms * 1e-3) / 1e12;
        out.records.push(Record {
            case: "mma_peak".into(),
            variant: "m16n8k16".into(),
            bytes: 0,
            imp: "ceiling".into(),
            time_us: ms * 1e3,
            value: tflops,
            unit: "TFLOP/s".into(),
            pass,
            checked: true,
        });
        self.print(&format!(
            "mma.sync peak: {tflops:.1} TFLOP/s ({ms:.3} ms; m16n8k16 bf16, {} chains per warp, {} blocks of {} threads, {PEAK_ITERS} rounds){}",
            tc_gemm::MmaPeak::CHAINS,
            probe.grid(),
            tc_gemm::PEAK_THREADS,
            if pass { "" } else { " FAIL" }
        ));
        Ok(tflops)
    }

    /// The slowest PE's median time of `launch` in ms (a barrier before
    /// each run). **Collective.**
    fn time(&self, launch: &dyn Fn() -> Res<()>) -> Res<f64> {
        let ms = Timer::new(self.nv, self.o.warmup, self.o.reps)?.median_ms(launch)?;
        self.agree_max(ms)
    }

    /// The largest of every PE's `v`. **Collective.**
    fn agree_max(&self, v: f64) -> Res<f64> {
        let all = self.ex.all_gather(self.nv, &[v.to_bits()])?;
        Ok(all
            .iter()
            .map(|r| f64::from_bits(r[0]))
            .fold(f64::MIN, f64::max))
    }

    /// Times `launch`, records it at `flops`, and adds it to the PE-0 `line`.
    #[allow(clippy::too_many_arguments)]
    fn timed(
        &self,
        out: &mut GemmBench,
        (case, size, flops): (&str, usize, f64),
        (variant, imp, launch): Case,
        pass: bool,
        line: &mut String,
    ) -> Res<f64> {
        let ms = self.time(launch)?;
        let tflops = flops / (ms * 1e-3) / 1e12;
        out.records.push(Record {
            case: case.into(),
            variant: variant.into(),
            bytes: size as u64,
            imp: imp.into(),
            time_us: ms * 1e3,
            value: tflops,
            unit: "TFLOP/s".into(),
            pass,
            checked: true,
        });
        *line += &format!(
            " | {variant} {ms:.3} ms {tflops:.1} TFLOP/s{}",
            if pass { "" } else { " FAIL" }
        );
        Ok(tflops)
    }

    /// Prints `line` on PE 0.
    fn print(&self, line: &str) {
        if self.nv.my_pe().index() == 0 {
            println!("{line}");
        }
    }

    /// GEMM alone at M = N = K = `s` on every PE (each its own problem).
    fn gemm_alone(&self, s: usize, out: &mut GemmBench) -> Res<()> {
        let nv = self.nv;
        let stream = nv.stream();
        let dims = (s, s, s);
        let data = |seed| -> Vec<bf16> {
            (0..s * s)
                .map(|i| tensor::bf16_value(seed, i as u64))
                .collect()
        };
        let (a_h, b_h) = (data(1), data(2));
        let (a, b) = (nv.alloc_from(&a_h)?, nv.alloc_from(&b_h)?);
        let c = nv.alloc::<bf16>(s * s)?;
        let maps = DeviceMaps::operands(
            nv,
            &[
                (a.device_ptr(), s, s, wgmma::A_BOX),
                (b.device_ptr(), s, s, wgmma::B_BOX),
            ],
        )?;
        let gemm = &self.ag.gemm;
        let wg_grid = gemm.wgmma_grid(nv, &self.ex, s, s)?;
        let ptrs = (a.device_ptr(), b.device_ptr(), c.device_ptr());
        // SAFETY (launches): A, B s×s, C s×s, sizes multiples of the tiles.
        let group = self.o.group;
        let run_mma = || unsafe { gemm.mma(nv, ptrs, dims, group) };
        let wg_maps = (maps.ptr(0), maps.ptr(1), ptrs.2);
        let run_wgmma = || match wg_grid {
            Some(g) => unsafe { gemm.wgmma(nv, g, wg_maps, dims, group) },
            None => Ok(()),
        };
        let blas = self.blas.as_ref();
        let run_blas = || match blas {
            Some(bl) => unsafe {
                bl.gemm(ptrs.0.addr(), ptrs.1.addr(), ptrs.2.addr(), dims, false)
            },
            None => Ok(()),
        };
        // A candidate kernel's launch, by name.
        type Launch<'a> = Box<dyn Fn() -> Res<()> + 'a>;
        let candidates: Vec<(String, Launch)> = if self.o.candidates {
            (0..gemm.candidates().len())
                .map(|i| {
                    let name = gemm.candidates()[i]
                        .0
                        .kernel
                        .trim_start_matches("gemm_bf16_");
                    // SAFETY: as `run_mma`; the candidate checks the sizes against its tile.
                    let f = move || unsafe { gemm.mma_candidate(nv, i, ptrs, dims, group) };
                    (name.to_string(), Box::new(f) as Launch)
                })
                .collect()
        } else {
            Vec::new()
        };
        let mut cases: Vec<Case> = vec![("mma", "rust", &run_mma)];
        for (name, f) in &candidates {
            cases.push((name.as_str(), "rust", f.as_ref()));
        }
        if wg_grid.is_some() {
            cases.push(("wgmma", "rust", &run_wgmma));
        }
        if blas.is_some() {
            cases.push(("cublas", "cublas", &run_blas));
        }
        // Checks: each result against the CPU (samples) and cuBLAS's (all),
        // cuBLAS first.
        let samples = Samples {
            count: self.o.samples,
            seed: 0x51,
            rows: s,
            cols: s,
            k: s,
        };
        let mut reference: Option<Vec<bf16>> = None;
        let mut results = Vec::new();
        for &(variant, _, launch) in cases.iter().rev() {
            c.fill(stream, bf16::NAN)?;
            launch()?;
            nv.synchronize(stream)?;
            let got = c.to_vec(stream)?;
            let bad = samples
                .check(
                    |i, kk| a_h[i * s + kk].to_f64(),
                    |j, kk| b_h[j * s + kk].to_f64(),
                    |i, j| got[i * s + j].to_f64(),
                    |dot, mag| tensor::bf16_tolerance(dot, mag, s),
                )
                .bad;
            let diff = reference.as_ref().map(|r| max_abs_diff(&got, r));
            let pass = bad == 0 && diff.is_none_or(|d| d <= 0.05 * s as f64 / 1024.0 + 0.05);
            if !pass {
                out.failures.push(format!(
                    "gemm {variant} {s}: {bad} CPU mismatches, max diff vs cuBLAS {diff:?}"
                ));
            }
            if variant == "cublas" {
                reference = Some(got);
            }
            results.push((variant, pass));
        }
        let mut line = format!("gemm bf16 {s}³:");
        let mut blas_tf = None;
        for &case in cases.iter().rev() {
            let pass = results.iter().any(|&(v, p)| v == case.0 && p);
            let tf = self.timed(
                out,
                ("gemm_bf16", s, 2.0 * (s as f64).powi(3)),
                case,
                pass,
                &mut line,
            )?;
            match blas_tf {
                None if case.0 == "cublas" => blas_tf = Some(tf),
                Some(b) => line += &format!(" = {:.0}% of cuBLAS", 100.0 * tf / b),
                None => {}
            }
            if let Some(p) = self.peak.filter(|_| is_mma(case.1, case.0)) {
                line += &format!(", {:.0}% of the mma.sync peak", 100.0 * tf / p);
            }
        }
        self.print(&line);
        Ok(())
    }

    /// All-gather + GEMM at M = N = K = `s` over the job's PEs.
    fn ag_gemm(&self, s: usize, out: &mut GemmBench) -> Res<()> {
        let nv = self.nv;
        let (me, np) = (nv.my_pe().index() as usize, nv.n_pes() as usize);
        let m_loc = s / np;
        if m_loc == 0 || !m_loc.is_multiple_of(PANEL) {
            return Ok(());
        }
        let shape = Shape {
            m_per_pe: m_loc,
            n: s,
            k: s,
        };
        let ag = AgGemm::new(nv, &self.ex, &self.ag, shape)?;
        let with_blas = |bl: &Cublas| -> Res<()> {
            ag.push()?;
            let (a, b, c) = (ag.a_full.device_ptr(), ag.b.device_ptr(), ag.c.device_ptr());
            // SAFETY: a_full s×s, b s×s, c s×s.
            unsafe { bl.gemm(a.addr(), b.addr(), c.addr(), (s, s, s), false) }
        };
        let runs: Runs = (ag.has_wgmma(), &|tc| ag.unfused(tc), &|tc| ag.fused(tc));
        let blas = (
            "allgather+cublas",
            &with_blas as &dyn Fn(&Cublas) -> Res<()>,
        );
        self.check_and_time(out, ("ag_gemm_bf16", "ag+gemm", s), runs, blas, |case| {
            ag.poison()?;
            (case.2)()?;
            nv.barrier_all_on_stream(nv.stream())?;
            let bad = ag.check(self.o.samples, 0x51)?.bad;
            Ok((self.agree_max(bad as f64)? == 0.0)
                .then_some(())
                .ok_or_else(|| format!("{bad} CPU mismatches on PE {me}")))
        })
    }

    /// GEMM + reduce-scatter at M = N = K = `s` (`k_loc = K / P` per PE).
    fn gemm_rs(&self, s: usize, out: &mut GemmBench) -> Res<()> {
        let nv = self.nv;
        let (me, np) = (nv.my_pe().index() as usize, nv.n_pes() as usize);
        let (m_loc, k_loc) = (s / np, s / np);
        if m_loc == 0 || !m_loc.is_multiple_of(128) || !k_loc.is_multiple_of(64) {
            return Ok(());
        }
        let shape = Shape {
            m_per_pe: m_loc,
            k: k_loc,
            n: s,
        };
        let rs = GemmRs::new(nv, &self.ex, &self.rs, shape)?;
        if let Some(q) = rs.unreachable_peer()? {
            self.print(&format!("gemm+rs: skipped: PE {q} is not P2P-reachable"));
            return Ok(());
        }
        let with_blas = |bl: &Cublas| -> Res<()> {
            let (a, b) = (rs.a.device_ptr(), rs.b.device_ptr());
            let p = rs.partial.device_ptr();
            // SAFETY: a s×k_loc, b s×k_loc, partial s×s (f32).
            unsafe { bl.gemm(a.addr(), b.addr(), p.addr(), (s, s, k_loc), true)? };
            rs.sum()
        };
        let runs: Runs = (rs.has_wgmma(), &|tc| rs.unfused(tc), &|tc| rs.fused(tc));
        let blas = ("cublas+rs", &with_blas as BlasLaunch);
        let mut reference: Option<Vec<f32>> = None;
        self.check_and_time(out, ("gemm_rs_bf16", "gemm+rs", s), runs, blas, |case| {
            rs.poison()?;
            (case.2)()?;
            let got = rs.result()?;
            // Each PE checks its rows against the CPU, which recomputes every
            // PE's inputs, and against the first variant (unfused).
            let bad = rs.check(&got, self.o.samples, 0x52).bad;
            let diff = reference.as_ref().map(|r| max_abs_diff(r, &got));
            let pass = self.agree_max(bad as f64)? == 0.0 && diff.is_none_or(|d| d <= 1e-2);
            reference.get_or_insert(got);
            Ok(pass.then_some(()).ok_or_else(|| {
                format!("{bad} CPU mismatches on PE {me}, max diff vs unfused {diff:?}")
            }))
        })
    }

    /// Runs the unfused and the fused kernels (wgmma when there, else mma)
    /// and `blas`'s variant (when cuBLAS is), each once, `check`ing it (on
    /// every PE: `Err` with what was wrong), then times it; PE 0 prints a
    /// line for the size.
    fn check_and_time(
        &self,
        out: &mut GemmBench,
        (case, label, s): (&str, &str, usize),
        (wgmma, unfused, fused): Runs,
        (blas_name, blas): BlasRun,
        mut check: impl FnMut(&Case) -> Res<Result<(), String>>,
    ) -> Res<()> {
        let tc = if wgmma { Tc::Wgmma } else { Tc::Mma };
        let (unfused, fused) = (|| unfused(tc), || fused(tc));
        let with_blas = || self.blas.as_ref().map_or(Ok(()), blas);
        let mut cases: Vec<Case> = vec![("unfused", "rust", &unfused), ("fused", "rust", &fused)];
        if self.blas.is_some() {
            cases.push((blas_name, "cublas", &with_blas));
        }
        let mut line = format!("{label} bf16 {s}³ on {} PE(s):", self.nv.n_pes());
        for &c in &cases {
            let checked = check(&c)?;
            if let Err(what) = &checked {
                out.failures.push(format!("{label} {} {s}: {what}", c.0));
            }
            let flops = 2.0 * (s as f64).powi(3);
            self.timed(out, (case, s, flops), c, checked.is_ok(), &mut line)?;
        }
        self.print(&line);
        Ok(())
    }
}
