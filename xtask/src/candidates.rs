//! Candidates of the benchmark's slow families (issue 24), and the other ways
//! a user can build the same kernels: the benchmark's kernels
//! (`bench/kernel`) and the all-reduce kernels built again with other device
//! code or another device link, each into a folder of its own, so that one
//! `nvshmem-bench` run times every candidate beside the default build and the
//! C++ twins (`--rust NAME=DIR`).

use nvshmem_builder::{Arch, Builder, DeviceLink, Version};
use std::path::{Path, PathBuf};

/// One candidate: a name, what it changes, and the cargo features and device
/// link of the two kernel crates that make it.
pub struct Candidate {
    /// The implementation name in the results is `rust-<name>`.
    pub name: &'static str,
    /// What it changes.
    pub what: &'static str,
    /// Features of `bench-kernels`.
    bench: &'static [&'static str],
    /// Features of `allreduce-kernels`.
    allreduce: &'static [&'static str],
    /// How the cubins are linked ([`DeviceLink::Auto`]: as the default build).
    link: DeviceLink,
}

/// Every candidate, timed beside the default build.
pub const CANDIDATES: &[Candidate] = &[
    Candidate {
        name: "thread-serial",
        what: "thread scope copies one 16-byte word at a time, each load then its store (NVSHMEM's order)",
        bench: &["nvshmem-device/copy-thread-serial"],
        allreduce: &[],
        link: DeviceLink::Auto,
    },
    Candidate {
        name: "nvshmem-path",
        what: "put/get through NVSHMEM's own RMA path for every peer (the device crate's `nvshmem-path`), not the direct copy",
        bench: &["nvshmem-device/nvshmem-path"],
        allreduce: &["nvshmem-device/nvshmem-path"],
        link: DeviceLink::Auto,
    },
    Candidate {
        name: "separate",
        what: "the default device code compiled separately (`ptxas -c` + `nvlink`, as `nvcc -rdc`), not whole-program",
        bench: &[],
        allreduce: &[],
        link: DeviceLink::Separate,
    },
];

/// The kernel crates of a candidate, relative to the repository.
const CRATES: [(&str, &str); 2] = [
    ("bench/kernel", "bench-kernels"),
    ("examples/allreduce/kernel", "allreduce-kernels"),
];

/// Builds every candidate into `out/<name>/nvshmem-<version>/<arch>/`;
/// returns `(name, that folder)` of each.
pub fn build(
    root: &Path,
    out: &Path,
    version: Version,
    arch: Arch,
) -> Result<Vec<(String, PathBuf)>, String> {
    let mut built = Vec::new();
    for c in CANDIDATES {
        println!("candidate {}: {}", c.name, c.what);
        let dir = out.join(c.name);
        for ((krate, name), features) in CRATES.iter().zip([c.bench, c.allreduce]) {
            let mut b = Builder::new(root.join(krate))
                .arch(arch)
                .nvshmem_version(version)
                .target_dir(root.join("target/nvshmem-kernels"))
                .out_dir(&dir)
                .device_link(c.link);
            for f in features {
                b = b.feature(*f);
            }
            let o = b
                .build()
                .map_err(|e| format!("candidate {}: {name}: {e}", c.name))?;
            let regs: Vec<String> = o
                .manifest
                .kernels
                .iter()
                .filter(|k| k.name.starts_with("bw_") || k.name.starts_with("allreduce_"))
                .filter_map(|k| Some(format!("{} {}", k.name, k.registers?)))
                .collect();
            println!(
                "candidate {}: {name}: registers {}",
                c.name,
                regs.join(", ")
            );
        }
        built.push((
            c.name.to_string(),
            dir.join(format!("nvshmem-{version}"))
                .join(arch.to_string()),
        ));
    }
    Ok(built)
}

/// The candidates already built under `dir` (`<dir>/<name>/nvshmem-<version>/<arch>/`
/// holding both crates' cubins or PTX), in [`CANDIDATES`] order.
pub fn find(dir: &Path, version: Version, arch: Arch) -> Vec<(String, PathBuf)> {
    CANDIDATES
        .iter()
        .map(|c| {
            (
                c.name.to_string(),
                dir.join(c.name)
                    .join(format!("nvshmem-{version}"))
                    .join(arch.to_string()),
            )
        })
        .filter(|(_, d)| {
            CRATES
                .iter()
                .all(|(_, k)| d.join(format!("{k}.json")).is_file())
        })
        .collect()
}
