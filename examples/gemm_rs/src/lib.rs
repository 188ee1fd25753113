//! GEMM + reduce-scatter in bf16 on the tensor cores (`examples/gemm_rs` and
//! `nvshmem-bench gemm`): PE `p` holds K-shards `A_p` (`M × k_loc`) and `B_p`
//! (`n × k_loc`, `Linear` layout); `C = Σ_p A_p · B_pᵀ` (`M × n`, f32), of
//! which PE `q` ends with rows `q · m_per_pe ..`.

#![warn(missing_docs)]

use example_cli::{KernelSet, Res, sms};
use example_measure::{Sampled, Samples};
use half::bf16;
use nvshmem_host::exchange::WordExchange;
use nvshmem_host::tensor_map::TensorMap;
use nvshmem_host::{CudaStream, DevicePtr, Kernel, LaunchConfig, Module, Nvshmem, Pe, SymBuffer};
use std::path::PathBuf;
use tc_gemm::{DeviceMaps, Shape, Tc, bf16_value, wgmma};
use tc_gemm::{launch_tc, mma_config, mma_persistent, tile_grid};

nvshmem_host::include_kernels!(gemm_rs_kernels);

/// The kernels of `gemm-rs-kernels`. (A wrapper, not the bindings' own
/// `Kernels`, whose inherent `load` reads the build's folder: this one loads
/// only through [`KernelSet::load`], from [`KernelSet::dir`], which a copied
/// build's `NVSHMEM_RS_PTX_DIR` overrides.)
pub struct GemmRsKernels {
    typed: Typed,
}

/// The typed bindings' kernels.
type Typed = gemm_rs_kernels::Kernels;
/// A tensor map in device memory, as the wgmma kernels take it.
type Map = DevicePtr<TensorMap>;

impl KernelSet for GemmRsKernels {
    const CRATE: &'static str = gemm_rs_kernels::CRATE;

    fn dir() -> PathBuf {
        example_cli::hopper_dir(&example_cli::ptx_dir!())
    }

    fn from_module(module: &Module) -> Res<GemmRsKernels> {
        Ok(GemmRsKernels {
            typed: gemm_rs_kernels::Kernels::new(module)?,
        })
    }
}

impl GemmRsKernels {
    /// The wgmma pair (partial, fused), in `sm_90a` builds only.
    fn wgmma(&self) -> Option<(&Kernel, &Kernel)> {
        let k = &self.typed;
        k.gemm_rs_partial_wgmma
            .as_ref()
            .zip(k.gemm_rs_wgmma_fused.as_ref())
    }
}

/// The data of PE `p`'s A: element `(row, col)` is `bf16_value(A_SEED + p, row · k + col)` (`k`: each PE's share).
const A_SEED: u64 = 0xa0;
/// The data of PE `p`'s B: element `(j, kk)` is `bf16_value(B_SEED + p, j · k + kk)`.
const B_SEED: u64 = 0xb0;

/// One PE's buffers, tensor maps and grids for a GEMM + reduce-scatter.
pub struct GemmRs<'a> {
    nv: &'a Nvshmem,
    k: &'a GemmRsKernels,
    shape: Shape,
    m: usize,
    /// `A_p` (`M × k`).
    pub a: SymBuffer<bf16>,
    /// `B_p` (`n × k`).
    pub b: SymBuffer<bf16>,
    /// The unfused path's `P_p = A_p · B_pᵀ` (`M × n`, f32), read by peers.
    pub partial: SymBuffer<f32>,
    /// This PE's rows of C (`m_per_pe × n`), written by peers.
    pub c: SymBuffer<f32>,
    maps: DeviceMaps,
    mma_grid: u32,
    wgmma_grid: Option<u32>,
    sum_grid: u32,
}

impl<'a> GemmRs<'a> {
    /// Allocates and fills this PE's buffers and makes the grids.
    /// **Collective**: every PE calls it with the same shape.
    pub fn new(
        nv: &'a Nvshmem,
        ex: &WordExchange,
        k: &'a GemmRsKernels,
        shape: Shape,
    ) -> Res<GemmRs<'a>> {
        let (me, np) = (nv.my_pe().index() as u64, nv.n_pes() as usize);
        let (m_loc, kk, n) = (shape.m_per_pe, shape.k, shape.n);
        let m = m_loc * np;
        let data = |seed: u64, len: usize| -> Vec<bf16> {
            (0..len as u64).map(|i| bf16_value(seed + me, i)).collect()
        };
        let a = nv.alloc_from(&data(A_SEED, m * kk))?;
        let b = nv.alloc_from(&data(B_SEED, n * kk))?;
        let partial = nv.alloc::<f32>(m * n)?;
        let c = nv.alloc::<f32>(m_loc * n)?;
        let maps = DeviceMaps::operands(
            nv,
            &[
                (a.device_ptr(), m, kk, wgmma::A_BOX),
                (b.device_ptr(), n, kk, wgmma::B_BOX),
            ],
        )?;
        let mma_grid = tile_grid(nv, ex, &k.typed.gemm_rs_mma_fused, Tc::Mma, (m, n))?;
        let wgmma_grid = match k.wgmma() {
            Some((p, _)) => Some(tile_grid(nv, ex, p, Tc::Wgmma, (m, n))?),
            None => None,
        };
        Ok(GemmRs {
            nv,
            k,
            shape,
            m,
            a,
            b,
            partial,
            c,
            maps,
            mma_grid,
            wgmma_grid,
            sum_grid: ((m_loc * n / 4).div_ceil(256)).min(4 * sms(nv)?) as u32,
        })
    }

    /// Whether the wgmma kernels are there (an `sm_90a` build).
    pub fn has_wgmma(&self) -> bool {
        self.wgmma_grid.is_some()
    }

    /// The full `M`.
    pub fn m(&self) -> usize {
        self.m
    }

    /// The first PE this one cannot reach with loads and stores, if any:
    /// the kernels need every peer P2P-reachable (one node).
    pub fn unreachable_peer(&self) -> Res<Option<u32>> {
        for q in 0..self.nv.n_pes() {
            if self.c.peer_ptr(Pe::new(q))?.is_none() {
                return Ok(Some(q));
            }
        }
        Ok(None)
    }

    fn dims(&self) -> (u32, u32, u32, u32) {
        self.shape.kernel_dims(self.m)
    }

    /// The reduce-scatter of the unfused path: a barrier (every PE's
    /// `partial` is written), then `rs_sum` adds every PE's block of this
    /// PE's rows into `c`.
    /// A stream capturing a CUDA graph is refused (here, in
    /// [`unfused`](Self::unfused) and [`fused`](Self::fused)): the graph could
    /// outlive this handle's buffers.
    pub fn sum(&self) -> Res<()> {
        self.nv.refuse_capture(self.nv.stream(), "GemmRs::sum")?;
        let (mloc, n, ..) = self.dims();
        let stream = self.nv.stream();
        self.nv.barrier_all_on_stream(stream)?;
        let (partial, c) = (self.partial.sym_ptr(), self.c.device_ptr());
        // SAFETY: partial M×n on every PE, c m_per_pe×n, every peer P2P
        // (the caller checked `unreachable_peer`).
        unsafe {
            gemm_rs_kernels::rs_sum(
                &self.k.typed,
                stream,
                self.sum_grid,
                256,
                partial,
                c,
                mloc,
                n,
            )?
        };
        Ok(())
    }

    /// Launches, as `tc` says, `wgmma` (on the wgmma grid, with the maps
    /// of A and B) or `mma` (with `mma_cfg`), on this PE's stream.
    fn launch(
        &self,
        tc: Tc,
        wgmma: impl FnOnce(&Typed, &CudaStream, LaunchConfig, (Map, Map)) -> nvshmem_host::Result<()>,
        mma_cfg: LaunchConfig,
        mma: impl FnOnce(&Typed, &CudaStream, LaunchConfig) -> nvshmem_host::Result<()>,
    ) -> Res<()> {
        let maps = (self.maps.ptr(0), self.maps.ptr(1));
        let (kernels, stream) = (&self.k.typed, self.nv.stream());
        launch_tc(
            tc,
            self.wgmma_grid,
            |cfg| wgmma(kernels, stream, cfg, maps),
            || mma(kernels, stream, mma_cfg),
        )
    }

    /// The unfused version: the partial GEMM into `partial`, then [`sum`](Self::sum).
    pub fn unfused(&self, tc: Tc) -> Res<()> {
        self.nv
            .refuse_capture(self.nv.stream(), "GemmRs::unfused")?;
        let (_, n, k, m) = self.dims();
        let (a, b, p) = (
            self.a.device_ptr(),
            self.b.device_ptr(),
            self.partial.device_ptr(),
        );
        // SAFETY (both): a M×k, b n×k, partial M×n, the maps describe them,
        // sizes multiples of the tiles.
        self.launch(
            tc,
            |ks, s, cfg, maps| unsafe {
                gemm_rs_kernels::gemm_rs_partial_wgmma_with(ks, s, cfg, maps.0, maps.1, p, m, n, k)
            },
            mma_config(self.m, self.shape.n),
            |ks, s, cfg| unsafe {
                gemm_rs_kernels::gemm_rs_partial_mma_with(ks, s, cfg, a, b, p, n, k)
            },
        )?;
        self.sum()
    }

    /// The fused kernel: zeroes `c` and passes a barrier, then computes the
    /// tiles of PE `me+1`'s rows first, ... its own last, adding each into
    /// the owner's `c`.
    pub fn fused(&self, tc: Tc) -> Res<()> {
        self.nv.refuse_capture(self.nv.stream(), "GemmRs::fused")?;
        let (mloc, n, k, _) = self.dims();
        self.c.fill(self.nv.stream(), 0.0)?;
        self.nv.barrier_all_on_stream(self.nv.stream())?;
        let (a, b, c) = (self.a.device_ptr(), self.b.device_ptr(), self.c.sym_ptr());
        // SAFETY (both): as in `unfused`, c m_per_pe×n on every PE, every
        // peer P2P-reachable.
        self.launch(
            tc,
            |ks, s, cfg, maps| unsafe {
                gemm_rs_kernels::gemm_rs_wgmma_fused_with(ks, s, cfg, maps.0, maps.1, c, mloc, n, k)
            },
            mma_persistent(self.mma_grid),
            |ks, s, cfg| unsafe {
                gemm_rs_kernels::gemm_rs_mma_fused_with(ks, s, cfg, a, b, c, mloc, n, k)
            },
        )
    }

    /// Fills `c` and `partial` with NaN and passes a barrier.
    pub fn poison(&self) -> Res<()> {
        let stream = self.nv.stream();
        self.c.fill(stream, f32::NAN)?;
        self.partial.fill(stream, f32::NAN)?;
        self.nv.barrier_all_on_stream(stream)?;
        Ok(())
    }

    /// This PE's rows of C, after a barrier (every PE's adds have landed).
    pub fn result(&self) -> Res<Vec<f32>> {
        let stream = self.nv.stream();
        self.nv.barrier_all_on_stream(stream)?;
        self.nv.synchronize(stream)?;
        Ok(self.c.to_vec(stream)?)
    }

    /// `samples` entries of this PE's rows `c` against the f64 sum over every
    /// PE's partial product, within `n_pes · k · ε_f32 · Σ|a·b|`
    /// (any summation order).
    pub fn check(&self, c: &[f32], samples: usize, seed: u64) -> Sampled {
        let s = self.shape;
        let (np, kl) = (self.nv.n_pes() as usize, s.k);
        let row0 = self.nv.my_pe().index() as usize * s.m_per_pe;
        // Over the full K: kk = p · k + (PE p's column).
        let a = |i: usize, kk: usize| {
            bf16_value(
                A_SEED + (kk / kl) as u64,
                ((row0 + i) * kl + kk % kl) as u64,
            )
            .to_f64()
        };
        let b = |j: usize, kk: usize| {
            bf16_value(B_SEED + (kk / kl) as u64, (j * kl + kk % kl) as u64).to_f64()
        };
        let k = np * kl;
        let shape = Samples {
            count: samples,
            seed,
            rows: s.m_per_pe,
            cols: s.n,
            k,
        };
        shape.check(
            a,
            b,
            |i, j| c[i * s.n + j] as f64,
            |_, mag| k as f64 * f32::EPSILON as f64 * mag + 1e-6,
        )
    }
}
