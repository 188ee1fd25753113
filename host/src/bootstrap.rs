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
//! | Slurm `srun` | `SLURM_PROCID` | PMIx (`--mpi=pmix`, `PMIX_RANK`) or PMI-2 (`--mpi=pmi2`, `PMI_FD`) | `SLURM_LOCALID` |
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
use crate::launcher::env as run_env;
use crate::uniqueid::UniqueId;

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
    } else if has("SLURM_PROCID") {
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
            let source = match env(run_env::UNIQUEID) {
                Some(hex) => {
                    IdSource::Given(UniqueId::from_hex(&hex).map_err(|e| Error::InvalidEnv {
                        var: run_env::UNIQUEID.into(),
                        value: hex.clone(),
                        reason: e.to_string(),
                    })?)
                }
                None => IdSource::Rendezvous {
                    addr: env(run_env::RENDEZVOUS).ok_or_else(|| Error::InvalidEnv {
                        var: run_env::RENDEZVOUS.into(),
                        value: String::new(),
                        reason: "nvshmem-run sets it (or NVSHMEM_RUN_UNIQUEID) for every PE".into(),
                    })?,
                    job: env(run_env::JOB).unwrap_or_default(),
                    serve: false,
                },
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
                    crate::rendezvous::join_host_port(&host, port)
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
mod tests {
    use super::*;
    use crate::env;

    type Vars<'a> = &'a [(&'a str, &'a str)];

    /// What each launcher sets, and what the plan must be.
    struct Case {
        name: &'static str,
        vars: &'static [(&'static str, &'static str)],
        launcher: Launcher,
        bootstrap: &'static [(&'static str, &'static str)],
        uid: Option<(u32, u32)>,
        expected_pes: Option<u32>,
        local_rank: Option<(usize, &'static str)>,
    }

    const OMPI: &[(&str, &str)] = &[
        ("OMPI_COMM_WORLD_RANK", "1"),
        ("OMPI_COMM_WORLD_SIZE", "4"),
        ("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
        ("OMPI_COMM_WORLD_LOCAL_SIZE", "4"),
        ("PMIX_RANK", "1"),
        ("PMIX_NAMESPACE", "prterun-host-123@1"),
        ("PRTE_LAUNCHED", "1"),
    ];

    const CASES: &[Case] = &[
        Case {
            name: "no launcher",
            vars: &[],
            launcher: Launcher::None,
            bootstrap: &[],
            uid: None,
            expected_pes: None,
            local_rank: None,
        },
        Case {
            name: "nvshmem-run",
            vars: &[
                ("NVSHMEM_RUN_RANK", "2"),
                ("NVSHMEM_RUN_NRANKS", "4"),
                ("NVSHMEM_RUN_RENDEZVOUS", "127.0.0.1:4000"),
                ("NVSHMEM_RUN_JOB", "j"),
                ("NVSHMEM_RUN_GPU", "0"),
            ],
            launcher: Launcher::NvshmemRun,
            bootstrap: &[],
            uid: Some((2, 4)),
            expected_pes: Some(4),
            local_rank: None,
        },
        Case {
            name: "torchrun",
            vars: &[
                ("RANK", "3"),
                ("WORLD_SIZE", "8"),
                ("LOCAL_RANK", "1"),
                ("LOCAL_WORLD_SIZE", "2"),
                ("MASTER_ADDR", "node0"),
                ("MASTER_PORT", "29500"),
                ("TORCHELASTIC_RUN_ID", "abc"),
            ],
            launcher: Launcher::Torchrun,
            bootstrap: &[],
            uid: Some((3, 8)),
            expected_pes: Some(8),
            local_rank: Some((1, "LOCAL_RANK")),
        },
        Case {
            name: "Open MPI 5 mpirun -n 4",
            vars: OMPI,
            launcher: Launcher::OpenMpi,
            bootstrap: &[("NVSHMEM_BOOTSTRAP", "MPI")],
            uid: None,
            expected_pes: Some(4),
            local_rank: Some((1, "OMPI_COMM_WORLD_LOCAL_RANK")),
        },
        Case {
            name: "Open MPI mpirun -n 1",
            vars: &[
                ("OMPI_COMM_WORLD_RANK", "0"),
                ("OMPI_COMM_WORLD_SIZE", "1"),
                ("OMPI_COMM_WORLD_LOCAL_RANK", "0"),
            ],
            launcher: Launcher::OpenMpi,
            bootstrap: &[],
            uid: None,
            expected_pes: Some(1),
            local_rank: Some((0, "OMPI_COMM_WORLD_LOCAL_RANK")),
        },
        Case {
            name: "srun --mpi=pmix",
            vars: &[
                ("SLURM_PROCID", "5"),
                ("SLURM_NTASKS", "8"),
                ("SLURM_STEP_NUM_TASKS", "8"),
                ("SLURM_LOCALID", "1"),
                ("SLURM_MPI_TYPE", "pmix"),
                ("PMIX_RANK", "5"),
            ],
            launcher: Launcher::Slurm,
            bootstrap: &[
                ("NVSHMEM_BOOTSTRAP", "PMI"),
                ("NVSHMEM_BOOTSTRAP_PMI", "PMIX"),
            ],
            uid: None,
            expected_pes: Some(8),
            local_rank: Some((1, "SLURM_LOCALID")),
        },
        Case {
            name: "srun --mpi=pmi2",
            vars: &[
                ("SLURM_PROCID", "1"),
                ("SLURM_NTASKS", "2"),
                ("SLURM_LOCALID", "0"),
                ("PMI_FD", "7"),
                ("PMI_RANK", "1"),
                ("PMI_SIZE", "2"),
                ("PMI_JOBID", "12.0"),
            ],
            launcher: Launcher::Slurm,
            bootstrap: &[
                ("NVSHMEM_BOOTSTRAP", "PMI"),
                ("NVSHMEM_BOOTSTRAP_PMI", "PMI-2"),
            ],
            uid: None,
            expected_pes: Some(2),
            local_rank: Some((0, "SLURM_LOCALID")),
        },
        Case {
            name: "srun of one task without PMI",
            vars: &[
                ("SLURM_PROCID", "0"),
                ("SLURM_NTASKS", "1"),
                ("SLURM_LOCALID", "0"),
                ("SLURM_MPI_TYPE", "none"),
            ],
            launcher: Launcher::Slurm,
            bootstrap: &[],
            uid: None,
            expected_pes: Some(1),
            local_rank: Some((0, "SLURM_LOCALID")),
        },
        Case {
            name: "MPICH Hydra mpiexec -n 4",
            vars: &[
                ("PMI_FD", "5"),
                ("PMI_RANK", "3"),
                ("PMI_SIZE", "4"),
                ("PMI_HOSTNAME", "host"),
                ("MPI_LOCALRANKID", "3"),
                ("MPI_LOCALNRANKS", "4"),
            ],
            launcher: Launcher::Hydra,
            bootstrap: &[
                ("NVSHMEM_BOOTSTRAP", "PMI"),
                ("NVSHMEM_BOOTSTRAP_PMI", "PMI"),
            ],
            uid: None,
            expected_pes: Some(4),
            local_rank: Some((3, "MPI_LOCALRANKID")),
        },
        Case {
            name: "MPICH Hydra mpiexec -pmi-port",
            vars: &[
                ("PMI_PORT", "host:4567"),
                ("PMI_ID", "1"),
                ("MPI_LOCALRANKID", "1"),
            ],
            launcher: Launcher::Hydra,
            bootstrap: &[
                ("NVSHMEM_BOOTSTRAP", "PMI"),
                ("NVSHMEM_BOOTSTRAP_PMI", "PMI"),
            ],
            uid: None,
            expected_pes: None,
            local_rank: Some((1, "MPI_LOCALRANKID")),
        },
        Case {
            name: "prterun (PMIx only)",
            vars: &[("PMIX_RANK", "0"), ("PMIX_LOCAL_RANK", "0")],
            launcher: Launcher::Pmix,
            bootstrap: &[
                ("NVSHMEM_BOOTSTRAP", "PMI"),
                ("NVSHMEM_BOOTSTRAP_PMI", "PMIX"),
            ],
            uid: None,
            expected_pes: None,
            local_rank: Some((0, "PMIX_LOCAL_RANK")),
        },
        Case {
            name: "torchrun inside an srun step: torchrun is innermost",
            vars: &[
                ("SLURM_PROCID", "0"),
                ("SLURM_NTASKS", "2"),
                ("SLURM_LOCALID", "0"),
                ("RANK", "1"),
                ("WORLD_SIZE", "16"),
                ("LOCAL_RANK", "1"),
                ("MASTER_ADDR", "10.0.0.1"),
                ("MASTER_PORT", "29500"),
            ],
            launcher: Launcher::Torchrun,
            bootstrap: &[],
            uid: Some((1, 16)),
            expected_pes: Some(16),
            local_rank: Some((1, "LOCAL_RANK")),
        },
        Case {
            name: "mpirun inside a Slurm allocation: Open MPI is innermost",
            vars: &[
                ("SLURM_PROCID", "0"),
                ("SLURM_NTASKS", "8"),
                ("OMPI_COMM_WORLD_SIZE", "2"),
                ("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
            ],
            launcher: Launcher::OpenMpi,
            bootstrap: &[("NVSHMEM_BOOTSTRAP", "MPI")],
            uid: None,
            expected_pes: Some(2),
            local_rank: Some((1, "OMPI_COMM_WORLD_LOCAL_RANK")),
        },
    ];

    #[test]
    fn every_launcher_is_detected_with_its_bootstrap_size_and_local_rank() {
        for case in CASES {
            let plan = Bootstrap::Auto
                .plan(&env::of(case.vars))
                .unwrap_or_else(|e| panic!("{}: {e}", case.name));
            let bootstrap: Vec<(String, String)> = case
                .bootstrap
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            assert_eq!(plan.launcher, case.launcher, "{}", case.name);
            assert_eq!(plan.env, bootstrap, "{}", case.name);
            assert_eq!(
                plan.uid.as_ref().map(|(r, n, _)| (*r, *n)),
                case.uid,
                "{}",
                case.name
            );
            assert_eq!(plan.expected_pes, case.expected_pes, "{}", case.name);
            assert_eq!(plan.local_rank, case.local_rank, "{}", case.name);
        }
    }

    #[test]
    fn torchrun_rank_0_serves_the_id_one_port_above_master_port() {
        let vars = |rank| {
            env::of(&[
                ("RANK", rank),
                ("WORLD_SIZE", "2"),
                ("MASTER_ADDR", "node0"),
                ("MASTER_PORT", "29500"),
                ("TORCHELASTIC_RUN_ID", "abc"),
                ("NCCL_SOCKET_IFNAME", "eth1"),
            ])
        };
        for (rank, serve) in [("0", true), ("1", false)] {
            let plan = Bootstrap::Auto.plan(&vars(rank)).unwrap();
            let Some((
                _,
                _,
                IdSource::Rendezvous {
                    addr,
                    job,
                    serve: s,
                },
            )) = plan.uid
            else {
                panic!("{plan:?}")
            };
            assert_eq!(
                (addr.as_str(), job.as_str(), s),
                ("node0:29501", "abc/", serve)
            );
            assert!(
                plan.env
                    .contains(&("NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME".into(), "eth1".into()))
            );
        }
    }

    #[test]
    fn launcher_mistakes_are_errors_that_name_the_variable_and_the_fix() {
        let id = UniqueId::from_bytes([1; 128]).to_hex();
        let cases: &[(Vars, &str, &str)] = &[
            (
                &[
                    ("NVSHMEM_RUN_UNIQUEID", "xyz"),
                    ("NVSHMEM_RUN_RANK", "0"),
                    ("NVSHMEM_RUN_NRANKS", "2"),
                ],
                "NVSHMEM_RUN_UNIQUEID",
                "256 hex digits",
            ),
            (
                &[("NVSHMEM_RUN_UNIQUEID", &id), ("NVSHMEM_RUN_NRANKS", "2")],
                "NVSHMEM_RUN_RANK",
                "nvshmem-run",
            ),
            (
                &[("NVSHMEM_RUN_RANK", "0")],
                "NVSHMEM_RUN_NRANKS",
                "nvshmem-run",
            ),
            (
                &[("NVSHMEM_RUN_RANK", "-1"), ("NVSHMEM_RUN_NRANKS", "2")],
                "NVSHMEM_RUN_RANK",
                "non-negative",
            ),
            (
                &[("NVSHMEM_RUN_RANK", "0"), ("NVSHMEM_RUN_NRANKS", "2")],
                "NVSHMEM_RUN_RENDEZVOUS",
                "nvshmem-run",
            ),
            (
                &[("OMPI_COMM_WORLD_SIZE", "two")],
                "OMPI_COMM_WORLD_SIZE",
                "integer",
            ),
            (
                &[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "4")],
                "SLURM_MPI_TYPE",
                "--mpi=pmix",
            ),
            (
                &[
                    ("RANK", "0"),
                    ("WORLD_SIZE", "2"),
                    ("MASTER_ADDR", "h"),
                    ("MASTER_PORT", "65535"),
                ],
                "MASTER_PORT",
                "port",
            ),
        ];
        for (vars, var, fix) in cases {
            let err = Bootstrap::Auto.plan(&env::of(vars)).unwrap_err();
            assert!(
                matches!(&err, Error::InvalidEnv { var: v, .. } if v == var),
                "{var}: {err:?}"
            );
            assert!(err.to_string().contains(fix), "{var}: {err}");
        }
        let err = Bootstrap::Auto
            .plan(&env::of(&[
                ("NVSHMEM_RUN_RANK", "2"),
                ("NVSHMEM_RUN_NRANKS", "2"),
            ]))
            .unwrap_err();
        assert!(matches!(err, Error::InvalidArgument { .. }), "{err:?}");
    }

    #[test]
    fn the_users_nvshmem_bootstrap_wins_over_the_launchers() {
        let mut vars = OMPI.to_vec();
        vars.push(("NVSHMEM_BOOTSTRAP", "PMI"));
        let plan = Bootstrap::Auto.plan(&env::of(&vars)).unwrap();
        assert!(plan.env.is_empty() && plan.uid.is_none(), "{plan:?}");
        assert_eq!(plan.expected_pes, Some(4), "the size is still checked");
    }

    #[test]
    fn explicit_bootstraps_select_nvshmems_and_keep_the_local_rank() {
        let none = env::of(&[
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "1"),
            ("SLURM_LOCALID", "3"),
        ]);
        let plan = |b: Bootstrap| b.plan(&none).unwrap();
        assert_eq!(plan(Bootstrap::Pmi2).env[1].1, "PMI-2");
        assert_eq!(plan(Bootstrap::Mpi).env, nvshmem_bootstrap("MPI"));
        assert_eq!(plan(Bootstrap::Single).expected_pes, Some(1));
        assert_eq!(plan(Bootstrap::Pmix).local_rank, Some((3, "SLURM_LOCALID")));
        let id = UniqueId::from_bytes([0; 128]);
        for (rank, n_pes, ok) in [(0, 1, true), (1, 1, false), (0, 0, false)] {
            let r = Bootstrap::UniqueId { rank, n_pes, id }.plan(&none);
            assert_eq!(r.is_ok(), ok, "rank {rank} of {n_pes}");
        }
    }
}
