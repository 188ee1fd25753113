//! The measurements, on every PE of the job.
//!
//! Point-to-point cases (latency, bandwidth, atomics) run on PE 0 only, aimed
//! at PE 1 (at itself with one PE); the other PEs take part in the checks and
//! the host barriers around each case. Ping-pong runs between PE 0 and PE 1;
//! the barrier and the all-reduces run on every PE, timed as the slowest PE's
//! median.
//!
//! Method, for every case and implementation: the result is checked first
//! (fresh non-zero data, the destination poisoned with the complement of
//! what must arrive, every byte compared on the device or every word on the
//! host); then warm-up launches, then `reps`
//! launches each between two CUDA events, and the median. Bandwidth cases
//! larger than 1 MiB rotate over buffers filling a pool much larger than L2.
//! Latency and bandwidth kernels repeat their operation `iters` times inside
//! one launch, so the launch itself is amortized.

pub use crate::Res;
use crate::{Record, human, median, sizes};
use cudarc::driver::sys::{CUdevice_attribute, CUevent_flags};
use example_allreduce::{AllReduce, AllReduceKernels, oneshot_threshold};
use example_cli::KernelSet;
use nvshmem_host::cudarc;
use nvshmem_host::exchange::WordExchange;
use nvshmem_host::{
    DevicePtr, Kernel, KernelArgs, Manifest, Module, Nvshmem, Pe, SymBuffer, SymPtr,
};
use std::cell::Cell;
use std::path::PathBuf;

mod allreduce;
mod cases;

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Correctness only: small sizes, every check, no timing.
    pub check: bool,
    /// Fewer sizes and repetitions.
    pub quick: bool,
    /// The C++ cubins, by implementation name (`cpp`, `cpp-lto`).
    pub cpp: Vec<(String, PathBuf)>,
    /// Candidate builds of the Rust kernels, by name (timed as `rust-<name>`):
    /// folders holding `bench-kernels` and `allreduce-kernels`.
    pub rust: Vec<(String, PathBuf)>,
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
            rust: Vec::new(),
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
    /// The all-reduce (the example's host side and kernels).
    ar: AllReduce<'a>,
    ar_sizes: Vec<u64>,
    seed: Cell<u32>,
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
        .filter(|k| {
            !matches!(
                k.name.as_str(),
                "fill_bytes" | "check_bytes" | "poison_bytes"
            )
        })
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
        let rust_bench = nv.load_module_in(crate::ptx_dir(), "bench-kernels")?;
        let rust_ar = nv.load_module_in(example_allreduce::ptx_dir(), "allreduce-kernels")?;
        let ar_kernels = AllReduceKernels::from_module(&rust_ar)?;
        let mut impls = vec![Impl {
            name: "rust".into(),
            modules: vec![rust_bench.clone(), rust_ar.clone()],
        }];
        let mut info = Vec::new();
        for (name, dir) in &opts.rust {
            let modules = vec![
                nv.load_module_in(dir, "bench-kernels")?,
                nv.load_module_in(dir, "allreduce-kernels")?,
            ];
            info.push((format!("rust-{name}"), dir.display().to_string()));
            impls.push(Impl {
                name: format!("rust-{name}"),
                modules,
            });
        }
        let mut failures = Vec::new();
        for (name, path) in &opts.cpp {
            match load_cpp(nv, name, path, &[rust_bench.manifest(), rust_ar.manifest()]) {
                Ok(i) => impls.push(i),
                // A check asked to check it: its cubin not loading is a
                // failure, not a column left out.
                Err(e) if opts.check => {
                    failures.push(format!("{name}: the C++ cubin did not load: {e}"))
                }
                Err(e) => info.push((name.clone(), format!("not measured: {e}"))),
            }
        }
        let ctx = nv.context().clone();
        let sms =
            ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32;
        let np = nv.n_pes();
        let ex = WordExchange::new(nv, 16)?;

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
        // The all-reduce grid: the same on every PE, all blocks of all PEs
        // on a GPU resident, whichever implementation runs.
        let threshold = oneshot_threshold(np) as u64;
        let oneshot_n = ar_sizes
            .iter()
            .filter(|&&b| b <= threshold)
            .max()
            .map_or(4, |b| b / 4);
        let twins = impls[1..]
            .iter()
            .flat_map(|i| ["allreduce_oneshot", "allreduce_rs_ag"].map(|k| i.kernel(k)))
            .collect::<Res<Vec<Kernel>>>()?;
        let twins: Vec<&Kernel> = twins.iter().collect();
        let ar = AllReduce::new(
            nv,
            &ex,
            ar_kernels,
            &twins,
            (ar_max / 4) as usize,
            oneshot_n as usize,
        )?;
        let pes_per_gpu = ar.agreement.pes_per_gpu;
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
            ar,
            ar_sizes,
            seed: Cell::new(0),
            sig_base: Cell::new(0),
            records: Vec::new(),
            info,
            failures,
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

    /// Fills `buf[..bytes]` (this PE's copy) with the pattern of `seed`.
    fn fill(&self, buf: DevicePtr<u8>, bytes: u64, seed: u32) -> Res<()> {
        self.write_bytes("fill_bytes", buf, bytes, seed)
    }

    /// Poisons `buf[..bytes]` (this PE's copy) for a check against the
    /// pattern of `seed`: every byte its complement, so none matches.
    fn poison(&self, buf: DevicePtr<u8>, bytes: u64, seed: u32) -> Res<()> {
        self.write_bytes("poison_bytes", buf, bytes, seed)
    }

    /// Runs the utility kernel `name(buf, bytes, seed)`, which writes
    /// `buf[..bytes]` (this PE's copy).
    fn write_bytes(&self, name: &str, buf: DevicePtr<u8>, bytes: u64, seed: u32) -> Res<()> {
        let k = self.util.kernel(name)?;
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
    fn time(&self, f: impl FnMut() -> Res<()>) -> Res<f64> {
        example_measure::back_to_back(self.nv, self.opts.warmup, self.opts.reps, f)
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

    /// Records a checked measurement: `wrong` values seen, on every PE.
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
        self.push(
            case,
            variant,
            bytes,
            imp,
            (time_s, value, unit),
            Some(wrong),
        );
    }

    /// Records a measurement that checks nothing: `UNCHECKED`, never `PASS`.
    #[allow(clippy::too_many_arguments)]
    fn record_unchecked(
        &mut self,
        case: &str,
        variant: &str,
        bytes: u64,
        imp: &str,
        time_s: f64,
        value: f64,
        unit: &str,
    ) {
        self.push(case, variant, bytes, imp, (time_s, value, unit), None);
    }

    fn push(
        &mut self,
        case: &str,
        variant: &str,
        bytes: u64,
        imp: &str,
        (time_s, value, unit): (f64, f64, &str),
        wrong: Option<u64>,
    ) {
        let pass = wrong.is_none_or(|w| w == 0);
        if let Some(wrong) = wrong.filter(|&w| w > 0) {
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
                match wrong {
                    None => "UNCHECKED",
                    Some(0) => "PASS",
                    Some(_) => "FAIL",
                }
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
            checked: wrong.is_some(),
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
