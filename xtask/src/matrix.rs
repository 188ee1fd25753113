//! `cargo xtask matrix`: the coverage kernels (`tests/kernels/coverage`,
//! every public device function) built through `ptxas` for every supported
//! NVSHMEM version × CUDA major × {sm_80, sm_90, sm_100}, with a table of
//! the results (`target/matrix/matrix.md`: the README's build matrix).
//!
//! Nothing is downloaded: a version that is not in the per-user cache (or
//! python3's site-packages) is a SKIP naming the command that fetches it.

use nvshmem_builder::install::{Installation, Query};
use nvshmem_builder::{Arch, Builder, CudaMajor, DeviceLink, SUPPORTED_VERSIONS, Version};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// The architectures of the matrix: Ampere, Hopper, Blackwell.
const ARCHS: [u32; 3] = [80, 90, 100];

#[derive(clap::Args)]
pub struct Args {
    /// Only these NVSHMEM versions (repeatable) [default: every supported one].
    #[arg(long = "nvshmem-version")]
    versions: Vec<Version>,
    /// Only these CUDA majors (repeatable) [default: 12 and 13].
    #[arg(long = "cuda-major")]
    cuda: Vec<CudaMajor>,
    /// Only these architectures (repeatable) [default: sm_80, sm_90, sm_100].
    #[arg(long = "arch")]
    archs: Vec<Arch>,
    /// Where the table goes (markdown) [default: target/matrix/matrix.md].
    #[arg(long)]
    table: Option<PathBuf>,
}

/// A [`GPU_TESTED`] row that passed every suite.
const YES: &str = "yes (H100, 2026-12-06)";

/// The matrix's last column: the GPU suites (1, 2 and 4 PEs, under MPS and
/// not, the collectives, the driver-version error) run against a release's
/// own host library (`gpu-pack nvshmem`, issue 27), one release per minor
/// line and CUDA major. Every release not listed is "not run".
const GPU_TESTED: &[(Version, CudaMajor, &str)] = &[
    (Version::new(3, 3, 20), CudaMajor::Cuda12, YES),
    (Version::new(3, 3, 20), CudaMajor::Cuda13, YES),
    (Version::new(3, 4, 5), CudaMajor::Cuda12, YES),
    (Version::new(3, 4, 5), CudaMajor::Cuda13, YES),
    (Version::new(3, 5, 21), CudaMajor::Cuda12, YES),
    (Version::new(3, 5, 21), CudaMajor::Cuda13, YES),
    (Version::new(3, 6, 5), CudaMajor::Cuda12, YES),
    (Version::new(3, 6, 5), CudaMajor::Cuda13, YES),
    (Version::new(3, 7, 2), CudaMajor::Cuda12, YES),
    (Version::new(3, 7, 2), CudaMajor::Cuda13, YES),
    (Version::new(3, 8, 0), CudaMajor::Cuda12, YES),
    (Version::new(3, 8, 0), CudaMajor::Cuda13, YES),
];

/// The GPU-tested cell of a release: its [`GPU_TESTED`] row, else "not run".
fn gpu_tested(v: Version, cuda: CudaMajor) -> &'static str {
    GPU_TESTED
        .iter()
        .find(|&&(gv, gc, _)| (gv, gc) == (v, cuda))
        .map_or("not run", |&(_, _, what)| what)
}

/// One cell: what happened to one (version, CUDA major, arch) build.
enum Outcome {
    Built {
        kernels: usize,
        registers: u32,
        mode: DeviceLink,
        seconds: f64,
    },
    Failed(String),
    Skipped(String),
}

pub fn run(args: Args) -> Result<ExitCode, String> {
    let root = crate::repo_root();
    let crate_dir = root.join("tests/kernels/coverage");
    let out_dir = root.join("target/matrix/ptx");
    let table_path = args
        .table
        .clone()
        .unwrap_or_else(|| root.join("target/matrix/matrix.md"));
    let archs: Vec<Arch> = if args.archs.is_empty() {
        ARCHS.iter().filter_map(|&n| Arch::new(n)).collect()
    } else {
        args.archs.clone()
    };
    let mut rows: Vec<(Version, CudaMajor, &'static str, Vec<Outcome>)> = Vec::new();
    for info in SUPPORTED_VERSIONS {
        if !args.versions.is_empty() && !args.versions.contains(&info.version) {
            continue;
        }
        for &cuda in info.cuda {
            if !args.cuda.is_empty() && !args.cuda.contains(&cuda) {
                continue;
            }
            let v = info.version;
            let query = Query::default().ignore_env().version(v).cuda(cuda);
            let installed = Installation::find(&query).is_ok();
            let mut cells = Vec::new();
            for arch in &archs {
                let what = format!("{v} cu{cuda} {arch}");
                if !installed {
                    let why = format!(
                        "NVSHMEM {v} for CUDA {cuda} is not installed: fetch it with `cargo run -p \
                         nvshmem-builder --features cli --bin nvshmem-build -- setup \
                         --no-toolchain --nvshmem-version {v} --cuda-major {cuda}`"
                    );
                    println!("SKIPPED {what}: {why}");
                    cells.push(Outcome::Skipped(why));
                    continue;
                }
                let started = Instant::now();
                let built = Builder::new(&crate_dir)
                    .arch(*arch)
                    .nvshmem_version(v)
                    .cuda_major(cuda)
                    .offline(true)
                    .out_dir(&out_dir)
                    .target_dir(root.join("target/nvshmem-kernels"))
                    .build();
                let cell = match built {
                    Ok(out) => Outcome::Built {
                        kernels: out.manifest.kernels.len(),
                        registers: out
                            .manifest
                            .kernels
                            .iter()
                            .filter_map(|k| k.registers)
                            .max()
                            .unwrap_or(0),
                        mode: out.manifest.device_link.unwrap_or_default(),
                        seconds: started.elapsed().as_secs_f64(),
                    },
                    Err(e) => Outcome::Failed(e.to_string()),
                };
                match &cell {
                    Outcome::Built {
                        kernels,
                        registers,
                        mode,
                        seconds,
                    } => println!(
                        "PASS {what}: {kernels} kernels through ptxas ({mode}), max {registers} \
                         registers, {seconds:.0} s"
                    ),
                    Outcome::Failed(e) => println!("FAIL {what}: {e}"),
                    Outcome::Skipped(_) => {}
                }
                cells.push(cell);
            }
            rows.push((v, cuda, info.torch, cells));
        }
    }
    let mut md = String::new();
    let _ = writeln!(
        md,
        "| NVSHMEM | CUDA | torch | {} | GPU-tested |",
        archs
            .iter()
            .map(Arch::to_string)
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let _ = writeln!(md, "|---|---|---|{}---|", "---|".repeat(archs.len()));
    let mut failed = false;
    for (v, cuda, torch, cells) in &rows {
        let cells: Vec<String> = cells
            .iter()
            .map(|c| match c {
                Outcome::Built {
                    kernels, seconds, ..
                } => format!("built ({kernels} kernels, {seconds:.0} s)"),
                Outcome::Failed(_) => {
                    failed = true;
                    "FAILED".into()
                }
                Outcome::Skipped(_) => "not fetched".into(),
            })
            .collect();
        let torch = if torch.is_empty() { "-" } else { torch };
        let gpu = gpu_tested(*v, *cuda);
        let _ = writeln!(
            md,
            "| {v} | {cuda} | {torch} | {} | {gpu} |",
            cells.join(" | ")
        );
    }
    // Why each cell that did not build did not, under the table.
    for (v, cuda, _, cells) in &rows {
        for (arch, c) in archs.iter().zip(cells) {
            if let Outcome::Failed(why) | Outcome::Skipped(why) = c {
                let first = why.lines().next().unwrap_or_default();
                let _ = writeln!(md, "\n- {v} CUDA {cuda} {arch}: {first}");
            }
        }
    }
    if let Some(dir) = table_path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(&table_path, &md).map_err(|e| format!("{}: {e}", table_path.display()))?;
    println!("\n{md}\n(table written to {})", table_path.display());
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_tested_rows_are_supported_releases_once() {
        for (i, &(v, cuda, _)) in GPU_TESTED.iter().enumerate() {
            let info = v.info().unwrap_or_else(|| panic!("{v} is not supported"));
            assert!(info.cuda.contains(&cuda), "{v} has no CUDA {cuda} wheel");
            assert!(
                !GPU_TESTED[..i].iter().any(|&(w, c, _)| (w, c) == (v, cuda)),
                "{v} CUDA {cuda} listed twice"
            );
        }
    }

    /// The README's table is written by hand from this command's output:
    /// its last column must say what [`GPU_TESTED`] says.
    #[test]
    fn readme_gpu_tested_column_matches() {
        let readme = std::fs::read_to_string(crate::repo_root().join("README.md")).unwrap();
        let mut rows = 0;
        for line in readme.lines() {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let (Some(Ok(v)), Some(Ok(cuda))) = (
                cells.get(1).map(|c| c.parse::<Version>()),
                cells.get(2).map(|c| c.parse::<CudaMajor>()),
            ) else {
                continue;
            };
            let cell = cells[cells.len() - 2];
            assert_eq!(cell, gpu_tested(v, cuda), "README row {v} CUDA {cuda}");
            rows += 1;
        }
        assert!(rows >= GPU_TESTED.len(), "README: {rows} matrix rows found");
    }
}
