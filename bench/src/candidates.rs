//! Every Rust implementation of a run (the default `rust` and the candidate
//! builds `rust-<name>`, see `cargo xtask bench --candidates`) against the
//! C++ twin, per family of rows: the geometric mean of Rust/C++ time, over
//! one or more runs, so that the spread between runs shows beside each
//! figure.

use crate::report::{geomean, rows};
use crate::{Record, human};
use std::fmt::Write as _;

/// A family of rows: a name and which (case, variant, bytes) belong to it.
pub struct Family {
    /// Its name in the table.
    pub name: &'static str,
    /// Whether a row belongs to it.
    pub rows: fn(&str, &str, u64) -> bool,
}

/// The families of issue 24 (its slow ones first), and every row.
pub const FAMILIES: &[Family] = &[
    Family {
        name: "every row",
        rows: |_, _, _| true,
    },
    Family {
        name: "put/get thread 32 KiB",
        rows: |c, v, b| is_bw(c) && v.starts_with("thread") && b == 32 << 10,
    },
    Family {
        name: "put/get block 32-512 KiB",
        rows: |c, v, b| is_bw(c) && v.starts_with("block") && (32 << 10..=512 << 10).contains(&b),
    },
    Family {
        name: "get_bw block_nbi 8 B",
        rows: |c, v, b| c == "get_bw" && v == "block_nbi" && b == 8,
    },
    Family {
        name: "put/get <= 8 B",
        rows: |c, _, b| is_bw(c) && b <= 8,
    },
    Family {
        name: "put/get warp scope",
        rows: |c, v, _| is_bw(c) && v.starts_with("warp"),
    },
    Family {
        name: "all-reduce rs+ag 2-256 MiB",
        rows: |c, v, b| c == "allreduce" && v == "rs+ag" && b >= 2 << 20,
    },
    Family {
        name: "latencies and atomics",
        rows: |c, _, _| c.ends_with("_lat") || c.starts_with("amo") || c == "pingpong",
    },
];

fn is_bw(case: &str) -> bool {
    case == "put_bw" || case == "get_bw"
}

/// The Rust implementations in `records`, `rust` first.
fn rust_impls(records: &[Record]) -> Vec<String> {
    let mut v = vec!["rust".to_string()];
    for r in records {
        if r.imp.starts_with("rust-") && !v.contains(&r.imp) {
            v.push(r.imp.clone());
        }
    }
    v
}

/// `imp`'s time over C++'s (`cpp`) on the rows of `family`: the geomean,
/// the count above 1.00 and the rows compared.
pub fn family_ratio(records: &[Record], imp: &str, family: &Family) -> Option<(f64, usize, usize)> {
    let ratios: Vec<f64> = rows(records)
        .iter()
        .filter(|r| (family.rows)(&r.key.0, &r.key.1, r.key.2))
        .filter_map(|r| {
            let a = r.by_impl.get(imp)?;
            let c = r.by_impl.get("cpp")?;
            (a.pass && c.pass && a.time_us > 0.0 && c.time_us > 0.0).then(|| a.time_us / c.time_us)
        })
        .collect();
    let g = geomean(&ratios)?;
    Some((g, ratios.iter().filter(|&&x| x > 1.0).count(), ratios.len()))
}

/// The Markdown table: a line per (family, implementation), a column per
/// run (`label`, records), each cell the geomean of Rust/C++ time and the
/// rows above 1.00; then the worst rows of each implementation in the first run.
pub fn table(runs: &[(String, Vec<Record>)]) -> String {
    let mut s = String::new();
    let Some((_, first)) = runs.first() else {
        return "no runs\n".into();
    };
    let imps = rust_impls(first);
    let _ = write!(s, "| family | implementation |");
    for (label, _) in runs {
        let _ = write!(s, " {label} |");
    }
    let _ = write!(s, "\n|---|---|");
    for _ in runs {
        let _ = write!(s, "---:|");
    }
    s.push('\n');
    for f in FAMILIES {
        for imp in &imps {
            let _ = write!(s, "| {} | {imp} |", f.name);
            for (_, recs) in runs {
                match family_ratio(recs, imp, f) {
                    Some((g, over, n)) => {
                        let _ = write!(s, " {g:.3} ({over}/{n} > 1) |");
                    }
                    None => s.push_str(" - |"),
                }
            }
            s.push('\n');
        }
    }
    s.push_str("\n(Rust/C++ time, geometric mean; rows above 1.00 of rows compared.)\n");
    for imp in &imps {
        let mut worst: Vec<(f64, String)> = rows(first)
            .iter()
            .filter_map(|r| {
                let a = r.by_impl.get(imp.as_str())?;
                let c = r.by_impl.get("cpp")?;
                (a.time_us > 0.0 && c.time_us > 0.0).then(|| {
                    (
                        a.time_us / c.time_us,
                        format!("{} {} {}", r.key.0, r.key.1, human(r.key.2)),
                    )
                })
            })
            .collect();
        worst.sort_by(|a, b| b.0.total_cmp(&a.0));
        let list: Vec<String> = worst
            .iter()
            .take(5)
            .map(|(x, k)| format!("{k} {x:.2}"))
            .collect();
        let _ = writeln!(s, "- worst of {imp}: {}", list.join("; "));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(case: &str, variant: &str, bytes: u64, imp: &str, t: f64) -> Record {
        Record {
            case: case.into(),
            variant: variant.into(),
            bytes,
            imp: imp.into(),
            time_us: t,
            value: 1.0,
            unit: "GB/s".into(),
            pass: true,
            checked: true,
        }
    }

    #[test]
    fn families_compare_every_rust_build_with_cpp() {
        let recs = vec![
            rec("put_bw", "thread", 32 << 10, "rust", 1.5),
            rec("put_bw", "thread", 32 << 10, "rust-pipe", 1.2),
            rec("put_bw", "thread", 32 << 10, "cpp", 1.0),
            rec("get_bw", "block_nbi", 8, "rust", 0.5),
            rec("get_bw", "block_nbi", 8, "rust-pipe", 0.5),
            rec("get_bw", "block_nbi", 8, "cpp", 1.0),
        ];
        let f = &FAMILIES[1];
        assert_eq!(family_ratio(&recs, "rust-pipe", f), Some((1.2, 1, 1)));
        let (g, over, n) = family_ratio(&recs, "rust", &FAMILIES[0]).unwrap();
        assert!((g - (1.5f64 * 0.5).sqrt()).abs() < 1e-9 && over == 1 && n == 2);
        let t = table(&[("a".into(), recs.clone()), ("b".into(), recs)]);
        assert!(
            t.contains("| put/get thread 32 KiB | rust-pipe | 1.200 (1/1 > 1) | 1.200 (1/1 > 1) |"),
            "{t}"
        );
        assert!(
            t.contains("- worst of rust: put_bw thread 32 KiB 1.50"),
            "{t}"
        );
    }
}
