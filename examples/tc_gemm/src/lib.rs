//! Host-side pieces of the bf16 tensor-core kernels, shared by the `ag_gemm`
//! (bf16 part) and `gemm_rs` examples, the benchmark and the GPU tests: the
//! kernels' tile shapes and launch figures (which must match
//! `examples/tc_gemm/tiles`), their TMA tensor maps, the persistent-grid
//! size that keeps every PE's blocks co-resident, and the standalone GEMMs
//! of `tc-gemm-kernels` ([`Gemm`], built by this package's build script).

#![warn(missing_docs)]

use example_cli::{KernelSet, Res};
use half::bf16;
use nvshmem_host::exchange::WordExchange;
use nvshmem_host::tensor_map::{self, TensorMap, TmaSwizzle};
use nvshmem_host::{DevicePtr, Kernel, LaunchConfig, Module, Nvshmem, SymBuffer};
use std::path::PathBuf;

mod variants;

nvshmem_host::include_kernels!(tc_gemm_kernels);

/// The folder of this package's kernels (`tc-gemm-kernels`): built for
/// `sm_90a` when the arch is `sm_90` ([`example_cli::hopper_dir`]).
pub fn ptx_dir() -> PathBuf {
    example_cli::hopper_dir(&example_cli::ptx_dir!())
}

/// The sizes of a fused GEMM: all-gather + GEMM (`example_ag_gemm::AgGemm`:
/// A `m_per_pe × k` on each PE, gathered; `m_per_pe` a multiple of its
/// `PANEL`) or GEMM + reduce-scatter (`example_gemm_rs::GemmRs`: `k` is each PE's share of the inner
/// dimension, `m_per_pe` the rows of C each PE ends with, a multiple of 128).
/// `n` is a multiple of [`mma::BN`] (of [`wgmma::BN`] for the wgmma kernels),
/// `k` of [`wgmma::BK`].
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// Rows per PE.
    pub m_per_pe: usize,
    /// Columns of B and C.
    pub n: usize,
    /// The inner dimension (per PE for GEMM + reduce-scatter).
    pub k: usize,
}

impl Shape {
    /// `(m_per_pe, n, k, m)` as the fused kernels take them, `m` the full M.
    pub fn kernel_dims(&self, m: usize) -> (u32, u32, u32, u32) {
        (self.m_per_pe as u32, self.n as u32, self.k as u32, m as u32)
    }
}
pub use variants::{Variant, Variants, variants};

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

    /// A candidate `mma.sync` GEMM kernel of `tc-gemm-kernels` (issue 24;
    /// `tc_gemm_tiles::sm80::candidates`), timed beside `gemm_bf16_mma` by
    /// `nvshmem-bench gemm --candidates`: the same arguments, its own tile.
    #[derive(Clone, Copy, Debug)]
    pub struct Candidate {
        /// The kernel.
        pub kernel: &'static str,
        /// What it changes.
        pub what: &'static str,
        /// Rows of C per tile.
        pub bm: usize,
        /// Columns of C per tile.
        pub bn: usize,
        /// K per stage (K must be a multiple).
        pub bk: usize,
        /// Threads per block.
        pub threads: u32,
        /// Dynamic shared memory: stages × (bm + bn) × bk bf16.
        pub smem: u32,
    }

    impl Candidate {
        /// The same with `warps` warps per block (the tile split in warp
        /// sub-tiles other than 64 × 64).
        const fn warps(self, warps: u32) -> Candidate {
            Candidate {
                threads: 32 * warps,
                ..self
            }
        }
    }

    /// A candidate of `bm × bn` tiles, `bk` per stage, `stages` deep, one
    /// warp per 64 × 64 (else [`Candidate::warps`]).
    const fn candidate(
        kernel: &'static str,
        what: &'static str,
        (bm, bn, bk, stages): (usize, usize, usize, usize),
    ) -> Candidate {
        Candidate {
            kernel,
            what,
            bm,
            bn,
            bk,
            threads: (bm / 64 * bn / 64 * 32) as u32,
            smem: (stages * (bm + bn) * bk * 2) as u32,
        }
    }

    /// Every candidate, as `tc_gemm_tiles::sm80::candidates` configures them.
    pub const CANDIDATES: &[Candidate] = &[
        candidate("gemm_bf16_mma_k64", "BK 64, 3 stages", (128, 128, 64, 3)),
        candidate(
            "gemm_bf16_mma_pf",
            "ldmatrix one k16 step ahead",
            (128, 128, 32, 4),
        ),
        candidate(
            "gemm_bf16_mma_k64_pf",
            "BK 64, 3 stages, ldmatrix ahead",
            (128, 128, 64, 3),
        ),
        candidate(
            "gemm_bf16_mma_256x128",
            "256 x 128 tile, 8 warps",
            (256, 128, 32, 4),
        ),
        candidate(
            "gemm_bf16_mma_256x128_k64",
            "256 x 128, 8 warps, BK 64, 3 stages",
            (256, 128, 64, 3),
        ),
        candidate(
            "gemm_bf16_mma_128x256",
            "128 x 256 tile, 8 warps",
            (128, 256, 32, 4),
        ),
        candidate(
            "gemm_bf16_mma_pipe",
            "ldmatrix pipelined across the stage barrier",
            (128, 128, 32, 4),
        ),
        candidate(
            "gemm_bf16_mma_w64x32",
            "8 warps of 64 x 32, 2 blocks/SM",
            (128, 128, 32, 4),
        )
        .warps(8),
    ];
}

/// The band height, in tile rows, of the standalone GEMMs' ([`Gemm`]) grouped
/// tile order (`tc_gemm_tiles::raster::grouped`) unless told otherwise: about
/// the square root of the number of blocks that run at once (132 SMs: one
/// wgmma block, two 128 × 128 `mma` blocks each).
pub const GROUP_M: u32 = 16;

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

/// A bf16 operand for [`DeviceMaps::operands`]: `(pointer, rows, k, box)`.
pub type Operand = (DevicePtr<bf16>, usize, usize, (u32, u32));

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

    /// The maps of bf16 operands (see [`operand_map`]): `(pointer, rows, k,
    /// box)` each. **Collective**, like [`new`](Self::new).
    pub fn operands(nv: &Nvshmem, operands: &[Operand]) -> Res<DeviceMaps> {
        let maps = operands
            .iter()
            .map(|&(ptr, rows, k, box_dims)| operand_map(ptr, rows, k, box_dims))
            .collect::<Res<Vec<_>>>()?;
        Self::new(nv, &maps)
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

/// The [`persistent_grid`] of a kernel made of `tc`'s tiles, for an `m × n`
/// result. **Collective.**
pub fn tile_grid(
    nv: &Nvshmem,
    ex: &WordExchange,
    kernel: &Kernel,
    tc: Tc,
    (m, n): (usize, usize),
) -> Res<u32> {
    let (threads, smem, tiles) = match tc {
        Tc::Mma => (mma::THREADS, mma::SMEM_BYTES, (m / mma::BM) * (n / mma::BN)),
        Tc::Wgmma => (
            wgmma::THREADS,
            wgmma::SMEM_BYTES,
            (m / wgmma::BM) * (n / wgmma::BN),
        ),
    };
    persistent_grid(nv, ex, kernel, threads, smem, tiles)
}

/// Deterministic bf16 data in [-1, 1): element `i` of stream `seed`.
pub fn bf16_value(seed: u64, i: u64) -> bf16 {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ i.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    bf16::from_f32(((x >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0)
}

/// The tolerance of a bf16 result whose f64 reference is `want`: bf16 output
/// rounding (`|want|/128`) plus an f32 accumulation bound (`k · ε · Σ|a·b|`,
/// `mag` = `Σ|a·b|`).
///
/// ```
/// assert!(tc_gemm::bf16_tolerance(128.0, 10.0, 64) > 1.0);
/// ```
pub fn bf16_tolerance(want: f64, mag: f64, k: usize) -> f64 {
    want.abs() / 128.0 + k as f64 * f32::EPSILON as f64 * mag + 1e-6
}

/// Which GEMM kernels: `mma.sync` (any sm_80+) or `wgmma` + TMA (sm_90a).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tc {
    /// `mma.sync` tiles ([`mma`]).
    Mma,
    /// `wgmma` + TMA tiles ([`wgmma`]).
    Wgmma,
}

/// The standalone GEMMs of `tc-gemm-kernels`: `C (m × n) = A (m × k) · Bᵀ`
/// (B `n × k`), bf16 in and out, f32 accumulation. Both walk the tiles in
/// grouped order (`tc_gemm_tiles::raster::grouped`): bands of `group` tile
/// rows ([`GROUP_M`] is a good default; 1 is row-major order), so the blocks
/// that run together share A and B panels in L2.
pub struct Gemm {
    k: tc_gemm_kernels::Kernels,
    /// The candidate kernels in this build ([`mma::CANDIDATES`]), by name:
    /// the benchmark walks them as a table.
    candidates: Vec<(mma::Candidate, Kernel)>,
}

impl KernelSet for Gemm {
    const CRATE: &'static str = tc_gemm_kernels::CRATE;

    fn dir() -> PathBuf {
        ptx_dir()
    }

    fn from_module(module: &Module) -> Res<Gemm> {
        Ok(Gemm {
            k: tc_gemm_kernels::Kernels::new(module)?,
            candidates: mma::CANDIDATES
                .iter()
                .filter_map(|c| Some((*c, module.kernel(c.kernel).ok()?)))
                .collect(),
        })
    }
}

impl Gemm {
    /// The `wgmma` kernel (`sm_90a` builds only).
    pub fn wgmma_kernel(&self) -> Option<&Kernel> {
        self.k.gemm_bf16_wgmma.as_ref()
    }

    /// The persistent grid of the `wgmma` kernel for an `m × n` result, when
    /// it is there. **Collective.**
    pub fn wgmma_grid(
        &self,
        nv: &Nvshmem,
        ex: &WordExchange,
        m: usize,
        n: usize,
    ) -> Res<Option<u32>> {
        self.wgmma_kernel()
            .map(|g| tile_grid(nv, ex, g, Tc::Wgmma, (m, n)))
            .transpose()
    }

    /// The `mma.sync` GEMM (`gemm_bf16_mma`), one block per [`mma`] tile in
    /// grouped order, bands of `group` tile rows, on this PE's stream.
    ///
    /// # Safety
    /// `a`, `b` and `c` hold `m × k`, `n × k` and `m × n` elements, and the
    /// sizes are multiples of the [`mma`] tiles.
    pub unsafe fn mma(
        &self,
        nv: &Nvshmem,
        (a, b, c): (DevicePtr<bf16>, DevicePtr<bf16>, DevicePtr<bf16>),
        (m, n, k): (usize, usize, usize),
        group: u32,
    ) -> Res<()> {
        let tiles = (m / mma::BM) * (n / mma::BN);
        let cfg = LaunchConfig::new(tiles as u32, mma::THREADS).shared_mem_bytes(mma::SMEM_BYTES);
        let (m, n, k) = (m as u32, n as u32, k as u32);
        // SAFETY: the caller's sizes; one block per tile.
        unsafe {
            tc_gemm_kernels::gemm_bf16_mma_with(&self.k, nv.stream(), cfg, a, b, c, m, n, k, group)?
        };
        Ok(())
    }

    /// The `mma.sync` ceiling probe ([`MmaPeak`]) on every block this PE's
    /// share of the GPU holds at once. **Collective** (the grid and the
    /// output are agreed with every PE).
    pub fn mma_peak(&self, nv: &Nvshmem, ex: &WordExchange) -> Res<MmaPeak<'_>> {
        let kernel = &self.k.mma_peak_bf16;
        let grid = persistent_grid(nv, ex, kernel, PEAK_THREADS, 0, usize::MAX)?;
        let per_thread = 4 * MmaPeak::CHAINS as usize;
        let out = nv.alloc::<f32>(grid as usize * PEAK_THREADS as usize * per_thread)?;
        Ok(MmaPeak {
            gemm: self,
            out,
            grid,
        })
    }

    /// The `mma.sync` kernel itself (its registers are in its info).
    pub fn mma_kernel(&self) -> &Kernel {
        &self.k.gemm_bf16_mma
    }

    /// The candidate `mma.sync` kernels in this build, with their tiles.
    pub fn candidates(&self) -> &[(mma::Candidate, Kernel)] {
        &self.candidates
    }

    /// Candidate `i` of [`candidates`](Self::candidates), as [`mma`](Self::mma):
    /// one block per tile of its own shape.
    ///
    /// # Safety
    /// As [`mma`](Self::mma), the sizes multiples of the candidate's tile and `bk`.
    pub unsafe fn mma_candidate(
        &self,
        nv: &Nvshmem,
        i: usize,
        (a, b, c): (DevicePtr<bf16>, DevicePtr<bf16>, DevicePtr<bf16>),
        (m, n, k): (usize, usize, usize),
        group: u32,
    ) -> Res<()> {
        let (cand, kernel) = self.candidates.get(i).ok_or("no such candidate")?;
        if !(m.is_multiple_of(cand.bm) && n.is_multiple_of(cand.bn) && k.is_multiple_of(cand.bk)) {
            return Err(format!(
                "{}: {m} × {n} × {k} is not a multiple of its tile",
                cand.kernel
            )
            .into());
        }
        let tiles = (m / cand.bm) * (n / cand.bn);
        let cfg = LaunchConfig::new(tiles as u32, cand.threads).shared_mem_bytes(cand.smem);
        let args = (a, b, c, m as u32, n as u32, k as u32, group);
        // SAFETY: the caller's sizes (checked against the tile); one block per tile.
        unsafe { kernel.launch_with(nv.stream(), cfg, args)? };
        Ok(())
    }

    /// The `wgmma` + TMA GEMM (`gemm_bf16_wgmma`) on a `grid` from
    /// [`wgmma_grid`](Self::wgmma_grid), with the tensor maps of A and B: a
    /// persistent walk over the [`wgmma`] tiles in grouped order, bands of
    /// `group` tile rows.
    ///
    /// # Safety
    /// The maps describe `m × k` and `n × k` operands, `c` holds `m × n`
    /// elements, and the sizes are multiples of the [`wgmma`] tiles.
    pub unsafe fn wgmma(
        &self,
        nv: &Nvshmem,
        grid: u32,
        (a, b, c): (DevicePtr<TensorMap>, DevicePtr<TensorMap>, DevicePtr<bf16>),
        (m, n, k): (usize, usize, usize),
        group: u32,
    ) -> Res<()> {
        self.wgmma_kernel().ok_or(NO_WGMMA)?;
        let (m, n, k) = (m as u32, n as u32, k as u32);
        let cfg = wgmma_config(grid);
        // SAFETY: the caller's sizes and maps.
        unsafe {
            tc_gemm_kernels::gemm_bf16_wgmma_with(
                &self.k,
                nv.stream(),
                cfg,
                a,
                b,
                c,
                m,
                n,
                k,
                group,
            )?
        };
        Ok(())
    }
}

/// Threads per block of the `mma.sync` ceiling probe ([`MmaPeak`]): 8 warps.
pub const PEAK_THREADS: u32 = 256;

/// The `mma.sync` ceiling probe (issue 24): `mma_peak_bf16` of
/// `tc-gemm-kernels`, register-only `m16n8k16` bf16 `mma.sync` in
/// [`CHAINS`](Self::CHAINS) independent chains per warp, on a grid of
/// every block the GPU holds at once (this PE's share), with its own output.
/// The GEMMs' TFLOP/s over its TFLOP/s is their share of what the instruction
/// can do on this GPU.
pub struct MmaPeak<'a> {
    gemm: &'a Gemm,
    out: SymBuffer<f32>,
    grid: u32,
}

impl MmaPeak<'_> {
    /// Independent accumulator chains per warp: the kernel's `PEAK_CHAINS`
    /// (a device crate; this must match it).
    pub const CHAINS: u32 = 8;

    /// FLOP of one launch of `iters` rounds: one `m16n8k16` (`2 · 16 · 8 ·
    /// 16` FLOP) per chain per round in every warp.
    pub fn flops(&self, iters: u32) -> f64 {
        let warps = self.grid as f64 * (PEAK_THREADS / 32) as f64;
        warps * iters as f64 * Self::CHAINS as f64 * (2 * 16 * 8 * 16) as f64
    }

    /// The grid it launches (blocks of [`PEAK_THREADS`]).
    pub fn grid(&self) -> u32 {
        self.grid
    }

    /// One launch of `iters` rounds on this PE's stream.
    pub fn launch(&self, nv: &Nvshmem, iters: u32) -> Res<()> {
        let cfg = LaunchConfig::new(self.grid, PEAK_THREADS);
        // SAFETY: `out` holds 4 · CHAINS f32 per thread of the grid (made so
        // by `Gemm::mma_peak`); whole warps.
        unsafe {
            tc_gemm_kernels::mma_peak_bf16_with(
                &self.gemm.k,
                nv.stream(),
                cfg,
                self.out.device_ptr(),
                iters,
            )?
        };
        Ok(())
    }

    /// The accumulators of the last launch (4 · [`CHAINS`](Self::CHAINS) per
    /// thread): every one the same sum, so a check that the loop ran.
    pub fn accumulators(&self, nv: &Nvshmem) -> Res<Vec<f32>> {
        nv.synchronize(nv.stream())?;
        Ok(self.out.to_vec(nv.stream())?)
    }
}

/// The launch of an `mma.sync` GEMM over every tile of an `m × n` result.
pub fn mma_config(m: usize, n: usize) -> LaunchConfig {
    LaunchConfig::new(((n / mma::BN) as u32, (m / mma::BM) as u32), mma::THREADS)
        .shared_mem_bytes(mma::SMEM_BYTES)
}

/// The error of a wgmma call where the kernels are missing.
pub const NO_WGMMA: &str =
    "the wgmma kernels are not in this build (or n is not a multiple of 256)";

/// Launches the form of a kernel pair that `tc` picks: `wgmma` (a typed
/// launch) with the [`wgmma_config`] of `wgmma_grid`, which is `None` where
/// the wgmma kernel is missing (then [`NO_WGMMA`]), or `mma`.
pub fn launch_tc(
    tc: Tc,
    wgmma_grid: Option<u32>,
    wgmma: impl FnOnce(LaunchConfig) -> nvshmem_host::Result<()>,
    mma: impl FnOnce() -> nvshmem_host::Result<()>,
) -> Res<()> {
    match (tc, wgmma_grid) {
        (Tc::Wgmma, Some(grid)) => wgmma(wgmma_config(grid))?,
        (Tc::Wgmma, None) => return Err(NO_WGMMA.into()),
        (Tc::Mma, _) => mma()?,
    }
    Ok(())
}

/// A persistent launch of `grid` blocks of `mma.sync` tiles.
pub fn mma_persistent(grid: u32) -> LaunchConfig {
    LaunchConfig::new(grid, mma::THREADS).shared_mem_bytes(mma::SMEM_BYTES)
}

/// A persistent launch of `grid` blocks of `wgmma` tiles.
pub fn wgmma_config(grid: u32) -> LaunchConfig {
    LaunchConfig::new(grid, wgmma::THREADS).shared_mem_bytes(wgmma::SMEM_BYTES)
}

#[cfg(test)]
mod tests {
    use super::mma;
    use tc_gemm_tiles::sm80::{self, Config, candidates as c};

    /// `(kernel, BM, BN, BK, THREADS, SMEM_BYTES)` of configuration `C`.
    fn figures<C: Config>(kernel: &'static str) -> (&'static str, usize, usize, usize, u32, u32) {
        (kernel, C::BM, C::BN, C::BK, C::THREADS, C::SMEM_BYTES)
    }

    /// The host's launch figures are the tiles' (a mismatch launches a
    /// kernel with the wrong block or shared memory).
    #[test]
    fn candidates_match_their_tile_configurations() {
        let want = [
            figures::<c::K64>("gemm_bf16_mma_k64"),
            figures::<c::Prefetch>("gemm_bf16_mma_pf"),
            figures::<c::K64Prefetch>("gemm_bf16_mma_k64_pf"),
            figures::<c::M256>("gemm_bf16_mma_256x128"),
            figures::<c::M256K64>("gemm_bf16_mma_256x128_k64"),
            figures::<c::N256>("gemm_bf16_mma_128x256"),
            figures::<c::Pipelined>("gemm_bf16_mma_pipe"),
            figures::<c::Warp64x32>("gemm_bf16_mma_w64x32"),
        ];
        let got: Vec<_> = mma::CANDIDATES
            .iter()
            .map(|c| (c.kernel, c.bm, c.bn, c.bk, c.threads, c.smem))
            .collect();
        assert_eq!(got, want);
        let base = figures::<sm80::Base>("gemm_bf16_mma");
        assert_eq!(
            base,
            (
                "gemm_bf16_mma",
                mma::BM,
                mma::BN,
                mma::BK,
                mma::THREADS,
                mma::SMEM_BYTES
            )
        );
    }
}
