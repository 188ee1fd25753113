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
//!
//! Every destination starts poisoned (the test's sentinel, NaN for floats),
//! so a collective that did nothing, or wrote too little, fails; the
//! elements past a team's part must still hold the poison.

#[macro_use]
mod common;
mod checks;
use common::ALL;
use nvshmem_host::harness::{self, Poison, TestPe, TestResult, check_eq, ensure};
use nvshmem_host::{
    And, AsTeam, Error, KernelArgs, KernelParam, Max, Min, Module, Nvshmem, Or, Pe, Prod, ReduceOp,
    SplitTeam, Sum, SymPtr, Team, Xor,
};

const KERNELS: &str = "collectives-kernels";
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
    device: Option<Team>,
    /// The world PE numbers of the members, in team order.
    members: Vec<u32>,
}

impl OnTeam<'_> {
    /// The handle for a kernel's arguments. Only members launch (see `run`),
    /// so the world handle on other PEs is never used.
    fn handle(&self) -> Team {
        self.device.unwrap_or(Team::WORLD)
    }

    /// This PE's number in the team.
    fn rank(&self, me: u32) -> usize {
        let pos = self.members.iter().position(|&m| m == me);
        pos.expect("rank asked on a PE outside the team")
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
        return match nv.split_strided(Team::WORLD, 0, 2, n.div_ceil(2)) {
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
    let evens = nv.split_strided(Team::WORLD, 0, 2, n.div_ceil(2))?;
    let (row, col) = nv.split_2d(Team::WORLD, 2.min(n))?;
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
            host: Some(&Team::WORLD),
            device: Some(Team::WORLD),
            members: (0..n).collect(),
        },
        OnTeam {
            name: "evens (split_strided 0,2)",
            host: s.evens.as_ref().map(|t| t as &dyn AsTeam),
            device: s.evens.as_ref().map(|t| t.team()),
            members: (0..n).step_by(2).collect(),
        },
        OnTeam {
            name: "row (split_2d x=2)",
            host: s.row.as_ref().map(|t| t as &dyn AsTeam),
            device: s.row.as_ref().map(|t| t.team()),
            members: (row_start..(row_start + x).min(n)).collect(),
        },
        OnTeam {
            name: "column (split_2d x=2)",
            host: s.col.as_ref().map(|t| t as &dyn AsTeam),
            device: s.col.as_ref().map(|t| t.team()),
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

/// The failed checks of a test, collected so that every PE still joins
/// every later collective, and the test's poison.
struct Checks {
    failures: Vec<String>,
    seed: u64,
}

impl Checks {
    /// The test's poison for `T`: what destinations hold before a kernel runs.
    fn poison<T: Poison>(&self) -> T {
        T::poison(self.seed)
    }

    /// A destination of `len` elements holding the poison. Collective.
    fn poisoned<T: Poison>(
        &self,
        nv: &Nvshmem,
        len: usize,
    ) -> Result<nvshmem_host::SymBuffer<T>, Error> {
        harness::poisoned(nv, len, self.poison::<T>())
    }
}

/// Runs `case` on every team; failures of checks are collected so that every
/// PE still joins every later collective; the first is returned.
fn on_teams(
    pe: &mut TestPe,
    mut case: impl FnMut(&Nvshmem, &Module, &OnTeam, &mut Checks) -> Result<(), Error>,
) -> TestResult {
    let nv = pe.nvshmem();
    let module = pe.module(KERNELS)?;
    let splits = split(nv)?;
    let mut collected = Checks {
        failures: Vec::new(),
        seed: pe.seed(),
    };
    for team in teams(nv, &splits) {
        case(nv, &module, &team, &mut collected)?;
    }
    barrier(nv)?;
    let Splits { evens, row, col } = splits;
    drop((col, row, evens));
    match collected.failures.into_iter().next() {
        None => Ok(()),
        Some(f) => Err(f.into()),
    }
}

fn record(collected: &mut Checks, what: String, result: TestResult) {
    if let Err(e) = result {
        collected.failures.push(format!("{what}: {e}"));
    }
}

/// Element types with a deterministic per-(PE, index) input.
trait Elem: Poison + KernelParam {
    fn val(pe: u32, i: usize) -> Self;
}

impl Elem for i32 {
    fn val(pe: u32, i: usize) -> Self {
        checks::collective_i32(pe, i)
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
/// `Checks::poisoned`/`alloc_from`: those return once every PE's copy is filled,
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

/// The allocate-run-check loop of a kernel case, once per element count
/// `n` of [`SIZES`] (scope `k`): `src(n)` is this PE's input, `dst_len(n)`
/// elements are poisoned for the output, the kernel runs on the team's
/// members with `args(team, dst, src, n, k)`, and members compare the
/// first `want(n).len()` elements of the output with `want(n)`, and check
/// that the rest still holds the poison.
#[allow(clippy::too_many_arguments)]
fn sized_case<T, A>(
    nv: &Nvshmem,
    m: &Module,
    t: &OnTeam,
    f: &mut Checks,
    (kernel, label): (&str, &str),
    (src, dst_len): (impl Fn(usize) -> Vec<T>, impl Fn(usize) -> usize),
    args: impl Fn(Team, SymPtr<T>, SymPtr<T>, u64, u32) -> A,
    want: impl Fn(usize) -> Vec<T>,
) -> Result<(), Error>
where
    T: Poison,
    A: KernelArgs,
{
    for (k, n) in SIZES.into_iter().enumerate() {
        let src = nv.alloc_from(&src(n))?;
        let dst = f.poisoned::<T>(nv, dst_len(n))?;
        let a = args(t.handle(), dst.sym_ptr(), src.sym_ptr(), n as u64, k as u32);
        run(nv, m, kernel, t.device.is_some(), a)?;
        if t.device.is_some() {
            let want = want(n);
            let got = dst.to_vec(nv.stream())?;
            let poison = f.poison();
            record(
                f,
                format!("{label} on {}, n={n}, {}", t.name, SCOPES[k]),
                checks::destination(label, &got, &want, poison),
            );
        }
        barrier(nv)?;
    }
    Ok(())
}

/// The plain arguments `(team, dst, src, n, scope)`.
fn plain<T>(
    team: Team,
    d: SymPtr<T>,
    s: SymPtr<T>,
    n: u64,
    k: u32,
) -> (Team, SymPtr<T>, SymPtr<T>, u64, u32) {
    (team, d, s, n, k)
}

fn broadcast_case<T: Elem>(
    nv: &Nvshmem,
    m: &Module,
    t: &OnTeam,
    f: &mut Checks,
    kernel: &str,
) -> Result<(), Error> {
    let me = nv.my_pe().index();
    // The last member is the root: not always team PE 0.
    let root = t.members.len() as u32 - 1;
    let sizes = (|n| input::<T>(me, n), |n| n);
    let args = |team, d, s, n, k| (team, d, s, n, root, k);
    let want = |n| input::<T>(t.members[root as usize], n);
    sized_case(nv, m, t, f, (kernel, kernel), sizes, args, want)
}

/// fcollect (`alltoall` false: every member's whole input, in member
/// order) or alltoall (block `rank` of every member's input).
fn gather_case<T: Elem>(
    nv: &Nvshmem,
    m: &Module,
    t: &OnTeam,
    f: &mut Checks,
    kernel: &str,
    alltoall: bool,
) -> Result<(), Error> {
    let (me, whole) = (nv.my_pe().index(), nv.n_pes() as usize);
    let src_len = move |n| if alltoall { n * whole } else { n };
    let sizes = (|n| input::<T>(me, src_len(n)), |n| n * whole);
    // Only members compare (and have a rank): `want` runs on members only.
    let want = |n| exchanged(t, if alltoall { t.rank(me) } else { 0 }, n, T::val);
    sized_case(nv, m, t, f, (kernel, kernel), sizes, plain, want)
}

/// Block `j` of a member's output when it gathers block `r` of every member
/// `j` (`r` = 0: fcollect; the member's rank: alltoall), where `val(p, i)` is
/// PE `p`'s input element `i`.
fn exchanged<T>(t: &OnTeam, r: usize, n: usize, val: impl Fn(u32, usize) -> T) -> Vec<T> {
    t.members
        .iter()
        .flat_map(|&p| (0..n).map(move |i| (p, r * n + i)))
        .map(|(p, i)| val(p, i))
        .collect()
}

/// Element-wise `fold` over the members' inputs at `base..base + n`.
fn reduced<T: Elem>(t: &OnTeam, base: usize, n: usize, fold: fn(T, T) -> T) -> Vec<T> {
    checks::reduced(&t.members, base, n, T::val, fold)
}

/// `reduce_OP_T` (scatter: false) or `reducescatter_OP_T` against `fold` over the members.
#[allow(clippy::too_many_arguments)]
fn reduce_case<T: Elem>(
    nv: &Nvshmem,
    m: &Module,
    t: &OnTeam,
    f: &mut Checks,
    kernel: &str,
    scatter: bool,
    fold: fn(T, T) -> T,
) -> Result<(), Error> {
    let (me, whole) = (nv.my_pe().index(), nv.n_pes() as usize);
    let src_len = move |n| if scatter { n * whole } else { n };
    let sizes = (|n| input::<T>(me, src_len(n)), |n| n);
    let base = |n| if scatter { t.rank(me) * n } else { 0 };
    let want = |n| reduced(t, base(n), n, fold);
    sized_case(nv, m, t, f, (kernel, kernel), sizes, plain, want)
}

fn team_queries(pe: &mut TestPe) -> TestResult {
    let n = pe.nvshmem().n_pes();
    on_teams(pe, |nv, m, t, f| {
        let me = nv.my_pe();
        let out = f.poisoned::<i32>(nv, 4)?;
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
            checks::team_info(&out.to_vec(nv.stream())?, r, &t.members),
        );
        // The host's view: a handle with the same id answers the same.
        let ht = t.host.expect("members have the host team");
        let host: Vec<i64> = vec![nv.team_my_pe(ht)?.index() as i64, nv.team_n_pes(ht)? as i64];
        // One past the last member, and the largest number: None, not a
        // read past NVSHMEM's table.
        let members = (0..size as u32)
            .chain([size as u32, u32::MAX])
            .map(|i| {
                Ok(nv
                    .team_translate_pe(ht, Pe::new(i), Team::WORLD)?
                    .map_or(-1, |p| p.index() as i64))
            })
            .collect::<Result<Vec<i64>, Error>>()?;
        let want: Vec<i64> = t
            .members
            .iter()
            .map(|&p| p as i64)
            .chain([-1, -1])
            .collect();
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

fn team_barriers(pe: &mut TestPe) -> TestResult {
    on_teams(pe, |nv, m, t, f| {
        let size = t.members.len() as u64;
        for mode in 0..7u32 {
            let counter = nv.alloc_zeroed::<u64>(1)?;
            let out = f.poisoned::<u64>(nv, 3)?;
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

/// A test that runs `$case::<T>` (with any `$extra` arguments) with kernel
/// `$prefix_T` for `T` = i32, f64 and u8.
macro_rules! per_type {
    ($($name:ident: $case:ident($($extra:expr),*), $prefix:literal;)*) => {$(
        fn $name(pe: &mut TestPe) -> TestResult {
            on_teams(pe, |nv, m, t, f| {
                $case::<i32>(nv, m, t, f, concat!($prefix, "_i32") $(, $extra)*)?;
                $case::<f64>(nv, m, t, f, concat!($prefix, "_f64") $(, $extra)*)?;
                $case::<u8>(nv, m, t, f, concat!($prefix, "_u8") $(, $extra)*)
            })
        }
    )*};
}

per_type! {
    broadcast: broadcast_case(), "broadcast";
    fcollect: gather_case(false), "fcollect";
    alltoall: gather_case(true), "alltoall";
}

/// The byte-wise forms over `[u8; 3]`, as bytes: broadcast (root 0), fcollect, alltoall.
fn pods(pe: &mut TestPe) -> TestResult {
    on_teams(pe, |nv, m, t, f| {
        let (me, whole) = (nv.my_pe().index(), nv.n_pes() as usize);
        let px = |p: u32, i: usize| [0, 1, 2].map(|j| u8::val(p, 3 * i + j));
        for which in 0..3u32 {
            let label = ["broadcast_pod", "fcollect_pod", "alltoall_pod"][which as usize];
            let sizes = (
                |n| (0..n * whole).map(|i| px(me, i)).collect(),
                |n| n * whole,
            );
            let args = |team, d, s, n, k| (team, d, s, n, which, k);
            let want = |n| match which {
                0 => (0..n).map(|i| px(t.members[0], i)).collect(),
                1 => exchanged(t, 0, n, px),
                _ => exchanged(t, t.rank(me), n, px),
            };
            sized_case(nv, m, t, f, ("pods_u8x3", label), sizes, args, want)?;
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

fn reductions(pe: &mut TestPe, scatter: bool) -> TestResult {
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

fn reduce(pe: &mut TestPe) -> TestResult {
    reductions(pe, false)
}

fn reducescatter(pe: &mut TestPe) -> TestResult {
    reductions(pe, true)
}

/// Host reductions on a stream against the same CPU references.
fn host_reduce<T: Elem, O: ReduceOp<T>>(
    nv: &Nvshmem,
    t: &OnTeam,
    team: Option<&dyn AsTeam>,
    f: &mut Checks,
    op: O,
    fold: fn(T, T) -> T,
    scatter: bool,
) -> Result<(), Error> {
    let me = nv.my_pe().index();
    let size = t.members.len();
    for n in SIZES {
        let src_len = if scatter { n * size } else { n };
        let src = nv.alloc_from(&input::<T>(me, src_len))?;
        let dst = f.poisoned::<T>(nv, n)?;
        if let Some(team) = team {
            if scatter {
                nv.reducescatter_on_stream(nv.stream(), team, op, &dst, &src)?;
            } else {
                nv.reduce_on_stream(nv.stream(), team, op, &dst, &src)?;
            }
            nv.synchronize(nv.stream())?;
            let base = if scatter { t.rank(me) * n } else { 0 };
            let want = reduced(t, base, n, fold);
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

fn on_stream(pe: &mut TestPe) -> TestResult {
    if pe.nvshmem().limited_mpg() {
        let nv = pe.nvshmem();
        let buf = nv.alloc_zeroed::<i32>(7)?;
        return match nv.reduce_on_stream(nv.stream(), Team::WORLD, Sum, &buf, &buf) {
            Err(Error::Unsupported { .. }) => Ok(()),
            other => Err(format!(
                "reduce_on_stream in limited MPG gave {other:?}, expected Error::Unsupported"
            )
            .into()),
        };
    }
    // Overlapping buffers are refused on every PE before NVSHMEM sees them:
    // fcollect and alltoall even in place (peers read what would be overwritten).
    {
        let nv = pe.nvshmem();
        let whole = nv.n_pes() as usize;
        let buf = nv.alloc_zeroed::<i32>(4 * whole)?;
        let refusals = [
            (
                "fcollect_on_stream into its own source",
                nv.fcollect_on_stream(nv.stream(), Team::WORLD, &buf, &buf.view(..4)?),
            ),
            (
                "alltoall_on_stream in place",
                nv.alltoall_on_stream(nv.stream(), Team::WORLD, &buf, &buf),
            ),
        ];
        for (what, got) in refusals {
            match got {
                Err(Error::InvalidArgument { reason }) if reason.contains("overlap") => {}
                other => {
                    return Err(
                        format!("{what} gave {other:?}, expected an overlap refusal").into(),
                    );
                }
            }
        }
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
            let dst = f.poisoned::<i32>(nv, n)?;
            let all_buf = f.poisoned::<i32>(nv, n * whole)?;
            let a_src = nv.alloc_from(&input::<u8>(me, n * whole))?;
            let a_dst_buf = f.poisoned::<u8>(nv, n * whole)?;
            if let Some(team) = team {
                let s = nv.stream();
                let root = size as u32 - 1;
                let (all, a_src, a_dst) = (
                    all_buf.view(..n * size)?,
                    a_src.view(..n * size)?,
                    a_dst_buf.view(..n * size)?,
                );
                nv.broadcast_on_stream(s, team, &dst, &src, Pe::new(root))?;
                nv.fcollect_on_stream(s, team, &all, &src)?;
                nv.alltoall_on_stream(s, team, &a_dst, &a_src)?;
                nv.team_barrier_on_stream(s, team)?;
                nv.team_sync_on_stream(s, team)?;
                nv.synchronize(s)?;
                let r = t.rank(me);
                record(
                    f,
                    format!("broadcast_on_stream on {}, n={n}", t.name),
                    check_eq(
                        "broadcast",
                        &dst.to_vec(s)?,
                        &input::<i32>(t.members[root as usize], n),
                    ),
                );
                let want = exchanged(t, 0, n, i32::val);
                let (got, poison) = (all_buf.to_vec(s)?, f.poison());
                record(
                    f,
                    format!("fcollect_on_stream on {}, n={n}", t.name),
                    checks::destination("fcollect", &got, &want, poison),
                );
                let want = exchanged(t, r, n, u8::val);
                let (got, poison) = (a_dst_buf.to_vec(s)?, f.poison());
                record(
                    f,
                    format!("alltoall_on_stream on {}, n={n}", t.name),
                    checks::destination("alltoall", &got, &want, poison),
                );
            }
            barrier(nv)?;
        }
        Ok(())
    })
}

/// Plain launches of the new collective kernels are refused; the team query
/// kernel is not collective.
fn collective_launch(pe: &mut TestPe) -> TestResult {
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
            (Team::WORLD, buf.sym_ptr(), buf.sym_ptr(), 7u64, 2u32),
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

gpu_main! {
    ALL => team_queries, team_barriers, broadcast, fcollect, alltoall, pods, reduce,
        reducescatter, on_stream;
    &[1] => collective_launch;
}
