//! Where NVIDIA's libdevice (`libdevice.10.bc`) is: the `__nv_*` math
//! functions that `nvshmem_device::math` calls. The pipeline links it
//! `--only-needed` after NVSHMEM, only when the module declares one
//! (`ir::libdevice_calls`). [`ensure`] finds or fetches it.

use super::settings::{self, Progress};
use super::wheels::{self, NVVM_WHEEL};
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// The environment variable naming `libdevice.10.bc` (or its folder).
pub(crate) const ENV: &str = "NVSHMEM_RS_LIBDEVICE";

/// `libdevice.10.bc` inside an unpacked nvvm wheel or `site-packages`.
fn in_wheel(root: &Path) -> [PathBuf; 2] {
    [
        root.join("nvidia/cu13/nvvm/libdevice/libdevice.10.bc"),
        root.join("nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc"),
    ]
}

/// `libdevice.10.bc`, in the order `ptxas` is looked for:
/// `$NVSHMEM_RS_LIBDEVICE` (the file or its folder; an error if it has
/// none), the `nvidia-nvvm` package `python3` has, the per-user cache,
/// `$CUDA_HOME/nvvm/libdevice`, the CUDA install of the `ptxas` found,
/// `/usr/local/cuda/nvvm/libdevice`. `None` when none has it.
pub(crate) fn find() -> Result<Option<PathBuf>> {
    if let Some(p) = settings::var_os(ENV).map(PathBuf::from) {
        let file = if p.is_dir() {
            p.join("libdevice.10.bc")
        } else {
            p
        };
        return settings::named_file(ENV, file, "libdevice.10.bc").map(Some);
    }
    let mut candidates: Vec<PathBuf> = wheels::wheel_roots(NVVM_WHEEL)
        .iter()
        .flat_map(|root| in_wheel(root))
        .collect();
    if let Some(home) = settings::var_os("CUDA_HOME") {
        candidates.push(Path::new(&home).join("nvvm/libdevice/libdevice.10.bc"));
    }
    // Beside the ptxas in use: `<cuda>/bin/ptxas` → `<cuda>/nvvm/libdevice`.
    if let Some(cuda) = super::find_ptxas(nvshmem_types::DEFAULT_CUDA)?
        .and_then(|p| Some(p.parent()?.parent()?.to_path_buf()))
    {
        candidates.push(cuda.join("nvvm/libdevice/libdevice.10.bc"));
    }
    candidates.push("/usr/local/cuda/nvvm/libdevice/libdevice.10.bc".into());
    Ok(candidates.into_iter().find(|p| p.is_file()))
}

/// `libdevice.10.bc`, found where a build looks for it (`$NVSHMEM_RS_LIBDEVICE`,
/// the `nvidia-nvvm` package `python3` has, the per-user cache, a CUDA
/// install), else the
/// `nvidia-nvvm` wheel downloaded into the per-user cache as
/// [`wheels::ensure`] does. A build fetches it itself when its kernels call
/// `nvshmem_device::math`; `nvshmem-build setup` calls this so that no later
/// build needs the network.
///
/// ```no_run
/// println!("{}", nvshmem_builder::toolchain::libdevice::ensure()?.display());
/// # Ok::<(), nvshmem_builder::Error>(())
/// ```
pub fn ensure() -> Result<PathBuf> {
    find_or_fetch(settings::offline()?, Progress::Stderr, Vec::new())
}

/// [`find`], else the `nvidia-nvvm` wheel downloaded into the per-user
/// cache; `needed` names the functions that asked for it, for the error.
pub(crate) fn find_or_fetch(
    offline: bool,
    progress: Progress,
    needed: Vec<String>,
) -> Result<PathBuf> {
    if let Some(p) = find()? {
        return Ok(p);
    }
    let dir = wheels::ensure_with(NVVM_WHEEL, "libdevice", offline, progress)?;
    in_wheel(&dir)
        .into_iter()
        .find(|p| p.is_file())
        .ok_or(Error::LibdeviceNotFound { symbols: needed })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_names_the_file_or_its_folder() {
        let dir = std::env::temp_dir().join(format!("libdevice-find-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("libdevice.10.bc"), b"BC").unwrap();
        // SAFETY: this test is the only one in the crate that touches ENV.
        unsafe { std::env::set_var(ENV, &dir) };
        assert_eq!(find().unwrap(), Some(dir.join("libdevice.10.bc")));
        unsafe { std::env::set_var(ENV, dir.join("missing.bc")) };
        assert!(find().is_err());
        unsafe { std::env::remove_var(ENV) };
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
