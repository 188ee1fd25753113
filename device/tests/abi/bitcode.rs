//! LLVM function types (the builder's parser: `nvshmem_builder::ir`): what
//! NVSHMEM's bitcode defines and what the device crate declares.

use crate::{device_dir, toolchain};
use nvshmem_builder::ir::{FnSig as Sig, fn_signatures};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// The `nvshmem*` functions of a module's `keyword` (`"define "` or
/// `"declare "`) lines.
fn nvshmem_functions(ll: &str, keyword: &str) -> BTreeMap<String, Sig> {
    fn_signatures(ll, keyword)
        .into_iter()
        .filter(|(name, _)| name.starts_with("nvshmem"))
        .collect()
}

/// The definitions of `functions` in a bitcode file, with the globals and
/// types they use, as text: `llvm-link --only-needed` of a module that keeps
/// only them. Lazy loading makes this milliseconds where [`disassembly`] of a
/// whole file takes seconds, so every per-arch file can be read. The linker
/// drops `local_unnamed_addr`; bodies are otherwise as `llvm-dis` prints them.
pub(crate) fn extracted(bc: &Path, functions: &[&str]) -> String {
    use std::io::Write as _;
    let link = toolchain().llvm_tool("llvm-link").unwrap();
    let mut child = Command::new(&link)
        .arg("-")
        .arg(bc)
        .args(["--only-needed", "-S", "-o", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", link.display()));
    // Opaque declarations kept by `llvm.used`: llvm-link needs no more than
    // the names to pull the definitions in.
    let mut keep = String::from("target triple = \"nvptx64-nvidia-cuda\"\n");
    for f in functions {
        keep += &format!("declare void @{f}()\n");
    }
    let used: Vec<String> = functions.iter().map(|f| format!("ptr @{f}")).collect();
    keep += &format!(
        "@llvm.used = appending global [{} x ptr] [{}], section \"llvm.metadata\"\n",
        functions.len(),
        used.join(", ")
    );
    child
        .stdin
        .take()
        .unwrap()
        .write_all(keep.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "llvm-link --only-needed {} ({functions:?}): {}",
        bc.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `llvm-dis` of a bitcode file, once per file for the whole test binary.
pub(crate) fn disassembly(bc: &Path) -> std::sync::Arc<str> {
    static CACHE: OnceLock<Mutex<HashMap<PathBuf, std::sync::Arc<str>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(hit) = cache.lock().unwrap().get(bc) {
        return hit.clone();
    }
    let dis = toolchain().llvm_tool("llvm-dis").unwrap();
    let out = Command::new(&dis)
        .arg(bc)
        .args(["-o", "-"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "llvm-dis {}: {}",
        bc.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let ll: std::sync::Arc<str> = String::from_utf8_lossy(&out.stdout).into();
    cache.lock().unwrap().insert(bc.to_path_buf(), ll.clone());
    ll
}

/// The functions NVSHMEM's bitcode defines, by `llvm-dis`.
pub(crate) fn bitcode_defines(bc: &Path) -> BTreeMap<String, Sig> {
    let defs = nvshmem_functions(&disassembly(bc), "define ");
    assert!(
        defs.len() > 1000,
        "{} defines only {} nvshmem functions",
        bc.display(),
        defs.len()
    );
    defs
}

/// What the device crate declares with `features` (plus `abi-probe`): the
/// `declare` lines of its nvptx64 LLVM IR. Also fails on any warning.
pub(crate) fn probe(features: &[&str]) -> BTreeMap<String, Sig> {
    static CACHE: OnceLock<Mutex<HashMap<String, BTreeMap<String, Sig>>>> = OnceLock::new();
    let key = features.join(",");
    let cache = CACHE.get_or_init(Default::default);
    if let Some(hit) = cache.lock().unwrap().get(&key) {
        return hit.clone();
    }
    let tc = toolchain();
    // The builder's own nvptx64 target folder (`<target>/nvshmem-kernels`,
    // where the root build script and the builder tests build), with its
    // profile settings below: the `-Zbuild-std` core built there is reused
    // instead of built again for the probe.
    let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is <target>/tmp")
        .join("nvshmem-kernels");
    let mut all = vec!["abi-probe"];
    all.extend_from_slice(features);
    let out = Command::new(tc.cargo())
        .current_dir(device_dir())
        .args([
            "rustc",
            "--lib",
            "--release",
            "--target",
            "nvptx64-nvidia-cuda",
            "-Zbuild-std=core",
        ])
        .arg("--manifest-path")
        .arg(device_dir().join("Cargo.toml"))
        .args(["--message-format=json", "--features", &all.join(",")])
        .args(["--", "--emit=llvm-ir", "-C", "codegen-units=1"])
        .env("CARGO_TARGET_DIR", &target_dir)
        // As `nvshmem_builder` builds (neither changes a declaration).
        .env("CARGO_PROFILE_RELEASE_PANIC", "abort")
        .env("CARGO_PROFILE_RELEASE_DEBUG", "false")
        .env("RUSTC", tc.rustc())
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("RUSTUP_TOOLCHAIN")
        .output()
        .expect("cannot run cargo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut rmeta = None;
    let mut warnings = Vec::new();
    for line in stdout.lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let ours = msg["package_id"]
            .as_str()
            .is_some_and(|p| p.contains("/device#") || p.contains("nvshmem-device"));
        match msg["reason"].as_str() {
            Some("compiler-message") if ours => {
                let m = &msg["message"];
                if m["level"].as_str() == Some("warning") {
                    warnings.push(m["rendered"].as_str().unwrap_or("").to_string());
                }
            }
            Some("compiler-artifact") if msg["target"]["name"] == "nvshmem_device" => {
                rmeta = msg["filenames"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|f| f.as_str())
                    .find(|f| f.ends_with(".rmeta"))
                    .map(PathBuf::from);
            }
            _ => {}
        }
    }
    assert!(
        out.status.success(),
        "building the ABI probe (features {key:?}) failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        stdout
            .lines()
            .filter(|l| l.contains("\"rendered\""))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        warnings.is_empty(),
        "nvptx64 build of nvshmem-device ({key:?}) has warnings:\n{}",
        warnings.join("\n")
    );
    let rmeta = rmeta.expect("no compiler-artifact message for nvshmem_device");
    let stem = rmeta
        .file_stem()
        .unwrap()
        .to_str()
        .unwrap()
        .strip_prefix("lib")
        .unwrap()
        .to_string();
    let ll = rmeta.with_file_name(format!("{stem}.ll"));
    let text = std::fs::read_to_string(&ll).unwrap_or_else(|e| panic!("{}: {e}", ll.display()));
    let decls = nvshmem_functions(&text, "declare ");
    assert!(
        decls.len() > 1000,
        "the probe declares only {} functions: is `abi-probe` wired up?",
        decls.len()
    );
    cache.lock().unwrap().insert(key, decls.clone());
    decls
}
