//! The environment variables `nvshmem-run` sets for each PE, and that
//! [`crate`]'s initialization reads.

/// This PE's rank, `0..NRANKS`.
pub const RANK: &str = "NVSHMEM_RUN_RANK";
/// The number of PEs the launcher started.
pub const NRANKS: &str = "NVSHMEM_RUN_NRANKS";
/// Where rank 0 puts NVSHMEM's unique id and the other PEs get it (`HOST:PORT`
/// of a store the launcher serves; see the crate's `bootstrap` docs). Also
/// honoured under torchrun, instead of `MASTER_ADDR:MASTER_PORT+1`.
pub const RENDEZVOUS: &str = "NVSHMEM_RUN_RENDEZVOUS";
/// What tells this job's store requests from another job's.
pub const JOB: &str = "NVSHMEM_RUN_JOB";
/// NVSHMEM's 128-byte unique id (`nvshmemx_uniqueid_t`) as 256 hex digits,
/// when the launcher made it: `nvshmem-run` does where it can load NVSHMEM
/// (for C/C++ PEs); nvshmem_host uses it when set, else [`RENDEZVOUS`].
pub const UNIQUEID: &str = "NVSHMEM_RUN_UNIQUEID";
/// The CUDA device ordinal this PE should use (rank mod the number of GPUs).
pub const GPU: &str = "NVSHMEM_RUN_GPU";

/// Defaults that `nvshmem-run` gives every PE: NVSHMEM's UID bootstrap over
/// loopback, and NVLink multicast off for NVSHMEM, NCCL and PyTorch.
///
/// Each is set only when the launcher's own environment does not already hold
/// the variable (an empty value counts as set), so a user's choice always wins.
///
/// ```
/// use nvshmem_host::launcher::env;
/// let ifname = env::NVSHMEM_DEFAULTS.iter().find(|(k, _)| *k == env::BOOTSTRAP_UID_SOCK_IFNAME);
/// assert_eq!(ifname, Some(&(env::BOOTSTRAP_UID_SOCK_IFNAME, "lo")));
/// ```
pub const NVSHMEM_DEFAULTS: &[(&str, &str)] = &[
    (BOOTSTRAP_UID_SOCK_IFNAME, "lo"),
    (DISABLE_NVLS, "1"),
    ("NCCL_NVLS_ENABLE", "0"),
    ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
];

/// NVSHMEM's choice of network interface for the unique-id (UID) bootstrap.
///
/// `nvshmem-run` defaults it to `lo`: every PE it starts runs on this machine,
/// and the bootstrap root (in the launcher) listens there, so loopback always
/// works, while NVSHMEM's own choice (the first interface that is up) may be an
/// interface that a firewall or a container's network blocks.
pub const BOOTSTRAP_UID_SOCK_IFNAME: &str = "NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME";

/// Set to `1`, NVSHMEM does not use NVLink SHARP (NVLS) multicast objects.
///
/// `nvshmem-run` defaults it to `1` because multicast objects are a shared
/// resource of an NVSwitch host: a program that leaves them in a bad state can
/// put the host's GPUs, which other users share, out of service, and the GPU
/// machines this project is tested on require multicast to stay off. NVLS only
/// speeds up some collectives on NVSwitch systems; on one GPU, or GPUs without
/// NVSwitch, it is never used anyway. Export `NVSHMEM_DISABLE_NVLS=0` before
/// `nvshmem-run` to let NVSHMEM use it where that is allowed.
pub const DISABLE_NVLS: &str = "NVSHMEM_DISABLE_NVLS";
