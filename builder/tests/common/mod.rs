//! What the builder's integration tests share.
#![allow(dead_code)]

use nvshmem_builder::install::{Installation, Query};
use nvshmem_builder::manifest::Manifest;
use nvshmem_builder::{Arch, Version};
use nvshmem_builder::{BuildOutput, Builder};
use std::path::{Path, PathBuf};

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The workspace's target folder.
pub fn target() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../target")
}

/// The repository's root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The kernel crate at `path` (from the repository root) for NVSHMEM
/// `version` and `arch`, in the shared target folder, its outputs in
/// `target/builder-tests/<out>`.
pub fn kernel_crate(path: &str, out: &str, version: Version, arch: &str) -> Builder {
    Builder::new(root().join(path))
        .target_dir(target().join("nvshmem-kernels"))
        .out_dir(target().join("builder-tests").join(out))
        .nvshmem_version(version)
        .arch(parse_arch(arch))
}

/// `arch` (`sm_90`, a literal of the tests) as an [`Arch`].
pub fn parse_arch(arch: &str) -> Arch {
    arch.parse().unwrap_or_else(|e| panic!("{arch}: {e}"))
}

/// Builds (panicking with `what` and the error) and reads the PTX, which
/// must target the manifest's arch.
#[track_caller]
pub fn build_ptx(b: Builder, what: &str) -> (BuildOutput, String) {
    let out = b.build().unwrap_or_else(|e| panic!("{what}: {e}"));
    let ptx = std::fs::read_to_string(&out.ptx).unwrap();
    let target = format!(".target {}", out.manifest.arch);
    assert!(ptx.contains(&target), "{what}: not {target}");
    (out, ptx)
}

/// Each of `kernels` is an `.entry` of `ptx`.
#[track_caller]
pub fn assert_entries<K: AsRef<str>>(ptx: &str, kernels: &[K], what: &str) {
    for k in kernels {
        let k = k.as_ref();
        assert!(
            ptx.contains(&format!(".visible .entry {k}(")),
            "{what}: no .entry {k}"
        );
    }
}

/// `f` over `jobs` on as many threads as there are cores, the results in
/// the jobs' order. A panic in a job is re-raised here, with its message.
pub fn run_in_parallel<J: Sync, R: Send>(jobs: &[J], f: impl Fn(&J) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<R>>> =
        jobs.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads.min(jobs.len()))
            .map(|_| {
                s.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(job) = jobs.get(i) else { break };
                        let r = f(job);
                        *results[i].lock().unwrap() = Some(r);
                    }
                })
            })
            .collect();
        for w in workers {
            if let Err(panic) = w.join() {
                std::panic::resume_unwind(panic);
            }
        }
    });
    results
        .into_iter()
        .map(|r| r.into_inner().unwrap().expect("every job ran"))
        .collect()
}

/// Where a build's time went: `step 1.2s, ...`.
pub fn timings(out: &BuildOutput) -> String {
    out.timings
        .iter()
        .map(|(step, t)| format!("{step} {:.1}s", t.as_secs_f64()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The most registers a kernel of `m` uses.
pub fn max_registers(m: &Manifest) -> u32 {
    m.kernels
        .iter()
        .filter_map(|k| k.registers)
        .max()
        .unwrap_or(0)
}

/// One target folder for every fixture, so `core` is built once.
pub fn builder(name: &str) -> Builder {
    Builder::new(fixture(name))
        .target_dir(target().join("nvshmem-kernels"))
        .out_dir(target().join("builder-tests").join(name))
}

pub use nvshmem_builder::testing::skip;

/// `result` is an error of the variant `kind` (the start of its `Debug`
/// form, such as `"NoKernels"`) whose message has each of `says`; returns
/// the message.
#[track_caller]
pub fn fails_with<T: std::fmt::Debug>(
    result: Result<T, nvshmem_builder::Error>,
    kind: &str,
    says: &[&str],
) -> String {
    let e = result.expect_err("expected an error");
    assert!(format!("{e:?}").starts_with(kind), "not {kind}: {e:?}");
    for text in says {
        assert!(e.to_string().contains(text), "no {text:?} in: {e}");
    }
    e.to_string()
}

/// The version, when it is installed where the builder looks.
pub fn installed(version: &str) -> Option<Version> {
    installed_for(version, nvshmem_builder::CudaMajor::Cuda13)
}

/// [`installed`] for a CUDA major's wheel.
pub fn installed_for(version: &str, cuda: nvshmem_builder::CudaMajor) -> Option<Version> {
    let v: Version = version.parse().unwrap();
    match Installation::find(&Query::default().version(v).cuda(cuda)) {
        Ok(_) => Some(v),
        Err(e) => {
            skip(&format!(
                "NVSHMEM {version} for CUDA {cuda} is not installed ({e}); `nvshmem-build setup` \
                 fills the cache"
            ));
            None
        }
    }
}

/// Compiles a generated header with gcc as C99 and C11 and with g++ as
/// C++11 and C++17 (`-Wall -Wextra -Werror -fsyntax-only`, and for C++
/// `-Wold-style-cast -Wzero-as-null-pointer-constant`): without the
/// launch helpers, and with them when `cuda_include` has `cuda.h`.
/// Returns the compilations that ran; panics on the first failure.
pub fn compile_header(header: &Path, cuda_include: Option<&Path>) -> Vec<String> {
    let mut ran = Vec::new();
    let modes: Vec<Option<&Path>> = std::iter::once(None)
        .chain(cuda_include.map(Some))
        .collect();
    for (compiler, lang, stds) in [
        ("gcc", "c", ["c99", "c11"]),
        ("g++", "c++", ["c++11", "c++17"]),
    ] {
        for std in stds {
            for include in &modes {
                let mut cmd = std::process::Command::new(compiler);
                cmd.arg(format!("-std={std}")).args([
                    "-Wall",
                    "-Wextra",
                    "-Werror",
                    "-fsyntax-only",
                    "-x",
                    lang,
                ]);
                if lang == "c++" {
                    // What C++ projects often turn on: no casts, no 0 as a pointer.
                    cmd.args(["-Wold-style-cast", "-Wzero-as-null-pointer-constant"]);
                }
                match include {
                    None => cmd.arg("-DNVSHMEM_RS_NO_LAUNCH_HELPERS"),
                    Some(dir) => cmd.arg(format!("-I{}", dir.display())),
                };
                let out = cmd
                    .arg(header)
                    .output()
                    .unwrap_or_else(|e| panic!("cannot run {compiler}: {e}"));
                let what = format!(
                    "{compiler} -std={std} {}",
                    if include.is_some() {
                        "with cuda.h"
                    } else {
                        "without launch helpers"
                    }
                );
                assert!(
                    out.status.success(),
                    "{what} rejects {}:\n{}",
                    header.display(),
                    String::from_utf8_lossy(&out.stderr)
                );
                ran.push(what);
            }
        }
    }
    ran
}
