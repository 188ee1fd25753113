//! The link step: the kernel crate's bitcode, then `--only-needed` its
//! dependencies' (core included) and the device libraries (NVSHMEM's
//! `libnvshmem_device*.bc`, and any other a later step adds), into one
//! LLVM module.

use super::{ir, reuse};
use crate::error::{Error, Result, io_err};
use crate::toolchain::{LlvmTools, run, run_stdout};
use std::path::{Path, PathBuf};

/// Links `rlibs` (the kernel crate's last) with `libraries` in `work`;
/// returns the linked module as text.
pub(crate) fn link(
    tools: &LlvmTools,
    rlibs: &[PathBuf],
    libraries: &[PathBuf],
    work: &Path,
) -> Result<String> {
    let v = tools.version.as_str();
    for lib in libraries {
        check_producer(lib, tools, work)?;
    }
    let (kernel_objs, dep_objs) = extract_bitcode(tools, rlibs, &work.join("objects"))?;
    let kernel_bc = work.join("kernel.bc");
    run("llvm-link", &tools.llvm_link, v, |c| {
        c.args(&kernel_objs).arg("-o").arg(&kernel_bc);
    })?;
    let deps_bc = link_deps_cached(tools, &dep_objs, &work.join("deps.bc"))?;
    let needed = std::iter::once(deps_bc.as_path()).chain(libraries.iter().map(AsRef::as_ref));
    link_needed(tools, &kernel_bc, needed, &work.join("linked.bc"))
}

/// Links one more library `--only-needed` into the module [`link`] made in
/// `work` (`linked.bc`); returns the new module as text.
pub(crate) fn link_more(tools: &LlvmTools, work: &Path, library: &Path) -> Result<String> {
    check_producer(library, tools, work)?;
    let (linked, more) = (work.join("linked.bc"), work.join("linked-more.bc"));
    link_needed(tools, &linked, [library], &more)
}

/// `llvm-link base --only-needed needed... -o out` (a `.bc`); returns the
/// result as text (`llvm-dis` to stdout: the text is 10 times the bitcode's
/// size, up to 250 MB, and is read once).
fn link_needed<'a>(
    tools: &LlvmTools,
    base: &Path,
    needed: impl IntoIterator<Item = &'a Path>,
    out: &Path,
) -> Result<String> {
    let v = tools.version.as_str();
    run("llvm-link", &tools.llvm_link, v, |c| {
        c.arg(base)
            .arg("--only-needed")
            .args(needed)
            .arg("-o")
            .arg(out);
    })?;
    let text = run_stdout("llvm-dis", &tools.llvm_dis, v, |c| {
        c.arg(out).arg("-o").arg("-");
    })?;
    String::from_utf8(text)
        .map_err(|e| io_err(out)(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))
}

/// Extracts the bitcode objects of each rlib (cached by the rlib's identity).
/// Returns (the kernel crate's objects, every dependency's objects).
fn extract_bitcode(
    tools: &LlvmTools,
    rlibs: &[PathBuf],
    cache: &Path,
) -> Result<(Vec<PathBuf>, Vec<PathBuf>)> {
    let mut per_rlib = Vec::new();
    for rlib in rlibs {
        let stem = rlib
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let dir = cache.join(&stem);
        // The stamp names the exact rlib extracted: the top-level crate's rlib
        // has no hash in its name, and is rebuilt with other features for
        // another NVSHMEM version, so "older than the stamp" is not enough.
        let stamp = dir.join(".extracted");
        let identity = reuse::file_identity(rlib)?;
        let fresh = std::fs::read_to_string(&stamp).is_ok_and(|s| s == identity);
        if !fresh {
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
            run("llvm-ar", &tools.llvm_ar, &tools.version, |c| {
                c.current_dir(&dir).arg("x").arg(rlib);
            })?;
            // Only the bitcode is read: the rest (`lib.rmeta`, 40 MB for
            // core) would be most of the build's disk use.
            for entry in std::fs::read_dir(&dir).map_err(io_err(&dir))?.flatten() {
                if !is_bitcode(&entry.path()) {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
            std::fs::write(&stamp, identity).map_err(io_err(&stamp))?;
        }
        let mut objs: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map_err(io_err(&dir))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| is_bitcode(p))
            .collect();
        objs.sort();
        per_rlib.push(objs);
    }
    let kernel = per_rlib.pop().unwrap_or_default();
    Ok((kernel, per_rlib.into_iter().flatten().collect()))
}

fn is_bitcode(p: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(p)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && magic == *b"BC\xC0\xDE"
}

fn mtime(p: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

/// Links every dependency object into one module, reusing it while no input changed.
/// One module lets `--only-needed` pull in the whole closure of what the kernels use.
fn link_deps_cached(tools: &LlvmTools, objs: &[PathBuf], out: &Path) -> Result<PathBuf> {
    let list = out.with_extension("inputs");
    let listing: String = objs.iter().map(|o| format!("{}\n", o.display())).collect();
    let fresh = mtime(out).is_some_and(|t| objs.iter().all(|o| mtime(o).is_some_and(|m| m <= t)))
        && std::fs::read_to_string(&list).is_ok_and(|l| l == listing);
    if !fresh {
        run("llvm-link", &tools.llvm_link, &tools.version, |c| {
            c.args(objs).arg("-o").arg(out);
        })?;
        std::fs::write(&list, listing).map_err(io_err(&list))?;
    }
    Ok(out.to_path_buf())
}

/// Fails early, with the fix, when the tools' LLVM is older than the one
/// that wrote a library's bitcode. The answer is kept in `work` per library
/// file and tools version: the scan reads the whole file (30-50 MB).
fn check_producer(bitcode: &Path, tools: &LlvmTools, work: &Path) -> Result<()> {
    let identity = format!("{}{}\n", reuse::file_identity(bitcode)?, tools.version);
    let stamp = work.join(format!("producer-ok-{:016x}", reuse::stable_hash(bitcode)));
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s == identity) {
        return Ok(());
    }
    let bytes = std::fs::read(bitcode).map_err(io_err(bitcode))?;
    if let Some((major, producer)) = ir::bitcode_producer_major(&bytes)
        && major > tools.major()
    {
        return Err(Error::LlvmTooOld {
            tools: tools.version.clone(),
            producer: format!("clang {producer}"),
            bitcode: bitcode.into(),
        });
    }
    std::fs::write(&stamp, identity).map_err(io_err(&stamp))
}
