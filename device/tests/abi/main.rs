//! The device crate's `extern "C"` declarations against NVSHMEM's device bitcode.
//!
//! 1. Builds the crate for nvptx64 with the internal `abi-probe` feature, which
//!    references every declared function from a `#[used]` static, and reads the
//!    `declare` lines of `--emit=llvm-ir`: the LLVM types rustc lowers the
//!    declarations to.
//! 2. Compares them with the `define` lines of `llvm-dis` of NVSHMEM's bitcode
//!    (3.4.5 with default features, 3.8.0's sm_90 file with `nvshmem-3-8`).
//!    Attributes and value names are ignored; the types must be equal.
//! 3. Checks the whole API: every function the bitcode exports (every
//!    `nvshmem*` `define`) and every name the headers' type lists generate is
//!    declared or in the one gap table, in `src/ffi/mod.rs`'s docs (parsed
//!    here: [`gaps::documented_gaps`]), and every gap is real: absent from the
//!    bitcode, returning a struct by value, or (`omitted`) exported but left
//!    out on purpose.
//!
//! Also checks the type lists and the `Cmp`/`SignalOp`/`Team` values against the
//! headers. Without NVSHMEM it prints `SKIPPED: ...`;
//! `NVSHMEM_RS_REQUIRE_ALL=1` turns that into a failure.

use nvshmem_builder::Version;
use nvshmem_builder::install::Installation as Nvshmem;
use nvshmem_builder::toolchain::Toolchain;
use std::path::Path;
use std::sync::OnceLock;

const V345: &str = "3.4.5";
const V380: &str = "3.8.0";
const ALL: &[&str] = &[V345, V380];
const ARCH: &str = "sm_90";

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

/// NVSHMEM `version`, found or downloaded into the per-user cache.
fn find_nvshmem(version: &str) -> Result<Nvshmem, String> {
    let v: Version = version.parse().unwrap();
    nvshmem_builder::wheels::nvshmem(v).map_err(|e| format!("NVSHMEM {version} not found ({e})"))
}

fn toolchain() -> &'static Toolchain {
    static TC: OnceLock<Toolchain> = OnceLock::new();
    TC.get_or_init(|| {
        Toolchain::pinned()
            .unwrap_or_else(|e| panic!("the pinned nightly toolchain is required: {e}"))
    })
}

/// Runs `check` against every supported NVSHMEM version that is installed
/// (or can be fetched), reporting a skip for each that is not, and for all.
fn for_each_version(what: &str, mut check: impl FnMut(&str, &Nvshmem)) {
    let mut ran = 0;
    for version in ALL {
        match find_nvshmem(version) {
            Ok(nv) => {
                check(version, &nv);
                ran += 1;
            }
            Err(reason) => skip(&format!("{what} against NVSHMEM {version}"), &reason),
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
mod gaps;
mod headers;
mod lists;
