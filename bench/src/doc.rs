//! The generated parts of `BENCHMARKS.md`, made from the committed results
//! in `bench/results/` (the CSVs that `cargo xtask bench` and
//! `nvshmem-bench gemm --csv` write): every block between
//! `<!-- generated: NAME -->` and `<!-- end generated -->`.
//! `nvshmem-bench doc BENCHMARKS.md` rewrites them; `bench/tests/results.rs`
//! (CPU, in CI) fails when the document or a `pe<N>.md` differs from what
//! the CSVs give.

use crate::report::{Info, from_csv, geomean, ratio, rows, table, targets};
use crate::{Record, human};
use std::fmt::Write as _;
use std::path::Path;

/// The marker that opens a generated block (the block's name follows).
pub const START: &str = "<!-- generated: ";
/// The marker that closes one.
pub const END: &str = "<!-- end generated -->";

/// `pe<N>.md`: what `nvshmem-bench render pe<N>.csv` prints: the run's
/// `key: value` lines, the table, and the targets.
pub fn render(info: &Info, records: &[Record]) -> String {
    let mut s = String::new();
    for (k, v) in info {
        let _ = writeln!(s, "- {k}: {v}");
    }
    let _ = writeln!(s, "\n{}", table(records));
    let _ = writeln!(s, "{}", targets(records, crate::report::pes_of(info)));
    s
}

/// The records of `<results>/<file>`.
fn load(results: &Path, file: &str) -> Result<Vec<Record>, String> {
    let path = results.join(file);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(from_csv(&text)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .1)
}

/// The record of `imp` for `case`/`variant` at `bytes`.
fn find<'a>(
    records: &'a [Record],
    (case, variant, bytes): (&str, &str, u64),
    imp: &str,
) -> Option<&'a Record> {
    records
        .iter()
        .find(|r| r.case == case && r.variant == variant && r.bytes == bytes && r.imp == imp)
}

/// A value as the tables write it (`FAIL`, `(unchecked)` for rows that check nothing).
fn value(r: Option<&Record>) -> String {
    match r {
        None => "-".into(),
        Some(r) if !r.pass => "FAIL".into(),
        Some(r) => {
            let v = if r.unit == "us" {
                format!("{:.3} µs", r.value)
            } else {
                format!("{:.1} {}", r.value, r.unit)
            };
            if r.checked {
                v
            } else {
                format!("{v} (unchecked)")
            }
        }
    }
}

/// Rust time over C++ time, 3 decimals, bold above 1.
fn time_ratio(records: &[Record], key: (&str, &str, u64)) -> String {
    match (find(records, key, "rust"), find(records, key, "cpp")) {
        (Some(r), Some(c)) if r.time_us > 0.0 && c.time_us > 0.0 => {
            let x = r.time_us / c.time_us;
            if x > 1.0 {
                format!("**{x:.3}**")
            } else {
                format!("{x:.3}")
            }
        }
        _ => String::new(),
    }
}

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

/// The rows of the main table: label, (case, variant, bytes).
const MAIN: &[(&str, (&str, &str, u64))] = &[
    ("`p` + quiet latency", ("p_lat", "p+quiet", 8)),
    ("`g` latency", ("g_lat", "g", 8)),
    ("put (8 B) + quiet latency", ("put_lat", "put+quiet", 8)),
    ("get (8 B) latency", ("get_lat", "get", 8)),
    ("fetch_add latency", ("amo_lat", "fetch_add", 8)),
    ("fetch_add throughput", ("amo_tput", "fetch_add", 8)),
    ("add (+quiet) latency", ("amo_lat", "add", 8)),
    ("add throughput", ("amo_tput", "add", 8)),
    ("compare_swap latency", ("amo_lat", "compare_swap", 8)),
    ("compare_swap throughput", ("amo_tput", "compare_swap", 8)),
    ("swap latency", ("amo_lat", "swap", 8)),
    ("swap throughput", ("amo_tput", "swap", 8)),
    (
        "put_signal ping-pong (half RTT)",
        ("pingpong", "put_signal", 8),
    ),
    ("device `barrier_all`", ("barrier_lat", "barrier_all", 0)),
    ("put block 64 MiB", ("put_bw", "block", 64 * MIB)),
    ("put thread 64 MiB", ("put_bw", "thread", 64 * MIB)),
    (
        "put thread 32 KiB (128 threads)",
        ("put_bw", "thread", 32 * KIB),
    ),
    ("put block 8 KiB (1 block)", ("put_bw", "block", 8 * KIB)),
    ("get block 64 MiB", ("get_bw", "block", 64 * MIB)),
    (
        "all-reduce one-shot 32 KiB",
        ("allreduce", "one-shot", 32 * KIB),
    ),
    (
        "all-reduce rs+ag 256 MiB",
        ("allreduce", "rs+ag", 256 * MIB),
    ),
];

/// The main figures of one run.
fn main_table(records: &[Record]) -> String {
    let mut s = String::from(
        "| case | Rust | C++ | C++ -dlto | Rust/C++ time |\n|---|---:|---:|---:|---:|\n",
    );
    for &(label, key) in MAIN {
        let _ = writeln!(
            s,
            "| {label} | {} | {} | {} | {} |",
            value(find(records, key, "rust")),
            value(find(records, key, "cpp")),
            value(find(records, key, "cpp-lto")),
            time_ratio(records, key)
        );
    }
    s
}

/// A few rows of the 2- and 4-PE runs.
fn multi_pe(runs: &[(&str, Vec<Record>)]) -> String {
    let mut s =
        String::from("| case | PEs | Rust | C++ | Rust/C++ time |\n|---|---:|---:|---:|---:|\n");
    let keys = [
        ("put (8 B) + quiet latency", ("put_lat", "put+quiet", 8)),
        (
            "put_signal ping-pong (half RTT)",
            ("pingpong", "put_signal", 8),
        ),
        ("device `barrier_all`", ("barrier_lat", "barrier_all", 0)),
        (
            "all-reduce rs+ag 256 MiB",
            ("allreduce", "rs+ag", 256 * MIB),
        ),
    ];
    for (label, key) in keys {
        for (pes, records) in runs {
            let _ = writeln!(
                s,
                "| {label} | {pes} | {} | {} | {} |",
                value(find(records, key, "rust")),
                value(find(records, key, "cpp")),
                time_ratio(records, key)
            );
        }
    }
    s
}

/// Whether a row of case `case`, variant `variant`, `bytes` is in a group of [`GROUPS`].
type Group = fn(&str, &str, u64) -> bool;

/// The groups of the geometric-mean table.
const GROUPS: &[(&str, Group)] = &[
    (
        "latencies (p, g, put, get, ping-pong, barrier)",
        |c, _, _| {
            matches!(
                c,
                "p_lat" | "g_lat" | "put_lat" | "get_lat" | "pingpong" | "barrier_lat"
            )
        },
    ),
    ("atomics (latency + throughput)", |c, _, _| {
        matches!(c, "amo_lat" | "amo_tput")
    }),
    ("library put/get bandwidth, ≤ 2 KiB", |c, v, b| {
        library_bw(c, v) && b <= 2 * KIB
    }),
    ("library put/get bandwidth, 8 KiB – 8 MiB", |c, v, b| {
        library_bw(c, v) && (8 * KIB..=8 * MIB).contains(&b)
    }),
    ("library put/get bandwidth, ≥ 32 MiB", |c, v, b| {
        library_bw(c, v) && b >= 32 * MIB
    }),
    (
        "direct-store puts (`*_p2p`, the kernel's own copy)",
        |c, v, _| c == "put_bw" && v.ends_with("_p2p"),
    ),
    ("all-reduce", |c, _, _| c == "allreduce"),
    ("**everything**", |_, _, _| true),
];

fn library_bw(case: &str, variant: &str) -> bool {
    matches!(case, "put_bw" | "get_bw") && !variant.ends_with("_p2p")
}

/// Geometric means of Rust/C++ time by group, one column per run.
fn geomeans(runs: &[(&str, Vec<Record>)]) -> String {
    let mut s = String::from("| group |");
    for (pes, _) in runs {
        let _ = write!(s, " rows ({pes}) | geomean ({pes}) |");
    }
    s += "\n|---|";
    s += &"---:|---:|".repeat(runs.len());
    s += "\n";
    for (label, group) in GROUPS {
        let _ = write!(s, "| {label} |");
        for (_, records) in runs {
            let ratios: Vec<f64> = rows(records)
                .iter()
                .filter(|r| group(&r.key.0, &r.key.1, r.key.2))
                .filter_map(|r| ratio(r, "cpp"))
                .collect();
            match geomean(&ratios) {
                Some(g) => {
                    let _ = write!(s, " {} | {g:.3} |", ratios.len());
                }
                None => s += " 0 | - |",
            }
        }
        s += "\n";
    }
    s
}

/// The copy ceilings of each run.
fn ceilings(runs: &[(&str, Vec<Record>)]) -> String {
    let mut s = String::from(
        "| run | size | read+write | one-way | into the peer PE's buffer |\n|---|---:|---:|---:|---:|\n",
    );
    for (pes, records) in runs {
        let of = |variant: &str| {
            records
                .iter()
                .find(|r| r.case == "copy_ceiling" && r.variant == variant)
        };
        let _ = writeln!(
            s,
            "| {pes} | {} | {} | {} | {} |",
            of("one-way").map_or("-".into(), |r| human(r.bytes)),
            value(of("read+write")),
            value(of("one-way")),
            value(of("to-peer"))
        );
    }
    s
}

/// The targets of each run.
fn all_targets(runs: &[(&str, Vec<Record>)]) -> String {
    let mut s = String::new();
    for (pes, records) in runs {
        // "1 PE", "2 PEs": the count leads the label.
        let n = pes.split(' ').next().and_then(|n| n.parse().ok());
        let _ = write!(s, "{pes}:\n\n{}\n", targets(records, n));
    }
    s.trim_end().to_string() + "\n"
}

/// The MoE runs (`nvshmem-bench moe --csv`): one row per case and PE count,
/// dispatch and combine side by side (the baseline has no combine).
fn moe(runs: &[(&str, Vec<Record>)]) -> String {
    let mut s = String::from(
        "| case | PEs | dispatch µs | dispatch GB/s | combine µs | combine GB/s |\n|---|---:|---:|---:|---:|---:|\n",
    );
    let mut cases: Vec<&str> = Vec::new();
    for (_, records) in runs {
        for r in records {
            if !cases.contains(&r.variant.as_str()) {
                cases.push(&r.variant);
            }
        }
    }
    let cell = |r: Option<&Record>| match r {
        None => ("-".to_string(), "-".to_string()),
        Some(r) if !r.pass => ("FAIL".into(), "FAIL".into()),
        Some(r) => (format!("{:.1}", r.time_us), format!("{:.1}", r.value)),
    };
    for case in cases {
        for (pes, records) in runs {
            let of = |op: &str| records.iter().find(|r| r.case == op && r.variant == case);
            if of("moe_dispatch").is_none() && of("moe_combine").is_none() {
                continue;
            }
            let (dt, dg) = cell(of("moe_dispatch"));
            let (ct, cg) = cell(of("moe_combine"));
            let _ = writeln!(s, "| {case} | {pes} | {dt} | {dg} | {ct} | {cg} |");
        }
    }
    s
}

/// The steps of `init.csv` (`cargo xtask init-cost`): column, label.
const INIT_STEPS: [(&str, &str); 7] = [
    ("wall_ms", "process wall (outside)"),
    ("total_ms", "in-process, main to initialized"),
    ("dlopen_ms", "host library dlopen (Rust only)"),
    ("driver_ms", "driver load + cuInit"),
    ("context_ms", "CUDA context"),
    ("nvshmem_init_ms", "NVSHMEM init"),
    ("finalize_ms", "finalize"),
];

/// Init at 1 PE, Rust against C++ (`init.csv`: a row per process, columns
/// `impl,heap,` then [`INIT_STEPS`]): the median of each step per heap.
fn init(csv: &str) -> Result<String, String> {
    let mut lines = csv
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty());
    let header: Vec<&str> = lines
        .next()
        .ok_or("init.csv: no header")?
        .split(',')
        .collect();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let mut heaps: Vec<&str> = Vec::new();
    for r in &rows {
        if r.len() != header.len() {
            return Err(format!(
                "init.csv: `{}` has {} fields, not {}",
                r.join(","),
                r.len(),
                header.len()
            ));
        }
        if !heaps.contains(&r[1]) {
            heaps.push(r[1]);
        }
    }
    let median = |imp: &str, heap: &str, col: &str| -> Option<f64> {
        let i = header.iter().position(|h| *h == col)?;
        let mut v: Vec<f64> = rows
            .iter()
            .filter(|r| r[0] == imp && r[1] == heap)
            .filter_map(|r| r[i].parse().ok())
            .collect();
        v.sort_by(f64::total_cmp);
        (!v.is_empty()).then(|| v[v.len() / 2])
    };
    let mut s =
        String::from("| heap | step | Rust ms | C++ ms | Rust/C++ |\n|---|---|---:|---:|---:|\n");
    for heap in heaps {
        for (col, label) in INIT_STEPS {
            let (r, c) = (median("rust", heap, col), median("cpp", heap, col));
            let cell = |x: Option<f64>| x.map_or("-".into(), |x| format!("{x:.1}"));
            let q = match (r, c) {
                (Some(r), Some(c)) if c > 0.0 => format!("{:.2}", r / c),
                _ => String::new(),
            };
            let _ = writeln!(s, "| {heap} | {label} | {} | {} | {q} |", cell(r), cell(c));
        }
    }
    Ok(s)
}

/// The benchmark runs: label, CSV.
const RUNS: [(&str, &str); 3] = [
    ("1 PE", "pe1.csv"),
    ("2 PEs", "pe2.csv"),
    ("4 PEs", "pe4.csv"),
];

/// Block `name` made from the results in `results`.
pub fn block(name: &str, results: &Path) -> Result<String, String> {
    let runs = |which: &[usize]| -> Result<Vec<(&str, Vec<Record>)>, String> {
        which
            .iter()
            .map(|&i| Ok((RUNS[i].0, load(results, RUNS[i].1)?)))
            .collect()
    };
    Ok(match name {
        "ceilings" => ceilings(&runs(&[0, 1, 2])?),
        "main" => main_table(&load(results, RUNS[0].1)?),
        "multi-pe" => multi_pe(&runs(&[1, 2])?),
        "geomeans" => geomeans(&runs(&[0, 1, 2])?),
        "targets" => all_targets(&runs(&[0, 1, 2])?),
        "gemm" => crate::gemm::table(&load(results, "gemm.csv")?)
            .trim_start()
            .to_string(),
        "candidates" => crate::candidates::table(
            &[
                ("1 PE, run a", "issue24/run4-pe1a.csv"),
                ("1 PE, run b", "issue24/run4-pe1b.csv"),
                ("2 PEs, run a", "issue24/run4-pe2a.csv"),
                ("2 PEs, run b", "issue24/run4-pe2b.csv"),
            ]
            .iter()
            .map(|&(label, file)| Ok((label.to_string(), load(results, file)?)))
            .collect::<Result<Vec<_>, String>>()?,
        ),
        "costs" => {
            let path = results.join("costs/pe1.log");
            let log =
                std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            // The launch lines of `runtime_costs`, as it printed them.
            let lines: Vec<&str> = log.lines().filter(|l| l.contains("launch")).collect();
            format!("```text\n{}\n```\n", lines.join("\n"))
        }
        "init" => init(
            &std::fs::read_to_string(results.join("init.csv"))
                .map_err(|e| format!("{}: {e}", results.join("init.csv").display()))?,
        )?,
        "moe" => moe(&[
            ("1", load(results, "moe-pe1.csv")?),
            ("2", load(results, "moe-pe2.csv")?),
            ("4", load(results, "moe-pe4.csv")?),
        ]),
        other => {
            return Err(format!(
                "no generated block named `{other}` (ceilings, main, multi-pe, geomeans, targets, gemm, moe, candidates, costs, init)"
            ));
        }
    })
}

/// `doc` with every generated block made again from `results`.
pub fn update(doc: &str, results: &Path) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = doc;
    while let Some(at) = rest.find(START) {
        let line_end = rest[at..]
            .find('\n')
            .map(|i| at + i + 1)
            .ok_or("a generated block's marker ends the document")?;
        let name = rest[at + START.len()..line_end]
            .trim_end()
            .trim_end_matches("-->")
            .trim();
        let name = name.split_whitespace().next().unwrap_or_default();
        let end = rest[line_end..]
            .find(END)
            .map(|i| line_end + i)
            .ok_or_else(|| format!("the generated block `{name}` has no `{END}`"))?;
        out += &rest[..line_end];
        out += &block(name, results)?;
        rest = &rest[end..];
    }
    out += rest;
    Ok(out)
}

/// The first line where `a` and `b` differ: (1-based number, line of `a`, line of `b`).
pub fn first_difference(a: &str, b: &str) -> Option<(usize, String, String)> {
    let (mut la, mut lb) = (a.lines(), b.lines());
    for n in 1.. {
        match (la.next(), lb.next()) {
            (None, None) => return (a != b).then(|| (n, String::new(), String::new())),
            (x, y) if x != y => {
                return Some((
                    n,
                    x.unwrap_or("(end)").to_string(),
                    y.unwrap_or("(end)").to_string(),
                ));
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_medians_per_heap() {
        let csv = "# a comment\nimpl,heap,wall_ms,total_ms,dlopen_ms,driver_ms,context_ms,nvshmem_init_ms,finalize_ms\n\
            rust,default,3,30,1,1,1,1,1\nrust,default,1,10,1,1,1,1,1\nrust,default,2,20,1,1,1,1,1\n\
            cpp,default,1,10,0,1,1,1,1\n";
        let t = init(csv).unwrap();
        assert!(
            t.contains("| default | process wall (outside) | 2.0 | 1.0 | 2.00 |"),
            "{t}"
        );
        assert!(
            t.contains("| default | in-process, main to initialized | 20.0 | 10.0 | 2.00 |"),
            "{t}"
        );
        assert!(init("impl,heap\nrust").is_err());
    }

    #[test]
    fn blocks_are_replaced_and_names_checked() {
        let dir = std::env::temp_dir().join(format!("nvshmem-bench-doc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("gemm.csv"),
            "# PEs: 1\ncase,variant,bytes,impl,time_us,value,unit,pass\n\
             gemm_bf16,cublas,4096,cublas,181.0,759.3,TFLOP/s,PASS\n\
             gemm_bf16,wgmma,4096,rust,176.6,778.5,TFLOP/s,PASS\n",
        )
        .unwrap();
        let doc = "# T\n<!-- generated: gemm (bench/results/gemm.csv) -->\nold\n<!-- end generated -->\ntail\n";
        let new = update(doc, &dir).unwrap();
        assert!(
            new.contains("| 4096 | wgmma | 0.177 ms | 778.5 | 103% | pass |"),
            "{new}"
        );
        assert!(new.ends_with("<!-- end generated -->\ntail\n"), "{new}");
        assert_eq!(update(&new, &dir).unwrap(), new);
        let bad = doc.replace("gemm (", "nothing (");
        assert!(update(&bad, &dir).unwrap_err().contains("`nothing`"));
        assert_eq!(
            first_difference("a\nb\n", "a\nc\n"),
            Some((2, "b".into(), "c".into()))
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn the_moe_table_pairs_dispatch_and_combine() {
        let rec = |case: &str, variant: &str, imp: &str, us: f64, pass: bool| Record {
            case: case.into(),
            variant: variant.into(),
            bytes: 1000,
            imp: imp.into(),
            time_us: us,
            value: 1000.0 / (us * 1e3),
            unit: "GB/s".into(),
            pass,
            checked: true,
        };
        let one = vec![
            rec("moe_dispatch", "ll-e64", "rust", 10.0, true),
            rec("moe_combine", "ll-e64", "rust", 20.0, true),
            rec("moe_dispatch", "alltoall-t128-e64", "alltoall", 40.0, true),
        ];
        let two = vec![rec("moe_dispatch", "ll-e64", "rust", 12.5, false)];
        let t = moe(&[("1", one), ("2", two)]);
        assert!(
            t.contains("| ll-e64 | 1 | 10.0 | 0.1 | 20.0 | 0.1 |"),
            "{t}"
        );
        assert!(t.contains("| ll-e64 | 2 | FAIL | FAIL | - | - |"), "{t}");
        assert!(
            t.contains("| alltoall-t128-e64 | 1 | 40.0 | 0.0 | - | - |"),
            "{t}"
        );
        assert!(!t.contains("alltoall-t128-e64 | 2"), "{t}");
    }
}
