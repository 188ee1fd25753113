//! Warpgroup tensor-core MMA for Hopper (`wgmma.mma_async`, **sm_90a**):
//! shared-memory matrix descriptors, the asynchronous MMA, its fences and
//! groups, and the warpgroup helpers (`setmaxnreg`, named barriers) that a
//! warp-specialized GEMM needs.
//!
//! A warpgroup is 4 consecutive warps (128 threads, the first warp's index a
//! multiple of 4). One `wgmma.mma_async.sync.aligned.m64nNk16.f32.bf16.bf16`
//! computes `D(64 × N) += A(64 × 16) · B(16 × N)` with A and B read from shared
//! memory through 64-bit [`MatDesc`] descriptors, and D in `N / 2` f32
//! registers per thread ([`Accum`]). Its sequence:
//!
//! ```no_run
//! use nvshmem_device::half::bf16;
//! use nvshmem_device::wgmma::{self, Accum, KMajor, M64, MatDesc};
//! # unsafe fn f(a: MatDesc<bf16, KMajor>, b: MatDesc<bf16, KMajor>) {
//! let mut acc = Accum::<M64<128>>::zero();
//! // SAFETY: the whole warpgroup runs these lines together; the descriptors
//! // name shared memory the async proxy sees.
//! unsafe {
//!     wgmma::fence();                                          // wgmma.fence.sync.aligned
//!     wgmma::mma_async(&mut acc, a, b, false);                 // D = A·B (scale-d 0)
//!     wgmma::mma_async(&mut acc, a.advance(32), b.advance(32), true); // next k16: D += A·B
//!     wgmma::commit_group();                                   // wgmma.commit_group.sync.aligned
//!     wgmma::wait_group::<0>();                                // wgmma.wait_group.sync.aligned 0
//! }
//! wgmma::fence_operand(&mut acc);
//! # }
//! ```
//!
//! Every `wgmma` instruction, and `setmaxnreg`, is `.aligned`: all 128
//! threads of the warpgroup must execute it together, in warpgroup-uniform
//! control flow, or the behaviour is undefined. So their functions are
//! `unsafe`; the named barriers are not (they use the non-aligned
//! `barrier.sync` / `barrier.arrive` and check their operands). The fence,
//! commit, wait and `setmaxnreg` are LLVM's convergent intrinsics; the MMA
//! itself is inline `asm!`, which rustc does not mark `convergent`, so the
//! caveat of [`mma`](crate::mma)'s docs applies to it.
//!
//! Shapes: `M64<N>` for N in 8, 16, 32, 64, 96, 128, 192, 256; inputs `bf16`
//! or `f16`, accumulator f32. Descriptors carry the element type and the
//! major-ness ([`KMajor`], [`MnMajor`]: the instruction's `imm-trans-a/b`), so
//! an f16 descriptor cannot feed a bf16 MMA.
//!
//! PTX built for `sm_90` (without `a`) is refused by ptxas for every
//! instruction of this module: kernels that use it must be built for
//! `sm_90a`.
//!
//! # Accumulator layout
//! Thread `t` of the warpgroup (warp `w = t / 32`, lane `l`, `g = l / 4`,
//! `q = l % 4`) holds, for each 8-column block `j` (0..N/8), registers
//! `4j..4j+4` = D at (row `16w + g`, col `8j + 2q`), (`16w + g`, `8j + 2q + 1`),
//! (`16w + g + 8`, `8j + 2q`), (`16w + g + 8`, `8j + 2q + 1`): see [`Accum::coord`].

use crate::__private::Sealed;
use crate::cp_async::SharedAddr;
use core::marker::PhantomData;
use half::{bf16, f16};

/// A 16-bit input type of `wgmma` (sealed): `bf16` or `f16`.
pub trait WgElement: Copy + Sealed {}
impl WgElement for bf16 {}
impl WgElement for f16 {}

/// Which dimension of an operand is contiguous in shared memory (sealed):
/// [`KMajor`] (`imm-trans = 0`) or [`MnMajor`] (`imm-trans = 1`, transposed).
pub trait Major: Copy + Sealed {
    /// The instruction's `imm-trans-a` / `imm-trans-b` value.
    const TRANS: u32;
}
markers! {
    /// K is contiguous: A stored `M × K` row-major, B stored `N × K` (the
    /// "TN" GEMM, PyTorch's `Linear` weight layout).
    KMajor: Major { const TRANS: u32 = 0; };
    /// M (for A) or N (for B) is contiguous: the transposed operand.
    MnMajor: Major { const TRANS: u32 = 1; };
}

/// The swizzle mode of a shared-memory operand (descriptor bits 62–63). It
/// must match how the data was written: TMA's `CU_TENSOR_MAP_SWIZZLE_*` of
/// the same width, with the tile's start 8 × (swizzle width) aligned (1024
/// bytes for 128B).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
pub enum Swizzle {
    /// No swizzle: 8 × 16-byte core matrices ("interleave").
    None = 0,
    /// 128-byte swizzle: rows of 128 bytes, 16-byte chunks XORed with `row % 8`.
    B128 = 1,
    /// 64-byte swizzle.
    B64 = 2,
    /// 32-byte swizzle.
    B32 = 3,
}

/// A `wgmma` shared-memory matrix descriptor (64 bits): start address,
/// leading- and stride-dimension byte offsets, swizzle mode. Typed by element
/// and major-ness.
#[repr(transparent)]
pub struct MatDesc<T: WgElement, M: Major> {
    raw: u64,
    _t: PhantomData<(T, M)>,
}
impl<T: WgElement, M: Major> Clone for MatDesc<T, M> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: WgElement, M: Major> Copy for MatDesc<T, M> {}

impl<T: WgElement, M: Major> MatDesc<T, M> {
    /// A descriptor of the matrix at `start` (16-byte aligned), with leading
    /// byte offset `lbo` and stride byte offset `sbo` (multiples of 16, below
    /// 256 KiB) and swizzle `swizzle`, as the PTX ISA's "Matrix Descriptor
    /// Format" defines them: bits 0–13 `start >> 4`, 16–29 `lbo >> 4`, 32–45
    /// `sbo >> 4`, 49–51 base offset (0 here), 62–63 the swizzle mode.
    #[inline(always)]
    pub const fn new(start: SharedAddr, lbo: u32, sbo: u32, swizzle: Swizzle) -> Self {
        const fn enc(x: u32) -> u64 {
            ((x & 0x3ffff) >> 4) as u64
        }
        MatDesc {
            raw: enc(start.0) | (enc(lbo) << 16) | (enc(sbo) << 32) | ((swizzle as u64) << 62),
            _t: PhantomData,
        }
    }

    /// The descriptor of a K-major tile written by TMA with 128-byte swizzle,
    /// 64 16-bit elements (128 bytes) per row: SBO = 1024 bytes (8 rows), LBO
    /// unused (16). `start` must be 1024-byte aligned; step along K within the
    /// 64 columns with [`advance`](Self::advance)`(32 · kk)` per k16 step `kk`.
    #[inline(always)]
    pub const fn k_major_sw128(start: SharedAddr) -> Self {
        Self::new(start, 16, 1024, Swizzle::B128)
    }

    /// The same descriptor with its start address `bytes` further (a multiple
    /// of 16): the next k16 slice inside a swizzled row (`+32` bytes for
    /// 16-bit elements), or the next 8-row group.
    #[inline(always)]
    pub const fn advance(self, bytes: u32) -> Self {
        MatDesc {
            raw: self.raw + (bytes >> 4) as u64,
            _t: PhantomData,
        }
    }

    /// The 64-bit descriptor.
    #[inline(always)]
    pub const fn raw(self) -> u64 {
        self.raw
    }

    /// A descriptor from its 64 bits.
    #[inline(always)]
    pub const fn from_raw(raw: u64) -> Self {
        MatDesc {
            raw,
            _t: PhantomData,
        }
    }
}

/// The `m64nNk16` shape of `wgmma`, `N` in 8, 16, 32, 64, 96, 128, 192, 256.
#[derive(Clone, Copy, Debug, Default)]
pub struct M64<const N: usize>;

/// A `wgmma` shape (sealed): its accumulator registers per thread.
pub trait WgShape: Copy + Sealed {
    /// Columns of B and D.
    const N: usize;
    /// The f32 accumulator registers of one thread (`[f32; N / 2]`).
    type Regs: Copy + AsRef<[f32]> + AsMut<[f32]>;
    /// All-zero registers.
    const ZERO: Self::Regs;
    /// Calls `f(i, regs[i])` for every register, unrolled (a loop over 128
    /// registers would not be, and would put the accumulator in local memory).
    fn each(regs: &Self::Regs, f: impl FnMut(usize, f32));
    /// Sets every register to `f(i, regs[i])`, unrolled.
    fn update(regs: &mut Self::Regs, f: impl FnMut(usize, f32) -> f32);
}

/// One thread's part of a `64 × N` f32 accumulator (see the module docs for
/// which element each register holds).
pub struct Accum<S: WgShape> {
    /// `N / 2` f32 registers.
    pub regs: S::Regs,
}
impl<S: WgShape> Clone for Accum<S> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<S: WgShape> Copy for Accum<S> {}

impl<S: WgShape> Accum<S> {
    /// All zeros.
    #[inline(always)]
    pub const fn zero() -> Self {
        Accum { regs: S::ZERO }
    }
    /// `(row, col)` in the 64 × N tile of register `i` of warpgroup thread
    /// `t` (0..128).
    #[inline(always)]
    pub const fn coord(t: u32, i: usize) -> (usize, usize) {
        let (w, l) = ((t / 32) as usize, (t % 32) as usize);
        let (g, q) = (l / 4, l % 4);
        let j = i / 4;
        let r = i % 4;
        (16 * w + g + 8 * (r / 2), 8 * j + 2 * q + r % 2)
    }
    /// Calls `f(row, col, value)` for each register of warpgroup thread `t`.
    #[inline(always)]
    pub fn for_each(&self, t: u32, mut f: impl FnMut(usize, usize, f32)) {
        S::each(&self.regs, |i, v| {
            let (r, c) = Self::coord(t, i);
            f(r, c, v)
        });
    }
}

/// `wgmma.mma_async` for inputs `T` on this shape (sealed; see [`mma_async`]).
pub trait Wgmma<T: WgElement>: WgShape {
    /// One `wgmma.mma_async.sync.aligned.m64nNk16.f32.T.T`.
    ///
    /// # Safety
    /// As [`mma_async`].
    unsafe fn mma_async<MA: Major, MB: Major>(
        acc: &mut Self::Regs,
        a: MatDesc<T, MA>,
        b: MatDesc<T, MB>,
        scale_d: bool,
    );
}

/// `D = A · B + (scale_d ? D : 0)` on the warpgroup's tensor cores, started
/// asynchronously (`wgmma.mma_async.sync.aligned.m64nNk16.f32.{bf16,f16}`,
/// both operands from shared memory, `imm-trans` from the descriptors'
/// major-ness). `acc` must not be read or written until a
/// [`wait_group`] covers the group this MMA is [committed](commit_group) in;
/// call [`fence`] before the first `mma_async` of a batch (and after any
/// register write to `acc`), and [`fence_operand`] after the wait.
///
/// # Safety
/// Every thread of the warpgroup must call it together, in
/// warpgroup-uniform control flow (the instruction is `.aligned`), with the
/// same descriptors. They must describe this block's shared memory in the layout
/// (swizzle, offsets) the data was written in, visible to the async proxy
/// (written by TMA, or followed by `fence.proxy.async` —
/// [`tma::fence_proxy_async_shared_cta`](crate::tma::fence_proxy_async_shared_cta)),
/// and not overwritten until the MMA has completed.
#[inline(always)]
pub unsafe fn mma_async<T: WgElement, S: Wgmma<T>, MA: Major, MB: Major>(
    acc: &mut Accum<S>,
    a: MatDesc<T, MA>,
    b: MatDesc<T, MB>,
    scale_d: bool,
) {
    // SAFETY: the caller's contract.
    unsafe { S::mma_async(&mut acc.regs, a, b, scale_d) }
}

/// The accumulator register list `{%0, %1, ...}` of a `wgmma` template.
#[cfg_attr(not(target_arch = "nvptx64"), allow(unused_macros))]
macro_rules! reg_list {
    ($first:tt $($rest:tt)*) => {
        concat!("{{{", stringify!($first), "}" $(, ", {", stringify!($rest), "}")*, "}}")
    };
}

macro_rules! wgmma_shapes {
    ($($n:literal => $regs:literal [$($i:tt)*];)*) => {$(
        impl Sealed for M64<$n> {}
        impl WgShape for M64<$n> {
            const N: usize = $n;
            type Regs = [f32; $regs];
            const ZERO: [f32; $regs] = [0.0; $regs];
            #[inline(always)]
            fn each(regs: &Self::Regs, mut f: impl FnMut(usize, f32)) {
                $(f($i, regs[$i]);)*
            }
            #[inline(always)]
            fn update(regs: &mut Self::Regs, mut f: impl FnMut(usize, f32) -> f32) {
                $(regs[$i] = f($i, regs[$i]);)*
            }
        }
        wgmma_impl!(bf16, "bf16", $n, [$($i)*]);
        wgmma_impl!(f16, "f16", $n, [$($i)*]);
    )*};
}

macro_rules! wgmma_impl {
    ($t:ty, $ptx:literal, $n:literal, [$($i:tt)*]) => {
        impl Wgmma<$t> for M64<$n> {
            #[inline(always)]
            unsafe fn mma_async<MA: Major, MB: Major>(
                acc: &mut Self::Regs,
                a: MatDesc<$t, MA>,
                b: MatDesc<$t, MB>,
                scale_d: bool,
            ) {
                #[cfg(target_arch = "nvptx64")]
                // SAFETY: the caller's contract (see `mma_async`).
                unsafe {
                    core::arch::asm!(
                        "{{",
                        ".reg .pred p;",
                        "setp.ne.b32 p, {sd}, 0;",
                        concat!(
                            "wgmma.mma_async.sync.aligned.m64n", stringify!($n), "k16.f32.", $ptx, ".", $ptx, " ",
                            reg_list!($($i)*),
                            ", {da}, {db}, p, 1, 1, {ta}, {tb};"
                        ),
                        "}}",
                        $(inout(reg32) acc[$i],)*
                        da = in(reg64) a.raw(),
                        db = in(reg64) b.raw(),
                        sd = in(reg32) scale_d as u32,
                        ta = const MA::TRANS,
                        tb = const MB::TRANS,
                        options(nostack)
                    )
                }
                #[cfg(not(target_arch = "nvptx64"))]
                {
                    let _ = (acc, a, b, scale_d);
                    crate::device_only()
                }
            }
        }
    };
}

wgmma_shapes! {
    8 => 4 [0 1 2 3];
    16 => 8 [0 1 2 3 4 5 6 7];
    32 => 16 [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15];
    64 => 32 [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31];
    96 => 48 [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47];
    128 => 64 [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63];
    192 => 96 [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95];
    256 => 128 [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127];
}

/// Orders register and shared-memory accesses before the following
/// `wgmma.mma_async`s (`wgmma.fence.sync.aligned`). Needed before the first
/// MMA of a batch and whenever the accumulator registers were touched.
///
/// # Safety
/// Every thread of the warpgroup executes this call together, in
/// warpgroup-uniform control flow: the instruction is `.aligned`, and the
/// PTX ISA makes it undefined behaviour when some threads of the
/// warpgroup do not execute the same instruction (a branch on the thread
/// index around it, an early `return` of some threads).
#[inline(always)]
pub unsafe fn fence() {
    // SAFETY: the caller's (uniform control flow); LLVM's intrinsic is
    // convergent and orders memory accesses around it.
    unsafe { crate::nvvm::wgmma_fence() }
}

/// Closes the group of the `wgmma.mma_async`s this warpgroup issued since the
/// last commit (`wgmma.commit_group.sync.aligned`).
///
/// # Safety
/// As [`fence`]: every thread of the warpgroup executes it together, in
/// warpgroup-uniform control flow (`.aligned`).
#[inline(always)]
pub unsafe fn commit_group() {
    // SAFETY: as in `fence`.
    unsafe { crate::nvvm::wgmma_commit_group() }
}

/// Waits until at most `N` of this warpgroup's `wgmma` groups are pending
/// (`wgmma.wait_group.sync.aligned N`): the accumulators of the others can be
/// read, and their shared-memory operands reused.
///
/// # Safety
/// As [`fence`]: every thread of the warpgroup executes it together, in
/// warpgroup-uniform control flow (`.aligned`).
#[inline(always)]
pub unsafe fn wait_group<const N: u32>() {
    // SAFETY: as in `fence`; the count is an immediate, as the intrinsic needs.
    unsafe { crate::nvvm::wgmma_wait_group(const { N as i64 }) }
}

/// A compiler barrier on every accumulator register (an empty `asm!` that
/// reads and writes each): keeps the compiler from moving accesses to `acc`
/// across a [`wait_group`] (CUTLASS's `warpgroup_fence_operand`). Emits no
/// instruction.
#[inline(always)]
pub fn fence_operand<S: WgShape>(acc: &mut Accum<S>) {
    S::update(&mut acc.regs, |_, r| {
        #[cfg(target_arch = "nvptx64")]
        {
            let mut r = r;
            // SAFETY: an empty template.
            unsafe {
                core::arch::asm!("/* {r} */", r = inout(reg32) r, options(nomem, nostack, preserves_flags))
            }
            r
        }
        #[cfg(not(target_arch = "nvptx64"))]
        r
    });
}

/// Raises this warp's register budget to `N` (`setmaxnreg.inc.sync.aligned.u32 N`,
/// sm_90a; `N` a multiple of 8 in 24..=256, which ptxas checks). Blocks
/// until the block's register pool has the registers (the producer
/// warpgroups having called [`setmaxnreg_dec`]): a pool that never has
/// them hangs the warpgroup.
///
/// # Safety
/// Every thread of the warpgroup (all 4 warps) executes this call
/// together, in warpgroup-uniform control flow: the instruction is
/// `.aligned`, and the PTX ISA makes it undefined behaviour when some
/// warps or threads of the warpgroup do not execute the same one. The
/// register-budget contract of the PTX ISA holds too: `N` is at least the
/// warp's current per-thread register count (the kernel's, as ptxas
/// allocated it, or that of this warpgroup's previous `setmaxnreg`), and
/// the warps of the warpgroup have synchronized since their previous
/// `setmaxnreg`, if any.
#[inline(always)]
pub unsafe fn setmaxnreg_inc<const N: u32>() {
    // SAFETY: the caller's; `N` an immediate, as the intrinsic needs.
    unsafe { crate::nvvm::setmaxnreg_inc(const { N }) }
}

/// Lowers this warp's register budget to `N` (`setmaxnreg.dec.sync.aligned.u32 N`,
/// sm_90a; `N` a multiple of 8 in 24..=256), freeing registers for other
/// warpgroups.
///
/// # Safety
/// As [`setmaxnreg_inc`] (the whole warpgroup together, in
/// warpgroup-uniform control flow), except that `N` is at most the
/// warp's current per-thread register count.
#[inline(always)]
pub unsafe fn setmaxnreg_dec<const N: u32>() {
    // SAFETY: as in `setmaxnreg_inc`.
    unsafe { crate::nvvm::setmaxnreg_dec(const { N }) }
}

/// This thread's warpgroup in the block (`thread index / 128`, x only).
#[inline(always)]
pub fn warpgroup_index() -> u32 {
    crate::thread::thread_idx_x() / 128
}

/// This thread's index in its warpgroup (0..128, x only).
#[inline(always)]
pub fn warpgroup_thread() -> u32 {
    crate::thread::thread_idx_x() % 128
}

device_asm! {
    /// `barrier.sync id, threads` unchecked.
    ///
    /// # Safety
    /// `id < 16` and `threads` a positive multiple of 32.
    unsafe fn barrier_sync(id: u32, threads: u32) = "barrier.sync {i}, {n};", [i = in(reg32) id, n = in(reg32) threads,];

    /// `barrier.arrive id, threads` unchecked.
    ///
    /// # Safety
    /// As [`barrier_sync`].
    unsafe fn barrier_arrive(id: u32, threads: u32) = "barrier.arrive {i}, {n};", [i = in(reg32) id, n = in(reg32) threads,];
}

/// Traps (panics) unless `id` names one of the block's barriers 1..16 and
/// `threads` is a positive multiple of the warp size, the operands the PTX
/// ISA allows for `barrier.sync` / `barrier.arrive` with a thread count.
/// Barrier 0 is [`sync_threads`](crate::thread::sync_threads)', with every
/// thread of the block and no count: the PTX ISA does not define a barrier
/// that some threads reach with a count and others without.
#[inline(always)]
#[track_caller]
fn check_named_barrier(id: u32, threads: u32) {
    if id == 0 || id >= 16 {
        panic!("named barrier id out of range: use 1..16 (0 is sync_threads')");
    }
    if threads == 0 || !threads.is_multiple_of(crate::thread::WARP_SIZE) {
        panic!("named barrier thread count must be a positive multiple of 32");
    }
}

/// Waits at named barrier `id` until `threads` threads have arrived at it
/// (`barrier.sync id, threads`), and orders the memory accesses of those
/// threads before it against those after it. Lets a subset of the block,
/// such as the consumer warpgroups, synchronize. `id` is one of the block's
/// barriers 1..16 (0 is [`sync_threads`](crate::thread::sync_threads)'s,
/// with every thread of the block), `threads` a positive multiple of 32;
/// other values trap (panic).
///
/// ```no_run
/// // The 128 threads of warpgroup 1 (barrier 1), apart from the rest of the block.
/// if nvshmem_device::wgmma::warpgroup_index() == 1 {
///     nvshmem_device::wgmma::named_barrier_sync(1, 128);
/// }
/// ```
///
/// # Divergent calls hang; they are not undefined behaviour
/// This is PTX's `barrier.sync`, not `bar.sync` (`barrier.sync.aligned`),
/// for the reason [`sync_threads`](crate::thread::sync_threads) gives: the
/// `.aligned` form makes it undefined behaviour when the threads of a warp
/// do not all execute the same barrier instruction, which a safe function
/// cannot rule out. Without `.aligned` the barrier counts threads (a warp at
/// a time: a thread waits for its warp's other non-exited threads), wherever
/// they arrive from. A count that is never reached hangs the kernel; that is
/// no undefined behaviour, so the function is safe.
#[inline(always)]
#[track_caller]
pub fn named_barrier_sync(id: u32, threads: u32) {
    check_named_barrier(id, threads);
    // SAFETY: `id` and `threads` checked above; a non-aligned barrier, which
    // divergent callers only hang (see above).
    unsafe { barrier_sync(id, threads) }
}

/// Arrives at named barrier `id` without waiting (`barrier.arrive id,
/// threads`): a producer's signal to the threads that wait there with
/// [`named_barrier_sync`] (same `id` and `threads`, which count the
/// arriving threads too). `id` and `threads` as [`named_barrier_sync`]
/// checks them (other values trap), and safe for the same reason: the
/// non-aligned form, whose misuse only hangs the waiters.
#[inline(always)]
#[track_caller]
pub fn named_barrier_arrive(id: u32, threads: u32) {
    check_named_barrier(id, threads);
    // SAFETY: as in `named_barrier_sync`.
    unsafe { barrier_arrive(id, threads) }
}
