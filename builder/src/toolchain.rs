//! The tools a kernel build runs, and where they come from:
//! - the Rust toolchain that compiles kernel crates, pinned to
//!   [`PINNED_TOOLCHAIN`] and installed through rustup when it is missing;
//! - its LLVM tools (`llvm-link`, `opt`, `llc`, ...);
//! - CUDA's `ptxas` and `nvlink` (or nvJitLink), of the CUDA major the
//!   NVSHMEM wheel was built for;
//!
//! and, in this folder, the pip [`wheels`] they and NVSHMEM come from, the
//! `settings` read from the environment, and `libdevice`.

pub(crate) mod jitlink;
pub mod libdevice;
pub(crate) mod settings;
pub mod wheels;

use crate::error::{Error, Result, not_runnable};
use nvshmem_types::{CudaMajor, CudaVersion};
use settings::Progress;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use wheels::NVJITLINK_CU12_WHEEL;

/// The nightly that builds kernel crates: its NVPTX backend and LLVM 22.1
/// read the bitcode of every supported NVSHMEM (3.4: clang 18; 3.8: clang 22).
/// `NVSHMEM_RS_TOOLCHAIN` (or [`Builder::toolchain`](crate::Builder::toolchain)) overrides it.
pub const PINNED_TOOLCHAIN: &str = "nightly-2026-05-20";

/// The components the pipeline needs: `rust-src` for `-Zbuild-std=core`
/// (nvptx64 has no prebuilt `core`), `llvm-tools` for `llvm-link`, `opt`, `llc`.
pub const COMPONENTS: [&str; 2] = ["rust-src", "llvm-tools"];

/// The LLVM tools the pipeline runs, from the `llvm-tools` component.
const LLVM_TOOLS: [&str; 5] = ["llvm-link", "opt", "llc", "llvm-dis", "llvm-ar"];

/// The command that installs `toolchain` with what the builder needs.
///
/// ```
/// assert_eq!(
///     nvshmem_builder::toolchain::install_command("nightly-2026-05-20"),
///     "rustup toolchain install nightly-2026-05-20 --profile minimal -c rust-src -c llvm-tools"
/// );
/// ```
pub fn install_command(toolchain: &str) -> String {
    let components: Vec<String> = COMPONENTS.iter().map(|c| format!("-c {c}")).collect();
    format!(
        "rustup toolchain install {toolchain} --profile minimal {}",
        components.join(" ")
    )
}

/// A nightly Rust toolchain with `rust-src` and `llvm-tools`.
///
/// Its binaries are called by full path, so neither the outer build's
/// toolchain nor a `rust-toolchain.toml` changes which one builds kernels.
#[derive(Clone, Debug)]
pub struct Toolchain {
    /// `rustc --print sysroot`.
    pub sysroot: PathBuf,
    /// `rustc -V`.
    pub rustc_version: String,
    /// The host triple, such as `x86_64-unknown-linux-gnu`.
    pub host: String,
    /// The LLVM version rustc was built with, such as `22.1.4`.
    pub llvm_version: String,
}

impl Toolchain {
    /// The toolchain kernel crates build with: `NVSHMEM_RS_TOOLCHAIN`, else
    /// [`PINNED_TOOLCHAIN`]. When it (or a component) is missing, it is
    /// installed with rustup, with a line on stderr; with
    /// `NVSHMEM_RS_OFFLINE=1`, or without rustup, the error has the command.
    ///
    /// ```no_run
    /// let tc = nvshmem_builder::toolchain::Toolchain::pinned()?;
    /// println!("{} with LLVM {}", tc.rustc_version, tc.llvm_version);
    /// # Ok::<(), nvshmem_builder::Error>(())
    /// ```
    pub fn pinned() -> Result<Self> {
        let name = settings::var("NVSHMEM_RS_TOOLCHAIN").unwrap_or_else(|| PINNED_TOOLCHAIN.into());
        Self::ensure(&name, settings::offline()?, Progress::Stderr)
    }

    /// `name` (a rustup toolchain, or the path of a sysroot), installed
    /// through rustup unless `offline`.
    pub(crate) fn ensure(name: &str, offline: bool, progress: Progress) -> Result<Self> {
        if name.contains('/') {
            // A sysroot given by path: nothing to install, only to check.
            return Self::at(Path::new(name));
        }
        let missing = |why: String| Error::ToolchainMissing {
            toolchain: name.into(),
            why,
            command: install_command(name),
        };
        let Some(rustup) = find_rustup() else {
            return Err(missing(
                "rustup was not found (on PATH, in $CARGO_HOME/bin or ~/.cargo/bin); \
                 without rustup, set NVSHMEM_RS_TOOLCHAIN to the sysroot of a nightly \
                 with rust-src and llvm-tools"
                    .into(),
            ));
        };
        let what_is_missing = match installed_sysroot(&rustup, name) {
            Some(sysroot) => match Self::at(&sysroot) {
                Ok(tc) => return Ok(tc),
                Err(e @ Error::NotNightly { .. }) => return Err(e),
                Err(e) => e.to_string(),
            },
            None => format!("the toolchain {name} is not installed"),
        };
        if offline {
            return Err(missing(format!(
                "{what_is_missing}, and NVSHMEM_RS_OFFLINE=1 forbids installing it"
            )));
        }
        // Two builds at once (two build scripts, or tests) install once.
        let _lock = wheels::lock(&format!("rustup-{name}"))?;
        if let Some(tc) = installed_sysroot(&rustup, name).and_then(|s| Self::at(&s).ok()) {
            return Ok(tc);
        }
        progress.say(&format!(
            "{what_is_missing}: installing it (once): {}",
            install_command(name)
        ));
        let started = std::time::Instant::now();
        let mut cmd = Command::new(&rustup);
        cmd.args(["toolchain", "install", name, "--profile", "minimal"]);
        for c in COMPONENTS {
            cmd.args(["-c", c]);
        }
        let out = cmd
            .env_remove("RUSTUP_TOOLCHAIN")
            .current_dir(std::env::temp_dir())
            .stdin(Stdio::null())
            .output()
            .map_err(not_runnable(&rustup))?;
        if !out.status.success() {
            return Err(missing(format!(
                "{what_is_missing}, and installing it failed:\n{}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        progress.say(&format!(
            "installed {name} in {:.0} s",
            started.elapsed().as_secs_f64()
        ));
        let sysroot = installed_sysroot(&rustup, name)
            .ok_or_else(|| missing("rustup installed it, but cannot find it".into()))?;
        Self::at(&sysroot)
    }

    /// The toolchain whose sysroot is `sysroot`, checked.
    pub fn at(sysroot: &Path) -> Result<Self> {
        let rustc = || Command::new(sysroot.join("bin/rustc"));
        Self::from_rustc(rustc, Some(sysroot.to_path_buf()))
    }

    /// The toolchain that `rustc` resolves to in `dir` (with the outer build's
    /// `RUSTC`/`RUSTUP_TOOLCHAIN` removed, so a `rust-toolchain.toml` there
    /// decides), checked. The builder itself uses [`Toolchain::pinned`].
    ///
    /// ```no_run
    /// let tc = nvshmem_builder::toolchain::Toolchain::detect(".".as_ref())?;
    /// # Ok::<(), nvshmem_builder::Error>(())
    /// ```
    pub fn detect(dir: &Path) -> Result<Self> {
        let rustc = || {
            let mut cmd = Command::new("rustc");
            cmd.current_dir(dir)
                .env_remove("RUSTC")
                .env_remove("RUSTUP_TOOLCHAIN");
            cmd
        };
        Self::from_rustc(rustc, None)
    }

    fn from_rustc(rustc: impl Fn() -> Command, sysroot: Option<PathBuf>) -> Result<Self> {
        let ask = |args: &[&str]| -> Result<String> {
            let mut cmd = rustc();
            let program = PathBuf::from(cmd.get_program());
            let out = cmd.args(args).output().map_err(not_runnable(&program))?;
            if !out.status.success() {
                return Err(Error::ToolFailed {
                    tool: "rustc".into(),
                    command: format!("{} {}", program.display(), args.join(" ")),
                    status: out.status.to_string(),
                    stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
                });
            }
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
        };
        let text = ask(&["-vV"])?;
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| v.trim().to_string())
                .unwrap_or_default()
        };
        let rustc_version = text.lines().next().unwrap_or_default().to_string();
        let release = field("release:");
        if !release.contains("nightly") && !release.contains("dev") {
            return Err(Error::NotNightly {
                found: rustc_version,
                pinned: PINNED_TOOLCHAIN,
            });
        }
        let sysroot = match sysroot {
            Some(s) => s,
            None => PathBuf::from(ask(&["--print", "sysroot"])?),
        };
        let tc = Toolchain {
            sysroot,
            host: field("host:"),
            llvm_version: field("LLVM version:"),
            rustc_version,
        };
        tc.check()?;
        Ok(tc)
    }

    /// Checks that the components the pipeline needs are installed:
    /// `rust-src` (for `-Zbuild-std=core`) and `llvm-tools`.
    ///
    /// ```
    /// use nvshmem_builder::{Error, toolchain::Toolchain};
    /// let bare = Toolchain {
    ///     sysroot: "/nonexistent".into(),
    ///     rustc_version: "rustc 1.97.0-nightly".into(),
    ///     host: "x86_64-unknown-linux-gnu".into(),
    ///     llvm_version: "22.1.4".into(),
    /// };
    /// assert!(matches!(bare.check(), Err(Error::RustSrcMissing { .. })));
    /// ```
    pub fn check(&self) -> Result<()> {
        if !self
            .sysroot
            .join("lib/rustlib/src/rust/library/core/Cargo.toml")
            .exists()
        {
            return Err(Error::RustSrcMissing {
                toolchain: self.name(),
            });
        }
        for tool in LLVM_TOOLS {
            self.llvm_tool(tool)?;
        }
        Ok(())
    }

    /// The toolchain's name as rustup knows it (the sysroot's folder name).
    pub fn name(&self) -> String {
        self.sysroot
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// `cargo` of this toolchain.
    pub fn cargo(&self) -> PathBuf {
        self.sysroot.join("bin/cargo")
    }

    /// `rustc` of this toolchain.
    pub fn rustc(&self) -> PathBuf {
        self.sysroot.join("bin/rustc")
    }

    /// The major version of the LLVM the tools belong to.
    pub fn llvm_major(&self) -> u32 {
        major(&self.llvm_version)
    }

    /// An LLVM tool from the `llvm-tools` component (`llvm-link`, `opt`, `llc`, ...).
    ///
    /// ```no_run
    /// # let tc = nvshmem_builder::toolchain::Toolchain::pinned()?;
    /// let llc = tc.llvm_tool("llc")?;
    /// # Ok::<(), nvshmem_builder::Error>(())
    /// ```
    pub fn llvm_tool(&self, name: &str) -> Result<PathBuf> {
        let dir = self.llvm_bin_dir();
        let path = dir.join(name);
        if path.exists() {
            Ok(path)
        } else {
            Err(Error::LlvmToolsMissing {
                toolchain: self.name(),
                dir,
                tool: name.into(),
            })
        }
    }

    /// The folder of the `llvm-tools` component.
    pub fn llvm_bin_dir(&self) -> PathBuf {
        self.sysroot
            .join("lib/rustlib")
            .join(&self.host)
            .join("bin")
    }
}

fn major(version: &str) -> u32 {
    version
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or(0)
}

/// `rustup`: on `PATH`, else in `$CARGO_HOME/bin`, else `~/.cargo/bin`.
fn find_rustup() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    on_path
        .into_iter()
        .chain(settings::var_os("CARGO_HOME").map(|h| PathBuf::from(h).join("bin")))
        .chain(settings::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo/bin")))
        .map(|d| d.join("rustup"))
        .find(|p| p.is_file())
}

/// The sysroot of an installed rustup toolchain (never installs it).
fn installed_sysroot(rustup: &Path, name: &str) -> Option<PathBuf> {
    let out = Command::new(rustup)
        .args(["which", "rustc", "--toolchain", name])
        .env_remove("RUSTUP_TOOLCHAIN")
        .env("RUSTUP_AUTO_INSTALL", "0")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let rustc = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    Some(rustc.parent()?.parent()?.to_path_buf())
}

/// The LLVM tools, resolved once: the toolchain's, or those of another folder.
pub(crate) struct LlvmTools {
    pub llvm_link: PathBuf,
    pub llvm_dis: PathBuf,
    pub llvm_ar: PathBuf,
    pub opt: PathBuf,
    pub llc: PathBuf,
    /// `llvm-link --version`, such as `22.1.4`.
    pub version: String,
}

impl LlvmTools {
    pub(crate) fn new(tc: &Toolchain, dir: Option<&Path>) -> Result<Self> {
        let find = |name: &str| -> Result<PathBuf> {
            match dir {
                Some(d) if d.join(name).exists() => Ok(d.join(name)),
                Some(d) => Err(Error::LlvmToolsMissing {
                    toolchain: tc.name(),
                    dir: d.to_path_buf(),
                    tool: name.into(),
                }),
                None => tc.llvm_tool(name),
            }
        };
        let llvm_link = find("llvm-link")?;
        // The toolchain's own tools are its LLVM; only another folder's need asking.
        let version = match dir {
            None => tc.llvm_version.clone(),
            Some(_) => {
                let out = Command::new(&llvm_link)
                    .arg("--version")
                    .output()
                    .map_err(not_runnable(&llvm_link))?;
                String::from_utf8_lossy(&out.stdout)
                    .split_whitespace()
                    .skip_while(|w| *w != "version")
                    .nth(1)
                    .unwrap_or(&tc.llvm_version)
                    .to_string()
            }
        };
        Ok(LlvmTools {
            llvm_dis: find("llvm-dis")?,
            llvm_ar: find("llvm-ar")?,
            opt: find("opt")?,
            llc: find("llc")?,
            llvm_link,
            version,
        })
    }

    pub(crate) fn major(&self) -> u32 {
        major(&self.version)
    }
}

/// Runs a tool; on failure returns its stderr in the error, on success its stderr.
/// `llvm-link`'s "Producer: 'LLVM22.1.8'" failures become [`Error::LlvmTooOld`].
pub(crate) fn run(
    tool: &str,
    program: &Path,
    tools_version: &str,
    args: impl FnOnce(&mut Command),
) -> Result<String> {
    run_capturing(tool, program, tools_version, args).map(|(_, stderr)| stderr)
}

/// [`run`], returning the tool's stdout instead: for output that is only
/// read once (a module as text), so it never takes disk space.
pub(crate) fn run_stdout(
    tool: &str,
    program: &Path,
    tools_version: &str,
    args: impl FnOnce(&mut Command),
) -> Result<Vec<u8>> {
    run_capturing(tool, program, tools_version, args).map(|(stdout, _)| stdout)
}

fn run_capturing(
    tool: &str,
    program: &Path,
    tools_version: &str,
    args: impl FnOnce(&mut Command),
) -> Result<(Vec<u8>, String)> {
    let mut cmd = Command::new(program);
    args(&mut cmd);
    let out = cmd.output().map_err(not_runnable(program))?;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if out.status.success() {
        return Ok((out.stdout, stderr));
    }
    if tool == "llvm-link"
        && let Some(producer) = producer_from_error(&stderr)
    {
        let bitcode = cmd.get_args().last().map(PathBuf::from).unwrap_or_default();
        return Err(Error::LlvmTooOld {
            tools: tools_version.into(),
            producer,
            bitcode,
        });
    }
    Err(Error::ToolFailed {
        tool: tool.into(),
        command: format!("{cmd:?}"),
        status: out.status.to_string(),
        stderr,
    })
}

/// "... (Producer: 'LLVM22.1.8' Reader: 'LLVM 14.0.6')" → `22.1.8`.
fn producer_from_error(stderr: &str) -> Option<String> {
    let i = stderr.find("Producer: '")?;
    let rest = &stderr[i + "Producer: '".len()..];
    Some(
        rest.split('\'')
            .next()?
            .trim_start_matches("LLVM")
            .trim()
            .to_string(),
    )
}

/// A CUDA tool (`ptxas`, `nvlink`) inside an unpacked nvcc wheel or `site-packages`
/// (CUDA 13's wheel puts it in `nvidia/cu13/bin`, CUDA 12's in `nvidia/cuda_nvcc/bin`).
fn in_wheel(root: &Path, tool: &str) -> [PathBuf; 2] {
    [
        root.join("nvidia/cu13/bin").join(tool),
        root.join("nvidia/cuda_nvcc/bin").join(tool),
    ]
}

/// `ptxas --version`'s release, such as `12.9`.
///
/// ```no_run
/// let v = nvshmem_builder::toolchain::ptxas_release("/usr/local/cuda/bin/ptxas".as_ref());
/// ```
pub fn ptxas_release(ptxas: &Path) -> Option<CudaVersion> {
    let out = Command::new(ptxas)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let release = text.split("release ").nth(1)?;
    release.split(',').next()?.trim().parse().ok()
}

/// Where `ptxas` for `cuda` is, in order: `PTXAS` (an error if it names no
/// file), the nvcc package of that CUDA major that `python3` has, the
/// per-user cache, then `$CUDA_HOME/bin`, `PATH` and `/usr/local/cuda/bin`,
/// each taken only when its release is of that major. `None` when none has it.
pub(crate) fn find_ptxas(cuda: CudaMajor) -> Result<Option<PathBuf>> {
    if let Some(p) = settings::var_os("PTXAS") {
        return settings::named_file("PTXAS", p.into(), "file").map(Some);
    }
    Ok(cuda_tool_candidates("ptxas", cuda)
        .into_iter()
        .filter(|p| p.is_file())
        .find(|p| ptxas_release(p).is_some_and(|v| v.major == cuda.number())))
}

/// How separate compilation links the objects of `ptxas -c`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum DeviceLinker {
    /// The `nvlink` program.
    Nvlink(PathBuf),
    /// `libnvJitLink.so.12` (CUDA 12 from pip, which has no `nvlink`).
    NvJitLink(PathBuf),
}

impl DeviceLinker {
    pub(crate) fn path(&self) -> &Path {
        match self {
            DeviceLinker::Nvlink(p) | DeviceLinker::NvJitLink(p) => p,
        }
    }
}

/// The device linker: `NVLINK`, else `nvlink` beside `ptxas` (both ship in
/// the CUDA 13 nvcc wheel and in CUDA's `bin/`), else the places `ptxas` is
/// looked for; for CUDA 12 without one, `libnvJitLink.so.12` of the
/// `nvidia-nvjitlink-cu12` package `python3` has or the per-user cache's.
pub(crate) fn find_linker(ptxas: &Path, cuda: CudaMajor) -> Result<Option<DeviceLinker>> {
    if let Some(p) = settings::var_os("NVLINK") {
        return settings::named_file("NVLINK", p.into(), "file")
            .map(|p| Some(DeviceLinker::Nvlink(p)));
    }
    let beside = ptxas.with_file_name("nvlink");
    let nvlink = std::iter::once(beside)
        .chain(cuda_tool_candidates("nvlink", cuda))
        .find(|p| p.is_file());
    if let Some(p) = nvlink {
        return Ok(Some(DeviceLinker::Nvlink(p)));
    }
    Ok(match cuda {
        CudaMajor::Cuda13 => None,
        CudaMajor::Cuda12 => wheels::wheel_roots(NVJITLINK_CU12_WHEEL)
            .into_iter()
            .map(|root| root.join("nvidia/nvjitlink/lib/libnvJitLink.so.12"))
            .find(|p| p.is_file())
            .map(DeviceLinker::NvJitLink),
    })
}

fn cuda_tool_candidates(tool: &str, cuda: CudaMajor) -> Vec<PathBuf> {
    let mut candidates: Vec<PathBuf> = wheels::wheel_roots(cuda.nvcc_wheel())
        .iter()
        .flat_map(|root| in_wheel(root, tool))
        .collect();
    if let Some(home) = settings::var_os("CUDA_HOME") {
        candidates.push(Path::new(&home).join("bin").join(tool));
    }
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path).map(|d| d.join(tool)));
    }
    candidates.push(Path::new("/usr/local/cuda/bin").join(tool));
    candidates
}

/// `ptxas` for `cuda`, from its nvcc wheel (downloaded into the per-user
/// cache) when [`find_ptxas`] finds none; for CUDA 12 also the nvJitLink
/// wheel, its device linker, when no `nvlink` is found.
pub(crate) fn ptxas_or_fetch(
    cuda: CudaMajor,
    offline: bool,
    progress: Progress,
) -> Result<PathBuf> {
    let ptxas = match find_ptxas(cuda)? {
        Some(p) => p,
        None => {
            let wheel = cuda.nvcc_wheel();
            let what = format!("ptxas (CUDA {cuda})");
            let dir = wheels::ensure_with(wheel, &what, offline, progress)?;
            in_wheel(&dir, "ptxas")
                .into_iter()
                .find(|p| p.is_file())
                .ok_or_else(|| Error::Io {
                    path: dir.join("nvidia/cuda_nvcc/bin/ptxas"),
                    source: std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        format!("the {wheel} wheel has no ptxas"),
                    ),
                })?
        }
    };
    if cuda == CudaMajor::Cuda12 && find_linker(&ptxas, cuda)?.is_none() {
        wheels::ensure_with(
            NVJITLINK_CU12_WHEEL,
            "nvJitLink (CUDA 12's device linker)",
            offline,
            progress,
        )?;
    }
    Ok(ptxas)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_producer_from_llvm_errors() {
        let e = "llvm-link: error: Opaque pointers are only supported in -opaque-pointers mode \
                 (Producer: 'LLVM18.1.1' Reader: 'LLVM 14.0.6')";
        assert_eq!(producer_from_error(e).as_deref(), Some("18.1.1"));
        assert_eq!(producer_from_error("other"), None);
    }

    #[test]
    fn the_install_command_names_the_components() {
        let c = install_command(PINNED_TOOLCHAIN);
        assert!(c.contains("-c rust-src -c llvm-tools"), "{c}");
    }
}
