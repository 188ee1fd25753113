//! GPU tests of teams and collectives (`nvshmem_host::harness`), on 1, 2 and
//! 4 PEs, on four teams: the world, the even PEs (`split_strided`), and this
//! PE's row and column of a 2-D split (`split_2d`, 2 PEs per row). Every
//! result is checked element by element against a CPU reference, with
//! element counts 1, 7 and 1001; each kernel runs in its thread, warp and
//! block forms (one per element count). Kernels: `tests/kernels/collectives`.
//!
//! Without a GPU every run prints `SKIPPED`. 4 PEs on one GPU need CUDA MPS;
//! so do the host's stream collectives with 2 PEs on one GPU (limited MPG:
//! they must be refused with `Error::Unsupported` there).

use bytemuck::Pod;
use nvshmem_host::harness::{self, GpuTest, Pe as HarnessPe, TestResult, check_eq, ensure};
use nvshmem_host::{
    And, AsTeam, DeviceTeam, Error, KernelParam, Max, Min, Module, Nvshmem, Or, Pe, Prod, ReduceOp,
    SplitTeam, Sum, Team, Xor,
};
use std::fmt::Debug;

const KERNELS: &str = "collectives-kernels";
const ALL: &[u32] = &[1, 2, 4];
/// Odd element counts, one per scope.
const SIZES: [usize; 3] = [1, 7, 1001];
const SCOPES: [&str; 3] = ["thread", "warp", "block"];
const THREADS: u32 = 128;

/// A team a test runs on, as seen by one PE.
struct OnTeam<'a> {
    name: &'static str,
    /// The host's team, on members only.
    host: Option<&'a dyn AsTeam>,
    /// The device handle, on members only.
    device: Option<DeviceTeam>,
    /// The world PE numbers of the members, in team order.
    members: Vec<u32>,
}

impl OnTeam<'_> {
    /// The handle for a kernel's arguments. Only members launch (see `run`),
    /// so the world handle on other PEs is never used.
    fn handle(&self) -> DeviceTeam {
        self.device.unwrap_or(DeviceTeam::WORLD)
    }

    /// This PE's number in the team.
    fn rank(&self, me: u32) -> usize {
        self.members.iter().position(|&m| m == me).unwrap()
    }
}

/// The split teams of a test; destroyed (collectively) when dropped.
struct Splits {
    evens: Option<SplitTeam>,
    row: Option<SplitTeam>,
    col: Option<SplitTeam>,
}

/// In limited MPG (2 PEs on one GPU without MPS) NVSHMEM has no team splits:
/// they must be refused, and the tests run on the world only.
fn split(nv: &Nvshmem) -> Result<Splits, Error> {
    let n = nv.n_pes();
    if nv.limited_mpg() {
        return match nv.split_strided(Team::World, 0, 2, n.div_ceil(2)) {
            Err(Error::Unsupported { .. }) => Ok(Splits {
                evens: None,
                row: None,
                col: None,
            }),
            other => Err(Error::InvalidArgument {
                reason: format!(
                    "split_strided in limited MPG gave {other:?}, not Error::Unsupported"
                ),
            }),
        };
    }
    let evens = nv.split_strided(Team::World, 0, 2, n.div_ceil(2))?;
    let (row, col) = nv.split_2d(Team::World, 2.min(n))?;
    Ok(Splits { evens, row, col })
}

/// The teams, with their members computed here (not asked of NVSHMEM;
/// `team_queries` checks that NVSHMEM agrees).
fn teams<'a>(nv: &Nvshmem, s: &'a Splits) -> Vec<OnTeam<'a>> {
    let (me, n) = (nv.my_pe().index(), nv.n_pes());
    let x = 2.min(n);
    let row_start = me / x * x;
    let world_only = if nv.limited_mpg() { 1 } else { 4 };
    let mut all = vec![
        OnTeam {
            name: "world",
            host: Some(&Team::World),
            device: Some(Team::World.device()),
            members: (0..n).collect(),
        },
        OnTeam {
            name: "evens (split_strided 0,2)",
            host: s.evens.as_ref().map(|t| t as &dyn AsTeam),
            device: s.evens.as_ref().map(|t| t.device()),
            members: (0..n).step_by(2).collect(),
        },
        OnTeam {
            name: "row (split_2d x=2)",
            host: s.row.as_ref().map(|t| t as &dyn AsTeam),
            device: s.row.as_ref().map(|t| t.device()),
            members: (row_start..(row_start + x).min(n)).collect(),
        },
        OnTeam {
            name: "column (split_2d x=2)",
            host: s.col.as_ref().map(|t| t as &dyn AsTeam),
            device: s.col.as_ref().map(|t| t.device()),
            members: (me % x..n).step_by(x as usize).collect(),
        },
    ];
    all.truncate(world_only);
    all
}

/// Every PE's kernels are done and their data delivered.
fn barrier(nv: &Nvshmem) -> Result<(), Error> {
    nv.barrier_all_on_stream(nv.stream())?;
    nv.synchronize(nv.stream())
}

/// Runs `case` on every team; failures of checks are collected so that every
/// PE still joins every later collective; the first is returned.
fn on_teams(
    pe: &mut HarnessPe,
    mut case: impl FnMut(&Nvshmem, &Module, &OnTeam, &mut Vec<String>) -> Result<(), Error>,
) -> TestResult {
    let nv = pe.nvshmem();
    let module = pe.module(KERNELS)?;
    let splits = split(nv)?;
    let mut failures = Vec::new();
    for team in teams(nv, &splits) {
        case(nv, &module, &team, &mut failures)?;
    }
    barrier(nv)?;
    let Splits { evens, row, col } = splits;
    drop((col, row, evens));
    match failures.into_iter().next() {
        None => Ok(()),
        Some(f) => Err(f.into()),
    }
}

fn record(failures: &mut Vec<String>, what: String, result: TestResult) {
    if let Err(e) = result {
        failures.push(format!("{what}: {e}"));
    }
}

/// Element types with a deterministic per-(PE, index) input.
trait Elem: Pod + PartialEq + Debug + KernelParam {
    fn val(pe: u32, i: usize) -> Self;
}

impl Elem for i32 {
    fn val(pe: u32, i: usize) -> Self {
        // Small, of both signs, so products of 4 stay exact.
        ((pe as i32 + 1) * 53 + i as i32 * 27) % 97 - 40
    }
}
impl Elem for u64 {
    fn val(pe: u32, i: usize) -> Self {
        (pe as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
            ^ (i as u64).wrapping_mul(0xBF58_476D_1CE4_E5B9)
    }
}
impl Elem for u8 {
    fn val(pe: u32, i: usize) -> Self {
        (pe as usize * 37 + i * 11 + 1) as u8
    }
}
impl Elem for f32 {
    fn val(pe: u32, i: usize) -> Self {
        i32::val(pe, i) as f32
    }
}
impl Elem for f64 {
    fn val(pe: u32, i: usize) -> Self {
        i32::val(pe, i) as f64 * 0.5
    }
}

fn input<T: Elem>(pe: u32, len: usize) -> Vec<T> {
    (0..len).map(|i| T::val(pe, i)).collect()
}

/// Launches `kernel` collectively on a team's members, waits for all PEs.
/// Every PE calls it, right after allocating the kernel's buffers with
/// `alloc_zeroed`/`alloc_from`: those return once every PE's copy is filled,
/// so no peer's kernel can reach a buffer before it is ready.
fn run<A: nvshmem_host::KernelArgs>(
    nv: &Nvshmem,
    module: &Module,
    kernel: &str,
    member: bool,
    args: A,
) -> Result<(), Error> {
    if member {
        let k = module.kernel(kernel)?;
        // SAFETY: every kernel of the crate reads and writes only the
        // symmetric buffers it is given, within the sizes the host allocated.
        unsafe { k.launch_collective(nv.stream(), 1, THREADS, args)? };
        nv.synchronize(nv.stream())?;
    }
    barrier(nv)
}

fn broadcast_case<T: Elem>(
    nv: &Nvshmem,
    m: &Module,
    t: &OnTeam,
    f: &mut Vec<String>,
    kernel: &str,
) -> Result<(), Error> {
    let me = nv.my_pe().index();
    for (k, n) in SIZES.into_iter().enumerate() {
        let scope = k as u32;
        // The last member is the root: not always team PE 0.
        let root = t.members.len() as u32 - 1;
        let src = nv.alloc_from(&input::<T>(me, n))?;
        let dst = nv.alloc_zeroed::<T>(n)?;
        let team = t.handle();
        let args = (team, dst.sym_ptr(), src.sym_ptr(), n as u64, root, scope);
        run(nv, m, kernel, t.device.is_some(), args)?;
        if t.device.is_some() {
            let want = input::<T>(t.members[root as usize], n);
            record(
                f,
                format!("{} on {}, n={n}, {}", kernel, t.name, SCOPES[k]),
                check_eq(kernel, &dst.to_vec(nv.stream())?, &want),
            );
        }
        barrier(nv)?;
    }
    Ok(())
}

fn fcollect_case<T: Elem>(
    nv: &Nvshmem,
    m: &Module,
    t: &OnTeam,
    f: &mut Vec<String>,
    kernel: &str,
) -> Result<(), Error> {
    let me = nv.my_pe().index();
    let size = t.members.len();
    for (k, n) in SIZES.into_iter().enumerate() {
        let src = nv.alloc_from(&input::<T>(me, n))?;
        let dst = nv.alloc_zeroed::<T>(n * nv.n_pes() as usize)?;
        run(
            nv,
            m,
            kernel,
            t.device.is_some(),
            (t.handle(), dst.sym_ptr(), src.sym_ptr(), n as u64, k as u32),
        )?;
        if t.device.is_some() {
            let want: Vec<T> = t.members.iter().flat_map(|&p| input::<T>(p, n)).collect();
            let got = dst.to_vec(nv.stream())?;
            record(
                f,
                format!("{kernel} on {}, n={n}, {}", t.name, SCOPES[k]),
                check_eq(kernel, &got[..n * size], &want),
            );
        }
        barrier(nv)?;
    }
    Ok(())
}

fn alltoall_case<T: Elem>(
    nv: &Nvshmem,
    m: &Module,
    t: &OnTeam,
    f: &mut Vec<String>,
    kernel: &str,
) -> Result<(), Error> {
    let me = nv.my_pe().index();
    let size = t.members.len();
    let whole = nv.n_pes() as usize;
    for (k, n) in SIZES.into_iter().enumerate() {
        let src = nv.alloc_from(&input::<T>(me, n * whole))?;
        let dst = nv.alloc_zeroed::<T>(n * whole)?;
        run(
            nv,
            m,
            kernel,
            t.device.is_some(),
            (t.handle(), dst.sym_ptr(), src.sym_ptr(), n as u64, k as u32),
        )?;
        if t.device.is_some() {
            let r = t.rank(me);
            // Block j comes from member j's block r.
            let want: Vec<T> = t
                .members
                .iter()
                .flat_map(|&p| (0..n).map(move |i| T::val(p, r * n + i)))
                .collect();
            let got = dst.to_vec(nv.stream())?;
            record(
                f,
                format!("{kernel} on {}, n={n}, {}", t.name, SCOPES[k]),
                check_eq(kernel, &got[..n * size], &want),
            );
        }
        barrier(nv)?;
    }
    Ok(())
}

/// `reduce_OP_T` (scatter: false) or `reducescatter_OP_T` against `fold` over the members.
#[allow(clippy::too_many_arguments)]
fn reduce_case<T: Elem>(
    nv: &Nvshmem,
    m: &Module,
    t: &OnTeam,
    f: &mut Vec<String>,
    kernel: &str,
    scatter: bool,
    fold: fn(T, T) -> T,
) -> Result<(), Error> {
    let me = nv.my_pe().index();
    let whole = nv.n_pes() as usize;
    for (k, n) in SIZES.into_iter().enumerate() {
        let src_len = if scatter { n * whole } else { n };
        let src = nv.alloc_from(&input::<T>(me, src_len))?;
        let dst = nv.alloc_zeroed::<T>(n)?;
        run(
            nv,
            m,
            kernel,
            t.device.is_some(),
            (t.handle(), dst.sym_ptr(), src.sym_ptr(), n as u64, k as u32),
        )?;
        if t.device.is_some() {
            let base = if scatter { t.rank(me) * n } else { 0 };
            let want: Vec<T> = (0..n)
                .map(|i| {
                    let mut vals = t.members.iter().map(|&p| T::val(p, base + i));
                    let first = vals.next().unwrap();
                    vals.fold(first, fold)
                })
                .collect();
            record(
                f,
                format!("{kernel} on {}, n={n}, {}", t.name, SCOPES[k]),
                check_eq(kernel, &dst.to_vec(nv.stream())?, &want),
            );
        }
        barrier(nv)?;
    }
    Ok(())
}

fn team_queries(pe: &mut HarnessPe) -> TestResult {
    let n = pe.nvshmem().n_pes();
    on_teams(pe, |nv, m, t, f| {
        let me = nv.my_pe();
        let out = nv.alloc_zeroed::<i32>(4)?;
        let Some(team) = t.device else {
            return barrier(nv);
        };
        let k = m.kernel("team_info")?;
        record(
            f,
            "team_info is marked collective".into(),
            ensure(!k.is_collective(), || "team queries are not collective"),
        );
        // SAFETY: one thread writes out[0..4].
        unsafe { k.launch(nv.stream(), 1, 32, (team, out.device_ptr()))? };
        nv.synchronize(nv.stream())?;
        let r = t.rank(me.index()) as i32;
        let size = t.members.len() as i32;
        record(
            f,
            format!("team_info on {} of {n}", t.name),
            check_eq(
                "team_info",
                &out.to_vec(nv.stream())?,
                &[r, size, t.members[0] as i32, r],
            ),
        );
        // The host's view: a handle with the same id answers the same.
        let ht = t.host.expect("members have the host team");
        let host: Vec<i64> = vec![nv.team_my_pe(ht)?.index() as i64, nv.team_n_pes(ht)? as i64];
        let members = (0..size as u32)
            .map(|i| {
                Ok(nv
                    .team_translate_pe(ht, Pe::new(i), Team::World)?
                    .map_or(-1, |p| p.index() as i64))
            })
            .collect::<Result<Vec<i64>, Error>>()?;
        let want: Vec<i64> = t.members.iter().map(|&p| p as i64).collect();
        record(
            f,
            format!("host team queries on {}", t.name),
            check_eq("team_my_pe/team_n_pes", &host, &[r as i64, size as i64]),
        );
        record(
            f,
            format!("host team_translate_pe on {}", t.name),
            check_eq("team_translate_pe", &members, &want),
        );
        barrier(nv)
    })
}

fn team_barriers(pe: &mut HarnessPe) -> TestResult {
    on_teams(pe, |nv, m, t, f| {
        let size = t.members.len() as u64;
        for mode in 0..7u32 {
            let counter = nv.alloc_zeroed::<u64>(1)?;
            let out = nv.alloc_zeroed::<u64>(3)?;
            run(
                nv,
                m,
                "team_barrier_count",
                t.device.is_some(),
                (t.handle(), counter.sym_ptr(), out.device_ptr(), 3u32, mode),
            )?;
            if t.device.is_some() {
                let names = [
                    "barrier",
                    "barrier_warp",
                    "barrier_block",
                    "sync",
                    "sync_warp",
                    "sync_block",
                    "barrier_warpgroup",
                ];
                record(
                    f,
                    format!("{} on {}", names[mode as usize], t.name),
                    check_eq(
                        "team_barrier_count",
                        &out.to_vec(nv.stream())?,
                        &[size, 2 * size, 3 * size],
                    ),
                );
            }
            barrier(nv)?;
        }
        Ok(())
    })
}

fn broadcast(pe: &mut HarnessPe) -> TestResult {
    on_teams(pe, |nv, m, t, f| {
        broadcast_case::<i32>(nv, m, t, f, "broadcast_i32")?;
        broadcast_case::<f64>(nv, m, t, f, "broadcast_f64")?;
        broadcast_case::<u8>(nv, m, t, f, "broadcast_u8")
    })
}

fn fcollect(pe: &mut HarnessPe) -> TestResult {
    on_teams(pe, |nv, m, t, f| {
        fcollect_case::<i32>(nv, m, t, f, "fcollect_i32")?;
        fcollect_case::<f64>(nv, m, t, f, "fcollect_f64")?;
        fcollect_case::<u8>(nv, m, t, f, "fcollect_u8")
    })
}

fn alltoall(pe: &mut HarnessPe) -> TestResult {
    on_teams(pe, |nv, m, t, f| {
        alltoall_case::<i32>(nv, m, t, f, "alltoall_i32")?;
        alltoall_case::<f64>(nv, m, t, f, "alltoall_f64")?;
        alltoall_case::<u8>(nv, m, t, f, "alltoall_u8")
    })
}

/// The byte-wise forms over `[u8; 3]`, as bytes: broadcast (root 0), fcollect, alltoall.
fn pods(pe: &mut HarnessPe) -> TestResult {
    on_teams(pe, |nv, m, t, f| {
        let me = nv.my_pe().index();
        let whole = nv.n_pes() as usize;
        let size = t.members.len();
        let px = |p: u32, i: usize| {
            [
                u8::val(p, 3 * i),
                u8::val(p, 3 * i + 1),
                u8::val(p, 3 * i + 2),
            ]
        };
        for which in 0..3u32 {
            for (k, n) in SIZES.into_iter().enumerate() {
                let src = nv.alloc_from(&(0..n * whole).map(|i| px(me, i)).collect::<Vec<_>>())?;
                let dst = nv.alloc_zeroed::<[u8; 3]>(n * whole)?;
                run(
                    nv,
                    m,
                    "pods_u8x3",
                    t.device.is_some(),
                    (
                        t.handle(),
                        dst.sym_ptr(),
                        src.sym_ptr(),
                        n as u64,
                        which,
                        k as u32,
                    ),
                )?;
                if t.device.is_some() {
                    let got = dst.to_vec(nv.stream())?;
                    let r = t.rank(me);
                    let (want, len): (Vec<[u8; 3]>, usize) = match which {
                        0 => ((0..n).map(|i| px(t.members[0], i)).collect(), n),
                        1 => (
                            t.members
                                .iter()
                                .flat_map(|&p| (0..n).map(move |i| px(p, i)))
                                .collect(),
                            n * size,
                        ),
                        _ => (
                            t.members
                                .iter()
                                .flat_map(|&p| (0..n).map(move |i| px(p, r * n + i)))
                                .collect(),
                            n * size,
                        ),
                    };
                    let name = ["broadcast_pod", "fcollect_pod", "alltoall_pod"][which as usize];
                    record(
                        f,
                        format!("{name} on {}, n={n}, {}", t.name, SCOPES[k]),
                        check_eq(name, &got[..len], &want),
                    );
                }
                barrier(nv)?;
            }
        }
        Ok(())
    })
}

macro_rules! reduce_all {
    ($nv:expr, $m:expr, $t:expr, $f:expr, $scatter:expr; $($t_:ty, $op:literal => $fold:expr;)*) => {$(
        reduce_case::<$t_>($nv, $m, $t, $f,
            &format!("{}_{}_{}", if $scatter { "reducescatter" } else { "reduce" }, $op, stringify!($t_)),
            $scatter, $fold)?;
    )*};
}

fn reductions(pe: &mut HarnessPe, scatter: bool) -> TestResult {
    on_teams(pe, |nv, m, t, f| {
        reduce_all! { nv, m, t, f, scatter;
            i32, "and" => |a, b| a & b;
            i32, "or" => |a, b| a | b;
            i32, "xor" => |a, b| a ^ b;
            i32, "min" => |a: i32, b| a.min(b);
            i32, "max" => |a: i32, b| a.max(b);
            i32, "sum" => |a: i32, b| a.wrapping_add(b);
            i32, "prod" => |a: i32, b| a.wrapping_mul(b);
            u64, "xor" => |a, b| a ^ b;
            u64, "sum" => |a: u64, b| a.wrapping_add(b);
            u8, "or" => |a, b| a | b;
            f32, "sum" => |a, b| a + b;
            f32, "prod" => |a, b| a * b;
            f32, "min" => |a: f32, b| a.min(b);
            f32, "max" => |a: f32, b| a.max(b);
            f64, "sum" => |a, b| a + b;
            f64, "min" => |a: f64, b| a.min(b);
        }
        Ok(())
    })
}

fn reduce(pe: &mut HarnessPe) -> TestResult {
    reductions(pe, false)
}

fn reducescatter(pe: &mut HarnessPe) -> TestResult {
    reductions(pe, true)
}

/// Host reductions on a stream against the same CPU references.
fn host_reduce<T: Elem, O: ReduceOp<T>>(
    nv: &Nvshmem,
    t: &OnTeam,
    team: Option<&dyn AsTeam>,
    f: &mut Vec<String>,
    op: O,
    fold: fn(T, T) -> T,
    scatter: bool,
) -> Result<(), Error> {
    let me = nv.my_pe().index();
    let size = t.members.len();
    for n in SIZES {
        let src_len = if scatter { n * size } else { n };
        let src = nv.alloc_from(&input::<T>(me, src_len))?;
        let dst = nv.alloc_zeroed::<T>(n)?;
        if let Some(team) = team {
            if scatter {
                nv.reducescatter_on_stream(nv.stream(), team, op, &dst, &src)?;
            } else {
                nv.reduce_on_stream(nv.stream(), team, op, &dst, &src)?;
            }
            nv.synchronize(nv.stream())?;
            let base = if scatter { t.rank(me) * n } else { 0 };
            let want: Vec<T> = (0..n)
                .map(|i| {
                    let mut v = t.members.iter().map(|&p| T::val(p, base + i));
                    let first = v.next().unwrap();
                    v.fold(first, fold)
                })
                .collect();
            let what = format!(
                "{}_on_stream {} on {}, n={n}",
                if scatter { "reducescatter" } else { "reduce" },
                O::NAME,
                t.name
            );
            record(f, what, check_eq(O::NAME, &dst.to_vec(nv.stream())?, &want));
        }
        barrier(nv)?;
    }
    Ok(())
}

fn on_stream(pe: &mut HarnessPe) -> TestResult {
    if pe.nvshmem().limited_mpg() {
        let nv = pe.nvshmem();
        let buf = nv.alloc_zeroed::<i32>(7)?;
        return match nv.reduce_on_stream(nv.stream(), Team::World, Sum, &buf, &buf) {
            Err(Error::Unsupported { .. }) => Ok(()),
            other => Err(format!(
                "reduce_on_stream in limited MPG gave {other:?}, expected Error::Unsupported"
            )
            .into()),
        };
    }
    on_teams(pe, |nv, _m, t, f| {
        let team = t.host;
        host_reduce::<i32, _>(nv, t, team, f, And, |a, b| a & b, false)?;
        host_reduce::<i32, _>(nv, t, team, f, Or, |a, b| a | b, false)?;
        host_reduce::<i32, _>(nv, t, team, f, Xor, |a, b| a ^ b, false)?;
        host_reduce::<i32, _>(nv, t, team, f, Min, |a: i32, b| a.min(b), false)?;
        host_reduce::<i32, _>(nv, t, team, f, Max, |a: i32, b| a.max(b), false)?;
        host_reduce::<i32, _>(nv, t, team, f, Sum, |a: i32, b| a.wrapping_add(b), false)?;
        host_reduce::<i32, _>(nv, t, team, f, Prod, |a: i32, b| a.wrapping_mul(b), false)?;
        host_reduce::<f32, _>(nv, t, team, f, Sum, |a, b| a + b, false)?;
        host_reduce::<u64, _>(nv, t, team, f, Xor, |a, b| a ^ b, false)?;
        host_reduce::<i32, _>(nv, t, team, f, Sum, |a: i32, b| a.wrapping_add(b), true)?;
        host_reduce::<f64, _>(nv, t, team, f, Min, |a: f64, b| a.min(b), true)?;
        let me = nv.my_pe().index();
        let size = t.members.len();
        let whole = nv.n_pes() as usize;
        for n in SIZES {
            let src = nv.alloc_from(&input::<i32>(me, n))?;
            let dst = nv.alloc_zeroed::<i32>(n)?;
            let all = nv.alloc_zeroed::<i32>(n * whole)?;
            let a_src = nv.alloc_from(&input::<u8>(me, n * whole))?;
            let a_dst = nv.alloc_zeroed::<u8>(n * whole)?;
            if let Some(team) = team {
                let s = nv.stream();
                let root = size as u32 - 1;
                let (all, a_src, a_dst) = (
                    all.view(..n * size)?,
                    a_src.view(..n * size)?,
                    a_dst.view(..n * size)?,
                );
                nv.team_broadcast_on_stream(s, team, &dst, &src, Pe::new(root))?;
                nv.team_fcollect_on_stream(s, team, &all, &src)?;
                nv.team_alltoall_on_stream(s, team, &a_dst, &a_src)?;
                nv.team_barrier_on_stream(s, team)?;
                nv.team_sync_on_stream(s, team)?;
                nv.synchronize(s)?;
                let r = t.rank(me);
                record(
                    f,
                    format!("team_broadcast_on_stream on {}, n={n}", t.name),
                    check_eq(
                        "broadcast",
                        &dst.to_vec(s)?,
                        &input::<i32>(t.members[root as usize], n),
                    ),
                );
                let want: Vec<i32> = t.members.iter().flat_map(|&p| input::<i32>(p, n)).collect();
                record(
                    f,
                    format!("team_fcollect_on_stream on {}, n={n}", t.name),
                    check_eq("fcollect", &all.to_vec(s)?, &want),
                );
                let want: Vec<u8> = t
                    .members
                    .iter()
                    .flat_map(|&p| (0..n).map(move |i| u8::val(p, r * n + i)))
                    .collect();
                record(
                    f,
                    format!("team_alltoall_on_stream on {}, n={n}", t.name),
                    check_eq("alltoall", &a_dst.to_vec(s)?, &want),
                );
            }
            barrier(nv)?;
        }
        Ok(())
    })
}

/// Plain launches of the new collective kernels are refused; the team query
/// kernel is not collective.
fn collective_launch(pe: &mut HarnessPe) -> TestResult {
    let nv = pe.nvshmem();
    let module = pe.module(KERNELS)?;
    for name in [
        "reduce_sum_f32",
        "reducescatter_xor_u64",
        "broadcast_u8",
        "fcollect_i32",
        "alltoall_f64",
        "pods_u8x3",
        "team_barrier_count",
    ] {
        ensure(module.kernel(name)?.is_collective(), || {
            format!("`{name}` is not marked collective")
        })?;
    }
    ensure(
        !module.kernel("team_info")?.is_collective(),
        || "`team_info` is marked collective",
    )?;
    let buf = nv.alloc_zeroed::<f32>(7)?;
    let k = module.kernel("reduce_sum_f32")?;
    // SAFETY: refused before it runs.
    match unsafe {
        k.launch(
            nv.stream(),
            1,
            THREADS,
            (
                Team::World.device(),
                buf.sym_ptr(),
                buf.sym_ptr(),
                7u64,
                2u32,
            ),
        )
    } {
        Err(e @ Error::CollectiveLaunchRequired { .. }) => {
            ensure(e.to_string().contains("launch_collective"), || {
                format!("the error does not say what to do: {e}")
            })
        }
        other => Err(format!("plain launch of `reduce_sum_f32` gave {other:?}").into()),
    }
}

fn main() {
    harness::main(
        env!("NVSHMEM_RS_PTX_DIR"),
        &[
            GpuTest::new("team_queries", team_queries).pes(ALL),
            GpuTest::new("team_barriers", team_barriers).pes(ALL),
            GpuTest::new("broadcast", broadcast).pes(ALL),
            GpuTest::new("fcollect", fcollect).pes(ALL),
            GpuTest::new("alltoall", alltoall).pes(ALL),
            GpuTest::new("pods", pods).pes(ALL),
            GpuTest::new("reduce", reduce).pes(ALL),
            GpuTest::new("reducescatter", reducescatter).pes(ALL),
            GpuTest::new("on_stream", on_stream).pes(ALL),
            GpuTest::new("collective_launch", collective_launch).pes(&[1]),
        ],
    );
}
