//! This PE, the job's size, and direct addresses of peers' symmetric memory.

pub use nvshmem_types::{Pe, SymPtr};

/// This PE's number (`nvshmem_my_pe`).
///
/// ```no_run
/// let me = nvshmem_device::my_pe();
/// ```
#[inline(always)]
pub fn my_pe() -> Pe {
    // SAFETY: reads NVSHMEM's device state; no arguments.
    Pe::new(unsafe { crate::ffi::nvshmem_my_pe() } as u32)
}

/// The number of PEs in the job (`nvshmem_n_pes`).
///
/// ```no_run
/// let next = nvshmem_device::my_pe().ring_next(nvshmem_device::n_pes());
/// ```
#[inline(always)]
pub fn n_pes() -> u32 {
    // SAFETY: reads NVSHMEM's device state; no arguments.
    unsafe { crate::ffi::nvshmem_n_pes() as u32 }
}

/// A local pointer through which this thread can load and store `dest` on PE
/// `pe` directly (`nvshmem_ptr`): `Some` when `pe` is reachable over NVLink
/// or PCIe peer access (always for this PE), `None` otherwise, and `None`
/// for a PE that is not in the job (`pe >= n_pes()`).
///
/// Computing the address is safe; accessing through it is as `unsafe` as any
/// raw pointer, and races with other PEs are the caller's to avoid.
///
/// ```no_run
/// use nvshmem_device::{Pe, SymPtr, ptr};
/// unsafe fn bump(counter: SymPtr<u32>, peer: Pe) {
///     if let Some(p) = ptr(counter, peer) {
///         unsafe { *p.as_ptr() += 1 }; // a plain store over NVLink
///     }
/// }
/// ```
#[inline(always)]
pub fn ptr<T>(dest: SymPtr<T>, pe: Pe) -> Option<core::ptr::NonNull<T>> {
    // NVSHMEM reads its peer table at index `pe` unchecked: a PE out of
    // range would read past it. The check is one compare against a value in
    // NVSHMEM's device state.
    if pe.index() >= n_pes() {
        return None;
    }
    // SAFETY: `pe` is a PE of the job.
    unsafe { ptr_in_range(dest, pe) }
}

/// [`ptr`] without the range check, for the typed RMA functions, whose
/// callers promise `pe < n_pes()` (checked with `debug-checks`).
///
/// # Safety
/// `pe < n_pes()`.
#[inline(always)]
#[cfg_attr(feature = "nvshmem-path", allow(dead_code))]
pub(crate) unsafe fn ptr_in_range<T>(dest: SymPtr<T>, pe: Pe) -> Option<core::ptr::NonNull<T>> {
    #[cfg(target_arch = "nvptx64")]
    {
        // SAFETY: any `pe` on the GPU.
        unsafe { peer_lookup(dest, pe) }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        // Host builds (docs, tests) only type-check this.
        // SAFETY: `nvshmem_ptr` only translates the address (it dereferences
        // nothing of `dest`); `pe` indexes its peer table within bounds.
        let p = unsafe {
            crate::ffi::nvshmem_ptr(dest.as_ptr() as *const core::ffi::c_void, pe.to_c())
        };
        core::ptr::NonNull::new(p.cast())
    }
}

/// `nvshmem_ptr`'s translation with its state loads unconditional (the
/// table entry's behind the PE check), in one PTX block that LLVM may hoist
/// out of a caller's loop.
///
/// `nvshmem_ptr` loads the peer-table entry only inside its heap-range test,
/// so LLVM reloaded it on every put/get of a loop, where NVSHMEM's own
/// put/get load it unconditionally and have it hoisted. With this lookup (and
/// `copy_small`'s ordered tests) the benchmark's geometric mean of Rust/C++
/// time went from 0.895 to 0.857, 8-byte put/get from 0.914 to 0.794; the
/// lookup's own share was 0.885 to 0.857 and 0.850 to 0.794 (issue 24 run 9,
/// BENCHMARKS.md).
///
/// It reads `nvshmemi_device_state_d` (constant memory) by offset: the PE
/// count at +8, heap base at +40, heap size at +48, the P2P peer-base table
/// at +56: the fields `nvshmem_n_pes` and `nvshmem_ptr` read, and the only
/// ones, in every supported release (`device/tests/abi/device_state.rs`
/// checks every bitcode file). One unsigned compare of `dest - base` against
/// the size is `nvshmem_ptr`'s two (an address below the base wraps above any
/// heap size). The table entry is loaded only for `pe < n_pes()`, inside the
/// block: the compiler may run a `pure` block where the program would not
/// (machine LICM hoists it out of a loop, past `ptr`'s own check), so it
/// must be safe for every `pe`.
///
/// # Safety
/// `pe < n_pes()`, for the host builds' `nvshmem_ptr` fallback; on the GPU
/// any `pe` is safe (one out of range gives `None`).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn peer_lookup<T>(dest: SymPtr<T>, pe: Pe) -> Option<core::ptr::NonNull<T>> {
    let (base, size, peer): (u64, u64, u64);
    // SAFETY: reads NVSHMEM's device state and, for `pe < n_pes()` only,
    // entry `pe` of its peer table, which has `n_pes()` entries. Both are
    // set by the host before a launch and never written by device code:
    // `nomem` (which lets LLVM hoist the block past a loop's stores, the
    // point of it; `readonly` would not) overstates that, but nothing the
    // compiler sees can write those bytes during a kernel, and the block's
    // outputs depend on `pe` alone, as `pure` says. The symbol is named only
    // in the text: every module that reaches this has it, as `n_pes` and the
    // typed layer's NVSHMEM fallbacks reference it.
    unsafe {
        core::arch::asm!(
            "{{",
            ".reg .b64 %nvs_t, %nvs_i;",
            ".reg .b32 %nvs_n;",
            ".reg .pred %nvs_p;",
            "ld.const.u64 {base}, [nvshmemi_device_state_d+40];",
            "ld.const.u64 {size}, [nvshmemi_device_state_d+48];",
            "ld.const.u32 %nvs_n, [nvshmemi_device_state_d+8];",
            "ld.const.u64 %nvs_t, [nvshmemi_device_state_d+56];",
            "setp.lt.u32 %nvs_p, {pe}, %nvs_n;",
            "cvt.u64.u32 %nvs_i, {pe};",
            "shl.b64 %nvs_i, %nvs_i, 3;",
            "add.s64 %nvs_t, %nvs_t, %nvs_i;",
            "cvta.to.global.u64 %nvs_t, %nvs_t;",
            "mov.u64 {peer}, 0;",
            "@%nvs_p ld.global.nc.u64 {peer}, [%nvs_t];",
            "}}",
            base = out(reg64) base,
            size = out(reg64) size,
            peer = out(reg64) peer,
            pe = in(reg32) pe.index(),
            options(pure, nomem, nostack, preserves_flags)
        )
    };
    let offset = (dest.as_ptr() as u64).wrapping_sub(base);
    if offset < size && peer != 0 {
        core::ptr::NonNull::new(peer.wrapping_add(offset) as *mut T)
    } else {
        None
    }
}

/// Whether the typed `put`/`get` family copies directly to peers that
/// [`ptr`] reaches (`true`, the default) or always takes NVSHMEM's own path
/// (`false`: the `nvshmem-path` feature).
///
/// ```
/// if nvshmem_device::DIRECT_COPY { /* loads and stores to P2P peers */ }
/// ```
pub const DIRECT_COPY: bool = !cfg!(feature = "nvshmem-path");
