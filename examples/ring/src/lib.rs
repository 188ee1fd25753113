//! The ring: a token passed around every PE with put-with-signal and
//! `signal_wait_until`, in one kernel (`examples/ring/kernel`).
//!
//! Each PE waits for its signal, adds one to the token and puts it to the
//! next PE with a signal. After `laps` laps PE 0 must hold `laps * n_pes`.

#![warn(missing_docs)]

use nvshmem_host::{Nvshmem, Result};
use std::path::PathBuf;
use std::time::{Duration, Instant};

nvshmem_host::include_kernels!(ring_kernels);

/// The folder of this package's kernels (`ring-kernels`), which its build
/// script builds.
pub fn ptx_dir() -> PathBuf {
    example_cli::ptx_dir!()
}

/// What one run of the ring gave on this PE.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RingOutcome {
    /// The PE count.
    pub n_pes: u32,
    /// Laps run.
    pub laps: u64,
    /// The token PE 0 ended with (`None` on the other PEs).
    pub token: Option<u64>,
    /// Kernel time on this PE, launch to completion.
    pub elapsed: Duration,
}

impl RingOutcome {
    /// The token PE 0 must end with.
    pub fn expected(&self) -> u64 {
        self.laps * self.n_pes as u64
    }

    /// `false` only on PE 0 with a wrong token.
    pub fn passed(&self) -> bool {
        self.token.is_none_or(|t| t == self.expected())
    }

    /// Microseconds per hop (one put-with-signal and one wait).
    pub fn us_per_hop(&self) -> f64 {
        self.elapsed.as_secs_f64() * 1e6 / (self.laps * self.n_pes as u64).max(1) as f64
    }

    /// PE 0's report line (`None` on the other PEs).
    ///
    /// ```
    /// use example_ring::RingOutcome;
    /// let o = RingOutcome { n_pes: 2, laps: 10, token: Some(20), elapsed: Default::default() };
    /// assert!(o.summary().unwrap().starts_with("ring: 2 PE(s), 10 laps: token = 20 (expected 20) PASS"));
    /// ```
    pub fn summary(&self) -> Option<String> {
        let token = self.token?;
        Some(format!(
            "ring: {} PE(s), {} laps: token = {token} (expected {}) {}; {:.2} us per hop",
            self.n_pes,
            self.laps,
            self.expected(),
            if self.passed() { "PASS" } else { "FAIL" },
            self.us_per_hop()
        ))
    }
}

/// Runs the ring ([`run`]), prints PE 0's [`summary`](RingOutcome::summary)
/// and says whether it passed. **Collective.**
pub fn run_and_report(nv: &Nvshmem, laps: u64) -> example_cli::Res<bool> {
    let outcome = run(nv, laps)?;
    if let Some(line) = outcome.summary() {
        println!("{line}");
    }
    Ok(outcome.passed())
}

/// Runs `laps` laps of the ring on every PE (collective: every PE calls it).
///
/// ```no_run
/// let nv = nvshmem_host::Nvshmem::init()?;
/// let outcome = example_ring::run(&nv, 1000)?;
/// assert!(outcome.passed());
/// # Ok::<(), nvshmem_host::Error>(())
/// ```
pub fn run(nv: &Nvshmem, laps: u64) -> Result<RingOutcome> {
    let stream = nv.stream();
    let token = nv.alloc_zeroed::<u64>(1)?;
    let send = nv.alloc_zeroed::<u64>(1)?;
    let signal = nv.alloc_zeroed::<u64>(1)?;
    let out = nv.alloc_zeroed::<u64>(1)?;
    let kernels = ring_kernels::Kernels::load_in(nv, ptx_dir())?;

    nv.barrier_all_on_stream(stream)?;
    nv.synchronize(stream)?;
    let start = Instant::now();
    // SAFETY: ring_pass touches one u64 of each symmetric buffer and `out` locally.
    unsafe { ring_kernels::ring_pass(&kernels, stream, 1, 1, &token, &send, &signal, laps, &out)? };
    nv.synchronize(stream)?;
    let elapsed = start.elapsed();
    nv.barrier_all_on_stream(stream)?;
    nv.synchronize(stream)?;
    let token = if nv.my_pe().index() == 0 {
        Some(out.to_vec(stream)?[0])
    } else {
        None
    };
    Ok(RingOutcome {
        n_pes: nv.n_pes(),
        laps,
        token,
        elapsed,
    })
}
