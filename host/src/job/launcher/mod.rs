//! The `nvshmem-run` launcher: starts N PEs on this machine.
//!
//! `nvshmem-run -n N [--gpus 0,1,…] [--timeout SECONDS] [--mps] -- PROGRAM ARGS…`
//! starts N processes with the variables of [`env`](mod@env), serves the
//! store through which rank 0 hands NVSHMEM's unique id to the others (so
//! the launcher needs no NVSHMEM itself), prefixes the PEs' output lines with
//! `[rank] `, and stops them all, process groups included, as soon as one
//! fails, the timeout passes or the launcher is interrupted. With `--mps` it
//! runs CUDA MPS around the job ([`Mps`]). The binary (with the `cli`
//! feature: `cargo install nvshmem-host --features cli`) is a thin wrapper
//! around `cli_main`; programs that want to launch PEs themselves build a
//! [`LaunchPlan`] and call [`run`].
//!
//! ```
//! use nvshmem_host::launcher::{LaunchPlan, Outcome, run};
//!
//! let plan = LaunchPlan::new(2, "sh")
//!     .with_args(["-c", "test $NVSHMEM_RUN_NRANKS = 2"])
//!     .with_gpus(vec![0]);
//! assert_eq!(run(&plan)?, Outcome::Success);
//! # Ok::<(), nvshmem_host::launcher::LaunchError>(())
//! ```
//!
//! Every PE gets the launcher's environment plus [`LaunchPlan::pe_env`] and
//! the store's address. `nvshmem-run --help` is the user-facing description.
//!
//! The whole of it is Linux-only (process groups, `prctl`).

#[cfg(feature = "cli")]
mod cli;
pub mod env;
mod error;
mod gpus;
mod mps;
mod output;
mod plan;
mod run;
pub(crate) mod sys;

#[cfg(feature = "cli")]
pub use cli::{Cli, GpuList, cli_main};
pub use error::LaunchError;
pub use gpus::{count_cuda_visible_devices, default_gpus, parse_gpu_list, visible_gpu_count};
pub use mps::Mps;
pub use plan::{DEFAULT_GRACE, LaunchPlan, MAX_RANKS};
pub use run::{Outcome, RankStatus, TIMEOUT_EXIT_CODE, run};
