//! The runs of the fused-kernel examples (`ag_gemm`'s bf16 half, `gemm_rs`):
//! the unfused and fused form of each kernel family, each checked once and
//! then timed.

use super::Tc;
use example_cli::{Res, Timing};
use example_measure::{Sampled, Timer};
use nvshmem_host::Nvshmem;

/// A named run of a fused-kernel example: `unfused mma`, `fused wgmma`, ...
pub type Variant<'a> = (String, Box<dyn Fn() -> Res<()> + 'a>);

/// The unfused and the fused run of `mma`, then of `wgmma` when `wgmma`.
pub fn variants<'a>(
    wgmma: bool,
    unfused: impl Fn(Tc) -> Res<()> + Copy + 'a,
    fused: impl Fn(Tc) -> Res<()> + Copy + 'a,
) -> Vec<Variant<'a>> {
    let mut tcs = vec![(Tc::Mma, "mma")];
    if wgmma {
        tcs.push((Tc::Wgmma, "wgmma"));
    }
    tcs.into_iter()
        .flat_map(|(tc, name)| -> [Variant<'a>; 2] {
            [
                (format!("unfused {name}"), Box::new(move || unfused(tc))),
                (format!("fused {name}"), Box::new(move || fused(tc))),
            ]
        })
        .collect()
}

/// How the runs are reported and timed.
pub struct Variants<'a> {
    /// The runs, from [`variants`].
    pub runs: Vec<Variant<'a>>,
    /// The start of the check line: `gemm_rs PE 0/2: M=... n=...`.
    pub title: String,
    /// The start of the timing line: `gemm_rs PE 0`.
    pub tag: String,
    /// Entries each check samples (for the report).
    pub samples: usize,
    /// Floating-point operations per run (for TFLOP/s).
    pub flops: f64,
}

impl Variants<'_> {
    /// Checks each run once: `check` launches it (from poisoned buffers) and
    /// checks its result, giving the sampled check and any further text
    /// for the report. Prints one line with every result, then times each
    /// run (the median of `timing`'s runs, a barrier before each) and
    /// prints their times. Returns whether every check passed.
    pub fn check_and_time(
        &self,
        nv: &Nvshmem,
        timing: Timing,
        mut check: impl FnMut(&dyn Fn() -> Res<()>) -> Res<(Sampled, String)>,
    ) -> Res<bool> {
        let (mut ok, mut report) = (true, Vec::new());
        for (name, launch) in &self.runs {
            let (checked, more) = check(launch)?;
            ok &= checked.pass();
            report.push(format!(
                "{name}: max err {:.3e}{more}{}",
                checked.worst,
                if checked.pass() { "" } else { " FAIL" }
            ));
        }
        println!(
            "{}: {}: {} (CPU f64 on {} samples)",
            self.title,
            if ok { "PASS" } else { "FAIL" },
            report.join("; "),
            self.samples
        );
        let timer = Timer::new(nv, timing.warmup, timing.iters)?;
        let mut line = self.tag.clone() + ":";
        for (name, launch) in &self.runs {
            let ms = timer.median_ms(launch)?;
            let tflops = self.flops / (ms * 1e-3) / 1e12;
            line += &format!(" | {name} {ms:.3} ms ({tflops:.1} TFLOP/s)");
        }
        println!("{line}");
        let stream = nv.stream();
        nv.barrier_all_on_stream(stream)?;
        nv.synchronize(stream)?;
        Ok(ok)
    }
}
