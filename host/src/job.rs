//! A job's set-up: how its PEs are started ([`launcher`]), find each other
//! ([`bootstrap`], `rendezvous`, `uniqueid`) and initialize NVSHMEM
//! (`init`), and the GPU test [`harness`] that starts them.

pub mod bootstrap;
pub mod harness;
pub(crate) mod init;
pub mod launcher;
pub(crate) mod rendezvous;
pub(crate) mod uniqueid;
