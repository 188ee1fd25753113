//! For test suites that need NVSHMEM or its tools: a test that cannot run
//! prints `SKIPPED: <reason>` and returns, and with `NVSHMEM_RS_REQUIRE_ALL=1`
//! (as CI sets it) fails instead, so that nothing is skipped unnoticed.
//!
//! ```no_run
//! #[test]
//! fn links_against_3_4_5() {
//!     let Some(nv) = nvshmem_builder::testing::nvshmem("3.4.5") else {
//!         return; // skipped (or failed, under NVSHMEM_RS_REQUIRE_ALL=1)
//!     };
//!     assert!(nv.include_dir().is_dir());
//! }
//! ```

use crate::toolchain::wheels;
use nvshmem_types::install::{Installation, Query};
use nvshmem_types::{CudaMajor, Version};
use std::io::Write as _;

/// The variable that turns skips into failures.
pub const REQUIRE_ALL: &str = "NVSHMEM_RS_REQUIRE_ALL";

/// Whether `NVSHMEM_RS_REQUIRE_ALL=1`: every skip is a failure.
///
/// ```
/// let strict = nvshmem_builder::testing::require_all();
/// ```
pub fn require_all() -> bool {
    std::env::var_os(REQUIRE_ALL).is_some_and(|v| v == "1")
}

/// Reports a skipped test: `SKIPPED: <reason>` on the real stderr (past the
/// test harness's capture, so it shows in every log), or a panic under
/// `NVSHMEM_RS_REQUIRE_ALL=1`.
///
/// ```no_run
/// nvshmem_builder::testing::skip("no python3");
/// ```
pub fn skip(reason: &str) {
    if require_all() {
        panic!("{REQUIRE_ALL}=1 but: {reason}");
    }
    let _ = writeln!(std::io::stderr(), "SKIPPED: {reason}");
}

/// NVSHMEM `version` (such as `"3.4.5"`), found or downloaded into the
/// per-user cache ([`wheels::nvshmem`]); `None` after a [`skip`] when
/// neither works. Panics on a version that does not parse.
///
/// ```no_run
/// if let Some(nv) = nvshmem_builder::testing::nvshmem("3.8.0") {
///     println!("{}", nv.root.display());
/// }
/// ```
pub fn nvshmem(version: &str) -> Option<Installation> {
    let v = version
        .parse()
        .unwrap_or_else(|e| panic!("NVSHMEM version {version:?}: {e}"));
    match wheels::nvshmem(v) {
        Ok(nv) => Some(nv),
        Err(e) => {
            skip(&format!("NVSHMEM {version} is not installed: {e}"));
            None
        }
    }
}

/// NVSHMEM `version` for `cuda` when this machine has it: the wheels
/// `nvshmem-build setup` fetches by default (CI's set) as [`wheels::nvshmem_for`]
/// finds or downloads them (a [`skip`] when that fails), any other supported
/// one only when it is already installed (never downloaded: CI fetches only
/// its set).
///
/// ```no_run
/// use nvshmem_builder::CudaMajor;
/// let nv = nvshmem_builder::testing::fetched("3.3.20".parse().unwrap(), CudaMajor::Cuda12);
/// ```
pub fn fetched(version: Version, cuda: CudaMajor) -> Option<Installation> {
    if wheels::SETUP_DEFAULT.contains(&(version, cuda)) {
        return match wheels::nvshmem_for(version, cuda) {
            Ok(nv) => Some(nv),
            Err(e) => {
                skip(&format!(
                    "NVSHMEM {version} (CUDA {cuda}) is not installed: {e}"
                ));
                None
            }
        };
    }
    let query = Query::default().ignore_env().version(version).cuda(cuda);
    Installation::find(&query).ok()
}
