//! pip wheels the packs carry (Open MPI, UCX), unpacked in the per-user cache
//! that `nvshmem-builder` fills with NVSHMEM and the CUDA tools.

use nvshmem_builder::install::{cache_dir, wheel_dir};
use std::path::PathBuf;
use std::process::Command;

/// The folder where the wheel of `requirement` is unpacked, downloading it
/// with `python3 -m pip download` the first time.
pub fn unpacked(requirement: &str) -> Result<PathBuf, String> {
    let cache = cache_dir().ok_or("no cache folder: set NVSHMEM_RS_CACHE or HOME")?;
    let dest = wheel_dir(&cache, requirement);
    if dest.join(".complete").exists() {
        return Ok(dest);
    }
    if std::env::var_os("NVSHMEM_RS_OFFLINE").is_some_and(|v| v == "1") {
        return Err(format!(
            "{requirement} is not in {} and NVSHMEM_RS_OFFLINE=1: unset it, or unpack the wheel \
             there yourself (`python3 -m pip download --no-deps {requirement}`, then \
             `python3 -m zipfile -e <wheel> {}` and `touch {}/.complete`)",
            cache.display(),
            dest.display(),
            dest.display()
        ));
    }
    eprintln!("fetching {requirement} into {}", dest.display());
    let tmp = cache.join(format!(".download-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    let mut pip = Command::new("python3");
    pip.args([
        "-m",
        "pip",
        "download",
        "--quiet",
        "--no-deps",
        "--only-binary=:all:",
    ])
    .args([
        "--platform",
        "manylinux_2_28_x86_64",
        "--platform",
        "manylinux2014_x86_64",
    ])
    .args(["--python-version", "3.12", "--implementation", "cp", "-d"])
    .arg(&tmp)
    .arg(requirement);
    crate::check(&mut pip)?;
    let wheel = std::fs::read_dir(&tmp)
        .map_err(|e| format!("{}: {e}", tmp.display()))?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| format!("pip downloaded no wheel for {requirement}"))?;
    let staging = tmp.join("unpacked");
    crate::check(
        Command::new("python3")
            .args(["-m", "zipfile", "-e"])
            .arg(&wheel)
            .arg(&staging),
    )?;
    // Unzipping drops the execute bits of bin/ and lib/.
    crate::check(Command::new("chmod").args(["-R", "u+x"]).arg(&staging))?;
    let _ = std::fs::remove_dir_all(&dest);
    std::fs::rename(&staging, &dest).map_err(|e| format!("{}: {e}", dest.display()))?;
    std::fs::write(dest.join(".complete"), requirement).map_err(|e| e.to_string())?;
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(dest)
}
