//! `nvshmem-bench --check` as a GPU test, on 1 and 2 PEs through the harness:
//! every benchmark kernel (Rust; C++ too when `NVSHMEM_BENCH_CPP_CUBIN` names
//! a cubin built by `cargo xtask bench`) runs once on fresh data and is checked.
//! Nothing is timed and no timing is asserted. Without a GPU it prints
//! SKIPPED (a failure with NVSHMEM_RS_REQUIRE_GPU=1).

use nvshmem_bench::measure::{Bench, Options};
use nvshmem_host::harness::{self, GpuTest, TestPe, TestResult};

fn check(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let mut opts = Options {
        check: true,
        ..Options::default()
    };
    if let Some(p) = std::env::var_os("NVSHMEM_BENCH_CPP_CUBIN") {
        opts.cpp.push(("cpp".into(), p.into()));
    }
    let mut bench = Bench::new(nv, opts).map_err(|e| e.to_string())?;
    bench.run_all().map_err(|e| e.to_string())?;
    harness::ensure(bench.failures.is_empty(), || bench.failures.join("; "))
}

fn main() {
    let dir = nvshmem_bench::ptx_dir();
    harness::main(
        dir.to_str().expect("a UTF-8 path"),
        &[GpuTest::new("bench_check", check).pes(&[1, 2])],
    );
}
