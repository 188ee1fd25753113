//! `nvshmem-bench --check` as a GPU test, on 1 and 2 PEs through the harness:
//! every benchmark kernel (Rust; C++ too when `NVSHMEM_BENCH_CPP_CUBIN` names
//! a cubin built by `cargo xtask bench`) runs once on fresh data and is checked.
//! Nothing is timed and no timing is asserted. Without a GPU it prints
//! SKIPPED (a failure with NVSHMEM_RS_REQUIRE_GPU=1). Without
//! `NVSHMEM_BENCH_CPP_CUBIN` the C++ part is reported SKIPPED; a cubin that
//! does not load is a failure.

use nvshmem_bench::measure::{Bench, Options};
use nvshmem_host::harness::{self, GpuTest, TestPe, TestResult};

fn check(pe: &mut TestPe) -> TestResult {
    let mut opts = Options {
        check: true,
        ..Options::default()
    };
    match std::env::var_os("NVSHMEM_BENCH_CPP_CUBIN") {
        Some(p) => opts.cpp.push(("cpp".into(), p.into())),
        None => pe.skip_part(
            "the C++ twins",
            "NVSHMEM_BENCH_CPP_CUBIN is not set (a cubin from `cargo xtask bench --build-only`)",
        ),
    }
    let nv = pe.nvshmem();
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
