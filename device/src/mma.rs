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
//! let d = mma(a, b, c);            // bf16 × bf16 + f32
//! // let e = mma(a, b, FragC::<nvshmem_device::half::f16, M16N8K16>::zero()); // does not compile
//! ```
//!
//! Every `mma.sync`/`ldmatrix` is `.aligned`: all 32 lanes of the warp must
//! execute it together (warp-uniform control flow), as in CUDA.
//!
//! # Fragment layouts (lane `l`, `g = l / 4`, `t = l % 4`)
//! The `coord` functions ([`FragA::coord`], [`FragB::coord`], [`FragC::coord`])
//! give the matrix position of each element a lane holds, and `from_fn` /
//! [`FragC::for_each`] build or read a fragment through them. For m16n8k16 with
//! 16-bit elements: A element `j` (0..8) is at row `g + 8·(j/2 % 2)`, column
//! `2t + j%2 + 8·(j/4)`; B element `j` (0..4) at `k = 2t + j%2 + 8·(j/2)`,
//! `n = g`; C element `j` (0..4) at row `g + 8·(j/2)`, column `2t + j%2`.
//! Two 16-bit elements share a register, the lower index in the low half.

use crate::cp_async::SharedAddr;
use core::marker::PhantomData;
use half::{bf16, f16};

/// The m16n8k16 shape: A is 16 × 16, B 16 × 8, C and D 16 × 8.
#[derive(Clone, Copy, Debug, Default)]
pub struct M16N8K16;
/// The m16n8k8 shape: A is 16 × 8, B 8 × 8, C and D 16 × 8.
#[derive(Clone, Copy, Debug, Default)]
pub struct M16N8K8;

/// An `mma.sync` shape (sealed).
pub trait Shape: Copy + crate::__private::Sealed {
    /// Rows of A, C and D.
    const M: usize;
    /// Columns of B, C and D.
    const N: usize;
    /// Columns of A, rows of B.
    const K: usize;
}
impl crate::__private::Sealed for M16N8K16 {}
impl crate::__private::Sealed for M16N8K8 {}
impl Shape for M16N8K16 {
    const M: usize = 16;
    const N: usize = 8;
    const K: usize = 16;
}
impl Shape for M16N8K8 {
    const M: usize = 16;
    const N: usize = 8;
    const K: usize = 8;
}

/// TensorFloat-32: an `f32` whose low 13 mantissa bits the tensor cores
/// ignore. [`Tf32::round`] rounds to nearest (`cvt.rna.tf32.f32`); a plain
/// `Tf32(x)` truncates.
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd)]
#[repr(transparent)]
pub struct Tf32(pub f32);
impl crate::__private::Sealed for Tf32 {}

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
pub trait Element: Copy + crate::__private::Sealed {
    /// Bits per element: 16 or 32.
    const BITS: u32;
    /// The element's bits, in the low `BITS` bits.
    fn to_bits32(self) -> u32;
    /// The element from the low `BITS` bits.
    fn from_bits32(bits: u32) -> Self;
}
impl Element for bf16 {
    const BITS: u32 = 16;
    fn to_bits32(self) -> u32 {
        self.to_bits() as u32
    }
    fn from_bits32(bits: u32) -> Self {
        bf16::from_bits(bits as u16)
    }
}
impl Element for f16 {
    const BITS: u32 = 16;
    fn to_bits32(self) -> u32 {
        self.to_bits() as u32
    }
    fn from_bits32(bits: u32) -> Self {
        f16::from_bits(bits as u16)
    }
}
impl Element for Tf32 {
    const BITS: u32 = 32;
    fn to_bits32(self) -> u32 {
        self.0.to_bits()
    }
    fn from_bits32(bits: u32) -> Self {
        Tf32(f32::from_bits(bits))
    }
}
impl Element for f32 {
    const BITS: u32 = 32;
    fn to_bits32(self) -> u32 {
        self.to_bits()
    }
    fn from_bits32(bits: u32) -> Self {
        f32::from_bits(bits)
    }
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

/// Elements per lane of a fragment of `regs` registers of `T`.
const fn elems<T: Element>(regs: usize) -> usize {
    regs * 32 / T::BITS as usize
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

impl<T: Operand<S>, S: Shape> FragA<T, S> {
    /// Elements per lane.
    pub const ELEMS: usize = S::M * S::K / 32;
    /// A fragment from its raw registers.
    #[inline(always)]
    pub const fn from_regs(regs: T::ARegs) -> Self {
        FragA {
            regs,
            _shape: PhantomData,
        }
    }
    /// All zeros.
    #[inline(always)]
    pub const fn zero() -> Self {
        Self::from_regs(T::A_ZERO)
    }
    /// `(row, k)` in A of element `j` of lane `lane`'s fragment.
    #[inline(always)]
    pub fn coord(lane: u32, j: usize) -> (usize, usize) {
        T::a_coord(lane, j)
    }
    /// Lane `lane`'s fragment of the matrix `a(row, k)`.
    #[inline(always)]
    pub fn from_fn(lane: u32, mut a: impl FnMut(usize, usize) -> T) -> Self {
        let mut f = Self::zero();
        for j in 0..elems::<T>(f.regs.as_ref().len()) {
            let (r, k) = T::a_coord(lane, j);
            pack(f.regs.as_mut(), j, a(r, k));
        }
        f
    }
    /// Element `j` (0..[`ELEMS`](Self::ELEMS)).
    #[inline(always)]
    pub fn get(&self, j: usize) -> T {
        unpack(self.regs.as_ref(), j)
    }
}

impl<T: Operand<S>, S: Shape> FragB<T, S> {
    /// Elements per lane.
    pub const ELEMS: usize = S::K * S::N / 32;
    /// A fragment from its raw registers.
    #[inline(always)]
    pub const fn from_regs(regs: T::BRegs) -> Self {
        FragB {
            regs,
            _shape: PhantomData,
        }
    }
    /// All zeros.
    #[inline(always)]
    pub const fn zero() -> Self {
        Self::from_regs(T::B_ZERO)
    }
    /// `(k, n)` in B of element `j` of lane `lane`'s fragment.
    #[inline(always)]
    pub fn coord(lane: u32, j: usize) -> (usize, usize) {
        T::b_coord(lane, j)
    }
    /// Lane `lane`'s fragment of the matrix `b(k, n)`.
    #[inline(always)]
    pub fn from_fn(lane: u32, mut b: impl FnMut(usize, usize) -> T) -> Self {
        let mut f = Self::zero();
        for j in 0..elems::<T>(f.regs.as_ref().len()) {
            let (k, n) = T::b_coord(lane, j);
            pack(f.regs.as_mut(), j, b(k, n));
        }
        f
    }
    /// Element `j` (0..[`ELEMS`](Self::ELEMS)).
    #[inline(always)]
    pub fn get(&self, j: usize) -> T {
        unpack(self.regs.as_ref(), j)
    }
}

impl<T: Accumulator<S>, S: Shape> FragC<T, S> {
    /// Elements per lane (4).
    pub const ELEMS: usize = S::M * S::N / 32;
    /// A fragment from its raw registers.
    #[inline(always)]
    pub const fn from_regs(regs: T::CRegs) -> Self {
        FragC {
            regs,
            _shape: PhantomData,
        }
    }
    /// All zeros.
    #[inline(always)]
    pub const fn zero() -> Self {
        Self::from_regs(T::C_ZERO)
    }
    /// `(row, col)` in C of element `j` of lane `lane`'s fragment.
    #[inline(always)]
    pub const fn coord(lane: u32, j: usize) -> (usize, usize) {
        c_coord(lane, j)
    }
    /// Lane `lane`'s fragment of the matrix `c(row, col)`.
    #[inline(always)]
    pub fn from_fn(lane: u32, mut c: impl FnMut(usize, usize) -> T) -> Self {
        let mut f = Self::zero();
        for j in 0..Self::ELEMS {
            let (r, col) = c_coord(lane, j);
            pack(f.regs.as_mut(), j, c(r, col));
        }
        f
    }
    /// Element `j` (0..4).
    #[inline(always)]
    pub fn get(&self, j: usize) -> T {
        unpack(self.regs.as_ref(), j)
    }
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
    fn mma(a: FragA<Self, S>, b: FragB<Self, S>, c: FragC<C, S>) -> FragC<C, S>;
}

/// `D = A · B + C` on the warp's tensor cores: one `mma.sync.aligned` of
/// shape `S` (the PTX instruction of the module table). Compiles only for the
/// supported (shape, A/B type, C type) combinations. All 32 lanes must call it
/// together.
#[inline(always)]
pub fn mma<T: MmaSync<S, C>, C: Accumulator<S>, S: Shape>(
    a: FragA<T, S>,
    b: FragB<T, S>,
    c: FragC<C, S>,
) -> FragC<C, S> {
    T::mma(a, b, c)
}

/// Emits one `mma.sync`: `$d`, `$a`, `$b` are the register index lists; D is
/// also C (in/out registers).
macro_rules! mma_impls {
    ($($t:ty, $c:ty, $s:ty: $ptx:literal, d [$($d:literal)*], a [$($a:literal)*], b [$($b:literal)*], $tmpl:literal;)*) => {$(
        impl MmaSync<$s, $c> for $t {
            #[inline(always)]
            fn mma(a: FragA<$t, $s>, b: FragB<$t, $s>, c: FragC<$c, $s>) -> FragC<$c, $s> {
                #[cfg(target_arch = "nvptx64")]
                {
                    let mut d = c.regs;
                    // SAFETY: register-only; the caller's warp is converged.
                    unsafe {
                        core::arch::asm!(
                            concat!($ptx, " ", $tmpl, ";"),
                            $(inout(reg32) d[$d],)*
                            $(in(reg32) a.regs[$a],)*
                            $(in(reg32) b.regs[$b],)*
                            options(pure, nomem, nostack)
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

// ---------------------------------------------------------------------------
// ldmatrix

macro_rules! ldmatrix_fns {
    ($($(#[$doc:meta])* $name:ident: $ptx:literal, $n:literal [$($r:literal)*], $tmpl:literal;)*) => {$(
        $(#[$doc])*
        ///
        /// Each lane passes the address of one 16-byte row (8 × 16 bits) of
        /// one 8 × 8 matrix: lanes `8i..8i+8` give matrix `i`'s rows 0..8
        /// (for `.x1`/`.x2` only lanes 0..8 / 0..16 are read). Register `i`
        /// of lane `l` then holds row `l/4`, elements `2(l%4)` and `+1` of
        /// matrix `i` (with `.trans`: column `l/4`, rows `2(l%4)` and `+1`).
        ///
        /// # Safety
        /// The addresses must be 16-byte aligned rows of this block's shared
        /// memory, written before (and not written during) the load; all 32
        /// lanes must execute it together.
        #[inline(always)]
        pub unsafe fn $name(row_addr: SharedAddr) -> [u32; $n] {
            #[cfg(target_arch = "nvptx64")]
            {
                let mut r = [0u32; $n];
                // SAFETY: the caller's contract.
                unsafe {
                    core::arch::asm!(
                        concat!($ptx, " ", $tmpl, ";"),
                        $(out(reg32) r[$r],)*
                        p = in(reg32) row_addr.0,
                        options(readonly, nostack)
                    )
                };
                r
            }
            #[cfg(not(target_arch = "nvptx64"))]
            {
                let _ = row_addr;
                crate::device_only()
            }
        }
    )*};
}

ldmatrix_fns! {
    /// Loads one 8 × 8 matrix of 16-bit elements (`ldmatrix.sync.aligned.m8n8.x1.shared.b16`).
    ldmatrix_x1: "ldmatrix.sync.aligned.m8n8.x1.shared.b16", 1 [0], "{{{0}}}, [{p}]";
    /// Loads two 8 × 8 matrices of 16-bit elements (`ldmatrix.sync.aligned.m8n8.x2.shared.b16`).
    ldmatrix_x2: "ldmatrix.sync.aligned.m8n8.x2.shared.b16", 2 [0 1], "{{{0}, {1}}}, [{p}]";
    /// Loads four 8 × 8 matrices of 16-bit elements (`ldmatrix.sync.aligned.m8n8.x4.shared.b16`).
    ldmatrix_x4: "ldmatrix.sync.aligned.m8n8.x4.shared.b16", 4 [0 1 2 3], "{{{0}, {1}, {2}, {3}}}, [{p}]";
    /// Loads one 8 × 8 matrix transposed (`ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16`).
    ldmatrix_x1_trans: "ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16", 1 [0], "{{{0}}}, [{p}]";
    /// Loads two 8 × 8 matrices transposed (`ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16`).
    ldmatrix_x2_trans: "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16", 2 [0 1], "{{{0}, {1}}}, [{p}]";
    /// Loads four 8 × 8 matrices transposed (`ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16`).
    ldmatrix_x4_trans: "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16", 4 [0 1 2 3], "{{{0}, {1}, {2}, {3}}}, [{p}]";
}

/// Storage order of a matrix in shared memory, in BLAS terms: [`RowMajor`]
/// (rows contiguous) or [`ColMajor`] (columns contiguous). For A (`M × K`)
/// row-major means K is contiguous; for B (`K × N`) column-major means K is
/// contiguous (B stored as `N × K`, PyTorch's `Linear` weight layout).
pub trait Layout: Copy + crate::__private::Sealed {}
/// Rows are contiguous (see [`Layout`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct RowMajor;
/// Columns are contiguous (see [`Layout`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct ColMajor;
impl crate::__private::Sealed for RowMajor {}
impl crate::__private::Sealed for ColMajor {}
impl Layout for RowMajor {}
impl Layout for ColMajor {}

/// A matrix of 16-bit elements in shared memory, unswizzled: `base` is
/// element (0, 0), `ld` the elements between consecutive rows ([`RowMajor`])
/// or columns ([`ColMajor`]); `ld · 2` must be a multiple of 16 bytes. The
/// layout is part of the type, so the fragment loads below pick `ldmatrix`
/// or `ldmatrix.trans` at compile time.
#[derive(Clone, Copy, Debug)]
pub struct SmemMatrix<T, L: Layout> {
    /// Element (0, 0).
    pub base: SharedAddr,
    /// Leading dimension in elements.
    pub ld: u32,
    _t: PhantomData<(T, L)>,
}

impl<T: Element, L: Layout> SmemMatrix<T, L> {
    /// A view of the matrix at `base` with leading dimension `ld` (elements).
    #[inline(always)]
    pub const fn new(base: SharedAddr, ld: u32) -> Self {
        SmemMatrix {
            base,
            ld,
            _t: PhantomData,
        }
    }
    /// The address of the element at `(stored_row, stored_col)` of the
    /// storage (row `i` of a row-major matrix, column `i` of a column-major).
    #[inline(always)]
    pub fn addr(&self, stored_row: u32, stored_col: u32) -> SharedAddr {
        self.base
            .add((stored_row * self.ld + stored_col) * (T::BITS / 8))
    }
}

/// Loads of m16n8k16 A fragments from a shared-memory matrix of layout `Self`.
pub trait LoadA: Layout {
    /// The 16 × 16 block of A at `(row0, k0)`.
    ///
    /// # Safety
    /// As [`ldmatrix_x4`], for the 16 × 16 block.
    unsafe fn load_a<T: Half16>(
        m: &SmemMatrix<T, Self>,
        row0: u32,
        k0: u32,
        lane: u32,
    ) -> FragA<T, M16N8K16>;
}

/// Loads of m16n8k16 B fragments from a shared-memory matrix of layout `Self`.
pub trait LoadB: Layout {
    /// The 16 × 8 block of B at `(k0, n0)`.
    ///
    /// # Safety
    /// As [`ldmatrix_x2`], for the 16 × 8 block.
    unsafe fn load_b<T: Half16>(
        m: &SmemMatrix<T, Self>,
        k0: u32,
        n0: u32,
        lane: u32,
    ) -> FragB<T, M16N8K16>;
}

/// The 16-bit A/B element types (`bf16`, `f16`), which `ldmatrix` loads.
pub trait Half16:
    Operand<M16N8K16, ARegs = [u32; 4], BRegs = [u32; 2]>
    + Operand<M16N8K8, ARegs = [u32; 2], BRegs = [u32; 1]>
{
}
impl Half16 for bf16 {}
impl Half16 for f16 {}

impl LoadA for RowMajor {
    #[inline(always)]
    unsafe fn load_a<T: Half16>(
        m: &SmemMatrix<T, RowMajor>,
        row0: u32,
        k0: u32,
        lane: u32,
    ) -> FragA<T, M16N8K16> {
        // Matrices: (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15).
        let addr = m.addr(row0 + lane % 16, k0 + (lane / 16) * 8);
        // SAFETY: the caller's contract.
        unsafe { FragA::<T, M16N8K16>::ldmatrix(addr) }
    }
}

impl LoadA for ColMajor {
    #[inline(always)]
    unsafe fn load_a<T: Half16>(
        m: &SmemMatrix<T, ColMajor>,
        row0: u32,
        k0: u32,
        lane: u32,
    ) -> FragA<T, M16N8K16> {
        // Stored rows are k: matrix i = lane / 8 covers rows 8(i%2).., k 8(i/2)..
        let i = lane / 8;
        let addr = m.addr(k0 + lane % 8 + 8 * (i / 2), row0 + 8 * (i % 2));
        // SAFETY: the caller's contract.
        unsafe { FragA::<T, M16N8K16>::ldmatrix_trans(addr) }
    }
}

impl LoadB for ColMajor {
    #[inline(always)]
    unsafe fn load_b<T: Half16>(
        m: &SmemMatrix<T, ColMajor>,
        k0: u32,
        n0: u32,
        lane: u32,
    ) -> FragB<T, M16N8K16> {
        // Stored rows are n, k contiguous: matrices (k 0-7), (k 8-15).
        let addr = m.addr(n0 + lane % 8, k0 + 8 * ((lane / 8) % 2));
        // SAFETY: the caller's contract.
        unsafe { FragB::<T, M16N8K16>::ldmatrix(addr) }
    }
}

impl LoadB for RowMajor {
    #[inline(always)]
    unsafe fn load_b<T: Half16>(
        m: &SmemMatrix<T, RowMajor>,
        k0: u32,
        n0: u32,
        lane: u32,
    ) -> FragB<T, M16N8K16> {
        // Stored rows are k, n contiguous: transposed loads of (k 0-7), (k 8-15).
        let addr = m.addr(k0 + lane % 8 + 8 * ((lane / 8) % 2), n0);
        // SAFETY: the caller's contract.
        unsafe { FragB::<T, M16N8K16>::ldmatrix_trans(addr) }
    }
}

impl<T: Half16> FragA<T, M16N8K16> {
    /// This lane's A fragment of a 16 × 16 block stored with K contiguous
    /// (row-major A), by `ldmatrix.sync.aligned.m8n8.x4.shared.b16`: lane `l`
    /// passes the address of block row `l % 16`, column `8 · (l / 16)`.
    ///
    /// # Safety
    /// As [`ldmatrix_x4`].
    #[inline(always)]
    pub unsafe fn ldmatrix(lane_addr: SharedAddr) -> Self {
        // SAFETY: the caller's contract.
        Self::from_regs(unsafe { ldmatrix_x4(lane_addr) })
    }
    /// This lane's A fragment of a 16 × 16 block stored with M contiguous
    /// (column-major A), by `ldmatrix...x4.trans`: lane `l` passes the address
    /// of stored row (k) `l % 8 + 8 · (l / 16)`, column (m) `8 · ((l / 8) % 2)`.
    ///
    /// # Safety
    /// As [`ldmatrix_x4_trans`].
    #[inline(always)]
    pub unsafe fn ldmatrix_trans(lane_addr: SharedAddr) -> Self {
        // SAFETY: the caller's contract.
        Self::from_regs(unsafe { ldmatrix_x4_trans(lane_addr) })
    }
    /// The 16 × 16 block at `(row0, k0)` of `m`, by `ldmatrix` (row-major)
    /// or `ldmatrix.trans` (column-major) as `m`'s layout asks.
    ///
    /// # Safety
    /// As [`ldmatrix_x4`], for the block.
    #[inline(always)]
    pub unsafe fn load<L: LoadA>(m: &SmemMatrix<T, L>, row0: u32, k0: u32, lane: u32) -> Self {
        // SAFETY: the caller's contract.
        unsafe { L::load_a(m, row0, k0, lane) }
    }
}

impl<T: Half16> FragB<T, M16N8K16> {
    /// This lane's B fragment of a 16 × 8 (`K × N`) block stored with K
    /// contiguous (column-major B, i.e. `N × K` rows), by
    /// `ldmatrix.sync.aligned.m8n8.x2.shared.b16`: lane `l` (0..16) passes
    /// the address of stored row (n) `l % 8`, column (k) `8 · (l / 8)`.
    ///
    /// # Safety
    /// As [`ldmatrix_x2`].
    #[inline(always)]
    pub unsafe fn ldmatrix(lane_addr: SharedAddr) -> Self {
        // SAFETY: the caller's contract.
        Self::from_regs(unsafe { ldmatrix_x2(lane_addr) })
    }
    /// This lane's B fragment of a 16 × 8 block stored with N contiguous
    /// (row-major B), by `ldmatrix...x2.trans`: lane `l` (0..16) passes the
    /// address of stored row (k) `l`, column (n) 0.
    ///
    /// # Safety
    /// As [`ldmatrix_x2_trans`].
    #[inline(always)]
    pub unsafe fn ldmatrix_trans(lane_addr: SharedAddr) -> Self {
        // SAFETY: the caller's contract.
        Self::from_regs(unsafe { ldmatrix_x2_trans(lane_addr) })
    }
    /// Two B fragments (columns `n0..n0+8` and `n0+8..n0+16`) of a K-contiguous
    /// block in one `ldmatrix...x4`: lane `l` passes the address of stored row
    /// (n) `l % 8 + 8 · (l / 16)`, column (k) `8 · ((l / 8) % 2)`.
    ///
    /// # Safety
    /// As [`ldmatrix_x4`].
    #[inline(always)]
    pub unsafe fn ldmatrix_pair(lane_addr: SharedAddr) -> [Self; 2] {
        // SAFETY: the caller's contract.
        let r = unsafe { ldmatrix_x4(lane_addr) };
        [Self::from_regs([r[0], r[1]]), Self::from_regs([r[2], r[3]])]
    }
    /// Two B fragments (`n0..n0+8`, `n0+8..n0+16`) of an N-contiguous block in
    /// one `ldmatrix...x4.trans`: lane `l` passes the address of stored row (k)
    /// `l % 16`, column (n) `8 · (l / 16)`.
    ///
    /// # Safety
    /// As [`ldmatrix_x4_trans`].
    #[inline(always)]
    pub unsafe fn ldmatrix_trans_pair(lane_addr: SharedAddr) -> [Self; 2] {
        // SAFETY: the caller's contract.
        let r = unsafe { ldmatrix_x4_trans(lane_addr) };
        [Self::from_regs([r[0], r[1]]), Self::from_regs([r[2], r[3]])]
    }
    /// The 16 × 8 block at `(k0, n0)` of `m`, by `ldmatrix` (column-major) or
    /// `ldmatrix.trans` (row-major) as `m`'s layout asks.
    ///
    /// # Safety
    /// As [`ldmatrix_x2`], for the block.
    #[inline(always)]
    pub unsafe fn load<L: LoadB>(m: &SmemMatrix<T, L>, k0: u32, n0: u32, lane: u32) -> Self {
        // SAFETY: the caller's contract.
        unsafe { L::load_b(m, k0, n0, lane) }
    }
}

impl<T: Half16> FragA<T, M16N8K8> {
    /// This lane's A fragment of a 16 × 8 block stored with K contiguous, by
    /// `ldmatrix...x2`: lane `l` (0..16) passes the address of row `l`.
    ///
    /// # Safety
    /// As [`ldmatrix_x2`].
    #[inline(always)]
    pub unsafe fn ldmatrix(lane_addr: SharedAddr) -> Self {
        // SAFETY: the caller's contract.
        Self::from_regs(unsafe { ldmatrix_x2(lane_addr) })
    }
}

impl<T: Half16> FragB<T, M16N8K8> {
    /// This lane's B fragment of an 8 × 8 block stored with K contiguous, by
    /// `ldmatrix...x1`: lane `l` (0..8) passes the address of stored row (n) `l`.
    ///
    /// # Safety
    /// As [`ldmatrix_x1`].
    #[inline(always)]
    pub unsafe fn ldmatrix(lane_addr: SharedAddr) -> Self {
        // SAFETY: the caller's contract.
        Self::from_regs(unsafe { ldmatrix_x1(lane_addr) })
    }
}
