//! The benchmark: every case timed as a Rust kernel (this project's builder)
//! and as its CUDA C++ twin (`bench/cpp/kernels.cu`, nvcc `-rdc=true` against
//! `libnvshmem_device.a`, and with `-dlto`), with NCCL and the hardware
//! ceilings in the same run; then a table, a CSV and SVG plots.
//!
//! - [`measure`] runs on the GPU (every PE of an `nvshmem-run` job);
//! - [`report`] turns the records into the table, the CSV and the plots, and
//!   reads a CSV back (`nvshmem-bench render`), so the plots can be redrawn
//!   without a GPU;
//! - [`doc`] makes the generated tables of `BENCHMARKS.md` from the committed
//!   CSVs (`nvshmem-bench doc`).

#![warn(missing_docs)]

pub mod candidates;
pub mod doc;
pub mod gemm;
pub mod measure;
pub mod moe;
pub mod report;

pub use example_cli::Res;
pub use example_measure::{human, median};
pub use example_patterns::{pattern as ar_pattern, pattern_byte};

/// The folder of the benchmark's own kernels (`bench-kernels`):
/// `NVSHMEM_RS_BENCH_PTX_DIR` at run time when set (a GPU machine with a
/// copied build), else the one `build.rs` wrote. The all-reduce and GEMM
/// kernels are the examples' ([`example_allreduce::ptx_dir`], ...).
pub fn ptx_dir() -> std::path::PathBuf {
    example_cli::kernel_dir("NVSHMEM_RS_BENCH_PTX_DIR", env!("NVSHMEM_RS_BENCH_PTX_DIR"))
}

/// One measurement.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// `put_bw`, `p_lat`, `allreduce`, `copy_ceiling`, ...
    pub case: String,
    /// `block`, `warp_nbi`, `one-shot`, ... (empty when the case has no variants).
    pub variant: String,
    /// Message or buffer size in bytes (0 when the case has none).
    pub bytes: u64,
    /// `rust`, `cpp`, `cpp-lto`, `nccl` or `ceiling`.
    pub imp: String,
    /// Median time of one operation, in microseconds.
    pub time_us: f64,
    /// The figure of merit: GB/s for bandwidths, Gop/s for atomic throughput,
    /// microseconds for latencies.
    pub value: f64,
    /// The unit of `value`.
    pub unit: String,
    /// Whether the result was checked correct before timing (true too for
    /// a row that checks nothing: see `checked`).
    pub pass: bool,
    /// Whether anything was checked: `false` for rows that only measure
    /// (written `UNCHECKED` in the CSV and the table, never `PASS`).
    pub checked: bool,
}

/// The sizes `from, from * step, ...` up to `to` (`to` included).
pub fn sizes(from: u64, to: u64, step: u64) -> Vec<u64> {
    let mut v = Vec::new();
    let mut s = from;
    while s < to {
        v.push(s);
        s *= step;
    }
    v.push(to);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_ladders() {
        assert_eq!(sizes(8, 128, 4), vec![8, 32, 128]);
        assert_eq!(sizes(8, 100, 4), vec![8, 32, 100]);
    }
}
