//! GPU tests of the tensor-core primitives (`nvshmem_device::{mma, cp_async,
//! tma, wgmma}`) and of the bf16 GEMM kernels built on them, one PE each:
//! every register or byte a primitive produces is checked against a CPU
//! model (`tests/kernels/tensor`, `examples/tc_gemm/kernel`). The Hopper
//! kernels come from `tc_gemm::ptx_dir()` (built for `sm_90a`).
//!
//! Without a GPU every test prints `SKIPPED`; `NVSHMEM_RS_REQUIRE_GPU=1`
//! makes that a failure. Every output starts poisoned (`TestPe::poisoned`),
//! and shared memory that a zero-filling copy writes starts non-zero.

#[macro_use]
mod common;
mod checks;
use common::ONE;
use example_cli::KernelSet;
use half::{bf16, f16};
use nvshmem_device::mma::{FragA, FragB, M16N8K16};
use nvshmem_host::harness::{Failure, Poison, TestPe, TestResult, check_eq, ensure};
use nvshmem_host::tensor_map::{self, TmaSwizzle, swizzle128_offset};
use nvshmem_host::{DevicePtr, Kernel, KernelArgs, LaunchConfig, Module, Nvshmem};
use tc_gemm::{self as tensor, DeviceMaps, Gemm, wgmma};

/// The Hopper (`sm_90a`) folder beside the harness's, as `tensor_ptx_dir()` picks it.
fn tensor_module(pe: &TestPe, name: &str) -> nvshmem_host::Result<Module> {
    pe.nvshmem()
        .load_module_in(example_cli::hopper_dir(pe.ptx_dir()), name)
}

/// Small integers (exact in bf16, f16, tf32 and in their f32 sums).
fn small(i: usize, salt: usize) -> f32 {
    (((i * 7 + salt * 13) % 9) as f32) - 4.0
}

fn sync(nv: &Nvshmem) -> TestResult {
    nv.synchronize(nv.stream())?;
    Ok(())
}

/// Launches `k` with `config` and `args` on this PE's stream and waits for it.
///
/// # Safety
/// The arguments are valid for the kernel (each call says why).
unsafe fn run<A: KernelArgs>(
    nv: &Nvshmem,
    k: &Kernel,
    config: LaunchConfig,
    args: A,
) -> TestResult {
    // SAFETY: the caller's.
    unsafe { k.launch_with(nv.stream(), config, args)? };
    sync(nv)
}

/// One warp of an `mma` kernel on A, B and C: D (poisoned first).
fn run_mma<AB: bytemuck::Pod, CD: Poison>(
    pe: &TestPe,
    k: &Kernel,
    (a, b, c): (&[AB], &[AB], &[CD]),
) -> Result<Vec<CD>, Failure> {
    let nv = pe.nvshmem();
    let (da, db) = (nv.alloc_from(a)?, nv.alloc_from(b)?);
    let (dc, dd) = (nv.alloc_from(c)?, pe.poisoned::<CD>(c.len())?);
    let args = (
        da.device_ptr(),
        db.device_ptr(),
        dc.device_ptr(),
        dd.device_ptr(),
    );
    // SAFETY: the kernel reads M×K, K×N, M×N and writes M×N elements.
    unsafe { run(nv, k, LaunchConfig::new(1, 32), args)? };
    Ok(dd.to_vec(nv.stream())?)
}

/// Every `mma.sync` of the table on small integers: D = A·B + C exactly.
fn mma_sync_shapes(pe: &mut TestPe) -> TestResult {
    let module = tensor_module(pe, "tensor-kernels")?;
    // (kernel, k, elements: 0 bf16, 1 f16, 2 tf32; accumulator f16?)
    for (name, k, elem, acc16) in [
        ("mma_m16n8k16_bf16_f32", 16, 0, false),
        ("mma_m16n8k16_f16_f32", 16, 1, false),
        ("mma_m16n8k16_f16_f16", 16, 1, true),
        ("mma_m16n8k8_bf16_f32", 8, 0, false),
        ("mma_m16n8k8_f16_f32", 8, 1, false),
        ("mma_m16n8k8_f16_f16", 8, 1, true),
        ("mma_m16n8k8_tf32_f32", 8, 2, false),
    ] {
        let (m, n) = (16, 8);
        let a: Vec<f32> = (0..m * k).map(|i| small(i, 1)).collect();
        let b: Vec<f32> = (0..k * n).map(|i| small(i, 2)).collect();
        let c: Vec<f32> = (0..m * n).map(|i| small(i, 3) * 3.0).collect();
        let want: Vec<f32> = (0..m * n)
            .map(|i| {
                c[i] + (0..k)
                    .map(|kk| a[(i / n) * k + kk] * b[kk * n + i % n])
                    .sum::<f32>()
            })
            .collect();
        let bits16 = |v: &[f32]| -> Vec<u16> {
            v.iter()
                .map(|&x| {
                    if elem == 0 {
                        bf16::from_f32(x).to_bits()
                    } else {
                        f16::from_f32(x).to_bits()
                    }
                })
                .collect()
        };
        let kernel = module.kernel(name)?;
        let got: Vec<f32> = if elem == 2 {
            run_mma(pe, &kernel, (&a, &b, &c))?
        } else if acc16 {
            let d = run_mma(pe, &kernel, (&bits16(&a), &bits16(&b), &bits16(&c)))?;
            d.into_iter().map(|x| f16::from_bits(x).to_f32()).collect()
        } else {
            run_mma(pe, &kernel, (&bits16(&a), &bits16(&b), &c))?
        };
        check_eq(name, &got, &want)?;
    }
    Ok(())
}

/// The CPU model of `ldmatrix` (see the kernel's docs for the addresses).
fn ldmatrix_model(src: &[u16], count: usize, trans: bool) -> Vec<u32> {
    // Matrix i's row r starts at (row, col) = (r + 8·(i%2), 8·(i/2)).
    let at = |i: usize, r: usize, c: usize| src[(r + 8 * (i % 2)) * 16 + 8 * (i / 2) + c] as u32;
    let mut out = vec![0u32; 32 * 4];
    for lane in 0..32 {
        for i in 0..count {
            let (r, c) = (lane / 4, 2 * (lane % 4));
            out[lane * 4 + i] = if trans {
                at(i, c, r) | (at(i, c + 1, r) << 16)
            } else {
                at(i, r, c) | (at(i, r, c + 1) << 16)
            };
        }
    }
    out
}

fn ldmatrix_forms(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let k = tensor_module(pe, "tensor-kernels")?.kernel("ldmatrix_forms")?;
    let src: Vec<u16> = (0..256).map(|i| i as u16 + 1).collect();
    let (d_src, out) = (nv.alloc_from(&src)?, pe.poisoned::<u32>(6 * 32 * 4)?);
    let cfg = LaunchConfig::new(1, 32).shared_mem_bytes(512);
    let args = (d_src.device_ptr(), out.device_ptr());
    // SAFETY: 256 u16 in, 6·32·4 u32 out, 512 bytes of shared memory.
    unsafe { run(nv, &k, cfg, args)? };
    let got = out.to_vec(nv.stream())?;
    for (f, (count, trans, name)) in [
        (1, false, "x1"),
        (2, false, "x2"),
        (4, false, "x4"),
        (1, true, "x1.trans"),
        (2, true, "x2.trans"),
        (4, true, "x4.trans"),
    ]
    .into_iter()
    .enumerate()
    {
        check_eq(
            &format!("ldmatrix_forms ({name})"),
            &got[f * 128..(f + 1) * 128],
            &ldmatrix_model(&src, count, trans),
        )?;
    }
    Ok(())
}

fn fragment_loads(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let k = tensor_module(pe, "tensor-kernels")?.kernel("frag_loads")?;
    let x: Vec<bf16> = (0..256).map(|i| bf16::from_f32(i as f32)).collect();
    let (dx, out) = (nv.alloc_from(&x)?, pe.poisoned::<u32>(32 * 24)?);
    let cfg = LaunchConfig::new(1, 32).shared_mem_bytes(1024);
    let args = (dx.device_ptr(), out.device_ptr());
    // SAFETY: 256 bf16 in, 32·24 u32 out, 1024 bytes of shared memory.
    unsafe { run(nv, &k, cfg, args)? };
    let got = out.to_vec(nv.stream())?;
    let x_at = |r: usize, c: usize| x[r * 16 + c];
    let mut want = Vec::new();
    for lane in 0..32u32 {
        let a = FragA::<bf16, M16N8K16>::from_fn(lane, x_at).regs;
        // B is x read as K × N (rows k): the same for the row-major view and
        // the transposed copy read as column-major.
        let b0 = FragB::<bf16, M16N8K16>::from_fn(lane, x_at).regs;
        let b8 = FragB::<bf16, M16N8K16>::from_fn(lane, |kk, n| x_at(kk, n + 8)).regs;
        // Every B load reads B(k, n) = x(k, n): directly from the row-major
        // copy (`.trans`), or from the transposed copy, whose stored row n is
        // column n of x.
        want.extend(a);
        want.extend(a);
        want.extend(b0);
        want.extend(b8);
        want.extend(b0);
        want.extend(b8);
        want.extend(b0);
        want.extend(b8);
        want.extend(b0);
        want.extend(b8);
    }
    check_eq("frag_loads", &got, &want)
}

fn cp_async_copy(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let k = tensor_module(pe, "tensor-kernels")?.kernel("cp_async_copy")?;
    let n = 4096usize;
    let src: Vec<u8> = (0..n).map(|i| (i * 31 % 251) as u8 + 1).collect();
    let (d_src, dst) = (nv.alloc_from(&src)?, pe.poisoned::<u8>(n)?);
    let cfg = LaunchConfig::new(1, 128).shared_mem_bytes(n as u32);
    let args = (d_src.device_ptr(), dst.device_ptr(), n as u32);
    // SAFETY: n bytes each way; n bytes of shared memory.
    unsafe { run(nv, &k, cfg, args)? };
    checks::cp_async_copy(&src, &dst.to_vec(nv.stream())?)
}

/// TMA loads of boxes inside and across the edge (zero fill, into shared
/// memory that held non-zero bytes), unswizzled and 128-byte swizzled, and
/// a TMA store into a poisoned matrix.
fn tma_tiles(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let module = tensor_module(pe, "tensor-kernels")?;
    let (load, store) = (
        module.kernel("tma_load_box")?,
        module.kernel("tma_store_box")?,
    );
    let (rows, cols) = (200usize, 192usize);
    let val = |r: usize, c: usize| bf16::from_bits((r * 1000 + c) as u16 | 1);
    let host: Vec<bf16> = (0..rows * cols).map(|i| val(i / cols, i % cols)).collect();
    let mat = nv.alloc_from(&host)?;
    for (bx, by, swizzle) in [
        (64u32, 128u32, TmaSwizzle::B128),
        (32, 16, TmaSwizzle::None),
        (64, 8, TmaSwizzle::B128),
    ] {
        let map = tensor_map::encode_2d(
            mat.device_ptr(),
            rows as u64,
            cols as u64,
            (cols * 2) as u64,
            (bx, by),
            swizzle,
        )?;
        let dmap = nv.alloc_from(&[map])?;
        let box_bytes = (bx * by * 2) as usize;
        for (x, y) in [(0i32, 0i32), (64, 64), (160, 120), (-16, -4)] {
            let out = pe.poisoned::<u8>(box_bytes)?;
            let cfg = LaunchConfig::new(1, 128).shared_mem_bytes(box_bytes as u32 + 1024 + 16);
            let args = (dmap.device_ptr(), x, y, box_bytes as u32, out.device_ptr());
            // SAFETY: the map in device memory, box_bytes out.
            unsafe { run(nv, &load, cfg, args)? };
            let got = out.to_vec(nv.stream())?;
            let mut want = vec![0u8; box_bytes];
            for r in 0..by as usize {
                for c in 0..bx as usize {
                    let (gr, gc) = (y as i64 + r as i64, x as i64 + c as i64);
                    let v = if (0..rows as i64).contains(&gr) && (0..cols as i64).contains(&gc) {
                        val(gr as usize, gc as usize).to_bits()
                    } else {
                        0
                    };
                    let off = if swizzle == TmaSwizzle::B128 {
                        swizzle128_offset(r, c, 2)
                    } else {
                        (r * bx as usize + c) * 2
                    };
                    want[off..off + 2].copy_from_slice(&v.to_le_bytes());
                }
            }
            check_eq(
                &format!("tma_load_box ({bx}×{by} {swizzle:?} at {x},{y})"),
                &got,
                &want,
            )?;
        }
    }
    // A store of one 64 × 64 swizzled box into a poisoned matrix at (64, 32).
    let dst = pe.poisoned::<bf16>(rows * cols)?;
    let map = tensor_map::encode_2d(
        dst.device_ptr(),
        rows as u64,
        cols as u64,
        (cols * 2) as u64,
        (64, 64),
        TmaSwizzle::B128,
    )?;
    let dmap = nv.alloc_from(&[map])?;
    let mut tile = vec![0u8; 64 * 64 * 2];
    for r in 0..64 {
        for c in 0..64 {
            let off = swizzle128_offset(r, c, 2);
            tile[off..off + 2].copy_from_slice(&val(r, c).to_bits().to_le_bytes());
        }
    }
    let dtile = nv.alloc_from(&tile)?;
    let cfg = LaunchConfig::new(1, 128).shared_mem_bytes(64 * 64 * 2 + 1024);
    let args = (
        dmap.device_ptr(),
        64i32,
        32i32,
        (64 * 64 * 2) as u32,
        dtile.device_ptr(),
    );
    // SAFETY: the map over dst, the tile in device memory.
    unsafe { run(nv, &store, cfg, args)? };
    // As bits: the untouched elements hold the poison, NaN.
    let want: Vec<u16> = (0..rows * cols)
        .map(|i| {
            let (r, c) = (i / cols, i % cols);
            if (32..96).contains(&r) && (64..128).contains(&c) {
                val(r - 32, c - 64).to_bits()
            } else {
                pe.poison::<bf16>().to_bits()
            }
        })
        .collect();
    let got: Vec<u16> = dst
        .to_vec(nv.stream())?
        .iter()
        .map(|x| x.to_bits())
        .collect();
    check_eq("tma_store_box (bits)", &got, &want)
}

/// One `64 × N × 64` wgmma product per shape, both shared-memory layouts.
fn wgmma_tiles(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let module = tensor_module(pe, "tensor-kernels")?;
    for n in [8usize, 16, 64, 128, 256] {
        let k = module.kernel(&format!("wgmma_m64n{n}k16"))?;
        let a: Vec<f32> = (0..64 * 64).map(|i| small(i, 5)).collect();
        let b: Vec<f32> = (0..n * 64).map(|i| small(i, 6)).collect();
        let to16 = |v: &[f32]| v.iter().map(|&x| bf16::from_f32(x)).collect::<Vec<_>>();
        let (da, db) = (nv.alloc_from(&to16(&a))?, nv.alloc_from(&to16(&b))?);
        let want: Vec<f32> = (0..64 * n)
            .map(|i| {
                (0..64)
                    .map(|kk| a[(i / n) * 64 + kk] * b[(i % n) * 64 + kk])
                    .sum()
            })
            .collect();
        for swizzle in [0u32, 1] {
            let out = pe.poisoned::<f32>(64 * n)?;
            let cfg = LaunchConfig::new(1, 128).shared_mem_bytes(((64 + n) * 128 + 1024) as u32);
            let args = (da.device_ptr(), db.device_ptr(), out.device_ptr(), swizzle);
            // SAFETY: 64×64 and N×64 bf16 in, 64×N f32 out.
            unsafe { run(nv, &k, cfg, args)? };
            check_eq(
                &format!("wgmma_m64n{n}k16 (swizzle {swizzle})"),
                &out.to_vec(nv.stream())?,
                &want,
            )?;
        }
    }
    Ok(())
}

/// Deterministic bf16 test data in [-1, 1).
fn data(len: usize, seed: u64) -> Vec<bf16> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            bf16::from_f32(((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0)
        })
        .collect()
}

/// `C = A · Bᵀ` on the CPU (f64), and the first element off by more than the
/// bf16 output rounding plus an f32-accumulation allowance.
fn check_gemm(
    name: &str,
    a: &[bf16],
    b: &[bf16],
    c: &[bf16],
    (m, n, k): (usize, usize, usize),
) -> TestResult {
    for i in 0..m {
        for j in 0..n {
            let (mut s, mut mag) = (0f64, 0f64);
            for kk in 0..k {
                let p = a[i * k + kk].to_f64() * b[j * k + kk].to_f64();
                s += p;
                mag += p.abs();
            }
            let got = c[i * n + j].to_f64();
            let tol = tensor::bf16_tolerance(s, mag, k);
            ensure((got - s).abs() <= tol, || {
                format!("kernel `{name}`: C[{i}][{j}] = {got}, expected {s} (±{tol:.3e})")
            })?;
        }
    }
    Ok(())
}

/// The arch the GEMM kernels were built for.
fn gemm_arch(pe: &TestPe) -> Result<nvshmem_host::Arch, Failure> {
    Ok(tensor_module(pe, "tc-gemm-kernels")?.manifest().arch)
}

/// The standalone GEMMs (mma.sync, and wgmma + TMA) on a 384 × 512 × 320
/// problem: 3 tile rows, so that their grouped order (bands of 2 rows) has
/// a thinner last band.
fn gemm_kernels(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let gemm = Gemm::load(nv).map_err(|e| e.to_string())?;
    let (m, n, k) = (384usize, 512usize, 320usize);
    let dims = (m, n, k);
    let (a, b) = (data(m * k, 1), data(n * k, 2));
    let (da, db) = (nv.alloc_from(&a)?, nv.alloc_from(&b)?);
    // Runs `launch` into a poisoned C (NaN: never within tolerance) and checks C.
    let check = |name: &str, launch: &dyn Fn(DevicePtr<bf16>) -> example_cli::Res<()>| {
        let c = pe.poisoned::<bf16>(m * n)?;
        launch(c.device_ptr()).map_err(|e| e.to_string())?;
        sync(nv)?;
        check_gemm(name, &a, &b, &c.to_vec(nv.stream())?, dims)
    };
    let ops = |c| (da.device_ptr(), db.device_ptr(), c);
    // SAFETY (launches): M×K, N×K in, M×N out; sizes multiples of every tile.
    check("gemm_bf16_mma", &|c| unsafe {
        gemm.mma(nv, ops(c), dims, 2)
    })?;
    if gemm.wgmma_kernel().is_none() {
        let arch = gemm_arch(pe)?;
        pe.skip_part(
            "gemm_bf16_wgmma",
            format!("the GEMM kernels were built for {arch}, not sm_90a (wgmma and TMA need it)"),
        );
        return Ok(());
    }
    let maps = DeviceMaps::operands(
        nv,
        &[
            (da.device_ptr(), m, k, wgmma::A_BOX),
            (db.device_ptr(), n, k, wgmma::B_BOX),
        ],
    )
    .map_err(|e| e.to_string())?;
    let maps = |c| (maps.ptr(0), maps.ptr(1), c);
    // Fewer blocks than tiles: the persistent loop and the pipeline across tiles.
    check("gemm_bf16_wgmma", &|c| unsafe {
        gemm.wgmma(nv, 3, maps(c), dims, 2)
    })
}

gpu_main! {
    ONE => mma_sync_shapes, ldmatrix_forms, fragment_loads, cp_async_copy, tma_tiles,
        wgmma_tiles, gemm_kernels;
}
