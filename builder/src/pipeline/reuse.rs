//! Reusing the last build's outputs when none of its inputs changed, and
//! writing outputs so that unchanged ones keep their modification time.

use crate::builder::BuildOutput;
use crate::error::{Result, io_err};
use crate::manifest::{MANIFEST_FORMAT, Manifest};
use nvshmem_types::install::Installation;
use std::path::{Path, PathBuf};

/// Everything after `cargo build` is a pure function of what this key
/// describes: the exact rlibs and device libraries (path, size, mtime), the
/// tools, the settings and the builder itself: its version and a hash of its
/// source (`build.rs`), which changes with the builder's code, a git or path
/// dependency's too, and is the same in every program built from it.
pub(crate) struct Key(pub String);

impl Key {
    /// Starts a key with the settings, one `name value` line each.
    pub(crate) fn new(settings: &[(&str, String)]) -> Self {
        let mut key = format!(
            "nvshmem-builder {} {}\n",
            env!("CARGO_PKG_VERSION"),
            env!("NVSHMEM_BUILDER_SOURCE_HASH")
        );
        for (name, value) in settings {
            key += &format!("{name} {value}\n");
        }
        Key(key)
    }

    /// Adds a file's identity.
    pub(crate) fn file(&mut self, path: &Path) -> Result<()> {
        self.0 += &file_identity(path)?;
        Ok(())
    }
}

/// FNV-1a of a path: a stable name for a cache file.
pub(crate) fn stable_hash(path: &Path) -> u64 {
    path.as_os_str()
        .as_encoded_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        })
}

/// `path size mtime`, one line: changes whenever the file is rewritten.
pub(crate) fn file_identity(path: &Path) -> Result<String> {
    let m = std::fs::metadata(path).map_err(io_err(path))?;
    Ok(format!(
        "{} {} {:?}\n",
        path.display(),
        m.len(),
        m.modified().ok()
    ))
}

/// The file in `work` that records the key of the last build into `out_dir`.
/// One per output folder: builds of the same crate into two folders (the
/// root build and the builder tests) share the work folder, and one shared
/// key would make each undo the other's reuse.
pub(crate) fn key_path(work: &Path, out_dir: &Path) -> PathBuf {
    work.join(format!("inputs-{:016x}.key", stable_hash(out_dir)))
}

/// The identity of every file a build wrote to `out_dir`, so that a reuse
/// notices outputs deleted or edited since.
fn outputs_identity(out_dir: &Path, manifest: &Manifest) -> Result<String> {
    let mut s = String::from("outputs\n");
    for f in output_files(out_dir, manifest) {
        s += &file_identity(&f)?;
    }
    Ok(s)
}

/// Records that `out_dir`'s outputs came from the inputs `key`.
pub(crate) fn record(
    key_path: &Path,
    key: &Key,
    out_dir: &Path,
    manifest: &Manifest,
) -> Result<()> {
    let outputs = outputs_identity(out_dir, manifest)?;
    std::fs::write(key_path, format!("{}{outputs}", key.0)).map_err(io_err(key_path))
}

/// Where a build would put its outputs, and the key of its inputs: what
/// decides whether an earlier build's outputs can serve.
pub(crate) struct Reuse<'a> {
    /// The crate's work folder (the stash).
    pub work: &'a Path,
    /// The key file of `out_dir` ([`key_path`]).
    pub key_path: &'a Path,
    pub key: &'a Key,
    pub out_dir: &'a Path,
    pub crate_name: &'a str,
    pub nv: &'a Installation,
}

impl Reuse<'_> {
    /// The outputs of an earlier build with exactly this key: the last one
    /// into `out_dir`, else the stashed one (copied into `out_dir`).
    pub(crate) fn output(&self) -> Option<BuildOutput> {
        self.recorded().or_else(|| {
            self.restore_stash()?;
            self.recorded()
        })
    }

    /// The last build's outputs, if its inputs were exactly `key` and its
    /// outputs are still as it wrote them.
    fn recorded(&self) -> Option<BuildOutput> {
        let stored = std::fs::read_to_string(self.key_path).ok()?;
        let outputs = stored.strip_prefix(self.key.0.as_str())?;
        let manifest_path = self.out_dir.join(format!("{}.json", self.crate_name));
        let manifest = read_manifest(&manifest_path)?;
        if manifest.format != MANIFEST_FORMAT
            || outputs_identity(self.out_dir, &manifest).ok()? != outputs
        {
            return None;
        }
        Some(BuildOutput {
            ptx: self.out_dir.join(&manifest.ptx),
            cubin: manifest.cubin.as_ref().map(|c| self.out_dir.join(c)),
            manifest_path,
            header: self.out_dir.join(format!("{}.h", self.crate_name)),
            // Written by the caller: they name the output folder.
            bindings: PathBuf::new(),
            cuda_include: None,
            manifest,
            nvshmem: self.nv.clone(),
            sources: Vec::new(),
            timings: Vec::new(),
        })
    }

    /// Copies the stashed outputs of a build with exactly `key` into
    /// `out_dir` and records them there, as a build would.
    fn restore_stash(&self) -> Option<()> {
        if std::fs::read_to_string(self.work.join("stash.key")).ok()? != self.key.0 {
            return None;
        }
        let dir = self.work.join("stash");
        let manifest = read_manifest(&dir.join(format!("{}.json", self.crate_name)))?;
        std::fs::create_dir_all(self.out_dir).ok()?;
        for f in output_files(&dir, &manifest) {
            let bytes = std::fs::read(&f).ok()?;
            write_if_changed(&self.out_dir.join(f.file_name()?), &bytes).ok()?;
        }
        record(self.key_path, self.key, self.out_dir, &manifest).ok()
    }
}

/// A manifest file, if it can be read.
fn read_manifest(path: &Path) -> Option<Manifest> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// The files of a build in `out_dir`: PTX, manifest, header, and the cubin.
fn output_files(out_dir: &Path, manifest: &Manifest) -> Vec<PathBuf> {
    let name = &manifest.crate_name;
    let mut files = vec![
        out_dir.join(format!("{name}.ptx")),
        out_dir.join(format!("{name}.json")),
        out_dir.join(format!("{name}.h")),
    ];
    files.extend(manifest.cubin.as_ref().map(|c| out_dir.join(c)));
    files
}

/// Keeps a copy of a build's outputs in the work folder with its key, so that
/// a build of the same inputs into another output folder (a `cargo clippy`
/// or `cargo doc` run, whose build scripts have other `OUT_DIR`s) copies them
/// instead of running link, opt, llc and ptxas again.
pub(crate) fn stash(work: &Path, key: &Key, out_dir: &Path, manifest: &Manifest) -> Result<()> {
    let dir = work.join("stash");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
    for f in output_files(out_dir, manifest) {
        let to = dir.join(f.file_name().expect("a file name"));
        std::fs::copy(&f, &to).map_err(io_err(&to))?;
    }
    let key_file = work.join("stash.key");
    std::fs::write(&key_file, &key.0).map_err(io_err(&key_file))
}

/// Writes only when the contents differ, so dependents don't rebuild needlessly.
pub(crate) fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<()> {
    if std::fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(());
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes).map_err(io_err(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io_err(path))
}
