//! Hashes the builder's own source into `NVSHMEM_BUILDER_SOURCE_HASH`: part
//! of the key that decides whether an earlier kernel build can be reused
//! (`src/reuse.rs`), so that a changed builder of the same version (a git or
//! path dependency) does not reuse an older builder's outputs, while every
//! program built from the same source (build scripts, `nvshmem-build`, tests)
//! still shares them.

use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn main() {
    println!("cargo:rerun-if-changed=src");
    let mut all = Vec::new();
    files(Path::new("src"), &mut all);
    all.sort();
    // FNV-1a over every file's path and contents.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for path in &all {
        let contents = std::fs::read(path).unwrap_or_default();
        for &b in path
            .to_string_lossy()
            .as_bytes()
            .iter()
            .chain(&[0])
            .chain(&contents)
        {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    println!("cargo:rustc-env=NVSHMEM_BUILDER_SOURCE_HASH={hash:016x}");
}
