//! Timing and checking, as the examples and the benchmark do them: CUDA
//! events around runs that start together on every PE, medians, and results
//! compared with an f64 CPU reference on sampled entries.

#![warn(missing_docs)]

use example_cli::Res;
use nvshmem_host::Nvshmem;
use nvshmem_host::cudarc::driver::CudaEvent;
use nvshmem_host::cudarc::driver::sys::CUevent_flags;

/// The median of `v` (sorted in place); `NaN` when it is empty.
///
/// ```
/// assert_eq!(example_measure::median(&mut [3.0, 1.0, 2.0, 10.0]), 2.5);
/// assert!(example_measure::median(&mut []).is_nan());
/// ```
pub fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let h = v.len() / 2;
    if v.len() % 2 == 1 {
        v[h]
    } else {
        (v[h - 1] + v[h]) / 2.0
    }
}

/// A byte count for people: `8 B`, `4 KiB`, `64 MiB`, `682.7 KiB`.
///
/// ```
/// use example_measure::human;
/// assert_eq!((human(8), human(4096), human(64 << 20)), ("8 B".into(), "4 KiB".into(), "64 MiB".into()));
/// assert_eq!(human((2 << 20) / 3), "682.7 KiB");
/// ```
pub fn human(bytes: u64) -> String {
    for (shift, unit) in [(30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if bytes >= 1 << shift {
            return if bytes.is_multiple_of(1 << shift) {
                format!("{} {unit}", bytes >> shift)
            } else {
                format!("{:.1} {unit}", bytes as f64 / (1u64 << shift) as f64)
            };
        }
    }
    format!("{bytes} B")
}

/// The larger of `worst` and `err`, where a `NaN` anywhere wins (a result
/// with a `NaN` in it is never "within tolerance").
///
/// ```
/// use example_measure::max_nan;
/// assert_eq!(max_nan(1.0, 2.0), 2.0);
/// assert!(max_nan(f64::NAN, 2.0).is_nan() && max_nan(1.0, f64::NAN).is_nan());
/// ```
pub fn max_nan(worst: f64, err: f64) -> f64 {
    if worst.is_nan() || err.is_nan() {
        f64::NAN
    } else {
        worst.max(err)
    }
}

/// The largest `|a[i] - b[i]|`, `NaN` when any difference is.
///
/// ```
/// use example_measure::max_abs_diff;
/// assert_eq!(max_abs_diff(&[1.0f32, 5.0], &[1.0, 2.0]), 3.0);
/// assert!(max_abs_diff(&[f32::NAN], &[1.0]).is_nan());
/// ```
pub fn max_abs_diff<T: Copy + Into<f64>>(a: &[T], b: &[T]) -> f64 {
    a.iter().zip(b).fold(0.0, |acc, (&x, &y)| {
        max_nan(acc, (x.into() - y.into()).abs())
    })
}

/// What a sampled check found.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sampled {
    /// The largest error (`NaN` when a sampled entry was `NaN`).
    pub worst: f64,
    /// How many sampled entries were outside the tolerance.
    pub bad: usize,
}

impl Sampled {
    /// Whether every sampled entry was within the tolerance.
    pub fn pass(&self) -> bool {
        self.bad == 0
    }
}

/// The shape of a sampled check: entries `(i, j)` of a `rows × cols` result
/// that is `Σ_{kk < k} a(i, kk) · b(j, kk)`.
#[derive(Clone, Copy, Debug)]
pub struct Samples {
    /// How many entries to check.
    pub count: usize,
    /// Which entries (the same seed picks the same ones).
    pub seed: u64,
    /// Rows of the result.
    pub rows: usize,
    /// Columns of the result.
    pub cols: usize,
    /// The length of each dot product.
    pub k: usize,
}

impl Samples {
    /// Checks `count` pseudo-random entries: `got(i, j)` against the f64 dot
    /// product of row `i` of `a` and row `j` of `b` (`a(i, kk)`,
    /// `b(j, kk)`), within `tolerance(dot, Σ|a·b|)`.
    ///
    /// ```
    /// use example_measure::Samples;
    /// let s = Samples { count: 16, seed: 1, rows: 4, cols: 4, k: 3 };
    /// let exact = s.check(|i, kk| (i + kk) as f64, |j, kk| (j * kk) as f64,
    ///     |i, j| (0..3).map(|kk| ((i + kk) * j * kk) as f64).sum(), |_, _| 0.0);
    /// assert!(exact.pass() && exact.worst == 0.0);
    /// let off = s.check(|_, _| 1.0, |_, _| 1.0, |_, _| 4.0, |_, _| 0.5);
    /// assert_eq!((off.bad, off.worst), (16, 1.0));
    /// ```
    pub fn check(
        &self,
        a: impl Fn(usize, usize) -> f64,
        b: impl Fn(usize, usize) -> f64,
        got: impl Fn(usize, usize) -> f64,
        tolerance: impl Fn(f64, f64) -> f64,
    ) -> Sampled {
        let mut out = Sampled::default();
        let mut h = self.seed;
        for _ in 0..self.count {
            h = splitmix(h);
            let (i, j) = (
                (h >> 8) as usize % self.rows,
                (h >> 36) as usize % self.cols,
            );
            let (mut dot, mut mag) = (0f64, 0f64);
            for kk in 0..self.k {
                let p = a(i, kk) * b(j, kk);
                dot += p;
                mag += p.abs();
            }
            let err = (got(i, j) - dot).abs();
            if err.is_nan() || err > tolerance(dot, mag) {
                out.bad += 1;
            }
            out.worst = max_nan(out.worst, err);
        }
        out
    }
}

/// SplitMix64's step: a well-mixed 64-bit hash of `x`.
///
/// ```
/// assert_ne!(example_measure::splitmix(1), example_measure::splitmix(2));
/// ```
pub fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Times runs on this PE's stream with CUDA events: `warmup` untimed runs,
/// then `iters` timed ones, each started after a barrier over every PE.
pub struct Timer<'a> {
    nv: &'a Nvshmem,
    start: CudaEvent,
    end: CudaEvent,
    warmup: usize,
    iters: usize,
}

impl<'a> Timer<'a> {
    /// A timer for `warmup` + `iters` runs.
    pub fn new(nv: &'a Nvshmem, warmup: usize, iters: usize) -> Res<Timer<'a>> {
        let event = || {
            nv.context()
                .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
        };
        Ok(Timer {
            nv,
            start: event()?,
            end: event()?,
            warmup,
            iters,
        })
    }

    /// A CUDA event on the same context, for a launch to record between its
    /// kernels (see [`each_run`](Self::each_run)).
    pub fn event(&self) -> Res<CudaEvent> {
        Ok(self
            .nv
            .context()
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?)
    }

    /// Runs `launch` `warmup + iters` times (barrier, start event, launch,
    /// end event, synchronize) and hands each timed run's two events to `timed`.
    pub fn each_run(
        &self,
        launch: &dyn Fn() -> Res<()>,
        mut timed: impl FnMut(&CudaEvent, &CudaEvent) -> Res<()>,
    ) -> Res<()> {
        let stream = self.nv.stream();
        for i in 0..self.warmup + self.iters {
            self.nv.barrier_all_on_stream(stream)?;
            self.start.record(stream)?;
            launch()?;
            self.end.record(stream)?;
            self.nv.synchronize(stream)?;
            if i >= self.warmup {
                timed(&self.start, &self.end)?;
            }
        }
        Ok(())
    }

    /// This PE's median time of `launch`, in milliseconds.
    pub fn median_ms(&self, launch: &dyn Fn() -> Res<()>) -> Res<f64> {
        let mut times = Vec::with_capacity(self.iters);
        self.each_run(launch, |s, e| {
            times.push(s.elapsed_ms(e)? as f64);
            Ok(())
        })?;
        Ok(median(&mut times))
    }
}

/// The median time in seconds of `reps` back-to-back calls of `f` on this
/// PE's stream, each between two CUDA events, after `warmup` untimed calls:
/// no barrier and no host synchronization in between, as nccl-tests time
/// (the launch is included when the host is slower than the GPU).
pub fn back_to_back(
    nv: &Nvshmem,
    warmup: usize,
    reps: usize,
    mut f: impl FnMut() -> Res<()>,
) -> Res<f64> {
    let (ctx, stream) = (nv.context(), nv.stream());
    for _ in 0..warmup {
        f()?;
    }
    let mut events = Vec::with_capacity(reps);
    for _ in 0..reps {
        let start = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
        let end = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
        start.record(stream)?;
        f()?;
        end.record(stream)?;
        events.push((start, end));
    }
    nv.synchronize(stream)?;
    let mut t = events
        .iter()
        .map(|(s, e)| Ok(s.elapsed_ms(e)? as f64 * 1e-3))
        .collect::<Res<Vec<f64>>>()?;
    Ok(median(&mut t))
}
