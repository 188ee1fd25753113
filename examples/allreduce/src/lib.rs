//! The host side of the in-kernel f32 sum all-reduce
//! (`examples/allreduce/kernel`), shared by the `allreduce` example and the
//! benchmark: the launch figures, the buffers and signal words, the per-call
//! epoch, and the fill and check rounds with the test [`pattern`].
//!
//! See `examples/allreduce/src/main.rs` for the algorithms and the argument
//! that calls can follow each other with no reset.

#![warn(missing_docs)]

use example_cli::{KernelSet, Res, sms};
use example_patterns::pattern;
use nvshmem_host::exchange::{GridAgreement, WordExchange};
use nvshmem_host::{DevicePtr, Kernel, KernelArgs, Module, Nvshmem, SymBuffer};
use std::cell::Cell;
use std::path::PathBuf;

/// Threads per block of every all-reduce kernel.
pub const THREADS: u32 = 512;
/// The kernels' `UNROLL`: vectors of 4 floats per thread per tile.
pub const UNROLL: usize = 4;
/// Floats per tile of one block (the kernels' `block_dim * UNROLL * 4`).
pub const TILE: usize = THREADS as usize * UNROLL * 4;
/// One-shot: floats per block, below which fewer blocks are used.
pub const ONESHOT_PER_BLOCK: usize = THREADS as usize * 8;
/// Device-side error counters (one per check in flight).
pub const CHECK_SLOTS: usize = 4;

/// An all-reduce algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algo {
    /// `allreduce_oneshot`: stage, signal, read every PE's stage (small buffers).
    OneShot,
    /// `allreduce_rs_ag`: reduce-scatter fused with all-gather (large buffers).
    RsAg,
}

impl Algo {
    /// `one-shot` or `rs+ag`.
    pub fn name(self) -> &'static str {
        match self {
            Algo::OneShot => "one-shot",
            Algo::RsAg => "rs+ag",
        }
    }

    /// The algorithm the size picks: one-shot up to `threshold` bytes.
    pub fn by_size(bytes: usize, threshold: usize) -> Algo {
        if bytes <= threshold {
            Algo::OneShot
        } else {
            Algo::RsAg
        }
    }
}

/// The largest one-shot size in bytes by default: `2 MiB / max(n_pes, 2)`.
///
/// ```
/// assert_eq!(example_allreduce::oneshot_threshold(4), 512 << 10);
/// ```
pub fn oneshot_threshold(n_pes: u32) -> usize {
    (2 << 20) / n_pes.max(2) as usize
}

/// The folder of this package's kernels (`allreduce-kernels`), which its
/// build script builds.
pub fn ptx_dir() -> PathBuf {
    example_cli::ptx_dir!()
}

nvshmem_host::include_kernels!(allreduce_kernels);

/// The kernels of `allreduce-kernels` (its typed bindings' `Kernels`).
pub use allreduce_kernels::Kernels as AllReduceKernels;

impl KernelSet for AllReduceKernels {
    const CRATE: &'static str = allreduce_kernels::CRATE;

    fn dir() -> PathBuf {
        ptx_dir()
    }

    fn from_module(module: &Module) -> Res<AllReduceKernels> {
        Ok(AllReduceKernels::new(module)?)
    }
}

impl AllReduceKernels {
    /// The kernel of `algo`.
    pub fn of(&self, algo: Algo) -> &Kernel {
        match algo {
            Algo::OneShot => &self.allreduce_oneshot,
            Algo::RsAg => &self.allreduce_rs_ag,
        }
    }
}

/// One PE's all-reduce state: buffers, signal words, the grid every PE
/// agreed on, and the counters that must advance identically on every PE.
pub struct AllReduce<'a> {
    nv: &'a Nvshmem,
    k: AllReduceKernels,
    /// The data, reduced in place.
    pub data: SymBuffer<f32>,
    stage: SymBuffer<f32>,
    stage_half: usize,
    scratch: SymBuffer<f32>,
    ready: SymBuffer<u64>,
    done: SymBuffer<u64>,
    errors: SymBuffer<u32>,
    /// The grid cap and the transport, agreed with every PE.
    pub agreement: GridAgreement,
    sms: u32,
    /// Launch without `cuLaunchCooperativeKernel` (off by default).
    pub plain_launch: bool,
    epoch: Cell<u64>,
    seed: Cell<u32>,
}

impl<'a> AllReduce<'a> {
    /// Agrees on the grid (capped by every kernel in `also`, say another
    /// implementation's, and by `2 · SMs`) and allocates room for `max_n`
    /// floats, of which one-shot calls use at most `oneshot_n`.
    /// **Collective.**
    pub fn new(
        nv: &'a Nvshmem,
        ex: &WordExchange,
        k: AllReduceKernels,
        also: &[&Kernel],
        max_n: usize,
        oneshot_n: usize,
    ) -> Res<AllReduce<'a>> {
        let sms = sms(nv)? as u32;
        let mut cap = 2 * sms;
        for kernel in [&k.allreduce_oneshot, &k.allreduce_rs_ag]
            .into_iter()
            .chain(also.iter().copied())
        {
            cap = cap.min(kernel.max_collective_blocks(THREADS, 0)?);
        }
        let agreement = nv.agree_on_grid(ex, cap)?;
        let stage_half = oneshot_n.max(1).next_multiple_of(4);
        let words = agreement.max_grid as usize * nv.n_pes() as usize;
        Ok(AllReduce {
            nv,
            k,
            data: nv.alloc(max_n.max(1))?,
            stage: nv.alloc(2 * stage_half)?,
            stage_half,
            scratch: nv.alloc(if agreement.all_direct {
                4
            } else {
                agreement.max_grid as usize * TILE
            })?,
            ready: nv.alloc_zeroed(words)?,
            done: nv.alloc_zeroed(words)?,
            errors: nv.alloc_zeroed(CHECK_SLOTS)?,
            agreement,
            sms,
            plain_launch: false,
            epoch: Cell::new(0),
            seed: Cell::new(0),
        })
    }

    /// The kernels.
    pub fn kernels(&self) -> &AllReduceKernels {
        &self.k
    }

    /// The all-reduce grid for `n` floats: the same on every PE.
    pub fn grid(&self, algo: Algo, n: usize) -> u32 {
        let per_block = match algo {
            Algo::OneShot => ONESHOT_PER_BLOCK,
            Algo::RsAg => TILE * self.nv.n_pes() as usize,
        };
        n.div_ceil(per_block)
            .clamp(1, self.agreement.max_grid as usize) as u32
    }

    /// One all-reduce of `data[..n]` with this crate's kernel of `algo`,
    /// queued on the stream.
    pub fn call(&self, algo: Algo, n: usize) -> Res<()> {
        self.call_with(self.k.of(algo), algo, n)
    }

    /// One all-reduce of `data[..n]` with `kernel` (`algo`'s, or its twin
    /// with the same parameters, such as a C++ build), queued on the stream.
    /// A stream capturing a CUDA graph is refused: the graph could outlive
    /// this handle's buffers.
    pub fn call_with(&self, kernel: &Kernel, algo: Algo, n: usize) -> Res<()> {
        self.nv
            .refuse_capture(self.nv.stream(), "AllReduce::call_with")?;
        let grid = self.grid(algo, n);
        let epoch = self.epoch.get() + 1;
        self.epoch.set(epoch);
        let (data, scratch) = (self.data.sym_ptr(), self.scratch.sym_ptr());
        let (ready, done) = (self.ready.sym_ptr(), self.done.sym_ptr());
        match algo {
            Algo::OneShot => {
                let off = (epoch % 2) as usize * self.stage_half;
                let stage = self.stage.view(off..off + n)?.sym_ptr();
                self.launch(kernel, grid, (data, stage, scratch, ready, n as u64, epoch))
            }
            Algo::RsAg => self.launch(kernel, grid, (data, scratch, ready, done, n as u64, epoch)),
        }
    }

    /// Launches an all-reduce kernel (cooperatively unless `plain_launch`).
    fn launch<A: KernelArgs>(&self, k: &Kernel, grid: u32, args: A) -> Res<()> {
        let stream = self.nv.stream();
        // SAFETY: the all-reduce kernels touch `data[..n]`, `stage[..n]`,
        // `scratch[..grid * TILE]` and `grid * n_pes` signal words, all of
        // which the arguments' buffers hold (see `new` and `call_with`).
        unsafe {
            if self.plain_launch {
                k.launch(stream, grid, THREADS, args)?;
            } else {
                k.launch_collective(stream, grid, THREADS, args)?;
            }
        }
        Ok(())
    }

    /// A grid for the elementwise fill and check kernels.
    fn elementwise_grid(&self, n: usize) -> u32 {
        n.div_ceil(THREADS as usize).clamp(1, self.sms as usize * 8) as u32
    }

    /// Fills `data[..n]` with this PE's [`pattern`] for a new round (the
    /// same round on every PE when they call it alike); returns the round.
    pub fn fill(&self, n: usize) -> Res<u32> {
        let seed = self.seed.get() + 1;
        self.seed.set(seed);
        let (stream, grid) = (self.nv.stream(), self.elementwise_grid(n));
        let pe = self.nv.my_pe().index();
        // SAFETY: writes `n` floats of this PE's `data`, which holds at least `n`.
        unsafe {
            allreduce_kernels::fill_pattern(
                &self.k, stream, grid, THREADS, &self.data, n as u64, pe, seed,
            )?
        };
        Ok(seed)
    }

    /// Queues a count of the wrong elements of `data[..n]` for round `seed`
    /// into error counter `slot` (below [`CHECK_SLOTS`]).
    pub fn check(&self, n: usize, seed: u32, slot: usize) -> Res<()> {
        let errors: DevicePtr<u32> = self.errors.at(slot)?.device_ptr();
        let (stream, grid, n_pes) = (self.nv.stream(), self.elementwise_grid(n), self.nv.n_pes());
        // SAFETY: reads `n` floats of this PE's `data`; adds to one u32.
        unsafe {
            allreduce_kernels::check_pattern(
                &self.k, stream, grid, THREADS, &self.data, n as u64, n_pes, seed, errors,
            )?
        };
        Ok(())
    }

    /// Sets every error counter to 0 (queued on the stream).
    pub fn clear_errors(&self) -> Res<()> {
        Ok(self.errors.fill(self.nv.stream(), 0)?)
    }

    /// The sum of the error counters (waits for the stream).
    pub fn device_errors(&self) -> Res<u64> {
        let counts = self.errors.to_vec(self.nv.stream())?;
        Ok(counts.iter().map(|&e| e as u64).sum())
    }

    /// The signal words of the last call, of `algo` on `n` floats, that
    /// hold less than its epoch (waits for the stream). Every block of every PE
    /// sets its `ready` word (and `done`, for rs+ag) on every PE to the
    /// call's epoch, so a call that did not run leaves older ones: at 1 PE,
    /// where the sum is the input itself, that is what tells a no-op apart.
    pub fn signal_errors(&self, algo: Algo, n: usize) -> Res<u64> {
        let words = self.grid(algo, n) as usize * self.nv.n_pes() as usize;
        let epoch = self.epoch.get();
        let stale = |buf: &SymBuffer<u64>| -> Res<u64> {
            let got = buf.view(..words)?.to_vec(self.nv.stream())?;
            // A peer already in its next call may have set a word past this
            // call's epoch (nothing waits between calls): only older is stale.
            Ok(got.iter().filter(|&&w| w < epoch).count() as u64)
        };
        let done = match algo {
            Algo::OneShot => 0,
            Algo::RsAg => stale(&self.done)?,
        };
        Ok(stale(&self.ready)? + done)
    }

    /// Copies `data[..n]` back and compares every element with the CPU sum
    /// of every PE's pattern for round `seed`; prints the first few wrong
    /// ones and returns how many there are.
    pub fn host_errors(&self, n: usize, seed: u32) -> Res<u64> {
        let (me, np) = (self.nv.my_pe().index(), self.nv.n_pes());
        let got = self.data.view(..n)?.to_vec(self.nv.stream())?;
        let mut wrong = 0u64;
        for (i, &g) in got.iter().enumerate() {
            let want = (0..np).map(|pe| pattern(pe, i as u64, seed)).sum::<u32>() as f32;
            if g != want {
                if wrong < 5 {
                    eprintln!("PE {me}: element {i} of {n} is {g}, expected {want}");
                }
                wrong += 1;
            }
        }
        Ok(wrong)
    }
}
