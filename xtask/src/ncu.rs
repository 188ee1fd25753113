//! Nsight Compute (`ncu`) around `nvshmem-bench`: the command that profiles
//! it, and the report turned into CSV. Used by `xtask bench --ncu` and by
//! `gpu-run profile-gemm`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The symmetric heap of `nvshmem-bench` under `ncu`: ncu's thread starts
/// before `main`, so the bench cannot set its own heap and takes this one
/// from the environment. 2 GiB: what the benchmark asks for, and more than
/// `gemm` at 8192 needs (1.25 GiB).
const NCU_SYMMETRIC_SIZE: &str = "2147483648";

/// ncu's sections for a memory-bound kernel: L1/L2 tables, warp stall
/// reasons, per-instruction counters.
pub const MEMORY_SECTIONS: &[&str] = &[
    "SpeedOfLight",
    "MemoryWorkloadAnalysis_Tables",
    "WarpStateStats",
    "SourceCounters",
    "LaunchStats",
];

/// ncu's sections for a tensor-core GEMM: pipe use, occupancy, issue slots,
/// warp stall reasons, memory tables, per-instruction counters.
pub const GEMM_SECTIONS: &[&str] = &[
    "SpeedOfLight",
    "ComputeWorkloadAnalysis",
    "Occupancy",
    "SchedulerStats",
    "WarpStateStats",
    "MemoryWorkloadAnalysis_Tables",
    "SourceCounters",
    "LaunchStats",
];

/// Whether `ncu` is on PATH; if not, an error that says where it comes from.
pub fn on_path() -> Result<(), String> {
    match crate::nvcc::on_path("ncu") {
        Some(_) => Ok(()),
        None => Err(
            "Nsight Compute's `ncu` is not on PATH: it comes with the CUDA toolkit \
                     (CUDA's bin/) or as a download from NVIDIA; add its folder to PATH"
                .into(),
        ),
    }
}

/// `ncu` running `program` (an `nvshmem-bench`), profiling the launches of
/// kernels named like `regex` with `sections`, into the report
/// `report.ncu-rep` (open it in Nsight Compute; [`export`] turns it into
/// CSV). Clocks stay as the driver sets them (`--clock-control none`). Under
/// `timeout` (`secs`), which ends the profiled program too. A report or CSV
/// of an earlier run at `report` is removed first: a run that profiles
/// nothing then exports nothing, instead of the old figures.
pub fn run(regex: &str, sections: &[&str], report: &Path, program: &Path, secs: u64) -> Command {
    for old in [".ncu-rep", ".csv", "-raw.csv"] {
        let _ = std::fs::remove_file(with_suffix(report, old));
    }
    let mut c = Command::new("ncu");
    c.args([
        "--clock-control",
        "none",
        "--force-overwrite",
        "--kernel-name",
    ])
    .arg(format!("regex:{regex}"));
    for section in sections {
        c.args(["--section", section]);
    }
    c.arg("--export")
        .arg(report)
        .arg(program)
        .env("NVSHMEM_SYMMETRIC_SIZE", NCU_SYMMETRIC_SIZE);
    crate::timed(c, secs)
}

/// `report` with `suffix` added to its file name.
fn with_suffix(report: &Path, suffix: &str) -> PathBuf {
    let name = report.file_name().unwrap_or_default().to_string_lossy();
    report.with_file_name(format!("{name}{suffix}"))
}

/// `report.ncu-rep` as CSV, one launch after another: `report.csv` is ncu's
/// details page (each section's metrics and its rules' advice, such as the
/// dominant stall), `report-raw.csv` every metric collected, a row per launch
/// (the stall reasons per issued instruction among them).
pub fn export(report: &Path) -> Result<(), String> {
    let rep = with_suffix(report, ".ncu-rep");
    if !rep.is_file() {
        return Err(format!(
            "ncu wrote no report ({} is missing)",
            rep.display()
        ));
    }
    for (page, suffix) in [("details", ".csv"), ("raw", "-raw.csv")] {
        let mut c = Command::new("ncu");
        c.args(["--csv", "--page", page, "--import"]).arg(&rep);
        crate::stdout_to(&mut c, &with_suffix(report, suffix))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_is_timed_exports_the_report_and_clears_an_old_one() {
        let dir = std::env::temp_dir().join(format!("xtask-ncu-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let report = dir.join("ncu-pe1");
        for old in ["ncu-pe1.ncu-rep", "ncu-pe1.csv", "ncu-pe1-raw.csv"] {
            std::fs::write(dir.join(old), "old").unwrap();
        }
        let c = run("^k$", MEMORY_SECTIONS, &report, Path::new("bench"), 240);
        let args: Vec<String> = c
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(c.get_program(), "timeout");
        assert_eq!(args[..4], ["-k", "10", "240", "ncu"]);
        let at = args.iter().position(|a| a == "--export").unwrap();
        assert_eq!(args[at + 1], report.to_string_lossy());
        assert_eq!(args[at + 2], "bench");
        assert!(
            c.get_envs()
                .any(|(k, v)| k == "NVSHMEM_SYMMETRIC_SIZE" && v.is_some())
        );
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        assert!(export(&report).unwrap_err().contains("ncu wrote no report"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
