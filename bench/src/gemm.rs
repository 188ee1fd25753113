//! `nvshmem-bench gemm`: the bf16 tensor-core kernels against cuBLAS in the
//! same process.
//!
//! - **GEMM alone** (`C = A · Bᵀ`, M = N = K = each `--sizes` value, bf16 in
//!   and out, f32 accumulation): the Rust `mma.sync` kernel, the Rust
//!   `wgmma` and TMA kernel (sm_90a builds) and `cublasGemmEx`
//!   (`CUBLAS_COMPUTE_32F`, the same "TN" layout); TFLOP/s and % of cuBLAS.
//! - **Fused with communication**, at the PE count it runs with
//!   (`nvshmem-run -n P -- nvshmem-bench gemm`): all-gather + GEMM (M = N =
//!   K = size, `m_loc = M / P`) fused, unfused (push all-gather + the Rust
//!   GEMM) and all-gather + cuBLAS; GEMM + reduce-scatter (`k_loc = K / P`)
//!   fused, unfused (Rust GEMM + `rs_sum`) and cuBLAS + `rs_sum`.
//!
//! Every timed case is first checked: sampled entries against an f64 CPU
//! reference (bf16 tolerance) and the whole result against cuBLAS's.
//! cuBLAS is loaded at run time by cudarc (`libcublas.so`, `.so.13`, ... on
//! the library path: `bench/run.sh` and `tests/gpu-run.sh` put PyTorch's
//! `nvidia/cu13/lib` there); without it those rows are skipped with a message.

use crate::{Record, median};
use cudarc::cublas::{result as blas, sys as blas_sys};
use half::bf16;
use nvshmem_host::cudarc::driver::sys::{CUdevice_attribute, CUevent_flags};
use nvshmem_host::exchange::WordExchange;
use nvshmem_host::tensor_map::TensorMap;
use nvshmem_host::{DevicePtr, Kernel, LaunchConfig, Nvshmem, SymBuffer};
use nvshmem_rs::tensor::{self, DeviceMaps, mma, wgmma};
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// The result type of the benchmark.
pub type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Options of `nvshmem-bench gemm`.
#[derive(Clone, Debug)]
pub struct GemmOptions {
    /// Square problem sizes (M = N = K).
    pub sizes: Vec<usize>,
    /// Timed repetitions (the median is reported).
    pub reps: usize,
    /// Untimed repetitions first.
    pub warmup: usize,
    /// Use cuBLAS (when it loads).
    pub cublas: bool,
    /// Also the fused AG+GEMM and GEMM+RS cases.
    pub fused: bool,
    /// Entries checked against the CPU per case.
    pub samples: usize,
}

impl Default for GemmOptions {
    fn default() -> Self {
        GemmOptions {
            sizes: vec![1024, 2048, 4096, 8192],
            reps: 20,
            warmup: 5,
            cublas: true,
            fused: true,
            samples: 64,
        }
    }
}

/// A cuBLAS handle on the PE's stream (destroyed on drop).
struct Cublas(blas_sys::cublasHandle_t);

impl Cublas {
    fn new(nv: &Nvshmem) -> Res<Option<Cublas>> {
        // SAFETY: only probes for the library.
        if !unsafe { blas_sys::is_culib_present() } {
            return Ok(None);
        }
        let h = blas::create_handle()?;
        // SAFETY: a live handle and this PE's stream.
        unsafe { blas::set_stream(h, nv.stream().cu_stream() as _)? };
        Ok(Some(Cublas(h)))
    }

    /// `C (m × n, row-major) = A (m × k) · Bᵀ (B: n × k)`, bf16 in, `c_f32`
    /// picks f32 or bf16 out, f32 compute. Column-major cuBLAS sees
    /// `Cᵀ = B · Aᵀ`: `op(B) = T`, `op(A) = N`.
    ///
    /// # Safety
    /// The pointers hold the sizes above.
    unsafe fn gemm(
        &self,
        a: u64,
        b: u64,
        c: u64,
        (m, n, k): (usize, usize, usize),
        c_f32: bool,
    ) -> Res<()> {
        let (alpha, beta) = (1f32, 0f32);
        let bf = blas_sys::cudaDataType::CUDA_R_16BF;
        let ct = if c_f32 {
            blas_sys::cudaDataType::CUDA_R_32F
        } else {
            bf
        };
        // SAFETY: the caller's sizes; host scalars.
        unsafe {
            blas::gemm_ex(
                self.0,
                blas_sys::cublasOperation_t::CUBLAS_OP_T,
                blas_sys::cublasOperation_t::CUBLAS_OP_N,
                n as i32,
                m as i32,
                k as i32,
                (&alpha as *const f32).cast(),
                b as *const _,
                bf,
                k as i32,
                a as *const _,
                bf,
                k as i32,
                (&beta as *const f32).cast(),
                c as *mut _,
                ct,
                n as i32,
                blas_sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                blas_sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )?
        };
        Ok(())
    }
}

impl Drop for Cublas {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once.
        let _ = unsafe { blas::destroy_handle(self.0) };
    }
}

/// A benchmark case: (variant, implementation, launch).
type Case<'a> = (&'a str, &'a str, &'a dyn Fn() -> Res<()>);

/// Times `launch` (CUDA events, a barrier before each run): the median in ms.
fn time(
    nv: &Nvshmem,
    ex: &WordExchange,
    o: &GemmOptions,
    launch: &dyn Fn() -> Res<()>,
) -> Res<f64> {
    let stream = nv.stream();
    let ev = || {
        nv.context()
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
    };
    let (e0, e1) = (ev()?, ev()?);
    let mut t = Vec::new();
    for i in 0..o.warmup + o.reps {
        nv.barrier_all_on_stream(stream)?;
        e0.record(stream)?;
        launch()?;
        e1.record(stream)?;
        nv.synchronize(stream)?;
        if i >= o.warmup {
            t.push(e0.elapsed_ms(&e1)? as f64);
        }
    }
    // The slowest PE's median is the job's.
    agree_max(nv, ex, median(&mut t))
}

/// The largest of every PE's `v`. **Collective.**
fn agree_max(nv: &Nvshmem, ex: &WordExchange, v: f64) -> Res<f64> {
    let all = ex.all_gather(nv, &[v.to_bits()])?;
    Ok(all
        .iter()
        .map(|r| f64::from_bits(r[0]))
        .fold(f64::MIN, f64::max))
}

/// Sampled entries of `c` (row-major `m × n`) against `A · Bᵀ` in f64: the
/// number of entries outside the bf16 tolerance.
fn cpu_mismatches(
    a: &[bf16],
    b: &[bf16],
    c: &[f64],
    (m, n, k): (usize, usize, usize),
    samples: usize,
) -> usize {
    (0..samples)
        .filter(|&s| {
            let h = tensor::bf16_value(0x51, s as u64).to_bits() as usize * 7919 + s * 104_729;
            let (i, j) = (h % m, (h / 11) % n);
            let (mut dot, mut mag) = (0f64, 0f64);
            for kk in 0..k {
                let p = a[i * k + kk].to_f64() * b[j * k + kk].to_f64();
                dot += p;
                mag += p.abs();
            }
            !tensor::bf16_close(c[i * n + j], dot, mag, k)
        })
        .count()
}

fn to_f64(v: &[bf16]) -> Vec<f64> {
    v.iter().map(|x| x.to_f64()).collect()
}

fn max_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).fold(0f64, |m, (x, y)| {
        if (x - y).is_nan() {
            f64::NAN
        } else {
            m.max((x - y).abs())
        }
    })
}

/// What the GEMM benchmark measured, and the failures.
#[derive(Default)]
pub struct GemmBench {
    /// One record per (case, variant, size).
    pub records: Vec<Record>,
    /// Failed checks.
    pub failures: Vec<String>,
}

impl GemmBench {
    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        case: &str,
        variant: &str,
        imp: &str,
        size: usize,
        ms: f64,
        tflops: f64,
        pass: bool,
    ) {
        self.records.push(Record {
            case: case.into(),
            variant: variant.into(),
            bytes: size as u64,
            imp: imp.into(),
            time_us: ms * 1e3,
            value: tflops,
            unit: "TFLOP/s".into(),
            pass,
        });
    }
}

/// The kernels the benchmark launches.
struct Kernels {
    gemm_mma: Kernel,
    gemm_wgmma: Option<Kernel>,
    ag_push: Kernel,
    ag_fused_mma: Kernel,
    ag_fused_wgmma: Option<Kernel>,
    rs_partial_mma: Kernel,
    rs_partial_wgmma: Option<Kernel>,
    rs_fused_mma: Kernel,
    rs_fused_wgmma: Option<Kernel>,
    rs_sum: Kernel,
}

impl Kernels {
    fn load(nv: &Nvshmem) -> Res<Kernels> {
        let dir = nvshmem_rs::tensor_ptx_dir();
        let g = nv.load_module_in(&dir, "tc-gemm-kernels")?;
        let ag = nv.load_module_in(&dir, "ag-gemm-tc-kernels")?;
        let rs = nv.load_module_in(&dir, "gemm-rs-kernels")?;
        Ok(Kernels {
            gemm_mma: g.kernel("gemm_bf16_mma")?,
            gemm_wgmma: g.kernel("gemm_bf16_wgmma").ok(),
            ag_push: ag.kernel("ag_push")?,
            ag_fused_mma: ag.kernel("ag_gemm_mma_fused")?,
            ag_fused_wgmma: ag.kernel("ag_gemm_wgmma_fused").ok(),
            rs_partial_mma: rs.kernel("gemm_rs_partial_mma")?,
            rs_partial_wgmma: rs.kernel("gemm_rs_partial_wgmma").ok(),
            rs_fused_mma: rs.kernel("gemm_rs_mma_fused")?,
            rs_fused_wgmma: rs.kernel("gemm_rs_wgmma_fused").ok(),
            rs_sum: rs.kernel("rs_sum")?,
        })
    }
}

/// Runs every case; the lead PE prints the tables.
pub fn run(nv: &Nvshmem, o: &GemmOptions) -> Res<GemmBench> {
    let mut out = GemmBench::default();
    let k = Kernels::load(nv)?;
    let blas = if o.cublas { Cublas::new(nv)? } else { None };
    let ex = WordExchange::new(nv, 3)?;
    let lead = nv.my_pe().index() == 0;
    if lead && blas.is_none() {
        println!(
            "gemm: cuBLAS not used ({})",
            if o.cublas {
                "libcublas not found on the library path"
            } else {
                "--no-cublas"
            }
        );
    }
    for &s in &o.sizes {
        gemm_alone(nv, &ex, o, &k, blas.as_ref(), s, &mut out)?;
        if o.fused {
            ag_gemm(nv, &ex, o, &k, blas.as_ref(), s, &mut out)?;
            gemm_rs(nv, &ex, o, &k, blas.as_ref(), s, &mut out)?;
        }
    }
    Ok(out)
}

fn sms(nv: &Nvshmem) -> Res<usize> {
    Ok(nv
        .context()
        .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as usize)
}

/// GEMM alone at M = N = K = `s` on every PE (each its own problem).
fn gemm_alone(
    nv: &Nvshmem,
    ex: &WordExchange,
    o: &GemmOptions,
    k: &Kernels,
    blas: Option<&Cublas>,
    s: usize,
    out: &mut GemmBench,
) -> Res<()> {
    let stream = nv.stream();
    let dims = (s, s, s);
    let a_h: Vec<bf16> = (0..s * s)
        .map(|i| tensor::bf16_value(1, i as u64))
        .collect();
    let b_h: Vec<bf16> = (0..s * s)
        .map(|i| tensor::bf16_value(2, i as u64))
        .collect();
    let (a, b) = (nv.alloc_from(&a_h)?, nv.alloc_from(&b_h)?);
    let c = nv.alloc::<bf16>(s * s)?;
    let maps = DeviceMaps::new(
        nv,
        &[
            tensor::operand_map(a.device_ptr(), s, s, wgmma::A_BOX)?,
            tensor::operand_map(b.device_ptr(), s, s, wgmma::B_BOX)?,
        ],
    )?;
    let flops = 2.0 * (s as f64).powi(3);
    let wg_grid = match &k.gemm_wgmma {
        Some(g) => tensor::persistent_grid(
            nv,
            ex,
            g,
            wgmma::THREADS,
            wgmma::SMEM_BYTES,
            (s / wgmma::BM) * (s / wgmma::BN),
        )?,
        None => 0,
    };
    let s32 = s as u32;
    // SAFETY (launches): A, B s×s, C s×s, sizes multiples of the tiles.
    let run_mma = || -> Res<()> {
        let cfg = LaunchConfig::new(((s / mma::BN) as u32, (s / mma::BM) as u32), mma::THREADS)
            .shared_mem_bytes(mma::SMEM_BYTES);
        unsafe {
            k.gemm_mma.launch_with(
                stream,
                cfg,
                (a.device_ptr(), b.device_ptr(), c.device_ptr(), s32, s32),
            )?
        };
        Ok(())
    };
    let run_wgmma = || -> Res<()> {
        if let Some(g) = &k.gemm_wgmma {
            let cfg =
                LaunchConfig::new(wg_grid, wgmma::THREADS).shared_mem_bytes(wgmma::SMEM_BYTES);
            unsafe {
                g.launch_with(
                    stream,
                    cfg,
                    (maps.ptr(0), maps.ptr(1), c.device_ptr(), s32, s32, s32),
                )?
            };
        }
        Ok(())
    };
    let run_blas = || -> Res<()> {
        if let Some(bl) = blas {
            unsafe {
                bl.gemm(
                    a.device_ptr().addr(),
                    b.device_ptr().addr(),
                    c.device_ptr().addr(),
                    dims,
                    false,
                )?
            };
        }
        Ok(())
    };
    let mut cases: Vec<Case> = vec![("mma", "rust", &run_mma)];
    if k.gemm_wgmma.is_some() {
        cases.push(("wgmma", "rust", &run_wgmma));
    }
    if blas.is_some() {
        cases.push(("cublas", "cublas", &run_blas));
    }
    // Checks: each result against the CPU (samples) and cuBLAS's (all).
    let mut reference: Option<Vec<f64>> = None;
    let mut results = Vec::new();
    for (variant, _, launch) in cases.iter().rev() {
        c.fill(stream, bf16::NAN)?;
        launch()?;
        nv.synchronize(stream)?;
        let got = to_f64(&c.to_vec(stream)?);
        let bad = cpu_mismatches(&a_h, &b_h, &got, dims, o.samples);
        let diff = reference.as_ref().map(|r| max_diff(&got, r));
        let pass = bad == 0 && diff.is_none_or(|d| d <= 0.05 * s as f64 / 1024.0 + 0.05);
        if !pass {
            out.failures.push(format!(
                "gemm {variant} {s}: {bad} CPU mismatches, max diff vs cuBLAS {diff:?}"
            ));
        }
        if *variant == "cublas" {
            reference = Some(got);
        }
        results.push((*variant, pass));
    }
    let mut line = format!("gemm bf16 {s}³:");
    let mut blas_tf = None;
    for (variant, imp, launch) in cases.iter().rev() {
        let ms = time(nv, ex, o, *launch)?;
        let tf = flops / (ms * 1e-3) / 1e12;
        let pass = results.iter().any(|(v, p)| v == variant && *p);
        out.record("gemm_bf16", variant, imp, s, ms, tf, pass);
        if *variant == "cublas" {
            blas_tf = Some(tf);
        }
        let pct = blas_tf
            .filter(|_| *variant != "cublas")
            .map(|b| format!(" = {:.0}% of cuBLAS", 100.0 * tf / b))
            .unwrap_or_default();
        line += &format!(
            " | {variant} {ms:.3} ms {tf:.1} TFLOP/s{pct}{}",
            if pass { "" } else { " FAIL" }
        );
    }
    if nv.my_pe().index() == 0 {
        println!("{line}");
    }
    Ok(())
}

/// Fills `buf` with NaN bits (`bf16` or `f32`) before a checked run.
fn nan_bf16(nv: &Nvshmem, buf: &SymBuffer<bf16>) -> Res<()> {
    buf.fill(nv.stream(), bf16::NAN)?;
    Ok(())
}

/// All-gather + GEMM at M = N = K = `s` over the job's PEs.
fn ag_gemm(
    nv: &Nvshmem,
    ex: &WordExchange,
    o: &GemmOptions,
    k: &Kernels,
    blas: Option<&Cublas>,
    s: usize,
    out: &mut GemmBench,
) -> Res<()> {
    let stream = nv.stream();
    let (me, np) = (nv.my_pe().index() as usize, nv.n_pes() as usize);
    let (m, n, kk) = (s, s, s);
    let m_loc = m / np;
    if !m_loc.is_multiple_of(128) || m_loc == 0 {
        return Ok(());
    }
    let a_all: Vec<bf16> = (0..m * kk)
        .map(|i| tensor::bf16_value(3, i as u64))
        .collect();
    let b_h: Vec<bf16> = (0..n * kk)
        .map(|i| tensor::bf16_value(4 + me as u64, i as u64))
        .collect();
    let a_shard = nv.alloc_from(&a_all[me * m_loc * kk..(me + 1) * m_loc * kk])?;
    let a_full = nv.alloc::<bf16>(m * kk)?;
    let sig = nv.alloc_zeroed::<u64>(np * (m_loc / 128))?;
    let b = nv.alloc_from(&b_h)?;
    let c = nv.alloc::<bf16>(m * n)?;
    let maps = DeviceMaps::new(
        nv,
        &[
            tensor::operand_map(a_shard.device_ptr(), m_loc, kk, wgmma::A_BOX)?,
            tensor::operand_map(a_full.device_ptr(), m, kk, wgmma::A_BOX)?,
            tensor::operand_map(b.device_ptr(), n, kk, wgmma::B_BOX)?,
        ],
    )?;
    let epoch = std::cell::Cell::new(1_000_000u64 * s as u64);
    let push_grid = ((m_loc / 128) * np).min(sms(nv)?).max(1) as u32;
    let pushers = ((np as u32 - 1).clamp(1, 8)) * 2;
    let (mloc32, n32, k32, m32) = (m_loc as u32, n as u32, kk as u32, m as u32);
    let wg_tiles = (m / wgmma::BM) * (n / wgmma::BN);
    let grid = |kern: &Kernel, threads, smem, tiles| {
        tensor::persistent_grid(nv, ex, kern, threads, smem, tiles)
    };
    let wg_grid = match &k.ag_fused_wgmma {
        Some(f) => grid(f, wgmma::THREADS, wgmma::SMEM_BYTES, wg_tiles)?,
        None => 0,
    };
    let mma_grid = grid(
        &k.ag_fused_mma,
        mma::THREADS,
        mma::SMEM_BYTES,
        (m / mma::BM) * (n / mma::BN),
    )?;
    let gemm_grid = match &k.gemm_wgmma {
        Some(g) => grid(g, wgmma::THREADS, wgmma::SMEM_BYTES, wg_tiles)?,
        None => 0,
    };
    // SAFETY (launches): the buffers and maps above, sizes multiples of the tiles.
    let push = || -> Res<()> {
        epoch.set(epoch.get() + 1);
        unsafe {
            k.ag_push.launch(
                stream,
                push_grid,
                256,
                (
                    a_shard.sym_ptr(),
                    a_full.sym_ptr(),
                    sig.sym_ptr(),
                    mloc32,
                    k32,
                    epoch.get(),
                ),
            )?
        };
        nv.barrier_all_on_stream(stream)?;
        Ok(())
    };
    let unfused = || -> Res<()> {
        push()?;
        match &k.gemm_wgmma {
            Some(g) => {
                let cfg = LaunchConfig::new(gemm_grid, wgmma::THREADS)
                    .shared_mem_bytes(wgmma::SMEM_BYTES);
                unsafe {
                    g.launch_with(
                        stream,
                        cfg,
                        (maps.ptr(1), maps.ptr(2), c.device_ptr(), m32, n32, k32),
                    )?
                };
            }
            None => {
                let cfg =
                    LaunchConfig::new(((n / mma::BN) as u32, (m / mma::BM) as u32), mma::THREADS)
                        .shared_mem_bytes(mma::SMEM_BYTES);
                unsafe {
                    k.gemm_mma.launch_with(
                        stream,
                        cfg,
                        (
                            a_full.device_ptr(),
                            b.device_ptr(),
                            c.device_ptr(),
                            n32,
                            k32,
                        ),
                    )?
                };
            }
        }
        Ok(())
    };
    let fused = || -> Res<()> {
        epoch.set(epoch.get() + 1);
        match &k.ag_fused_wgmma {
            Some(f) => {
                let cfg =
                    LaunchConfig::new(wg_grid, wgmma::THREADS).shared_mem_bytes(wgmma::SMEM_BYTES);
                let args = (
                    a_shard.sym_ptr(),
                    a_full.sym_ptr(),
                    sig.sym_ptr(),
                    maps.ptr(0),
                    maps.ptr(1),
                    maps.ptr(2),
                    c.device_ptr(),
                    mloc32,
                    n32,
                    k32,
                    epoch.get(),
                    pushers,
                );
                unsafe { f.launch_with(stream, cfg, args)? };
            }
            None => {
                let cfg =
                    LaunchConfig::new(mma_grid, mma::THREADS).shared_mem_bytes(mma::SMEM_BYTES);
                let args = (
                    a_shard.sym_ptr(),
                    a_full.sym_ptr(),
                    sig.sym_ptr(),
                    b.device_ptr(),
                    c.device_ptr(),
                    mloc32,
                    n32,
                    k32,
                    epoch.get(),
                    pushers,
                );
                unsafe { k.ag_fused_mma.launch_with(stream, cfg, args)? };
            }
        }
        Ok(())
    };
    let with_blas = || -> Res<()> {
        push()?;
        if let Some(bl) = blas {
            unsafe {
                bl.gemm(
                    a_full.device_ptr().addr(),
                    b.device_ptr().addr(),
                    c.device_ptr().addr(),
                    (m, n, kk),
                    false,
                )?
            };
        }
        Ok(())
    };
    let mut cases: Vec<Case> = vec![("unfused", "rust", &unfused), ("fused", "rust", &fused)];
    if blas.is_some() {
        cases.push(("allgather+cublas", "cublas", &with_blas));
    }
    let flops = 2.0 * (m * n * kk) as f64;
    let mut line = format!("ag+gemm bf16 {s}³ on {np} PE(s):");
    for (variant, imp, launch) in &cases {
        nan_bf16(nv, &a_full)?;
        nan_bf16(nv, &c)?;
        nv.barrier_all_on_stream(stream)?;
        launch()?;
        nv.barrier_all_on_stream(stream)?;
        nv.synchronize(stream)?;
        let bad = cpu_mismatches(
            &a_all,
            &b_h,
            &to_f64(&c.to_vec(stream)?),
            (m, n, kk),
            o.samples,
        );
        let pass = agree_max(nv, ex, bad as f64)? == 0.0;
        if !pass {
            out.failures.push(format!(
                "ag+gemm {variant} {s}: {bad} CPU mismatches on PE {me}"
            ));
        }
        let ms = time(nv, ex, o, *launch)?;
        let tf = flops / (ms * 1e-3) / 1e12;
        out.record("ag_gemm_bf16", variant, imp, s, ms, tf, pass);
        line += &format!(
            " | {variant} {ms:.3} ms {tf:.1} TFLOP/s{}",
            if pass { "" } else { " FAIL" }
        );
    }
    if me == 0 {
        println!("{line}");
    }
    Ok(())
}

/// GEMM + reduce-scatter at M = N = K = `s` (`k_loc = K / P` per PE).
fn gemm_rs(
    nv: &Nvshmem,
    ex: &WordExchange,
    o: &GemmOptions,
    k: &Kernels,
    blas: Option<&Cublas>,
    s: usize,
    out: &mut GemmBench,
) -> Res<()> {
    let stream = nv.stream();
    let (me, np) = (nv.my_pe().index() as usize, nv.n_pes() as usize);
    let (m, n, k_loc) = (s, s, s / np);
    let m_loc = m / np;
    if m_loc == 0 || !m_loc.is_multiple_of(128) || !k_loc.is_multiple_of(64) {
        return Ok(());
    }
    let a_h: Vec<bf16> = (0..m * k_loc)
        .map(|i| tensor::bf16_value(5 + me as u64, i as u64))
        .collect();
    let b_h: Vec<bf16> = (0..n * k_loc)
        .map(|i| tensor::bf16_value(50 + me as u64, i as u64))
        .collect();
    let (a, b) = (nv.alloc_from(&a_h)?, nv.alloc_from(&b_h)?);
    let partial = nv.alloc::<f32>(m * n)?;
    let c = nv.alloc::<f32>(m_loc * n)?;
    for q in 0..np {
        if c.peer_ptr(nvshmem_host::Pe::new(q as u32))?.is_none() {
            if me == 0 {
                println!("gemm+rs: skipped: PE {q} is not P2P-reachable");
            }
            return Ok(());
        }
    }
    let maps = DeviceMaps::new(
        nv,
        &[
            tensor::operand_map(a.device_ptr(), m, k_loc, wgmma::A_BOX)?,
            tensor::operand_map(b.device_ptr(), n, k_loc, wgmma::B_BOX)?,
        ],
    )?;
    let (mloc32, n32, k32, m32) = (m_loc as u32, n as u32, k_loc as u32, m as u32);
    let wg_tiles = (m / wgmma::BM) * (n / wgmma::BN);
    let wg_grid = match &k.rs_partial_wgmma {
        Some(p) => tensor::persistent_grid(nv, ex, p, wgmma::THREADS, wgmma::SMEM_BYTES, wg_tiles)?,
        None => 0,
    };
    let mma_grid = tensor::persistent_grid(
        nv,
        ex,
        &k.rs_fused_mma,
        mma::THREADS,
        mma::SMEM_BYTES,
        (m / mma::BM) * (n / mma::BN),
    )?;
    let rs_grid = ((m_loc * n / 4).div_ceil(256)).min(4 * sms(nv)?) as u32;
    // SAFETY (launches): the buffers and maps above, every peer P2P (checked).
    let sum = || -> Res<()> {
        nv.barrier_all_on_stream(stream)?;
        unsafe {
            k.rs_sum.launch(
                stream,
                rs_grid,
                256,
                (partial.sym_ptr(), c.device_ptr(), mloc32, n32),
            )?
        };
        Ok(())
    };
    let unfused = || -> Res<()> {
        match &k.rs_partial_wgmma {
            Some(p) => {
                let cfg =
                    LaunchConfig::new(wg_grid, wgmma::THREADS).shared_mem_bytes(wgmma::SMEM_BYTES);
                unsafe {
                    p.launch_with(
                        stream,
                        cfg,
                        (
                            maps.ptr(0),
                            maps.ptr(1),
                            partial.device_ptr(),
                            m32,
                            n32,
                            k32,
                        ),
                    )?
                };
            }
            None => {
                let cfg =
                    LaunchConfig::new(((n / mma::BN) as u32, (m / mma::BM) as u32), mma::THREADS)
                        .shared_mem_bytes(mma::SMEM_BYTES);
                unsafe {
                    k.rs_partial_mma.launch_with(
                        stream,
                        cfg,
                        (
                            a.device_ptr(),
                            b.device_ptr(),
                            partial.device_ptr(),
                            n32,
                            k32,
                        ),
                    )?
                };
            }
        }
        sum()
    };
    let fused = || -> Res<()> {
        c.fill(stream, 0.0)?;
        nv.barrier_all_on_stream(stream)?;
        match &k.rs_fused_wgmma {
            Some(f) => {
                let cfg =
                    LaunchConfig::new(wg_grid, wgmma::THREADS).shared_mem_bytes(wgmma::SMEM_BYTES);
                unsafe {
                    f.launch_with(
                        stream,
                        cfg,
                        (maps.ptr(0), maps.ptr(1), c.sym_ptr(), mloc32, n32, k32),
                    )?
                };
            }
            None => {
                let cfg =
                    LaunchConfig::new(mma_grid, mma::THREADS).shared_mem_bytes(mma::SMEM_BYTES);
                unsafe {
                    k.rs_fused_mma.launch_with(
                        stream,
                        cfg,
                        (
                            a.device_ptr(),
                            b.device_ptr(),
                            c.sym_ptr(),
                            mloc32,
                            n32,
                            k32,
                        ),
                    )?
                };
            }
        }
        Ok(())
    };
    let with_blas = || -> Res<()> {
        if let Some(bl) = blas {
            unsafe {
                bl.gemm(
                    a.device_ptr().addr(),
                    b.device_ptr().addr(),
                    partial.device_ptr().addr(),
                    (m, n, k_loc),
                    true,
                )?
            };
        }
        sum()
    };
    let mut cases: Vec<Case> = vec![("unfused", "rust", &unfused), ("fused", "rust", &fused)];
    if blas.is_some() {
        cases.push(("cublas+rs", "cublas", &with_blas));
    }
    let flops = 2.0 * (m * n * k_loc * np) as f64;
    let mut reference: Option<Vec<f32>> = None;
    let mut line = format!("gemm+rs bf16 {s}³ on {np} PE(s):");
    for (variant, imp, launch) in &cases {
        c.fill(stream, f32::NAN)?;
        partial.fill(stream, f32::NAN)?;
        nv.barrier_all_on_stream(stream)?;
        launch()?;
        nv.barrier_all_on_stream(stream)?;
        nv.synchronize(stream)?;
        let got = c.to_vec(stream)?;
        // Each PE checks its rows against the first variant (unfused) and
        // the CPU on its own partial's contribution is not enough, so the
        // CPU check recomputes every PE's inputs (same formulas).
        let mut bad = 0usize;
        for sidx in 0..o.samples {
            let h =
                tensor::bf16_value(0x52, sidx as u64).to_bits() as usize * 7919 + sidx * 104_729;
            let (i, j) = (h % m_loc, (h / 11) % n);
            let row = me * m_loc + i;
            let (mut dot, mut mag) = (0f64, 0f64);
            for p in 0..np {
                for kk in 0..k_loc {
                    let v = tensor::bf16_value(5 + p as u64, (row * k_loc + kk) as u64).to_f64()
                        * tensor::bf16_value(50 + p as u64, (j * k_loc + kk) as u64).to_f64();
                    dot += v;
                    mag += v.abs();
                }
            }
            let g = got[i * n + j] as f64;
            if (g - dot).abs() > (np * k_loc) as f64 * f32::EPSILON as f64 * mag + 1e-6
                || g.is_nan()
            {
                bad += 1;
            }
        }
        let diff = reference.as_ref().map(|r| {
            r.iter()
                .zip(&got)
                .fold(0f32, |m, (x, y)| m.max((x - y).abs()))
        });
        let pass = agree_max(nv, ex, bad as f64)? == 0.0 && diff.is_none_or(|d| d <= 1e-2);
        if !pass {
            out.failures.push(format!("gemm+rs {variant} {s}: {bad} CPU mismatches on PE {me}, max diff vs unfused {diff:?}"));
        }
        reference.get_or_insert(got);
        let ms = time(nv, ex, o, *launch)?;
        let tf = flops / (ms * 1e-3) / 1e12;
        out.record("gemm_rs_bf16", variant, imp, s, ms, tf, pass);
        line += &format!(
            " | {variant} {ms:.3} ms {tf:.1} TFLOP/s{}",
            if pass { "" } else { " FAIL" }
        );
    }
    if me == 0 {
        println!("{line}");
    }
    Ok(())
}

/// A markdown table of the GEMM records: TFLOP/s per size, % of cuBLAS.
pub fn table(records: &[Record]) -> String {
    let mut s = String::new();
    for case in ["gemm_bf16", "ag_gemm_bf16", "gemm_rs_bf16"] {
        let rows: Vec<&Record> = records.iter().filter(|r| r.case == case).collect();
        if rows.is_empty() {
            continue;
        }
        s += &format!(
            "\n{case}: TFLOP/s (time), % of the cuBLAS row\n\n| size | variant | time | TFLOP/s | % of cuBLAS | check |\n|---:|---|---:|---:|---:|---|\n"
        );
        for r in &rows {
            let blas = rows
                .iter()
                .find(|b| b.imp == "cublas" && b.bytes == r.bytes)
                .map(|b| b.value);
            let pct = blas
                .filter(|_| r.imp != "cublas")
                .map(|b| format!("{:.0}%", 100.0 * r.value / b))
                .unwrap_or_default();
            s += &format!(
                "| {} | {} | {:.3} ms | {:.1} | {pct} | {} |\n",
                r.bytes,
                r.variant,
                r.time_us / 1e3,
                r.value,
                if r.pass { "pass" } else { "FAIL" }
            );
        }
    }
    s
}

/// `gemm_tflops.svg` (and `ag_gemm_tflops.svg`, `gemm_rs_tflops.svg`) in
/// `dir`: TFLOP/s against the problem size, one line per variant.
pub fn plots(records: &[Record], dir: &Path, label: &str) -> Res<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut files = Vec::new();
    for (case, title) in [
        ("gemm_bf16", "bf16 GEMM, M = N = K"),
        ("ag_gemm_bf16", "all-gather + GEMM, M = N = K"),
        ("gemm_rs_bf16", "GEMM + reduce-scatter, M = N = K"),
    ] {
        let mut variants: Vec<String> = records
            .iter()
            .filter(|r| r.case == case)
            .map(|r| r.variant.clone())
            .collect();
        variants.dedup();
        variants.sort();
        variants.dedup();
        let series: Vec<(String, Vec<(f64, f64)>)> = variants
            .iter()
            .map(|v| {
                let pts = records
                    .iter()
                    .filter(|r| r.case == case && &r.variant == v && r.pass && r.value > 0.0)
                    .map(|r| (r.bytes as f64, r.value))
                    .collect();
                (v.clone(), pts)
            })
            .filter(|(_, p): &(String, Vec<(f64, f64)>)| !p.is_empty())
            .collect();
        if series.is_empty() {
            continue;
        }
        let path = dir.join(format!("{}_tflops.svg", case.trim_end_matches("_bf16")));
        let (x0, x1) = series
            .iter()
            .flat_map(|s| s.1.iter().map(|p| p.0))
            .fold((f64::MAX, 0f64), |(a, b), x| (a.min(x), b.max(x)));
        let y1 = series
            .iter()
            .flat_map(|s| s.1.iter().map(|p| p.1))
            .fold(0f64, f64::max);
        let e = |x: &dyn std::fmt::Display| format!("{}: {x}", path.display());
        let root = SVGBackend::new(&path, (900, 560)).into_drawing_area();
        root.fill(&WHITE).map_err(|x| e(&x))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("{title} ({label})"), ("sans-serif", 22))
            .margin(14)
            .x_label_area_size(44)
            .y_label_area_size(70)
            .build_cartesian_2d((x0 * 0.9..x1 * 1.1).log_scale(), 0f64..y1 * 1.15)
            .map_err(|x| e(&x))?;
        chart
            .configure_mesh()
            .x_desc("M = N = K")
            .y_desc("TFLOP/s")
            .x_label_formatter(&|v| format!("{}", v.round() as u64))
            .draw()
            .map_err(|x| e(&x))?;
        for (i, (name, pts)) in series.iter().enumerate() {
            let c = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))
                .map_err(|x| e(&x))?
                .label(name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                });
            chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.filled())))
                .map_err(|x| e(&x))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(|x| e(&x))?;
        root.present().map_err(|x| e(&x))?;
        drop(chart);
        drop(root);
        files.push(path);
    }
    Ok(files)
}

/// Unused-import guard for `DevicePtr`/`TensorMap` in docs.
#[allow(dead_code)]
fn _types(_: DevicePtr<TensorMap>) {}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(case: &str, variant: &str, imp: &str, size: u64, tf: f64) -> Record {
        Record {
            case: case.into(),
            variant: variant.into(),
            bytes: size,
            imp: imp.into(),
            time_us: 1.0,
            value: tf,
            unit: "TFLOP/s".into(),
            pass: true,
        }
    }

    #[test]
    fn table_and_plots_without_a_gpu() {
        let records = vec![
            rec("gemm_bf16", "cublas", "cublas", 4096, 700.0),
            rec("gemm_bf16", "wgmma", "rust", 4096, 630.0),
            rec("gemm_bf16", "wgmma", "rust", 8192, 660.0),
            rec("gemm_bf16", "cublas", "cublas", 8192, 720.0),
            rec("ag_gemm_bf16", "fused", "rust", 4096, 500.0),
        ];
        let t = table(&records);
        assert!(
            t.contains("| 4096 | wgmma | 0.001 ms | 630.0 | 90% | pass |"),
            "{t}"
        );
        let dir = std::env::temp_dir().join(format!("gemm-plots-{}", std::process::id()));
        let files = plots(&records, &dir, "test").unwrap();
        assert_eq!(files.len(), 2);
        assert!(std::fs::read_to_string(&files[0]).unwrap().contains("<svg"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
