//! Host runtime for NVSHMEM kernels written in Rust.
#![warn(missing_docs)]
