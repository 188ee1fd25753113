//! `nvcc` for the project's CUDA C++ (`examples/cpp_host`, the benchmark's
//! C++ twins), and the NVSHMEM it builds against.
//!
//! nvcc: `$NVCC`, else `$CUDA_HOME/bin/nvcc`, else `nvcc` on `PATH`, else
//! `/usr/local/cuda/bin/nvcc`. Without any, one put together from pip wheels
//! (13.0: nvcc, nvvm's cicc, the runtime's headers and libraries, crt and
//! CCCL) in the per-user cache: `nvcc.profile` finds cicc and the headers
//! relative to nvcc itself, so the five wheels are merged (hard links) into
//! one folder, `<cache>/cuda-nvcc-toolkit-13.0`.
//!
//! `-lcuda` needs a `libcuda.so` at link time, which the wheels lack: the
//! toolkit's `stubs/libcuda.so` when there is one, else a link-only stub made
//! here from the `cu*` symbols the objects leave undefined (`nm -u`), with the
//! driver's soname, so the program loads the real `libcuda.so.1` when it runs.

use nvshmem_builder::install::{FindError, Installation, Query};
use nvshmem_builder::{Version, wheels};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The pip wheels of an nvcc that compiles and links `.cu` files, and what each brings.
pub const TOOLKIT_WHEELS: &[(&str, &str)] = &[
    (wheels::NVCC_WHEEL, "nvcc"),
    (wheels::NVVM_WHEEL, "cicc"),
    (wheels::CUDA_RUNTIME_WHEEL, "the CUDA runtime"),
    ("nvidia-cuda-crt==13.0.*", "nvcc's crt headers"),
    ("nvidia-cuda-cccl==13.0.*", "the CCCL headers"),
];

/// cuobjdump's pip wheel, for the benchmark's SASS dumps when no toolkit has
/// one (its wheels start at 13.2, which reads 13.0's cubins).
const CUOBJDUMP_WHEEL: &str = "nvidia-cuda-cuobjdump>=13.2,<14";

/// The folder of the merged wheels in the per-user cache.
const TOOLKIT_DIR: &str = "cuda-nvcc-toolkit-13.0";

/// An nvcc and where it came from.
pub struct Nvcc {
    /// The `nvcc` executable.
    pub path: PathBuf,
    /// The toolkit's top folder (the parent of `bin/`).
    top: PathBuf,
    /// Put together from pip wheels.
    pub from_wheels: bool,
}

impl Nvcc {
    /// An installed nvcc, else the one from pip wheels (downloaded into the
    /// per-user cache the first time).
    pub fn find() -> Result<Nvcc, String> {
        let installed = std::env::var_os("NVCC")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("CUDA_HOME").map(|h| Path::new(&h).join("bin/nvcc")))
            .filter(|p| p.is_file())
            .or_else(|| on_path("nvcc"))
            .or_else(|| Some(PathBuf::from("/usr/local/cuda/bin/nvcc")).filter(|p| p.is_file()));
        if let Some(path) = installed {
            let path = path.canonicalize().unwrap_or(path);
            let top = path
                .parent()
                .and_then(Path::parent)
                .map(Path::to_path_buf)
                .unwrap_or_default();
            return Ok(Nvcc {
                path,
                top,
                from_wheels: false,
            });
        }
        let top = toolkit_from_wheels()?.join("nvidia/cu13");
        Ok(Nvcc {
            path: top.join("bin/nvcc"),
            top,
            from_wheels: true,
        })
    }

    /// What it is, for the log: the path and `nvcc --version`'s last line.
    pub fn describe(&self) -> String {
        let version = Command::new(&self.path)
            .arg("--version")
            .output()
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .last()
                    .unwrap_or_default()
                    .to_string()
            })
            .unwrap_or_default();
        format!(
            "{} ({version}{})",
            self.path.display(),
            if self.from_wheels {
                ", from pip wheels"
            } else {
                ""
            }
        )
    }

    /// `nvcc ARGS...`.
    pub fn command(&self) -> Command {
        Command::new(&self.path)
    }

    /// What a link needs beyond nvcc's own defaults: the wheels' `lib/`
    /// (cudadevrt, cudart_static; nvcc.profile names `lib64/`).
    pub fn link_args(&self) -> Vec<String> {
        if self.from_wheels {
            vec![format!("-L{}", self.top.join("lib").display())]
        } else {
            Vec::new()
        }
    }

    /// A CUDA tool (`cuobjdump`, `nvlink`) beside nvcc, else on `PATH`.
    pub fn tool(&self, name: &str) -> Option<PathBuf> {
        Some(self.top.join("bin").join(name))
            .filter(|p| p.is_file())
            .or_else(|| on_path(name))
    }

    /// `cuobjdump`: beside nvcc or on `PATH`, else from its pip wheel (in the
    /// per-user cache); `None`, with the reason printed, when neither works.
    pub fn cuobjdump(&self) -> Option<PathBuf> {
        self.tool("cuobjdump")
            .or_else(|| match wheels::ensure(CUOBJDUMP_WHEEL, "cuobjdump") {
                Ok(wheel) => Some(wheel.join("nvidia/cu13/bin/cuobjdump")).filter(|p| p.is_file()),
                Err(e) => {
                    println!("cuobjdump from pip: {e}");
                    None
                }
            })
    }

    /// `-L<folder>` with a `libcuda.so` for `-lcuda`: none when the toolkit
    /// has its stub; else a stub for the `cu*` symbols `objects` (objects and
    /// archives) leave undefined, written into `build`.
    pub fn libcuda_args(&self, objects: &[PathBuf], build: &Path) -> Result<Vec<String>, String> {
        if self.has_libcuda_stub() {
            return Ok(Vec::new());
        }
        let dir = build.join("libcuda-stub");
        let symbols = undefined_driver_symbols(objects)?;
        write_libcuda_stub(&symbols, &dir)?;
        println!(
            "libcuda.so: a link-only stub of the {} driver functions used ({}); the program loads the driver's libcuda.so.1",
            symbols.len(),
            dir.display()
        );
        Ok(vec![format!("-L{}", dir.display())])
    }

    fn has_libcuda_stub(&self) -> bool {
        let mut dirs = vec![self.top.join("lib64/stubs"), self.top.join("lib/stubs")];
        if let Ok(targets) = std::fs::read_dir(self.top.join("targets")) {
            dirs.extend(targets.flatten().map(|t| t.path().join("lib/stubs")));
        }
        dirs.iter().any(|d| d.join("libcuda.so").is_file())
    }
}

/// NVSHMEM `version` to build against: as [`Installation::find`] finds it
/// (`NVSHMEM_HOME`, python3's, the per-user cache), else downloaded into the cache.
pub fn nvshmem(version: Version) -> Result<Installation, String> {
    match Installation::find(&Query::default().version(version)) {
        Ok(nv) => Ok(nv),
        Err(FindError::NotFound { .. }) => wheels::nvshmem(version).map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    }
}

/// `name` in a folder of `PATH`.
pub fn on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The five wheels merged into `<cache>/cuda-nvcc-toolkit-13.0` (made once:
/// each wheel is fetched into the cache, then hard-linked into a temporary
/// folder that is renamed into place).
fn toolkit_from_wheels() -> Result<PathBuf, String> {
    let cache = wheels::cache_dir().ok_or("no per-user cache folder (set NVSHMEM_RS_CACHE)")?;
    let dir = cache.join(TOOLKIT_DIR);
    if dir.join("nvidia/cu13/bin/nvcc").is_file() {
        toolkit_layout(&dir)?;
        return Ok(dir);
    }
    println!(
        "no CUDA toolkit here: nvcc from pip wheels, merged into {}",
        dir.display()
    );
    let tmp = cache.join(format!(".partial-{TOOLKIT_DIR}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    for (requirement, what) in TOOLKIT_WHEELS {
        let wheel = wheels::ensure(requirement, what).map_err(|e| e.to_string())?;
        link_tree(&wheel.join("nvidia"), &tmp.join("nvidia"))?;
    }
    toolkit_layout(&tmp)?;
    match std::fs::rename(&tmp, &dir) {
        Ok(()) => Ok(dir),
        // Another run put it there first.
        Err(_) if dir.join("nvidia/cu13/bin/nvcc").is_file() => {
            let _ = std::fs::remove_dir_all(&tmp);
            Ok(dir)
        }
        Err(e) => Err(format!("{} -> {}: {e}", tmp.display(), dir.display())),
    }
}

/// Where the toolkit's tools look for what the wheels put elsewhere: nvlink
/// (`-dlto`) loads `bin/../nvvm/lib64/libnvvm.so`; the nvvm wheel has `lib/libnvvm.so.4`.
fn toolkit_layout(dir: &Path) -> Result<(), String> {
    let lib64 = dir.join("nvidia/cu13/nvvm/lib64");
    let link = lib64.join("libnvvm.so");
    if link.exists() {
        return Ok(());
    }
    std::fs::create_dir_all(&lib64).map_err(|e| format!("{}: {e}", lib64.display()))?;
    match std::os::unix::fs::symlink("../../lib/libnvvm.so.4", &link) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
            Err(format!("{}: {e}", link.display()))
        }
        _ => Ok(()),
    }
}

/// Mirrors `from` into `to`: folders made, files hard-linked (copied where
/// links fail), symbolic links kept.
fn link_tree(from: &Path, to: &Path) -> Result<(), String> {
    let err = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
    std::fs::create_dir_all(to).map_err(|e| err(to, e))?;
    for e in std::fs::read_dir(from).map_err(|e| err(from, e))?.flatten() {
        let (src, dest) = (e.path(), to.join(e.file_name()));
        let kind = e.file_type().map_err(|e| err(&src, e))?;
        if kind.is_dir() {
            link_tree(&src, &dest)?;
        } else if kind.is_symlink() {
            let target = std::fs::read_link(&src).map_err(|e| err(&src, e))?;
            let _ = std::fs::remove_file(&dest);
            std::os::unix::fs::symlink(target, &dest).map_err(|e| err(&dest, e))?;
        } else if !dest.exists() && std::fs::hard_link(&src, &dest).is_err() {
            std::fs::copy(&src, &dest).map_err(|e| err(&src, e))?;
        }
    }
    Ok(())
}

/// The CUDA driver API functions (`cu` + a capital letter) that `objects`
/// leave undefined, from `nm -u`.
fn undefined_driver_symbols(objects: &[PathBuf]) -> Result<BTreeSet<String>, String> {
    let out = Command::new("nm")
        .arg("-u")
        .args(objects)
        .output()
        .map_err(|e| format!("cannot run nm (binutils): {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "nm -u failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(driver_symbols(&String::from_utf8_lossy(&out.stdout)))
}

/// The `cu[A-Z]*` names in `nm -u` output (`                 U cuInit`).
fn driver_symbols(nm: &str) -> BTreeSet<String> {
    nm.lines()
        .filter_map(|l| l.split_whitespace().last())
        .filter(|s| {
            s.strip_prefix("cu")
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_uppercase()))
        })
        .map(|s| s.split('@').next().unwrap_or(s).to_string())
        .collect()
}

/// `dir/libcuda.so`: one empty function per symbol, soname `libcuda.so.1`.
fn write_libcuda_stub(symbols: &BTreeSet<String>, dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let src = dir.join("libcuda-stub.c");
    let mut text = String::from("/* Link-only stand-in for the CUDA driver; never loaded. */\n");
    for s in symbols {
        text += &format!("void {s}(void) {{}}\n");
    }
    std::fs::write(&src, text).map_err(|e| format!("{}: {e}", src.display()))?;
    crate::check(
        Command::new("cc")
            .args(["-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o"])
            .arg(dir.join("libcuda.so"))
            .arg(&src),
    )
}

/// Runs `cmd` after printing it as a shell line; fails with its command line.
pub fn run_shown(cmd: &mut Command) -> Result<(), String> {
    println!("+ {}", shell_line(cmd));
    crate::check(cmd)
}

/// `cmd` as one shell line (arguments with spaces or quotes in single quotes).
pub fn shell_line(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| {
            let a = a.to_string_lossy();
            if a.is_empty() || a.contains([' ', '"', '\'', '$']) {
                format!("'{}'", a.replace('\'', r"'\''"))
            } else {
                a.into_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_symbols_from_nm() {
        let nm = "\nmain.o:\n                 U cuGetErrorString\n                 U cudaFree\n\
                  U cuModuleLoad@libcuda\n                 U curand\n                 U memcpy\n";
        let s: Vec<String> = driver_symbols(nm).into_iter().collect();
        assert_eq!(s, ["cuGetErrorString", "cuModuleLoad"]);
    }

    #[test]
    fn shell_lines_quote_what_needs_it() {
        let mut c = Command::new("nvcc");
        c.args(["-DX=\"a.h\"", "-O2", "a b"]);
        assert_eq!(shell_line(&c), r#"nvcc '-DX="a.h"' -O2 'a b'"#);
    }
}
