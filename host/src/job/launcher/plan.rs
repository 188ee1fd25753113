//! [`LaunchPlan`]: what to start, and how.

use super::env;
use super::error::LaunchError;
use std::ffi::OsString;
use std::time::Duration;

/// How long stopping PEs get between SIGTERM and SIGKILL, unless a plan says otherwise.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(3);

/// The most PEs one launcher starts (each costs a process and two threads here).
pub const MAX_RANKS: usize = 4096;

/// What [`run`](super::run) starts: `nranks` copies of `program args…`, PE
/// `r` on GPU `gpus[r % gpus.len()]`.
///
/// The fields are public; [`LaunchPlan::new`] fills in the defaults (every
/// visible GPU, no timeout, [`DEFAULT_GRACE`]) and the `with_*` methods change
/// them. [`run`](super::run) checks the plan with [`LaunchPlan::validate`] first.
///
/// ```
/// use nvshmem_host::launcher::LaunchPlan;
/// use std::time::Duration;
///
/// let plan = LaunchPlan::new(4, "./ring")
///     .with_args(["--iters", "10"])
///     .with_gpus(vec![0, 1])
///     .with_timeout(Duration::from_secs(60))
///     .with_env("NVSHMEM_DEBUG", "INFO");
/// assert_eq!((0..4).map(|r| plan.gpu_of(r)).collect::<Vec<_>>(), [0, 1, 0, 1]);
/// assert!(plan.validate().is_ok());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchPlan {
    /// How many PEs (processes) to start, at least 1.
    pub nranks: usize,
    /// CUDA device ordinals to spread the PEs over, round-robin; not empty.
    pub gpus: Vec<u32>,
    /// The program every PE runs (looked up in `PATH` when it has no `/`).
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Stop everything after this long, and report [`Outcome::TimedOut`](super::Outcome::TimedOut).
    pub timeout: Option<Duration>,
    /// How long stopping PEs get between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// Extra environment variables for every PE, on top of the launcher's own
    /// environment and NVSHMEM defaults (these win over both).
    pub env: Vec<(OsString, OsString)>,
}

impl LaunchPlan {
    /// A plan for `nranks` copies of `program` (no arguments) on every visible
    /// GPU ([`default_gpus`](super::default_gpus)), with no timeout.
    pub fn new(nranks: usize, program: impl Into<OsString>) -> LaunchPlan {
        LaunchPlan {
            nranks,
            gpus: super::default_gpus(),
            program: program.into(),
            args: Vec::new(),
            timeout: None,
            grace: DEFAULT_GRACE,
            env: Vec::new(),
        }
    }

    /// Sets the program's arguments.
    pub fn with_args<I, S>(mut self, args: I) -> LaunchPlan
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args = args.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the GPU list.
    pub fn with_gpus(mut self, gpus: Vec<u32>) -> LaunchPlan {
        self.gpus = gpus;
        self
    }

    /// Sets a timeout for the whole run.
    pub fn with_timeout(mut self, timeout: Duration) -> LaunchPlan {
        self.timeout = Some(timeout);
        self
    }

    /// Sets the time between SIGTERM and SIGKILL when PEs are stopped.
    pub fn with_grace(mut self, grace: Duration) -> LaunchPlan {
        self.grace = grace;
        self
    }

    /// Adds an environment variable for every PE.
    pub fn with_env(mut self, name: impl Into<OsString>, value: impl Into<OsString>) -> LaunchPlan {
        self.env.push((name.into(), value.into()));
        self
    }

    /// The GPU that PE `rank` uses: `gpus[rank % gpus.len()]` (0 if the list is empty).
    pub fn gpu_of(&self, rank: usize) -> u32 {
        if self.gpus.is_empty() {
            0
        } else {
            self.gpus[rank % self.gpus.len()]
        }
    }

    /// The environment variables set for PE `rank`, on top of the launcher's
    /// own environment (which every PE inherits): the defaults of
    /// [`env::NVSHMEM_DEFAULTS`] that neither the launcher's environment nor
    /// [`LaunchPlan::env`] sets, then [`LaunchPlan::env`], then [`env::RANK`],
    /// [`env::NRANKS`] and [`env::GPU`]. ([`run`](super::run) adds
    /// [`env::RENDEZVOUS`] and [`env::JOB`], the store it serves the unique id from.)
    ///
    /// ```
    /// use nvshmem_host::launcher::{LaunchPlan, env};
    /// let plan = LaunchPlan::new(2, "true").with_gpus(vec![5]);
    /// let vars = plan.pe_env(1);
    /// assert!(vars.contains(&(env::RANK.into(), "1".into())));
    /// assert!(vars.contains(&(env::NRANKS.into(), "2".into())));
    /// assert!(vars.contains(&(env::GPU.into(), "5".into())));
    /// ```
    pub fn pe_env(&self, rank: usize) -> Vec<(OsString, OsString)> {
        let mut vars: Vec<(OsString, OsString)> = Vec::new();
        for &(name, value) in env::NVSHMEM_DEFAULTS {
            let in_plan = self.env.iter().any(|(k, _)| k == name);
            if !in_plan && std::env::var_os(name).is_none() {
                vars.push((name.into(), value.into()));
            }
        }
        vars.extend(self.env.iter().cloned());
        vars.push((env::RANK.into(), rank.to_string().into()));
        vars.push((env::NRANKS.into(), self.nranks.to_string().into()));
        vars.push((env::GPU.into(), self.gpu_of(rank).to_string().into()));
        vars
    }

    /// Checks the plan: at least one PE (at most [`MAX_RANKS`]), a GPU list,
    /// a program, a non-zero timeout.
    ///
    /// ```
    /// use nvshmem_host::launcher::LaunchPlan;
    /// assert!(LaunchPlan::new(0, "true").validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), LaunchError> {
        let invalid = |msg: String| Err(LaunchError::InvalidPlan(msg));
        if self.nranks == 0 {
            return invalid("the number of PEs must be at least 1".into());
        }
        if self.nranks > MAX_RANKS {
            return invalid(format!(
                "{} PEs is more than this launcher starts (at most {MAX_RANKS})",
                self.nranks
            ));
        }
        if self.gpus.is_empty() {
            return invalid("the GPU list is empty".into());
        }
        if self.program.is_empty() {
            return invalid("no program to run".into());
        }
        if self.timeout == Some(Duration::ZERO) {
            return invalid("the timeout must be more than 0 seconds".into());
        }
        Ok(())
    }
}
