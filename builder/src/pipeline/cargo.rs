//! The nested `cargo` of the kernel crate: its metadata, the checks on it,
//! and its nvptx64 build with the pinned toolchain.

use crate::error::{Error, Result};
use crate::toolchain::Toolchain;
use crate::toolchain::settings::Progress;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub(crate) const TARGET: &str = "nvptx64-nvidia-cuda";

/// Crate attributes the builder adds to the kernel crate's root when it
/// lacks them (`-Zcrate-attr`), so a kernel crate need not write them:
/// (what the root is searched for, the attribute).
const SUPPLIED_ATTRS: [(&str, &str); 2] = [("abi_ptx", "feature(abi_ptx)"), ("no_std", "no_std")];

/// What `cargo metadata` says about the kernel crate.
pub(crate) struct CrateMeta {
    pub name: String,
    pub manifest_path: PathBuf,
    /// Its library target's name (`-` replaced by `_`).
    pub lib_name: String,
    /// Its library target's root file (`src/lib.rs`).
    pub lib_root: PathBuf,
    pub depends_on_device: bool,
}

impl CrateMeta {
    /// Reads and checks the kernel crate's metadata: its own workspace, a library.
    pub(crate) fn read(tc: &Toolchain, crate_dir: &Path) -> Result<Self> {
        let crate_dir = &std::fs::canonicalize(crate_dir).unwrap_or_else(|_| crate_dir.into());
        let manifest = crate_dir.join("Cargo.toml");
        let mut mc = cargo_metadata::MetadataCommand::new();
        mc.cargo_path(tc.cargo())
            .manifest_path(&manifest)
            .current_dir(crate_dir)
            .no_deps();
        let run = |offline: bool| -> Result<std::process::Output> {
            let mut cmd = mc.cargo_command();
            filter_env(&mut cmd, tc);
            if offline {
                cmd.arg("--offline");
            }
            cmd.output().map_err(|source| Error::ToolNotRunnable {
                program: tc.cargo(),
                source,
            })
        };
        let mut out = run(true)?;
        if !out.status.success() {
            // --offline fails before a first fetch; retry online.
            out = run(false)?;
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            if let Some(ws) = claimed_by_workspace(&stderr) {
                return Err(Error::KernelCrateInWorkspace {
                    crate_dir: crate_dir.into(),
                    workspace: ws,
                });
            }
            return Err(Error::CompileFailed {
                crate_name: crate_dir.display().to_string(),
                diagnostics: format!("{stderr}{}", hints(&stderr)),
            });
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        let json = stdout.lines().find(|l| l.starts_with('{')).unwrap_or("");
        let meta = cargo_metadata::MetadataCommand::parse(json).map_err(|e| Error::ToolFailed {
            tool: "cargo metadata".into(),
            command: format!("{:?}", mc.cargo_command()),
            status: "unparsable output".into(),
            stderr: e.to_string(),
        })?;
        let want = std::fs::canonicalize(&manifest).unwrap_or(manifest);
        let pkg = meta
            .packages
            .iter()
            .find(|p| p.manifest_path.as_std_path() == want)
            .ok_or_else(|| Error::KernelCrateNotFound {
                path: crate_dir.into(),
            })?;
        let lib = pkg
            .targets
            .iter()
            .find(|t| {
                t.is_lib() || t.is_rlib() || t.is_cdylib() || t.is_dylib() || t.is_staticlib()
            })
            .ok_or_else(|| Error::NoLibTarget {
                crate_name: pkg.name.to_string(),
            })?;
        let depends_on_device = pkg.dependencies.iter().any(|d| {
            d.name == "nvshmem-device" && d.kind == cargo_metadata::DependencyKind::Normal
        });
        // The old place of launch bounds: refused rather than ignored, so a
        // crate that still has it does not silently lose its `.maxntid`.
        if let Some(bounds) = pkg.metadata["nvshmem"]["max-threads"].as_object() {
            return Err(Error::MaxThreadsInMetadata {
                crate_name: pkg.name.to_string(),
                kernels: bounds
                    .iter()
                    .map(|(k, v)| format!("#[kernel(max_threads = {v})] on `{k}`"))
                    .collect(),
            });
        }
        let root = want.parent().unwrap_or(crate_dir);
        let meta_out = CrateMeta {
            name: pkg.name.to_string(),
            manifest_path: want.clone(),
            lib_name: lib.name.replace('-', "_"),
            lib_root: lib.src_path.clone().into_std_path_buf(),
            depends_on_device,
        };
        // A member of an outer workspace is also built for the host by that
        // workspace's `cargo build`: fine for `#[kernel]` functions, not for
        // hand-written `extern "ptx-kernel"` ones.
        if meta.workspace_root.as_std_path() != root {
            let raw = super::signature::read(&meta_out.src_dir()).raw_ptx_kernels;
            if !raw.is_empty() {
                return Err(Error::RawKernelsInWorkspace {
                    crate_dir: crate_dir.into(),
                    workspace: meta.workspace_root.clone().into_std_path_buf(),
                    raw_kernels: raw,
                });
            }
        }
        Ok(meta_out)
    }

    /// The folder of the library's sources (where kernel signatures are read).
    pub(crate) fn src_dir(&self) -> PathBuf {
        self.lib_root
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default()
    }

    /// The `-Zcrate-attr` flags for the attributes the crate root lacks.
    fn supplied_attrs(&self) -> Vec<String> {
        let Ok(text) = std::fs::read_to_string(&self.lib_root) else {
            return Vec::new();
        };
        missing_crate_attrs(&text)
    }
}

/// The `-Zcrate-attr` flags for the [`SUPPLIED_ATTRS`] that a crate root's
/// inner attributes lack. Doc comments (`//!`, which are `#![doc = ..]`) do
/// not count: one that says "a no_std crate" must not hide a missing
/// `#![no_std]`.
fn missing_crate_attrs(root_source: &str) -> Vec<String> {
    let Ok(file) = syn::parse_file(root_source) else {
        // rustc will say what is wrong with it.
        return Vec::new();
    };
    let inner: Vec<String> = file
        .attrs
        .iter()
        .filter(|a| matches!(a.style, syn::AttrStyle::Inner(_)) && !a.path().is_ident("doc"))
        .map(|a| quote::ToTokens::to_token_stream(&a.meta).to_string())
        .collect();
    SUPPLIED_ATTRS
        .iter()
        .filter(|(word, _)| !inner.iter().any(|a| a.contains(word)))
        .map(|(_, attr)| format!("-Zcrate-attr={attr}"))
        .collect()
}

/// "current package believes it's in a workspace when it's not: ... workspace: /x/Cargo.toml".
fn claimed_by_workspace(stderr: &str) -> Option<PathBuf> {
    if !stderr.contains("believes it's in a workspace") {
        return None;
    }
    let line = stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix("workspace:"))?;
    let manifest = PathBuf::from(line.trim());
    Some(manifest.parent().map(Path::to_path_buf).unwrap_or(manifest))
}

/// Removes the outer build's environment from a nested cargo command, as
/// rust-gpu's spirv-builder does: its RUSTFLAGS, wrappers, target, toolchain
/// choice, jobserver and build-script variables would otherwise leak into
/// the nvptx64 build. Keeps cargo's home, network and registry settings.
fn filter_env(cmd: &mut Command, tc: &Toolchain) {
    for (key, _) in std::env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        let keep = matches!(key, "CARGO_HOME" | "CARGO_TERM_COLOR")
            || key.starts_with("CARGO_NET_")
            || key.starts_with("CARGO_HTTP_")
            || key.starts_with("CARGO_REGISTRIES_")
            || key.starts_with("CARGO_REGISTRY_");
        let drop = (key.starts_with("CARGO") && !keep)
            || key.starts_with("RUSTC")
            || key.starts_with("RUSTDOC")
            || key.starts_with("DEP_")
            || matches!(
                key,
                "RUSTFLAGS"
                    | "RUSTUP_TOOLCHAIN"
                    | "MAKEFLAGS"
                    | "MFLAGS"
                    | "TARGET"
                    | "HOST"
                    | "OUT_DIR"
                    | "PROFILE"
                    | "OPT_LEVEL"
                    | "DEBUG"
                    | "NUM_JOBS"
            );
        if drop {
            cmd.env_remove(key);
        }
    }
    cmd.env("RUSTC", tc.rustc());
}

/// Builds the crate for nvptx64; returns every rlib, the kernel crate's last.
/// Its warnings go to `progress`; its errors into [`Error::CompileFailed`],
/// with the fix where the builder knows it.
pub(crate) fn build(
    tc: &Toolchain,
    target_dir: &Path,
    meta: &CrateMeta,
    features: &[String],
    progress: Progress,
) -> Result<Vec<PathBuf>> {
    let mut cmd = Command::new(tc.cargo());
    filter_env(&mut cmd, tc);
    cmd.current_dir(meta.src_dir())
        .args(["rustc", "--lib", "--release", "--target", TARGET])
        .args(["-Zbuild-std=core", "--message-format=json"])
        // Whatever crate-type the crate asks for, the builder needs its rlib.
        .args(["--crate-type", "rlib"])
        .arg("--manifest-path")
        .arg(&meta.manifest_path)
        .arg("--target-dir")
        .arg(target_dir)
        // nvptx64 only aborts; this makes a crate's own `panic = "unwind"` harmless.
        .env("CARGO_PROFILE_RELEASE_PANIC", "abort")
        // No debug info in kernels, whatever the profile of a workspace the
        // kernel crate is a member of says (it would change the PTX).
        .env("CARGO_PROFILE_RELEASE_DEBUG", "false")
        .env("CARGO_TERM_COLOR", "never")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if !features.is_empty() {
        cmd.arg("--features").arg(features.join(","));
    }
    cmd.arg("--").args(meta.supplied_attrs());
    let out = cmd.output().map_err(|source| Error::ToolNotRunnable {
        program: tc.cargo(),
        source,
    })?;
    let mut rlibs = Vec::new();
    let mut kernel_rlib = None;
    let (mut errors, mut warnings) = (Vec::new(), Vec::new());
    for msg in cargo_metadata::Message::parse_stream(out.stdout.as_slice()).flatten() {
        match msg {
            cargo_metadata::Message::CompilerArtifact(a) => {
                let is_kernel = a.manifest_path.as_std_path() == meta.manifest_path;
                for f in a.filenames.iter().filter(|f| f.as_str().ends_with(".rlib")) {
                    if is_kernel {
                        kernel_rlib = Some(f.clone().into_std_path_buf());
                    } else {
                        rlibs.push(f.clone().into_std_path_buf());
                    }
                }
            }
            cargo_metadata::Message::CompilerMessage(m) => {
                let rendered = m.message.rendered.clone().unwrap_or_default();
                match m.message.level {
                    cargo_metadata::diagnostic::DiagnosticLevel::Error
                    | cargo_metadata::diagnostic::DiagnosticLevel::Ice => errors.push(rendered),
                    cargo_metadata::diagnostic::DiagnosticLevel::Warning
                        if m.target.src_path.as_std_path() == meta.lib_root =>
                    {
                        warnings.push(rendered)
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    for w in &warnings {
        let lines: Vec<String> = w
            .trim_end()
            .lines()
            .map(|line| format!("{}: {line}", meta.name))
            .collect();
        progress.warn(&lines.join("\n"));
    }
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let cargo_says = stderr.lines().filter(|l| {
            let t = l.trim_start();
            ![
                "Compiling ",
                "Updating ",
                "Downloaded ",
                "Downloading ",
                "Locking ",
                "Adding ",
                "Blocking ",
            ]
            .iter()
            .any(|s| t.starts_with(s))
        });
        let mut diagnostics: Vec<String> = errors;
        diagnostics.extend(cargo_says.map(str::to_string));
        let mut text = diagnostics.join("\n");
        text += &hints(&text);
        return Err(Error::CompileFailed {
            crate_name: meta.name.clone(),
            diagnostics: text,
        });
    }
    let kernel_rlib = kernel_rlib.ok_or_else(|| Error::NoLibTarget {
        crate_name: meta.name.clone(),
    })?;
    rlibs.push(kernel_rlib);
    Ok(rlibs)
}

/// The fix for compile errors the builder recognizes.
fn hints(diagnostics: &str) -> String {
    let mut out = String::new();
    if diagnostics.contains("#[panic_handler]` function required") {
        out += "\nFix: add `nvshmem_device::panic_handler!();` to the kernel crate (or your own \
                `#[panic_handler]` that calls `core::arch::nvptx::trap()`)";
    }
    if diagnostics.contains("no matching package named `nvshmem-") {
        out += "\nFix: the nvshmem-rs crates are not on crates.io yet: add the \
                [patch.crates-io] block of template/README.md (in the nvshmem-rs checkout) to \
                the kernel crate's Cargo.toml, with the checkout's path";
    }
    if diagnostics.contains("can't find crate for `std`") {
        out += "\nFix: the kernel crate and every dependency it has must be `#![no_std]` \
                (the builder adds it to the kernel crate itself)";
    }
    out
}

/// The source files cargo recorded for the kernel crate (its own and its path
/// dependencies'), outside the toolchain's sysroot.
pub(crate) fn dep_info_sources(
    target_dir: &Path,
    meta: &CrateMeta,
    tc: &Toolchain,
) -> Vec<PathBuf> {
    let d = target_dir
        .join(TARGET)
        .join("release")
        .join(format!("lib{}.d", meta.lib_name));
    let Ok(text) = std::fs::read_to_string(&d) else {
        return Vec::new();
    };
    let Some((_, deps)) = text.split_once(": ") else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = deps
        .split_whitespace()
        .map(PathBuf::from)
        .filter(|p| !p.starts_with(&tc.sysroot) && !p.starts_with(target_dir))
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unpublished_crates_name_the_patch_block() {
        let e = "error: no matching package named `nvshmem-device` found\nlocation searched: crates.io index";
        assert!(hints(e).contains("[patch.crates-io] block of template/README.md"));
        assert_eq!(hints("error: something else"), "");
    }

    #[test]
    fn reads_the_workspace_that_claims_a_crate() {
        let e = "error: current package believes it's in a workspace when it's not:\n\
                 current:   /w/kern/Cargo.toml\nworkspace: /w/Cargo.toml\n\nthis may be fixable";
        assert_eq!(claimed_by_workspace(e), Some(PathBuf::from("/w")));
        assert_eq!(claimed_by_workspace("error: other"), None);
    }

    #[test]
    fn a_doc_comment_does_not_count_as_the_attribute() {
        let flags = |src: &str| missing_crate_attrs(src).join(" ");
        // The template's own first line says "no_std".
        let doc_only = "//! A `no_std` crate of kernels (abi_ptx is supplied).\nfn f() {}";
        assert_eq!(
            flags(doc_only),
            "-Zcrate-attr=feature(abi_ptx) -Zcrate-attr=no_std"
        );
        let both = "//! Kernels.\n#![no_std]\n#![feature(abi_ptx, asm_experimental_arch)]\n";
        assert_eq!(flags(both), "");
        let cfg = "#![cfg_attr(target_arch = \"nvptx64\", no_std)]\n";
        assert_eq!(flags(cfg), "-Zcrate-attr=feature(abi_ptx)");
    }

    #[test]
    fn knows_the_fix_for_a_missing_panic_handler() {
        let h = hints("error: `#[panic_handler]` function required, but not found");
        assert!(h.contains("panic_handler!"), "{h}");
        assert!(hints("error[E0308]: mismatched types").is_empty());
    }
}
