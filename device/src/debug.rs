//! The checks of the `debug-checks` feature: print what is wrong and where
//! (through CUDA's `printf`), then trap. Without the feature they compile to
//! nothing.

use crate::Pe;

/// Traps if `pe` is not a PE of the job (`pe >= n_pes()`).
#[inline(always)]
#[cfg_attr(feature = "debug-checks", track_caller)]
pub(crate) fn check_pe(pe: Pe) {
    #[cfg(feature = "debug-checks")]
    {
        let n = crate::n_pes();
        if pe.index() >= n {
            pe_out_of_range(pe.index(), n, core::panic::Location::caller())
        }
    }
    #[cfg(not(feature = "debug-checks"))]
    let _ = pe;
}

/// Traps if a caller's array (`what`) holds fewer than `nelems` elements.
#[inline(always)]
#[cfg_attr(feature = "debug-checks", track_caller)]
pub(crate) fn check_len(len: usize, nelems: usize, what: &'static core::ffi::CStr) {
    #[cfg(feature = "debug-checks")]
    if len < nelems {
        too_short(what, len, nelems, core::panic::Location::caller())
    }
    #[cfg(not(feature = "debug-checks"))]
    let _ = (len, nelems, what);
}

/// Where a check failed, as the `%.*s:%u:%u` of CUDA's printf reads it.
#[cfg(feature = "debug-checks")]
#[repr(C)]
struct At {
    file_len: i32,
    file: *const u8,
    line: u32,
    column: u32,
}

#[cfg(feature = "debug-checks")]
impl At {
    fn new(at: &core::panic::Location<'_>) -> Self {
        At {
            file_len: at.file().len() as i32,
            file: at.file().as_ptr(),
            line: at.line(),
            column: at.column(),
        }
    }
}

/// Prints `format` with `args` (a `#[repr(C)]` struct whose fields the format
/// consumes in order, each aligned to its size as CUDA's printf expects), then traps.
#[cfg(feature = "debug-checks")]
fn report<A>(format: &core::ffi::CStr, args: &A) -> ! {
    // SAFETY: the caller's `args` match `format`.
    unsafe {
        crate::panic::vprintf(format.as_ptr().cast(), (args as *const A).cast());
        crate::panic::trap()
    }
}

#[cfg(feature = "debug-checks")]
#[cold]
#[inline(never)]
fn pe_out_of_range(pe: u32, n_pes: u32, at: &core::panic::Location<'_>) -> ! {
    #[repr(C)]
    struct Args {
        pe: u32,
        n_pes: u32,
        at: At,
    }
    let args = Args {
        pe,
        n_pes,
        at: At::new(at),
    };
    report(
        c"nvshmem-device: PE %u is out of range (n_pes() = %u) at %.*s:%u:%u\n",
        &args,
    )
}

#[cfg(feature = "debug-checks")]
#[cold]
#[inline(never)]
fn too_short(
    what: &core::ffi::CStr,
    len: usize,
    nelems: usize,
    at: &core::panic::Location<'_>,
) -> ! {
    #[repr(C)]
    struct Args {
        what: *const u8,
        len: u64,
        nelems: u64,
        at: At,
    }
    let args = Args {
        what: what.as_ptr().cast(),
        len: len as u64,
        nelems: nelems as u64,
        at: At::new(at),
    };
    report(
        c"nvshmem-device: %s holds %llu elements, fewer than nelems = %llu, at %.*s:%u:%u\n",
        &args,
    )
}
