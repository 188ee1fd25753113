//! The runtime's behaviour on a machine without a GPU (CI's): every error
//! path that needs no GPU, and unique-id generation, which needs none.
//!
//! Tests that change the environment run in a child process (this binary,
//! started again for one ignored test), because the environment and the
//! loaded NVSHMEM library are process-wide.

use nvshmem_host::{Error, Nvshmem, UniqueId};
use std::path::PathBuf;
use std::process::Command;

/// NVSHMEM `version`'s folder, or a skip ([`nvshmem_builder::testing::nvshmem`]).
fn nvshmem_root(version: &str) -> Option<PathBuf> {
    nvshmem_builder::testing::nvshmem(version).map(|nv| nv.root)
}

fn has_driver() -> bool {
    // SAFETY: only tries to dlopen the driver.
    unsafe { nvshmem_host::cudarc::driver::sys::is_culib_present() }
}

/// Runs the ignored test `name` of this binary in a child with `env` set;
/// returns its combined output, failing if the child failed.
fn run_child(name: &str, env: &[(&str, &str)]) -> String {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            name,
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "child {name} failed:\n{text}");
    assert!(
        text.contains("1 passed"),
        "child {name} ran no test:\n{text}"
    );
    text
}

#[test]
fn init_without_a_driver_is_no_cuda_driver_in_one_line() {
    if has_driver() {
        eprintln!("SKIPPED: this machine has a CUDA driver");
        return;
    }
    let err = Nvshmem::init().unwrap_err();
    assert!(matches!(err, Error::NoCudaDriver), "{err:?}");
    let msg = err.to_string();
    assert!(
        !msg.contains('\n') && msg.contains("no CUDA driver"),
        "{msg}"
    );
    // The failed init leaves nothing behind: the next one fails the same way.
    assert!(matches!(
        Nvshmem::options().gpu(0).init(),
        Err(Error::NoCudaDriver)
    ));
}

#[test]
fn unique_ids_are_generated_without_a_gpu() {
    if nvshmem_root("3.4.5").is_none() {
        return;
    }
    let a = UniqueId::generate().unwrap();
    let b = UniqueId::generate().unwrap();
    assert_ne!(a, b, "each id names a new bootstrap root");
    assert_ne!(a.as_bytes(), &[0u8; 128]);
    let hex = a.to_hex();
    assert_eq!(hex.len(), 256);
    assert_eq!(UniqueId::from_hex(&hex).unwrap(), a);
}

#[test]
fn nvshmem_home_pointing_nowhere_says_how_to_install() {
    let out = run_child(
        "child_nvshmem_home_nowhere",
        &[("NVSHMEM_HOME", "/nonexistent/nvshmem")],
    );
    assert!(out.contains("child checks passed"), "{out}");
}

#[test]
#[ignore = "run by nvshmem_home_pointing_nowhere_says_how_to_install in a child process"]
fn child_nvshmem_home_nowhere() {
    for err in [
        UniqueId::generate().unwrap_err(),
        Nvshmem::init().unwrap_err(),
    ] {
        assert!(matches!(err, Error::NvshmemNotFound { .. }), "{err:?}");
        let msg = err.to_string();
        for needle in [
            "/nonexistent/nvshmem",
            "NVSHMEM_HOME",
            "pip install nvidia-nvshmem-cu13",
        ] {
            assert!(msg.contains(needle), "{needle:?} missing from: {msg}");
        }
    }
    println!("child checks passed");
}

#[test]
fn nvshmem_3_8_is_loaded_with_its_own_bindings() {
    let Some(home) = nvshmem_root("3.8.0") else {
        return;
    };
    let out = run_child(
        "child_nvshmem_3_8",
        &[("NVSHMEM_HOME", home.to_str().unwrap())],
    );
    assert!(out.contains("child checks passed"), "{out}");
}

#[test]
#[ignore = "run by nvshmem_3_8_is_loaded_with_its_own_bindings in a child process"]
fn child_nvshmem_3_8() {
    use nvshmem_host::library::{HostLibrary, LibraryRequest, LibrarySource};
    let lib = HostLibrary::load(&LibraryRequest::default()).unwrap();
    assert_eq!(lib.version().to_string(), "3.8.0");
    assert_eq!(lib.bindings_version().to_string(), "3.8.0");
    assert_eq!(lib.source(), &LibrarySource::NvshmemHome);
    UniqueId::generate().unwrap();
    // One NVSHMEM per process: asking for another version now is an error.
    let err = HostLibrary::load(&LibraryRequest::default().version("3.4.5".parse().unwrap()))
        .unwrap_err();
    assert!(matches!(err, Error::VersionMismatch { .. }), "{err:?}");
    assert!(
        err.to_string().contains("3.4.5") && err.to_string().contains("3.8.0"),
        "{err}"
    );
    println!("child checks passed");
}

#[test]
fn a_builder_version_request_selects_the_installation() {
    if nvshmem_root("3.8.0").is_none() {
        return;
    }
    // Without NVSHMEM_HOME: discovery finds 3.8.0 (python3's, or the per-user cache).
    let out = run_child("child_version_request", &[("NVSHMEM_HOME", "")]);
    assert!(out.contains("child checks passed"), "{out}");
}

#[test]
#[ignore = "run by a_builder_version_request_selects_the_installation in a child process"]
fn child_version_request() {
    let err = Nvshmem::options()
        .nvshmem_version("3.8.0".parse().unwrap())
        .init()
        .unwrap_err();
    // The 3.8.0 library loads (as discovered), then the missing driver stops init.
    if !has_driver() {
        assert!(matches!(err, Error::NoCudaDriver), "{err:?}");
    }
    let lib = nvshmem_host::library::HostLibrary::load(&Default::default()).unwrap();
    assert_eq!(lib.version().to_string(), "3.8.0");
    println!("child checks passed");
}

#[test]
fn the_launcher_environment_is_validated_before_anything_loads() {
    let out = run_child(
        "child_bad_launcher_env",
        &[
            ("NVSHMEM_RUN_UNIQUEID", "not-hex"),
            ("NVSHMEM_RUN_RANK", "0"),
            ("NVSHMEM_RUN_NRANKS", "2"),
        ],
    );
    assert!(out.contains("child checks passed"), "{out}");
}

#[test]
#[ignore = "run by the_launcher_environment_is_validated_before_anything_loads in a child process"]
fn child_bad_launcher_env() {
    let err = Nvshmem::init().unwrap_err();
    assert!(
        matches!(&err, Error::InvalidEnv { var, .. } if var == "NVSHMEM_RUN_UNIQUEID"),
        "{err:?}"
    );
    println!("child checks passed");
}
