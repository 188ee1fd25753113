//! What the builder brings and checks before it builds: the toolchain, the
//! wheel cache, the environment. Fast: every case fails (or finishes) before
//! compiling anything, except where said.

mod common;

use common::builder;
use nvshmem_builder::toolchain::{PINNED_TOOLCHAIN, Toolchain, install_command};
use nvshmem_builder::{ENV_VARS, Error, wheels};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A missing toolchain, with installing forbidden: the exact command.
#[test]
fn a_missing_toolchain_names_the_install_command() {
    let e = builder("ok")
        .toolchain("nightly-1999-01-01")
        .offline(true)
        .build()
        .unwrap_err();
    assert!(matches!(e, Error::ToolchainMissing { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains(
            "Fix: run `rustup toolchain install nightly-1999-01-01 --profile minimal -c rust-src -c llvm-tools`"
        ),
        "{msg}"
    );
    assert!(msg.contains("NVSHMEM_RS_OFFLINE=1"), "{msg}");
    assert_eq!(
        install_command(PINNED_TOOLCHAIN),
        format!(
            "rustup toolchain install {PINNED_TOOLCHAIN} --profile minimal -c rust-src -c llvm-tools"
        )
    );
}

// ---------------------------------------------------------------------------
// The environment, seen by a build in a child process (this test binary run
// again on `child_build` alone, with the environment changed).

const CHILD: &str = "NVSHMEM_RS_TEST_CHILD";

/// Not a test of its own: the body of [`build_in_child`]'s child process.
#[test]
fn child_build() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    match builder("ok").build() {
        Ok(out) => println!("CHILD-OK {}", out.ptx.display()),
        Err(e) => println!("CHILD-ERR {e}"),
    }
}

/// Builds the `ok` fixture in a child process with `vars` set (`Some`) or
/// removed (`None`); returns what it printed: `CHILD-OK <ptx>` or `CHILD-ERR <error>`.
fn build_in_child(vars: &[(&str, Option<&str>)]) -> String {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "child_build", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1");
    for (k, v) in vars {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let Some(i) = stdout.find("CHILD-") else {
        panic!(
            "the child printed no result:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    stdout[i..].to_string()
}

fn empty_dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The pinned toolchain's sysroot, for children that must not need rustup.
fn pinned_sysroot() -> Option<PathBuf> {
    match Toolchain::pinned() {
        Ok(tc) => Some(tc.sysroot),
        Err(e) => {
            common::skip(&format!("the pinned toolchain is missing: {e}"));
            None
        }
    }
}

#[test]
fn the_toolchain_name_comes_from_the_environment() {
    let out = build_in_child(&[
        ("NVSHMEM_RS_TOOLCHAIN", Some("nightly-1999-01-01")),
        ("NVSHMEM_RS_OFFLINE", Some("1")),
    ]);
    assert!(
        out.contains("run `rustup toolchain install nightly-1999-01-01 --profile minimal -c rust-src -c llvm-tools`"),
        "{out}"
    );
}

#[test]
fn without_rustup_the_error_has_the_command() {
    let home = empty_dir("no-rustup-home");
    let home = home.to_str().unwrap();
    let out = build_in_child(&[
        ("NVSHMEM_RS_TOOLCHAIN", Some("nightly-1999-01-01")),
        ("PATH", Some("/nonexistent")),
        ("HOME", Some(home)),
        ("CARGO_HOME", Some(home)),
    ]);
    assert!(out.contains("rustup was not found"), "{out}");
    assert!(
        out.contains("rustup toolchain install nightly-1999-01-01 --profile minimal"),
        "{out}"
    );
}

#[test]
fn arch_and_version_come_from_the_environment() {
    let out = build_in_child(&[("NVSHMEM_RS_ARCH", Some("sm_999"))]);
    assert!(
        out.contains("NVSHMEM_RS_ARCH=sm_999 is not valid") && out.contains("sm_80, sm_86"),
        "{out}"
    );
    let out = build_in_child(&[("NVSHMEM_RS_NVSHMEM_VERSION", Some("9.9.9"))]);
    assert!(
        out.contains("NVSHMEM 9.9.9 is not supported") && lists_every_supported_version(&out),
        "{out}"
    );
    let out = build_in_child(&[("NVSHMEM_RS_DEVICE_LINK", Some("fast"))]);
    assert!(
        out.contains("NVSHMEM_RS_DEVICE_LINK=fast is not valid"),
        "{out}"
    );
    let out = build_in_child(&[("NVSHMEM_RS_OFFLINE", Some("maybe"))]);
    assert!(
        out.contains("NVSHMEM_RS_OFFLINE=maybe is not valid"),
        "{out}"
    );
}

/// Offline, with nothing installed: NVSHMEM's error says where it looked and
/// what to run; with NVSHMEM but no ptxas, ptxas's does. Neither downloads.
#[test]
fn offline_without_nvshmem_or_ptxas_says_what_to_run() {
    let Some(sysroot) = pinned_sysroot() else {
        return;
    };
    let cache = empty_dir("offline-cache");
    let base = |extra: &[(&'static str, Option<String>)]| {
        let mut vars: Vec<(&str, Option<String>)> = vec![
            ("NVSHMEM_RS_OFFLINE", Some("1".into())),
            ("NVSHMEM_RS_CACHE", Some(cache.display().to_string())),
            ("NVSHMEM_RS_TOOLCHAIN", Some(sysroot.display().to_string())),
            // No python3, no ptxas: nothing but the (empty) cache to find them in.
            ("PATH", Some("/nonexistent".into())),
            ("VIRTUAL_ENV", None),
            ("NVSHMEM_HOME", None),
            ("PTXAS", None),
            ("CUDA_HOME", None),
        ];
        vars.extend(extra.iter().cloned());
        let vars: Vec<(&str, Option<&str>)> =
            vars.iter().map(|(k, v)| (*k, v.as_deref())).collect();
        build_in_child(&vars)
    };
    let out = base(&[]);
    assert!(out.contains("NVSHMEM was not found"), "{out}");
    assert!(out.contains("NVSHMEM_RS_OFFLINE=1"), "{out}");
    assert!(
        out.contains("nvidia-nvshmem-cu13==3.4.5") && lists_every_supported_version(&out),
        "{out}"
    );
    assert!(!out.contains("this repository"), "{out}");

    let nvshmem = nvshmem_builder::install::Installation::find(
        &nvshmem_builder::install::Query::default().version("3.4.5".parse().unwrap()),
    );
    let Ok(nv) = nvshmem else {
        return common::skip("NVSHMEM 3.4.5 is not installed");
    };
    let out = base(&[("NVSHMEM_HOME", Some(nv.root.display().to_string()))]);
    assert!(out.contains("not found: ptxas (CUDA 13)"), "{out}");
    assert!(
        out.contains("python3 -m pip install 'nvidia-cuda-nvcc==13.0.*'"),
        "{out}"
    );
    assert!(out.contains("sm_90"), "{out}");
    assert!(
        std::fs::read_dir(&cache)
            .unwrap()
            .flatten()
            .all(|e| e.file_name() == ".locks")
    );

    let out = base(&[
        ("NVSHMEM_HOME", Some(nv.root.display().to_string())),
        ("PTXAS", Some("/nonexistent/ptxas".into())),
    ]);
    assert!(
        out.contains("/nonexistent/ptxas") && out.contains("PTXAS names no file"),
        "{out}"
    );
}

/// Every environment variable the builder's code reads is in `ENV_VARS`
/// (which a build script watches), except `PATH` (on purpose: see its docs)
/// and `OUT_DIR` (cargo's own, for the build script).
#[test]
fn env_vars_lists_every_variable_read() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("../types/src/install.rs")];
    for e in std::fs::read_dir(root.join("src")).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "rs") {
            files.push(e.path());
        }
    }
    let mut read = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for reader in [
            "var(\"",
            "var_os(\"",
            "flag(\"",
            "set(\"",
            " env(\"",
            "find_cuda_tool(\"ptxas\", \"",
            "find_cuda_tool(\"nvlink\", \"",
        ] {
            for (i, _) in text.match_indices(reader) {
                let rest = &text[i + reader.len()..];
                let name: String = rest.chars().take_while(|c| *c != '"').collect();
                if !name.is_empty() && name.chars().all(|c| c.is_ascii_uppercase() || c == '_') {
                    read.push(name);
                }
            }
        }
    }
    read.sort();
    read.dedup();
    assert!(read.len() > 10, "{read:?}");
    for name in &read {
        assert!(
            // Cargo's own variables of a build script are not settings.
            ENV_VARS.iter().any(|(n, _)| n == name)
                || ["PATH", "OUT_DIR", "CARGO_MANIFEST_DIR", "CARGO_PKG_NAME"]
                    .contains(&name.as_str()),
            "{name} is read but not in ENV_VARS"
        );
    }
}

// ---------------------------------------------------------------------------
// The wheel cache.

/// A wheel-shaped zip made here: a library file and an executable in `bin/`.
fn fake_wheel(dir: &Path) -> PathBuf {
    let wheel = dir.join("nvidia_fake-1.0-py3-none-manylinux2014_x86_64.whl");
    let script = format!(
        "import zipfile\nwith zipfile.ZipFile({:?}, 'w') as z:\n    \
         z.writestr('nvidia/fake/lib/libfake.so', 'x' * 4096)\n    \
         z.writestr('nvidia/fake/bin/faketool', '#!/bin/sh\\necho fake\\n')\n    \
         z.writestr('nvidia_fake-1.0.dist-info/METADATA', 'Name: nvidia-fake\\n')\n",
        wheel.display().to_string()
    );
    let ok = Command::new("python3")
        .args(["-c", &script])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "python3 could not write the fake wheel");
    wheel
}

/// Four threads fill the same cache entry at once: each gets the complete
/// folder, it is unpacked once, executables run, and nothing half-made is left.
#[test]
fn the_cache_is_filled_atomically() {
    if Command::new("python3").arg("-V").output().is_err() {
        return common::skip("no python3");
    }
    let dir = empty_dir("wheel-cache");
    let cache = dir.join("cache");
    let wheel = fake_wheel(&dir);
    let req = "nvidia-fake==1.0";
    let results: Vec<PathBuf> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| s.spawn(|| wheels::unpack_into_cache(&cache, req, &wheel).unwrap()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let want = wheels::wheel_dir(&cache, req);
    assert_eq!(want, cache.join("nvidia-fake-1.0"));
    assert!(results.iter().all(|r| *r == want), "{results:?}");
    assert_eq!(
        std::fs::metadata(want.join("nvidia/fake/lib/libfake.so"))
            .unwrap()
            .len(),
        4096
    );
    let tool = Command::new(want.join("nvidia/fake/bin/faketool"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&tool.stdout), "fake\n");
    let left: Vec<String> = std::fs::read_dir(&cache)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != ".locks")
        .collect();
    assert_eq!(left, ["nvidia-fake-1.0"], "something half-made is left");
}

/// The error's list of supported versions names every one the builder knows.
fn lists_every_supported_version(out: &str) -> bool {
    nvshmem_builder::SUPPORTED_VERSIONS
        .iter()
        .all(|v| out.contains(&v.version.to_string()))
}
