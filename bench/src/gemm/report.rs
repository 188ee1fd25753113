//! The GEMM records as a markdown table and SVG plots.

use crate::report::{Series, bounds, draw_series, plot_error};
use crate::{Record, Res};
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// A markdown table of the GEMM records: TFLOP/s per size, % of cuBLAS,
/// and, where the records have the `mma.sync` peak (`mma_peak`), that peak
/// and the `mma.sync` kernels' % of it.
pub fn table(records: &[Record]) -> String {
    let mut s = String::new();
    let peak = records
        .iter()
        .find(|r| r.case == "mma_peak")
        .map(|r| r.value);
    if let Some(p) = peak {
        s += &format!("\nmma.sync peak: {p:.1} TFLOP/s\n");
    }
    for case in ["gemm_bf16", "ag_gemm_bf16", "gemm_rs_bf16"] {
        let rows: Vec<&Record> = records.iter().filter(|r| r.case == case).collect();
        if rows.is_empty() {
            continue;
        }
        // The peak column only where there is a peak (older runs have none).
        let peak = peak.filter(|_| case == "gemm_bf16");
        let (head, rule) = match peak {
            Some(_) => (" % of mma.sync peak |", "---:|"),
            None => ("", ""),
        };
        s += &format!(
            "\n{case}: TFLOP/s (time), % of the cuBLAS row\n\n| size | variant | time | TFLOP/s | % of cuBLAS |{head} check |\n|---:|---|---:|---:|---:|{rule}---|\n"
        );
        for r in &rows {
            let blas = rows
                .iter()
                .find(|b| b.imp == "cublas" && b.bytes == r.bytes)
                .map(|b| b.value);
            let pct = blas
                .filter(|_| r.imp != "cublas")
                .map(|b| format!("{:.0}%", 100.0 * r.value / b))
                .unwrap_or_default();
            let of_peak = match peak {
                Some(p) if super::is_mma(&r.imp, &r.variant) => {
                    format!(" {:.0}% |", 100.0 * r.value / p)
                }
                Some(_) => " |".into(),
                None => String::new(),
            };
            s += &format!(
                "| {} | {} | {:.3} ms | {:.1} | {pct} |{of_peak} {} |\n",
                r.bytes,
                r.variant,
                r.time_us / 1e3,
                r.value,
                if r.pass { "pass" } else { "FAIL" }
            );
        }
    }
    s
}

/// `gemm_tflops.svg` (and `ag_gemm_tflops.svg`, `gemm_rs_tflops.svg`) in
/// `dir`: TFLOP/s against the problem size, one line per variant.
pub fn plots(records: &[Record], dir: &Path, label: &str) -> Res<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut files = Vec::new();
    for (case, title) in [
        ("gemm_bf16", "bf16 GEMM, M = N = K"),
        ("ag_gemm_bf16", "all-gather + GEMM, M = N = K"),
        ("gemm_rs_bf16", "GEMM + reduce-scatter, M = N = K"),
    ] {
        let mut variants: Vec<String> = records
            .iter()
            .filter(|r| r.case == case)
            .map(|r| r.variant.clone())
            .collect();
        variants.dedup();
        variants.sort();
        variants.dedup();
        let series: Vec<Series> = variants
            .iter()
            .map(|v| {
                let pts = records
                    .iter()
                    .filter(|r| r.case == case && &r.variant == v && r.pass && r.value > 0.0)
                    .map(|r| (r.bytes as f64, r.value))
                    .collect();
                (v.clone(), pts, false)
            })
            .filter(|s: &Series| !s.1.is_empty())
            .collect();
        if series.is_empty() {
            continue;
        }
        let path = dir.join(format!("{}_tflops.svg", case.trim_end_matches("_bf16")));
        let (x0, x1, _, y1) = bounds(&series);
        let e = plot_error(&path);
        let root = SVGBackend::new(&path, (900, 560)).into_drawing_area();
        root.fill(&WHITE).map_err(|x| e(&x))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("{title} ({label})"), ("sans-serif", 22))
            .margin(14)
            .x_label_area_size(44)
            .y_label_area_size(70)
            .build_cartesian_2d((x0 * 0.9..x1 * 1.1).log_scale(), 0f64..y1 * 1.15)
            .map_err(|x| e(&x))?;
        chart
            .configure_mesh()
            .x_desc("M = N = K")
            .y_desc("TFLOP/s")
            .x_label_formatter(&|v| format!("{}", v.round() as u64))
            .draw()
            .map_err(|x| e(&x))?;
        draw_series(&mut chart, &series, &path)?;
        root.present().map_err(|x| e(&x))?;
        drop(chart);
        drop(root);
        files.push(path.clone());
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(case: &str, variant: &str, imp: &str, size: u64, tf: f64) -> Record {
        Record {
            case: case.into(),
            variant: variant.into(),
            bytes: size,
            imp: imp.into(),
            time_us: 1.0,
            value: tf,
            unit: "TFLOP/s".into(),
            pass: true,
            checked: true,
        }
    }

    #[test]
    fn table_and_plots_without_a_gpu() {
        let records = vec![
            rec("gemm_bf16", "cublas", "cublas", 4096, 700.0),
            rec("gemm_bf16", "wgmma", "rust", 4096, 630.0),
            rec("gemm_bf16", "wgmma", "rust", 8192, 660.0),
            rec("gemm_bf16", "cublas", "cublas", 8192, 720.0),
            rec("ag_gemm_bf16", "fused", "rust", 4096, 500.0),
        ];
        let t = table(&records);
        assert!(
            t.contains("| 4096 | wgmma | 0.001 ms | 630.0 | 90% | pass |"),
            "{t}"
        );
        // With the mma.sync peak: its line and the mma rows' % of it.
        let mut with_peak = records.clone();
        with_peak.push(rec("mma_peak", "m16n8k16", "ceiling", 0, 500.0));
        with_peak.push(rec("gemm_bf16", "mma", "rust", 4096, 400.0));
        let t = table(&with_peak);
        assert!(t.contains("mma.sync peak: 500.0 TFLOP/s"), "{t}");
        assert!(
            t.contains("| 4096 | mma | 0.001 ms | 400.0 | 57% | 80% | pass |"),
            "{t}"
        );
        assert!(
            t.contains("| 4096 | wgmma | 0.001 ms | 630.0 | 90% | | pass |"),
            "{t}"
        );
        let dir = std::env::temp_dir().join(format!("gemm-plots-{}", std::process::id()));
        let files = plots(&records, &dir, "test").unwrap();
        assert_eq!(files.len(), 2);
        assert!(std::fs::read_to_string(&files[0]).unwrap().contains("<svg"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
