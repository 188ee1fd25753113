//! Bootstrap selection from the variables each launcher sets.

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
        // sbatch's script has SLURM_PROCID and SLURM_NTASKS, but it is not
        // a task of an srun step: a program it runs directly is one PE.
        name: "a Slurm batch script, no srun",
        vars: &[
            ("SLURM_JOB_ID", "200505"),
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "4"),
            ("SLURM_LOCALID", "0"),
        ],
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
            ("SLURM_STEP_ID", "0"),
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
            ("SLURM_STEP_ID", "0"),
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
            ("SLURM_STEPID", "3"),
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
            &[
                ("SLURM_PROCID", "0"),
                ("SLURM_STEP_ID", "0"),
                ("SLURM_NTASKS", "4"),
            ],
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
        ("SLURM_STEP_ID", "0"),
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
