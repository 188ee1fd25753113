//! Per-kernel GPU tests over N PEs: write the check, list the PE counts, run.
//!
//! A test is a function that runs on every PE with NVSHMEM initialized, and a
//! list of PE counts. [`main`] is a test binary's whole `main` (use
//! `harness = false` in `Cargo.toml`): it starts each test on each PE count
//! through the [`launcher`], collects every PE's verdict, and
//! prints one line per run and a summary `N passed, N failed, N skipped`.
//!
//! ```no_run
//! use nvshmem_host::harness::{self, GpuTest, TestPe, TestResult, check_eq};
//!
//! fn ring(pe: &mut TestPe) -> TestResult {
//!     let nv = pe.nvshmem();
//!     // Poisoned: if the kernel writes nothing, the check fails.
//!     let buf = pe.poisoned::<i32>(1)?;
//!     let kernels = pe.module("my-kernels")?;
//!     let k = kernels.kernel("put_rank_to_next")?;
//!     // SAFETY: the kernel writes one i32 through its argument.
//!     unsafe { k.launch(nv.stream(), 1, 1, (buf.sym_ptr(),))? };
//!     nv.barrier_all_on_stream(nv.stream())?;
//!     let prev = nv.my_pe().ring_prev(nv.n_pes()).index() as i32;
//!     check_eq("put_rank_to_next", &buf.to_vec(nv.stream())?, &[prev])
//! }
//!
//! fn main() {
//!     // The build script says where the kernels are:
//!     // println!("cargo:rustc-env=NVSHMEM_RS_PTX_DIR={}", out.ptx.parent().unwrap().display());
//!     let tests = [GpuTest::new("ring", ring).pes(&[1, 2, 4])];
//!     # // The doctest has no build script to set the variable.
//!     # macro_rules! env { ($name:literal) => { "ptx" }; }
//!     harness::main(env!("NVSHMEM_RS_PTX_DIR"), &tests);
//! }
//! ```
//!
//! One variable names the folder of kernel manifests: `NVSHMEM_RS_PTX_DIR`,
//! set for the compiler by the build script (`env!`), and at run time (a
//! GPU machine with the kernels copied elsewhere) to override it.
//!
//! # Checks that can fail
//! A check must be able to fail on a kernel that did nothing. Allocate every
//! destination with [`TestPe::poisoned`] (or [`poisoned`] with a marker of
//! your own): floats hold NaN, integers the test's own sentinel
//! ([`Poison`]), so an element left unwritten never equals what is
//! expected, and [`check_close`] never accepts NaN. Where an expected value
//! could equal the poison, choose another marker. A part of a test that
//! cannot run on this build or GPU says so with [`TestPe::skip_part`]: its
//! line then reads `ok (...), part(s) SKIPPED: why`, never a plain `ok`.
//!
//! # Under mpirun, srun or torchrun
//! Started by an outside launcher, the binary is one PE of that job. Give
//! the launcher the test binary itself: `cargo test --release --no-run`
//! prints its path (`target/release/deps/<name>-<hash>`; not a glob, which
//! also matches the `.d` file beside it):
//!
//! ```text
//! mpirun -n 2 target/release/deps/kernels-0123abcd
//! srun -K -n 2 --mpi=pmix target/release/deps/kernels-0123abcd
//! ```
//!
//! NVSHMEM starts once through the launcher's bootstrap, and every test
//! whose PE counts include the job's size runs on every rank in turn; every
//! other selected test is listed as SKIPPED with the PE counts it runs on.
//! Each rank prints `[rank R]` lines and its own summary. A filter that
//! selects no test fails the rank here (it is a mistake, not another
//! binary's test). A failed test stops the rank at once with exit status 1,
//! without finalizing: after a failure the PEs may be out of step, and a
//! collective would wait forever. mpirun then stops the job; srun does so
//! only with `-K` (`--kill-on-bad-exit`). Each test's timeout holds here
//! too: a rank whose test (or the barrier after it) outlives it prints
//! `TIMED OUT` and exits 1. Run the remaining tests with a filter.
//!
//! # A failing PE never hangs the run
//! A PE whose test fails or panics records its verdict and exits 1 without
//! NVSHMEM's (collective) finalize, and the launcher stops the other PEs,
//! which may be waiting for it in a collective. The failure line names each
//! PE's verdict; PEs that were stopped say `no verdict`, with their last
//! failed check when they made one ([`Failure::new`], which every check
//! here uses, notes it at once: a test that returns its failure may still
//! hang on the way out, in a buffer's collective free).
//!
//! # Without a GPU
//! Every run is reported `SKIPPED` with the reason, never passed, and the
//! binary exits 0 — unless `NVSHMEM_RS_REQUIRE_GPU=1`, which makes a missing
//! GPU a failure (GPU runners set it).
//!
//! # Several PEs on one GPU
//! Two PEs share a GPU as they are. A run with more PEs than GPUs and more
//! than 2 PEs needs CUDA MPS, and is skipped saying so when it is not
//! running (a failure under `NVSHMEM_RS_REQUIRE_GPU=1`). Start it before the
//! tests and stop it after:
//!
//! ```text
//! nvidia-cuda-mps-control -d            # as the user who runs the tests
//! cargo test --release
//! echo quit | nvidia-cuda-mps-control
//! ```
//!
//! The harness sees it through its control pipe, in
//! `$CUDA_MPS_PIPE_DIRECTORY` or `/tmp/nvidia-mps`.
//!
//! # Command line and reports
//! As with libtest: arguments filter tests by substring (`--exact`: by
//! name), `--skip X` leaves out the tests that match `X`, and `--list`
//! (with `--format terse`) lists them, which cargo-nextest reads; run
//! nextest with `--test-threads 1`, since its parallel tests would put
//! several multi-PE runs on the same GPUs at once. Other flags
//! (`--nocapture`, `--test-threads 1`) are accepted and change nothing;
//! `--help` says all this. Besides the lines on stdout, a JSON report goes
//! to `$NVSHMEM_RS_TEST_REPORT` when set.
//!
//! # Environment
//! A value that does not parse is an error (exit status 2), never the
//! default.
//!
//! | Variable | Effect |
//! |---|---|
//! | `NVSHMEM_RS_REQUIRE_GPU=1` | no GPU (or no MPS where needed) is a failure, not a skip (`1`/`true`/`yes`, or `0`/`false`/`no`) |
//! | `NVSHMEM_RS_TEST_REPORT=path` | write a JSON report there |
//! | `NVSHMEM_RS_TEST_TIMEOUT=secs` | per-run timeout (default 120; [`GpuTest::timeout`] overrides it), under an outside launcher too |
//! | `NVSHMEM_RS_PTX_DIR=dir` | where [`TestPe::module`] finds manifests (default: the one given to [`main`]) |

mod settings;

use crate::job::launcher::{self, LaunchPlan, Outcome};
use crate::{Error, Module, Nvshmem, SymBuffer};
use bytemuck::Pod;
use settings::{Args, Settings, USAGE};
pub use settings::{REQUIRE_GPU, gpu_required};
use std::fmt::{Debug, Display};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The variable that tells a process it is a PE of test `NAME`.
const WORKER: &str = "NVSHMEM_RS_HARNESS_TEST";
/// Where each PE writes its verdict, `<dir>/<rank>.txt`.
const VERDICTS: &str = "NVSHMEM_RS_HARNESS_VERDICTS";
/// The manifest folder handed from the orchestrator to its PEs.
const PTX_DIR: &str = "NVSHMEM_RS_PTX_DIR";

/// What a test returns on each PE.
pub type TestResult = std::result::Result<(), Failure>;

/// Why a test failed on one PE: a message naming the kernel and the first wrong value.
/// Make one with [`Failure::new`] (or `.into()`, `?`), which notes it at
/// once; a failure built as `Failure(message)` is not noted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure(pub String);

impl Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Failure {
    /// A failure with `message`, noted at once as this PE's last failed
    /// check: when the test then hangs on its way out (a buffer's
    /// collective free waiting for a peer), the timeout report still says
    /// what failed.
    pub fn new(message: impl Into<String>) -> Failure {
        let message = message.into();
        if let Some(path) = PENDING_FILE.get() {
            let _ = std::fs::write(path, &message);
        }
        *last_failure_slot() = Some(message.clone());
        Failure(message)
    }
}

/// The message of the last [`Failure::new`] of the running test.
static LAST_FAILURE: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);
/// Where a PE started by the harness writes that message too (the
/// orchestrator reads it when the PE leaves no verdict).
static PENDING_FILE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// [`LAST_FAILURE`], locked (a panic while it was held left a value, no less).
fn last_failure_slot() -> std::sync::MutexGuard<'static, Option<String>> {
    LAST_FAILURE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Where the PE of `rank` notes its failures, in the run's verdict folder.
fn pending_file(verdicts: &Path, rank: impl Display) -> PathBuf {
    verdicts.join(format!("{rank}.pending.txt"))
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::new(e.to_string())
    }
}

impl From<String> for Failure {
    fn from(s: String) -> Self {
        Failure::new(s)
    }
}

/// Fails with the kernel's name, the first index where `got` and `expected`
/// differ, and both values.
///
/// ```
/// use nvshmem_host::harness::check_eq;
/// assert!(check_eq("scale", &[1, 2], &[1, 2]).is_ok());
/// let e = check_eq("scale", &[1, 5], &[1, 2]).unwrap_err();
/// assert_eq!(e.0, "kernel `scale`: element 1 is 5, expected 2 (1 of 2 elements wrong)");
/// ```
pub fn check_eq<T: PartialEq + Debug>(kernel: &str, got: &[T], expected: &[T]) -> TestResult {
    if got.len() != expected.len() {
        return Err(Failure::new(format!(
            "kernel `{kernel}`: {} elements, expected {}",
            got.len(),
            expected.len()
        )));
    }
    let wrong = got.iter().zip(expected).filter(|(g, e)| g != e).count();
    match got.iter().zip(expected).position(|(g, e)| g != e) {
        None => Ok(()),
        Some(i) => Err(Failure::new(format!(
            "kernel `{kernel}`: element {i} is {:?}, expected {:?} ({wrong} of {} elements wrong)",
            got[i],
            expected[i],
            got.len()
        ))),
    }
}

/// How far a float result may be from its expected value in
/// [`check_close`]: `|got - expected| <= abs + rel * |expected|`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// The absolute part.
    pub abs: f64,
    /// The part relative to the expected value's magnitude.
    pub rel: f64,
}

impl Tolerance {
    /// Exact equality (for results that are exact in their type).
    pub const EXACT: Tolerance = Tolerance { abs: 0.0, rel: 0.0 };

    /// Only an absolute tolerance.
    pub const fn abs(abs: f64) -> Tolerance {
        Tolerance { abs, rel: 0.0 }
    }

    /// Only a relative tolerance.
    pub const fn rel(rel: f64) -> Tolerance {
        Tolerance { abs: 0.0, rel }
    }

    /// Whether `got` is close enough to `expected`. A NaN `got` (the
    /// [`Poison`] of floats) never is, nor is anything when `expected` is NaN.
    pub fn accepts(&self, got: f64, expected: f64) -> bool {
        (got - expected).abs() <= self.abs + self.rel * expected.abs()
    }
}

/// Fails with the kernel's name, the first index where `got` is not within
/// `tol` of `expected`, both values and the tolerance. NaN is never close
/// to anything, so a float destination [`poisoned`] with NaN and left
/// untouched fails.
///
/// ```
/// use nvshmem_host::harness::{Tolerance, check_close};
/// let tol = Tolerance { abs: 1e-6, rel: 1e-3 };
/// assert!(check_close("scale", &[1.0005f32, 2.0], &[1.0, 2.0], tol).is_ok());
/// let e = check_close("scale", &[1.0f32, f32::NAN], &[1.0, 2.0], tol).unwrap_err();
/// assert!(e.0.starts_with("kernel `scale`: element 1 is NaN, expected 2.0 (±"), "{}", e.0);
/// ```
pub fn check_close<T: Copy + Debug + Into<f64>>(
    kernel: &str,
    got: &[T],
    expected: &[T],
    tol: Tolerance,
) -> TestResult {
    if got.len() != expected.len() {
        return Err(Failure::new(format!(
            "kernel `{kernel}`: {} elements, expected {}",
            got.len(),
            expected.len()
        )));
    }
    let far = |(g, e): (&T, &T)| !tol.accepts((*g).into(), (*e).into());
    let wrong = got.iter().zip(expected).filter(|p| far(*p)).count();
    match got.iter().zip(expected).position(far) {
        None => Ok(()),
        Some(i) => {
            let (g, e): (f64, f64) = (got[i].into(), expected[i].into());
            Err(Failure::new(format!(
                "kernel `{kernel}`: element {i} is {g:?}, expected {e:?} (±{:.3e}: abs {:e} + rel {:e}; {wrong} of {} elements outside)",
                tol.abs + tol.rel * e.abs(),
                tol.abs,
                tol.rel,
                got.len()
            )))
        }
    }
}

/// A marker that poisoned memory holds: a value no correct result of the
/// test equals, so that a kernel that skips an element (or does nothing)
/// leaves a value every check rejects. Floats use NaN (never equal, never
/// [close](check_close), to anything); integers a sentinel derived from a
/// seed, which [`TestPe`] takes from the test's name, so each test has its
/// own and a value left over from another test does not pass either.
/// Integer sentinels have the top bit set and the next clear: below
/// `-2^(bits-2)` when signed, at least `2^(bits-1)` when unsigned.
pub trait Poison: Pod + PartialEq + Debug {
    /// The marker for sentinel seed `seed` (never 0 for integers).
    fn poison(seed: u64) -> Self;
}

/// A 64-bit scramble (splitmix64's finalizer), for sentinels.
fn scramble(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

macro_rules! int_poison {
    ($($t:ty),*) => {$(
        impl Poison for $t {
            fn poison(seed: u64) -> Self {
                // The top bit set and the next clear: far from the small
                // values (of either sign) tests compute.
                let v = ((scramble(seed) | 1 << 63) & !(1 << 62)) >> (64 - <$t>::BITS);
                v as $t
            }
        }
    )*};
}
int_poison!(u8, u16, u32, u64, i8, i16, i32, i64);

impl Poison for f32 {
    fn poison(_: u64) -> Self {
        f32::NAN
    }
}
impl Poison for f64 {
    fn poison(_: u64) -> Self {
        f64::NAN
    }
}
impl Poison for half::f16 {
    fn poison(_: u64) -> Self {
        half::f16::NAN
    }
}
impl Poison for half::bf16 {
    fn poison(_: u64) -> Self {
        half::bf16::NAN
    }
}

/// Arrays of poison (a `[u8; 3]` element, say).
impl<T: Poison, const N: usize> Poison for [T; N]
where
    [T; N]: Pod,
{
    fn poison(seed: u64) -> Self {
        [T::poison(seed); N]
    }
}

/// The sentinel seed of a test, from its name (FNV-1a).
pub fn sentinel_seed(test: &str) -> u64 {
    test.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// [`Nvshmem::alloc`] of `len` elements, every one set to `marker` (say
/// [`Poison::poison`], or [`TestPe::poisoned`] for the test's own).
/// **Collective**, like [`Nvshmem::alloc_zeroed`]: it returns once the
/// buffer holds `marker` on every PE, so a peer's kernel may write into it
/// at once.
pub fn poisoned<T: Pod>(nv: &Nvshmem, len: usize, marker: T) -> crate::Result<SymBuffer<T>> {
    let buf = nv.alloc::<T>(len)?;
    let stream = nv.stream();
    buf.fill(stream, marker)?;
    nv.barrier_all_on_stream(stream)?;
    nv.synchronize(stream)?;
    Ok(buf)
}

/// Fails with `message` unless `condition` holds.
pub fn ensure<M: Display>(condition: bool, message: impl FnOnce() -> M) -> TestResult {
    if condition {
        Ok(())
    } else {
        Err(Failure::new(message().to_string()))
    }
}

/// One GPU test: a function every PE runs, and the PE counts to run it with.
#[derive(Clone, Copy)]
pub struct GpuTest {
    name: &'static str,
    run: fn(&mut TestPe) -> TestResult,
    pes: &'static [u32],
    timeout: Option<Duration>,
    env: &'static [(&'static str, &'static str)],
}

impl GpuTest {
    /// A test run with 1 and 2 PEs unless [`pes`](Self::pes) says otherwise.
    ///
    /// ```
    /// use nvshmem_host::harness::{GpuTest, TestPe, TestResult};
    /// fn noop(_: &mut TestPe) -> TestResult { Ok(()) }
    /// let t = GpuTest::new("noop", noop).pes(&[1, 2, 4]);
    /// assert_eq!(t.name(), "noop");
    /// ```
    pub const fn new(name: &'static str, run: fn(&mut TestPe) -> TestResult) -> Self {
        GpuTest {
            name,
            run,
            pes: &[1, 2],
            timeout: None,
            env: &[],
        }
    }

    /// Environment variables for every PE of each run (NVSHMEM settings, say).
    pub const fn env(mut self, vars: &'static [(&'static str, &'static str)]) -> Self {
        self.env = vars;
        self
    }

    /// The PE counts to run it with.
    pub const fn pes(mut self, pes: &'static [u32]) -> Self {
        self.pes = pes;
        self
    }

    /// A timeout for each run (default `NVSHMEM_RS_TEST_TIMEOUT` or 120 s).
    pub const fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The test's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Each run's limit: its own [`timeout`](Self::timeout), else the
    /// environment's.
    fn run_timeout(&self, settings: &Settings) -> Duration {
        self.timeout.unwrap_or(settings.timeout)
    }
}

/// What a test gets on each PE: NVSHMEM, initialized, the project's
/// modules, the test's poison, and a way to say a part of it was skipped.
pub struct TestPe {
    nv: Nvshmem,
    ptx_dir: PathBuf,
    /// The running test's [`sentinel_seed`].
    seed: u64,
    /// Parts of the running test that did not run, and why.
    skipped: Vec<String>,
}

impl TestPe {
    fn new(nv: Nvshmem, ptx_dir: &Path) -> TestPe {
        TestPe {
            nv,
            ptx_dir: ptx_dir.to_path_buf(),
            seed: 0,
            skipped: Vec::new(),
        }
    }

    /// Gets ready for `test`: its sentinel, no parts skipped yet.
    fn start(&mut self, test: &GpuTest) {
        self.seed = sentinel_seed(test.name);
        self.skipped.clear();
        *last_failure_slot() = None;
    }

    /// This test's poison marker for `T` (NaN for floats, the test's own
    /// sentinel for integers): what an untouched element of a buffer from
    /// [`poisoned`](Self::poisoned) holds.
    pub fn poison<T: Poison>(&self) -> T {
        T::poison(self.seed)
    }

    /// The running test's [`sentinel_seed`]: [`Poison::poison`] of it is
    /// [`poison`](Self::poison).
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// [`poisoned`](fn@poisoned) with this test's [`poison`](Self::poison):
    /// a destination whose every element a kernel must overwrite, or leave
    /// as the poison where it must not write. **Collective.**
    pub fn poisoned<T: Poison>(&self, len: usize) -> crate::Result<SymBuffer<T>> {
        poisoned(&self.nv, len, self.poison::<T>())
    }

    /// Records that `part` of the test did not run, and why: the test's
    /// line then says `SKIPPED` for it even when the rest passes, and the
    /// summary counts it.
    pub fn skip_part(&mut self, part: &str, why: impl Display) {
        self.skipped.push(format!("{part}: {why}"));
    }

    /// This PE's NVSHMEM.
    pub fn nvshmem(&self) -> &Nvshmem {
        &self.nv
    }

    /// Loads `<ptx dir>/<crate>.json` (registered with NVSHMEM).
    pub fn module(&self, crate_name: &str) -> crate::Result<Module> {
        self.nv.load_module_in(&self.ptx_dir, crate_name)
    }

    /// The folder of manifests [`module`](Self::module) reads.
    pub fn ptx_dir(&self) -> &Path {
        &self.ptx_dir
    }
}

/// The outcome of one test on one PE count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every PE passed.
    Passed,
    /// Every PE passed what ran, but parts were skipped (why, each).
    PassedWithSkips(Vec<String>),
    /// A PE failed, crashed or timed out: the message says which and why.
    Failed(String),
    /// Not run, and why.
    Skipped(String),
}

/// The whole `main` of a GPU test binary. `ptx_dir` is the folder of
/// manifests, `env!("NVSHMEM_RS_PTX_DIR")` as the build script sets it;
/// `NVSHMEM_RS_PTX_DIR` at run time overrides it. Exits the process.
pub fn main(ptx_dir: &str, tests: &[GpuTest]) -> ! {
    let ptx_dir = std::env::var_os(PTX_DIR)
        .map(PathBuf::from)
        .unwrap_or_else(|| ptx_dir.into());
    if let Ok(name) = std::env::var(WORKER) {
        std::process::exit(run_worker(&name, tests, &ptx_dir));
    }
    let env = |name: &str| std::env::var(name).ok();
    let settings = Settings::from_env(&env).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(2)
    });
    let args = Args::parse(std::env::args().skip(1));
    if args.help {
        print!("{USAGE}");
        std::process::exit(0);
    }
    let selected: Vec<&GpuTest> = tests.iter().filter(|t| args.selects(t.name)).collect();
    if args.list {
        // libtest's format, which cargo-nextest and IDEs read.
        for t in &selected {
            println!("{}: test", t.name);
        }
        if !args.terse {
            let n = selected.len();
            if n > 0 {
                println!();
            }
            println!("{n} test{}, 0 benchmarks", if n == 1 { "" } else { "s" });
        }
        std::process::exit(0);
    }
    if let Some((launcher, rank, size)) = crate::job::bootstrap::outside_job(&env) {
        std::process::exit(run_in_job(
            launcher, rank, size, &selected, &args, &settings, &ptx_dir,
        ));
    }
    if selected.is_empty() && !args.filters.is_empty() {
        // Exit 0 as libtest does: `cargo test NAME` passes NAME to every test binary.
        println!(
            "no test selected by the command line {:?} (the tests: {})",
            args.given,
            names(tests)
        );
    }
    let require_gpu = settings.require_gpu;
    let gpus = crate::gpu_count();

    let mut rows = Vec::new();
    for test in &selected {
        for &n in test.pes {
            let started = Instant::now();
            let verdict = match &gpus {
                Err(e) => Verdict::Skipped(format!("no GPU: {}", first_line(&e.to_string()))),
                Ok(count) if n as usize > *count && n > 2 && !mps_running() => {
                    Verdict::Skipped(format!(
                        "{n} PEs on {count} GPU(s) need CUDA MPS, which is not running (start it with `nvidia-cuda-mps-control -d`; see nvshmem_host::harness, several PEs on one GPU)"
                    ))
                }
                Ok(_) => run_orchestrated(test, n, &ptx_dir, test.run_timeout(&settings)),
            };
            let verdict = match verdict {
                Verdict::Skipped(why) if require_gpu => {
                    Verdict::Failed(format!("NVSHMEM_RS_REQUIRE_GPU=1: {why}"))
                }
                v => v,
            };
            let secs = started.elapsed().as_secs_f64();
            match &verdict {
                Verdict::Passed => println!("test {} [{n} PE] ... ok ({secs:.2} s)", test.name),
                Verdict::PassedWithSkips(parts) => println!(
                    "test {} [{n} PE] ... ok ({secs:.2} s), {}",
                    test.name,
                    skipped_parts(parts)
                ),
                Verdict::Failed(why) => println!(
                    "test {} [{n} PE] ... FAILED ({secs:.2} s)\n    {why}",
                    test.name
                ),
                Verdict::Skipped(why) => println!("test {} [{n} PE] ... SKIPPED: {why}", test.name),
            }
            rows.push((test.name, n, verdict, secs));
        }
    }
    let count = |f: fn(&Verdict) -> bool| rows.iter().filter(|r| f(&r.2)).count();
    let (passed, partly, failed, skipped) = (
        count(|v| matches!(v, Verdict::Passed | Verdict::PassedWithSkips(_))),
        count(|v| matches!(v, Verdict::PassedWithSkips(_))),
        count(|v| matches!(v, Verdict::Failed(_))),
        count(|v| matches!(v, Verdict::Skipped(_))),
    );
    println!("\n{}", summary_line(passed, partly, failed, skipped));
    if skipped > 0 && passed == 0 && failed == 0 {
        println!("(nothing ran on a GPU: every test above was skipped)");
    }
    if let Some(path) = std::env::var_os("NVSHMEM_RS_TEST_REPORT") {
        let report = json_report(&rows, passed, failed, skipped);
        if let Err(e) = std::fs::write(&path, report) {
            eprintln!(
                "cannot write the report to {}: {e}",
                Path::new(&path).display()
            );
            std::process::exit(1);
        }
    }
    std::process::exit(if failed > 0 { 1 } else { 0 });
}

/// The summary: `N passed, N failed, N skipped`, and how many passes had
/// parts skipped.
fn summary_line(passed: usize, partly: usize, failed: usize, skipped: usize) -> String {
    let partly = if partly > 0 {
        format!(" ({partly} with parts skipped)")
    } else {
        String::new()
    };
    format!("{passed} passed{partly}, {failed} failed, {skipped} skipped")
}

/// `SKIPPED part(s): ...` of a run that passed the rest.
fn skipped_parts(parts: &[String]) -> String {
    format!("part(s) SKIPPED: {}", parts.join("; "))
}

/// The verdict file of a PE that passed: `ok`, then a skipped part a line.
fn ok_verdict(skipped: &[String]) -> String {
    std::iter::once("ok")
        .chain(skipped.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

/// CUDA MPS is running when its control pipe exists.
fn mps_running() -> bool {
    let dir = std::env::var_os("CUDA_MPS_PIPE_DIRECTORY")
        .map(PathBuf::from)
        .unwrap_or_else(|| "/tmp/nvidia-mps".into());
    dir.join("control").exists()
}

/// Runs `test` on `n` PEs of this same binary and collects their verdicts.
fn run_orchestrated(test: &GpuTest, n: u32, ptx_dir: &Path, timeout: Duration) -> Verdict {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return Verdict::Failed(format!("cannot find this test binary: {e}")),
    };
    let verdicts = std::env::temp_dir().join(format!(
        "nvshmem-harness-{}-{}-{n}",
        std::process::id(),
        test.name
    ));
    let _ = std::fs::remove_dir_all(&verdicts);
    if let Err(e) = std::fs::create_dir_all(&verdicts) {
        return Verdict::Failed(format!("cannot create {}: {e}", verdicts.display()));
    }
    let mut plan = LaunchPlan::new(n as usize, exe.into_os_string())
        .with_timeout(timeout)
        .with_env(WORKER, test.name)
        .with_env(VERDICTS, verdicts.as_os_str())
        .with_env(PTX_DIR, ptx_dir.as_os_str());
    for (name, value) in test.env {
        plan = plan.with_env(*name, *value);
    }
    let outcome = launcher::run(&plan);
    let mut failures = Vec::new();
    let mut skipped: Vec<String> = Vec::new();
    for rank in 0..n {
        match std::fs::read_to_string(verdicts.join(format!("{rank}.txt"))) {
            Ok(v) if v.lines().next() == Some("ok") => {
                for part in v.lines().skip(1) {
                    if !skipped.iter().any(|p| p == part) {
                        skipped.push(part.to_string());
                    }
                }
            }
            Ok(v) => failures.push(format!("PE {rank}: {v}")),
            Err(_) => failures.push(
                match std::fs::read_to_string(pending_file(&verdicts, rank)) {
                    Ok(last) => format!(
                        "PE {rank}: no verdict (it was stopped on its way out of a failed check): {last}"
                    ),
                    Err(_) => format!("PE {rank}: no verdict (it crashed or was stopped)"),
                },
            ),
        }
    }
    let _ = std::fs::remove_dir_all(&verdicts);
    match outcome {
        Ok(Outcome::Success) if failures.is_empty() && skipped.is_empty() => Verdict::Passed,
        Ok(Outcome::Success) if failures.is_empty() => Verdict::PassedWithSkips(skipped),
        Ok(Outcome::Success) => Verdict::Failed(failures.join("\n    ")),
        Ok(other) => {
            failures.insert(0, other.to_string());
            Verdict::Failed(failures.join("\n    "))
        }
        Err(e) => Verdict::Failed(format!("launch failed: {e}")),
    }
}

/// This process is rank `rank` of `size` started by an outside launcher
/// (`mpirun -n 2 test-binary`): NVSHMEM is initialized once, through the
/// launcher's bootstrap, and every selected test with `size` among its PE
/// counts runs in turn on every rank, with a barrier after each. Each rank
/// prints its own lines and summary, and exits 1 if a test failed on it (the
/// launcher then fails). Tests that need environment variables this job was
/// not started with, and tests that do not run at this job's size, are
/// skipped, saying why. A test (with its barrier) that outlives its timeout
/// ends the rank with status 1, saying so.
fn run_in_job(
    launcher: &str,
    rank: u32,
    size: u32,
    selected: &[&GpuTest],
    args: &Args,
    settings: &Settings,
    ptx_dir: &Path,
) -> i32 {
    let require_gpu = settings.require_gpu;
    let say = |line: String| println!("[rank {rank}] {line}");
    say(format!("{size} PEs started by {launcher}"));
    if selected.is_empty() && !args.filters.is_empty() {
        // Here a filter is a mistake (such as a `.d` file from a glob), not
        // another binary's test name: running nothing must not pass.
        say(format!(
            "FAILED: the command line {:?} selects no test of this binary",
            args.given
        ));
        return 1;
    }
    let nv = match Nvshmem::init() {
        Ok(nv) => nv,
        Err(e) if crate::gpu_count().is_err() && !require_gpu => {
            say(format!("SKIPPED: no GPU: {}", first_line(&e.to_string())));
            return 0;
        }
        Err(e) => {
            say(format!("FAILED: NVSHMEM init: {e}"));
            return 1;
        }
    };
    let mut pe = TestPe::new(nv, ptx_dir);
    let (mut passed, mut partly, mut failed, mut skipped) = (0, 0, 0, 0);
    for &test in selected {
        if !test.pes.contains(&size) {
            skipped += 1;
            say(format!(
                "test {} [{size} PE] ... SKIPPED: runs on {:?} PEs, not on this job's {size}",
                test.name, test.pes
            ));
            continue;
        }
        let missing = test
            .env
            .iter()
            .find(|(k, v)| std::env::var(k).ok().as_deref() != Some(*v));
        if let Some((k, v)) = missing {
            skipped += 1;
            say(format!(
                "test {} [{size} PE] ... SKIPPED: needs {k}={v} in the job's environment",
                test.name
            ));
            continue;
        }
        let started = Instant::now();
        pe.start(test);
        let timeout = test.run_timeout(settings);
        let watchdog = Watchdog::start(
            timeout,
            format!("[rank {rank}] test {} [{size} PE]", test.name),
        );
        let result = run_caught(test, &mut pe);
        drop(watchdog);
        let secs = started.elapsed().as_secs_f64();
        if let Err(why) = result {
            // The PEs may be out of step now (one left a collective the
            // others wait in): a barrier or finalize could wait forever.
            // Exit; the outside launcher stops the other ranks.
            say(format!(
                "test {} [{size} PE] ... FAILED ({secs:.2} s)\n    {why}",
                test.name
            ));
            say(format!(
                "stopping after a failed test (the PEs may be out of step): {}; run the others with a filter",
                summary_line(passed, partly, failed + 1, skipped)
            ));
            return 1;
        }
        passed += 1;
        if pe.skipped.is_empty() {
            say(format!(
                "test {} [{size} PE] ... ok ({secs:.2} s)",
                test.name
            ));
        } else {
            partly += 1;
            say(format!(
                "test {} [{size} PE] ... ok ({secs:.2} s), {}",
                test.name,
                skipped_parts(&pe.skipped)
            ));
        }
        // From here a rank that stops must not finalize (collective: the
        // others have gone on to the next test), as after a failed test.
        if pe.nv.is_poisoned() {
            say(format!(
                "the CUDA context is unusable after that test: stopping: {}",
                summary_line(passed, partly, failed + 1, skipped)
            ));
            return 1;
        }
        let _watchdog = Watchdog::start(
            timeout,
            format!("[rank {rank}] the barrier after test {}", test.name),
        );
        let stream = pe.nv.stream().clone();
        if let Err(e) = pe
            .nv
            .barrier_all_on_stream(&stream)
            .and_then(|()| pe.nv.synchronize(&stream))
        {
            say(format!(
                "barrier after {} failed: {e}; stopping: {}",
                test.name,
                summary_line(passed, partly, failed + 1, skipped)
            ));
            return 1;
        }
    }
    let _watchdog = Watchdog::start(settings.timeout, format!("[rank {rank}] NVSHMEM finalize"));
    if let Err(e) = pe.nv.finalize() {
        say(format!("finalize: {e}"));
        failed += 1;
    }
    say(summary_line(passed, partly, failed, skipped));
    i32::from(failed > 0)
}

/// One PE: initialize, run the test, record the verdict, finalize.
fn run_worker(name: &str, tests: &[GpuTest], ptx_dir: &Path) -> i32 {
    let verdicts = std::env::var_os(VERDICTS).map(PathBuf::from);
    let rank = std::env::var(crate::job::launcher::env::RANK).unwrap_or_else(|_| "0".into());
    if let Some(dir) = &verdicts {
        let _ = PENDING_FILE.set(pending_file(dir, &rank));
    }
    let record = |v: &str| {
        if let Some(dir) = &verdicts {
            let _ = std::fs::write(dir.join(format!("{rank}.txt")), v);
        }
    };
    let Some(test) = tests.iter().find(|t| t.name == name) else {
        record(&format!("no test named `{name}` in this binary"));
        return 1;
    };
    let nv = match Nvshmem::init() {
        Ok(nv) => nv,
        Err(e) => {
            record(&format!("NVSHMEM init failed: {e}"));
            return 1;
        }
    };
    let mut pe = TestPe::new(nv, ptx_dir);
    pe.start(test);
    if let Err(why) = run_caught(test, &mut pe) {
        // Finalize is collective: the other PEs may be waiting in a
        // collective this PE left, so it would never return. Exit instead;
        // the launcher stops the others when this PE exits with 1.
        record(&why);
        return 1;
    }
    // After an intentional kernel fault (a test that expects one), finalize
    // reports the fault again: that is not a failure of the test.
    let poisoned = pe.nv.is_poisoned();
    match pe.nv.finalize() {
        Err(e) if !poisoned => {
            record(&format!("finalize failed: {e}"));
            1
        }
        _ => {
            record(&ok_verdict(&pe.skipped));
            0
        }
    }
}

/// The names of `tests`, for messages.
fn names(tests: &[GpuTest]) -> String {
    tests.iter().map(|t| t.name).collect::<Vec<_>>().join(", ")
}

/// Ends the process with status 1 if it is not dropped within `timeout`:
/// under an outside launcher nothing else stops a rank whose test hangs
/// (srun, without `-K`, leaves the other ranks waiting in a collective
/// until the allocation ends).
struct Watchdog {
    _done: std::sync::mpsc::Sender<()>,
}

impl Watchdog {
    fn start(timeout: Duration, what: String) -> Watchdog {
        let (done, wait) = std::sync::mpsc::channel::<()>();
        std::thread::spawn(move || {
            if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = wait.recv_timeout(timeout) {
                let last = last_failure_slot()
                    .clone()
                    .map(|f| format!("; its last failed check: {f}"))
                    .unwrap_or_default();
                // Not println!: the main thread may hold stdout's lock,
                // stuck writing to a full pipe.
                crate::job::launcher::sys::exit_now_saying(
                    &format!(
                        "{what} ... TIMED OUT after {timeout:?} (NVSHMEM_RS_TEST_TIMEOUT or GpuTest::timeout){last}; exiting with status 1\n"
                    ),
                    1,
                );
            }
        });
        Watchdog { _done: done }
    }
}

/// Runs one test, turning a panic into a failure with its message.
fn run_caught(test: &GpuTest, pe: &mut TestPe) -> Result<(), String> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (test.run)(pe))) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(f)) => Err(f.0),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Err(format!("panicked: {msg}"))
        }
    }
}

fn json_report(
    rows: &[(&str, u32, Verdict, f64)],
    passed: usize,
    failed: usize,
    skipped: usize,
) -> String {
    let esc = |s: &str| serde_json::Value::String(s.to_string()).to_string();
    let items: Vec<String> = rows
        .iter()
        .map(|(name, n, v, secs)| {
            let parts;
            let (status, detail) = match v {
                Verdict::Passed => ("passed", ""),
                Verdict::PassedWithSkips(p) => {
                    parts = skipped_parts(p);
                    ("passed", parts.as_str())
                }
                Verdict::Failed(d) => ("failed", d.as_str()),
                Verdict::Skipped(d) => ("skipped", d.as_str()),
            };
            format!(
                "{{\"test\":{},\"pes\":{n},\"status\":\"{status}\",\"detail\":{},\"seconds\":{secs:.3}}}",
                esc(name),
                esc(detail)
            )
        })
        .collect();
    format!(
        "{{\"passed\":{passed},\"failed\":{failed},\"skipped\":{skipped},\"runs\":[\n{}\n]}}\n",
        items.join(",\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_eq_names_the_first_wrong_value() {
        assert_eq!(check_eq("k", &[1.0f32], &[1.0]), Ok(()));
        let e = check_eq("k", &[0, 9, 9], &[0, 1, 2]).unwrap_err();
        assert_eq!(
            e.0,
            "kernel `k`: element 1 is 9, expected 1 (2 of 3 elements wrong)"
        );
        assert!(
            check_eq("k", &[1], &[1, 2])
                .unwrap_err()
                .0
                .contains("1 elements, expected 2")
        );
    }

    #[test]
    fn poison_is_never_a_small_value_and_never_close() {
        let seed = sentinel_seed("put_block");
        assert_ne!(seed, sentinel_seed("get_nbi"));
        assert!(i32::poison(seed) < -(1 << 30));
        assert!((0x80..0xc0).contains(&u8::poison(seed)));
        assert!(u64::poison(seed) >= 1 << 63);
        assert!(f32::poison(seed).is_nan());
        assert!(check_eq("k", &[f32::poison(seed)], &[f32::poison(seed)]).is_err());
        let tol = Tolerance { abs: 1.0, rel: 1.0 };
        assert!(check_close("k", &[f64::poison(seed)], &[0.0], tol).is_err());
        assert!(check_close("k", &[half::bf16::poison(seed)], &[half::bf16::ZERO], tol).is_err());
    }

    #[test]
    fn check_close_uses_both_tolerances() {
        let tol = Tolerance { abs: 0.5, rel: 0.1 };
        assert!(check_close("k", &[10.9f64, -0.4], &[10.0, 0.0], Tolerance::rel(0.1)).is_err());
        assert!(check_close("k", &[11.4f64, -0.4], &[10.0, 0.0], tol).is_ok());
        let e = check_close("k", &[11.6f64, 9.0], &[10.0, 10.0], tol).unwrap_err();
        assert!(e.0.contains("element 0 is 11.6, expected 10.0"), "{}", e.0);
        assert!(e.0.contains("1 of 2 elements outside"), "{}", e.0);
        assert!(check_close("k", &[1.0f32], &[1.0, 2.0], Tolerance::EXACT).is_err());
    }

    /// In a child process (this test binary again): a failed check is
    /// noted in the pending file at once, and the watchdog ends the hung
    /// "test" with status 1, naming it and that check.
    #[test]
    fn the_watchdog_ends_a_hung_test_with_its_last_failure() {
        const CHILD: &str = "NVSHMEM_RS_HARNESS_WATCHDOG_CHILD";
        if let Some(pending) = std::env::var_os(CHILD) {
            PENDING_FILE.set(PathBuf::from(pending)).unwrap();
            let _ = check_eq("k", &[9], &[1]);
            let _watchdog = Watchdog::start(Duration::from_millis(200), "test hang [2 PE]".into());
            std::thread::sleep(Duration::from_secs(30));
            return;
        }
        let pending = std::env::temp_dir().join(format!("harness-pending-{}", std::process::id()));
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "job::harness::tests::the_watchdog_ends_a_hung_test_with_its_last_failure",
                "--nocapture",
            ])
            .env(CHILD, &pending)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{stdout}");
        assert!(
            stdout.contains("test hang [2 PE] ... TIMED OUT after 200ms"),
            "{stdout}"
        );
        assert!(
            stdout.contains("its last failed check: kernel `k`: element 0 is 9"),
            "{stdout}"
        );
        let noted = std::fs::read_to_string(&pending).unwrap();
        let _ = std::fs::remove_file(&pending);
        assert!(
            noted.starts_with("kernel `k`: element 0 is 9, expected 1"),
            "{noted}"
        );
    }

    #[test]
    fn skipped_parts_are_said_and_counted() {
        assert_eq!(ok_verdict(&[]), "ok");
        let v = ok_verdict(&["wgmma: not an sm_90a build".into()]);
        assert_eq!(v, "ok\nwgmma: not an sm_90a build");
        assert_eq!(
            skipped_parts(&v.lines().skip(1).map(String::from).collect::<Vec<_>>()),
            "part(s) SKIPPED: wgmma: not an sm_90a build"
        );
        assert_eq!(
            summary_line(3, 1, 0, 2),
            "3 passed (1 with parts skipped), 0 failed, 2 skipped"
        );
        assert_eq!(summary_line(3, 0, 1, 0), "3 passed, 1 failed, 0 skipped");
    }

    #[test]
    fn report_is_json() {
        let rows = vec![
            ("a", 2, Verdict::Passed, 0.5),
            ("b\"", 4, Verdict::Skipped("no \"GPU\"".into()), 0.0),
        ];
        let v: serde_json::Value = serde_json::from_str(&json_report(&rows, 1, 0, 1)).unwrap();
        assert_eq!(v["runs"][1]["status"], "skipped");
        assert_eq!(v["runs"][1]["detail"], "no \"GPU\"");
        assert_eq!(v["passed"], 1);
    }
}
