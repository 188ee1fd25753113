//! The `nvshmem-run` command line ([`Cli`], parsed by clap) and
//! [`cli_main`], the whole program.

use super::plan::{DEFAULT_GRACE, LaunchPlan, MAX_RANKS};
use super::{Mps, gpus, output};
use clap::Parser;
use std::ffi::OsString;
use std::process::ExitCode;
use std::time::Duration;

const ABOUT: &str = "Start N NVSHMEM processing elements (PEs) on this machine.";

const LONG_ABOUT: &str = "\
Start N NVSHMEM processing elements (PEs) on this machine.

Starts N copies of PROGRAM ARGS... and tells each its rank through the
environment. The PEs bootstrap with NVSHMEM's unique id: rank 0 creates it and
hands it to the others through a store that nvshmem-run serves on loopback, so
nvshmem-run itself needs no NVSHMEM (nvshmem_host's initialization does all of
this when it finds these variables). Where nvshmem-run can load NVSHMEM, it
also makes an id itself and passes it as NVSHMEM_RUN_UNIQUEID (256 hex digits),
for PEs written in C or C++ (nvshmemx_set_attr_uniqueid_args).";

const AFTER_HELP: &str = "\
Environment of each PE (on top of nvshmem-run's own, passed through as is):
  NVSHMEM_RUN_RANK        the PE's rank, 0..N-1
  NVSHMEM_RUN_NRANKS      N
  NVSHMEM_RUN_GPU         the CUDA device ordinal the PE should use
  NVSHMEM_RUN_RENDEZVOUS  HOST:PORT of the unique-id store; NVSHMEM_RUN_JOB tells jobs apart
  NVSHMEM_RUN_UNIQUEID    the unique id, where nvshmem-run could load NVSHMEM
  unless already set: NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=lo (every PE is on this
  machine), NVSHMEM_DISABLE_NVLS=1, NCCL_NVLS_ENABLE=0 and
  TORCH_SYMM_MEM_DISABLE_MULTICAST=1 (NVLink multicast stays off, as it must on
  shared NVSwitch hosts; export NVSHMEM_DISABLE_NVLS=0 to allow it)
CUDA_VISIBLE_DEVICES is left alone: every PE sees every GPU (NVSHMEM needs that to
reach its peers' memory) and picks its own with NVSHMEM_RUN_GPU. Stdin is /dev/null.

Output: each line a PE writes is printed with its rank in front, \"[3] ...\", stdout
to stdout and stderr to stderr, whole lines at a time. nvshmem-run's own messages
start with \"nvshmem-run:\" and go to stderr.

Stopping: when a PE exits non-zero or is killed, when the timeout passes, or on
SIGINT, SIGTERM or SIGHUP, nvshmem-run stops every PE: SIGTERM to each PE's process
group, SIGKILL after the grace time (or at a second Ctrl-C). If nvshmem-run is
killed, the kernel kills the PEs.

Exit status: 0 when every PE exited with 0; else that of the first PE that failed
(128 + the signal if one killed it); 124 after --timeout; 128 + the signal after
SIGINT/SIGTERM/SIGHUP; 2 for a command-line mistake; 127 if PROGRAM cannot be
found, 126 if it cannot be executed; 1 if CUDA MPS could not be started.

More than two PEs on one GPU need CUDA MPS: --mps starts it around the job.

Examples:
  nvshmem-run -n 2 -- ./target/release/ring
  nvshmem-run -n 4 --gpus 0 --mps --timeout 600 -- ./bench --size 1G
  nvshmem-run --mps -- cargo test --release --test gpu    (MPS only, no PEs)";

/// `nvshmem-run`'s command line.
///
/// ```
/// use clap::Parser;
/// use nvshmem_host::launcher::Cli;
/// let cli = Cli::try_parse_from(["nvshmem-run", "-n", "2", "--gpus", "0-1", "--", "./app", "-v"]).unwrap();
/// assert_eq!(cli.nranks, Some(2));
/// assert_eq!(cli.command, ["./app", "-v"]);
/// let err = Cli::try_parse_from(["nvshmem-run", "-n", "0", "--", "./app"]).unwrap_err();
/// assert!(err.to_string().contains("at least 1"));
/// ```
#[derive(Clone, Debug, Parser)]
#[command(name = "nvshmem-run", version, about = ABOUT, long_about = LONG_ABOUT, after_long_help = AFTER_HELP)]
pub struct Cli {
    /// Number of PEs to start. Without it (with --mps), PROGRAM runs once as it
    /// is, with CUDA MPS around it.
    #[arg(short = 'n', long = "nranks", value_name = "N", value_parser = parse_nranks,
          required_unless_present = "mps")]
    pub nranks: Option<usize>,

    /// CUDA device ordinals to spread the PEs over: 0,1 or 0-3 or 0,0,1,1; rank r
    /// uses entry r mod the list's length [default: every visible GPU, counted
    /// without CUDA from CUDA_VISIBLE_DEVICES, else /proc/driver/nvidia/gpus, else 0]
    #[arg(long, value_name = "LIST", value_parser = parse_gpus)]
    pub gpus: Option<GpuList>,

    /// Stop every PE and exit with status 124 after SECONDS (0.5 works too)
    #[arg(long, value_name = "SECONDS", value_parser = parse_timeout, allow_negative_numbers = true)]
    pub timeout: Option<Duration>,

    /// Time stopping PEs get between SIGTERM and SIGKILL [default: 3]
    #[arg(long, value_name = "SECONDS", value_parser = parse_grace, allow_negative_numbers = true)]
    pub grace: Option<Duration>,

    /// Start CUDA MPS for the job (pipe and log folders in a temporary folder,
    /// NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1) and stop it after,
    /// whatever the outcome
    #[arg(long)]
    pub mps: bool,

    /// The program every PE runs, and its arguments, after `--`
    #[arg(last = true, required = true, value_name = "PROGRAM")]
    pub command: Vec<OsString>,
}

/// A `--gpus` list (see [`parse_gpu_list`](super::parse_gpu_list)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuList(pub Vec<u32>);

fn parse_gpus(value: &str) -> Result<GpuList, String> {
    gpus::parse_gpu_list(value).map(GpuList)
}

fn parse_nranks(value: &str) -> Result<usize, String> {
    let n: usize = value
        .trim()
        .parse()
        .map_err(|_| "expected the number of PEs, a whole number such as 4".to_string())?;
    match n {
        0 => Err("must be at least 1".into()),
        n if n > MAX_RANKS => Err(format!("at most {MAX_RANKS} PEs")),
        n => Ok(n),
    }
}

fn parse_seconds(value: &str) -> Result<Duration, String> {
    let secs: f64 = value
        .trim()
        .parse()
        .map_err(|_| "expected a number of seconds such as 30 or 0.5".to_string())?;
    if !secs.is_finite() || secs < 0.0 {
        return Err("expected a number of seconds such as 30 or 0.5".into());
    }
    Duration::try_from_secs_f64(secs).map_err(|e| e.to_string())
}

fn parse_timeout(value: &str) -> Result<Duration, String> {
    parse_seconds(value).and_then(|d| {
        if d.is_zero() {
            Err("must be more than 0 seconds".into())
        } else {
            Ok(d)
        }
    })
}

fn parse_grace(value: &str) -> Result<Duration, String> {
    parse_seconds(value)
}

impl Cli {
    /// The plan for the PEs, or `None` when only MPS was asked for.
    ///
    /// ```
    /// use clap::Parser;
    /// use nvshmem_host::launcher::Cli;
    /// let cli = Cli::try_parse_from(["nvshmem-run", "-n", "4", "--gpus", "0,1", "--", "true"]).unwrap();
    /// assert_eq!(cli.plan().unwrap().gpu_of(2), 0);
    /// ```
    pub fn plan(&self) -> Option<LaunchPlan> {
        let (program, args) = self.command.split_first()?;
        let mut plan = LaunchPlan::new(self.nranks?, program).with_args(args);
        if let Some(GpuList(gpus)) = &self.gpus {
            plan.gpus = gpus.clone();
        }
        plan.timeout = self.timeout;
        plan.grace = self.grace.unwrap_or(DEFAULT_GRACE);
        Some(plan)
    }
}

/// The whole `nvshmem-run` program: parses `args` (without the program
/// name), starts CUDA MPS if asked, runs the plan and returns the exit
/// status. Messages go to stderr, prefixed `nvshmem-run:`.
///
/// ```
/// use std::process::ExitCode;
/// let status = nvshmem_host::launcher::cli_main(["-n", "2", "--", "sh", "-c", "exit $NVSHMEM_RUN_RANK"]);
/// assert_eq!(status, ExitCode::from(1)); // rank 1 exited with status 1
/// ```
pub fn cli_main<I, S>(args: I) -> ExitCode
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    let args =
        std::iter::once(OsString::from("nvshmem-run")).chain(args.into_iter().map(Into::into));
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(e.exit_code().clamp(0, 255) as u8);
        }
    };
    let mps = match cli.mps.then(Mps::start).transpose() {
        Ok(mps) => mps,
        Err(e) => {
            output::message(&e.to_string());
            return ExitCode::from(e.exit_code());
        }
    };
    let mps_env = mps.as_ref().map(Mps::env).unwrap_or_default();
    let code = match cli.plan() {
        Some(mut plan) => {
            plan.env.extend(mps_env);
            // Kept alive until the PEs end: NVSHMEM's bootstrap root lives here.
            if let Some(id) = uniqueid_here() {
                plan.env
                    .push((super::env::UNIQUEID.into(), id.to_hex().into()));
            }
            match super::run(&plan) {
                Ok(outcome) => outcome.exit_code(),
                Err(e) => {
                    output::message(&e.to_string());
                    e.exit_code()
                }
            }
        }
        None => run_once(&cli.command, &mps_env),
    };
    let stopped = mps.map_or(Ok(()), Mps::stop);
    match stopped {
        Err(e) if code == 0 => {
            output::message(&e.to_string());
            ExitCode::from(e.exit_code())
        }
        Err(e) => {
            output::message(&e.to_string());
            ExitCode::from(code)
        }
        Ok(()) => ExitCode::from(code),
    }
}

/// Where this process can load NVSHMEM, a unique id made here, for PEs that
/// read `NVSHMEM_RUN_UNIQUEID` themselves (C/C++ hosts such as
/// `examples/cpp_host`); the bootstrap root then lives in the launcher, which
/// outlives the PEs. Elsewhere `None`: rank 0 makes the id and hands it over
/// the store (what nvshmem_host's init does either way).
fn uniqueid_here() -> Option<crate::UniqueId> {
    let lib = crate::runtime::library::HostLibrary::load(&Default::default()).ok()?;
    // The id carries the address the root listens on, chosen by this variable:
    // the PEs are on this machine. Set only while single-threaded (else skip).
    let ifname = super::env::BOOTSTRAP_UID_SOCK_IFNAME;
    if std::env::var_os(ifname).is_none() {
        crate::env::apply(&[(ifname.to_string(), "lo".to_string())]).ok()?;
    }
    lib.get_uniqueid().ok().map(crate::UniqueId::from_bytes)
}

/// `--mps` without `-n`: runs the command once, as it is, and returns its status.
fn run_once(command: &[OsString], env: &[(OsString, OsString)]) -> u8 {
    let Some((program, args)) = command.split_first() else {
        return 2;
    };
    match std::process::Command::new(program)
        .args(args)
        .envs(env.iter().cloned())
        .status()
    {
        Ok(status) => {
            use std::os::unix::process::ExitStatusExt;
            match (status.code(), status.signal()) {
                (Some(code), _) => code.clamp(0, 255) as u8,
                (None, Some(signal)) => (128 + signal).clamp(0, 255) as u8,
                _ => 1,
            }
        }
        Err(e) => {
            output::message(&format!(
                "cannot start `{}`: {e}",
                program.to_string_lossy()
            ));
            if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, String> {
        Cli::try_parse_from(std::iter::once("nvshmem-run").chain(args.iter().copied()))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn accepts_the_usual_forms() {
        let cli = parse(&[
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
        ])
        .unwrap();
        let plan = cli.plan().unwrap();
        assert_eq!(plan.nranks, 4);
        assert_eq!(plan.gpus, [0, 1]);
        assert_eq!(plan.timeout, Some(Duration::from_secs(2)));
        assert_eq!(plan.grace, Duration::ZERO);
        assert_eq!(plan.program, "prog");
        assert_eq!(plan.args, ["--", "-n"]);
        assert_eq!(parse(&["--nranks=3", "--", "p"]).unwrap().nranks, Some(3));
        assert_eq!(parse(&["-n3", "--", "p"]).unwrap().nranks, Some(3));
        let mps_only = parse(&["--mps", "--", "cargo", "test"]).unwrap();
        assert!(mps_only.mps && mps_only.plan().is_none());
    }

    #[test]
    fn mistakes_name_the_flag() {
        let cases: &[(&[&str], &str)] = &[
            (&[], "--nranks"),
            (&["-n", "2"], "PROGRAM"),
            (&["-n", "2", "./app"], "'./app'"),
            (&["--", "p"], "--nranks"),
            (&["-n", "0", "--", "p"], "at least 1"),
            (&["-n", "two", "--", "p"], "whole number"),
            (&["-n", "99999999", "--", "p"], "at most"),
            (&["-n", "1", "-n", "2", "--", "p"], "--nranks"),
            (&["-n", "1", "--gpus", "0,,1", "--", "p"], "--gpus"),
            (&["-n", "1", "--timeout", "0", "--", "p"], "more than 0"),
            (&["-n", "1", "--timeout", "-3", "--", "p"], "--timeout"),
            (&["-n", "1", "--grace", "soon", "--", "p"], "--grace"),
            (&["-x", "--", "p"], "'-x'"),
        ];
        for (args, needle) in cases {
            let err = parse(args).unwrap_err();
            assert!(err.contains(needle), "{args:?}: {err}");
        }
    }
}
