//! NVIDIA's libdevice (`libdevice.10.bc`): the `__nv_*` math functions that
//! `nvshmem_device::math` calls. Linked `--only-needed` after NVSHMEM, only
//! when the module declares one.

use crate::error::{Error, Result};
use crate::settings::{self, Progress};
use std::path::{Path, PathBuf};

/// The environment variable naming `libdevice.10.bc` (or its folder).
pub(crate) const ENV: &str = "NVSHMEM_RS_LIBDEVICE";

/// The name `nvshmem_device::math::cuda_arch` calls for `__nvvm_reflect`:
/// rustc's own LLVM pipeline runs NVVMReflect too, with rustc's default arch,
/// so the device crate hides the call under this name until the builder's
/// `opt -mcpu=<arch>` can resolve it.
pub(crate) const REFLECT_ALIAS: &str = "nvshmem_rs_nvvm_reflect";

/// `ll` with calls to [`REFLECT_ALIAS`] turned into `__nvvm_reflect` calls
/// (one declaration kept).
pub(crate) fn unhide_reflect(ll: &str) -> String {
    let alias = format!("@{REFLECT_ALIAS}(");
    if !ll.contains(&alias) {
        return ll.to_string();
    }
    let has_reflect = ll
        .lines()
        .any(|l| l.starts_with("declare ") && l.contains("@__nvvm_reflect("));
    let mut out = String::with_capacity(ll.len());
    for line in ll.lines() {
        if line.starts_with("declare ") && line.contains(&alias) && has_reflect {
            continue;
        }
        out.push_str(&line.replace(&alias, "@__nvvm_reflect("));
        out.push('\n');
    }
    out
}

/// The libdevice functions `ll` declares but does not define.
pub(crate) fn needed(ll: &str) -> Vec<String> {
    crate::ir::declared_functions(ll)
        .into_iter()
        .filter(|f| f.starts_with("__nv_"))
        .collect()
}

/// The requirement of the pip wheel with `libdevice.10.bc` (and `cicc`).
pub const NVVM_WHEEL: &str = "nvidia-nvvm==13.0.*";

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
    let mut candidates: Vec<PathBuf> = crate::wheels::wheel_roots(NVVM_WHEEL)
        .iter()
        .flat_map(|root| in_wheel(root))
        .collect();
    if let Some(home) = settings::var_os("CUDA_HOME") {
        candidates.push(Path::new(&home).join("nvvm/libdevice/libdevice.10.bc"));
    }
    // Beside the ptxas in use: `<cuda>/bin/ptxas` → `<cuda>/nvvm/libdevice`.
    if let Some(cuda) =
        crate::toolchain::find_ptxas()?.and_then(|p| Some(p.parent()?.parent()?.to_path_buf()))
    {
        candidates.push(cuda.join("nvvm/libdevice/libdevice.10.bc"));
    }
    candidates.push("/usr/local/cuda/nvvm/libdevice/libdevice.10.bc".into());
    Ok(candidates.into_iter().find(|p| p.is_file()))
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
    let dir = crate::wheels::ensure_with(NVVM_WHEEL, "libdevice", offline, progress)?;
    in_wheel(&dir)
        .into_iter()
        .find(|p| p.is_file())
        .ok_or(Error::LibdeviceNotFound { symbols: needed })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_undefined_nv_functions_are_needed() {
        let ll = "declare float @__nv_expf(float)\ndeclare void @nvshmem_quiet()\n\
                  define float @__nv_fabsf(float %x) {\n  ret float %x\n}\n";
        assert_eq!(needed(ll), ["__nv_expf"]);
    }

    #[test]
    fn the_reflect_alias_becomes_nvvm_reflect() {
        let ll = "declare i32 @nvshmem_rs_nvvm_reflect(ptr)\ndeclare i32 @__nvvm_reflect(ptr)\n\
                  %1 = call i32 @nvshmem_rs_nvvm_reflect(ptr @s)\n";
        let out = unhide_reflect(ll);
        assert_eq!(
            out.matches("declare i32 @__nvvm_reflect(ptr)").count(),
            1,
            "{out}"
        );
        assert!(out.contains("call i32 @__nvvm_reflect(ptr @s)") && !out.contains(REFLECT_ALIAS));
        let alone = unhide_reflect("declare i32 @nvshmem_rs_nvvm_reflect(ptr)\n");
        assert_eq!(alone, "declare i32 @__nvvm_reflect(ptr)\n");
    }

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
