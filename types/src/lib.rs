//! What NVSHMEM kernels and the programs that launch them share.
//!
//! This crate is `no_std` and builds on stable Rust, for the GPU
//! (`nvptx64-nvidia-cuda`) and the host alike, so that one type names one
//! concept on both sides of a launch:
//!
//! - [`SymPtr`]: an address in NVSHMEM's symmetric heap, which a local
//!   pointer cannot pass for; [`Pe`]: a processing element's number;
//! - [`Team`]: an NVSHMEM team handle that is valid by construction;
//! - [`Cmp`] and [`SignalOp`]: the operators of waits and signals;
//! - the reduction operators [`Sum`], [`Prod`], [`Min`], [`Max`], [`And`],
//!   [`Or`] and [`Xor`], and [`ReduceOp`], implemented exactly for the
//!   (operator, element type) pairs that NVSHMEM has;
//! - [`TensorMap`]: CUDA's `CUtensorMap`, for TMA copies;
//! - [`KernelParam`]: what a launch may pass by value, a kernel crate's own
//!   `#[repr(C)]` structs included;
//! - [`Version`] and [`SUPPORTED_VERSIONS`], [`Arch`] and [`SUPPORTED_ARCHS`],
//!   [`DeviceLink`]: what the manifest records, typed, written with
//!   `Display` and read with `FromStr`;
//! - with the `std` feature: the `manifest` module that the builder writes beside
//!   every PTX, and `install`, which finds an NVSHMEM installation.
//!
//! Kernels use it through `nvshmem-device`, host programs through
//! `nvshmem-host`, which re-export it.
#![no_std]
#![warn(missing_docs)]

#[cfg(any(feature = "std", test))]
extern crate std;

mod arch;
mod device_link;
#[cfg(feature = "std")]
pub mod install;
#[cfg(feature = "std")]
pub mod manifest;
mod param;
mod reduce;
mod sym;
mod team;
mod tma;
mod version;
mod wait;

pub use arch::{Arch, ParseArchError, SUPPORTED_ARCHS};
pub use device_link::{DeviceLink, ParseDeviceLinkError};
pub use param::KernelParam;
pub use reduce::{And, Max, Min, Or, Prod, ReduceOp, ReduceOpKind, Sum, Xor};
pub use sym::{Pe, SymPtr};
pub use team::Team;
pub use tma::TensorMap;
pub use version::{
    BitcodeLayout, CudaMajor, CudaVersion, DEFAULT_CUDA, DEFAULT_VERSION, DEVICE_FEATURES,
    ParseCudaError, ParseVersionError, SUPPORTED_VERSIONS, SupportedVersions, Version, VersionInfo,
    Wheel,
};
pub use wait::{Cmp, SignalOp};

/// Implementation details that public signatures have to name. Not API.
#[doc(hidden)]
pub mod __private {
    /// Seals this crate's traits: only this crate implements them.
    pub trait Sealed {}
}
