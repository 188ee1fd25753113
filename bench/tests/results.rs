//! The published figures against the committed runs (CPU, in CI): every
//! generated table of `BENCHMARKS.md` and every `bench/results/pe<N>.md` must
//! be exactly what the committed CSVs under `bench/results/` give
//! (`nvshmem-bench doc`, `nvshmem-bench render`), so no figure there is
//! typed by hand or left behind by a newer run.

use nvshmem_bench::doc;
use nvshmem_bench::report::from_csv;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("bench/ is in the repository")
        .to_path_buf()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn benchmarks_md_is_what_the_results_give() {
    let root = root();
    let text = read(&root.join("BENCHMARKS.md"));
    let results = root.join("bench/results");
    let made = doc::update(&text, &results).expect("the generated blocks");
    if let Some((line, want, have)) = doc::first_difference(&made, &text) {
        panic!(
            "BENCHMARKS.md line {line} is `{have}`, bench/results/ gives `{want}`: \
             run `cargo run --release -p nvshmem-bench -- doc BENCHMARKS.md`"
        );
    }
    for name in [
        "main",
        "geomeans",
        "targets",
        "gemm",
        "ceilings",
        "multi-pe",
        "candidates",
        "costs",
        "init",
    ] {
        assert!(
            text.contains(&format!("{}{name} ", doc::START)),
            "BENCHMARKS.md has no generated `{name}` block"
        );
    }
}

#[test]
fn pe_tables_are_what_their_csvs_give() {
    let results = root().join("bench/results");
    for n in [1, 2, 4] {
        let csv = results.join(format!("pe{n}.csv"));
        let (info, records) = from_csv(&read(&csv)).expect("a CSV");
        let made = doc::render(&info, &records);
        let md = results.join(format!("pe{n}.md"));
        if let Some((line, want, have)) = doc::first_difference(&made, &read(&md)) {
            panic!(
                "{} line {line} is `{have}`, pe{n}.csv gives `{want}`: run \
                 `cargo run --release -p nvshmem-bench -- render bench/results/pe{n}.csv > bench/results/pe{n}.md`",
                md.display()
            );
        }
    }
}

#[test]
fn rows_that_check_nothing_are_not_pass() {
    // A barrier leaves nothing to check: its rows must not say PASS.
    let results = root().join("bench/results");
    for n in [1, 2, 4] {
        let (_, records) = from_csv(&read(&results.join(format!("pe{n}.csv")))).expect("a CSV");
        for r in records.iter().filter(|r| r.case == "barrier_lat") {
            assert!(!r.checked, "pe{n}.csv: {} {} says PASS", r.case, r.imp);
        }
    }
}
