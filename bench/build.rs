//! Builds the benchmark's Rust kernels (and the all-reduce example's, which it
//! times too) into `$OUT_DIR/ptx`; the benchmark finds them through
//! `NVSHMEM_RS_PTX_DIR`, set here at compile time and overridable at run time.
//! Settings: `NVSHMEM_RS_ARCH` (default `sm_90`), `NVSHMEM_HOME`.

use nvshmem_builder::{Builder, build_all_from_build_script};
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=NVSHMEM_RS_ARCH");
    let here = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo")).join("ptx");
    let arch = std::env::var("NVSHMEM_RS_ARCH").unwrap_or_else(|_| "sm_90".into());
    let builders = ["kernel", "../examples/allreduce/kernel"]
        .iter()
        .map(|k| Builder::new(here.join(k)).arch(&arch).out_dir(&out))
        .collect();
    let outputs = build_all_from_build_script(builders);
    if let Some(dir) = outputs[0].ptx.parent() {
        println!("cargo:rustc-env=NVSHMEM_RS_PTX_DIR={}", dir.display());
    }
}
