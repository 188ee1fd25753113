//! Nsight Compute (`ncu`) around `nvshmem-bench`: the command that profiles
//! it, and the report turned into CSV. Used by `xtask bench --ncu` and by
//! `gpu-run profile-gemm`.

use std::path::Path;
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
/// CSV). Clocks stay as the driver sets them (`--clock-control none`).
pub fn run(regex: &str, sections: &[&str], report: &Path, program: &Path) -> Command {
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
    c
}

/// `report.ncu-rep` as CSV, one launch after another: `report.csv` is ncu's
/// details page (each section's metrics and its rules' advice, such as the
/// dominant stall), `report-raw.csv` every metric collected, a row per launch
/// (the stall reasons per issued instruction among them).
pub fn export(report: &Path) -> Result<(), String> {
    let rep = report.with_extension("ncu-rep");
    let name = report.file_name().unwrap_or_default().to_string_lossy();
    for (page, suffix) in [("details", ".csv"), ("raw", "-raw.csv")] {
        let mut c = Command::new("ncu");
        c.args(["--csv", "--page", page, "--import"]).arg(&rep);
        crate::stdout_to(&mut c, &report.with_file_name(format!("{name}{suffix}")))?;
    }
    Ok(())
}
