//! Host-side pieces of the bf16 tensor-core kernels, shared by the `ag_gemm`
//! (bf16 part) and `gemm_rs` examples, the benchmark and the GPU tests: the
//! kernels' tile shapes and launch figures (which must match
//! `examples/tc_gemm/tiles`), their TMA tensor maps, and the persistent-grid
//! size that keeps every PE's blocks co-resident.

use half::bf16;
use nvshmem_host::exchange::WordExchange;
use nvshmem_host::tensor_map::{self, TensorMap, TmaSwizzle};
use nvshmem_host::{DevicePtr, Kernel, Nvshmem, SymBuffer};

/// The `mma.sync` tiles (`tc_gemm_tiles::sm80`): 128 × 128, K a multiple of 32.
pub mod mma {
    /// Rows of C per tile.
    pub const BM: usize = 128;
    /// Columns of C per tile.
    pub const BN: usize = 128;
    /// K per pipeline stage.
    pub const BK: usize = 32;
    /// Threads per block.
    pub const THREADS: u32 = 128;
    /// Dynamic shared memory: 4 stages of (128 + 128) × 32 bf16.
    pub const SMEM_BYTES: u32 = 4 * 256 * 32 * 2;
}

/// The `wgmma` + TMA tiles (`tc_gemm_tiles::sm90`): 128 × 256, K a multiple of 64.
pub mod wgmma {
    /// Rows of C per tile.
    pub const BM: usize = 128;
    /// Columns of C per tile.
    pub const BN: usize = 256;
    /// K per pipeline stage.
    pub const BK: usize = 64;
    /// Threads per block: a producer and two consumer warpgroups.
    pub const THREADS: u32 = 384;
    /// Dynamic shared memory: alignment slack, 4 stages, two 16 KiB
    /// epilogue staging buffers, the barriers.
    pub const SMEM_BYTES: u32 = 1024 + 4 * (128 + 256) * 64 * 2 + 2 * 64 * 128 * 2 + 16 * 4;
    /// The A map's box: 64 (K) × 128 rows.
    pub const A_BOX: (u32, u32) = (64, 128);
    /// The B map's box: 64 (K) × 256 rows.
    pub const B_BOX: (u32, u32) = (64, 256);
}

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// The tensor map of a row-major `rows × k` bf16 operand at `ptr` for the
/// wgmma kernels, with box `box_dims` (`wgmma::A_BOX` or `wgmma::B_BOX`) and
/// 128-byte swizzle.
pub fn operand_map(
    ptr: DevicePtr<bf16>,
    rows: usize,
    k: usize,
    box_dims: (u32, u32),
) -> Res<TensorMap> {
    Ok(tensor_map::encode_2d(
        ptr,
        rows as u64,
        k as u64,
        (k * 2) as u64,
        box_dims,
        TmaSwizzle::B128,
    )?)
}

/// Tensor maps in device memory, as the kernels take them.
pub struct DeviceMaps {
    buf: SymBuffer<TensorMap>,
}

impl DeviceMaps {
    /// Copies `maps` to device memory. **Collective** (it allocates
    /// symmetric memory): every PE calls it with as many maps.
    pub fn new(nv: &Nvshmem, maps: &[TensorMap]) -> Res<DeviceMaps> {
        Ok(DeviceMaps {
            buf: nv.alloc_from(maps)?,
        })
    }

    /// The device address of map `i`.
    pub fn ptr(&self, i: usize) -> DevicePtr<TensorMap> {
        assert!(i < self.buf.len(), "map {i} of {}", self.buf.len());
        DevicePtr::new(self.buf.device_ptr().addr() + (i * std::mem::size_of::<TensorMap>()) as u64)
    }
}

/// A persistent grid for `kernel`: at most `tiles` blocks, and no more than
/// this PE's share of what its GPU holds at once (agreed with every PE that
/// shares it), so that the blocks of every PE are resident together (a fused
/// kernel whose blocks wait for a peer's relies on it). **Collective**: every
/// PE calls it, in the same order.
pub fn persistent_grid(
    nv: &Nvshmem,
    ex: &WordExchange,
    kernel: &Kernel,
    threads: u32,
    smem: u32,
    tiles: usize,
) -> Res<u32> {
    let agreed = nv.agree_on_grid(ex, kernel.max_collective_blocks(threads, smem)?)?;
    Ok((agreed.max_grid as usize).min(tiles).max(1) as u32)
}

/// Deterministic bf16 data in [-1, 1): element `i` of stream `seed`.
pub fn bf16_value(seed: u64, i: u64) -> bf16 {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ i.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    bf16::from_f32(((x >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0)
}

/// Whether `got` is within bf16 output rounding (`|want|/128`) plus an f32
/// accumulation bound (`k · ε · Σ|a·b|`) of the f64 `want`.
pub fn bf16_close(got: f64, want: f64, mag: f64, k: usize) -> bool {
    (got - want).abs() <= want.abs() / 128.0 + k as f64 * f32::EPSILON as f64 * mag + 1e-6
}
