//! Builds Rust kernel crates to PTX (and a cubin) linked with NVSHMEM's device bitcode.
//!
//! Placeholder: the pipeline lands in the next step.
#![warn(missing_docs)]

mod error;
pub mod manifest;
pub mod nvshmem;

pub use error::{Error, Result};
