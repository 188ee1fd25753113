//! The library's own queries (version, name), `global_exit`, and NVSHMEM
//! 3.8's shared-memory lease for TMA transfers (`ask`/`give`/`release_smem`)
//! and RMA regions.

#[cfg(any(doc, feature = "nvshmem-3-8"))]
use core::ffi::c_void;
use core::ffi::{c_char, c_int};

extern_fn! {
    "`void (int *major, int *minor)`: the OpenSHMEM spec version NVSHMEM implements. \
     Typed: [`crate::info_get_version`].";
    fn nvshmem_info_get_version(major: *mut c_int, minor: *mut c_int)
}
extern_fn! {
    "`void (char *name)`: writes the vendor string, NUL-terminated, into `name` \
     (`NVSHMEM_MAX_NAME_LEN` = 256 bytes). Typed: [`crate::info_get_name`].";
    fn nvshmem_info_get_name(name: *mut c_char)
}
extern_fn! {
    "`void (int *major, int *minor, int *patch)`: NVSHMEM's own version (of the bitcode). \
     Typed: [`crate::vendor_version`].";
    fn nvshmemx_vendor_get_version_info(major: *mut c_int, minor: *mut c_int, patch: *mut c_int)
}
extern_fn! {
    "`void (int status)`: asks NVSHMEM's proxy to end every PE's process with `status`; does \
     not return. Typed: [`crate::global_exit`].";
    fn nvshmem_global_exit(status: c_int)
}

/// `nvshmemx_region_handle_t` (NVSHMEM 3.8+).
#[cfg(any(doc, feature = "nvshmem-3-8"))]
#[allow(non_camel_case_types)]
pub type nvshmemx_region_handle_t = u64;

/// `nvshmemx_region_attrs_t` (NVSHMEM 3.8+): `{ uint32_t hints; char reserved[60]; }`.
#[cfg(any(doc, feature = "nvshmem-3-8"))]
#[allow(non_camel_case_types)]
pub type nvshmemx_region_attrs_t = crate::RegionAttrs;

#[cfg(any(doc, feature = "nvshmem-3-8"))]
extern_fn! {
    "`int (nvshmemx_smem_amount_t flag)` (NVSHMEM 3.8+): the shared memory (bytes) NVSHMEM wants for \
     TMA transfers. Typed: [`crate::ask_smem`].";
    fn nvshmemx_ask_smem(flag: c_int) -> c_int
}
#[cfg(any(doc, feature = "nvshmem-3-8"))]
extern_fn! {
    "`void (void *smem, size_t size)` (NVSHMEM 3.8+): lends this block's shared memory to NVSHMEM's \
     TMA path; every thread of the block calls it. Typed: [`crate::give_smem`].";
    fn nvshmemx_give_smem(smem: *mut c_void, size: usize)
}
#[cfg(any(doc, feature = "nvshmem-3-8"))]
extern_fn! {
    "`void (void)` (NVSHMEM 3.8+): takes the shared memory back; every block that called \
     `give_smem` calls it before it exits. Typed: [`crate::release_smem`].";
    fn nvshmemx_release_smem()
}
#[cfg(any(doc, feature = "nvshmem-3-8"))]
extern_fn! {
    "`int (uint32_t hints, int *active)` (NVSHMEM 3.8+). Typed: [`crate::region_is_active`].";
    fn nvshmemx_region_is_active(hints: u32, active: *mut c_int) -> c_int
}
#[cfg(any(doc, feature = "nvshmem-3-8"))]
extern_fn! {
    "`int (nvshmemx_region_handle_t *handle, const nvshmemx_region_attrs_t *attrs)` (NVSHMEM 3.8+), \
     block scope. Typed: [`crate::region_start_block`].";
    fn nvshmemx_region_start_block(
        handle: *mut nvshmemx_region_handle_t, attrs: *const nvshmemx_region_attrs_t) -> c_int
}
#[cfg(any(doc, feature = "nvshmem-3-8"))]
extern_fn! {
    "`int (nvshmemx_region_handle_t handle)` (NVSHMEM 3.8+), block scope. \
     Typed: [`crate::region_stop_block`].";
    fn nvshmemx_region_stop_block(handle: nvshmemx_region_handle_t) -> c_int
}
