//! The device crate's `extern "C"` declarations against NVSHMEM's device bitcode.
//!
//! 1. Builds the crate for nvptx64 with the internal `abi-probe` feature, which
//!    references every declared function from a `#[used]` static, and reads the
//!    `declare` lines of `--emit=llvm-ir`: the LLVM types rustc lowers the
//!    declarations to.
//! 2. Compares them with the `define` lines of `llvm-dis` of NVSHMEM's bitcode
//!    (every supported version for CUDA 12 and 13 that is installed, its sm_90
//!    file where it has per-arch files, with the version's feature:
//!    `nvshmem-3-5`, `-3-7`, `-3-8`).
//!    Attributes and value names are ignored; the types must be equal.
//! 3. Checks the whole API: every function the bitcode exports (every
//!    `nvshmem*` `define`) and every name the headers' type lists generate is
//!    declared or in the one gap table, in `src/ffi/mod.rs`'s docs (parsed
//!    here: [`gaps::documented_gaps`]), and every gap is real: absent from the
//!    bitcode, returning a struct by value, or (`omitted`) exported but left
//!    out on purpose.
//!
//! By default the versions `nvshmem-build setup` fetches (CI's set);
//! `NVSHMEM_RS_ABI_ALL=1` every supported version in the per-user cache.
//!
//! [`device_state`] checks what `ptr`'s peer lookup assumes of the device
//! state in every per-arch bitcode file of each of those versions.
//!
//! Also checks the type lists and the `Cmp`/`SignalOp`/`Team` values against the
//! headers. Without NVSHMEM it prints `SKIPPED: ...`;
//! `NVSHMEM_RS_REQUIRE_ALL=1` turns that into a failure.

use nvshmem_builder::install::Installation as Nvshmem;
use nvshmem_builder::install::{Installation, Query};
use nvshmem_builder::toolchain::Toolchain;
use nvshmem_builder::{CudaMajor, SUPPORTED_VERSIONS, Version};
use std::path::Path;
use std::sync::OnceLock;

const ARCH: &str = "sm_90";

/// Every NVSHMEM bitcode to check: each supported version for each CUDA major.
fn bitcodes() -> Vec<(Version, CudaMajor)> {
    SUPPORTED_VERSIONS
        .iter()
        .flat_map(|i| i.cuda.iter().map(move |c| (i.version, *c)))
        .collect()
}

// ---------------------------------------------------------------------------
// Environment: NVSHMEM, toolchain, skips.

fn device_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Prints to the real stderr, past the test harness's capture, so skips and
/// summaries show in every `cargo test` log.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// Reports a skip loudly; a failure under `NVSHMEM_RS_REQUIRE_ALL=1`.
fn skip(what: &str, reason: &str) {
    nvshmem_builder::testing::skip(&format!("{what}: {reason}"));
}

/// Set to 1 to check every supported version's bitcode that is in the
/// per-user cache (`nvshmem-build setup --all`), not only CI's set.
const ALL_VERSIONS: &str = "NVSHMEM_RS_ABI_ALL";

/// NVSHMEM `version` for `cuda`. The wheels `nvshmem-build setup` fetches
/// by default (CI's set, `wheels::SETUP_DEFAULT`) are found or downloaded,
/// and their absence is a skip (a failure under `NVSHMEM_RS_REQUIRE_ALL=1`);
/// the others are checked with `NVSHMEM_RS_ABI_ALL=1` when they are in the
/// cache, and otherwise reported as not checked, never downloaded here.
fn find_nvshmem(version: Version, cuda: CudaMajor) -> Option<Nvshmem> {
    let what = format!("ABI check against NVSHMEM {version} (CUDA {cuda})");
    if std::env::var_os(ALL_VERSIONS).is_none_or(|v| v != "1")
        && !nvshmem_builder::wheels::SETUP_DEFAULT.contains(&(version, cuda))
    {
        say!("SKIPPED: {what}: outside CI's set ({ALL_VERSIONS}=1 checks every fetched version)");
        return None;
    }
    if nvshmem_builder::wheels::SETUP_DEFAULT.contains(&(version, cuda)) {
        return match nvshmem_builder::wheels::nvshmem_for(version, cuda) {
            Ok(nv) => Some(nv),
            Err(e) => {
                skip(&what, &format!("not found ({e})"));
                None
            }
        };
    }
    let query = Query::default().ignore_env().version(version).cuda(cuda);
    match Installation::find(&query) {
        Ok(nv) => Some(nv),
        Err(_) => {
            say!(
                "SKIPPED: {what}: not fetched (outside CI's set; `nvshmem-build setup --all \
                 --cuda-major {cuda}` fetches it)"
            );
            None
        }
    }
}

fn toolchain() -> &'static Toolchain {
    static TC: OnceLock<Toolchain> = OnceLock::new();
    TC.get_or_init(|| {
        Toolchain::pinned()
            .unwrap_or_else(|e| panic!("the pinned nightly toolchain is required: {e}"))
    })
}

/// Runs `check` against every NVSHMEM bitcode that is installed (see
/// [`find_nvshmem`]), with a label such as `3.3.20 (CUDA 12)`.
fn for_each_version(what: &str, mut check: impl FnMut(&str, &Nvshmem)) {
    let mut ran = 0;
    for (version, cuda) in bitcodes() {
        if let Some(nv) = find_nvshmem(version, cuda) {
            check(&format!("{version} (CUDA {cuda})"), &nv);
            ran += 1;
        }
    }
    if ran == 0 {
        say!("SKIPPED: no NVSHMEM installation found; {what} not checked");
    }
}

// The modules come after `say!`, which they use.
mod bitcode;
mod constants;
mod declarations;
mod device_state;
mod gaps;
mod headers;
mod lists;
