//! NVSHMEM's device API for Rust kernels.
//!
//! This crate is `no_std` and is built for `nvptx64-nvidia-cuda` by
//! [`nvshmem-builder`](../nvshmem_builder/index.html), which links the kernels
//! against NVSHMEM's own device bitcode (`libnvshmem_device*.bc`), so every call
//! here inlines NVSHMEM's real code.
//!
//! It has two layers:
//! - [`ffi`]: the raw `extern "C"` NVSHMEM device ABI, generated from macro
//!   tables that mirror the type lists in NVSHMEM's headers.
//! - The typed layer (re-exported at the crate root): [`put`], [`get`],
//!   [`atomic_fetch_add`], [`quiet`], [`wait_until`] and the rest, over
//!   [`SymPtr`] (symmetric addresses that a local pointer cannot pass for), [`Pe`]
//!   and element traits that only NVSHMEM's supported types implement.
//!
//! The crate also type-checks on the host, so `cargo check`, rust-analyzer and
//! the doc examples work there; device functions called from host code fail to
//! link, by design.
//!
//! ```no_run
//! use nvshmem_device::{Pe, SymPtr, my_pe, n_pes, p, quiet};
//!
//! // In a kernel crate this is `#[unsafe(no_mangle)] pub unsafe extern "ptx-kernel" fn`.
//! unsafe fn write_my_rank_to_next(dest: SymPtr<i32>) {
//!     let next = my_pe().ring_next(n_pes());
//!     unsafe { p(dest, my_pe().index() as i32, next) };
//!     quiet();
//! }
//! ```
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(stdarch_nvptx))]
#![warn(missing_docs)]

pub mod panic;
pub mod symmetric;
pub mod thread;

pub use symmetric::{Pe, SymPtr};
