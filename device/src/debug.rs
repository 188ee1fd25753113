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

#[cfg(feature = "debug-checks")]
#[cold]
#[inline(never)]
fn pe_out_of_range(pe: u32, n_pes: u32, at: &core::panic::Location<'_>) -> ! {
    #[repr(C)]
    struct Args {
        pe: u32,
        n_pes: u32,
        file_len: i32,
        file: *const u8,
        line: u32,
        column: u32,
    }
    let args = Args {
        pe,
        n_pes,
        file_len: at.file().len() as i32,
        file: at.file().as_ptr(),
        line: at.line(),
        column: at.column(),
    };
    // SAFETY: the format consumes exactly the fields of `Args`, in order, each
    // aligned to its size as CUDA's printf expects.
    unsafe {
        crate::panic::vprintf(
            c"nvshmem-device: PE %u is out of range (n_pes() = %u) at %.*s:%u:%u\n"
                .as_ptr()
                .cast(),
            (&raw const args).cast(),
        );
        crate::panic::trap()
    }
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
        file_len: i32,
        file: *const u8,
        line: u32,
        column: u32,
    }
    let args = Args {
        what: what.as_ptr().cast(),
        len: len as u64,
        nelems: nelems as u64,
        file_len: at.file().len() as i32,
        file: at.file().as_ptr(),
        line: at.line(),
        column: at.column(),
    };
    // SAFETY: as in `pe_out_of_range`.
    unsafe {
        crate::panic::vprintf(
            c"nvshmem-device: %s holds %llu elements, fewer than nelems = %llu, at %.*s:%u:%u\n"
                .as_ptr()
                .cast(),
            (&raw const args).cast(),
        );
        crate::panic::trap()
    }
}
