//! Builds the kernel crate for the GPU: PTX, a cubin, a manifest, a C
//! header and typed Rust bindings in `$OUT_DIR/ptx/nvshmem-<version>/<arch>/`
//! (the bindings also in `$OUT_DIR/nvshmem-kernels/`, where
//! `nvshmem_host::include_kernels!(my_kernels)` finds them), and fetches
//! `cuda.h` for the header's launch helpers (`out.cuda_include`, for a C++
//! host). The arch and NVSHMEM version come from NVSHMEM_RS_ARCH /
//! NVSHMEM_RS_NVSHMEM_VERSION (defaults: sm_90, and the NVSHMEM `python3` can
//! import, else 3.4.5), or `.arch(..)` / `.nvshmem_version(..)` here.
fn main() {
    nvshmem_builder::Builder::new("kernels").build_from_build_script();
}
