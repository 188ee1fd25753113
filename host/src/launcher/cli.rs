//! The `nvshmem-run` command line: parsing, help, and [`cli_main`], the whole
//! program with the unique id's source passed in.

use super::plan::{DEFAULT_GRACE, LaunchPlan, MAX_RANKS, check_uniqueid_hex};
use super::{gpus, output};
use std::ffi::OsString;
use std::fmt;
use std::process::ExitCode;
use std::time::Duration;

/// The exit status for a command-line mistake.
///
/// ```
/// assert_eq!(nvshmem_host::launcher::USAGE_EXIT_CODE, 2);
/// ```
pub const USAGE_EXIT_CODE: u8 = 2;

/// The one-line usage summary.
///
/// ```
/// assert!(nvshmem_host::launcher::USAGE.starts_with("Usage: nvshmem-run -n N"));
/// ```
pub const USAGE: &str = "Usage: nvshmem-run -n N [--gpus LIST] [--timeout SECONDS] [--grace SECONDS] -- PROGRAM [ARGS...]";

/// The text `nvshmem-run --help` prints.
///
/// ```
/// let help = nvshmem_host::launcher::HELP;
/// assert!(help.contains("NVSHMEM_RUN_RANK") && help.contains("nvidia-cuda-mps-control"));
/// ```
pub const HELP: &str = "\
nvshmem-run: start N NVSHMEM processing elements (PEs) on this machine.

Usage: nvshmem-run -n N [--gpus LIST] [--timeout SECONDS] [--grace SECONDS] -- PROGRAM [ARGS...]

It creates an NVSHMEM unique id, starts N copies of PROGRAM ARGS..., and tells
each its rank through the environment; the PEs join with nvshmemx_init_attr and
the unique id (nvshmem_host's initialization does this when it finds these
variables). The launcher stays alive until every PE has ended: the unique-id
bootstrap's root lives in it.

Options:
  -n, --nranks N       number of PEs to start (at least 1)
  --gpus LIST          CUDA device ordinals to spread the PEs over, e.g. 0,1 or
                       0-3 or 0,0,1,1; rank r uses entry r mod the list's length.
                       Default: every visible GPU, counted without CUDA from
                       CUDA_VISIBLE_DEVICES, else /proc/driver/nvidia/gpus, else
                       just GPU 0
  --timeout SECONDS    stop every PE and exit with status 124 after SECONDS
                       (decimals allowed, e.g. 0.5); default: no limit
  --grace SECONDS      time stopping PEs get between SIGTERM and SIGKILL
                       (default 3)
  --uniqueid HEX       use this unique id (256 hex digits) instead of creating
                       one. The process that created it must stay alive until
                       the PEs have initialised. Also lets programs that do not
                       use NVSHMEM run without it (the tests use this)
  -h, --help           print this help
  -V, --version        print the version

Environment of each PE (on top of the launcher's own, passed through as is):
  NVSHMEM_RUN_RANK      the PE's rank, 0..N-1
  NVSHMEM_RUN_NRANKS    N
  NVSHMEM_RUN_UNIQUEID  the unique id, 256 lowercase hex digits
  NVSHMEM_RUN_GPU       the CUDA device ordinal the PE should use
  NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=lo   unless already set: the bootstrap
                        runs over loopback, as every PE is on this machine
  NVSHMEM_DISABLE_NVLS=1   unless already set: NVLink multicast stays off, as
                        it must on shared NVSwitch hosts; set it to 0 to allow it
CUDA_VISIBLE_DEVICES is left alone: every PE sees every GPU (NVSHMEM needs
that to reach its peers' memory) and picks its own with NVSHMEM_RUN_GPU.
Stdin of every PE is /dev/null.

Output:
  Each line a PE writes is printed with its rank in front, \"[3] ...\", stdout
  to stdout and stderr to stderr, whole lines at a time. A last line without a
  newline gets one; bytes are passed through as they are. The launcher's own
  messages start with \"nvshmem-run:\" and go to stderr.

Stopping:
  When a PE exits with a non-zero status or is killed by a signal, when the
  timeout passes, or when the launcher gets SIGINT, SIGTERM or SIGHUP, it says
  why and stops every PE: SIGTERM to each PE's process group (so the PEs'
  children go too), then SIGKILL after the grace time (or at a second Ctrl-C).
  Processes that PEs leave running after they exit are stopped the same way.
  If the launcher itself is killed, the kernel kills the PEs (PR_SET_PDEATHSIG).

Exit status:
  0 when every PE exited with 0; else the status of the first PE that failed
  (128 + the signal if a signal killed it); 124 after --timeout; 128 + the
  signal after SIGINT/SIGTERM/SIGHUP; 2 for a command-line mistake; 127 if
  PROGRAM cannot be found, 126 if it cannot be executed; 1 if the unique id
  cannot be created.

More than two PEs on one GPU:
  Two PEs can share a GPU as they are. Three or more, and host-side barriers or
  collectives among PEs that share a GPU, need CUDA MPS running: start its
  control daemon with a pipe and a log folder of your choosing, tell NVSHMEM
  not to insist on an MPS thread percentage, run, then shut MPS down:

    export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
    mkdir -p \"$CUDA_MPS_PIPE_DIRECTORY\" \"$CUDA_MPS_LOG_DIRECTORY\"
    nvidia-cuda-mps-control -d
    export NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1
    nvshmem-run -n 4 --gpus 0 -- ./my_program
    echo quit | nvidia-cuda-mps-control

Examples:
  nvshmem-run -n 2 -- ./target/release/ring
  nvshmem-run -n 8 --gpus 0-3 --timeout 600 -- ./bench --size 1G
";

/// A command-line mistake, with a message that says what to do.
///
/// ```
/// use nvshmem_host::launcher::parse_args;
/// let err = parse_args(["-n", "0", "--", "true"]).unwrap_err();
/// assert!(err.to_string().contains("at least 1"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// What the command line asks for.
///
/// ```
/// use nvshmem_host::launcher::{Cli, parse_args};
/// assert_eq!(parse_args(["--help"]), Ok(Cli::Help));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cli {
    /// `--help`: print [`HELP`].
    Help,
    /// `--version`: print the version.
    Version,
    /// Start PEs.
    Launch(LaunchArgs),
}

/// The options of a launch, as given on the command line.
///
/// ```
/// use nvshmem_host::launcher::{Cli, parse_args};
/// let Ok(Cli::Launch(args)) = parse_args(["-n", "2", "--gpus", "1", "--", "./app", "-v"]) else { panic!() };
/// assert_eq!(args.nranks, 2);
/// assert_eq!(args.gpus, Some(vec![1]));
/// assert_eq!(args.program, "./app");
/// assert_eq!(args.args, ["-v"]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchArgs {
    /// `-n N`.
    pub nranks: usize,
    /// `--gpus LIST`, if given.
    pub gpus: Option<Vec<u32>>,
    /// `--timeout SECONDS`, if given.
    pub timeout: Option<Duration>,
    /// `--grace SECONDS`, if given.
    pub grace: Option<Duration>,
    /// `--uniqueid HEX` (checked, lowercase), if given.
    pub uniqueid: Option<String>,
    /// The program after `--`.
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
}

impl LaunchArgs {
    /// The plan these options describe, with this unique id (hex); the GPU
    /// list defaults to [`default_gpus`](super::default_gpus).
    ///
    /// ```
    /// use nvshmem_host::launcher::{Cli, parse_args};
    /// let Ok(Cli::Launch(args)) = parse_args(["-n", "4", "--gpus", "0,1", "--", "true"]) else { panic!() };
    /// let plan = args.into_plan("0".repeat(256));
    /// assert_eq!(plan.gpu_of(2), 0);
    /// ```
    pub fn into_plan(self, uniqueid: String) -> LaunchPlan {
        let mut plan = LaunchPlan::new(self.nranks, self.program, uniqueid).with_args(self.args);
        if let Some(gpus) = self.gpus {
            plan.gpus = gpus;
        }
        plan.timeout = self.timeout;
        plan.grace = self.grace.unwrap_or(DEFAULT_GRACE);
        plan
    }
}

fn usage(msg: impl Into<String>) -> UsageError {
    UsageError(msg.into())
}

fn parse_seconds(flag: &str, value: &str, zero_ok: bool) -> Result<Duration, UsageError> {
    let bad = || {
        usage(format!(
            "{flag} wants a number of seconds such as 30 or 0.5, not `{value}`"
        ))
    };
    let secs: f64 = value.trim().parse().map_err(|_| bad())?;
    if !secs.is_finite() || secs < 0.0 {
        return Err(bad());
    }
    if secs == 0.0 && !zero_ok {
        return Err(usage(format!("{flag} must be more than 0 seconds")));
    }
    Duration::try_from_secs_f64(secs).map_err(|_| bad())
}

fn parse_nranks(value: &str) -> Result<usize, UsageError> {
    let n: usize = value.trim().parse().map_err(|_| {
        usage(format!(
            "-n wants the number of PEs, a whole number such as 4, not `{value}`"
        ))
    })?;
    if n == 0 {
        return Err(usage("-n must be at least 1"));
    }
    if n > MAX_RANKS {
        return Err(usage(format!(
            "-n {n} is more than this launcher starts (at most {MAX_RANKS})"
        )));
    }
    Ok(n)
}

/// Parses `nvshmem-run`'s arguments (without the program name).
///
/// Options come first, then `--`, then the program and its arguments, which
/// are passed on untouched. An option's value follows as the next argument or
/// after `=` (`--gpus=0,1`; `-n4` also works). Unknown options, repeated
/// options, a missing `-n` or `--`, and bad values are [`UsageError`]s.
///
/// ```
/// use nvshmem_host::launcher::{Cli, parse_args};
/// use std::time::Duration;
/// let Ok(Cli::Launch(a)) = parse_args(["-n4", "--timeout=1.5", "--", "sh", "-c", "true"]) else { panic!() };
/// assert_eq!((a.nranks, a.timeout), (4, Some(Duration::from_millis(1500))));
/// assert!(parse_args(["-n", "2", "./app"]).is_err()); // no `--`
/// assert!(parse_args(["--frobnicate"]).is_err());
/// ```
pub fn parse_args<I, S>(args: I) -> Result<Cli, UsageError>
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    let mut args = args.into_iter().map(Into::into);
    let mut nranks = None;
    let mut gpus = None;
    let mut timeout = None;
    let mut grace = None;
    let mut uniqueid = None;
    let mut command = None;

    while let Some(arg) = args.next() {
        if arg == "--" {
            command = Some((args.next(), args.collect::<Vec<_>>()));
            break;
        }
        let Some(text) = arg.to_str() else {
            return Err(usage(format!(
                "unexpected argument {:?}; put `--` before the program and its arguments",
                arg.to_string_lossy()
            )));
        };
        let (flag, inline) = match text {
            "-h" | "--help" => return Ok(Cli::Help),
            "-V" | "--version" => return Ok(Cli::Version),
            t if t.starts_with("--") => match t.split_once('=') {
                Some((f, v)) => (f.to_string(), Some(v.to_string())),
                None => (t.to_string(), None),
            },
            t if t.starts_with("-n") && t.len() > 2 => (
                "-n".to_string(),
                Some(t[2..].trim_start_matches('=').to_string()),
            ),
            t if t.starts_with('-') && t.len() > 1 => (t.to_string(), None),
            t => {
                return Err(usage(format!(
                    "unexpected argument `{t}`; put `--` before the program and its arguments, \
                     e.g. nvshmem-run -n 2 -- {t}"
                )));
            }
        };
        let flag = match flag.as_str() {
            "-n" | "--nranks" => "-n",
            "--gpus" | "--timeout" | "--grace" | "--uniqueid" => flag.as_str(),
            _ => return Err(usage(format!("unknown option `{flag}`"))),
        };
        let value = match inline {
            Some(v) => v,
            None => match args.next() {
                Some(v) => v.into_string().map_err(|v| {
                    usage(format!(
                        "the value of {flag}, {:?}, is not valid UTF-8",
                        v.to_string_lossy()
                    ))
                })?,
                None => return Err(usage(format!("{flag} needs a value"))),
            },
        };
        let twice = || usage(format!("{flag} is given more than once"));
        match flag {
            "-n" => {
                if nranks.replace(parse_nranks(&value)?).is_some() {
                    return Err(twice());
                }
            }
            "--gpus" => {
                let list =
                    gpus::parse_gpu_list(&value).map_err(|e| usage(format!("--gpus: {e}")))?;
                if gpus.replace(list).is_some() {
                    return Err(twice());
                }
            }
            "--timeout" => {
                if timeout
                    .replace(parse_seconds(flag, &value, false)?)
                    .is_some()
                {
                    return Err(twice());
                }
            }
            "--grace" => {
                if grace.replace(parse_seconds(flag, &value, true)?).is_some() {
                    return Err(twice());
                }
            }
            _ => {
                let hex = check_uniqueid_hex(value.trim())
                    .map_err(|e| usage(format!("--uniqueid: {e}")))?;
                if uniqueid.replace(hex).is_some() {
                    return Err(twice());
                }
            }
        }
    }

    let Some((program, args)) = command else {
        return Err(usage(
            "missing `--` and the program to run, e.g. nvshmem-run -n 2 -- ./app",
        ));
    };
    let program = match program {
        Some(p) if !p.is_empty() => p,
        _ => return Err(usage("missing the program to run after `--`")),
    };
    let Some(nranks) = nranks else {
        return Err(usage("missing -n N, the number of PEs to start"));
    };
    Ok(Cli::Launch(LaunchArgs {
        nranks,
        gpus,
        timeout,
        grace,
        uniqueid,
        program,
        args,
    }))
}

/// The whole `nvshmem-run` program: parses `args` (without the program
/// name), creates the unique id with `make_uniqueid` unless `--uniqueid`
/// gives one, runs the plan and returns the exit status. Messages go to
/// stderr, prefixed `nvshmem-run:`.
///
/// Before `make_uniqueid` runs, the NVSHMEM defaults of
/// [`env::NVSHMEM_DEFAULTS`](super::env::NVSHMEM_DEFAULTS) that are unset are
/// set in this process's own environment too: the unique id carries the
/// address that the bootstrap root, in this process, listens on, and that
/// address is chosen by `NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME` here. As that
/// changes the process environment, call `cli_main` from `main` before
/// starting any other thread.
///
/// `make_uniqueid` returns the id as [`UNIQUEID_HEX_LEN`](super::UNIQUEID_HEX_LEN)
/// hex digits. If something it creates must stay alive while the PEs
/// bootstrap, keep that outside the closure, as here, where a stand-in plays
/// the part of `nvshmem_host::UniqueId`:
///
/// ```
/// # struct UniqueId;
/// # impl UniqueId {
/// #     fn generate() -> Result<UniqueId, String> { Ok(UniqueId) }
/// #     fn to_hex(&self) -> String { "0".repeat(256) }
/// # }
/// use std::process::ExitCode;
///
/// let mut keep = None;
/// let args = ["-n", "2", "--", "sh", "-c", "exit $NVSHMEM_RUN_RANK"];
/// let status = nvshmem_host::launcher::cli_main(args, || {
///     assert_eq!(std::env::var("NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME").as_deref(), Ok("lo"));
///     let id = UniqueId::generate()?;
///     let hex = id.to_hex();
///     keep = Some(id); // lives until the PEs have ended
///     Ok::<_, String>(hex)
/// });
/// assert_eq!(status, ExitCode::from(1)); // rank 1 exited with status 1
/// ```
pub fn cli_main<I, S, F, E>(args: I, make_uniqueid: F) -> ExitCode
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
    F: FnOnce() -> Result<String, E>,
    E: fmt::Display,
{
    let launch = match parse_args(args) {
        Ok(Cli::Launch(launch)) => launch,
        Ok(Cli::Help) => {
            output::write_locked(output::Dest::Stdout, HELP.as_bytes());
            return ExitCode::SUCCESS;
        }
        Ok(Cli::Version) => {
            output::write_locked(
                output::Dest::Stdout,
                concat!("nvshmem-run ", env!("CARGO_PKG_VERSION"), "\n").as_bytes(),
            );
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            output::message(&format!("{e}\n{USAGE}\nTry `nvshmem-run --help` for more."));
            return ExitCode::from(USAGE_EXIT_CODE);
        }
    };
    for &(name, value) in super::env::NVSHMEM_DEFAULTS {
        if std::env::var_os(name).is_none() {
            // SAFETY: cli_main is documented to run before other threads
            // exist, so nothing reads the environment concurrently.
            unsafe { std::env::set_var(name, value) };
        }
    }
    let uniqueid = match launch.uniqueid.clone() {
        Some(hex) => hex,
        None => match make_uniqueid() {
            Ok(hex) => match check_uniqueid_hex(&hex) {
                Ok(hex) => hex,
                Err(e) => {
                    output::message(&format!("the new NVSHMEM unique id is malformed: {e}"));
                    return ExitCode::FAILURE;
                }
            },
            Err(e) => {
                output::message(&format!(
                    "cannot create the NVSHMEM unique id: {e}\n\
                     (to run without NVSHMEM here, pass a unique id made elsewhere with --uniqueid HEX)"
                ));
                return ExitCode::FAILURE;
            }
        },
    };
    match super::run(&launch.into_plan(uniqueid)) {
        Ok(outcome) => ExitCode::from(outcome.exit_code()),
        Err(e) => {
            output::message(&e.to_string());
            ExitCode::from(e.exit_code())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(args: &[&str]) -> LaunchArgs {
        match parse_args(args.iter().copied()) {
            Ok(Cli::Launch(a)) => a,
            other => panic!("{args:?} gave {other:?}"),
        }
    }

    fn error(args: &[&str]) -> String {
        match parse_args(args.iter().copied()) {
            Err(e) => e.0,
            other => panic!("{args:?} gave {other:?}"),
        }
    }

    #[test]
    fn accepts_the_usual_forms() {
        let a = launch(&[
            "-n",
            "4",
            "--gpus",
            "0,1",
            "--timeout",
            "2",
            "--grace",
            "0",
            "--",
            "prog",
            "--",
            "-n",
        ]);
        assert_eq!(a.nranks, 4);
        assert_eq!(a.gpus, Some(vec![0, 1]));
        assert_eq!(a.timeout, Some(Duration::from_secs(2)));
        assert_eq!(a.grace, Some(Duration::ZERO));
        assert_eq!(a.program, "prog");
        assert_eq!(a.args, ["--", "-n"]);
        assert_eq!(launch(&["--nranks=3", "--", "p"]).nranks, 3);
        assert_eq!(launch(&["-n=3", "--", "p"]).nranks, 3);
        assert_eq!(
            launch(&["--uniqueid", &"A".repeat(256), "-n", "1", "--", "p"]).uniqueid,
            Some("a".repeat(256))
        );
        assert_eq!(parse_args(["-n", "2", "--version"]), Ok(Cli::Version));
    }

    #[test]
    fn rejects_mistakes() {
        assert!(error(&[]).contains("missing `--`"));
        assert!(error(&["-n", "2"]).contains("missing `--`"));
        assert!(error(&["-n", "2", "./app"]).contains("put `--` before the program"));
        assert!(error(&["-n", "2", "--"]).contains("missing the program"));
        assert!(error(&["--", "p"]).contains("missing -n"));
        assert!(error(&["-n", "0", "--", "p"]).contains("at least 1"));
        assert!(error(&["-n", "-1", "--", "p"]).contains("whole number"));
        assert!(error(&["-n", "two", "--", "p"]).contains("whole number"));
        assert!(error(&["-n", "99999999", "--", "p"]).contains("at most"));
        assert!(error(&["-n", "1", "-n", "2", "--", "p"]).contains("more than once"));
        assert!(error(&["-n"]).contains("needs a value"));
        assert!(error(&["-n", "1", "--gpus", "0,,1", "--", "p"]).contains("--gpus"));
        assert!(error(&["-n", "1", "--gpus", "x", "--", "p"]).contains("--gpus"));
        assert!(error(&["-n", "1", "--timeout", "0", "--", "p"]).contains("more than 0"));
        assert!(error(&["-n", "1", "--timeout", "-3", "--", "p"]).contains("number of seconds"));
        assert!(error(&["-n", "1", "--timeout", "inf", "--", "p"]).contains("number of seconds"));
        assert!(error(&["-n", "1", "--grace", "soon", "--", "p"]).contains("number of seconds"));
        assert!(error(&["-n", "1", "--uniqueid", "abc", "--", "p"]).contains("256 hex digits"));
        assert!(error(&["-x", "--", "p"]).contains("unknown option `-x`"));
        assert!(error(&["--gpu=0", "--", "p"]).contains("unknown option `--gpu`"));
        assert!(error(&["-", "--", "p"]).contains("unexpected argument `-`"));
    }
}
