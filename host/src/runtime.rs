//! The runtime: the driver, NVSHMEM's library, symmetric memory, modules and
//! their kernels, host-issued operations, teams and collectives.

pub mod bindings;
pub(crate) mod collectives;
pub(crate) mod driver;
pub mod dynamic;
pub mod exchange;
pub(crate) mod heap;
pub(crate) mod image;
pub(crate) mod kernel;
pub mod launch;
pub mod library;
pub(crate) mod loaded;
pub mod memory;
pub(crate) mod module;
pub(crate) mod nvshmem;
pub(crate) mod ops;
pub(crate) mod team;
pub mod tensor_map;
