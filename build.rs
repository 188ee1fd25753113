//! Builds the project's own kernel crates to `ptx/` with `nvshmem-builder`.
//!
//! Settings (environment): `NVSHMEM_RS_ARCH` (default `sm_90`),
//! `NVSHMEM_RS_NVSHMEM_VERSION` (default: the builder's, 3.4.5), `NVSHMEM_HOME`.
//! The host programs find the outputs through `NVSHMEM_RS_PTX_DIR`, set here
//! at compile time and overridable at run time.

/// Every kernel crate of the project, relative to this folder.
const KERNEL_CRATES: &[&str] = &[];

fn main() {
    println!("cargo:rerun-if-env-changed=NVSHMEM_RS_ARCH");
    println!("cargo:rerun-if-env-changed=NVSHMEM_RS_NVSHMEM_VERSION");
    let root = std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let arch = std::env::var("NVSHMEM_RS_ARCH").unwrap_or_else(|_| "sm_90".into());
    let version = std::env::var("NVSHMEM_RS_NVSHMEM_VERSION").ok().map(|v| match v.parse() {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: NVSHMEM_RS_NVSHMEM_VERSION: {e}");
            std::process::exit(1);
        }
    });
    let mut ptx_dir = None;
    for krate in KERNEL_CRATES {
        let mut b = nvshmem_builder::Builder::new(root.join(krate))
            .arch(&arch)
            .out_dir(root.join("ptx"))
            .target_dir(root.join("target/nvshmem-kernels"));
        if let Some(v) = version {
            b = b.nvshmem_version(v);
        }
        let out = b.build_from_build_script();
        ptx_dir = out.ptx.parent().map(std::path::Path::to_path_buf);
    }
    if let Some(dir) = ptx_dir {
        println!("cargo:rustc-env=NVSHMEM_RS_PTX_DIR={}", dir.display());
    }
}
