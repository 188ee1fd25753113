//! The CUDA driver side: finding the driver, choosing the PE's GPU, making its
//! context current, and telling kernel faults from other driver errors.

use crate::error::{Error, Result};
use crate::launcher::env as launcher_env;
use cudarc::driver::{CudaContext, DriverError, result, sys};
use std::sync::{Arc, OnceLock};

/// Whether `libcuda` can be loaded. cudarc panics on its first call when it
/// cannot, so every path into the driver checks this first.
pub(crate) fn probe() -> Result<()> {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: only tries to dlopen the driver's library names.
    let present = *PRESENT.get_or_init(|| unsafe { sys::is_culib_present() });
    if present {
        Ok(())
    } else {
        Err(Error::NoCudaDriver)
    }
}

/// The environment variables that carry a process's rank on its node, as set
/// by the launchers NVSHMEM is started with, in the order they are consulted.
pub const LOCAL_RANK_VARS: &[&str] = &[
    "SLURM_LOCALID",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "MPI_LOCALRANKID",
    "PMIX_LOCAL_RANK",
    "LOCAL_RANK",
];

/// The GPU a PE uses, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuChoice {
    /// The CUDA device ordinal.
    pub ordinal: usize,
    /// How it was chosen, for messages.
    pub reason: String,
}

/// Chooses the PE's GPU among `count`: `explicit` (the builder's), else
/// `NVSHMEM_RUN_GPU` (set by `nvshmem-run`), else the local rank (Slurm,
/// Open MPI, MPICH, PMIx, torchrun variables) mod `count`, else 0.
pub(crate) fn choose_gpu(
    explicit: Option<usize>,
    env: &dyn Fn(&str) -> Option<String>,
    count: usize,
) -> Result<GpuChoice> {
    let check = |ordinal: usize, from: &str| {
        if ordinal < count {
            Ok(GpuChoice {
                ordinal,
                reason: from.trim_start_matches(" by ").to_string(),
            })
        } else {
            Err(Error::InvalidGpu {
                ordinal,
                count,
                from: from.to_string(),
            })
        }
    };
    if let Some(ordinal) = explicit {
        return check(ordinal, " by Builder::gpu");
    }
    if let Some(value) = env(launcher_env::GPU) {
        let ordinal = parse_index(launcher_env::GPU, &value)?;
        return check(ordinal, &format!(" by {}", launcher_env::GPU));
    }
    for var in LOCAL_RANK_VARS {
        if let Some(value) = env(var) {
            let rank = parse_index(var, &value)?;
            return Ok(GpuChoice {
                ordinal: rank % count.max(1),
                reason: format!("local rank {rank} ({var}) mod {count}"),
            });
        }
    }
    Ok(GpuChoice {
        ordinal: 0,
        reason: "default".into(),
    })
}

pub(crate) fn parse_index(var: &str, value: &str) -> Result<usize> {
    value.trim().parse().map_err(|_| Error::InvalidEnv {
        var: var.into(),
        value: value.into(),
        reason: "expected a non-negative integer".into(),
    })
}

/// Initializes the CUDA driver and returns how many GPUs it sees: `Err` with
/// the reason (no driver, no GPU) on machines without one.
///
/// ```no_run
/// match nvshmem_host::gpu_count() {
///     Ok(n) => println!("{n} GPUs"),
///     Err(e) => println!("no GPU: {e}"),
/// }
/// ```
pub fn device_count() -> Result<usize> {
    probe()?;
    result::init().map_err(|source| Error::NoGpu { source })?;
    let count = result::device::get_count().map_err(|source| Error::NoGpu { source })?;
    if count <= 0 {
        return Err(Error::NoGpu {
            source: DriverError(sys::cudaError_enum::CUDA_ERROR_NO_DEVICE),
        });
    }
    Ok(count as usize)
}

/// Retains `ordinal`'s primary context and makes it current on this thread.
pub(crate) fn context(ordinal: usize) -> Result<Arc<CudaContext>> {
    probe()?;
    CudaContext::new(ordinal).map_err(Error::driver("cuDevicePrimaryCtxRetain"))
}

/// Whether a driver error is a kernel fault: sticky errors that a faulting
/// kernel leaves on the context (illegal address, trap, assert, ...).
pub(crate) fn is_kernel_fault(e: &DriverError) -> bool {
    use sys::cudaError_enum::*;
    matches!(
        e.0,
        CUDA_ERROR_ILLEGAL_ADDRESS
            | CUDA_ERROR_LAUNCH_TIMEOUT
            | CUDA_ERROR_ASSERT
            | CUDA_ERROR_HARDWARE_STACK_ERROR
            | CUDA_ERROR_ILLEGAL_INSTRUCTION
            | CUDA_ERROR_MISALIGNED_ADDRESS
            | CUDA_ERROR_INVALID_ADDRESS_SPACE
            | CUDA_ERROR_INVALID_PC
            | CUDA_ERROR_LAUNCH_FAILED
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn no_driver_on_this_machine_is_a_readable_error() {
        // On a GPU machine the probe succeeds; nothing else to check there.
        if let Err(e) = probe() {
            assert!(matches!(e, Error::NoCudaDriver));
            let msg = e.to_string();
            assert!(!msg.contains('\n') && msg.contains("libcuda.so.1"), "{msg}");
            assert!(matches!(device_count(), Err(Error::NoCudaDriver)));
            assert!(matches!(context(0), Err(Error::NoCudaDriver)));
        }
    }

    #[test]
    fn gpu_choice_follows_explicit_then_launcher_then_local_rank() {
        let none = env_of(&[]);
        assert_eq!(choose_gpu(None, &none, 4).unwrap().ordinal, 0);
        assert_eq!(
            choose_gpu(Some(3), &env_of(&[("NVSHMEM_RUN_GPU", "1")]), 4)
                .unwrap()
                .ordinal,
            3
        );
        assert_eq!(
            choose_gpu(
                None,
                &env_of(&[("NVSHMEM_RUN_GPU", "1"), ("SLURM_LOCALID", "2")]),
                4
            )
            .unwrap()
            .ordinal,
            1
        );
        let slurm = choose_gpu(None, &env_of(&[("SLURM_LOCALID", "6")]), 4).unwrap();
        assert_eq!(slurm.ordinal, 2);
        assert!(slurm.reason.contains("SLURM_LOCALID"), "{}", slurm.reason);
        assert_eq!(
            choose_gpu(None, &env_of(&[("OMPI_COMM_WORLD_LOCAL_RANK", "5")]), 2)
                .unwrap()
                .ordinal,
            1
        );
    }

    #[test]
    fn gpu_choice_errors_name_the_variable() {
        let err = choose_gpu(None, &env_of(&[("NVSHMEM_RUN_GPU", "7")]), 2).unwrap_err();
        assert!(matches!(
            err,
            Error::InvalidGpu {
                ordinal: 7,
                count: 2,
                ..
            }
        ));
        assert!(err.to_string().contains("NVSHMEM_RUN_GPU"), "{err}");
        let err = choose_gpu(None, &env_of(&[("SLURM_LOCALID", "x")]), 2).unwrap_err();
        assert!(matches!(err, Error::InvalidEnv { .. }), "{err:?}");
        assert!(matches!(
            choose_gpu(Some(2), &env_of(&[]), 2),
            Err(Error::InvalidGpu { .. })
        ));
    }
}
