//! How the PEs of a job find each other: [`Bootstrap`], and telling from the
//! environment which launcher started this process.
//!
//! The same program runs unchanged under every launcher; [`Bootstrap::Auto`]
//! (the default) reads the variables each one sets, innermost launcher first:
//!
//! | Launcher | Recognised by | Bootstrap | Local rank |
//! |---|---|---|---|
//! | `nvshmem-run` | `NVSHMEM_RUN_RANK`, `NVSHMEM_RUN_NRANKS` | UID, id from rank 0 via the launcher | `NVSHMEM_RUN_GPU` is the GPU |
//! | `torchrun` | `RANK`, `WORLD_SIZE`, `MASTER_ADDR`, `MASTER_PORT` | UID, rank 0 serves the id at `MASTER_ADDR:MASTER_PORT+1` | `LOCAL_RANK` |
//! | Open MPI `mpirun` | `OMPI_COMM_WORLD_SIZE` | NVSHMEM's MPI bootstrap | `OMPI_COMM_WORLD_LOCAL_RANK` |
//! | Slurm `srun` | `SLURM_PROCID` with `SLURM_STEP_ID` (a batch script alone is no launcher) | PMIx (`--mpi=pmix`, `PMIX_RANK`) or PMI-2 (`--mpi=pmi2`, `PMI_FD`) | `SLURM_LOCALID` |
//! | MPICH Hydra `mpiexec` | `PMI_RANK`/`PMI_FD`, or `PMI_PORT` | NVSHMEM's PMI (PMI-1) | `MPI_LOCALRANKID` |
//! | a PMIx launcher (`prterun`) | `PMIX_RANK` | NVSHMEM's PMIx | `PMIX_LOCAL_RANK` |
//! | none | | one PE (PMI singleton) | |
//!
//! `NVSHMEM_BOOTSTRAP` set by the user wins over the table's bootstrap. After
//! init the PE count NVSHMEM reports is checked against the launcher's, so a
//! bootstrap that did not reach the launcher (Open MPI's ranks each running as
//! a PMI singleton, say) is an error, not N jobs of one PE.

use crate::env::Lookup;
use crate::error::{Error, Result};
use crate::job::launcher::env as run_env;
use crate::job::uniqueid::UniqueId;

/// How the PEs of a job find each other.
///
/// ```
/// use nvshmem_host::{Bootstrap, UniqueId};
/// let b = Bootstrap::UniqueId { rank: 0, n_pes: 2, id: UniqueId::from_bytes([0; 128]) };
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Bootstrap {
    /// Decide from the launcher's environment (the default; see the
    /// [module docs](crate::bootstrap)).
    #[default]
    Auto,
    /// One PE with no launcher (NVSHMEM's PMI bootstrap as a singleton).
    Single,
    /// NVSHMEM's UID bootstrap: every PE passes the same id, its own rank and
    /// the PE count. One process generates the id ([`UniqueId::generate`]).
    UniqueId {
        /// This PE's rank, `0..n_pes`.
        rank: u32,
        /// The number of PEs.
        n_pes: u32,
        /// The job's id.
        id: UniqueId,
    },
    /// NVSHMEM's PMI-1 bootstrap (MPICH's Hydra, `srun --mpi=pmi1`).
    Pmi,
    /// NVSHMEM's PMI-2 bootstrap (`srun --mpi=pmi2`).
    Pmi2,
    /// NVSHMEM's PMIx bootstrap (`srun --mpi=pmix`, `prterun`; NVSHMEM 3.8 or
    /// later with Open MPI 5's PMIx).
    Pmix,
    /// NVSHMEM's MPI bootstrap plugin over `MPI_COMM_WORLD` (needs Open MPI's
    /// `libmpi.so.40`, which `mpirun` puts on the library path).
    Mpi,
}

/// The launcher that started this process, as its environment shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Launcher {
    NvshmemRun,
    Torchrun,
    OpenMpi,
    Slurm,
    Hydra,
    Pmix,
    None,
}

impl Launcher {
    fn name(self) -> &'static str {
        match self {
            Launcher::NvshmemRun => "nvshmem-run",
            Launcher::Torchrun => "torchrun",
            Launcher::OpenMpi => "Open MPI's mpirun",
            Launcher::Slurm => "srun",
            Launcher::Hydra => "MPICH's mpiexec",
            Launcher::Pmix => "a PMIx launcher",
            Launcher::None => "no launcher",
        }
    }
}

/// Where the PEs of a UID bootstrap get the id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum IdSource {
    /// Given (by [`Bootstrap::UniqueId`] or `NVSHMEM_RUN_UNIQUEID`).
    Given(UniqueId),
    /// Rank 0 generates it and posts it to the rendezvous store at `addr`
    /// (served by `nvshmem-run`, or by rank 0 itself when `serve`); the
    /// others fetch it there. `job` tells jobs apart.
    Rendezvous {
        addr: String,
        job: String,
        serve: bool,
    },
}

/// What init does, decided from the bootstrap asked for and the environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    /// The UID bootstrap's rank, PE count and id; `None` for NVSHMEM's own bootstraps.
    pub(crate) uid: Option<(u32, u32, IdSource)>,
    /// NVSHMEM variables that select its bootstrap.
    pub(crate) env: Vec<(String, String)>,
    /// The PE count the launcher started, to check NVSHMEM's against.
    pub(crate) expected_pes: Option<u32>,
    /// This process's rank on its node, and the variable that said so.
    pub(crate) local_rank: Option<(usize, &'static str)>,
    pub(crate) launcher: Launcher,
    /// In words, for messages and [`Nvshmem::bootstrap`](crate::Nvshmem::bootstrap).
    pub(crate) describe: String,
    /// What usually fixes a failed init with this bootstrap.
    pub(crate) hint: &'static str,
}

impl Plan {
    /// The plan of [`Nvshmem::attach`](crate::Nvshmem::attach): another
    /// component initialized NVSHMEM, so there is nothing to bootstrap.
    pub(crate) fn attached() -> Plan {
        Plan {
            uid: None,
            env: Vec::new(),
            expected_pes: None,
            local_rank: None,
            launcher: Launcher::None,
            describe: "attached to the NVSHMEM this process already runs".into(),
            hint: "",
        }
    }
}

const UID_HINT: &str = "every PE must get the same unique id, its own rank and the same PE count; \
    the PE that generated the id (rank 0) must still be running; on one machine set \
    NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=lo; 3 or more PEs on one GPU need CUDA MPS \
    (nvshmem-run --mps)";
const PMI_HINT: &str = "make NVSHMEM_BOOTSTRAP and NVSHMEM_BOOTSTRAP_PMI match the launcher \
    (srun --mpi=pmix with PMIX, --mpi=pmi2 with PMI-2, MPICH's mpiexec with PMI, Open MPI's \
    mpirun with MPI), or start the PEs with nvshmem-run";
const MPI_HINT: &str = "start the PEs with Open MPI's mpirun, and check that NVSHMEM's MPI plugin \
    (nvshmem_bootstrap_mpi.so.3) finds libmpi.so.40 (mpirun puts it on LD_LIBRARY_PATH)";
const PMIX_HINT: &str = "NVSHMEM's PMIx plugin needs libpmix.so.2 on LD_LIBRARY_PATH, and \
    NVSHMEM 3.8 or later for Open MPI 5's PMIx (3.4.5's plugin fails to load with it); or use \
    NVSHMEM_BOOTSTRAP=MPI";

/// The TCP port offset from `MASTER_PORT` at which rank 0 serves the unique
/// id under torchrun (`MASTER_PORT` itself is torchrun's own store).
pub(crate) const TORCHRUN_PORT_OFFSET: u16 = 1;

/// A non-negative integer variable.
pub(crate) fn parse_index(var: &str, value: &str) -> Result<usize> {
    value.trim().parse().map_err(|_| Error::InvalidEnv {
        var: var.into(),
        value: value.into(),
        reason: "expected a non-negative integer".into(),
    })
}

/// `var` as a number, if set.
fn number(env: Lookup, var: &'static str) -> Result<Option<u32>> {
    env(var)
        .map(|v| {
            let n = parse_index(var, &v)?;
            u32::try_from(n).map_err(|_| Error::InvalidEnv {
                var: var.into(),
                value: v,
                reason: "too large".into(),
            })
        })
        .transpose()
}

/// `var` as a number; an error naming `launcher` when it is missing.
fn required(env: Lookup, var: &'static str, launcher: Launcher) -> Result<u32> {
    number(env, var)?.ok_or_else(|| Error::InvalidEnv {
        var: var.into(),
        value: String::new(),
        reason: format!(
            "{} sets it for every process it starts; start the program with {0}, or unset \
             the other variables that made this look like its child",
            launcher.name()
        ),
    })
}

/// `rank` and `size` from the launcher, checked.
fn rank_of(launcher: Launcher, rank: u32, size: u32) -> Result<(u32, u32)> {
    if size == 0 || rank >= size {
        return Err(Error::InvalidArgument {
            reason: format!(
                "{}: rank {rank} of {size} processes; the rank must be below the process count",
                launcher.name()
            ),
        });
    }
    Ok((rank, size))
}

/// This process's rank and the job's process count when an outside launcher
/// (torchrun, Open MPI, Slurm, MPICH) started it, and the launcher's name;
/// `None` under `nvshmem-run` or no launcher.
pub(crate) fn outside_job(env: Lookup) -> Option<(&'static str, u32, u32)> {
    let num = |var: &str| env(var).and_then(|v| v.trim().parse::<u32>().ok());
    let launcher = detect(env);
    let (rank, size) = match launcher {
        Launcher::Torchrun => (num("RANK")?, num("WORLD_SIZE")?),
        Launcher::OpenMpi => (num("OMPI_COMM_WORLD_RANK")?, num("OMPI_COMM_WORLD_SIZE")?),
        Launcher::Slurm => (num("SLURM_PROCID")?, num("SLURM_NTASKS")?),
        Launcher::Hydra => (num("PMI_RANK")?, num("PMI_SIZE")?),
        Launcher::NvshmemRun | Launcher::Pmix | Launcher::None => return None,
    };
    (rank < size).then_some((launcher.name(), rank, size))
}

/// Which launcher started this process: the innermost one whose variables are set.
pub(crate) fn detect(env: Lookup) -> Launcher {
    let has = |var: &str| env(var).is_some_and(|v| !v.is_empty());
    if has(run_env::RANK) || has(run_env::UNIQUEID) {
        Launcher::NvshmemRun
    } else if ["RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"]
        .iter()
        .all(|v| has(v))
    {
        Launcher::Torchrun
    } else if has("OMPI_COMM_WORLD_SIZE") {
        Launcher::OpenMpi
    } else if has("SLURM_PROCID") && (has("SLURM_STEP_ID") || has("SLURM_STEPID")) {
        // A batch script has SLURM_PROCID too; only srun's tasks have a step.
        Launcher::Slurm
    } else if has("PMI_RANK") || has("PMI_FD") || has("PMI_PORT") {
        Launcher::Hydra
    } else if has("PMIX_RANK") {
        Launcher::Pmix
    } else {
        Launcher::None
    }
}

/// NVSHMEM's own bootstrap, selected by variables.
fn nvshmem_bootstrap(kind: &str) -> Vec<(String, String)> {
    match kind {
        "MPI" => vec![("NVSHMEM_BOOTSTRAP".into(), "MPI".into())],
        pmi => vec![
            ("NVSHMEM_BOOTSTRAP".into(), "PMI".into()),
            ("NVSHMEM_BOOTSTRAP_PMI".into(), pmi.into()),
        ],
    }
}

impl Plan {
    fn new(launcher: Launcher, describe: String, hint: &'static str) -> Plan {
        Plan {
            uid: None,
            env: Vec::new(),
            expected_pes: None,
            local_rank: None,
            launcher,
            describe,
            hint,
        }
    }

    /// NVSHMEM's bootstrap `kind` (`PMI`, `PMI-2`, `PMIX`, `MPI`).
    fn nvshmem(launcher: Launcher, kind: &str) -> Plan {
        let hint = match kind {
            "MPI" => MPI_HINT,
            "PMIX" => PMIX_HINT,
            _ => PMI_HINT,
        };
        let mut plan = Plan::new(launcher, format!("{kind} bootstrap"), hint);
        plan.env = nvshmem_bootstrap(kind);
        plan
    }

    fn unique_id(launcher: Launcher, rank: u32, n_pes: u32, source: IdSource) -> Plan {
        let mut plan = Plan::new(
            launcher,
            format!("UID bootstrap, rank {rank} of {n_pes}"),
            UID_HINT,
        );
        plan.uid = Some((rank, n_pes, source));
        plan.expected_pes = Some(n_pes);
        plan
    }

    fn local_rank(mut self, env: Lookup, var: &'static str) -> Result<Plan> {
        if let Some(value) = env(var) {
            self.local_rank = Some((parse_index(var, &value)?, var));
        }
        Ok(self)
    }

    fn expecting(mut self, n: Option<u32>) -> Plan {
        self.expected_pes = n;
        self
    }
}

/// What init does for the launcher `env` shows.
fn from_launcher(env: Lookup) -> Result<Plan> {
    let launcher = detect(env);
    let plan = match launcher {
        Launcher::NvshmemRun => {
            let rank = required(env, run_env::RANK, launcher)?;
            let n = required(env, run_env::NRANKS, launcher)?;
            let (rank, n) = rank_of(launcher, rank, n)?;
            // The store first: rank 0 makes the id with the NVSHMEM this
            // program loaded. NVSHMEM_RUN_UNIQUEID (made by the launcher, for
            // C/C++ PEs) is used where there is no store.
            let source = match (env(run_env::RENDEZVOUS), env(run_env::UNIQUEID)) {
                (Some(addr), _) => IdSource::Rendezvous {
                    addr,
                    job: env(run_env::JOB).unwrap_or_default(),
                    serve: false,
                },
                (None, Some(hex)) => {
                    IdSource::Given(UniqueId::from_hex(&hex).map_err(|e| Error::InvalidEnv {
                        var: run_env::UNIQUEID.into(),
                        value: hex.clone(),
                        reason: e.to_string(),
                    })?)
                }
                (None, None) => {
                    return Err(Error::InvalidEnv {
                        var: run_env::RENDEZVOUS.into(),
                        value: String::new(),
                        reason: "nvshmem-run sets it (or NVSHMEM_RUN_UNIQUEID) for every PE".into(),
                    });
                }
            };
            Plan::unique_id(launcher, rank, n, source)
        }
        Launcher::Torchrun => {
            let rank = required(env, "RANK", launcher)?;
            let n = required(env, "WORLD_SIZE", launcher)?;
            let (rank, n) = rank_of(launcher, rank, n)?;
            let addr = match env(run_env::RENDEZVOUS) {
                Some(addr) => addr,
                None => {
                    let host = env("MASTER_ADDR").unwrap_or_default();
                    let port = u16::try_from(required(env, "MASTER_PORT", launcher)?)
                        .ok()
                        .and_then(|p| p.checked_add(TORCHRUN_PORT_OFFSET))
                        .ok_or_else(|| Error::InvalidEnv {
                            var: "MASTER_PORT".into(),
                            value: env("MASTER_PORT").unwrap_or_default(),
                            reason: "not a TCP port below 65535".into(),
                        })?;
                    crate::job::rendezvous::join_host_port(&host, port)
                }
            };
            let job = format!(
                "{}/{}",
                env("TORCHELASTIC_RUN_ID").unwrap_or_default(),
                env("TORCHELASTIC_RESTART_COUNT").unwrap_or_default()
            );
            let source = IdSource::Rendezvous {
                addr,
                job,
                serve: rank == 0,
            };
            let mut plan = Plan::unique_id(launcher, rank, n, source);
            // As PyTorch does: the bootstrap's sockets use NCCL's interface.
            if env("NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME").is_none()
                && let Some(ifname) = env("NCCL_SOCKET_IFNAME")
            {
                plan.env
                    .push(("NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME".into(), ifname));
            }
            plan.local_rank(env, "LOCAL_RANK")?
        }
        Launcher::OpenMpi => {
            let n = required(env, "OMPI_COMM_WORLD_SIZE", launcher)?;
            // NVSHMEM's default (PMI-1) sees no PMI server under Open MPI, and
            // each rank would run as a job of its own: use MPI.
            let plan = if n > 1 {
                Plan::nvshmem(launcher, "MPI")
            } else {
                Plan::new(launcher, "single PE".into(), PMI_HINT)
            };
            plan.expecting(Some(n))
                .local_rank(env, "OMPI_COMM_WORLD_LOCAL_RANK")?
        }
        Launcher::Slurm => {
            let n = match number(env, "SLURM_STEP_NUM_TASKS")? {
                Some(n) => n,
                None => required(env, "SLURM_NTASKS", launcher)?,
            };
            let mpi = env("SLURM_MPI_TYPE")
                .unwrap_or_default()
                .to_ascii_lowercase();
            let plan = if mpi.starts_with("pmix") || env("PMIX_RANK").is_some() {
                Plan::nvshmem(launcher, "PMIX")
            } else if mpi == "pmi2" || env("PMI_FD").is_some() {
                Plan::nvshmem(launcher, "PMI-2")
            } else if n <= 1 {
                Plan::new(launcher, "single PE".into(), PMI_HINT)
            } else {
                return Err(Error::InvalidEnv {
                    var: "SLURM_MPI_TYPE".into(),
                    value: mpi,
                    reason: format!(
                        "srun started {n} tasks without a PMI that NVSHMEM speaks, so each \
                         would run alone. Fix: srun --mpi=pmix (or --mpi=pmi2)"
                    ),
                });
            };
            plan.expecting(Some(n)).local_rank(env, "SLURM_LOCALID")?
        }
        Launcher::Hydra => Plan::nvshmem(launcher, "PMI")
            .expecting(number(env, "PMI_SIZE")?)
            .local_rank(env, "MPI_LOCALRANKID")?,
        Launcher::Pmix => Plan::nvshmem(launcher, "PMIX").local_rank(env, "PMIX_LOCAL_RANK")?,
        Launcher::None => Plan::new(
            launcher,
            "single PE (PMI singleton; no launcher variables found)".into(),
            PMI_HINT,
        ),
    };
    Ok(plan)
}

impl Bootstrap {
    /// What init will do for this bootstrap, given the environment.
    pub(crate) fn plan(&self, env: Lookup) -> Result<Plan> {
        let detected = from_launcher(env);
        let uid = |rank, n_pes, id| -> Result<Plan> {
            let (rank, n) = rank_of(Launcher::None, rank, n_pes)?;
            Ok(Plan::unique_id(
                Launcher::None,
                rank,
                n,
                IdSource::Given(id),
            ))
        };
        let mut plan = match self {
            Bootstrap::Auto => {
                let mut plan = detected?;
                if let Some(user) = env("NVSHMEM_BOOTSTRAP") {
                    // The user's choice wins over the launcher's default.
                    plan.uid = None;
                    plan.env.clear();
                    plan.describe =
                        format!("NVSHMEM_BOOTSTRAP={user} under {}", plan.launcher.name());
                    plan.hint = PMI_HINT;
                }
                return Ok(plan);
            }
            Bootstrap::Single => Plan {
                describe: "single PE".into(),
                expected_pes: Some(1),
                ..Plan::nvshmem(Launcher::None, "PMI")
            },
            Bootstrap::UniqueId { rank, n_pes, id } => uid(*rank, *n_pes, *id)?,
            Bootstrap::Pmi => Plan::nvshmem(Launcher::None, "PMI"),
            Bootstrap::Pmi2 => Plan::nvshmem(Launcher::None, "PMI-2"),
            Bootstrap::Pmix => Plan::nvshmem(Launcher::None, "PMIX"),
            Bootstrap::Mpi => Plan::nvshmem(Launcher::None, "MPI"),
        };
        // An explicit bootstrap still takes the GPU from the launcher's local rank.
        if let Ok(detected) = detected {
            plan.local_rank = detected.local_rank;
        }
        Ok(plan)
    }
}

#[cfg(test)]
mod tests;
