//! [`LaunchPlan`]: what to start, and how.

use super::env;
use super::error::LaunchError;
use std::ffi::OsString;
use std::time::Duration;

/// How long stopping PEs get between SIGTERM and SIGKILL, unless a plan says otherwise.
///
/// ```
/// assert_eq!(nvshmem_host::launcher::DEFAULT_GRACE.as_secs(), 3);
/// ```
pub const DEFAULT_GRACE: Duration = Duration::from_secs(3);

/// The length of a unique id in hex digits: NVSHMEM's `nvshmemx_uniqueid_t`
/// is 128 bytes.
///
/// ```
/// assert_eq!(nvshmem_host::launcher::UNIQUEID_HEX_LEN, 2 * 128);
/// ```
pub const UNIQUEID_HEX_LEN: usize = 256;

/// Checks that `hex` is a unique id as [`env::UNIQUEID`] carries it:
/// [`UNIQUEID_HEX_LEN`] hex digits. Returns it in lowercase.
///
/// ```
/// use nvshmem_host::launcher::check_uniqueid_hex;
/// assert_eq!(check_uniqueid_hex(&"AB".repeat(128)), Ok("ab".repeat(128)));
/// assert!(check_uniqueid_hex("abc").is_err());
/// ```
pub fn check_uniqueid_hex(hex: &str) -> Result<String, String> {
    if let Some(bad) = hex.chars().find(|c| !c.is_ascii_hexdigit()) {
        return Err(format!(
            "the unique id must be {UNIQUEID_HEX_LEN} hex digits, but it contains {bad:?}"
        ));
    }
    if hex.len() != UNIQUEID_HEX_LEN {
        return Err(format!(
            "the unique id must be {UNIQUEID_HEX_LEN} hex digits, not {}",
            hex.len()
        ));
    }
    Ok(hex.to_ascii_lowercase())
}

/// What [`run`](super::run) starts: `nranks` copies of `program args…`, PE
/// `r` on GPU `gpus[r % gpus.len()]`, all sharing one NVSHMEM unique id.
///
/// The fields are public; [`LaunchPlan::new`] fills in the defaults (every
/// visible GPU, no timeout, [`DEFAULT_GRACE`]) and the `with_*` methods change
/// them. [`run`](super::run) checks the plan with [`LaunchPlan::validate`] first.
///
/// ```
/// use nvshmem_host::launcher::LaunchPlan;
/// use std::time::Duration;
///
/// let uid = "0".repeat(256); // normally nvshmem_host::UniqueId::generate()?.to_hex()
/// let plan = LaunchPlan::new(4, "./ring", uid)
///     .with_args(["--iters", "10"])
///     .with_gpus(vec![0, 1])
///     .with_timeout(Duration::from_secs(60));
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
    /// The NVSHMEM unique id, [`UNIQUEID_HEX_LEN`] hex digits; whichever
    /// process created it must stay alive until the PEs have initialised.
    pub uniqueid: String,
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
    ///
    /// ```
    /// let plan = nvshmem_host::launcher::LaunchPlan::new(2, "true", "0".repeat(256));
    /// assert_eq!(plan.nranks, 2);
    /// assert!(plan.timeout.is_none());
    /// ```
    pub fn new(
        nranks: usize,
        program: impl Into<OsString>,
        uniqueid: impl Into<String>,
    ) -> LaunchPlan {
        LaunchPlan {
            nranks,
            gpus: super::default_gpus(),
            program: program.into(),
            args: Vec::new(),
            uniqueid: uniqueid.into(),
            timeout: None,
            grace: DEFAULT_GRACE,
            env: Vec::new(),
        }
    }

    /// Sets the program's arguments.
    ///
    /// ```
    /// let plan = nvshmem_host::launcher::LaunchPlan::new(1, "echo", "0".repeat(256)).with_args(["hi"]);
    /// assert_eq!(plan.args, ["hi"]);
    /// ```
    pub fn with_args<I, S>(mut self, args: I) -> LaunchPlan
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args = args.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the GPU list.
    ///
    /// ```
    /// let plan = nvshmem_host::launcher::LaunchPlan::new(3, "true", "0".repeat(256)).with_gpus(vec![2]);
    /// assert_eq!(plan.gpu_of(1), 2);
    /// ```
    pub fn with_gpus(mut self, gpus: Vec<u32>) -> LaunchPlan {
        self.gpus = gpus;
        self
    }

    /// Sets a timeout for the whole run.
    ///
    /// ```
    /// use std::time::Duration;
    /// let plan = nvshmem_host::launcher::LaunchPlan::new(1, "true", "0".repeat(256))
    ///     .with_timeout(Duration::from_secs(5));
    /// assert_eq!(plan.timeout, Some(Duration::from_secs(5)));
    /// ```
    pub fn with_timeout(mut self, timeout: Duration) -> LaunchPlan {
        self.timeout = Some(timeout);
        self
    }

    /// Sets the time between SIGTERM and SIGKILL when PEs are stopped.
    ///
    /// ```
    /// use std::time::Duration;
    /// let plan = nvshmem_host::launcher::LaunchPlan::new(1, "true", "0".repeat(256))
    ///     .with_grace(Duration::from_millis(500));
    /// assert_eq!(plan.grace, Duration::from_millis(500));
    /// ```
    pub fn with_grace(mut self, grace: Duration) -> LaunchPlan {
        self.grace = grace;
        self
    }

    /// Adds an environment variable for every PE.
    ///
    /// ```
    /// let plan = nvshmem_host::launcher::LaunchPlan::new(1, "true", "0".repeat(256))
    ///     .with_env("NVSHMEM_DEBUG", "INFO");
    /// assert!(plan.pe_env(0).contains(&("NVSHMEM_DEBUG".into(), "INFO".into())));
    /// ```
    pub fn with_env(mut self, name: impl Into<OsString>, value: impl Into<OsString>) -> LaunchPlan {
        self.env.push((name.into(), value.into()));
        self
    }

    /// The GPU that PE `rank` uses: `gpus[rank % gpus.len()]` (0 if the list is empty).
    ///
    /// ```
    /// let plan = nvshmem_host::launcher::LaunchPlan::new(4, "true", "0".repeat(256)).with_gpus(vec![0, 1]);
    /// assert_eq!(plan.gpu_of(3), 1);
    /// ```
    pub fn gpu_of(&self, rank: usize) -> u32 {
        if self.gpus.is_empty() {
            0
        } else {
            self.gpus[rank % self.gpus.len()]
        }
    }

    /// The environment variables set for PE `rank`, on top of the launcher's
    /// own environment (which every PE inherits): the NVSHMEM defaults of
    /// [`env::NVSHMEM_DEFAULTS`] that neither the launcher's environment nor
    /// [`LaunchPlan::env`] sets, then [`LaunchPlan::env`], then
    /// [`env::RANK`], [`env::NRANKS`], [`env::UNIQUEID`] (in lowercase) and [`env::GPU`].
    ///
    /// ```
    /// use nvshmem_host::launcher::{LaunchPlan, env};
    /// let plan = LaunchPlan::new(2, "true", "AB".repeat(128)).with_gpus(vec![5]);
    /// let vars = plan.pe_env(1);
    /// assert!(vars.contains(&(env::RANK.into(), "1".into())));
    /// assert!(vars.contains(&(env::NRANKS.into(), "2".into())));
    /// assert!(vars.contains(&(env::GPU.into(), "5".into())));
    /// assert!(vars.contains(&(env::UNIQUEID.into(), "ab".repeat(128).into())));
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
        vars.push((
            env::UNIQUEID.into(),
            self.uniqueid.to_ascii_lowercase().into(),
        ));
        vars.push((env::GPU.into(), self.gpu_of(rank).to_string().into()));
        vars
    }

    /// Checks the plan: at least one PE, a GPU list, a program, a well-formed
    /// unique id, a non-zero timeout.
    ///
    /// ```
    /// use nvshmem_host::launcher::LaunchPlan;
    /// assert!(LaunchPlan::new(0, "true", "0".repeat(256)).validate().is_err());
    /// assert!(LaunchPlan::new(1, "true", "xyz").validate().is_err());
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
        if let Err(e) = check_uniqueid_hex(&self.uniqueid) {
            return invalid(e);
        }
        if self.timeout == Some(Duration::ZERO) {
            return invalid("the timeout must be more than 0 seconds".into());
        }
        Ok(())
    }
}

/// The most PEs one launcher starts (each costs a process and two threads here).
///
/// ```
/// assert!(nvshmem_host::launcher::MAX_RANKS >= 1024);
/// ```
pub const MAX_RANKS: usize = 4096;
