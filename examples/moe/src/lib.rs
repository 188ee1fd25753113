//! Expert-parallel mixture-of-experts dispatch and combine on NVSHMEM: the
//! host side of `moe-kernels` (`examples/moe/kernel`).
//!
//! [`Moe::new`] checks a [`Config`] on every PE, agrees the verdict with
//! every PE (so a configuration wrong on one PE fails on all, and none waits
//! for it), and allocates every symmetric buffer once, for `max_tokens`.
//! [`Moe::dispatch`] and [`Moe::combine`] then only launch kernels on the
//! PE's stream: no host synchronization, so a CUDA graph can capture them,
//! once [`Moe::allow_graph_capture`] (unsafe: the graph must not outlive
//! the buffers it uses) has said so.
//!
//! ```no_run
//! # fn main() -> Result<(), moe::Error> {
//! use moe::{Config, Mode, Moe};
//! let nv = nvshmem_host::Nvshmem::init()?;
//! let cfg = Config { hidden: 7168, experts: 64, topk: 8, max_tokens: 128,
//!                    mode: Mode::LowLatency, fp8: false, align: 1 };
//! let moe = Moe::new(&nv, cfg)?;
//! # let (x, idx, w, y, out) = todo!();
//! moe.dispatch(&x, &idx, &w, 128)?;    // rows per local expert: moe.layout()?
//! // ... the experts read moe.recv_bf16() and write y in the same rows ...
//! moe.combine(&y, &idx, &w, &out)?;
//! # Ok(()) }
//! ```
//!
//! Calls alternate dispatch, combine on every PE (the kernels' signals rely
//! on it). A call with arguments wrong on this PE returns
//! [`Error::Refused`] but still launches, in a mode that sends nothing and
//! tells every peer, so no PE waits for it; peers see it in [`Moe::status`].

use half::bf16;
use moe_kernels::plan::{BAD_EXPERT_BIT, MAX_LOCAL_EXPERTS, MAX_PES, MAX_TOPK, MAX_UNITS, THREADS};
pub use moe_kernels::{Plan, RowSrc, num, plan};
use nvshmem_host::exchange::WordExchange;
use nvshmem_host::{CudaStream, DevicePtr, Nvshmem, Result as NvResult, SymBuffer, Team};
use std::cell::Cell;
use std::path::PathBuf;

pub mod reference;

/// The typed launches of `moe-kernels`, in a module of their own: their
/// module is named like the kernel crate, which this crate uses too.
mod typed {
    nvshmem_host::include_kernels!(moe_kernels);
}
use typed::moe_kernels as launch;

/// `p` as the kernels take bf16 rows: `u16` bits, which they move and sum
/// as bf16 without naming the type.
fn bits(p: DevicePtr<bf16>) -> DevicePtr<u16> {
    DevicePtr::new(p.addr())
}

/// What can go wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A configuration this PE or another refused: nothing was allocated.
    #[error("MoE configuration refused: {0}")]
    Config(String),
    /// This call's arguments are wrong on this PE: it sent nothing (the peers
    /// were told), and its outputs are unchanged.
    #[error("MoE call refused on this PE: {0}")]
    Refused(String),
    /// Peers refused calls since the status was last cleared.
    #[error("MoE: {0}")]
    Status(String),
    /// The stream is capturing a CUDA graph, and this handle was not told
    /// that its graphs will not outlive it ([`Moe::allow_graph_capture`]):
    /// nothing was launched.
    #[error(
        "MoE: the stream is capturing a CUDA graph, which could replay after this Moe's buffers \
         are freed. Fix: call `unsafe {{ moe.allow_graph_capture() }}` first (every graph \
         captured from it must be launched only while the Moe and the buffers passed live)"
    )]
    CaptureNotAllowed,
    /// From NVSHMEM or CUDA.
    #[error(transparent)]
    Nvshmem(#[from] nvshmem_host::Error),
}

/// This crate's results.
pub type Result<T> = std::result::Result<T, Error>;

/// How dispatch moves tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Throughput: a token goes once to each PE that owns some of its
    /// experts, which expands it into packed per-expert rows; `sms` blocks
    /// at most (so compute can run beside it).
    Normal {
        /// Most blocks (of 256 threads) each kernel uses.
        sms: u32,
    },
    /// Latency: one message per (token, expert) into fixed per-expert slots,
    /// signals per expert; the whole share of the GPU.
    LowLatency,
}

/// The shape of a MoE layer's all-to-all. The same on every PE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Channels per token; a multiple of 128.
    pub hidden: usize,
    /// Experts in the job; a multiple of the PE count, at most 256 per PE.
    pub experts: usize,
    /// Experts per token, 1 to 16.
    pub topk: usize,
    /// Most tokens a PE dispatches per call.
    pub max_tokens: usize,
    /// Normal or low-latency.
    pub mode: Mode,
    /// Dispatch sends fp8 e4m3 with a f32 scale per 128 channels.
    pub fp8: bool,
    /// Each expert's rows start at a multiple of this (normal mode; say 128
    /// for GEMM tiles). At least 1.
    pub align: usize,
}

impl Config {
    /// Why this configuration cannot run on `n_pes` PEs, if it cannot.
    ///
    /// ```
    /// let c = moe::Config { hidden: 7168, experts: 64, topk: 8, max_tokens: 128,
    ///                       mode: moe::Mode::LowLatency, fp8: true, align: 1 };
    /// assert!(c.check(4).is_ok());
    /// assert!(c.check(3).unwrap_err().contains("multiple of the 3 PEs"));
    /// ```
    pub fn check(&self, n_pes: u32) -> std::result::Result<(), String> {
        let p = n_pes as usize;
        let bad = |s: String| Err(s);
        if n_pes == 0 || n_pes > MAX_PES {
            return bad(format!("{n_pes} PEs: at most {MAX_PES}"));
        }
        if self.hidden == 0 || !self.hidden.is_multiple_of(128) || self.hidden > 1 << 20 {
            return bad(format!(
                "hidden {}: use a multiple of 128 up to 2^20",
                self.hidden
            ));
        }
        if self.experts == 0 || !self.experts.is_multiple_of(p) {
            return bad(format!(
                "{} experts: use a positive multiple of the {p} PEs",
                self.experts
            ));
        }
        let local = self.experts / p;
        if local > MAX_LOCAL_EXPERTS as usize {
            return bad(format!(
                "{local} experts per PE: at most {MAX_LOCAL_EXPERTS} (use more PEs)"
            ));
        }
        if self.topk == 0 || self.topk > MAX_TOPK as usize || self.topk > self.experts {
            return bad(format!(
                "top-k {}: use 1 to {MAX_TOPK}, and at most the {} experts",
                self.topk, self.experts
            ));
        }
        if self.max_tokens == 0 || self.max_tokens > 1 << 20 {
            return bad(format!("max_tokens {}: use 1 to 2^20", self.max_tokens));
        }
        if self.align == 0 || self.align > 4096 {
            return bad(format!("align {}: use 1 to 4096", self.align));
        }
        if let Mode::Normal { sms: 0 } = self.mode {
            return bad("normal mode with 0 SMs: use at least 1".into());
        }
        if self.buckets(n_pes) * p > MAX_UNITS as usize {
            return bad(format!(
                "{} (bucket, PE) pairs: at most {MAX_UNITS} (fewer experts per PE)",
                self.buckets(n_pes) * p
            ));
        }
        let rows = self.rows_cap(n_pes);
        let row_bytes = self.hidden as u64 * 2;
        if rows >= u32::MAX as u64 || rows.saturating_mul(row_bytes) > 1 << 40 {
            return bad(format!(
                "{rows} receive rows of {row_bytes} bytes: too large"
            ));
        }
        Ok(())
    }

    fn low_latency(&self) -> bool {
        self.mode == Mode::LowLatency
    }

    fn buckets(&self, n_pes: u32) -> usize {
        if self.low_latency() {
            self.experts / n_pes as usize
        } else {
            1
        }
    }

    /// Rows of the receive buffers on `n_pes` PEs (see [`plan::rows_cap`]).
    pub fn rows_cap(&self, n_pes: u32) -> u64 {
        plan::rows_cap(
            n_pes,
            (self.experts / n_pes as usize) as u32,
            self.topk as u32,
            self.max_tokens as u32,
            self.low_latency(),
            if self.low_latency() {
                1
            } else {
                self.align as u32
            },
        )
    }

    /// The words every PE must agree on (the configuration, less `sms`).
    fn fingerprint(&self) -> u64 {
        let words = [
            self.hidden as u64,
            self.experts as u64,
            self.topk as u64,
            self.max_tokens as u64,
            self.low_latency() as u64,
            self.fp8 as u64,
            self.align as u64,
        ];
        words.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, w| {
            (h ^ w).wrapping_mul(0x0100_0000_01b3)
        })
    }
}

/// The folder of the built MoE kernels: `MOE_PTX_DIR` at run time when set
/// (a GPU machine with a copied build), else the one `build.rs` wrote.
pub fn ptx_dir() -> PathBuf {
    std::env::var_os("MOE_PTX_DIR")
        .map(Into::into)
        .unwrap_or_else(|| env!("MOE_PTX_DIR").into())
}

/// The received rows: bf16, or fp8 bytes and their scales.
pub enum Received {
    /// `rows_cap × hidden` bf16.
    Bf16(SymBuffer<bf16>),
    /// `rows_cap × hidden` e4m3 bytes and `rows_cap × hidden / 128` scales.
    Fp8 {
        /// The e4m3 values.
        x: SymBuffer<u8>,
        /// One f32 per 128 channels: value = e4m3 · scale.
        scales: SymBuffer<f32>,
    },
}

/// Where the last dispatch put each local expert's rows.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    /// Rows per local expert.
    pub counts: Vec<u32>,
    /// First row of each local expert, and the end (`local_experts + 1`).
    pub offsets: Vec<u32>,
    /// Each local expert's rows' sources, in row order.
    pub sources: Vec<Vec<RowSrc>>,
}

/// The handle: kernels, buffers and plan of one MoE layer's all-to-all.
pub struct Moe<'a> {
    nv: &'a Nvshmem,
    cfg: Config,
    kernels: launch::Kernels,
    plan: Plan,
    plan_buf: SymBuffer<Plan>,
    received: Received,
    row_src: SymBuffer<RowSrc>,
    counts: SymBuffer<u32>,
    offsets: SymBuffer<u32>,
    status: SymBuffer<u64>,
    stage: SymBuffer<u8>,
    count_in: SymBuffer<u8>,
    /// The unfused baseline's `(base_send, base_counts)`.
    base: Option<(SymBuffer<u8>, SymBuffer<u8>)>,
    _state: Vec<SymBuffer<u8>>,
    grid: u32,
    tokens: Cell<Option<u32>>,
    /// [`Moe::allow_graph_capture`] was called.
    capture_allowed: bool,
}

impl<'a> Moe<'a> {
    /// Loads the kernels from [`ptx_dir`], checks `cfg` and agrees the
    /// verdict with every PE, then allocates. **Collective.** A
    /// configuration wrong (or different) on any PE is an [`Error::Config`]
    /// on every PE.
    pub fn new(nv: &'a Nvshmem, cfg: Config) -> Result<Moe<'a>> {
        Self::build(nv, cfg, false)
    }

    /// [`Moe::new`] with the buffers of the unfused baseline too
    /// ([`baseline_dispatch`](Self::baseline_dispatch)): normal mode only.
    /// **Collective.**
    pub fn with_baseline(nv: &'a Nvshmem, cfg: Config) -> Result<Moe<'a>> {
        Self::build(nv, cfg, true)
    }

    fn build(nv: &'a Nvshmem, cfg: Config, baseline: bool) -> Result<Moe<'a>> {
        // A module that fails to load here must not leave the peers waiting
        // in the exchange below: it is part of this PE's verdict.
        let kernels = nv
            .load_module_in(ptx_dir(), launch::CRATE)
            .and_then(|m| launch::Kernels::new(&m))
            .map_err(|e| e.to_string());
        let n_pes = nv.n_pes();
        let ex = WordExchange::new(nv, 3)?;
        let local = cfg.check(n_pes).and_then(|()| match (baseline, cfg.mode) {
            (true, Mode::LowLatency) => Err("the unfused baseline needs normal mode".to_string()),
            _ => Ok(()),
        });
        let cap = kernels.as_ref().map_err(Clone::clone).and_then(|k| {
            [
                &k.moe_dispatch_send,
                &k.moe_dispatch_recv,
                &k.moe_combine_send,
                &k.moe_combine_recv,
                &k.moe_base_pack,
                &k.moe_base_unpack,
            ]
            .iter()
            .map(|k| {
                k.max_collective_blocks(THREADS, 0)
                    .map_err(|e| e.to_string())
            })
            .try_fold(u32::MAX, |m, c| c.map(|c| m.min(c)))
        });
        let verdict = local.clone().and(cap.clone().map(|_| ()));
        let all = ex.all_gather(
            nv,
            &[
                verdict.is_ok() as u64,
                cfg.fingerprint(),
                *cap.as_ref().unwrap_or(&1) as u64,
            ],
        )?;
        let refusing: Vec<usize> = (0..all.len()).filter(|&p| all[p][0] == 0).collect();
        if let Err(why) = verdict {
            return Err(Error::Config(why));
        }
        if !refusing.is_empty() {
            return Err(Error::Config(format!(
                "PE(s) {refusing:?} refused their configuration (see their errors)"
            )));
        }
        if all.iter().any(|w| w[1] != all[0][1]) {
            return Err(Error::Config(format!(
                "the PEs' configurations differ (this PE: {cfg:?}); every PE must pass the same"
            )));
        }
        let kernels = kernels.expect("checked above");
        let agreed = nv.agree_on_grid(&ex, all.iter().map(|w| w[2] as u32).min().unwrap_or(1))?;
        let grid = match cfg.mode {
            Mode::Normal { sms } => agreed.max_grid.min(sms),
            Mode::LowLatency => agreed.max_grid,
        }
        .max(1);
        Self::allocate(nv, cfg, kernels, grid, baseline)
    }

    fn allocate(
        nv: &'a Nvshmem,
        cfg: Config,
        kernels: launch::Kernels,
        grid: u32,
        baseline: bool,
    ) -> Result<Moe<'a>> {
        let n_pes = nv.n_pes();
        let (p, h, k, t) = (n_pes as usize, cfg.hidden, cfg.topk, cfg.max_tokens);
        let local = cfg.experts / p;
        let buckets = cfg.buckets(n_pes);
        let units = buckets * p;
        let msg = plan::msg_bytes(h as u32, k as u32, cfg.fp8) as usize;
        let rows = cfg.rows_cap(n_pes) as usize;
        let count_words = 1 + local;
        let mut state = Vec::new();
        let mut bytes = |n: usize| -> Result<u64> {
            let b = nv.alloc_zeroed::<u8>(n.next_multiple_of(16).max(16))?;
            let addr = b.sym_ptr().addr();
            state.push(b);
            Ok(addr)
        };
        let stage_buf = nv.alloc_zeroed::<u8>(units * t * msg)?;
        let count_in_buf = nv.alloc_zeroed::<u8>(units * count_words * 4)?;
        let (stage, count_in) = (stage_buf.sym_ptr().addr(), count_in_buf.sym_ptr().addr());
        let cnt_sig = bytes(units * 8)?;
        let data_sig = bytes(units * 8)?;
        let comb = bytes(t * k * h * 2)?;
        let comb_sig = bytes(p * 8)?;
        let send_buf = bytes(t * msg)?;
        let send_fill = bytes(4 * if cfg.low_latency() { cfg.experts } else { p })?;
        let fill = bytes(4 * local)?;
        let seen = bytes(8 * (2 * units + p))?;
        let expect_rows = bytes(4 * p)?;
        let done = bytes(16)?;
        let status = nv.alloc_zeroed::<u64>(1)?;
        let row_src = nv.alloc_zeroed::<RowSrc>(rows)?;
        let counts = nv.alloc_zeroed::<u32>(local)?;
        let offsets = nv.alloc_zeroed::<u32>(local + 1)?;
        let received = if cfg.fp8 {
            Received::Fp8 {
                x: nv.alloc_zeroed::<u8>(rows * h)?,
                scales: nv.alloc_zeroed::<f32>(rows * h / 128)?,
            }
        } else {
            Received::Bf16(nv.alloc_zeroed::<bf16>(rows * h)?)
        };
        let (recv_x, recv_scales) = match &received {
            Received::Bf16(x) => (x.device_ptr().addr(), 0),
            Received::Fp8 { x, scales } => (x.device_ptr().addr(), scales.device_ptr().addr()),
        };
        let base = if baseline {
            Some((
                nv.alloc_zeroed::<u8>(p * t * msg)?,
                nv.alloc_zeroed::<u8>(p * count_words * 4)?,
            ))
        } else {
            None
        };
        let (base_send, base_counts) = match &base {
            Some((s, c)) => (s.device_ptr().addr(), c.device_ptr().addr()),
            None => (0, 0),
        };
        let plan = Plan {
            stage,
            count_in,
            cnt_sig,
            data_sig,
            comb,
            comb_sig,
            status: status.device_ptr().addr(),
            send_buf,
            send_fill,
            recv_x,
            recv_scales,
            row_src: row_src.device_ptr().addr(),
            expert_count: counts.device_ptr().addr(),
            expert_offset: offsets.device_ptr().addr(),
            fill,
            seen,
            expect_rows,
            done,
            base_send,
            base_counts,
            hidden: h as u32,
            experts: cfg.experts as u32,
            topk: k as u32,
            max_tokens: t as u32,
            n_pes,
            local_experts: local as u32,
            low_latency: cfg.low_latency() as u32,
            fp8: cfg.fp8 as u32,
            align: if cfg.low_latency() {
                1
            } else {
                cfg.align as u32
            },
            msg_bytes: msg as u32,
            buckets: buckets as u32,
            count_words: count_words as u32,
            rows_cap: rows as u32,
            pad: 0,
        };
        let plan_buf = nv.alloc_from(&[plan])?;
        Ok(Moe {
            nv,
            cfg,
            kernels,
            plan,
            plan_buf,
            received,
            row_src,
            counts,
            offsets,
            status,
            stage: stage_buf,
            count_in: count_in_buf,
            base,
            _state: state,
            grid,
            tokens: Cell::new(None),
            capture_allowed: false,
        })
    }

    /// Lets [`dispatch`](Self::dispatch) and [`combine`](Self::combine) be
    /// captured into CUDA graphs (they refuse a capturing stream otherwise,
    /// with [`Error::CaptureNotAllowed`]).
    ///
    /// # Safety
    /// Every graph captured from this handle's calls is launched only while
    /// this `Moe` and every buffer passed to the captured calls are alive
    /// (dropping them frees their memory, which a later launch would write).
    pub unsafe fn allow_graph_capture(&mut self) {
        self.capture_allowed = true;
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The plan the kernels get (sizes and addresses).
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Blocks per kernel launch (agreed with every PE sharing the GPU).
    pub fn grid(&self) -> u32 {
        self.grid
    }

    /// Rows of the receive buffers.
    pub fn rows_cap(&self) -> usize {
        self.plan.rows_cap as usize
    }

    /// The received rows (valid after a dispatch, in the rows of [`Moe::layout`]).
    pub fn received(&self) -> &Received {
        &self.received
    }

    /// The received rows as bf16 (for a GEMM); `None` in fp8 mode.
    pub fn recv_bf16(&self) -> Option<&SymBuffer<bf16>> {
        match &self.received {
            Received::Bf16(x) => Some(x),
            Received::Fp8 { .. } => None,
        }
    }

    fn plan_ptr(&self) -> DevicePtr<Plan> {
        self.plan_buf.device_ptr()
    }

    /// A call's launches after its checks: `launches` gets `args()` where
    /// `why` is `None`, else `refused` (arguments that send nothing and tell
    /// the peers, so none waits); then `why` is the call's [`Error::Refused`].
    fn checked_launch<A>(
        &self,
        why: Option<String>,
        args: impl FnOnce() -> A,
        refused: A,
        launches: impl FnOnce(&launch::Kernels, &CudaStream, DevicePtr<Plan>, A) -> NvResult<()>,
    ) -> Result<()> {
        if !self.capture_allowed && self.nv.is_capturing(self.nv.stream())? {
            return Err(Error::CaptureNotAllowed);
        }
        let args = if why.is_none() { args() } else { refused };
        launches(&self.kernels, self.nv.stream(), self.plan_ptr(), args)?;
        why.map_or(Ok(()), |w| Err(Error::Refused(w)))
    }
}

/// The null pointer a refused call passes for its buffers.
fn null<T>() -> DevicePtr<T> {
    DevicePtr::new(0)
}

/// Why the bf16 buffer `name` of `len` elements is too short for `need`
/// (those of `what`), if it is.
fn too_short(name: &str, len: usize, need: usize, what: &str) -> Option<String> {
    (len < need).then(|| format!("{name} holds {len} bf16, {what} need {need}"))
}

/// Why `idx` and `w` are too short for `tokens` tokens of top-`k`, if they are.
fn routing_too_short(
    idx: &SymBuffer<i32>,
    w: &SymBuffer<f32>,
    tokens: usize,
    k: usize,
) -> Option<String> {
    (idx.len() < tokens * k || w.len() < tokens * k).then(|| {
        format!(
            "idx and w hold {} and {} entries, {tokens} tokens of top-{k} need {}",
            idx.len(),
            w.len(),
            tokens * k
        )
    })
}

impl<'a> Moe<'a> {
    /// Sends `tokens` tokens (`x`: `tokens × hidden` bf16, `idx`: `tokens ×
    /// topk` expert ids, negative for none, `w`: their weights) to their
    /// experts' PEs, on this PE's stream. Afterwards (stream order)
    /// [`received`](Self::received) holds every row for this PE's experts, as
    /// [`layout`](Self::layout) says. Arguments wrong here: [`Error::Refused`]
    /// (the peers are told, none waits).
    pub fn dispatch(
        &self,
        x: &SymBuffer<bf16>,
        idx: &SymBuffer<i32>,
        w: &SymBuffer<f32>,
        tokens: usize,
    ) -> Result<()> {
        let (h, k) = (self.cfg.hidden, self.cfg.topk);
        let max = self.cfg.max_tokens;
        let why = (tokens > max)
            .then(|| format!("{tokens} tokens: this Moe was made for at most {max}"))
            .or_else(|| too_short("x", x.len(), tokens * h, &format!("{tokens} tokens")))
            .or_else(|| routing_too_short(idx, w, tokens, k));
        let args = || {
            let x = bits(x.device_ptr());
            (x, idx.device_ptr(), w.device_ptr(), tokens as u32, 0)
        };
        self.checked_launch(
            why,
            args,
            (null(), null(), null(), 0, 1),
            |k, s, plan, args| {
                let (x, idx, w, tokens, refused) = args;
                self.tokens.set(Some(tokens));
                let grid = self.grid;
                // SAFETY (both): the plan is valid for this handle's life, the
                // buffers were checked (or are null with `refused`), and the
                // grid is agreed co-resident.
                unsafe {
                    launch::moe_dispatch_send(
                        k, s, grid, THREADS, plan, x, idx, w, tokens, refused,
                    )?;
                    launch::moe_dispatch_recv(k, s, grid, THREADS, plan)
                }
            },
        )
    }

    /// Sends the experts' outputs `y` (`rows_cap × hidden` bf16, in the rows
    /// of the last dispatch) back, and writes `out[t] = Σ_k w[t][k] ·
    /// y[row of (t, k)]` (f32 sums, bf16 out; zeros for a token routed
    /// nowhere) for the last dispatch's tokens, on this PE's stream. `idx`
    /// and `w` are the last dispatch's.
    pub fn combine(
        &self,
        y: &SymBuffer<bf16>,
        idx: &SymBuffer<i32>,
        w: &SymBuffer<f32>,
        out: &SymBuffer<bf16>,
    ) -> Result<()> {
        let (h, k) = (self.cfg.hidden, self.cfg.topk);
        let tokens = self.tokens.get();
        let t = tokens.unwrap_or(0) as usize;
        let rows = self.rows_cap() * h;
        let none_yet = tokens.is_none();
        let why = none_yet
            .then(|| "combine before any dispatch".to_string())
            .or_else(|| too_short("y", y.len(), rows, "the receive rows"))
            .or_else(|| too_short("out", out.len(), t * h, &format!("{t} tokens")))
            .or_else(|| routing_too_short(idx, w, t, k));
        let args = || {
            let (y, out) = (bits(y.device_ptr()), bits(out.device_ptr()));
            (y, idx.device_ptr(), w.device_ptr(), out, t as u32, 0)
        };
        let refused = (null(), null(), null(), null(), 0, 1);
        self.checked_launch(
            why,
            args,
            refused,
            |k, s, plan, (y, idx, w, out, t, refused)| {
                let grid = self.grid;
                // SAFETY (both): as in `dispatch`.
                unsafe {
                    launch::moe_combine_send(k, s, grid, THREADS, plan, y, refused)?;
                    launch::moe_combine_recv(k, s, grid, THREADS, plan, idx, w, out, t)
                }
            },
        )
    }

    /// The unfused baseline of [`dispatch`](Self::dispatch), for the
    /// benchmark: a local permutation kernel into per-destination blocks,
    /// NVSHMEM's `alltoall` collective (of the counts, then of blocks sized
    /// for `max_tokens`), and a local permutation into the same per-expert
    /// rows. **Collective** (the alltoalls), and refused in limited MPG
    /// (several PEs per GPU without MPS). Needs [`Moe::with_baseline`]; do
    /// not mix it with `dispatch` on one handle.
    pub fn baseline_dispatch(
        &self,
        x: &SymBuffer<bf16>,
        idx: &SymBuffer<i32>,
        w: &SymBuffer<f32>,
        tokens: usize,
    ) -> Result<()> {
        // Its all-to-all is a stream operation on buffers: never captured.
        self.nv
            .refuse_capture(self.nv.stream(), "Moe::baseline_dispatch")?;
        let Some((send, counts)) = &self.base else {
            return Err(Error::Refused(
                "made without the baseline: use Moe::with_baseline".into(),
            ));
        };
        let k = self.cfg.topk;
        // Wrong here: send nothing, but still take part in the collectives.
        let ok = tokens <= self.cfg.max_tokens
            && x.len() >= tokens * self.cfg.hidden
            && idx.len() >= tokens * k
            && w.len() >= tokens * k;
        let (kernels, plan, grid) = (&self.kernels, self.plan_ptr(), self.grid);
        let t = if ok { tokens as u32 } else { 0 };
        let (x, idx, w) = (bits(x.device_ptr()), idx.device_ptr(), w.device_ptr());
        let s = self.nv.stream();
        // SAFETY: as in `dispatch`, sizes checked above (`t` is 0 where wrong).
        unsafe { launch::moe_base_pack(kernels, s, grid, THREADS, plan, x, idx, w, t)? };
        self.nv
            .alltoall_on_stream(s, Team::WORLD, &self.count_in, counts)?;
        self.nv
            .alltoall_on_stream(s, Team::WORLD, &self.stage, send)?;
        // SAFETY: as in `dispatch`.
        unsafe { launch::moe_base_unpack(kernels, s, grid, THREADS, plan)? };
        if ok {
            Ok(())
        } else {
            Err(Error::Refused(format!(
                "baseline dispatch of {tokens} tokens: wrong sizes"
            )))
        }
    }

    /// Waits for this PE's stream, then reads where the last dispatch put
    /// each local expert's rows.
    pub fn layout(&self) -> Result<Layout> {
        let s = self.nv.stream();
        let counts = self.counts.to_vec(s)?;
        let offsets = self.offsets.to_vec(s)?;
        let src = self.row_src.to_vec(s)?;
        let sources = counts
            .iter()
            .zip(&offsets)
            .map(|(&c, &o)| src[o as usize..(o + c) as usize].to_vec())
            .collect();
        Ok(Layout {
            counts,
            offsets,
            sources,
        })
    }

    /// Waits for this PE's stream, then reports (and clears) the refusals
    /// this PE saw since the last call: PEs that refused a dispatch or a
    /// combine, and expert ids out of range (those slots routed nowhere).
    pub fn status(&self) -> Result<()> {
        let s = self.nv.stream();
        let word = self.status.to_vec(s)?[0];
        if word == 0 {
            return Ok(());
        }
        self.status.copy_from_host(s, &[0])?;
        self.nv.synchronize(s)?;
        let pes: Vec<u32> = (0..64)
            .filter(|b| word & (1 << b) != 0 && *b != 63)
            .collect();
        let mut parts = Vec::new();
        if !pes.is_empty() {
            parts.push(format!(
                "PE(s) {pes:?} refused a call (their data is missing)"
            ));
        }
        if word & BAD_EXPERT_BIT != 0 {
            parts.push(format!(
                "some expert ids were >= the {} experts (those slots routed nowhere)",
                self.cfg.experts
            ));
        }
        Err(Error::Status(parts.join("; ")))
    }

    /// Fills the outputs with NaN (bf16 and fp8 0xff... bytes) and the row
    /// sources with `u32::MAX`, so a check after a kernel that wrote nothing
    /// fails. Waits for the stream.
    pub fn poison(&self) -> Result<()> {
        let s = self.nv.stream();
        match &self.received {
            Received::Bf16(x) => x.fill(s, bf16::from_bits(0xffff))?,
            Received::Fp8 { x, scales } => {
                x.fill(s, 0xff)?;
                scales.fill(s, f32::NAN)?;
            }
        }
        self.row_src.fill(
            s,
            RowSrc {
                pe: u32::MAX,
                tok: u32::MAX,
                k: u32::MAX,
                w: f32::NAN,
            },
        )?;
        self.counts.fill(s, u32::MAX)?;
        self.nv.synchronize(s)?;
        Ok(())
    }
}
