//! Host runtime for NVSHMEM kernels written in Rust.
//!
//! With this crate a Rust program initializes NVSHMEM as one PE or as one of
//! N, allocates typed symmetric buffers, loads the builder's PTX or cubin
//! registered with NVSHMEM, launches its kernels (plain or collective), runs
//! stream-ordered NVSHMEM operations from the host, and shuts down cleanly. It
//! needs only the NVIDIA driver and NVSHMEM's host library (the
//! `nvidia-nvshmem-cu13` pip wheel): no MPI, no CUDA toolkit.
//!
//! ```no_run
//! use nvshmem_host::{Nvshmem, Result};
//!
//! fn main() -> Result<()> {
//!     let nv = Nvshmem::init()?; // 1 PE, or one of N under nvshmem-run / srun
//!     let stream = nv.stream();
//!     let n = 1 << 20;
//!     let buf = nv.alloc::<f32>(n)?; // collective: same on every PE
//!     buf.fill(stream, 1.0)?;
//!
//!     let module = nv.load_module("ptx/nvshmem-3.4.5/sm_90/kernels.json")?;
//!     let scale = module.kernel("scale")?;
//!     // SAFETY: `scale` writes `n` floats through its first argument.
//!     unsafe { scale.launch(stream, (n as u32).div_ceil(256), 256, (buf.sym_ptr(), n as u32))? };
//!     nv.barrier_all_on_stream(stream)?;
//!     println!("PE {}: {}", nv.my_pe().index(), buf.to_vec(stream)?[0]);
//!     Ok(())
//! }
//! ```
//!
//! A program whose build script built the kernels launches them through
//! their typed [`bindings`] instead, one function per kernel with the
//! kernel's parameter types, so that a wrong argument does not compile:
//! `nvshmem_host::include_kernels!(kernels);` then
//! `kernels::scale(&k, stream, blocks, 256, &buf, n as u32)?`.
//!
//! # Layers
//! As in cudarc: [`sys`] (bindgen's raw FFI: one function table, loaded at
//! run time, and what differs per NVSHMEM version) → [`library`] (finding
//! and loading the library) → the safe typed layer re-exported here.
//! The source folders follow this: `sys/`, the runtime (`runtime/`: driver,
//! library, memory, modules and kernels, operations, teams, collectives), and
//! the job's set-up above it (`job/`: how the PEs start and find each other,
//! [`bootstrap`], [`launcher`], the test [`harness`], initialization).
//!
//! # The rules that NVSHMEM imposes
//! - **Collective calls** ([`Nvshmem::init`], [`Nvshmem::alloc`] and the
//!   drop of a [`SymBuffer`], barriers, broadcasts, ...) must be made by every
//!   PE, in the same order. See [the collective rule](memory#the-collective-rule).
//! - **One thread per PE** drives NVSHMEM: [`Nvshmem`], buffers, modules and
//!   kernels are neither `Send` nor `Sync`.
//! - **Versions match**: the kernels' PTX must be linked against the same
//!   NVSHMEM version as the host library that runs it; loading checks this.
//! - **Initialize first thing in `main`**: NVSHMEM reads its settings from
//!   the environment, which init may set only while the process has one
//!   thread (see [`InitOptions`]). NVLink multicast stays off by default
//!   (`NVSHMEM_DISABLE_NVLS=1`).
//! - **Launchers**: the same program runs as one PE, under `nvshmem-run`,
//!   `mpirun`, `srun`, MPICH's `mpiexec` or `torchrun`: see [`bootstrap`].
#![warn(missing_docs)]

mod env;
mod error;
pub mod sys;

mod job;
mod runtime;

pub use job::{bootstrap, harness, launcher};
pub use runtime::{bindings, dynamic, exchange, launch, library, memory, tensor_map};

pub use cudarc;
pub use cudarc::driver::{CudaContext, CudaStream};
pub use error::{Error, Result, take_drop_error};
/// The `half` crate: [`half::f16`] and [`half::bf16`] kernel arguments.
pub use half;
pub use job::bootstrap::Bootstrap;
pub use job::init::InitOptions;
pub use job::uniqueid::UniqueId;
pub use nvshmem_types::manifest::{KernelInfo, MANIFEST_FORMAT, Manifest, ParamInfo};
pub use nvshmem_types::{
    And, Arch, Cmp, CudaVersion, DeviceLink, Max, Min, Or, Pe, Prod, ReduceOp, SignalOp, Sum,
    SymPtr, Team, Version, Xor,
};
pub use runtime::bindings::{AsDevicePtr, AsSymPtr};
pub use runtime::driver::{device_count as gpu_count, gpu_arch};
pub use runtime::kernel::Kernel;
pub use runtime::launch::{Dim3, KernelArgs, KernelParam, LaunchConfig};
pub use runtime::memory::{AsSymView, DevicePtr, SymBuffer, SymView};
pub use runtime::module::{Module, ModuleImage, find_manifest};
pub use runtime::nvshmem::{InitTimings, Nvshmem};
pub use runtime::team::{AsTeam, SplitTeam};
