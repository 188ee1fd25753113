//! The table, the CSV and the SVG plots, from the records of a run (or of a
//! CSV read back).

use crate::{Record, human};
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// The CSV columns.
pub const CSV_HEADER: &str = "case,variant,bytes,impl,time_us,value,unit,pass";

/// The CSV: `# key: value` lines, the header, one line per record.
pub fn to_csv(info: &[(String, String)], records: &[Record]) -> String {
    let mut s = String::new();
    for (k, v) in info {
        let _ = writeln!(s, "# {k}: {}", v.replace('\n', " "));
    }
    let _ = writeln!(s, "{CSV_HEADER}");
    for r in records {
        let _ = writeln!(
            s,
            "{},{},{},{},{:.4},{:.4},{},{}",
            r.case,
            r.variant,
            r.bytes,
            r.imp,
            r.time_us,
            r.value,
            r.unit,
            verdict(r)
        );
    }
    s
}

/// A record's verdict as the CSV and the table write it: `PASS`, `FAIL`, or
/// `UNCHECKED` (a measurement with no check).
pub fn verdict(r: &Record) -> &'static str {
    match (r.checked, r.pass) {
        (false, _) => "UNCHECKED",
        (true, true) => "PASS",
        (true, false) => "FAIL",
    }
}

/// `key: value` lines of a run.
pub type Info = Vec<(String, String)>;

/// Reads [`to_csv`]'s output back.
pub fn from_csv(text: &str) -> Result<(Info, Vec<Record>), String> {
    let mut info = Vec::new();
    let mut records = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line == CSV_HEADER {
            continue;
        }
        if let Some(rest) = line.strip_prefix('#') {
            if let Some((k, v)) = rest.split_once(':') {
                info.push((k.trim().to_string(), v.trim().to_string()));
            }
            continue;
        }
        let f: Vec<&str> = line.split(',').collect();
        if f.len() != 8 {
            return Err(format!("line {}: {} fields, not 8", n + 1, f.len()));
        }
        let num = |s: &str| s.parse::<f64>().map_err(|e| format!("line {}: {e}", n + 1));
        if !matches!(f[7], "PASS" | "FAIL" | "UNCHECKED") {
            return Err(format!(
                "line {}: `{}` is not PASS, FAIL or UNCHECKED",
                n + 1,
                f[7]
            ));
        }
        records.push(Record {
            case: f[0].into(),
            variant: f[1].into(),
            bytes: f[2].parse().map_err(|e| format!("line {}: {e}", n + 1))?,
            imp: f[3].into(),
            time_us: num(f[4])?,
            value: num(f[5])?,
            unit: f[6].into(),
            pass: f[7] != "FAIL",
            checked: f[7] != "UNCHECKED",
        });
    }
    Ok((info, records))
}

/// One row of the table: a case at one size, every implementation's record.
#[derive(Debug, Default)]
pub struct Row {
    /// Case, variant, size.
    pub key: (String, String, u64),
    /// By implementation.
    pub by_impl: BTreeMap<String, Record>,
}

/// The records grouped by (case, variant, size), in their first-seen order.
/// The NCCL all-reduce rows are merged into the in-kernel all-reduce row of the same size.
pub fn rows(records: &[Record]) -> Vec<Row> {
    let mut out: Vec<Row> = Vec::new();
    for r in records {
        let mut key = (r.case.clone(), r.variant.clone(), r.bytes);
        if r.case == "allreduce"
            && r.imp == "nccl"
            && let Some(row) = out
                .iter()
                .rev()
                .find(|row| row.key.0 == "allreduce" && row.key.2 == r.bytes)
        {
            key = row.key.clone();
        }
        match out.iter_mut().find(|row| row.key == key) {
            Some(row) => {
                row.by_impl.insert(r.imp.clone(), r.clone());
            }
            None => {
                let mut row = Row {
                    key,
                    ..Row::default()
                };
                row.by_impl.insert(r.imp.clone(), r.clone());
                out.push(row);
            }
        }
    }
    out
}

/// The one-way copy ceiling in GB/s, if measured.
pub fn copy_ceiling(records: &[Record]) -> Option<f64> {
    records
        .iter()
        .find(|r| r.case == "copy_ceiling" && r.variant == "one-way")
        .map(|r| r.value)
}

/// Rust time over C++ time (`cpp`, else `cpp-lto`).
pub fn ratio(row: &Row, cpp: &str) -> Option<f64> {
    let r = row.by_impl.get("rust")?;
    let c = row.by_impl.get(cpp)?;
    (r.time_us > 0.0 && c.time_us > 0.0).then(|| r.time_us / c.time_us)
}

fn fmt_value(r: Option<&Record>) -> String {
    match r {
        Some(r) if !r.pass => "FAIL".into(),
        Some(r) if r.time_us <= 0.0 => verdict(r).into(),
        Some(r) => {
            let v = if r.unit == "us" {
                format!("{:.3} us", r.value)
            } else {
                format!("{:.1} {}", r.value, r.unit)
            };
            if r.checked {
                v
            } else {
                format!("{v} (unchecked)")
            }
        }
        None => "-".into(),
    }
}

/// The geometric mean of `v` (`None` when empty).
pub fn geomean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp())
}

/// The table as Markdown: case, size, Rust, C++, C++ LTO, NCCL, Rust/C++ time, % of ceiling.
pub fn table(records: &[Record]) -> String {
    let ceiling = copy_ceiling(records);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "| case | variant | size | Rust | C++ | C++ (-dlto) | NCCL | Rust/C++ time | Rust/C++ LTO time | % of ceiling (Rust) |"
    );
    let _ = writeln!(s, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for row in rows(records) {
        let (case, variant, bytes) = &row.key;
        let pct = match (ceiling, row.by_impl.get("rust")) {
            (Some(c), Some(r))
                if r.unit == "GB/s" && case != "allreduce" && case != "copy_ceiling" =>
            {
                format!("{:.1} %", 100.0 * r.value / c)
            }
            _ => String::new(),
        };
        let rat = |c| {
            ratio(&row, c)
                .map(|x| format!("{x:.3}"))
                .unwrap_or_default()
        };
        let nccl = row.by_impl.get("nccl");
        let ceil = row.by_impl.get("ceiling");
        let _ = writeln!(
            s,
            "| {case} | {variant} | {} | {} | {} | {} | {} | {} | {} | {pct} |",
            if *bytes == 0 {
                String::new()
            } else {
                human(*bytes)
            },
            if ceil.is_some() {
                fmt_value(ceil)
            } else {
                fmt_value(row.by_impl.get("rust"))
            },
            fmt_value(row.by_impl.get("cpp")),
            fmt_value(row.by_impl.get("cpp-lto")),
            if nccl.is_some() {
                fmt_value(nccl)
            } else {
                String::new()
            },
            rat("cpp"),
            rat("cpp-lto"),
        );
    }
    s
}

/// The targets of issue #6, evaluated on the records, as Markdown lines.
pub fn targets(records: &[Record]) -> String {
    let rows = rows(records);
    let mut s = String::new();
    for cpp in ["cpp", "cpp-lto"] {
        let ratios: Vec<(String, f64)> = rows
            .iter()
            .filter_map(|r| {
                ratio(r, cpp).map(|x| (format!("{} {} {}", r.key.0, r.key.1, human(r.key.2)), x))
            })
            .collect();
        if ratios.is_empty() {
            let _ = writeln!(s, "- Rust/{cpp}: not measured.");
            continue;
        }
        let g = geomean(&ratios.iter().map(|r| r.1).collect::<Vec<_>>()).unwrap_or(f64::NAN);
        let over: Vec<&(String, f64)> = ratios.iter().filter(|r| r.1 > 1.0).collect();
        let worst = ratios
            .iter()
            .cloned()
            .fold((String::new(), 0.0), |a, b| if b.1 > a.1 { b } else { a });
        let _ = writeln!(
            s,
            "- Rust/{cpp} time: geomean **{g:.3}** over {} rows (target ≤ 0.95: {}); {} of {} rows above 1.00 (target: none: {}); worst {:.3} ({}).",
            ratios.len(),
            if g <= 0.95 { "met" } else { "missed" },
            over.len(),
            ratios.len(),
            if over.is_empty() { "met" } else { "missed" },
            worst.1,
            worst.0
        );
    }
    if let Some(c) = copy_ceiling(records) {
        let best = records
            .iter()
            .filter(|r| r.case == "put_bw" && r.imp == "rust")
            .max_by(|a, b| a.value.total_cmp(&b.value));
        if let Some(b) = best {
            let pct = 100.0 * b.value / c;
            let _ = writeln!(
                s,
                "- PE→PE put: best Rust {:.0} GB/s ({} {}) = **{pct:.1} %** of the one-way copy ceiling {c:.0} GB/s (target ≥ 95 %: {}).",
                b.value,
                b.variant,
                human(b.bytes),
                if pct >= 95.0 { "met" } else { "missed" }
            );
        }
    }
    let ar: Vec<(u64, f64)> = rows
        .iter()
        .filter(|r| r.key.0 == "allreduce" && (8 << 10..=256 << 10).contains(&r.key.2))
        .filter_map(|r| {
            let a = r.by_impl.get("rust")?;
            let n = r.by_impl.get("nccl")?;
            Some((r.key.2, n.time_us / a.time_us))
        })
        .collect();
    if ar.is_empty() {
        let _ = writeln!(
            s,
            "- In-kernel all-reduce vs NCCL, 8 KB–256 KB: not measured."
        );
    } else {
        let min = ar.iter().map(|a| a.1).fold(f64::INFINITY, f64::min);
        let list: Vec<String> = ar
            .iter()
            .map(|(b, x)| format!("{} {x:.2}×", human(*b)))
            .collect();
        let _ = writeln!(
            s,
            "- In-kernel all-reduce vs NCCL, 8 KB–256 KB: NCCL time / ours = {} (target ≥ 2×: {}).",
            list.join(", "),
            if min >= 2.0 { "met" } else { "missed" }
        );
    }
    s
}

fn colour(i: usize) -> RGBColor {
    const C: [RGBColor; 8] = [
        RGBColor(0xd6, 0x27, 0x28),
        RGBColor(0x1f, 0x77, 0xb4),
        RGBColor(0x2c, 0xa0, 0x2c),
        RGBColor(0xff, 0x7f, 0x0e),
        RGBColor(0x94, 0x67, 0xbd),
        RGBColor(0x8c, 0x56, 0x4b),
        RGBColor(0xe3, 0x77, 0xc2),
        RGBColor(0x7f, 0x7f, 0x7f),
    ];
    C[i % C.len()]
}

/// A plotted line: its legend, its points, and whether it is drawn thin.
pub(crate) type Series = (String, Vec<(f64, f64)>, bool);

/// The lowest and highest `x` and `y` of every point.
pub(crate) fn bounds(series: &[Series]) -> (f64, f64, f64, f64) {
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, 0.0f64, f64::MAX, 0.0f64);
    for &(x, y) in series.iter().flat_map(|s| s.1.iter()) {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    (x0, x1, y0, y1)
}

/// The error of a plot written to `path`.
pub(crate) fn plot_error(path: &Path) -> impl Fn(&dyn std::fmt::Display) -> String + '_ {
    move |e| format!("{}: {e}", path.display())
}

/// Draws every series (a line and dots) of a chart whose mesh is drawn, and
/// the legend.
pub(crate) fn draw_series<'a, 'b: 'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, Y>>,
    series: &[Series],
    path: &Path,
) -> Result<(), String>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let e = plot_error(path);
    for (i, (name, points, thin)) in series.iter().enumerate() {
        let c = colour(i);
        let style = c.stroke_width(if *thin { 1 } else { 2 });
        chart
            .draw_series(LineSeries::new(points.iter().copied(), style))
            .map_err(|x| e(&x))?
            .label(name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        chart
            .draw_series(points.iter().map(|&p| Circle::new(p, 3, c.filled())))
            .map_err(|x| e(&x))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|x| e(&x))?;
    Ok(())
}

/// A log-log line plot.
fn plot(path: &Path, title: &str, ylabel: &str, series: &[Series]) -> Result<(), String> {
    let (x0, x1, y0, y1) = bounds(series);
    if x1 <= 0.0 || y1 <= 0.0 {
        return Ok(());
    }
    let e = plot_error(path);
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(
            (x0..x1 * 1.05).log_scale(),
            (y0 * 0.8..y1 * 1.25).log_scale(),
        )
        .map_err(|x| e(&x))?;
    chart
        .configure_mesh()
        .x_desc("message size")
        .y_desc(ylabel)
        .x_label_formatter(&|v| human(v.round() as u64))
        .y_label_formatter(&|v| format!("{v:.3}"))
        .draw()
        .map_err(|x| e(&x))?;
    draw_series(&mut chart, series, path)?;
    root.present().map_err(|x| e(&x))?;
    Ok(())
}

fn series_of(records: &[Record], case: &str, variant: &str, imp: &str) -> Vec<(f64, f64)> {
    records
        .iter()
        .filter(|r| {
            r.case == case && r.variant == variant && r.imp == imp && r.pass && r.value > 0.0
        })
        .map(|r| (r.bytes as f64, r.value))
        .collect()
}

/// Writes the SVG plots into `dir`; returns their file names.
pub fn plots(records: &[Record], dir: &Path, pes: &str) -> Result<Vec<String>, String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let mut written = Vec::new();
    let imps: Vec<String> = {
        let mut v: Vec<String> = Vec::new();
        for r in records {
            if !v.contains(&r.imp) && r.imp != "ceiling" && r.imp != "nccl" {
                v.push(r.imp.clone());
            }
        }
        v
    };
    let ceiling = copy_ceiling(records);
    for case in ["put_bw", "get_bw"] {
        for scope in ["thread", "warp", "block"] {
            let mut series: Vec<Series> = Vec::new();
            let mut xs: Vec<f64> = Vec::new();
            for imp in &imps {
                for kind in ["", "_nbi", "_p2p"] {
                    let v = format!("{scope}{kind}");
                    let s = series_of(records, case, &v, imp);
                    xs.extend(s.iter().map(|p| p.0));
                    if !s.is_empty() {
                        series.push((format!("{imp} {v}"), s, kind == "_nbi"));
                    }
                }
            }
            if series.is_empty() {
                continue;
            }
            if let Some(c) = ceiling {
                let (lo, hi) = xs
                    .iter()
                    .fold((f64::MAX, 0.0f64), |a, &x| (a.0.min(x), a.1.max(x)));
                series.push(("one-way copy ceiling".into(), vec![(lo, c), (hi, c)], true));
            }
            let name = format!("{case}_{scope}.svg");
            let what = if case == "put_bw" { "put" } else { "get" };
            plot(
                &dir.join(&name),
                &format!("{what} bandwidth, {scope} scope ({pes})"),
                "GB/s",
                &series,
            )?;
            written.push(name);
        }
    }
    // All-reduce latency.
    let mut series: Vec<Series> = Vec::new();
    for imp in imps.iter().map(String::as_str).chain(["nccl"]) {
        let s: Vec<(f64, f64)> = records
            .iter()
            .filter(|r| r.case == "allreduce" && r.imp == imp && r.pass && r.time_us > 0.0)
            .map(|r| (r.bytes as f64, r.time_us))
            .collect();
        if !s.is_empty() {
            let label = if imp == "nccl" {
                "NCCL".to_string()
            } else {
                format!("in-kernel, {imp}")
            };
            series.push((label, s, false));
        }
    }
    if !series.is_empty() {
        let name = "allreduce_latency.svg".to_string();
        plot(
            &dir.join(&name),
            &format!("all-reduce (f32 sum, in place) time ({pes})"),
            "time (us)",
            &series,
        )?;
        written.push(name);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(case: &str, variant: &str, bytes: u64, imp: &str, t: f64, v: f64, unit: &str) -> Record {
        Record {
            case: case.into(),
            variant: variant.into(),
            bytes,
            imp: imp.into(),
            time_us: t,
            value: v,
            unit: unit.into(),
            pass: true,
            checked: true,
        }
    }

    #[test]
    fn csv_round_trip_and_table() {
        let recs = vec![
            rec(
                "copy_ceiling",
                "one-way",
                1 << 27,
                "ceiling",
                60.0,
                2000.0,
                "GB/s",
            ),
            rec("put_bw", "block", 1 << 20, "rust", 1.0, 1000.0, "GB/s"),
            rec("put_bw", "block", 1 << 20, "cpp", 1.1, 900.0, "GB/s"),
            rec("allreduce", "one-shot", 8192, "rust", 5.0, 1.0, "GB/s"),
            rec("allreduce", "nccl", 8192, "nccl", 15.0, 0.5, "GB/s"),
        ];
        let info = vec![("GPU".to_string(), "test".to_string())];
        let csv = to_csv(&info, &recs);
        let (i2, r2) = from_csv(&csv).unwrap();
        assert_eq!(i2, info);
        assert_eq!(r2.len(), recs.len());
        assert_eq!(r2[1].bytes, 1 << 20);
        let t = table(&r2);
        assert!(t.contains("| put_bw | block | 1 MiB |"), "{t}");
        assert!(t.contains("0.909"), "{t}");
        assert!(t.contains("50.0 %"), "{t}");
        let g = targets(&r2);
        assert!(g.contains("3.00×"), "{g}");
        let dir = std::env::temp_dir().join(format!("nvshmem-bench-test-{}", std::process::id()));
        let files = plots(&r2, &dir, "1 PE").unwrap();
        assert!(files.contains(&"put_bw_block.svg".to_string()));
        assert!(
            std::fs::read_to_string(dir.join("put_bw_block.svg"))
                .unwrap()
                .contains("<svg")
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}
