//! Builds the kernel crate for the GPU: PTX, a cubin, a manifest and a C
//! header in `$OUT_DIR/ptx/nvshmem-<version>/<arch>/`. The arch and NVSHMEM
//! version come from NVSHMEM_RS_ARCH / NVSHMEM_RS_NVSHMEM_VERSION (defaults
//! sm_90 and 3.4.5), or `.arch(..)` / `.nvshmem_version(..)` here.
fn main() {
    let out = nvshmem_builder::Builder::new("kernels").build_from_build_script();
    let dir = out.ptx.parent().expect("the output folder");
    println!("cargo:rustc-env=KERNELS_DIR={}", dir.display());
}
