//! Builds Rust kernel crates to PTX (and a cubin) linked with NVSHMEM's device bitcode.
//!
//! This is to NVSHMEM kernels what `spirv-builder` is to rust-gpu: call it from
//! a `build.rs`, on stock nightly Rust.
//!
//! ```no_run
//! // build.rs
//! let out = nvshmem_builder::Builder::new("kernels")
//!     .arch("sm_90")
//!     .out_dir("ptx")
//!     .build_from_build_script(); // prints rerun-if-changed, exits cleanly on error
//! println!("cargo:rustc-env=KERNELS_MANIFEST={}", out.manifest_path.display());
//! ```
//!
//! The pipeline, each step checked:
//! 1. `cargo build --release --target nvptx64-nvidia-cuda -Zbuild-std=core` of the
//!    kernel crate, in its own target folder and with the outer build's
//!    environment filtered out;
//! 2. `llvm-link`: the kernel crate's bitcode, then `--only-needed` its
//!    dependencies' (core included) and NVSHMEM's `libnvshmem_device*.bc`,
//!    then, when the kernels call `nvshmem_device::math`, libdevice
//!    (`libdevice.10.bc`); `static_shared!` statics and the dynamic shared
//!    memory array are moved to PTX shared memory (`addrspace(3)`);
//! 3. every function retargeted to the chosen arch and PTX ISA (at least what
//!    NVSHMEM's own functions ask for), then `opt`: internalize everything but
//!    the kernels and NVSHMEM's two state globals, O3 (with NVVM reflection
//!    resolved for the arch), global DCE;
//! 4. `llc -O3 -mcpu=<arch>`;
//! 5. no `.extern .func` may remain but ptxas' own (`vprintf`, `__assertfail`,
//!    `malloc`, `free`);
//! 6. `ptxas` (when found) writes a cubin and the register figures: on the
//!    whole module, or function by function and then `nvlink` for modules
//!    too large to inline whole (see [`DeviceLink`]);
//! 7. a [manifest](manifest::Manifest) (NVSHMEM version, arch, kernels, their
//!    parameters, which need a collective launch) and a C header.
//!
//! Outputs land in `<out_dir>/nvshmem-<version>/<arch>/<crate>.{ptx,cubin,json,h}`.
#![warn(missing_docs)]

mod error;
#[cfg(feature = "build")]
pub mod toolchain;

#[cfg(feature = "build")]
mod header;
#[cfg(feature = "build")]
mod ir;
#[cfg(feature = "build")]
mod libdevice;
#[cfg(feature = "build")]
mod pipeline;
#[cfg(feature = "build")]
mod shared_memory;
#[cfg(feature = "build")]
mod signature;

pub use error::{Error, Result};
pub use nvshmem_types::{Arch, SUPPORTED_ARCHS, SUPPORTED_VERSIONS, Version, install, manifest};
#[cfg(feature = "build")]
pub use pipeline::{AUTO_SEPARATE_ABOVE_LINES, BuildOutput, Builder, CheckOutput, DeviceLink};
