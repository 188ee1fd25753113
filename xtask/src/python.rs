//! The Python package (`python/`): `cargo xtask python-test` runs its tests
//! that need no GPU (CI), and the torch pack gets its wheel and tests from here.
//!
//! maturin and pytest come from pip wheels in the per-user cache
//! (`nvshmem_builder::wheels`), unpacked, not installed: no virtual
//! environment is made, and the same folders travel in the GPU pack.

use crate::check;
use nvshmem_builder::wheels;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// pytest and what it imports, pure Python (the versions are pinned so that
/// the cache folders are stable).
pub const PYTEST_WHEELS: &[&str] = &[
    "pytest==9.2.0",
    "pluggy==1.7.0",
    "iniconfig==2.3.1",
    "packaging==26.4",
    "pygments==2.21.0",
];
/// The Python extension's build tool (its wheel holds the binary).
pub const MATURIN_WHEEL: &str = "maturin==1.16.0";

#[derive(clap::Args)]
pub struct Args {
    /// Extra pytest arguments (such as `-k build`).
    pytest_args: Vec<String>,
}

/// The unpacked pytest wheels: the folders to put on `PYTHONPATH`.
pub fn pytest_path() -> Result<Vec<PathBuf>, String> {
    PYTEST_WHEELS
        .iter()
        .map(|w| wheels::ensure(w, "pytest").map_err(|e| e.to_string()))
        .collect()
}

/// Builds the wheel of `python/` with maturin into `out`; returns its file.
pub fn build_wheel(root: &Path, out: &Path) -> Result<PathBuf, String> {
    let maturin = wheels::ensure(MATURIN_WHEEL, "maturin").map_err(|e| e.to_string())?;
    let exe = std::fs::read_dir(&maturin)
        .map_err(|e| e.to_string())?
        .flatten()
        .map(|e| e.path().join("scripts/maturin"))
        .find(|p| p.is_file())
        .ok_or_else(|| format!("no maturin binary in {}", maturin.display()))?;
    make_executable(&exe)?;
    let _ = std::fs::remove_dir_all(out);
    check(
        Command::new(&exe)
            .args(["build", "--release", "--strip", "--quiet", "-m"])
            .arg(root.join("python/Cargo.toml"))
            .arg("-o")
            .arg(out)
            .current_dir(root),
    )?;
    std::fs::read_dir(out)
        .map_err(|e| e.to_string())?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| format!("maturin wrote no wheel into {}", out.display()))
}

fn make_executable(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// `PYTHONPATH` of the given folders (and whatever the environment had).
pub fn python_path(dirs: &[PathBuf]) -> std::ffi::OsString {
    let extra = std::env::var_os("PYTHONPATH");
    std::env::join_paths(dirs.iter().cloned().chain(extra.map(PathBuf::from)))
        .expect("paths without ':'")
}

/// `cargo xtask python-test`: the extension built by cargo (the same code
/// maturin builds), staged beside the package's Python files, and pytest on
/// `python/tests/test_offline.py`, with no GPU needed.
pub fn run(args: Args) -> Result<ExitCode, String> {
    let root = crate::repo_root();
    let t0 = std::time::Instant::now();
    check(
        Command::new("cargo")
            .args(["build", "--release", "--quiet", "-p", "nvshmem-python"])
            .current_dir(&root),
    )?;
    let built = t0.elapsed();
    let stage = root.join("target/python-test");
    let package = stage.join("nvshmem_rs");
    let _ = std::fs::remove_dir_all(&stage);
    std::fs::create_dir_all(&package).map_err(|e| e.to_string())?;
    for f in std::fs::read_dir(root.join("python/nvshmem_rs"))
        .map_err(|e| e.to_string())?
        .flatten()
    {
        // The Python half as the wheel ships it: modules, stubs, py.typed.
        if f.path().is_file() {
            std::fs::copy(f.path(), package.join(f.file_name())).map_err(|e| e.to_string())?;
        }
    }
    std::fs::copy(
        root.join("target/release/lib_native.so"),
        package.join("_native.abi3.so"),
    )
    .map_err(|e| format!("the extension: {e}"))?;
    let mut path = vec![stage.clone()];
    path.extend(pytest_path()?);
    let status = Command::new("python3")
        .args(["-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider"])
        .arg(root.join("python/tests/test_offline.py"))
        .args(&args.pytest_args)
        .env("PYTHONPATH", python_path(&path))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .current_dir(&stage)
        .status()
        .map_err(|e| format!("python3: {e}"))?;
    println!(
        "python-test: extension built in {:.0} s, {:.0} s in all",
        built.as_secs_f64(),
        t0.elapsed().as_secs_f64()
    );
    Ok(if status.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
