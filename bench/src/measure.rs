//! The measurements, on every PE of the job.
//!
//! Point-to-point cases (latency, bandwidth, atomics) run on PE 0 only, aimed
//! at PE 1 (at itself with one PE); the other PEs take part in the checks and
//! the host barriers around each case. Ping-pong runs between PE 0 and PE 1;
//! the barrier and the all-reduces run on every PE, timed as the slowest PE's
//! median.
//!
//! Method, for every case and implementation: the result is checked first
//! (fresh non-zero data, the destination poisoned, every byte compared on the
//! device or every word on the host); then warm-up launches, then `reps`
//! launches each between two CUDA events, and the median. Bandwidth cases
//! larger than 1 MiB rotate over buffers filling a pool much larger than L2.
//! Latency and bandwidth kernels repeat their operation `iters` times inside
//! one launch, so the launch itself is amortized.

use crate::{Record, ar_pattern, human, median, sizes};
use cudarc::driver::sys::{CUdevice_attribute, CUevent_flags};
use nvshmem_host::cudarc;
use nvshmem_host::exchange::{GridAgreement, WordExchange};
use nvshmem_host::{DevicePtr, Kernel, KernelArgs, Manifest, Module, Nvshmem, Pe, SymBuffer};
use std::cell::Cell;
use std::path::PathBuf;

/// Errors of a run.
pub type Res<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Correctness only: small sizes, every check, no timing.
    pub check: bool,
    /// Fewer sizes and repetitions.
    pub quick: bool,
    /// The C++ cubins, by implementation name (`cpp`, `cpp-lto`).
    pub cpp: Vec<(String, PathBuf)>,
    /// Where `libnccl.so` is looked up (by name, on the library path) unless this is set.
    pub nccl: bool,
    /// Timed launches per case.
    pub reps: usize,
    /// Untimed launches before them.
    pub warmup: usize,
    /// Only cases whose name contains one of these (empty: all).
    pub only: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            check: false,
            quick: false,
            cpp: Vec::new(),
            nccl: true,
            reps: 15,
            warmup: 3,
            only: Vec::new(),
        }
    }
}

/// One implementation of the kernels: the Rust PTX, or a C++ cubin.
struct Impl {
    name: String,
    modules: Vec<Module>,
}

impl Impl {
    fn kernel(&self, name: &str) -> Res<Kernel> {
        for m in &self.modules {
            if m.kernel_names().contains(&name) {
                return Ok(m.kernel(name)?);
            }
        }
        Err(format!("{}: no kernel `{name}`", self.name).into())
    }
}

/// Threads per block of the all-reduce (the example's).
const AR_THREADS: u32 = 512;
/// The all-reduce kernels' tile: `AR_THREADS * UNROLL * 4` floats.
const AR_TILE: usize = AR_THREADS as usize * 4 * 4;
/// Bandwidth messages at least this large rotate over buffers.
const ROTATE_MIN: u64 = 1 << 20;
/// Threads of the atomic-throughput grid per SM.
const TPUT_BLOCKS_PER_SM: u32 = 4;
const TPUT_THREADS: u32 = 256;

/// Which side of a bandwidth case.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Dir {
    Put,
    Get,
}

/// The launch shape of a bandwidth case: `(grid, block)`. The same for every implementation.
pub fn bw_shape(scope: u32, bytes: u64, sms: u32) -> (u32, u32) {
    match scope {
        0 => {
            let actors = (bytes / 256).clamp(1, sms as u64 * 2 * 512) as u32;
            let block = actors.min(512);
            (actors.div_ceil(block), block)
        }
        1 => {
            let warps = (bytes / 4096).clamp(1, sms as u64 * 2 * 16) as u32;
            let per_block = warps.min(16);
            (warps.div_ceil(per_block), per_block * 32)
        }
        _ => ((bytes / 65536).clamp(1, sms as u64 * 2) as u32, 512),
    }
}

/// One run on this PE.
pub struct Bench<'a> {
    nv: &'a Nvshmem,
    opts: Options,
    impls: Vec<Impl>,
    util: Module,
    ar_util: Module,
    ex: WordExchange,
    sms: u32,
    pool: u64,
    src: SymBuffer<u8>,
    dst: SymBuffer<u8>,
    words: SymBuffer<u64>,
    out: SymBuffer<u64>,
    errors: SymBuffer<u32>,
    sig: SymBuffer<u64>,
    ppdata: SymBuffer<u64>,
    ppsrc: SymBuffer<u64>,
    ar_data: SymBuffer<f32>,
    ar_stage: SymBuffer<f32>,
    ar_stage_half: usize,
    ar_scratch: SymBuffer<f32>,
    ar_ready: SymBuffer<u64>,
    ar_done: SymBuffer<u64>,
    ar_max_grid: u32,
    ar_sizes: Vec<u64>,
    all_direct: bool,
    pes_per_gpu: u32,
    distinct_gpus: bool,
    seed: Cell<u32>,
    epoch: Cell<u64>,
    sig_base: Cell<u64>,
    /// This PE's records (PE 0's are the run's).
    pub records: Vec<Record>,
    /// `key: value` lines describing the run.
    pub info: Vec<(String, String)>,
    /// Failures seen (a message each).
    pub failures: Vec<String>,
}

/// Loads a C++ cubin with the manifest of the Rust kernels it twins (same
/// names and parameters): the union of `bench-kernels` and `allreduce-kernels`.
fn load_cpp(nv: &Nvshmem, name: &str, path: &PathBuf, rust: &[&Manifest]) -> Res<Impl> {
    let image = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut manifest = rust[0].clone();
    manifest.crate_name = format!("bench-{name}");
    manifest.kernels = rust
        .iter()
        .flat_map(|m| m.kernels.iter().cloned())
        .filter(|k| !matches!(k.name.as_str(), "fill_pattern" | "check_pattern"))
        .filter(|k| !matches!(k.name.as_str(), "fill_bytes" | "check_bytes"))
        .collect();
    for k in &mut manifest.kernels {
        k.registers = None;
        k.spill_loads = None;
        k.spill_stores = None;
        k.stack_frame = None;
    }
    let module = nv.load_module_image(&image, manifest)?;
    Ok(Impl {
        name: name.to_string(),
        modules: vec![module],
    })
}

impl<'a> Bench<'a> {
    /// Loads every implementation and allocates every buffer. Collective.
    pub fn new(nv: &'a Nvshmem, opts: Options) -> Res<Bench<'a>> {
        let dir = nvshmem_rs::ptx_dir();
        let rust_bench = nv.load_module_in(&dir, "bench-kernels")?;
        let rust_ar = nv.load_module_in(&dir, "allreduce-kernels")?;
        let mut impls = vec![Impl {
            name: "rust".into(),
            modules: vec![rust_bench.clone(), rust_ar.clone()],
        }];
        let mut info = Vec::new();
        for (name, path) in &opts.cpp {
            match load_cpp(nv, name, path, &[rust_bench.manifest(), rust_ar.manifest()]) {
                Ok(i) => impls.push(i),
                Err(e) => info.push((name.clone(), format!("not measured: {e}"))),
            }
        }
        let ctx = nv.context().clone();
        let sms =
            ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32;
        let np = nv.n_pes();
        let ex = WordExchange::new(nv, 16)?;

        // The all-reduce grid: the same on every PE, all blocks of all PEs on a GPU resident.
        let mut cap = 2 * sms;
        for i in &impls {
            for k in ["allreduce_oneshot", "allreduce_rs_ag"] {
                cap = cap.min(i.kernel(k)?.max_collective_blocks(AR_THREADS, 0)?);
            }
        }
        let GridAgreement {
            max_grid: ar_max_grid,
            all_direct,
            pes_per_gpu,
            distinct_gpus,
            ..
        } = nv.agree_on_grid(&ex, cap)?;

        let (pool, ar_max) = if opts.check {
            (8u64 << 20, 1u64 << 20)
        } else if opts.quick {
            (64 << 20, 16 << 20)
        } else {
            (256 << 20, 256 << 20)
        };
        let ar_sizes = if opts.check {
            vec![4 << 10, 64 << 10, 1 << 20]
        } else if opts.quick {
            sizes(4 << 10, ar_max, 4)
        } else {
            sizes(4 << 10, ar_max, 2)
        };
        let threshold = (2u64 << 20) / np.max(2) as u64;
        let stage_half = ar_sizes
            .iter()
            .filter(|&&b| b <= threshold)
            .max()
            .map(|b| b / 4)
            .unwrap_or(4)
            .next_multiple_of(4) as usize;
        let ar_words = ar_max_grid as usize * np as usize;
        let tput_slots = (sms * TPUT_BLOCKS_PER_SM * TPUT_THREADS) as usize;

        info.push(("PEs".into(), format!("{np}, {pes_per_gpu} per GPU")));
        info.push(("NVSHMEM".into(), nv.version().to_string()));
        info.push(("GPU".into(), ctx.name()?));
        let mut drv = 0i32;
        // SAFETY: writes one int.
        unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut drv) }.result()?;
        info.push((
            "CUDA driver API".into(),
            format!("{}.{}", drv / 1000, drv % 1000 / 10),
        ));
        if let Ok(v) = std::fs::read_to_string("/proc/driver/nvidia/version")
            && let Some(line) = v.lines().next()
        {
            info.push(("driver".into(), line.trim().to_string()));
        }
        info.push(("SMs".into(), sms.to_string()));
        info.push((
            "MPS".into(),
            if nv.limited_mpg() {
                "no (several PEs time-slice the GPU: multi-PE latencies are not meaningful)".into()
            } else if pes_per_gpu > 1 {
                "yes".into()
            } else {
                "not needed".into()
            },
        ));

        Ok(Bench {
            nv,
            impls,
            util: rust_bench,
            ar_util: rust_ar,
            ex,
            sms,
            pool,
            src: nv.alloc(pool as usize)?,
            dst: nv.alloc(pool as usize)?,
            words: nv.alloc_zeroed(tput_slots.max(64))?,
            out: nv.alloc_zeroed(tput_slots.max(64))?,
            errors: nv.alloc_zeroed(4)?,
            sig: nv.alloc_zeroed(1)?,
            ppdata: nv.alloc_zeroed(1)?,
            ppsrc: nv.alloc_from(&[0xabc0 + nv.my_pe().index() as u64])?,
            ar_data: nv.alloc((ar_max / 4) as usize)?,
            ar_stage: nv.alloc(2 * stage_half)?,
            ar_stage_half: stage_half,
            ar_scratch: nv.alloc(if all_direct {
                4
            } else {
                ar_max_grid as usize * AR_TILE
            })?,
            ar_ready: nv.alloc_zeroed(ar_words)?,
            ar_done: nv.alloc_zeroed(ar_words)?,
            ar_max_grid,
            ar_sizes,
            all_direct,
            pes_per_gpu,
            distinct_gpus,
            seed: Cell::new(0),
            epoch: Cell::new(0),
            sig_base: Cell::new(0),
            records: Vec::new(),
            info,
            failures: Vec::new(),
            opts,
        })
    }

    fn me(&self) -> u32 {
        self.nv.my_pe().index()
    }

    fn lead(&self) -> bool {
        self.me() == 0
    }

    /// The PE point-to-point cases aim at.
    fn target(&self) -> u32 {
        if self.nv.n_pes() > 1 { 1 } else { 0 }
    }

    fn next_seed(&self) -> u32 {
        let s = self.seed.get() + 1;
        self.seed.set(s);
        s
    }

    fn wanted(&self, case: &str) -> bool {
        self.opts.only.is_empty() || self.opts.only.iter().any(|o| case.contains(o.as_str()))
    }

    fn barrier(&self) -> Res<()> {
        self.nv.barrier_all_on_stream(self.nv.stream())?;
        self.nv.synchronize(self.nv.stream())?;
        Ok(())
    }

    fn grid_for(&self, n: u64) -> u32 {
        n.div_ceil(512).clamp(1, self.sms as u64 * 8) as u32
    }

    /// Fills `buf[..bytes]` (this PE's copy) with the pattern of `seed` (0: zeros).
    fn fill(&self, buf: DevicePtr<u8>, bytes: u64, seed: u32) -> Res<()> {
        let k = self.util.kernel("fill_bytes")?;
        // SAFETY: writes `bytes` bytes of a buffer that holds them.
        unsafe {
            k.launch(
                self.nv.stream(),
                self.grid_for(bytes),
                512,
                (buf, bytes, seed),
            )?
        };
        Ok(())
    }

    /// The count of bytes of `buf[..bytes]` that differ from the pattern of `seed`.
    fn check_bytes(&self, buf: DevicePtr<u8>, bytes: u64, seed: u32) -> Res<u64> {
        let stream = self.nv.stream();
        self.errors.fill(stream, 0)?;
        let k = self.util.kernel("check_bytes")?;
        // SAFETY: reads `bytes` bytes; adds to one u32.
        unsafe {
            k.launch(
                stream,
                self.grid_for(bytes),
                512,
                (buf, bytes, bytes, seed, self.errors.device_ptr()),
            )?
        };
        Ok(self.errors.to_vec(stream)?[0] as u64)
    }

    /// Times `reps` calls of `f` between CUDA events after `warmup` more;
    /// the median in seconds.
    fn time(&self, mut f: impl FnMut() -> Res<()>) -> Res<f64> {
        let (ctx, stream) = (self.nv.context(), self.nv.stream());
        for _ in 0..self.opts.warmup {
            f()?;
        }
        let mut events = Vec::with_capacity(self.opts.reps);
        for _ in 0..self.opts.reps {
            let start = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
            let end = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
            start.record(stream)?;
            f()?;
            end.record(stream)?;
            events.push((start, end));
        }
        self.nv.synchronize(stream)?;
        let mut t = events
            .iter()
            .map(|(s, e)| Ok(s.elapsed_ms(e)? as f64 * 1e-3))
            .collect::<Res<Vec<f64>>>()?;
        Ok(median(&mut t))
    }

    /// Every PE's `wrong` count summed, and the slowest PE's `t`. Collective.
    fn agree(&self, wrong: u64, t: f64) -> Res<(u64, f64)> {
        let all = self.ex.all_gather(self.nv, &[wrong, t.to_bits()])?;
        let wrong = all.iter().map(|r| r[0]).sum();
        let t = all
            .iter()
            .map(|r| f64::from_bits(r[1]))
            .fold(0.0f64, f64::max);
        Ok((wrong, t))
    }

    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        case: &str,
        variant: &str,
        bytes: u64,
        imp: &str,
        time_s: f64,
        value: f64,
        unit: &str,
        wrong: u64,
    ) {
        let pass = wrong == 0;
        if !pass {
            self.failures.push(format!(
                "{case} {variant} {} {imp}: {wrong} wrong value(s)",
                human(bytes)
            ));
        }
        if self.lead() {
            let t = if self.opts.check {
                String::from("(not timed)")
            } else {
                format!("{:.3} us  {value:.3} {unit}", time_s * 1e6)
            };
            println!(
                "  {case:<18} {variant:<12} {:>8}  {imp:<8} {t}  {}",
                human(bytes),
                if pass { "PASS" } else { "FAIL" }
            );
        }
        self.records.push(Record {
            case: case.into(),
            variant: variant.into(),
            bytes,
            imp: imp.into(),
            time_us: time_s * 1e6,
            value,
            unit: unit.into(),
            pass,
        });
    }

    /// Launches on PE 0 only (the other PEs do nothing): `f` gets the kernel.
    fn lead_launch<A: KernelArgs + Copy>(
        &self,
        k: &Kernel,
        grid: u32,
        block: u32,
        args: A,
    ) -> Res<()> {
        if self.lead() {
            // SAFETY: each case passes buffers that hold what its kernel touches.
            unsafe { k.launch(self.nv.stream(), grid, block, args)? };
        }
        Ok(())
    }

    /// Times `k` on PE 0 with `args`; 0 elsewhere and in check mode.
    /// Collective: it starts with a barrier, so that no PE is still reading
    /// the checked result when the timed launches overwrite it.
    fn lead_time<A: KernelArgs + Copy>(
        &self,
        k: &Kernel,
        grid: u32,
        block: u32,
        args: A,
    ) -> Res<f64> {
        self.barrier()?;
        if self.opts.check || !self.lead() {
            return Ok(0.0);
        }
        self.time(|| self.lead_launch(k, grid, block, args))
    }

    /// Runs every case.
    pub fn run_all(&mut self) -> Res<()> {
        self.ceilings()?;
        self.latency()?;
        self.amo()?;
        self.pingpong()?;
        self.barrier_case()?;
        self.bandwidth()?;
        self.allreduce()?;
        Ok(())
    }

    fn ceilings(&mut self) -> Res<()> {
        if !self.wanted("copy") || self.opts.check {
            return Ok(());
        }
        let stream = self.nv.stream().clone();
        let bytes = self.pool / 2;
        self.fill(self.src.device_ptr(), self.pool, self.next_seed())?;
        self.barrier()?;
        let copy = |dst: u64, src: u64| -> Res<()> {
            // SAFETY: both ranges hold `bytes` bytes of device memory.
            unsafe {
                cudarc::driver::result::memcpy_dtod_async(
                    dst,
                    src,
                    bytes as usize,
                    stream.cu_stream(),
                )
            }?;
            Ok(())
        };
        let (s0, s1) = (
            self.src.device_ptr().addr(),
            self.src.device_ptr().addr() + bytes,
        );
        let (d0, d1) = (
            self.dst.device_ptr().addr(),
            self.dst.device_ptr().addr() + bytes,
        );
        let mut flip = false;
        let t = if self.lead() {
            self.time(|| {
                flip = !flip;
                if flip { copy(d0, s0) } else { copy(d1, s1) }
            })?
        } else {
            0.0
        };
        let (_, t) = self.agree(0, t)?;
        let gbs = bytes as f64 / t / 1e9;
        self.record(
            "copy_ceiling",
            "read+write",
            bytes,
            "ceiling",
            t,
            2.0 * gbs,
            "GB/s",
            0,
        );
        self.record(
            "copy_ceiling",
            "one-way",
            bytes,
            "ceiling",
            t,
            gbs,
            "GB/s",
            0,
        );
        if self.nv.n_pes() > 1 {
            let peer = self.dst.peer_ptr(Pe::new(self.target()))?;
            if let Some(p) = peer {
                let t = if self.lead() {
                    self.time(|| copy(p.addr(), s0))?
                } else {
                    0.0
                };
                let (_, t) = self.agree(0, t)?;
                let v = bytes as f64 / t / 1e9;
                self.record("copy_ceiling", "to-peer", bytes, "ceiling", t, v, "GB/s", 0);
            }
        }
        self.barrier()
    }

    fn latency(&mut self) -> Res<()> {
        let iters: u64 = if self.opts.check { 10 } else { 2000 };
        let tgt = self.target();
        let stream = self.nv.stream().clone();
        for ii in 0..self.impls.len() {
            let name = self.impls[ii].name.clone();
            if self.wanted("p_lat") {
                let k = self.impls[ii].kernel("lat_p")?;
                self.words.fill(&stream, 0)?;
                self.barrier()?;
                self.lead_launch(&k, 1, 1, (self.words.sym_ptr(), tgt, iters))?;
                self.barrier()?;
                let wrong = if self.me() == tgt {
                    (self.words.at(0)?.to_vec(&stream)?[0] != iters) as u64
                } else {
                    0
                };
                let t = self.lead_time(&k, 1, 1, (self.words.sym_ptr(), tgt, iters))?;
                let (wrong, t) = self.agree(wrong, t / iters as f64)?;
                self.record("p_lat", "p+quiet", 8, &name, t, t * 1e6, "us", wrong);
            }
            if self.wanted("g_lat") {
                let k = self.impls[ii].kernel("lat_g")?;
                // A pointer chase over 8 words: word j holds next index + 8 * (j + 1).
                let chase: Vec<u64> = (0..8u64).map(|j| ((j * 5 + 3) & 7) + 8 * (j + 1)).collect();
                self.words.view(..8)?.copy_from_host(&stream, &chase)?;
                self.out.fill(&stream, 0)?;
                self.barrier()?;
                let args = (self.words.sym_ptr(), tgt, iters, self.out.device_ptr());
                self.lead_launch(&k, 1, 1, args)?;
                self.barrier()?;
                let mut wrong = 0;
                if self.lead() {
                    let (mut acc, mut idx) = (0u64, 0usize);
                    for _ in 0..iters {
                        acc += chase[idx];
                        idx = (chase[idx] & 7) as usize;
                    }
                    wrong = (self.out.at(0)?.to_vec(&stream)?[0] != acc) as u64;
                }
                let t = self.lead_time(&k, 1, 1, args)?;
                let (wrong, t) = self.agree(wrong, t / iters as f64)?;
                self.record("g_lat", "g", 8, &name, t, t * 1e6, "us", wrong);
            }
            for (case, dir) in [("put_lat", Dir::Put), ("get_lat", Dir::Get)] {
                if !self.wanted(case) {
                    continue;
                }
                let bytes = 8u64;
                let seed = self.next_seed();
                let (owner, checker) = match dir {
                    Dir::Put => (0, tgt),
                    Dir::Get => (tgt, 0),
                };
                if self.me() == owner {
                    self.fill(self.src.device_ptr(), bytes, seed)?;
                }
                if self.me() == checker {
                    self.fill(self.dst.device_ptr(), bytes, 0)?;
                }
                self.barrier()?;
                let t = match dir {
                    Dir::Put => {
                        let k = self.impls[ii].kernel("lat_put")?;
                        let args = (self.dst.sym_ptr(), self.src.device_ptr(), bytes, tgt, iters);
                        self.lead_launch(&k, 1, 1, args)?;
                        self.barrier()?;
                        let w = self.checked_on(checker, self.dst.device_ptr(), bytes, seed)?;
                        (self.lead_time(&k, 1, 1, args)?, w)
                    }
                    Dir::Get => {
                        let k = self.impls[ii].kernel("lat_get")?;
                        let args = (self.dst.device_ptr(), self.src.sym_ptr(), bytes, tgt, iters);
                        self.lead_launch(&k, 1, 1, args)?;
                        self.barrier()?;
                        let w = self.checked_on(checker, self.dst.device_ptr(), bytes, seed)?;
                        (self.lead_time(&k, 1, 1, args)?, w)
                    }
                };
                let (wrong, t) = self.agree(t.1, t.0 / iters as f64)?;
                let variant = if dir == Dir::Put { "put+quiet" } else { "get" };
                self.record(case, variant, bytes, &name, t, t * 1e6, "us", wrong);
            }
        }
        self.barrier()
    }

    /// `check_bytes` on PE `pe` only; 0 elsewhere.
    fn checked_on(&self, pe: u32, buf: DevicePtr<u8>, bytes: u64, seed: u32) -> Res<u64> {
        if self.me() == pe {
            self.check_bytes(buf, bytes, seed)
        } else {
            Ok(0)
        }
    }

    fn amo(&mut self) -> Res<()> {
        let tgt = self.target();
        let stream = self.nv.stream().clone();
        let ops = ["fetch_add", "add", "compare_swap", "swap"];
        for ii in 0..self.impls.len() {
            let name = self.impls[ii].name.clone();
            for op in ops {
                // Latency: one thread.
                if self.wanted("amo_lat") {
                    let iters: u64 = if self.opts.check { 10 } else { 2000 };
                    let k = self.impls[ii].kernel(&format!("lat_amo_{op}"))?;
                    self.words.fill(&stream, 0)?;
                    self.out.fill(&stream, 0)?;
                    self.barrier()?;
                    let args = (self.words.sym_ptr(), tgt, iters, self.out.device_ptr());
                    self.lead_launch(&k, 1, 1, args)?;
                    self.barrier()?;
                    let mut wrong = 0;
                    if self.me() == tgt {
                        wrong += (self.words.at(0)?.to_vec(&stream)?[0] != iters) as u64;
                    }
                    if self.lead() {
                        let want = if op == "fetch_add" {
                            iters * (iters - 1) / 2
                        } else {
                            iters
                        };
                        wrong += (self.out.at(0)?.to_vec(&stream)?[0] != want) as u64;
                    }
                    let t = self.lead_time(&k, 1, 1, args)?;
                    let (wrong, t) = self.agree(wrong, t / iters as f64)?;
                    self.record("amo_lat", op, 8, &name, t, t * 1e6, "us", wrong);
                }
                // Throughput: every thread its own word.
                if self.wanted("amo_tput") {
                    let iters: u64 = if self.opts.check { 4 } else { 64 };
                    let k = self.impls[ii].kernel(&format!("tput_amo_{op}"))?;
                    let (grid, block) = (self.sms * TPUT_BLOCKS_PER_SM, TPUT_THREADS);
                    let n = (grid * block) as usize;
                    self.words.fill(&stream, 0)?;
                    self.out.fill(&stream, 0)?;
                    self.barrier()?;
                    let args = (self.words.sym_ptr(), tgt, iters, self.out.device_ptr());
                    self.lead_launch(&k, grid, block, args)?;
                    self.barrier()?;
                    let mut wrong = 0;
                    if self.me() == tgt {
                        let w = self.words.view(..n)?.to_vec(&stream)?;
                        wrong += w.iter().filter(|&&v| v != iters).count() as u64;
                    }
                    if self.lead() {
                        let want = if op == "fetch_add" {
                            iters * (iters - 1) / 2
                        } else {
                            iters
                        };
                        let o = self.out.view(..n)?.to_vec(&stream)?;
                        wrong += o.iter().filter(|&&v| v != want).count() as u64;
                    }
                    let t = self.lead_time(&k, grid, block, args)?;
                    let (wrong, t) = self.agree(wrong, t)?;
                    let ops_total = n as f64 * iters as f64;
                    let rate = ops_total / t / 1e9;
                    self.record(
                        "amo_tput",
                        op,
                        8,
                        &name,
                        t / iters as f64,
                        rate,
                        "Gop/s",
                        wrong,
                    );
                }
            }
        }
        self.barrier()
    }

    fn pingpong(&mut self) -> Res<()> {
        if !self.wanted("pingpong") {
            return Ok(());
        }
        let iters: u64 = if self.opts.check { 10 } else { 1000 };
        let tgt = self.target();
        let stream = self.nv.stream().clone();
        let me = self.me();
        let active = me == 0 || me == tgt;
        let (peer, first) = if me == 0 { (tgt, 1u32) } else { (0, 0) };
        for ii in 0..self.impls.len() {
            let name = self.impls[ii].name.clone();
            let k = self.impls[ii].kernel("pingpong")?;
            let launch = |base: u64| -> Res<()> {
                if active {
                    let args = (
                        self.ppdata.sym_ptr(),
                        self.sig.sym_ptr(),
                        self.ppsrc.device_ptr(),
                        1u64,
                        peer,
                        first,
                        iters,
                        base,
                    );
                    // SAFETY: one u64 of data, one signal word, both PEs with the same base.
                    unsafe { k.launch(&stream, 1, 1, args)? };
                }
                Ok(())
            };
            self.ppdata.fill(&stream, 0)?;
            self.barrier()?;
            let base = self.sig_base.get();
            launch(base)?;
            self.sig_base.set(base + iters);
            self.barrier()?;
            let mut wrong = 0;
            if active {
                let from = if me == 0 { tgt } else { 0 };
                wrong += (self.ppdata.to_vec(&stream)?[0] != 0xabc0 + from as u64) as u64;
                wrong += (self.sig.to_vec(&stream)?[0] != base + iters) as u64;
            }
            let mut t = 0.0;
            if !self.opts.check {
                let mut times = Vec::new();
                let ctx = self.nv.context().clone();
                for r in 0..self.opts.warmup + self.opts.reps {
                    self.nv.barrier_all_on_stream(&stream)?;
                    let start = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
                    let end = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
                    start.record(&stream)?;
                    let base = self.sig_base.get();
                    launch(base)?;
                    self.sig_base.set(base + iters);
                    end.record(&stream)?;
                    if r >= self.opts.warmup {
                        times.push((start, end));
                    }
                }
                self.nv.synchronize(&stream)?;
                let mut v = times
                    .iter()
                    .map(|(s, e)| Ok(s.elapsed_ms(e)? as f64 * 1e-3))
                    .collect::<Res<Vec<f64>>>()?;
                t = if active { median(&mut v) } else { 0.0 };
            }
            let (wrong, t) = self.agree(wrong, t / iters as f64 / 2.0)?;
            self.record("pingpong", "put_signal", 8, &name, t, t * 1e6, "us", wrong);
        }
        self.barrier()
    }

    fn barrier_case(&mut self) -> Res<()> {
        if !self.wanted("barrier") {
            return Ok(());
        }
        let iters: u64 = if self.opts.check { 10 } else { 1000 };
        let stream = self.nv.stream().clone();
        for ii in 0..self.impls.len() {
            let name = self.impls[ii].name.clone();
            let k = self.impls[ii].kernel("barrier_lat")?;
            let launch = || -> Res<()> {
                // SAFETY: no memory; every PE launches it with the same iters.
                unsafe { k.launch_collective(&stream, 1, 32, (iters,))? };
                Ok(())
            };
            self.barrier()?;
            launch()?;
            self.barrier()?;
            let t = if self.opts.check {
                0.0
            } else {
                self.time(launch)?
            };
            let (wrong, t) = self.agree(0, t / iters as f64)?;
            self.record(
                "barrier_lat",
                "barrier_all",
                0,
                &name,
                t,
                t * 1e6,
                "us",
                wrong,
            );
        }
        self.barrier()
    }

    fn bandwidth(&mut self) -> Res<()> {
        let max = self.pool.min(64 << 20);
        let list = if self.opts.check {
            vec![8, 4096, 1 << 20, 2 << 20]
        } else if self.opts.quick {
            sizes(8, max, 16)
        } else {
            sizes(8, max, 4)
        };
        let tgt = self.target();
        let scopes = [(0u32, "thread"), (1, "warp"), (2, "block")];
        for (dir, case) in [(Dir::Put, "put_bw"), (Dir::Get, "get_bw")] {
            if !self.wanted(case) {
                continue;
            }
            let kinds: &[&str] = if dir == Dir::Put {
                &["", "_nbi", "_p2p"]
            } else {
                &["", "_nbi"]
            };
            for &kind in kinds {
                for (scope, sname) in scopes {
                    let variant = format!("{sname}{kind}");
                    let kname = format!(
                        "bw_{}{kind}_{sname}",
                        if dir == Dir::Put { "put" } else { "get" },
                    );
                    for &bytes in &list {
                        let nbuf = if bytes >= ROTATE_MIN {
                            (self.pool / bytes).max(1)
                        } else {
                            1
                        };
                        let iters = if self.opts.check {
                            nbuf
                        } else {
                            ((512u64 << 20) / bytes).clamp(nbuf.max(4), 1000)
                        };
                        let (grid, block) = bw_shape(scope, bytes, self.sms);
                        for ii in 0..self.impls.len() {
                            let name = self.impls[ii].name.clone();
                            let k = self.impls[ii].kernel(&kname)?;
                            let region = nbuf * bytes;
                            let seed = self.next_seed();
                            let (owner, checker) = match dir {
                                Dir::Put => (0, tgt),
                                Dir::Get => (tgt, 0),
                            };
                            if self.me() == owner {
                                self.fill(self.src.device_ptr(), region, seed)?;
                            }
                            if self.me() == checker {
                                self.fill(self.dst.device_ptr(), region, 0)?;
                            }
                            self.barrier()?;
                            let t = match dir {
                                Dir::Put => {
                                    let args =
                                        (self.dst.sym_ptr(), self.src.device_ptr(), bytes, tgt);
                                    let a = (args.0, args.1, args.2, args.3, nbuf, nbuf);
                                    self.lead_launch(&k, grid, block, a)?;
                                    self.barrier()?;
                                    let w = self.checked_on(
                                        checker,
                                        self.dst.device_ptr(),
                                        region,
                                        seed,
                                    )?;
                                    let a = (args.0, args.1, args.2, args.3, iters, nbuf);
                                    (self.lead_time(&k, grid, block, a)?, w)
                                }
                                Dir::Get => {
                                    let args =
                                        (self.dst.device_ptr(), self.src.sym_ptr(), bytes, tgt);
                                    let a = (args.0, args.1, args.2, args.3, nbuf, nbuf);
                                    self.lead_launch(&k, grid, block, a)?;
                                    self.barrier()?;
                                    let w = self.checked_on(
                                        checker,
                                        self.dst.device_ptr(),
                                        region,
                                        seed,
                                    )?;
                                    let a = (args.0, args.1, args.2, args.3, iters, nbuf);
                                    (self.lead_time(&k, grid, block, a)?, w)
                                }
                            };
                            let (wrong, t) = self.agree(t.1, t.0 / iters as f64)?;
                            let gbs = bytes as f64 / t / 1e9;
                            self.record(case, &variant, bytes, &name, t, gbs, "GB/s", wrong);
                        }
                    }
                }
            }
        }
        self.barrier()
    }

    fn ar_grid(&self, oneshot: bool, n: usize) -> u32 {
        let per_block = if oneshot {
            AR_THREADS as usize * 8
        } else {
            AR_TILE * self.nv.n_pes() as usize
        };
        n.div_ceil(per_block).clamp(1, self.ar_max_grid as usize) as u32
    }

    /// One in-kernel all-reduce of `ar_data[..n]` with implementation `imp`.
    fn ar_call(&self, k: &Kernel, oneshot: bool, n: usize) -> Res<()> {
        let grid = self.ar_grid(oneshot, n);
        let epoch = self.epoch.get() + 1;
        self.epoch.set(epoch);
        let (data, scratch) = (self.ar_data.sym_ptr(), self.ar_scratch.sym_ptr());
        let (ready, done) = (self.ar_ready.sym_ptr(), self.ar_done.sym_ptr());
        let stream = self.nv.stream();
        // SAFETY: the buffers hold n floats, the stage half, scratch tiles and
        // grid * n_pes signal words (see Bench::new); all blocks co-resident.
        unsafe {
            if oneshot {
                let off = (epoch % 2) as usize * self.ar_stage_half;
                let stage = self.ar_stage.view(off..off + n)?.sym_ptr();
                k.launch_collective(
                    stream,
                    grid,
                    AR_THREADS,
                    (data, stage, scratch, ready, n as u64, epoch),
                )?;
            } else {
                k.launch_collective(
                    stream,
                    grid,
                    AR_THREADS,
                    (data, scratch, ready, done, n as u64, epoch),
                )?;
            }
        }
        Ok(())
    }

    fn ar_fill(&self, n: usize) -> Res<u32> {
        let seed = self.next_seed();
        let k = self.ar_util.kernel("fill_pattern")?;
        // SAFETY: writes n floats of ar_data.
        unsafe {
            k.launch(
                self.nv.stream(),
                self.grid_for(n as u64),
                512,
                (self.ar_data.device_ptr(), n as u64, self.me(), seed),
            )?
        };
        Ok(seed)
    }

    fn ar_check(&self, n: usize, seed: u32) -> Res<u64> {
        let stream = self.nv.stream();
        self.errors.fill(stream, 0)?;
        let k = self.ar_util.kernel("check_pattern")?;
        let errors: DevicePtr<u32> = self.errors.at(0)?.device_ptr();
        let args = (
            self.ar_data.device_ptr(),
            n as u64,
            self.nv.n_pes(),
            seed,
            errors,
        );
        // SAFETY: reads n floats; adds to one u32.
        unsafe { k.launch(stream, self.grid_for(n as u64), 512, args)? };
        let mut wrong = self.errors.to_vec(stream)?[0] as u64;
        // And a host spot check of the first elements.
        let m = n.min(4096);
        let got = self.ar_data.view(..m)?.to_vec(stream)?;
        for (i, &g) in got.iter().enumerate() {
            let want: u32 = (0..self.nv.n_pes())
                .map(|pe| ar_pattern(pe, i as u64, seed))
                .sum();
            wrong += (g != want as f32) as u64;
        }
        Ok(wrong)
    }

    fn allreduce(&mut self) -> Res<()> {
        if !self.wanted("allreduce") {
            return Ok(());
        }
        let np = self.nv.n_pes();
        let threshold = (2u64 << 20) / np.max(2) as u64;
        let nccl = if self.opts.nccl {
            self.nccl_comm()?
        } else {
            None
        };
        if self.lead() {
            println!(
                "  all-reduce: grid up to {} x {AR_THREADS}, one-shot up to {}, peers {}",
                self.ar_max_grid,
                human(threshold),
                if self.all_direct {
                    "direct"
                } else {
                    "partly by get/put"
                }
            );
        }
        for &bytes in &self.ar_sizes.clone() {
            let n = (bytes / 4) as usize;
            let oneshot = bytes <= threshold;
            let algo = if oneshot { "one-shot" } else { "rs+ag" };
            for ii in 0..self.impls.len() {
                let name = self.impls[ii].name.clone();
                let k = self.impls[ii].kernel(if oneshot {
                    "allreduce_oneshot"
                } else {
                    "allreduce_rs_ag"
                })?;
                self.barrier()?;
                let mut wrong = 0;
                for _ in 0..3 {
                    let seed = self.ar_fill(n)?;
                    self.ar_call(&k, oneshot, n)?;
                    wrong += self.ar_check(n, seed)?;
                }
                self.barrier()?;
                let t = if self.opts.check {
                    0.0
                } else {
                    self.time(|| self.ar_call(&k, oneshot, n))?
                };
                let (wrong, t) = self.agree(wrong, t)?;
                self.record(
                    "allreduce",
                    algo,
                    bytes,
                    &name,
                    t,
                    bytes as f64 / t / 1e9,
                    "GB/s",
                    wrong,
                );
            }
            if let Some(comm) = nccl {
                self.barrier()?;
                let mut wrong = 0;
                for _ in 0..3 {
                    let seed = self.ar_fill(n)?;
                    nccl_all_reduce(comm, &self.ar_data, n, self.nv)?;
                    wrong += self.ar_check(n, seed)?;
                }
                self.barrier()?;
                let t = if self.opts.check {
                    0.0
                } else {
                    self.time(|| nccl_all_reduce(comm, &self.ar_data, n, self.nv))?
                };
                let (wrong, t) = self.agree(wrong, t)?;
                self.record(
                    "allreduce",
                    "nccl",
                    bytes,
                    "nccl",
                    t,
                    bytes as f64 / t / 1e9,
                    "GB/s",
                    wrong,
                );
            }
        }
        if let Some(comm) = nccl {
            // SAFETY: created by nccl_comm; no call is in flight after the barrier.
            self.barrier()?;
            let _ = unsafe { cudarc::nccl::result::comm_destroy(comm) };
        }
        self.barrier()
    }

    /// An NCCL communicator over every PE, or `None` (with the reason in
    /// `info`) when NCCL is missing or several PEs share a GPU. Collective.
    fn nccl_comm(&mut self) -> Res<Option<cudarc::nccl::sys::ncclComm_t>> {
        let np = self.nv.n_pes();
        let lib_ok = ["libnccl.so", "libnccl.so.2"]
            .iter()
            // SAFETY: loading NCCL runs no initializer with preconditions.
            .any(|n| unsafe { libloading::Library::new(n) }.is_ok());
        let (all_ok, _) = self.agree((!lib_ok) as u64, 0.0)?;
        if all_ok != 0 {
            self.info.push((
                "NCCL".into(),
                "not measured: libnccl.so not found on the library path".into(),
            ));
            return Ok(None);
        }
        if np > 1 && !self.distinct_gpus {
            self.info.push((
                "NCCL".into(),
                format!(
                    "not measured with {np} PEs: {} PEs share a GPU, which NCCL refuses (needs one GPU per PE)",
                    self.pes_per_gpu
                ),
            ));
            return Ok(None);
        }
        // Rank 0's unique id (128 bytes) to everyone.
        let mut words = [0u64; 16];
        if self.lead() {
            let id = cudarc::nccl::result::get_uniqueid()
                .map_err(|e| format!("ncclGetUniqueId: {e:?}"))?;
            // SAFETY: 128 plain bytes.
            let bytes: [u8; 128] = unsafe { std::mem::transmute(id.internal) };
            for (i, w) in words.iter_mut().enumerate() {
                *w = u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().unwrap());
            }
        }
        let all = self.ex.all_gather(self.nv, &words)?;
        let mut bytes = [0u8; 128];
        for (i, w) in all[0].iter().enumerate() {
            bytes[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
        // SAFETY: 128 plain bytes.
        let id = cudarc::nccl::sys::ncclUniqueId {
            internal: unsafe { std::mem::transmute::<[u8; 128], [std::ffi::c_char; 128]>(bytes) },
        };
        let mut comm = std::ptr::null_mut();
        // SAFETY: a valid out pointer; every rank calls it with the same id.
        unsafe { cudarc::nccl::result::comm_init_rank(&mut comm, np as i32, id, self.me() as i32) }
            .map_err(|e| format!("ncclCommInitRank: {e:?}"))?;
        let mut v = 0i32;
        // SAFETY: writes one int.
        let _ = unsafe { cudarc::nccl::sys::ncclGetVersion(&mut v) };
        self.info.push((
            "NCCL".into(),
            format!("{}.{}.{} ({np} rank(s))", v / 10000, v / 100 % 100, v % 100),
        ));
        Ok(Some(comm))
    }

    /// Prints the `key: value` lines and the failures (PE 0).
    pub fn summary(&self) {
        if self.lead() {
            for (k, v) in &self.info {
                println!("# {k}: {v}");
            }
            for f in &self.failures {
                println!("FAIL: {f}");
            }
        }
    }
}

/// NCCL in-place f32 sum of `buf[..n]` on this PE's stream.
fn nccl_all_reduce(
    comm: cudarc::nccl::sys::ncclComm_t,
    buf: &SymBuffer<f32>,
    n: usize,
    nv: &Nvshmem,
) -> Res<()> {
    let p = buf.device_ptr().addr() as *mut std::ffi::c_void;
    // SAFETY: `buf` holds n floats of device memory; the stream is this PE's.
    unsafe {
        cudarc::nccl::result::all_reduce(
            p,
            p,
            n,
            cudarc::nccl::sys::ncclDataType_t::ncclFloat32,
            cudarc::nccl::sys::ncclRedOp_t::ncclSum,
            comm,
            nv.stream().cu_stream() as cudarc::nccl::sys::cudaStream_t,
        )
    }
    .map_err(|e| format!("ncclAllReduce: {e:?}"))?;
    Ok(())
}
