//! Builds the benchmark's own Rust kernels (`bench/kernel`) into
//! `$OUT_DIR/ptx`; the benchmark finds them through `NVSHMEM_RS_BENCH_PTX_DIR`,
//! set here at compile time and overridable at run time. The all-reduce and
//! GEMM kernels it also times are the examples' (`example_allreduce::ptx_dir`, ...).
//! Settings: as every build script of nvshmem-builder (`NVSHMEM_RS_ARCH`, ...).

use nvshmem_builder::Builder;
use std::path::PathBuf;

fn main() {
    let here = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let out = Builder::new(here.join("kernel")).build_from_build_script();
    if let Some(dir) = out.ptx.parent() {
        println!("cargo:rustc-env=NVSHMEM_RS_BENCH_PTX_DIR={}", dir.display());
    }
}
