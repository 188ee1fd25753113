//! The math part of `tests/compute.rs`: libdevice in `f32` and `f64`
//! against a CPU reference within documented ULP bounds, the fast
//! approximations within the PTX ISA's error bounds, `f16`/`bf16`
//! conversions and packed arithmetic exactly.
//!
//! Bounds: CUDA's Programming Guide (maximum ULP error of each libdevice
//! function) plus 1 for the reference's own rounding; `f64` references come
//! from the host's libm (itself within about 1 ULP), so `f64` bounds get 2
//! more, and references composed of several functions more still.
//! Functions whose error is absolute (Bessel functions) are checked
//! absolutely. Domains avoid the zeros of functions whose relative error is
//! unbounded there.

use super::launch;
use half::{bf16, f16};
use nvshmem_host::LaunchConfig;
use nvshmem_host::harness::{self, Failure, TestPe, TestResult, check_eq};

/// What the float outputs hold before a kernel runs: NaNs with a payload no
/// operation here produces (the GPU's own NaNs are canonical), so that an
/// element left unwritten is told apart from a NaN result, which some
/// references expect.
const UNWRITTEN_F32: u32 = 0x7fa5_a5a5;
const UNWRITTEN_F64: u64 = 0x7ff4_a5a5_a5a5_a5a5;

/// Fails on the first element of `got` that still holds `marker`'s bytes.
fn all_written<T: bytemuck::Pod>(name: &str, got: &[T], marker: T) -> TestResult {
    let unwritten = |v: &T| bytemuck::bytes_of(v) == bytemuck::bytes_of(&marker);
    match got.iter().position(unwritten) {
        None => Ok(()),
        Some(i) => Err(Failure::new(format!(
            "kernel `{name}`: element {i} was not written ({} of {} elements hold the poison)",
            got.iter().filter(|v| unwritten(v)).count(),
            got.len()
        ))),
    }
}

/// How a function's results are checked.
#[derive(Clone, Copy)]
enum Check {
    /// At most this many ULPs from the reference (`f32`, `f64`).
    Ulp(u64, u64),
    /// At most this far from the reference (`f32`, `f64`).
    Abs(f64, f64),
    /// `remquo`'s quotient: the sign and the low 3 bits.
    Quotient,
}

/// One function of the kernels' table (`tests/kernels/compute/src/math.rs`, same order).
struct Case {
    name: &'static str,
    x: (f64, f64),
    y: (f64, f64),
    z: (f64, f64),
    /// Inputs rounded to multiples of this (0: not rounded).
    grid: f64,
    reference: fn(f64, f64, f64) -> f64,
    /// A reference in `f32` arithmetic, for functions whose `f32` result is
    /// not the `f64` one rounded (`nextafter`).
    reference32: Option<fn(f32, f32, f32) -> f32>,
    check: Check,
}

const ANY: (f64, f64) = (-1.0, 1.0);

fn erfinv(p: f64) -> f64 {
    // Newton on erf, from a good start (accurate to the last bits of f64 in (-1, 1)).
    let mut x = {
        let w = -((1.0 - p) * (1.0 + p)).ln();
        let s = if p < 0.0 { -1.0 } else { 1.0 };
        s * (2.0 * w / std::f64::consts::PI).sqrt().min(6.0) * 0.9
    };
    for _ in 0..60 {
        let err = libm::erf(x) - p;
        let step = err / (2.0 / std::f64::consts::PI.sqrt() * (-x * x).exp());
        x -= step;
        if step.abs() < 1e-17 * x.abs().max(1e-300) {
            break;
        }
    }
    x
}

fn frexp(x: f64) -> (f64, i32) {
    libm::frexp(x)
}

macro_rules! case {
    ($name:literal, $x:expr, $y:expr, $z:expr, $grid:expr, |$a:ident, $b:ident, $c:ident| $r:expr, $check:expr) => {
        Case {
            name: $name,
            x: $x,
            y: $y,
            z: $z,
            grid: $grid,
            reference: |$a, $b, $c| {
                let _ = ($a, $b, $c);
                $r
            },
            reference32: None,
            check: $check,
        }
    };
}

#[rustfmt::skip]
fn cases() -> Vec<Case> {
    use Check::*;
    const PI: f64 = std::f64::consts::PI;
    let mut v = vec![
        case!("exp", (-20.0, 20.0), ANY, ANY, 0.0, |x, y, z| x.exp(), Ulp(3, 3)),
        case!("exp2", (-30.0, 30.0), ANY, ANY, 0.0, |x, y, z| x.exp2(), Ulp(3, 3)),
        case!("exp10", (-10.0, 10.0), ANY, ANY, 0.0, |x, y, z| libm::exp10(x), Ulp(3, 3)),
        case!("expm1", (-5.0, 5.0), ANY, ANY, 0.0, |x, y, z| x.exp_m1(), Ulp(2, 3)),
        case!("log", (1e-3, 1e3), ANY, ANY, 0.0, |x, y, z| x.ln(), Ulp(2, 3)),
        case!("log2", (1e-3, 1e3), ANY, ANY, 0.0, |x, y, z| x.log2(), Ulp(2, 3)),
        case!("log10", (1e-3, 1e3), ANY, ANY, 0.0, |x, y, z| x.log10(), Ulp(3, 3)),
        case!("log1p", (-0.9, 100.0), ANY, ANY, 0.0, |x, y, z| x.ln_1p(), Ulp(2, 3)),
        case!("sin", (-10.0, 10.0), ANY, ANY, 0.0, |x, y, z| x.sin(), Ulp(3, 4)),
        case!("cos", (-10.0, 10.0), ANY, ANY, 0.0, |x, y, z| x.cos(), Ulp(3, 4)),
        case!("tan", (-1.5, 1.5), ANY, ANY, 0.0, |x, y, z| x.tan(), Ulp(5, 4)),
        case!("asin", (-1.0, 1.0), ANY, ANY, 0.0, |x, y, z| x.asin(), Ulp(3, 4)),
        case!("acos", (-1.0, 1.0), ANY, ANY, 0.0, |x, y, z| x.acos(), Ulp(3, 4)),
        case!("atan", (-50.0, 50.0), ANY, ANY, 0.0, |x, y, z| x.atan(), Ulp(3, 4)),
        case!("atan2", (-5.0, 5.0), (-5.0, 5.0), ANY, 0.0, |x, y, z| x.atan2(y), Ulp(4, 4)),
        case!("sinh", (-10.0, 10.0), ANY, ANY, 0.0, |x, y, z| x.sinh(), Ulp(4, 4)),
        case!("cosh", (-10.0, 10.0), ANY, ANY, 0.0, |x, y, z| x.cosh(), Ulp(3, 3)),
        case!("tanh", (-5.0, 5.0), ANY, ANY, 0.0, |x, y, z| x.tanh(), Ulp(3, 3)),
        case!("asinh", (-100.0, 100.0), ANY, ANY, 0.0, |x, y, z| x.asinh(), Ulp(4, 5)),
        case!("acosh", (1.0, 100.0), ANY, ANY, 0.0, |x, y, z| x.acosh(), Ulp(5, 5)),
        case!("atanh", (-0.99, 0.99), ANY, ANY, 0.0, |x, y, z| x.atanh(), Ulp(4, 4)),
        case!("erf", (-3.0, 3.0), ANY, ANY, 0.0, |x, y, z| libm::erf(x), Ulp(3, 4)),
        case!("erfc", (-3.0, 9.0), ANY, ANY, 0.0, |x, y, z| libm::erfc(x), Ulp(5, 8)),
        case!("erfinv", (-0.99, 0.99), ANY, ANY, 0.0, |x, y, z| erfinv(x), Ulp(3, 20)),
        case!("pow", (0.1, 10.0), (-5.0, 5.0), ANY, 0.0, |x, y, z| x.powf(y), Ulp(5, 4)),
        case!("sqrt", (0.0, 1e6), ANY, ANY, 0.0, |x, y, z| x.sqrt(), Ulp(0, 0)),
        case!("rsqrt", (1e-3, 1e6), ANY, ANY, 0.0, |x, y, z| 1.0 / x.sqrt(), Ulp(3, 3)),
        case!("cbrt", (-1e3, 1e3), ANY, ANY, 0.0, |x, y, z| x.cbrt(), Ulp(2, 3)),
        case!("hypot", (-100.0, 100.0), (-100.0, 100.0), ANY, 0.0, |x, y, z| x.hypot(y), Ulp(4, 4)),
        case!("fma", (-10.0, 10.0), (-10.0, 10.0), (-10.0, 10.0), 1.0 / 16.0, |x, y, z| x.mul_add(y, z), Ulp(0, 0)),
        case!("floor", (-100.0, 100.0), ANY, ANY, 0.25, |x, y, z| x.floor(), Ulp(0, 0)),
        case!("ceil", (-100.0, 100.0), ANY, ANY, 0.25, |x, y, z| x.ceil(), Ulp(0, 0)),
        case!("trunc", (-100.0, 100.0), ANY, ANY, 0.25, |x, y, z| x.trunc(), Ulp(0, 0)),
        case!("round", (-100.0, 100.0), ANY, ANY, 0.5, |x, y, z| x.round(), Ulp(0, 0)),
        case!("fabs", (-100.0, 100.0), ANY, ANY, 0.0, |x, y, z| x.abs(), Ulp(0, 0)),
        case!("fmin", (-10.0, 10.0), (-10.0, 10.0), ANY, 0.0, |x, y, z| x.min(y), Ulp(0, 0)),
        case!("fmax", (-10.0, 10.0), (-10.0, 10.0), ANY, 0.0, |x, y, z| x.max(y), Ulp(0, 0)),
        case!("fmod", (-100.0, 100.0), (0.5, 7.0), ANY, 0.0, |x, y, z| x % y, Ulp(0, 0)),
        case!("rint", (-100.0, 100.0), ANY, ANY, 0.5, |x, y, z| x.round_ties_even(), Ulp(0, 0)),
        case!("copysign", (-10.0, 10.0), (-10.0, 10.0), ANY, 0.0, |x, y, z| x.copysign(y), Ulp(0, 0)),
        case!("fdim", (-10.0, 10.0), (-10.0, 10.0), ANY, 0.0, |x, y, z| if x > y { x - y } else { 0.0 }, Ulp(0, 0)),
        case!("remainder", (-100.0, 100.0), (0.5, 7.0), ANY, 0.0, |x, y, z| libm::remainder(x, y), Ulp(0, 0)),
        case!("tgamma", (0.5, 10.0), ANY, ANY, 0.0, |x, y, z| libm::tgamma(x), Ulp(6, 14)),
        case!("lgamma", (2.5, 20.0), ANY, ANY, 0.0, |x, y, z| libm::lgamma(x), Ulp(7, 8)),
        case!("erfcx", (0.0, 3.0), ANY, ANY, 0.0, |x, y, z| (x * x).exp() * libm::erfc(x), Ulp(5, 16)),
        case!("normcdf", (-5.0, 5.0), ANY, ANY, 0.0, |x, y, z| 0.5 * libm::erfc(-x / 2f64.sqrt()), Ulp(6, 64)),
        case!("normcdfinv", (0.01, 0.99), ANY, ANY, 0.0, |x, y, z| 2f64.sqrt() * erfinv(2.0 * x - 1.0), Ulp(6, 24)),
        case!("sinpi", (0.1, 0.4), ANY, ANY, 0.0, |x, y, z| (PI * x).sin(), Ulp(2, 6)),
        case!("cospi", (0.1, 0.4), ANY, ANY, 0.0, |x, y, z| (PI * x).cos(), Ulp(2, 6)),
        case!("logb", (1e-3, 1e6), ANY, ANY, 0.0, |x, y, z| (frexp(x).1 - 1) as f64, Ulp(0, 0)),
        case!("rcbrt", (1e-3, 1e3), ANY, ANY, 0.0, |x, y, z| 1.0 / x.cbrt(), Ulp(2, 4)),
        case!("rhypot", (-100.0, 100.0), (-100.0, 100.0), ANY, 0.0, |x, y, z| 1.0 / x.hypot(y), Ulp(3, 4)),
        case!("norm3d", (-10.0, 10.0), (-10.0, 10.0), (-10.0, 10.0), 0.0, |x, y, z| (x * x + y * y + z * z).sqrt(), Ulp(3, 5)),
        case!("erfcinv", (0.1, 1.9), ANY, ANY, 0.0, |x, y, z| erfinv(1.0 - x), Ulp(5, 24)),
        case!("j0", (0.0, 8.0), ANY, ANY, 0.0, |x, y, z| libm::j0(x), Abs(1e-5, 1e-11)),
        case!("j1", (0.0, 8.0), ANY, ANY, 0.0, |x, y, z| libm::j1(x), Abs(1e-5, 1e-11)),
        case!("y0", (0.5, 8.0), ANY, ANY, 0.0, |x, y, z| libm::y0(x), Abs(1e-5, 1e-11)),
        case!("y1", (0.5, 8.0), ANY, ANY, 0.0, |x, y, z| libm::y1(x), Abs(1e-5, 1e-11)),
        case!("nextafter", (-10.0, 10.0), (-10.0, 10.0), ANY, 0.0, |x, y, z| libm::nextafter(x, y), Ulp(0, 0)),
        case!("ldexp", (-10.0, 10.0), (-20.0, 20.0), ANY, 0.0, |x, y, z| libm::ldexp(x, y as i32), Ulp(0, 0)),
        case!("scalbn", (-10.0, 10.0), (-20.0, 20.0), ANY, 0.0, |x, y, z| libm::scalbn(x, y as i32), Ulp(0, 0)),
        case!("powi", (0.5, 2.0), (-10.0, 10.0), ANY, 0.0, |x, y, z| x.powf((y as i32) as f64), Ulp(5, 8)),
        case!("ilogb", (1e-3, 1e6), ANY, ANY, 0.0, |x, y, z| (frexp(x).1 - 1) as f64, Ulp(0, 0)),
        case!("sincos.sin", (-10.0, 10.0), ANY, ANY, 0.0, |x, y, z| x.sin(), Ulp(3, 4)),
        case!("sincos.cos", (-10.0, 10.0), ANY, ANY, 0.0, |x, y, z| x.cos(), Ulp(3, 4)),
        case!("sincospi.sin", (0.1, 0.4), ANY, ANY, 0.0, |x, y, z| (PI * x).sin(), Ulp(2, 6)),
        case!("sincospi.cos", (0.1, 0.4), ANY, ANY, 0.0, |x, y, z| (PI * x).cos(), Ulp(2, 6)),
        case!("frexp.m", (-1e4, 1e4), ANY, ANY, 0.0, |x, y, z| frexp(x).0, Ulp(0, 0)),
        case!("frexp.e", (-1e4, 1e4), ANY, ANY, 0.0, |x, y, z| frexp(x).1 as f64, Ulp(0, 0)),
        case!("modf.frac", (-100.0, 100.0), ANY, ANY, 0.0, |x, y, z| x - x.trunc(), Ulp(0, 0)),
        case!("modf.int", (-100.0, 100.0), ANY, ANY, 0.0, |x, y, z| x.trunc(), Ulp(0, 0)),
        case!("remquo.r", (-100.0, 100.0), (0.5, 7.0), ANY, 0.0, |x, y, z| libm::remainder(x, y), Ulp(0, 0)),
        case!("remquo.q", (-100.0, 100.0), (0.5, 7.0), ANY, 0.0, |x, y, z| ((x - libm::remainder(x, y)) / y).round(), Quotient),
    ];
    // nextafter steps in the argument's own precision.
    v[58].reference32 = Some(|x, y, _| libm::nextafterf(x, y));
    // ldexp/scalbn/powi take y as an integer: y on integers.
    for i in [59, 60, 61] {
        v[i].y = (v[i].y.0.round(), v[i].y.1.round());
    }
    v
}

/// The `i`-th of `n` inputs of case `k` in `[lo, hi]`, quasi-random.
fn input(k: usize, i: usize, range: (f64, f64), grid: f64, integer: bool) -> f64 {
    let u = ((i as f64 + 0.5) * 0.618_033_988_749_895 + k as f64 * 0.137).fract();
    let x = range.0 + (range.1 - range.0) * u;
    if integer {
        x.round()
    } else if grid > 0.0 {
        (x / grid).round() * grid
    } else {
        x
    }
}

/// ULPs between two floats of one type, given their bits as ordered integers.
fn ulps(a: i64, b: i64) -> u64 {
    a.abs_diff(b)
}

fn ordered32(x: f32) -> i64 {
    let i = x.to_bits() as i32;
    (if i < 0 { -(i & i32::MAX) } else { i }) as i64
}

fn ordered64(x: f64) -> i64 {
    let i = x.to_bits() as i64;
    if i < 0 { -(i & i64::MAX) } else { i }
}

/// Checks one result; `Err` says what is wrong.
fn verdict(case: &Case, got: f64, want: f64, ulp: u64, is_f32: bool) -> Result<(), String> {
    let ok = match case.check {
        _ if got.is_nan() && want.is_nan() => true,
        Check::Ulp(..) => ulp <= if is_f32 { tol(case).0 } else { tol(case).1 },
        Check::Abs(a32, a64) => (got - want).abs() <= if is_f32 { a32 } else { a64 },
        Check::Quotient => {
            let (g, w) = (got as i64, want as i64);
            // The low bits may all be 0 (libdevice then returns 0, no sign).
            (w == 0 || g == 0 || g.signum() == w.signum()) && g.abs() % 8 == w.abs() % 8
        }
    };
    if ok {
        Ok(())
    } else {
        Err(format!("got {got:e}, expected {want:e} ({ulp} ULP)"))
    }
}

fn tol(case: &Case) -> (u64, u64) {
    match case.check {
        Check::Ulp(a, b) => (a, b),
        _ => (0, 0),
    }
}

/// Runs `name` with `cfg` on inputs `x`, `y`, `z` and an output as long
/// (holding `marker` first), and `n`; returns the output, every element written.
fn run_xyz<T: bytemuck::Pod>(
    pe: &TestPe,
    (name, cfg): (&str, LaunchConfig),
    [x, y, z]: [Vec<T>; 3],
    (n, marker): (usize, T),
) -> Result<Vec<T>, Failure> {
    let nv = pe.nvshmem();
    let (x, y, z) = (nv.alloc_from(&x)?, nv.alloc_from(&y)?, nv.alloc_from(&z)?);
    let out = harness::poisoned(nv, x.len(), marker)?;
    let ptrs = (
        x.device_ptr(),
        y.device_ptr(),
        z.device_ptr(),
        out.device_ptr(),
    );
    launch(pe, name, cfg, (ptrs.0, ptrs.1, ptrs.2, ptrs.3, n as u32))?;
    let got = out.to_vec(nv.stream())?;
    all_written(name, &got, marker)?;
    Ok(got)
}

fn run_table(pe: &mut TestPe, is_f32: bool) -> TestResult {
    let cases = cases();
    let n = 64usize;
    let integer_y = |k: usize| (59..=61).contains(&k);
    let input_of = |k: usize, i: usize, which: usize| {
        let c = &cases[k];
        let (range, int) = match which {
            0 => (c.x, false),
            1 => (c.y, integer_y(k)),
            _ => (c.z, false),
        };
        input(k * 3 + which, i, range, c.grid, int)
    };
    let all = |which: usize| -> Vec<f64> {
        (0..cases.len())
            .flat_map(|k| (0..n).map(move |i| (k, i)))
            .map(|(k, i)| input_of(k, i, which))
            .collect()
    };
    let (xs, ys, zs) = (all(0), all(1), all(2));
    let name = if is_f32 { "math_f32" } else { "math_f64" };
    let cfg = LaunchConfig::for_elements(n as u32, 64);
    let results: Vec<f64> = if is_f32 {
        let narrow = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
        let inputs = [narrow(&xs), narrow(&ys), narrow(&zs)];
        let out = run_xyz(pe, (name, cfg), inputs, (n, f32::from_bits(UNWRITTEN_F32)))?;
        out.into_iter().map(f64::from).collect()
    } else {
        let inputs = [xs.clone(), ys.clone(), zs.clone()];
        run_xyz(pe, (name, cfg), inputs, (n, f64::from_bits(UNWRITTEN_F64)))?
    };
    let mut failures = Vec::new();
    for (k, case) in cases.iter().enumerate() {
        let mut worst = 0u64;
        for i in 0..n {
            let at = k * n + i;
            let (x, y, z) = if is_f32 {
                (
                    xs[at] as f32 as f64,
                    ys[at] as f32 as f64,
                    zs[at] as f32 as f64,
                )
            } else {
                (xs[at], ys[at], zs[at])
            };
            let got = results[at];
            let (want, ulp) = if is_f32 {
                let w = match case.reference32 {
                    Some(r) => r(x as f32, y as f32, z as f32),
                    None => (case.reference)(x, y, z) as f32,
                };
                (w as f64, ulps(ordered32(got as f32), ordered32(w)))
            } else {
                let w = (case.reference)(x, y, z);
                (w, ulps(ordered64(got), ordered64(w)))
            };
            worst = worst.max(if want.is_nan() && got.is_nan() {
                0
            } else {
                ulp
            });
            if let Err(e) = verdict(case, got, want, ulp, is_f32) {
                failures.push(format!("{name} {} ({x:e}, {y:e}, {z:e}): {e}", case.name));
                break;
            }
        }
        if matches!(case.check, Check::Ulp(..)) {
            eprintln!("{name} {:<14} max {worst} ULP", case.name);
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(Failure::new(failures.join("\n")))
    }
}

/// libdevice in `f32`, every function of the table.
pub fn math_f32(pe: &mut TestPe) -> TestResult {
    run_table(pe, true)
}

/// libdevice in `f64`, every function of the table.
pub fn math_f64(pe: &mut TestPe) -> TestResult {
    run_table(pe, false)
}

/// The approximations: (name, domain, reference, relative bound, absolute bound).
type Approx = (&'static str, (f64, f64), fn(f64, f64) -> f64, f64, f64);

fn approx_cases() -> [Approx; 15] {
    let p = |e: i32| 2f64.powi(e);
    let pi = std::f64::consts::PI;
    [
        ("exp2", (-20.0, 20.0), |x, _| x.exp2(), p(-21), 0.0),
        ("log2", (1e-3, 1e3), |x, _| x.log2(), p(-21), p(-21)),
        ("sin", (-pi, pi), |x, _| x.sin(), 0.0, p(-20)),
        ("cos", (-pi, pi), |x, _| x.cos(), 0.0, p(-20)),
        ("tanh", (-5.0, 5.0), |x, _| x.tanh(), p(-10), 0.0),
        ("sqrt", (1e-3, 1e6), |x, _| x.sqrt(), p(-22), 0.0),
        ("rsqrt", (1e-3, 1e6), |x, _| 1.0 / x.sqrt(), p(-22), 0.0),
        ("rcp", (1e-3, 1e6), |x, _| 1.0 / x, p(-22), 0.0),
        ("div", (-100.0, 100.0), |x, y| x / y, p(-21), 0.0),
        ("exp", (-10.0, 10.0), |x, _| x.exp(), p(-18), 0.0),
        ("exp10", (-5.0, 5.0), |x, _| 10f64.powf(x), p(-18), 0.0),
        ("log", (1e-3, 1e3), |x, _| x.ln(), p(-20), p(-20)),
        ("log10", (1e-3, 1e3), |x, _| x.log10(), p(-20), p(-20)),
        ("rsqrt_f64", (1e-3, 1e6), |x, _| 1.0 / x.sqrt(), p(-22), 0.0),
        ("rcp_f64", (1e-3, 1e6), |x, _| 1.0 / x, p(-20), 0.0),
    ]
}

/// The fast approximations, within the PTX ISA's bounds.
pub fn math_approx(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let cases = approx_cases();
    let n = 256usize;
    let xs: Vec<f32> = (0..cases.len() * n)
        .map(|at| input(at / n, at % n, cases[at / n].1, 0.0, false) as f32)
        .collect();
    // div's divisor: away from 0, both signs.
    let ys: Vec<f32> = (0..cases.len() * n)
        .map(|at| if at % 2 == 0 { 0.5 } else { -3.5 } + (at % 7) as f32)
        .collect();
    let (x, y) = (nv.alloc_from(&xs)?, nv.alloc_from(&ys)?);
    let marker = f32::from_bits(UNWRITTEN_F32);
    let out = harness::poisoned(nv, xs.len(), marker)?;
    let cfg = LaunchConfig::for_elements(n as u32, 128);
    launch(
        pe,
        "math_approx",
        cfg,
        (x.device_ptr(), y.device_ptr(), out.device_ptr(), n as u32),
    )?;
    let got = out.to_vec(nv.stream())?;
    all_written("math_approx", &got, marker)?;
    for (k, (name, _, reference, rel, abs)) in cases.iter().enumerate() {
        let mut worst = 0f64;
        for i in 0..n {
            let at = k * n + i;
            let want = reference(xs[at] as f64, ys[at] as f64);
            let err = (got[at] as f64 - want).abs();
            let bound = rel * want.abs() + abs + f32::EPSILON as f64 * want.abs() / 2.0;
            worst = worst.max(err / want.abs().max(1e-30));
            // NaN compares false: a NaN result passes only where NaN is expected.
            let nan_expected = want.is_nan() && got[at].is_nan();
            if !(err <= bound || nan_expected) {
                return Err(Failure::new(format!(
                    "math_approx {name}({}): got {}, expected {want} (error {err:e}, bound {bound:e})",
                    xs[at], got[at]
                )));
            }
        }
        eprintln!("math_approx {name:<10} max relative error {worst:.2e}");
    }
    Ok(())
}

/// `f16`/`bf16` conversions, round to nearest even, against the `half` crate.
pub fn half_conversions(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let mut xs: Vec<f32> = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        65504.0,
        65520.0,
        70000.0,
        -1e9,
        1e-6,
        -3e-8,
        6e-8,
        1.0e-40,
        1.0 + 2f32.powi(-11),
        1.0 + 3.0 * 2f32.powi(-11),
        1.0 + 2f32.powi(-8),
        1.0 + 3.0 * 2f32.powi(-8),
        3.0e38,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.1,
        1.0 / 3.0,
    ];
    xs.extend((0..200).map(|i| ((i as f32) * 0.7).sin() * 10f32.powi(i % 9 - 4)));
    let n = xs.len();
    let x = nv.alloc_from(&xs)?;
    let out = pe.poisoned::<u32>(8 * n)?;
    launch(
        pe,
        "half_convert",
        LaunchConfig::for_elements(n as u32, 128),
        (x.device_ptr(), out.device_ptr(), n as u32),
    )?;
    let mut want = vec![0u32; 8 * n];
    for (i, &x) in xs.iter().enumerate() {
        let (h, b) = (f16::from_f32(x), bf16::from_f32(x));
        let (h2, b2) = (f16::from_f32(2.0 * x), bf16::from_f32(2.0 * x));
        let r = [
            h.to_bits() as u32,
            b.to_bits() as u32,
            h.to_f32().to_bits(),
            b.to_f32().to_bits(),
            h.to_bits() as u32 | (h2.to_bits() as u32) << 16,
            b.to_bits() as u32 | (b2.to_bits() as u32) << 16,
            h2.to_f32().to_bits(),
            b.to_f32().to_bits(),
        ];
        for (k, v) in r.into_iter().enumerate() {
            want[k * n + i] = v;
        }
    }
    check_eq("half_convert", &out.to_vec(nv.stream())?, &want)
}

/// Packed `f16x2`/`bf16x2` arithmetic on values whose exact results fit in
/// `f64`, so the reference is one correct rounding.
pub fn packed_math(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let n = 512usize;
    let odd = |i: usize, salt: u64, max: i64| {
        ((super::mix(i as u64 * 3 + salt) % max as u64) as i64 * 2 - max) as f64
    };
    let h = |i: usize, s: u64| f16::from_f64(odd(i, s, 127) / 16.0);
    let b = |i: usize, s: u64| bf16::from_f64(odd(i, s, 63) / 8.0);
    let pair16 = |s: u64| {
        (0..n)
            .map(|i| h(2 * i, s).to_bits() as u32 | (h(2 * i + 1, s).to_bits() as u32) << 16)
            .collect::<Vec<_>>()
    };
    let pairb = |s: u64| {
        (0..n)
            .map(|i| b(2 * i, s).to_bits() as u32 | (b(2 * i + 1, s).to_bits() as u32) << 16)
            .collect::<Vec<_>>()
    };
    let ins = [
        pair16(1),
        pair16(2),
        pair16(3),
        pairb(4),
        pairb(5),
        pairb(6),
    ];
    let bufs = ins
        .iter()
        .map(|v| nv.alloc_from(v))
        .collect::<Result<Vec<_>, _>>()?;
    let out = pe.poisoned::<u32>(12 * n)?;
    let p = |i: usize| bufs[i].device_ptr();
    let args = (
        p(0),
        p(1),
        p(2),
        p(3),
        p(4),
        p(5),
        out.device_ptr(),
        n as u32,
    );
    launch(
        pe,
        "packed_math",
        LaunchConfig::for_elements(n as u32, 128),
        args,
    )?;
    let halves = |w: u32| [w & 0xffff, w >> 16];
    let mut want = vec![0u32; 12 * n];
    for i in 0..n {
        for lane in 0..2 {
            let f = |k: usize| f16::from_bits(halves(ins[k][i])[lane] as u16).to_f64();
            let g = |k: usize| bf16::from_bits(halves(ins[k][i])[lane] as u16).to_f64();
            let (a, b_, c, d, e, f_) = (f(0), f(1), f(2), g(3), g(4), g(5));
            let r16 = [a + b_, a - b_, a * b_, a * b_ + c, a.min(b_), a.max(b_)]
                .map(|v| f16::from_f64(v).to_bits() as u32);
            let rb = [d + e, d - e, d * e, d * e + f_, d.min(e), d.max(e)]
                .map(|v| bf16::from_f64(v).to_bits() as u32);
            for (k, v) in r16.into_iter().chain(rb).enumerate() {
                want[k * n + i] |= v << (16 * lane);
            }
        }
    }
    check_eq("packed_math", &out.to_vec(nv.stream())?, &want)
}
