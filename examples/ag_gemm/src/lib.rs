//! All-gather + GEMM in bf16 on the tensor cores (`examples/ag_gemm`'s bf16
//! half and `nvshmem-bench gemm`): `C = A · Bᵀ`, A (`M × k`) gathered from
//! every PE's row shard, B (`n × k`) this PE's weight shard in `Linear`
//! layout, C bf16 with f32 accumulation.
//!
//! This package's kernels, which its build script builds: `kernel` (the f32
//! half of the example, in [`ptx_dir`]) and `kernel_tc` (these, in
//! [`tc_ptx_dir`]).

#![warn(missing_docs)]

use example_cli::{KernelSet, Res, sms};
use example_measure::{Sampled, Samples};
use half::bf16;
use nvshmem_host::exchange::WordExchange;
use nvshmem_host::{Nvshmem, SymBuffer};
use std::cell::Cell;
use std::path::PathBuf;
use tc_gemm::{DeviceMaps, GROUP_M, Gemm, NO_WGMMA, Shape, Tc, bf16_tolerance, bf16_value, wgmma};
use tc_gemm::{launch_tc, mma_persistent, tile_grid};

/// The folder of the f32 kernels (`ag-gemm-kernels`).
pub fn ptx_dir() -> PathBuf {
    example_cli::ptx_dir!()
}

/// The folder of the tensor-core kernels (`ag-gemm-tc-kernels`): built for
/// `sm_90a` when the arch is `sm_90` ([`example_cli::hopper_dir`]).
pub fn tc_ptx_dir() -> PathBuf {
    example_cli::hopper_dir(&ptx_dir())
}

/// Rows per all-gather panel (`ag_gemm_tc_kernels::PANEL`).
pub const PANEL: usize = 128;

nvshmem_host::include_kernels!(ag_gemm_tc_kernels);

/// The kernels: `ag-gemm-tc-kernels` (the push all-gather and the fused
/// kernels; the fused wgmma one in `sm_90a` builds only) and
/// `tc-gemm-kernels` (the standalone GEMMs of the unfused path).
pub struct AgGemmKernels {
    tc: ag_gemm_tc_kernels::Kernels,
    /// The standalone GEMMs.
    pub gemm: Gemm,
}

impl AgGemmKernels {
    /// Loads them from [`tc_ptx_dir`] (the standalone GEMMs from [`tc_gemm::ptx_dir`]).
    pub fn load(nv: &Nvshmem) -> Res<AgGemmKernels> {
        Ok(AgGemmKernels {
            tc: ag_gemm_tc_kernels::Kernels::load_in(nv, tc_ptx_dir())?,
            gemm: Gemm::load(nv)?,
        })
    }
}

/// The data of A: element `(row, col)` is `bf16_value(A_SEED, row · k + col)`.
const A_SEED: u64 = 0xa;
/// The data of PE `p`'s B: element `(j, kk)` is `bf16_value(B_SEED + p, j · k + kk)`.
const B_SEED: u64 = 0xb0;

/// One PE's buffers, tensor maps and grids for an all-gather + GEMM.
pub struct AgGemm<'a> {
    nv: &'a Nvshmem,
    k: &'a AgGemmKernels,
    shape: Shape,
    /// The full `M` (`n_pes · m_per_pe`).
    m: usize,
    /// This PE's shard of A (`m_per_pe × k`), read by peers.
    pub a_shard: SymBuffer<bf16>,
    /// The gathered A (`M × k`): the push target.
    pub a_full: SymBuffer<bf16>,
    /// One signal per panel of every PE.
    sig: SymBuffer<u64>,
    /// B (`n × k`).
    pub b: SymBuffer<bf16>,
    /// C (`M × n`).
    pub c: SymBuffer<bf16>,
    /// Maps of `a_shard`, `a_full`, `b`.
    maps: DeviceMaps,
    push_grid: u32,
    pushers: u32,
    mma_grid: u32,
    /// (fused, standalone) wgmma grids, when the kernels are there and `n` fits.
    wgmma_grids: Option<(u32, u32)>,
    epoch: Cell<u64>,
}

impl<'a> AgGemm<'a> {
    /// Allocates and fills this PE's buffers and makes the grids.
    /// **Collective**: every PE calls it with the same shape.
    pub fn new(
        nv: &'a Nvshmem,
        ex: &WordExchange,
        k: &'a AgGemmKernels,
        shape: Shape,
    ) -> Res<AgGemm<'a>> {
        let (me, np) = (nv.my_pe().index() as usize, nv.n_pes() as usize);
        let Shape {
            m_per_pe: m_loc,
            n,
            k: kk,
            ..
        } = shape;
        let m = m_loc * np;
        let a_host: Vec<bf16> = (me * m_loc * kk..(me + 1) * m_loc * kk)
            .map(|i| bf16_value(A_SEED, i as u64))
            .collect();
        let b_host: Vec<bf16> = (0..n * kk)
            .map(|i| bf16_value(B_SEED + me as u64, i as u64))
            .collect();
        let a_shard = nv.alloc_from(&a_host)?;
        let a_full = nv.alloc::<bf16>(m * kk)?;
        let sig = nv.alloc_zeroed::<u64>(np * (m_loc / PANEL))?;
        let b = nv.alloc_from(&b_host)?;
        let c = nv.alloc::<bf16>(m * n)?;
        // Collective: every PE makes the same maps (of its own buffers).
        let maps = DeviceMaps::operands(
            nv,
            &[
                (a_shard.device_ptr(), m_loc, kk, wgmma::A_BOX),
                (a_full.device_ptr(), m, kk, wgmma::A_BOX),
                (b.device_ptr(), n, kk, wgmma::B_BOX),
            ],
        )?;
        let mma_grid = tile_grid(nv, ex, &k.tc.ag_gemm_mma_fused, Tc::Mma, (m, n))?;
        let wgmma_grids = match &k.tc.ag_gemm_wgmma_fused {
            Some(f) if k.gemm.wgmma_kernel().is_some() && n.is_multiple_of(wgmma::BN) => {
                let fused = tile_grid(nv, ex, f, Tc::Wgmma, (m, n))?;
                k.gemm.wgmma_grid(nv, ex, m, n)?.map(|g| (fused, g))
            }
            _ => None,
        };
        Ok(AgGemm {
            nv,
            k,
            shape,
            m,
            a_shard,
            a_full,
            sig,
            b,
            c,
            maps,
            push_grid: ((m_loc / PANEL) * np).min(sms(nv)?).max(1) as u32,
            pushers: (np as u32 - 1).clamp(1, 8) * 2,
            mma_grid,
            wgmma_grids,
            epoch: Cell::new(0),
        })
    }

    /// Whether the wgmma kernels are there (an `sm_90a` build) and `n` is a
    /// multiple of their [`wgmma::BN`].
    pub fn has_wgmma(&self) -> bool {
        self.wgmma_grids.is_some()
    }

    /// The full `M`.
    pub fn m(&self) -> usize {
        self.m
    }

    fn next_epoch(&self) -> u64 {
        self.epoch.set(self.epoch.get() + 1);
        self.epoch.get()
    }

    fn dims(&self) -> (u32, u32, u32, u32) {
        self.shape.kernel_dims(self.m)
    }

    /// The all-gather: every panel of this PE's shard to every PE (itself
    /// included), then a barrier, so that `a_full` is complete everywhere.
    /// A stream capturing a CUDA graph is refused (here and in
    /// [`fused`](Self::fused)): the graph could outlive this handle's buffers.
    pub fn push(&self) -> Res<()> {
        self.nv.refuse_capture(self.nv.stream(), "AgGemm::push")?;
        let (mloc, _, k, _) = self.dims();
        let epoch = self.next_epoch();
        let (a_shard, a_full, sig) = (&self.a_shard, &self.a_full, &self.sig);
        let stream = self.nv.stream();
        // SAFETY: the buffers have the sizes the kernel's docs ask for
        // (a_shard m_loc×k on every PE, a_full M×k, sig n_pes·panels).
        unsafe {
            ag_gemm_tc_kernels::ag_push(
                &self.k.tc,
                stream,
                self.push_grid,
                256,
                a_shard,
                a_full,
                sig,
                mloc,
                k,
                epoch,
            )?
        };
        // Every PE's pushes have landed before any GEMM reads a_full.
        self.nv.barrier_all_on_stream(stream)?;
        Ok(())
    }

    /// The unfused version: [`push`](Self::push), then the standalone GEMM on `a_full`.
    pub fn unfused(&self, tc: Tc) -> Res<()> {
        self.push()?;
        let s = &self.shape;
        let dims = (self.m, s.n, s.k);
        let c = self.c.device_ptr();
        // SAFETY (both): a_full M×k, b n×k, c M×n, the maps describe them,
        // and the sizes are multiples of the tiles.
        let ptrs = (self.a_full.device_ptr(), self.b.device_ptr(), c);
        let maps = (self.maps.ptr(1), self.maps.ptr(2), c);
        match (tc, self.wgmma_grids) {
            (Tc::Wgmma, Some((_, grid))) => unsafe {
                self.k.gemm.wgmma(self.nv, grid, maps, dims, GROUP_M)
            },
            (Tc::Wgmma, None) => Err(NO_WGMMA.into()),
            (Tc::Mma, _) => unsafe { self.k.gemm.mma(self.nv, ptrs, dims, GROUP_M) },
        }
    }

    /// The fused kernel: its first blocks push this PE's panels while the
    /// rest compute the local shard; tiles of other shards wait for their
    /// panel's signal.
    pub fn fused(&self, tc: Tc) -> Res<()> {
        self.nv.refuse_capture(self.nv.stream(), "AgGemm::fused")?;
        let (mloc, n, k, _) = self.dims();
        let epoch = self.next_epoch();
        let (a_shard, a_full) = (self.a_shard.sym_ptr(), self.a_full.sym_ptr());
        let (sig, b, c, p) = (
            self.sig.sym_ptr(),
            self.b.device_ptr(),
            self.c.device_ptr(),
            self.pushers,
        );
        let maps = (self.maps.ptr(0), self.maps.ptr(1), self.maps.ptr(2));
        let (kernels, stream) = (&self.k.tc, self.nv.stream());
        // The wgmma grid is there only where the fused wgmma kernel is.
        launch_tc(
            tc,
            self.wgmma_grids.map(|g| g.0),
            |cfg| {
                // SAFETY: as in `unfused`, plus sig n_pes·panels on every PE.
                unsafe {
                    ag_gemm_tc_kernels::ag_gemm_wgmma_fused_with(
                        kernels, stream, cfg, a_shard, a_full, sig, maps.0, maps.1, maps.2, c,
                        mloc, n, k, epoch, p,
                    )
                }
            },
            || {
                let cfg = mma_persistent(self.mma_grid);
                // SAFETY: as above.
                unsafe {
                    ag_gemm_tc_kernels::ag_gemm_mma_fused_with(
                        kernels, stream, cfg, a_shard, a_full, sig, b, c, mloc, n, k, epoch, p,
                    )
                }
            },
        )
    }

    /// Fills `a_full` and `c` with NaN, so that a tile used before its data
    /// arrived shows, and passes a barrier.
    pub fn poison(&self) -> Res<()> {
        let stream = self.nv.stream();
        self.a_full.fill(stream, bf16::NAN)?;
        self.c.fill(stream, bf16::NAN)?;
        self.nv.barrier_all_on_stream(stream)?;
        Ok(())
    }

    /// `samples` entries of this PE's `c` (copied back) against an f64 dot
    /// product, within bf16 output rounding plus an f32 accumulation bound.
    pub fn check(&self, samples: usize, seed: u64) -> Res<Sampled> {
        let stream = self.nv.stream();
        self.nv.synchronize(stream)?;
        let c = self.c.to_vec(stream)?;
        let s = &self.shape;
        let me = self.nv.my_pe().index() as u64;
        let shape = Samples {
            count: samples,
            seed,
            rows: self.m,
            cols: s.n,
            k: s.k,
        };
        Ok(shape.check(
            |i, kk| bf16_value(A_SEED, (i * s.k + kk) as u64).to_f64(),
            |j, kk| bf16_value(B_SEED + me, (j * s.k + kk) as u64).to_f64(),
            |i, j| c[i * s.n + j].to_f64(),
            |dot, mag| bf16_tolerance(dot, mag, s.k),
        ))
    }
}
