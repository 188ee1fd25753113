//! The CUDA driver side: finding the driver, choosing the PE's GPU, making its
//! context current, and telling kernel faults from other driver errors.

use crate::env::Lookup;
use crate::error::{Error, Result};
use crate::job::bootstrap::parse_index;
use crate::job::launcher::env as launcher_env;
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

/// The GPU a PE uses, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuChoice {
    /// The CUDA device ordinal.
    pub ordinal: usize,
    /// How it was chosen, for messages.
    pub reason: String,
}

/// Chooses the PE's GPU among `count`: `explicit` (the options'), else
/// `NVSHMEM_RUN_GPU` (set by `nvshmem-run`), else the launcher's local rank
/// (see [`bootstrap`](crate::bootstrap)) mod `count`, else 0.
pub(crate) fn choose_gpu(
    explicit: Option<usize>,
    env: Lookup,
    local_rank: Option<(usize, &'static str)>,
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
        return check(ordinal, " by InitOptions::gpu");
    }
    if let Some(value) = env(launcher_env::GPU) {
        let ordinal = parse_index(launcher_env::GPU, &value)?;
        return check(ordinal, &format!(" by {}", launcher_env::GPU));
    }
    Ok(match local_rank {
        Some((rank, var)) => GpuChoice {
            ordinal: rank % count.max(1),
            reason: format!("local rank {rank} ({var}) mod {count}"),
        },
        None => GpuChoice {
            ordinal: 0,
            reason: "default".into(),
        },
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

/// The architecture of GPU `ordinal` (its compute capability), without
/// creating a context: what to build kernels for.
///
/// ```no_run
/// println!("GPU 0 is {}", nvshmem_host::gpu_arch(0)?);
/// # Ok::<(), nvshmem_host::Error>(())
/// ```
pub fn gpu_arch(ordinal: usize) -> Result<nvshmem_types::Arch> {
    let count = device_count()?;
    if ordinal >= count {
        return Err(Error::InvalidGpu {
            ordinal,
            count,
            from: String::new(),
        });
    }
    let attribute = |a| {
        // SAFETY: the driver is initialized (device_count) and the ordinal exists.
        result::device::get(ordinal as i32)
            .and_then(|dev| unsafe { result::device::get_attribute(dev, a) })
            .map_err(|source| Error::NoGpu { source })
    };
    use sys::CUdevice_attribute::{
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR as MAJOR,
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR as MINOR,
    };
    let number = (attribute(MAJOR)? * 10 + attribute(MINOR)?).max(0) as u32;
    nvshmem_types::Arch::new(number).ok_or_else(|| Error::InvalidArgument {
        reason: format!(
            "GPU {ordinal} is sm_{number}, which the builder does not support ({})",
            nvshmem_types::ParseArchError
        ),
    })
}

/// Whether `stream` is capturing a CUDA graph (`cuStreamIsCapturing`).
pub(crate) fn is_capturing(stream: &cudarc::driver::CudaStream) -> Result<bool> {
    let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    // SAFETY: a live stream (borrowed); only reads its capture status.
    unsafe { sys::cuStreamIsCapturing(stream.cu_stream(), &mut status) }
        .result()
        .map_err(Error::driver("cuStreamIsCapturing"))?;
    Ok(status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
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
    use crate::env::of as env_of;

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
        let run = env_of(&[("NVSHMEM_RUN_GPU", "1")]);
        let slurm = Some((6, "SLURM_LOCALID"));
        let choose = |explicit, env: &dyn Fn(&str) -> Option<String>, local, count| {
            choose_gpu(explicit, env, local, count).unwrap().ordinal
        };
        assert_eq!(choose(None, &none, None, 4), 0);
        assert_eq!(choose(Some(3), &run, slurm, 4), 3);
        assert_eq!(choose(None, &run, slurm, 4), 1);
        assert_eq!(choose(None, &none, slurm, 4), 2);
        let reason = choose_gpu(None, &none, slurm, 4).unwrap().reason;
        assert!(reason.contains("SLURM_LOCALID"), "{reason}");
    }

    #[test]
    fn gpu_choice_errors_name_the_variable() {
        let err = choose_gpu(None, &env_of(&[("NVSHMEM_RUN_GPU", "7")]), None, 2).unwrap_err();
        assert!(matches!(
            err,
            Error::InvalidGpu {
                ordinal: 7,
                count: 2,
                ..
            }
        ));
        assert!(err.to_string().contains("NVSHMEM_RUN_GPU"), "{err}");
        let err = choose_gpu(None, &env_of(&[("NVSHMEM_RUN_GPU", "x")]), None, 2).unwrap_err();
        assert!(matches!(err, Error::InvalidEnv { .. }), "{err:?}");
        assert!(matches!(
            choose_gpu(Some(2), &env_of(&[]), None, 2),
            Err(Error::InvalidGpu { .. })
        ));
    }
}
