//! GPU tests of the compute primitives (`nvshmem_device::{warp, shared,
//! atomic, math}`), on 1 PE through the harness. Their kernels are
//! `tests/kernels/compute`; every result is checked element by element
//! against a CPU model (shuffles follow the PTX ISA's `shfl.sync`
//! pseudo-code; math within documented ULP bounds, see `compute/math.rs`).
//!
//! Without a GPU every test prints `SKIPPED`; `NVSHMEM_RS_REQUIRE_GPU=1`
//! turns that into a failure. Every output buffer starts poisoned
//! (`TestPe::poisoned`), so an element a kernel did not write fails.

#[macro_use]
mod common;
mod checks;
use bytemuck::Pod;
use common::ONE;
use nvshmem_host::harness::{Failure, Poison, TestPe, TestResult, check_eq, ensure};
use nvshmem_host::{Error, LaunchConfig};

#[path = "compute/math.rs"]
mod math;
use math::{half_conversions, math_approx, math_f32, math_f64, packed_math};

const KERNELS: &str = "compute-kernels";

/// A deterministic scramble of `i` (for inputs).
fn mix(i: u64) -> u64 {
    let mut x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5851_f42d_4c95_7f2d;
    x ^= x >> 29;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^ (x >> 32)
}

/// `shfl.sync` as the PTX ISA defines it: the lane lane `lane` reads, given
/// `b` and `c` (clamp and segment mask) of mode `up`, `down`, `bfly` or `idx`.
fn shfl_source(mode: &str, lane: u32, b: u32, c: u32) -> u32 {
    let seg = (c >> 8) & 0x1f;
    let clamp = c & 0x1f;
    let max_lane = (lane & seg) | (clamp & !seg);
    let min_lane = lane & seg;
    let (j, ok) = match mode {
        "up" => {
            let j = lane as i32 - b as i32;
            (j, j >= max_lane as i32)
        }
        "down" => {
            let j = (lane + b) as i32;
            (j, j <= max_lane as i32)
        }
        "bfly" => {
            let j = (lane ^ b) as i32;
            (j, j <= max_lane as i32)
        }
        _ => {
            let j = (min_lane | (b & !seg & 0x1f)) as i32;
            (j, j <= max_lane as i32)
        }
    };
    if ok { j as u32 } else { lane }
}

/// CUDA's `c` for `__shfl_*_sync(.., width)`.
fn c_of(mode: &str, width: u32) -> u32 {
    ((32 - width) << 8) | if mode == "up" { 0 } else { 0x1f }
}

/// The value lane `t` gets from a shuffle of `vals` (a whole block, warps of 32).
fn shuffled<T: Copy>(vals: &[T], t: usize, mode: &str, b: u32, width: u32) -> T {
    let (warp, lane) = (t / 32 * 32, (t % 32) as u32);
    vals[warp + shfl_source(mode, lane, b, c_of(mode, width)) as usize]
}

fn launch<A: nvshmem_host::launch::KernelArgs>(
    pe: &TestPe,
    name: &str,
    config: LaunchConfig,
    args: A,
) -> TestResult {
    let nv = pe.nvshmem();
    let k = pe.module(KERNELS)?.kernel(name)?;
    // SAFETY: every test sizes the buffers it passes for its kernel's layout.
    unsafe { k.launch_with(nv.stream(), config, args)? };
    nv.synchronize(nv.stream())?;
    Ok(())
}

/// Runs `name` on one block of `input.len()` threads with `(input, out)`,
/// `out` holding `per_thread` poisoned elements per thread; returns `out`.
fn one_block<I: Pod, O: Poison>(
    pe: &TestPe,
    name: &str,
    input: &[I],
    per_thread: usize,
) -> Result<Vec<O>, Failure> {
    let nv = pe.nvshmem();
    let inp = nv.alloc_from(input)?;
    let out = pe.poisoned::<O>(per_thread * input.len())?;
    let config = LaunchConfig::new(1, input.len() as u32);
    launch(pe, name, config, (inp.device_ptr(), out.device_ptr()))?;
    Ok(out.to_vec(nv.stream())?)
}

fn warp_shuffles(pe: &mut TestPe) -> TestResult {
    let n = 64;
    let input: Vec<u32> = (0..n as u64).map(|i| mix(i) as u32).collect();
    let got: Vec<u32> = one_block(pe, "warp_shuffle_u32", &input, 9)?;
    let mut want = vec![0u32; 9 * n];
    for t in 0..n {
        let lane = (t % 32) as u32;
        let cases = [
            ("idx", (lane * 7 + 3) % 32, 32),
            ("up", 3, 32),
            ("down", 5, 32),
            ("bfly", 6, 32),
            ("idx", lane + 1, 8),
            ("up", 2, 16),
            ("down", 3, 4),
            ("bfly", 5, 16),
        ];
        for (k, (mode, b, w)) in cases.into_iter().enumerate() {
            want[k * n + t] = shuffled(&input, t, mode, b, w);
        }
        want[8 * n + t] = if lane < 16 {
            input[t / 32 * 32 + 15 - lane as usize]
        } else {
            0
        };
    }
    check_eq("warp_shuffle_u32", &got, &want)?;

    let wide_in: Vec<u64> = (0..n as u64).map(|i| mix(i + 1000)).collect();
    let got: Vec<u64> = one_block(pe, "warp_shuffle_wide", &wide_in, 5)?;
    let mut want = vec![0u64; 5 * n];
    for t in 0..n {
        let lane = (t % 32) as u32;
        want[t] = shuffled(&wide_in, t, "idx", 31 - lane, 32);
        want[n + t] = shuffled(&wide_in, t, "bfly", 1, 32);
        want[2 * n + t] = shuffled(&wide_in, t, "down", 1, 32) & ((1 << 56) - 1);
        want[3 * n + t] = shuffled(&wide_in, t, "up", 1, 32) & ((1 << 48) - 1);
        want[4 * n + t] = 0; // lane 0's lane number
    }
    check_eq("warp_shuffle_wide", &got, &want)
}

fn warp_votes(pe: &mut TestPe) -> TestResult {
    let n = 64;
    // Warp 0: v >> 8 uniform; warp 1: not. Parity and bit 1 vary.
    let input: Vec<u32> = (0..n as u32)
        .map(|t| {
            if t < 32 {
                0xab00 + t * 5
            } else {
                (t % 32) * 977 + 3
            }
        })
        .collect();
    let got: Vec<u32> = one_block(pe, "warp_vote", &input, 19)?;
    let mut want = vec![0u32; 19 * n];
    for t in 0..n {
        let (w, lane) = (t / 32 * 32, (t % 32) as u32);
        let warp = &input[w..w + 32];
        let ballot = |f: &dyn Fn(u32) -> bool, lanes: u32| {
            (0..32)
                .filter(|&l| lanes >> l & 1 == 1 && f(warp[l as usize]))
                .fold(0u32, |m, l| m | 1 << l)
        };
        let p = |v: u32| v & 1 == 1;
        let q = |v: u32| v & 2 != 0;
        let v = input[t];
        let same = |key: &dyn Fn(u32) -> u64| ballot(&|x| key(x) == key(v), !0);
        want[t] = (ballot(&p, !0) == !0) as u32;
        want[n + t] = (ballot(&p, !0) != 0) as u32;
        want[2 * n + t] = ballot(&p, !0);
        let qs = ballot(&q, !0);
        want[3 * n + t] = (qs == 0 || qs == !0) as u32;
        want[4 * n + t] = 1;
        want[5 * n + t] = if lane < 16 { ballot(&p, 0xffff) } else { 0 };
        want[6 * n + t] = if lane < 16 {
            (ballot(&q, 0xffff) != 0) as u32
        } else {
            0
        };
        // Slot 7 (activemask in a branch) may differ by scheduling: checked below.
        want[8 * n + t] = same(&|x| (x % 4) as u64);
        want[9 * n + t] = same(&|x| (x % 3) as u64);
        want[10 * n + t] = (same(&|x| (x >> 8) as u64) == !0) as u32;
        want[11 * n + t] = (same(&|x| x as u64) == !0) as u32;
        want[12 * n + t] = same(&|x| ((x % 2) as u64) << 32 | (x % 5) as u64);
        want[13 * n + t] = 1 << lane;
        want[14 * n + t] = (1u64 << lane) as u32 - 1;
        want[15 * n + t] = ((1u64 << (lane + 1)) - 1) as u32;
        want[16 * n + t] = !((1u64 << (lane + 1)) - 1) as u32;
        want[17 * n + t] = !((1u32 << lane) - 1);
        want[18 * n + t] = lane;
        // activemask() inside `if lane % 3 == 0`: this lane, and only lanes of that branch.
        let active = got[7 * n + t];
        let branch: u32 = (0..32).filter(|l| l % 3 == 0).fold(0, |m, l| m | 1 << l);
        if lane % 3 == 0 {
            ensure(active >> lane & 1 == 1 && active & !branch == 0, || {
                format!(
                    "warp_vote: activemask() of lane {t} is {active:#x}, not within {branch:#x}"
                )
            })?;
        } else {
            ensure(active == 0, || {
                format!("warp_vote: lane {t} wrote {active:#x} outside the branch, not 0")
            })?;
        }
    }
    check_eq("warp_vote (slots 0..7)", &got[..7 * n], &want[..7 * n])?;
    check_eq("warp_vote (slots 8..19)", &got[8 * n..], &want[8 * n..])
}

/// The warp's butterfly reduction, in the kernel's order.
fn butterfly<T: Copy>(warp: &[T], op: impl Fn(T, T) -> T) -> Vec<T> {
    let mut x = warp.to_vec();
    for off in [16, 8, 4, 2, 1] {
        x = (0..32).map(|l| op(x[l], x[l ^ off])).collect();
    }
    x
}

/// The warp's Kogge–Stone inclusive scan, in the kernel's order.
fn scan<T: Copy>(warp: &[T], op: impl Fn(T, T) -> T) -> Vec<T> {
    let mut x = warp.to_vec();
    for d in [1, 2, 4, 8, 16] {
        x = (0..32)
            .map(|l| if l >= d { op(x[l - d], x[l]) } else { x[l] })
            .collect();
    }
    x
}

fn exclusive<T: Copy>(inclusive: &[T], identity: T) -> Vec<T> {
    (0..32)
        .map(|l| if l == 0 { identity } else { inclusive[l - 1] })
        .collect()
}

fn warp_reductions(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let n = 64;
    let ints: Vec<i32> = (0..n as u64).map(|i| (mix(i + 7) as i32) >> 4).collect();
    let floats: Vec<f32> = (0..n)
        .map(|i| ((i as f32) * 0.37).sin() * 100.0 + 1.0 / (i as f32 + 3.0))
        .collect();
    let (ib, fb) = (nv.alloc_from(&ints)?, nv.alloc_from(&floats)?);
    let (oi, of, ow) = (
        pe.poisoned::<i32>(10 * n)?,
        pe.poisoned::<f32>(5 * n)?,
        pe.poisoned::<u64>(2 * n)?,
    );
    launch(
        pe,
        "warp_reduce",
        LaunchConfig::new(1, n as u32),
        (
            ib.device_ptr(),
            fb.device_ptr(),
            oi.device_ptr(),
            of.device_ptr(),
            ow.device_ptr(),
        ),
    )?;
    let (mut wi, mut wf, mut ww) = (vec![0i32; 10 * n], vec![0f32; 5 * n], vec![0u64; 2 * n]);
    for w in (0..n).step_by(32) {
        let (xi, xf) = (&ints[w..w + 32], &floats[w..w + 32]);
        let min = |a: i32, b: i32| if b < a { b } else { a };
        let max = |a: i32, b: i32| if b > a { b } else { a };
        let inc = scan(xi, |a, b| a.wrapping_add(b));
        let inc_max = scan(xi, |a: i32, b: i32| a.max(b));
        let ri: [Vec<i32>; 10] = [
            butterfly(xi, |a, b| a.wrapping_add(b)),
            butterfly(xi, min),
            butterfly(xi, max),
            butterfly(xi, |a, b| a & b),
            butterfly(xi, |a, b| a | b),
            butterfly(xi, |a, b| a ^ b),
            inc.clone(),
            exclusive(&inc, 0),
            inc_max.clone(),
            exclusive(&inc_max, i32::MIN),
        ];
        let incf = scan(xf, |a, b| a + b);
        let rf: [Vec<f32>; 5] = [
            butterfly(xf, |a, b| a + b),
            butterfly(xf, |a: f32, b| if b < a { b } else { a }),
            butterfly(xf, |a: f32, b| if b > a { b } else { a }),
            incf.clone(),
            exclusive(&incf, 0.0),
        ];
        let wide: Vec<u64> = xi.iter().map(|&x| (x as u32 as u64) << 33).collect();
        let dbl: Vec<f64> = xf.iter().map(|&x| x as f64).collect();
        let rw = [
            butterfly(&wide, |a, b| a.wrapping_add(b)),
            butterfly(&dbl, |a, b| a + b)
                .iter()
                .map(|d| d.to_bits())
                .collect(),
        ];
        for l in 0..32 {
            for (k, r) in ri.iter().enumerate() {
                wi[k * n + w + l] = r[l];
            }
            for (k, r) in rf.iter().enumerate() {
                wf[k * n + w + l] = r[l];
            }
            for (k, r) in rw.iter().enumerate() {
                ww[k * n + w + l] = r[l];
            }
        }
    }
    check_eq("warp_reduce (i32)", &oi.to_vec(nv.stream())?, &wi)?;
    let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<_>>();
    check_eq(
        "warp_reduce (f32, bits)",
        &bits(of.to_vec(nv.stream())?),
        &bits(wf),
    )?;
    check_eq("warp_reduce (u64, f64 bits)", &ow.to_vec(nv.stream())?, &ww)
}

fn shared_static(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let n = 256;
    let input: Vec<f32> = (0..n).map(|i| i as f32 * 1.5 - 7.0).collect();
    let got: Vec<f32> = one_block(pe, "shared_static", &input, 5)?;
    let want_rev: Vec<f32> = (0..n).map(|t| input[n - 1 - t]).collect();
    check_eq(
        "shared_static (reversed through TILE)",
        &got[..n],
        &want_rev,
    )?;
    let mut tickets: Vec<u32> = got[n..2 * n].iter().map(|&x| x as u32).collect();
    tickets.sort();
    check_eq(
        "shared_static (tickets)",
        &tickets,
        &(0..n as u32).collect::<Vec<_>>(),
    )?;
    check_eq(
        "shared_static (counter)",
        &got[2 * n..3 * n],
        &vec![n as f32; n],
    )?;
    check_eq(
        "shared_static (is_shared)",
        &got[3 * n..],
        &[vec![1.0; n], vec![0.0; n]].concat(),
    )?;

    let out = pe.poisoned::<f64>(n)?;
    launch(
        pe,
        "shared_static_big",
        LaunchConfig::new(3, n as u32),
        (out.device_ptr(),),
    )?;
    let want: Vec<f64> = (0..n).map(|t| 4.0 * ((t + 1) % n) as f64 + 1.5).collect();
    check_eq("shared_static_big", &out.to_vec(nv.stream())?, &want)?;
    let m = pe.module(KERNELS)?;
    let smem = |k: &str| m.manifest().get(k).and_then(|k| k.static_shared_bytes);
    ensure(smem("shared_static_big") == Some(8192), || {
        format!("manifest: {:?}", smem("shared_static_big"))
    })
}

fn shared_dynamic(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let n = 128usize;
    // u32 × 128 (512 B), f64 × 128 (1024 B), u8 × 128 at 128-alignment, u16 × 3 at 64.
    let used = 512 + 1024 + 128 + 6;
    for bytes in [4096u32, 100 << 10] {
        let out = pe.poisoned::<u64>(10 * n)?;
        let cfg = LaunchConfig::new(1, n as u32).shared_mem_bytes(bytes);
        launch(pe, "shared_dynamic", cfg, (out.device_ptr(),))?;
        let got = out.to_vec(nv.stream())?;
        let col = |k: usize| got[k * n..(k + 1) * n].to_vec();
        let what = |k: &str| format!("shared_dynamic ({bytes} B): {k}");
        check_eq(
            &what("u32"),
            &col(0),
            &(0..n).map(|t| ((t + 1) % n * 3) as u64).collect::<Vec<_>>(),
        )?;
        check_eq(
            &what("f64"),
            &col(1),
            &(0..n)
                .map(|t| (((t + 2) % n) as f64 * 0.5).to_bits())
                .collect::<Vec<_>>(),
        )?;
        check_eq(
            &what("u8"),
            &col(2),
            &(0..n)
                .map(|t| (((t + 3) % n) as u8 ^ 0x5a) as u64)
                .collect::<Vec<_>>(),
        )?;
        check_eq(&what("dynamic_size"), &col(3), &vec![bytes as u64; n])?;
        ensure(col(4).iter().all(|&s| s >= bytes as u64), || {
            format!("{}: {:?}", what("total_size"), col(4)[0])
        })?;
        check_eq(
            &what("alignments"),
            &[col(5), col(6), col(7)].concat(),
            &vec![0; 3 * n],
        )?;
        check_eq(&what("overflow refused"), &col(8), &vec![1; n])?;
        // The base is 16-aligned; aligning the u8 and u16 slices pads at most 127 + 63 bytes.
        let most = bytes as u64 - used as u64;
        ensure(
            col(9)
                .iter()
                .all(|&r| r <= most && r + 190 >= most && r == col(9)[0]),
            || format!("{}: {} (at most {most})", what("remaining"), col(9)[0]),
        )?;
    }
    // More than the GPU has: refused before the launch, with the numbers.
    let k = pe.module(KERNELS)?.kernel("shared_dynamic")?;
    let out = nv.alloc_zeroed::<u64>(10 * n)?;
    let cfg = LaunchConfig::new(1, n as u32).shared_mem_bytes(1 << 20);
    // SAFETY: refused before launching.
    match unsafe { k.launch_with(nv.stream(), cfg, (out.device_ptr(),)) } {
        Err(e @ Error::SharedMemoryTooLarge { .. }) => {
            ensure(e.to_string().contains("shared_dynamic"), || e.to_string())
        }
        other => Err(Failure::new(format!(
            "a 1 MiB shared-memory launch gave {other:?}"
        ))),
    }
}

/// The compute capability the kernels were built for (`sm_90` → 90).
fn sm_of(pe: &TestPe) -> Result<u32, Failure> {
    let module = pe.module(KERNELS)?;
    Ok(module.manifest().arch.number())
}

/// `atomics_global` on an odd thread count (3 × 167), so that no slot's
/// final value equals its initial one (an even count of `xor` toggles
/// would): see `checks::atomic_slots`.
fn atomics(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let (blocks, threads) = (3u32, 167u32);
    let t = blocks * threads;
    let sm = sm_of(pe)?;
    let (w, d) = checks::atomic_slots(t, sm);
    let wb = nv.alloc_from(&w.iter().map(|s| s.0).collect::<Vec<_>>())?;
    let db = nv.alloc_from(&d.iter().map(|s| s.0).collect::<Vec<_>>())?;
    let (tickets, olds) = (
        pe.poisoned::<u32>(t as usize)?,
        pe.poisoned::<u32>(t as usize)?,
    );
    let args = (
        wb.device_ptr(),
        db.device_ptr(),
        tickets.device_ptr(),
        olds.device_ptr(),
    );
    launch(
        pe,
        "atomics_global",
        LaunchConfig::new(blocks, threads),
        args,
    )?;
    let (gw, gd) = (wb.to_vec(nv.stream())?, db.to_vec(nv.stream())?);
    let (tk, ol) = (tickets.to_vec(nv.stream())?, olds.to_vec(nv.stream())?);
    checks::atomics_global(t, sm, (&gw, &gd), (&tk, &ol))?;

    // Message passing between two blocks.
    let (data, flags, seen) = (
        pe.poisoned::<u32>(8)?,
        nv.alloc_zeroed::<u32>(2)?,
        pe.poisoned::<u32>(8)?,
    );
    let args = (data.device_ptr(), flags.device_ptr(), seen.device_ptr());
    launch(pe, "atomics_message", LaunchConfig::new(2, 32), args)?;
    check_eq(
        "atomics_message",
        &seen.to_vec(nv.stream())?,
        &(1..=8).collect::<Vec<u32>>(),
    )?;

    // `.shared` atomics, 3 blocks of 96.
    let out = pe.poisoned::<u32>(18)?;
    launch(
        pe,
        "atomics_shared",
        LaunchConfig::new(3, 96),
        (out.device_ptr(),),
    )?;
    let got = out.to_vec(nv.stream())?;
    for b in 0..3 {
        let r = &got[b * 6..b * 6 + 6];
        check_eq("atomics_shared", &r[..5], &[96, 95, 192, 0, 288])?;
        ensure(r[5] >> 31 == 1 && r[5] & !(1 << 31) < 96, || {
            format!("atomics_shared: swap/or gave {:#x}", r[5])
        })?;
    }
    Ok(())
}

fn cuda_arch(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let out = pe.poisoned::<u32>(1)?;
    launch(
        pe,
        "cuda_arch_value",
        LaunchConfig::new(1, 1),
        (out.device_ptr(),),
    )?;
    let sm = sm_of(pe)?;
    check_eq("cuda_arch_value", &out.to_vec(nv.stream())?, &[sm * 10])
}

gpu_main! {
    ONE => warp_shuffles, warp_votes, warp_reductions, shared_static, shared_dynamic, atomics,
        cuda_arch, math_f32, math_f64, math_approx, half_conversions, packed_math;
}
