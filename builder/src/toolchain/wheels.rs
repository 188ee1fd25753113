//! The per-user cache of pip wheels: NVSHMEM, `ptxas`/`nvlink`, CUDA headers.
//!
//! The cache is [`cache_dir`] (`$NVSHMEM_RS_CACHE`, else
//! `$XDG_CACHE_HOME/nvshmem-rs`, else `~/.cache/nvshmem-rs`); each wheel is
//! unpacked into [`wheel_dir`]`(cache, requirement)`, such as
//! `nvidia-nvshmem-cu13-3.4.5/`. A wheel is downloaded with
//! `python3 -m pip download` (pip's own index settings, proxies and
//! certificates apply) and unpacked with Python's `zipfile`.
//!
//! Filling is atomic: a wheel is unpacked into a temporary folder beside its
//! final one and renamed into place, under a lock file, so a second build
//! running at the same time waits and never sees half a wheel.

use super::settings::{self, Progress};
use crate::error::{Error, Result, io_err, not_runnable};
use nvshmem_types::install::{Installation, Query, Source};
pub use nvshmem_types::install::{cache_dir, wheel_dir};
use nvshmem_types::{CudaMajor, DEFAULT_CUDA, Version};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The requirement of the pip wheel with `ptxas` and `nvlink` (CUDA 13).
pub const NVCC_WHEEL: &str = CudaMajor::Cuda13.nvcc_wheel();

/// The pip wheel with `libnvJitLink.so.12`: CUDA 12's nvcc wheel has no
/// `nvlink`, so separate compilation links through nvJitLink.
pub const NVJITLINK_CU12_WHEEL: &str = "nvidia-nvjitlink-cu12==12.9.*";

/// The requirement of the pip wheel with `libdevice.10.bc` (and `cicc`).
pub const NVVM_WHEEL: &str = "nvidia-nvvm==13.0.*";

/// The requirement of the pip wheel with `cuda.h` (the C header's launch helpers need it).
pub const CUDA_RUNTIME_WHEEL: &str = "nvidia-cuda-runtime==13.0.*";

/// The folder of `requirement`'s wheel in the per-user cache, downloaded and
/// unpacked first when it is not there. `what` names it in messages ("NVSHMEM
/// 3.4.5"). With `NVSHMEM_RS_OFFLINE=1`, a missing wheel is an error with
/// the command that installs it. Progress goes to stderr.
///
/// ```no_run
/// use nvshmem_builder::wheels;
/// let dir = wheels::ensure(wheels::NVCC_WHEEL, "ptxas")?;
/// println!("{}", dir.join("nvidia/cu13/bin/ptxas").display());
/// # Ok::<(), nvshmem_builder::Error>(())
/// ```
pub fn ensure(requirement: &str, what: &str) -> Result<PathBuf> {
    ensure_with(requirement, what, settings::offline()?, Progress::Stderr)
}

/// What `nvshmem-build setup` (`./x setup`, CI) fetches by default: the
/// default version, the newest, and those PyTorch pins (2.9: 3.3.20 for CUDA
/// 12; 2.15: 3.7.2), about 0.5 GB. `cargo xtask matrix` builds every version
/// that is fetched; `setup --all` fetches all (4.4 GB with both majors).
pub const SETUP_DEFAULT: &[(Version, CudaMajor)] = &[
    (Version::new(3, 4, 5), CudaMajor::Cuda13),
    (Version::new(3, 8, 0), CudaMajor::Cuda13),
    (Version::new(3, 3, 20), CudaMajor::Cuda12),
    (Version::new(3, 7, 2), CudaMajor::Cuda13),
];

/// NVSHMEM `version` for CUDA 13 ([`DEFAULT_CUDA`]): [`nvshmem_for`].
pub fn nvshmem(version: Version) -> Result<Installation> {
    nvshmem_for(version, DEFAULT_CUDA)
}

/// NVSHMEM `version` for `cuda`: the installation [`Installation::find`]
/// finds for it without `NVSHMEM_HOME` (python3's pip package, the per-user
/// cache), else its pip wheel downloaded into the per-user cache as
/// [`ensure`] does. For tools and tests that need a given version installed.
///
/// ```no_run
/// use nvshmem_builder::CudaMajor;
/// let nv = nvshmem_builder::wheels::nvshmem_for("3.3.20".parse().unwrap(), CudaMajor::Cuda12)?;
/// println!("{}", nv.host_library().display());
/// # Ok::<(), nvshmem_builder::Error>(())
/// ```
pub fn nvshmem_for(version: Version, cuda: CudaMajor) -> Result<Installation> {
    let info = version
        .info()
        .ok_or(Error::UnsupportedVersion { version })?;
    match Installation::find(&Query::default().ignore_env().version(version).cuda(cuda)) {
        Ok(nv) => Ok(nv),
        Err(_) => {
            let what = format!("NVSHMEM {version} (CUDA {cuda})");
            let dir = ensure(&info.wheel(cuda).to_string(), &what)?;
            Ok(Installation::at(
                &dir.join("nvidia/nvshmem"),
                Source::UserCache,
            )?)
        }
    }
}

pub(crate) fn ensure_with(
    requirement: &str,
    what: &str,
    offline: bool,
    progress: Progress,
) -> Result<PathBuf> {
    let cache = cache()?;
    let dir = wheel_dir(&cache, requirement);
    if dir.is_dir() {
        return Ok(dir);
    }
    let not_downloaded = |why: String| Error::NotDownloaded {
        what: what.into(),
        requirement: requirement.into(),
        cache: cache.clone(),
        why,
    };
    if offline {
        return Err(not_downloaded(
            "NVSHMEM_RS_OFFLINE=1 forbids downloading".into(),
        ));
    }
    let _lock = lock(&file_name(&dir))?;
    if dir.is_dir() {
        // Another build filled it while this one waited.
        return Ok(dir);
    }
    progress.say(&format!(
        "downloading {what} ({requirement}) into {} (once)",
        cache.display()
    ));
    let started = std::time::Instant::now();
    let download = partial_dir(&cache, &dir, "download")?;
    let wheel = download_wheel(requirement, &download).map_err(not_downloaded)?;
    let size = std::fs::metadata(&wheel).map(|m| m.len()).unwrap_or(0);
    let downloaded = started.elapsed();
    unpack_locked(&cache, &dir, &wheel)?;
    let _ = std::fs::remove_dir_all(&download);
    progress.say(&format!(
        "{what}: {:.0} MB downloaded in {:.1} s, unpacked in {:.1} s",
        size as f64 / 1e6,
        downloaded.as_secs_f64(),
        (started.elapsed() - downloaded).as_secs_f64()
    ));
    Ok(dir)
}

/// Unpacks a wheel file into the per-user cache as `requirement`'s (for a
/// wheel downloaded elsewhere); returns its folder. Does nothing when the
/// cache already has it.
///
/// ```no_run
/// use nvshmem_builder::wheels;
/// let dir = wheels::unpack_into_cache(
///     "/tmp/cache".as_ref(),
///     "nvidia-nvshmem-cu13==3.4.5",
///     "/tmp/nvidia_nvshmem_cu13-3.4.5-py3-none-manylinux2014_x86_64.whl".as_ref(),
/// )?;
/// # Ok::<(), nvshmem_builder::Error>(())
/// ```
pub fn unpack_into_cache(cache: &Path, requirement: &str, wheel: &Path) -> Result<PathBuf> {
    let dir = wheel_dir(cache, requirement);
    if dir.is_dir() {
        return Ok(dir);
    }
    let _lock = lock_in(cache, &file_name(&dir))?;
    if !dir.is_dir() {
        unpack_locked(cache, &dir, wheel)?;
    }
    Ok(dir)
}

/// Unpacks into a temporary folder, then renames it to `dir` (the caller holds the lock).
fn unpack_locked(cache: &Path, dir: &Path, wheel: &Path) -> Result<()> {
    let tmp = partial_dir(cache, dir, "unpack")?;
    let out = Command::new("python3")
        .args(["-m", "zipfile", "-e"])
        .arg(wheel)
        .arg(&tmp)
        .stdin(Stdio::null())
        .output()
        .map_err(not_runnable("python3"))?;
    if !out.status.success() {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(Error::ToolFailed {
            tool: "python3 -m zipfile".into(),
            command: format!(
                "python3 -m zipfile -e {} {}",
                wheel.display(),
                tmp.display()
            ),
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    // zipfile drops the mode bits: ptxas, nvlink and the rest of each bin/ must run.
    for bin in bin_dirs(&tmp) {
        make_executable(&bin)?;
    }
    std::fs::rename(&tmp, dir).map_err(io_err(dir))
}

/// Makes every file in `dir` executable (wheels unpacked by Python's
/// `zipfile` lose the mode bits).
pub(crate) fn make_executable(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    for e in std::fs::read_dir(dir).map_err(io_err(dir))?.flatten() {
        use std::os::unix::fs::PermissionsExt;
        let p = e.path();
        if p.is_file() {
            let mut perm = std::fs::metadata(&p).map_err(io_err(&p))?.permissions();
            perm.set_mode(perm.mode() | 0o755);
            std::fs::set_permissions(&p, perm).map_err(io_err(&p))?;
        }
    }
    Ok(())
}

/// Every folder named `bin` under `root`.
fn bin_dirs(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                if e.file_name() == "bin" {
                    out.push(p.clone());
                }
                stack.push(p);
            }
        }
    }
    out
}

/// A fresh temporary folder beside `dir` (same file system, so the rename is atomic).
fn partial_dir(cache: &Path, dir: &Path, what: &str) -> Result<PathBuf> {
    let tmp = cache.join(format!(
        ".partial-{}-{what}-{}",
        file_name(dir),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(io_err(&tmp))?;
    Ok(tmp)
}

/// `python3 -m pip download` of one Linux wheel for this machine; returns its path.
fn download_wheel(requirement: &str, dest: &Path) -> std::result::Result<PathBuf, String> {
    let arch = std::env::consts::ARCH;
    let mut cmd = Command::new("python3");
    cmd.args(["-m", "pip", "download", "--quiet", "--no-deps"])
        .arg("--only-binary=:all:");
    for tag in [
        "manylinux2014",
        "manylinux_2_17",
        "manylinux_2_27",
        "manylinux_2_28",
    ] {
        cmd.arg("--platform").arg(format!("{tag}_{arch}"));
    }
    cmd.args(["--python-version", "3.12", "--implementation", "cp", "-d"])
        .arg(dest)
        .arg(requirement)
        .stdin(Stdio::null());
    let out = cmd
        .output()
        .map_err(|e| format!("python3 cannot be run ({e}); the download needs python3 with pip"))?;
    if !out.status.success() {
        return Err(format!(
            "`python3 -m pip download {requirement}` failed:\n{}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    std::fs::read_dir(dest)
        .map_err(|e| e.to_string())?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| format!("pip downloaded no wheel for {requirement}"))
}

/// Where an installed `wheel` may be unpacked, in search order: the
/// `site-packages` folders `python3` has, then the per-user cache's copy.
pub(crate) fn wheel_roots(wheel: &str) -> Vec<PathBuf> {
    let mut roots = nvshmem_types::install::python_site_packages();
    roots.extend(cache_dir().map(|cache| wheel_dir(&cache, wheel)));
    roots
}

fn cache() -> Result<PathBuf> {
    let cache = cache_dir().ok_or(Error::NoCacheDir)?;
    std::fs::create_dir_all(&cache).map_err(io_err(&cache))?;
    Ok(cache)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Holds `<cache>/.locks/<name>.lock` until dropped: one process at a time
/// fills a cache entry (or installs a toolchain). `None` without a cache folder.
pub(crate) fn lock(name: &str) -> Result<Option<File>> {
    match cache_dir() {
        Some(cache) => lock_in(&cache, name),
        None => Ok(None),
    }
}

fn lock_in(cache: &Path, name: &str) -> Result<Option<File>> {
    let dir = cache.join(".locks");
    std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
    let path = dir.join(format!("{name}.lock"));
    let file = File::create(&path).map_err(io_err(&path))?;
    file.lock().map_err(io_err(&path))?;
    Ok(Some(file))
}

/// `include/` with `cuda.h`: from the `nvidia-cuda-runtime` package `python3`
/// has, else the per-user cache (filled by `nvshmem-build setup`), else
/// `$CUDA_HOME/include`, else `/usr/local/cuda/include`. Never downloads.
///
/// ```no_run
/// if let Some(inc) = nvshmem_builder::wheels::cuda_include_dir() {
///     println!("-I{}", inc.display());
/// }
/// ```
pub fn cuda_include_dir() -> Option<PathBuf> {
    find_cuda_include()
}

/// `include/` with `cuda.h`: [`cuda_include_dir`]'s, else the
/// `nvidia-cuda-runtime` wheel's (2 MB), downloaded into the per-user cache
/// as [`ensure`] does.
///
/// ```no_run
/// println!("-I{}", nvshmem_builder::wheels::cuda_include()?.display());
/// # Ok::<(), nvshmem_builder::Error>(())
/// ```
pub fn cuda_include() -> Result<PathBuf> {
    cuda_include_with(settings::offline()?, Progress::Stderr)
}

/// [`cuda_include`] with the builder's settings.
pub(crate) fn cuda_include_with(offline: bool, progress: Progress) -> Result<PathBuf> {
    match find_cuda_include() {
        Some(d) => Ok(d),
        None => Ok(
            ensure_with(CUDA_RUNTIME_WHEEL, "cuda.h", offline, progress)?
                .join("nvidia/cu13/include"),
        ),
    }
}

fn find_cuda_include() -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = wheel_roots(CUDA_RUNTIME_WHEEL)
        .into_iter()
        .map(|root| root.join("nvidia/cu13/include"))
        .collect();
    if let Some(home) = settings::var_os("CUDA_HOME") {
        candidates.push(Path::new(&home).join("include"));
    }
    candidates.push("/usr/local/cuda/include".into());
    candidates.into_iter().find(|d| d.join("cuda.h").is_file())
}
