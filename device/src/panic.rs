//! Panics in kernels: print where, then trap.
//!
//! A kernel crate needs one `#[panic_handler]`. Add this line to its `lib.rs`:
//!
//! ```ignore
//! nvshmem_device::panic_handler!();
//! ```
//!
//! A panic then prints `kernel panicked at src/lib.rs:12:5: <message>` through
//! CUDA's `printf` and executes `trap`, which the host sees as a launch failure
//! (`CUDA_ERROR_LAUNCH_FAILED` / illegal instruction) naming the kernel.
//! Messages with format arguments print their location only: formatting would
//! pull `core::fmt` into every kernel.

use core::panic::PanicInfo;

/// Defines the kernel crate's `#[panic_handler]` (on nvptx64 only, so the crate
/// still type-checks on the host).
///
/// ```ignore
/// #![no_std]
/// nvshmem_device::panic_handler!();
/// ```
#[macro_export]
macro_rules! panic_handler {
    () => {
        #[cfg(target_arch = "nvptx64")]
        #[panic_handler]
        fn panic(info: &::core::panic::PanicInfo<'_>) -> ! {
            $crate::panic::report_and_trap(info)
        }
    };
}

/// Prints the panic's location (and its message when it is a plain string),
/// then traps. Called by the handler that [`panic_handler!`] defines.
///
/// ```ignore
/// #[panic_handler]
/// fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
///     nvshmem_device::panic::report_and_trap(info)
/// }
/// ```
#[inline(never)]
#[cold]
pub fn report_and_trap(info: &PanicInfo<'_>) -> ! {
    #[repr(C)]
    struct Args {
        file_len: i32,
        file: *const u8,
        line: u32,
        column: u32,
        msg_len: i32,
        msg: *const u8,
    }
    let (file, line, column) = match info.location() {
        Some(l) => (l.file(), l.line(), l.column()),
        None => ("<unknown>", 0, 0),
    };
    let msg = info.message().as_str().unwrap_or("");
    let args = Args {
        file_len: file.len() as i32,
        file: file.as_ptr(),
        line,
        column,
        msg_len: msg.len() as i32,
        msg: msg.as_ptr(),
    };
    // SAFETY: the format consumes exactly the fields of `Args`, in order, with
    // CUDA printf's alignment rules (each argument aligned to its size).
    unsafe {
        vprintf(
            c"kernel panicked at %.*s:%u:%u: %.*s\n".as_ptr().cast(),
            (&raw const args).cast(),
        );
        trap()
    }
}

#[cfg(target_arch = "nvptx64")]
pub(crate) use core::arch::nvptx::{trap, vprintf};

#[cfg(not(target_arch = "nvptx64"))]
unsafe extern "C" {
    pub(crate) fn vprintf(format: *const u8, args: *const core::ffi::c_void) -> i32;
}
#[cfg(not(target_arch = "nvptx64"))]
pub(crate) unsafe fn trap() -> ! {
    unsafe extern "C" {
        fn __nvshmem_device_trap() -> !;
    }
    unsafe { __nvshmem_device_trap() }
}
