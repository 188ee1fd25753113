//! The device link of separate compilation through nvJitLink, for CUDA 12:
//! its pip wheel of `ptxas` (`nvidia-cuda-nvcc-cu12`) has no `nvlink`, and
//! `nvidia-nvjitlink-cu12` has the library that does the same link.

use crate::error::{Error, Result};
use std::ffi::{CString, c_char, c_int, c_void};
use std::path::Path;

/// `nvJitLinkHandle`.
type Handle = *mut c_void;
/// `NVJITLINK_INPUT_CUBIN`: relocatable objects from `ptxas -c` are cubins.
const INPUT_CUBIN: c_int = 1;

/// Links `objects` (from `ptxas -c`) for `arch` into `cubin` with the
/// `libnvJitLink.so.12` at `library`; returns the info log (`-verbose`),
/// which has `nvlink -v`'s per-function figures.
pub(crate) fn link(library: &Path, arch: &str, objects: &[&Path], cubin: &Path) -> Result<String> {
    let failed = |what: String| Error::ToolFailed {
        tool: "nvJitLink".into(),
        command: format!(
            "nvJitLink ({}) -arch={arch} {}",
            library.display(),
            objects
                .iter()
                .map(|o| o.display().to_string())
                .collect::<Vec<_>>()
                .join(" ")
        ),
        status: "failed".into(),
        stderr: what,
    };
    // SAFETY: loading the library runs its initializers; libnvJitLink's are
    // plain C library set-up.
    let lib = unsafe { libloading::Library::new(library) }
        .map_err(|e| failed(format!("cannot load {}: {e}", library.display())))?;
    macro_rules! sym {
        ($name:literal: $ty:ty) => {
            // SAFETY: the type is the one nvJitLink.h (12.x) declares.
            *unsafe { lib.get::<$ty>($name.as_bytes()) }
                .map_err(|e| failed(format!("{} lacks {}: {e}", library.display(), $name)))?
        };
    }
    let create = sym!("nvJitLinkCreate": unsafe extern "C" fn(*mut Handle, u32, *const *const c_char) -> c_int);
    let add_file =
        sym!("nvJitLinkAddFile": unsafe extern "C" fn(Handle, c_int, *const c_char) -> c_int);
    let complete = sym!("nvJitLinkComplete": unsafe extern "C" fn(Handle) -> c_int);
    let cubin_size =
        sym!("nvJitLinkGetLinkedCubinSize": unsafe extern "C" fn(Handle, *mut usize) -> c_int);
    let get_cubin =
        sym!("nvJitLinkGetLinkedCubin": unsafe extern "C" fn(Handle, *mut c_void) -> c_int);
    let info_size =
        sym!("nvJitLinkGetInfoLogSize": unsafe extern "C" fn(Handle, *mut usize) -> c_int);
    let info_log = sym!("nvJitLinkGetInfoLog": unsafe extern "C" fn(Handle, *mut c_char) -> c_int);
    let error_size =
        sym!("nvJitLinkGetErrorLogSize": unsafe extern "C" fn(Handle, *mut usize) -> c_int);
    let error_log =
        sym!("nvJitLinkGetErrorLog": unsafe extern "C" fn(Handle, *mut c_char) -> c_int);
    let destroy = sym!("nvJitLinkDestroy": unsafe extern "C" fn(*mut Handle) -> c_int);

    let options: Vec<CString> = [format!("-arch={arch}"), "-verbose".into()]
        .into_iter()
        .map(|o| CString::new(o).expect("no NUL"))
        .collect();
    let option_ptrs: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
    let mut handle: Handle = std::ptr::null_mut();
    // SAFETY: valid out-pointer and option array for the call's duration.
    let rc = unsafe { create(&mut handle, option_ptrs.len() as u32, option_ptrs.as_ptr()) };
    if rc != 0 {
        return Err(failed(format!("nvJitLinkCreate returned {rc}")));
    }
    let log = |size: unsafe extern "C" fn(Handle, *mut usize) -> c_int,
               get: unsafe extern "C" fn(Handle, *mut c_char) -> c_int| {
        let mut n = 0usize;
        // SAFETY: `handle` is live; the buffer has the size nvJitLink reported.
        unsafe {
            if size(handle, &mut n) != 0 || n == 0 {
                return String::new();
            }
            let mut buf = vec![0u8; n];
            if get(handle, buf.as_mut_ptr().cast()) != 0 {
                return String::new();
            }
            String::from_utf8_lossy(&buf)
                .trim_end_matches('\0')
                .to_string()
        }
    };
    let result = (|| {
        for o in objects {
            let path = CString::new(o.as_os_str().as_encoded_bytes())
                .map_err(|_| failed(format!("{} has a NUL byte", o.display())))?;
            // SAFETY: live handle, NUL-terminated path.
            let rc = unsafe { add_file(handle, INPUT_CUBIN, path.as_ptr()) };
            if rc != 0 {
                return Err(failed(format!(
                    "nvJitLinkAddFile({}) returned {rc}: {}",
                    o.display(),
                    log(error_size, error_log)
                )));
            }
        }
        // SAFETY: live handle.
        let rc = unsafe { complete(handle) };
        if rc != 0 {
            return Err(failed(format!(
                "nvJitLinkComplete returned {rc}: {}",
                log(error_size, error_log)
            )));
        }
        let mut n = 0usize;
        // SAFETY: live handle; the buffer has the size nvJitLink reported.
        let image = unsafe {
            if cubin_size(handle, &mut n) != 0 {
                return Err(failed("nvJitLinkGetLinkedCubinSize failed".into()));
            }
            let mut buf = vec![0u8; n];
            if get_cubin(handle, buf.as_mut_ptr().cast()) != 0 {
                return Err(failed("nvJitLinkGetLinkedCubin failed".into()));
            }
            buf
        };
        std::fs::write(cubin, image).map_err(crate::error::io_err(cubin))?;
        Ok(log(info_size, info_log))
    })();
    // SAFETY: the handle came from nvJitLinkCreate and is destroyed once.
    unsafe { destroy(&mut handle) };
    result
}
