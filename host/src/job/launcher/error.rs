//! [`LaunchError`]: why [`run`](super::run) could not carry out a plan.

use std::io;

/// Why [`run`](super::run) could not carry out a plan. (PEs that fail are not
/// errors: they are an [`Outcome`](super::Outcome).)
///
/// ```
/// use nvshmem_host::launcher::{LaunchError, LaunchPlan, run};
/// let plan = LaunchPlan::new(0, "true");
/// let err = run(&plan).unwrap_err();
/// assert!(matches!(err, LaunchError::InvalidPlan(_)));
/// assert_eq!(err.exit_code(), 2);
/// ```
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// The plan is not one that can run (see [`LaunchPlan::validate`](super::LaunchPlan::validate)).
    #[error("{0}")]
    InvalidPlan(String),
    /// A PE's process could not be started (the PEs already started were stopped).
    #[error("cannot start rank {rank}: `{program}`: {source}")]
    Spawn {
        /// The rank that could not start.
        rank: usize,
        /// The program, as given.
        program: String,
        /// What the operating system said.
        #[source]
        source: io::Error,
    },
    /// CUDA MPS could not be started or stopped (`--mps`).
    #[error("CUDA MPS: {0}")]
    Mps(String),
    /// A system call the launcher needs failed (the PEs already started were stopped).
    #[error("{what}: {source}")]
    System {
        /// What the launcher was doing.
        what: String,
        /// What the operating system said.
        #[source]
        source: io::Error,
    },
}

impl LaunchError {
    /// The exit status for the launcher to end with: 2 for a bad plan, 127 for
    /// a program that was not found, 126 for one that could not be executed,
    /// else 1 (the shell's conventions).
    ///
    /// ```
    /// use nvshmem_host::launcher::LaunchError;
    /// let e = LaunchError::Spawn {
    ///     rank: 0,
    ///     program: "nope".into(),
    ///     source: std::io::ErrorKind::NotFound.into(),
    /// };
    /// assert_eq!(e.exit_code(), 127);
    /// ```
    pub fn exit_code(&self) -> u8 {
        match self {
            LaunchError::InvalidPlan(_) => 2,
            LaunchError::Spawn { source, .. } => match source.kind() {
                io::ErrorKind::NotFound => 127,
                io::ErrorKind::PermissionDenied => 126,
                _ => 1,
            },
            LaunchError::System { .. } | LaunchError::Mps(_) => 1,
        }
    }
}
