//! The `nvshmem-run` launcher: starts N PEs with a shared NVSHMEM unique id.
//!
//! `nvshmem-run -n N [--gpus 0,1,…] [--timeout SECONDS] -- PROGRAM ARGS…`
//! creates the unique id (so the unique-id bootstrap's root lives in the
//! launcher, which stays alive until the PEs end), starts N processes with the
//! variables of [`env`](mod@env), prefixes their output lines with `[rank] `, and stops
//! them all, process groups included, as soon as one fails, the timeout passes
//! or the launcher is interrupted. The binary is a thin wrapper around
//! [`cli_main`]; programs that want to launch PEs themselves build a
//! [`LaunchPlan`] and call [`run`].
//!
//! ```
//! use nvshmem_host::launcher::{LaunchPlan, Outcome, run};
//!
//! // The unique id would come from nvshmem_host::UniqueId::generate()?.to_hex().
//! let plan = LaunchPlan::new(2, "sh", "0".repeat(256))
//!     .with_args(["-c", "test $NVSHMEM_RUN_NRANKS = 2"])
//!     .with_gpus(vec![0]);
//! assert_eq!(run(&plan)?, Outcome::Success);
//! # Ok::<(), nvshmem_host::launcher::LaunchError>(())
//! ```
//!
//! Every PE gets the launcher's environment plus [`LaunchPlan::pe_env`]:
//! [`env::RANK`], [`env::NRANKS`], [`env::UNIQUEID`], [`env::GPU`], and the
//! NVSHMEM defaults of [`env::NVSHMEM_DEFAULTS`] that the user has not set.
//! [`HELP`] (`nvshmem-run --help`) is the user-facing description, including
//! how to run more than two PEs on one GPU with CUDA MPS.
//!
//! For tests and for programs that do not use NVSHMEM, `--uniqueid HEX`
//! passes a ready-made id, and the launcher then needs no NVSHMEM at all.
//!
//! The whole of it is Linux-only (process groups, `prctl`).

mod cli;
pub mod env;
mod error;
mod gpus;
mod output;
mod plan;
mod run;
mod sys;

pub use cli::{Cli, HELP, LaunchArgs, USAGE, USAGE_EXIT_CODE, UsageError, cli_main, parse_args};
pub use error::LaunchError;
pub use gpus::{count_cuda_visible_devices, default_gpus, parse_gpu_list, visible_gpu_count};
pub use plan::{DEFAULT_GRACE, LaunchPlan, MAX_RANKS, UNIQUEID_HEX_LEN, check_uniqueid_hex};
pub use run::{Outcome, RankStatus, TIMEOUT_EXIT_CODE, run};
