//! A module the driver has loaded (and NVSHMEM registered, when it has
//! NVSHMEM device code): shared by its [`Module`](crate::Module) handle and
//! its kernels, unloaded when the last of them goes.

use crate::error::{Error, record_drop_error};
use crate::runtime::nvshmem::Inner;
use cudarc::driver::{result, sys};
use nvshmem_types::Version;
use nvshmem_types::manifest::Manifest;
use std::rc::Rc;

/// The loaded module behind a [`Module`](crate::Module) and its kernels.
pub(crate) struct ModuleInner {
    pub(crate) nv: Rc<Inner>,
    pub(crate) module: sys::CUmodule,
    /// What was loaded, for messages.
    pub(crate) what: String,
    pub(crate) manifest: Manifest,
    /// The NVSHMEM version its device code links, when it has any (then registered).
    pub(crate) nvshmem: Option<Version>,
}

impl Drop for ModuleInner {
    fn drop(&mut self) {
        // After finalize, NVSHMEM has let go of the module, and the context
        // stays, so only the unload is left.
        if self.nv.poisoned() {
            // The context is unusable after a kernel fault; leave the module to the process exit.
            return;
        }
        let result = (|| {
            // A kernel launched from this module may still run: cuModuleUnload
            // is not documented to wait for it.
            self.nv.sync_context()?;
            // Attached, the owner (PyTorch) may have finalized NVSHMEM first.
            if self.nvshmem.is_some()
                && self.nv.check_active("Module").is_ok()
                && self.nv.lib.is_initialized()
            {
                // SAFETY: registered at load; finalized once, here.
                let status = unsafe { self.nv.lib.raw().nvshmemx_cumodule_finalize(self.module) };
                if status != 0 {
                    return Err(Error::NvshmemCall {
                        call: "nvshmemx_cumodule_finalize",
                        status,
                    });
                }
            }
            // SAFETY: loaded at load; unloaded once, here; no kernel of it is
            // alive (kernels hold this module).
            unsafe { result::module::unload(self.module) }.map_err(Error::driver("cuModuleUnload"))
        })();
        record_drop_error(result);
    }
}
