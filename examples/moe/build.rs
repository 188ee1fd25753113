//! Builds the MoE kernel crate (`kernel/`) for the GPU into
//! `$OUT_DIR/ptx/nvshmem-<version>/<arch>/` and tells the crate where
//! (`MOE_PTX_DIR`, overridable at run time with `NVSHMEM_RS_PTX_DIR`).
fn main() {
    let out = nvshmem_builder::Builder::new("kernel").build_from_build_script();
    let dir = out.ptx.parent().expect("the output folder");
    println!("cargo:rustc-env=MOE_PTX_DIR={}", dir.display());
}
