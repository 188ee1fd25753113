//! Warp-level tensor-core matrix multiply-accumulate (`mma.sync.aligned`,
//! sm_80+) with typed fragments, and `ldmatrix` loads that return them.
//!
//! A warp computes `D = A · B + C` on one small tile: A is `M × K`, B is
//! `K × N`, C and D are `M × N`. Each of the 32 lanes holds a few registers of
//! each operand, in the fixed layouts of the PTX ISA ("Matrix Fragments for
//! mma.m16n8k16"). The types here carry the shape and element type, so that
//! only matching operands compile:
//!
//! | shape | A × B | C, D | PTX |
//! |---|---|---|---|
//! | [`M16N8K16`] | `bf16` | `f32` | `mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32` |
//! | [`M16N8K16`] | `f16` | `f32` | `mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32` |
//! | [`M16N8K16`] | `f16` | `f16` | `mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16` |
//! | [`M16N8K8`] | `bf16` | `f32` | `mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32` |
//! | [`M16N8K8`] | `f16` | `f32` | `mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32` |
//! | [`M16N8K8`] | [`Tf32`] | `f32` | `mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32` |
//!
//! ```no_run
//! use nvshmem_device::half::bf16;
//! use nvshmem_device::mma::{FragA, FragB, FragC, M16N8K16, mma};
//! # let (a, b): (FragA<bf16, M16N8K16>, FragB<bf16, M16N8K16>) = todo!();
//! let c = FragC::<f32, M16N8K16>::zero();
//! // SAFETY: all 32 lanes of the warp run this line together.
//! let d = unsafe { mma(a, b, c) }; // bf16 × bf16 + f32
//! // let e = unsafe { mma(a, b, FragC::<nvshmem_device::half::f16, M16N8K16>::zero()) }; // does not compile
//! ```
//!
//! Every `mma.sync`/`ldmatrix` is `.aligned`: all 32 lanes of the warp must
//! execute it together (warp-uniform control flow), as in CUDA, or the
//! behaviour is undefined. So [`mma`] and the `ldmatrix` loads are `unsafe`.
//! They are inline `asm!`, which rustc does not mark `convergent` (as it
//! marks every function on this target): LLVM may in principle copy such a
//! block into the arms of a branch that splits the warp (tail duplication,
//! jump threading), which `.aligned` forbids. Keep lane-dependent branches
//! out of the code just before and after these calls; LLVM's convergent
//! NVVM intrinsics (`llvm.nvvm.mma.*`, `llvm.nvvm.ldmatrix.*`) would remove
//! the caveat.
//!
//! # Fragment layouts (lane `l`, `g = l / 4`, `t = l % 4`)
//! The `coord` functions ([`FragA::coord`], [`FragB::coord`], [`FragC::coord`])
//! give the matrix position of each element a lane holds, and `from_fn` /
//! [`FragC::for_each`] build or read a fragment through them. For m16n8k16 with
//! 16-bit elements: A element `j` (0..8) is at row `g + 8·(j/2 % 2)`, column
//! `2t + j%2 + 8·(j/4)`; B element `j` (0..4) at `k = 2t + j%2 + 8·(j/2)`,
//! `n = g`; C element `j` (0..4) at row `g + 8·(j/2)`, column `2t + j%2`.
//! Two 16-bit elements share a register, the lower index in the low half.

use crate::__private::Sealed;
use core::marker::PhantomData;
use half::{bf16, f16};

/// An `mma.sync` shape (sealed).
pub trait Shape: Copy + Sealed {
    /// Rows of A, C and D.
    const M: usize;
    /// Columns of B, C and D.
    const N: usize;
    /// Columns of A, rows of B.
    const K: usize;
}

markers! {
    /// The m16n8k16 shape: A is 16 × 16, B 16 × 8, C and D 16 × 8.
    M16N8K16: Shape { const M: usize = 16; const N: usize = 8; const K: usize = 16; };
    /// The m16n8k8 shape: A is 16 × 8, B 8 × 8, C and D 16 × 8.
    M16N8K8: Shape { const M: usize = 16; const N: usize = 8; const K: usize = 8; };
}

/// TensorFloat-32: an `f32` whose low 13 mantissa bits the tensor cores
/// ignore. [`Tf32::round`] rounds to nearest (`cvt.rna.tf32.f32`); a plain
/// `Tf32(x)` truncates.
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd)]
#[repr(transparent)]
pub struct Tf32(pub f32);
impl Sealed for Tf32 {}

impl Tf32 {
    /// `x` rounded to the nearest TF32 value, ties away from zero
    /// (`cvt.rna.tf32.f32`).
    #[inline(always)]
    pub fn round(x: f32) -> Tf32 {
        #[cfg(target_arch = "nvptx64")]
        {
            let out: u32;
            // SAFETY: a register conversion.
            unsafe {
                core::arch::asm!("cvt.rna.tf32.f32 {o}, {x};", o = out(reg32) out, x = in(reg32) x,
                    options(pure, nomem, nostack))
            };
            Tf32(f32::from_bits(out))
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            // The same rounding on the host: to nearest, ties away from zero.
            let b = x.to_bits();
            if x.is_finite() {
                Tf32(f32::from_bits(b.wrapping_add(0x1000) & !0x1fff))
            } else {
                Tf32(x)
            }
        }
    }
}

/// An element type of fragments (sealed): its bits in a 32-bit register.
pub trait Element: Copy + Sealed {
    /// Bits per element: 16 or 32.
    const BITS: u32;
    /// The element's bits, in the low `BITS` bits.
    fn to_bits32(self) -> u32;
    /// The element from the low `BITS` bits.
    fn from_bits32(bits: u32) -> Self;
}
macro_rules! elements {
    ($($t:ty: $bits:literal, |$x:ident| $to:expr, |$b:ident| $from:expr;)*) => {$(
        impl Element for $t {
            const BITS: u32 = $bits;
            fn to_bits32(self) -> u32 {
                let $x = self;
                $to
            }
            fn from_bits32($b: u32) -> Self {
                $from
            }
        }
    )*};
}
elements! {
    bf16: 16, |x| x.to_bits() as u32, |b| bf16::from_bits(b as u16);
    f16: 16, |x| x.to_bits() as u32, |b| f16::from_bits(b as u16);
    Tf32: 32, |x| x.0.to_bits(), |b| Tf32(f32::from_bits(b));
    f32: 32, |x| x.to_bits(), |b| f32::from_bits(b);
}

/// An A/B element type of shape `S` (sealed): how many 32-bit registers its
/// fragments take, and where each element sits.
pub trait Operand<S: Shape>: Element {
    /// A's registers per lane (`[u32; n]`).
    type ARegs: Copy + AsRef<[u32]> + AsMut<[u32]>;
    /// B's registers per lane (`[u32; n]`).
    type BRegs: Copy + AsRef<[u32]> + AsMut<[u32]>;
    /// All-zero A registers.
    const A_ZERO: Self::ARegs;
    /// All-zero B registers.
    const B_ZERO: Self::BRegs;
    /// `(row, k)` of A element `j` of lane `lane`.
    fn a_coord(lane: u32, j: usize) -> (usize, usize);
    /// `(k, n)` of B element `j` of lane `lane`.
    fn b_coord(lane: u32, j: usize) -> (usize, usize);
}

/// An accumulator (C, D) element type of shape `S` (sealed).
pub trait Accumulator<S: Shape>: Element {
    /// C's registers per lane.
    type CRegs: Copy + AsRef<[u32]> + AsMut<[u32]>;
    /// All-zero C registers.
    const C_ZERO: Self::CRegs;
}

/// `(row, col)` of C/D element `j` (0..4) of lane `lane`: the same for every
/// m16n8kK shape.
#[inline(always)]
pub const fn c_coord(lane: u32, j: usize) -> (usize, usize) {
    let (g, t) = ((lane / 4) as usize, (lane % 4) as usize);
    (g + 8 * (j / 2), 2 * t + j % 2)
}

macro_rules! operands {
    ($($t:ty, $s:ty: a [$na:literal], b [$nb:literal], $a:expr, $b:expr;)*) => {$(
        impl Operand<$s> for $t {
            type ARegs = [u32; $na];
            type BRegs = [u32; $nb];
            const A_ZERO: [u32; $na] = [0; $na];
            const B_ZERO: [u32; $nb] = [0; $nb];
            #[inline(always)]
            fn a_coord(lane: u32, j: usize) -> (usize, usize) {
                let (g, t) = ((lane / 4) as usize, (lane % 4) as usize);
                let f: fn(usize, usize, usize) -> (usize, usize) = $a;
                f(g, t, j)
            }
            #[inline(always)]
            fn b_coord(lane: u32, j: usize) -> (usize, usize) {
                let (g, t) = ((lane / 4) as usize, (lane % 4) as usize);
                let f: fn(usize, usize, usize) -> (usize, usize) = $b;
                f(g, t, j)
            }
        }
    )*};
}

// The layouts of the PTX ISA's "Matrix Fragments for mma.m16n8k16 / m16n8k8".
operands! {
    bf16, M16N8K16: a[4], b[2],
        |g, t, j| (g + 8 * ((j / 2) % 2), 2 * t + j % 2 + 8 * (j / 4)),
        |g, t, j| (2 * t + j % 2 + 8 * (j / 2), g);
    f16, M16N8K16: a[4], b[2],
        |g, t, j| (g + 8 * ((j / 2) % 2), 2 * t + j % 2 + 8 * (j / 4)),
        |g, t, j| (2 * t + j % 2 + 8 * (j / 2), g);
    bf16, M16N8K8: a[2], b[1],
        |g, t, j| (g + 8 * (j / 2), 2 * t + j % 2),
        |g, t, j| (2 * t + j % 2, g);
    f16, M16N8K8: a[2], b[1],
        |g, t, j| (g + 8 * (j / 2), 2 * t + j % 2),
        |g, t, j| (2 * t + j % 2, g);
    Tf32, M16N8K8: a[4], b[2],
        |g, t, j| (g + 8 * (j % 2), t + 4 * (j / 2)),
        |g, t, j| (t + 4 * j, g);
}

macro_rules! accumulators {
    ($($t:ty, $s:ty: $n:literal;)*) => {$(
        impl Accumulator<$s> for $t {
            type CRegs = [u32; $n];
            const C_ZERO: [u32; $n] = [0; $n];
        }
    )*};
}
accumulators! {
    f32, M16N8K16: 4;
    f16, M16N8K16: 2;
    f32, M16N8K8: 4;
    f16, M16N8K8: 2;
}

#[inline(always)]
fn pack<T: Element>(regs: &mut [u32], j: usize, v: T) {
    let per = (32 / T::BITS) as usize;
    let shift = (j % per) as u32 * T::BITS;
    let mask = u32::MAX >> (32 - T::BITS);
    let r = &mut regs[j / per];
    *r = (*r & !(mask << shift)) | ((v.to_bits32() & mask) << shift);
}

#[inline(always)]
fn unpack<T: Element>(regs: &[u32], j: usize) -> T {
    let per = (32 / T::BITS) as usize;
    T::from_bits32(regs[j / per] >> ((j % per) as u32 * T::BITS))
}

/// A lane's part of the A operand (`M × K`, row-major in the PTX sense: the
/// `.row` of `mma.sync...row.col`).
pub struct FragA<T: Operand<S>, S: Shape> {
    /// The raw registers, as `mma.sync` takes them.
    pub regs: T::ARegs,
    _shape: PhantomData<(T, S)>,
}

/// A lane's part of the B operand (`K × N`, the `.col` of `mma.sync...row.col`).
pub struct FragB<T: Operand<S>, S: Shape> {
    /// The raw registers, as `mma.sync` takes them.
    pub regs: T::BRegs,
    _shape: PhantomData<(T, S)>,
}

/// A lane's part of the accumulator C / result D (`M × N`).
pub struct FragC<T: Accumulator<S>, S: Shape> {
    /// The raw registers, as `mma.sync` takes them (f32 bits, or two f16).
    pub regs: T::CRegs,
    _shape: PhantomData<(T, S)>,
}

macro_rules! copy_impls {
    ($($frag:ident: $bound:ident;)*) => {$(
        impl<T: $bound<S>, S: Shape> Clone for $frag<T, S> {
            fn clone(&self) -> Self {
                *self
            }
        }
        impl<T: $bound<S>, S: Shape> Copy for $frag<T, S> {}
    )*};
}
copy_impls! { FragA: Operand; FragB: Operand; FragC: Accumulator; }

/// The methods every fragment has: `$frag<T, S>` with `T: $bound<S>`, its
/// `$regs` and `$zero` of `T`, `ELEMS = S::$r * S::$c / 32`, and `coord`
/// (`$coord_fn`, `const` or not as `[$q]` says) naming the matrix position.
macro_rules! frag_impls {
    ($($frag:ident<$bound:ident>: $regs:ident, $zero:ident, $r:ident * $c:ident,
        [$($q:tt)*] $coord:path, $m:literal($row:literal, $col:literal);)*) => {$(
        impl<T: $bound<S>, S: Shape> $frag<T, S> {
            /// Elements per lane.
            pub const ELEMS: usize = S::$r * S::$c / 32;
            /// A fragment from its raw registers.
            #[inline(always)]
            pub const fn from_regs(regs: T::$regs) -> Self {
                $frag {
                    regs,
                    _shape: PhantomData,
                }
            }
            /// All zeros.
            #[inline(always)]
            pub const fn zero() -> Self {
                Self::from_regs(T::$zero)
            }
            #[doc = concat!("`(", $row, ", ", $col, ")` in ", $m, " of element `j` of lane `lane`'s fragment.")]
            #[inline(always)]
            pub $($q)* fn coord(lane: u32, j: usize) -> (usize, usize) {
                $coord(lane, j)
            }
            #[doc = concat!("Lane `lane`'s fragment of the matrix `", $m, "(", $row, ", ", $col, ")`.")]
            #[inline(always)]
            pub fn from_fn(lane: u32, mut m: impl FnMut(usize, usize) -> T) -> Self {
                let mut f = Self::zero();
                for j in 0..Self::ELEMS {
                    let (r, c) = $coord(lane, j);
                    pack(f.regs.as_mut(), j, m(r, c));
                }
                f
            }
            /// Element `j` (0..[`ELEMS`](Self::ELEMS)).
            #[inline(always)]
            pub fn get(&self, j: usize) -> T {
                unpack(self.regs.as_ref(), j)
            }
        }
    )*};
}

frag_impls! {
    FragA<Operand>: ARegs, A_ZERO, M * K, [] T::a_coord, "a"("row", "k");
    FragB<Operand>: BRegs, B_ZERO, K * N, [] T::b_coord, "b"("k", "n");
    FragC<Accumulator>: CRegs, C_ZERO, M * N, [const] c_coord, "c"("row", "col");
}

impl<T: Accumulator<S>, S: Shape> FragC<T, S> {
    /// Calls `f(row, col, value)` for each element lane `lane` holds.
    #[inline(always)]
    pub fn for_each(&self, lane: u32, mut f: impl FnMut(usize, usize, T)) {
        for j in 0..Self::ELEMS {
            let (r, c) = c_coord(lane, j);
            f(r, c, self.get(j));
        }
    }
}

/// `D = A · B + C` for these operand and accumulator types on shape `S`
/// (sealed; implemented from the table in the module docs).
pub trait MmaSync<S: Shape, C: Accumulator<S>>: Operand<S> {
    /// One `mma.sync.aligned` (see [`mma`]).
    ///
    /// # Safety
    /// As [`mma`].
    unsafe fn mma(a: FragA<Self, S>, b: FragB<Self, S>, c: FragC<C, S>) -> FragC<C, S>;
}

/// `D = A · B + C` on the warp's tensor cores: one `mma.sync.aligned` of
/// shape `S` (the PTX instruction of the module table). Compiles only for the
/// supported (shape, A/B type, C type) combinations.
///
/// # Safety
/// Every thread (all 32 lanes) of the warp calls it together, in
/// warp-uniform control flow: the instruction is `.aligned`, and the PTX ISA
/// makes it undefined behaviour when some lanes of the warp do not execute
/// the same instruction (a branch on the lane index around it, an early
/// `return` of some lanes, a block whose size is not a multiple of 32).
#[inline(always)]
pub unsafe fn mma<T: MmaSync<S, C>, C: Accumulator<S>, S: Shape>(
    a: FragA<T, S>,
    b: FragB<T, S>,
    c: FragC<C, S>,
) -> FragC<C, S> {
    // SAFETY: the caller's contract.
    unsafe { T::mma(a, b, c) }
}

/// Emits one `mma.sync`: `$d`, `$a`, `$b` are the register index lists; D is
/// also C (in/out registers).
macro_rules! mma_impls {
    ($($t:ty, $c:ty, $s:ty: $ptx:literal, d [$($d:literal)*], a [$($a:literal)*], b [$($b:literal)*], $tmpl:literal;)*) => {$(
        impl MmaSync<$s, $c> for $t {
            #[inline(always)]
            unsafe fn mma(a: FragA<$t, $s>, b: FragB<$t, $s>, c: FragC<$c, $s>) -> FragC<$c, $s> {
                #[cfg(target_arch = "nvptx64")]
                {
                    let mut d = c.regs;
                    // SAFETY: register-only; the caller's warp runs it together
                    // (the `unsafe fn`'s contract). Not `pure`: LLVM moves pure asm
                    // like arithmetic (sinks it into a branch that needs the result),
                    // which could make a uniform call divergent.
                    unsafe {
                        core::arch::asm!(
                            concat!($ptx, " ", $tmpl, ";"),
                            $(inout(reg32) d[$d],)*
                            $(in(reg32) a.regs[$a],)*
                            $(in(reg32) b.regs[$b],)*
                            options(nomem, nostack)
                        )
                    };
                    FragC::from_regs(d)
                }
                #[cfg(not(target_arch = "nvptx64"))]
                {
                    let _ = (a, b, c);
                    crate::device_only()
                }
            }
        }
    )*};
}

mma_impls! {
    bf16, f32, M16N8K16: "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
        d[0 1 2 3], a[0 1 2 3], b[0 1],
        "{{{0}, {1}, {2}, {3}}}, {{{4}, {5}, {6}, {7}}}, {{{8}, {9}}}, {{{0}, {1}, {2}, {3}}}";
    f16, f32, M16N8K16: "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
        d[0 1 2 3], a[0 1 2 3], b[0 1],
        "{{{0}, {1}, {2}, {3}}}, {{{4}, {5}, {6}, {7}}}, {{{8}, {9}}}, {{{0}, {1}, {2}, {3}}}";
    f16, f16, M16N8K16: "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16",
        d[0 1], a[0 1 2 3], b[0 1],
        "{{{0}, {1}}}, {{{2}, {3}, {4}, {5}}}, {{{6}, {7}}}, {{{0}, {1}}}";
    bf16, f32, M16N8K8: "mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32",
        d[0 1 2 3], a[0 1], b[0],
        "{{{0}, {1}, {2}, {3}}}, {{{4}, {5}}}, {{{6}}}, {{{0}, {1}, {2}, {3}}}";
    f16, f32, M16N8K8: "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32",
        d[0 1 2 3], a[0 1], b[0],
        "{{{0}, {1}, {2}, {3}}}, {{{4}, {5}}}, {{{6}}}, {{{0}, {1}, {2}, {3}}}";
    f16, f16, M16N8K8: "mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16",
        d[0 1], a[0 1], b[0],
        "{{{0}, {1}}}, {{{2}, {3}}}, {{{4}}}, {{{0}, {1}}}";
    Tf32, f32, M16N8K8: "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
        d[0 1 2 3], a[0 1 2 3], b[0 1],
        "{{{0}, {1}, {2}, {3}}}, {{{4}, {5}, {6}, {7}}}, {{{8}, {9}}}, {{{0}, {1}, {2}, {3}}}";
}

mod ldmatrix;
pub use ldmatrix::*;
