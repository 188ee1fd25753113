//! The benchmark: every case timed as a Rust kernel (this project's builder)
//! and as its CUDA C++ twin (`bench/cpp/kernels.cu`, nvcc `-rdc=true` against
//! `libnvshmem_device.a`, and with `-dlto`), with NCCL and the hardware
//! ceilings in the same run; then a table, a CSV and SVG plots.
//!
//! - [`measure`] runs on the GPU (every PE of an `nvshmem-run` job);
//! - [`report`] turns the records into the table, the CSV and the plots, and
//!   reads a CSV back (`nvshmem-bench render`), so the plots can be redrawn
//!   without a GPU.

pub mod gemm;
pub mod measure;
pub mod report;

/// The folder of the benchmark's own kernels (`bench-kernels`):
/// `NVSHMEM_RS_BENCH_PTX_DIR` at run time when set (a GPU machine with a
/// copied build), else the one `build.rs` wrote. The all-reduce and GEMM
/// kernels are the root package's: [`nvshmem_rs::ptx_dir`].
pub fn ptx_dir() -> std::path::PathBuf {
    std::env::var_os("NVSHMEM_RS_BENCH_PTX_DIR")
        .map(Into::into)
        .unwrap_or_else(|| env!("NVSHMEM_RS_BENCH_PTX_DIR").into())
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
    /// Whether the result was checked correct before timing.
    pub pass: bool,
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

/// `8 B`, `4 KiB`, `64 MiB`.
pub fn human(bytes: u64) -> String {
    if bytes >= 1 << 30 && bytes.is_multiple_of(1 << 30) {
        format!("{} GiB", bytes >> 30)
    } else if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.is_multiple_of(1 << 10) {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} B")
    }
}

/// The median of `v` (sorted in place); `NaN` when empty.
pub fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The byte pattern the kernels' `pattern_byte` writes (never zero).
pub fn pattern_byte(i: u64, seed: u32) -> u8 {
    let mut h = (i as u32) ^ ((i >> 32) as u32).wrapping_mul(0x27d4_eb2f);
    h = h.wrapping_mul(0x9e37_79b1) ^ seed.wrapping_mul(0x85eb_ca77);
    h ^= h >> 15;
    h = h.wrapping_mul(0x2c1b_3c6d);
    h ^= h >> 13;
    (h % 255) as u8 + 1
}

/// The all-reduce test pattern (the allreduce example's): PE `pe`'s value at `i` in round `seed`.
pub fn ar_pattern(pe: u32, i: u64, seed: u32) -> u32 {
    let mut h = (i as u32) ^ ((i >> 32) as u32).wrapping_mul(0x27d4_eb2f);
    h = h.wrapping_mul(0x9e37_79b1)
        ^ pe.wrapping_add(1).wrapping_mul(0x85eb_ca77)
        ^ seed.wrapping_mul(0xc2b2_ae3d);
    h ^= h >> 15;
    h = h.wrapping_mul(0x2c1b_3c6d);
    h ^= h >> 12;
    (h & 15) + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_names() {
        assert_eq!(sizes(8, 128, 4), vec![8, 32, 128]);
        assert_eq!(sizes(8, 100, 4), vec![8, 32, 100]);
        assert_eq!(human(8), "8 B");
        assert_eq!(human(4096), "4 KiB");
        assert_eq!(human(64 << 20), "64 MiB");
        let mut v = vec![3.0, 1.0, 2.0, 10.0];
        assert_eq!(median(&mut v), 2.5);
    }

    #[test]
    fn pattern_never_zero() {
        assert!((0..100_000).all(|i| pattern_byte(i, 7) != 0));
        assert!((0..64).any(|i| pattern_byte(i, 7) != pattern_byte(0, 7)));
    }
}
