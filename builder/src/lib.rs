//! Builds Rust kernel crates to PTX (and a cubin) linked with NVSHMEM's device bitcode.
//!
//! This is to NVSHMEM kernels what `spirv-builder` is to rust-gpu: call it from
//! a `build.rs` on stable Rust; it builds the kernel crate with stock nightly
//! rustc (a pinned nightly it installs through rustup).
//!
//! ```no_run
//! // build.rs
//! let out = nvshmem_builder::Builder::new("kernels")
//!     .arch(nvshmem_builder::Arch::DEFAULT)
//!     .out_dir("ptx")
//!     .build_from_build_script(); // prints rerun-if-changed, exits cleanly on error
//! println!("cargo:rustc-env=KERNELS_MANIFEST={}", out.manifest_path.display());
//! ```
//!
//! A stable `build.rs` can use it: the kernel crate is compiled by the
//! pinned nightly ([`toolchain::PINNED_TOOLCHAIN`], with `rust-src` and
//! `llvm-tools`), which the builder installs through rustup when it is
//! missing; NVSHMEM and `ptxas`/`nvlink` come from pip wheels that it
//! downloads into a per-user cache ([`wheels`]) when they are nowhere else.
//! `NVSHMEM_RS_OFFLINE=1` turns both off: the errors then say what to run.
//! Every environment variable it reads is in [`ENV_VARS`]; a setting made on
//! the [`Builder`] wins over its variable.
//!
//! The kernel crate needs no boilerplate the builder can supply: `no_std`
//! and `feature(abi_ptx)` are added to its root when missing, it is built as
//! an `rlib` whatever its `crate-type`, and nvptx64 always aborts on panic.
//! What the builder cannot supply it checks: the crate must have a library
//! and define a `#[panic_handler]` (`nvshmem_device::panic_handler!()`). It
//! may be a member of the host's workspace, so that it type-checks on the
//! host too (its kernels then must be `#[kernel]` functions, which compile
//! for the host; hand-written `extern "ptx-kernel"` ones need a workspace of
//! their own).
//!
//! The pipeline, each step checked:
//! 1. `cargo rustc --release --target nvptx64-nvidia-cuda -Zbuild-std=core` of the
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
//! 6. `ptxas` writes a cubin and the register figures: on the whole module,
//!    or function by function and then `nvlink` for modules too large to
//!    inline whole (see [`DeviceLink`]). Without `ptxas` the build fails,
//!    unless PTX-only output was asked for ([`Builder::ptx_only`]);
//! 7. a [manifest](manifest::Manifest) (NVSHMEM version, arch, kernels, their
//!    parameters, which need a collective launch) and a C header that
//!    compiles as C99 and C++11.
//!
//! 8. typed Rust bindings (`<crate>.rs`): one launch function per kernel, with
//!    the kernel's parameter types, for `nvshmem_host::include_kernels!`.
//!
//! Outputs land in `<out_dir>/nvshmem-<version>/<arch>/<crate>.{ptx,cubin,json,h,rs}`.
#![warn(missing_docs)]

mod builder;
mod error;
mod parallel;
mod pipeline;
pub mod testing;
pub mod toolchain;

#[doc(hidden)]
pub use pipeline::ir;
pub use toolchain::wheels;

pub use builder::{
    AUTO_SEPARATE_ABOVE_LINES, AUTO_SEPARATE_TRANSPORT_ABOVE_LINES, BuildOutput, Builder,
    CheckOutput,
};
pub use error::{Error, Result};
pub use nvshmem_types::{
    Arch, CudaMajor, CudaVersion, DeviceLink, SUPPORTED_ARCHS, SUPPORTED_VERSIONS, Version,
    install, manifest,
};
pub use parallel::build_all_from_build_script;
pub use pipeline::header::c_prefix;
pub use pipeline::ptx_folder;
pub use toolchain::settings::ENV_VARS;
