//! `ldmatrix` loads of 8 × 8 matrices of 16-bit elements, the shared-memory
//! matrix views of [`SmemMatrix`] and the fragment loads built on them.

use super::{Element, FragA, FragB, M16N8K8, M16N8K16, Operand};
use crate::__private::Sealed;
use crate::cp_async::SharedAddr;
use core::marker::PhantomData;
use half::{bf16, f16};

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
        /// lanes of the warp execute it together, in warp-uniform control
        /// flow (the instruction is `.aligned`: undefined behaviour otherwise).
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
pub trait Layout: Copy + Sealed {}

markers! {
    /// Rows are contiguous (see [`Layout`]).
    RowMajor: Layout;
    /// Columns are contiguous (see [`Layout`]).
    ColMajor: Layout;
}

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

/// The [`LoadA`]/[`LoadB`] impls: the address lane `lane` passes, and the
/// fragment's `ldmatrix` form that takes it.
macro_rules! smem_loads {
    ($($tr:ident::$f:ident for $l:ident -> $frag:ident,
        |$m:ident, $r0:ident, $c0:ident, $lane:ident| $addr:expr => $load:ident;)*) => {$(
        impl $tr for $l {
            #[inline(always)]
            unsafe fn $f<T: Half16>($m: &SmemMatrix<T, $l>, $r0: u32, $c0: u32, $lane: u32) -> $frag<T, M16N8K16> {
                let addr = $addr;
                // SAFETY: the caller's contract.
                unsafe { $frag::<T, M16N8K16>::$load(addr) }
            }
        }
    )*};
}

smem_loads! {
    // Matrices: (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15).
    LoadA::load_a for RowMajor -> FragA,
        |m, row0, k0, lane| m.addr(row0 + lane % 16, k0 + (lane / 16) * 8) => ldmatrix;
    // Stored rows are k: matrix i = lane / 8 covers rows 8(i%2).., k 8(i/2)..
    LoadA::load_a for ColMajor -> FragA,
        |m, row0, k0, lane| {
            let i = lane / 8;
            m.addr(k0 + lane % 8 + 8 * (i / 2), row0 + 8 * (i % 2))
        } => ldmatrix_trans;
    // Stored rows are n, k contiguous: matrices (k 0-7), (k 8-15).
    LoadB::load_b for ColMajor -> FragB,
        |m, k0, n0, lane| m.addr(n0 + lane % 8, k0 + 8 * ((lane / 8) % 2)) => ldmatrix;
    // Stored rows are k, n contiguous: transposed loads of (k 0-7), (k 8-15).
    LoadB::load_b for RowMajor -> FragB,
        |m, k0, n0, lane| m.addr(k0 + lane % 8 + 8 * ((lane / 8) % 2), n0) => ldmatrix_trans;
}

/// The fragment loads of one `ldmatrix` each: `Frag<Shape>::name -> Ret =
/// wrap(ldmatrix_fn);` makes `pub unsafe fn name(lane_addr) -> Ret`, which is
/// `Self::wrap` of the registers.
macro_rules! frag_ldmatrix {
    ($($(#[$doc:meta])* $frag:ident<$s:ident>::$name:ident -> $ret:ty = $wrap:ident($ld:ident);)*) => {$(
        impl<T: Half16> $frag<T, $s> {
            $(#[$doc])*
            #[inline(always)]
            pub unsafe fn $name(lane_addr: SharedAddr) -> $ret {
                // SAFETY: the caller's contract.
                Self::$wrap(unsafe { $ld(lane_addr) })
            }
        }
    )*};
}

frag_ldmatrix! {
    /// This lane's A fragment of a 16 × 16 block stored with K contiguous
    /// (row-major A), by `ldmatrix.sync.aligned.m8n8.x4.shared.b16`: lane `l`
    /// passes the address of block row `l % 16`, column `8 · (l / 16)`.
    ///
    /// # Safety
    /// As [`ldmatrix_x4`].
    FragA<M16N8K16>::ldmatrix -> Self = from_regs(ldmatrix_x4);
    /// This lane's A fragment of a 16 × 16 block stored with M contiguous
    /// (column-major A), by `ldmatrix...x4.trans`: lane `l` passes the address
    /// of stored row (k) `l % 8 + 8 · (l / 16)`, column (m) `8 · ((l / 8) % 2)`.
    ///
    /// # Safety
    /// As [`ldmatrix_x4_trans`].
    FragA<M16N8K16>::ldmatrix_trans -> Self = from_regs(ldmatrix_x4_trans);
    /// This lane's B fragment of a 16 × 8 (`K × N`) block stored with K
    /// contiguous (column-major B, i.e. `N × K` rows), by
    /// `ldmatrix.sync.aligned.m8n8.x2.shared.b16`: lane `l` (0..16) passes
    /// the address of stored row (n) `l % 8`, column (k) `8 · (l / 8)`.
    ///
    /// # Safety
    /// As [`ldmatrix_x2`].
    FragB<M16N8K16>::ldmatrix -> Self = from_regs(ldmatrix_x2);
    /// This lane's B fragment of a 16 × 8 block stored with N contiguous
    /// (row-major B), by `ldmatrix...x2.trans`: lane `l` (0..16) passes the
    /// address of stored row (k) `l`, column (n) 0.
    ///
    /// # Safety
    /// As [`ldmatrix_x2_trans`].
    FragB<M16N8K16>::ldmatrix_trans -> Self = from_regs(ldmatrix_x2_trans);
    /// Two B fragments (columns `n0..n0+8` and `n0+8..n0+16`) of a K-contiguous
    /// block in one `ldmatrix...x4`: lane `l` passes the address of stored row
    /// (n) `l % 8 + 8 · (l / 16)`, column (k) `8 · ((l / 8) % 2)`.
    ///
    /// # Safety
    /// As [`ldmatrix_x4`].
    FragB<M16N8K16>::ldmatrix_pair -> [Self; 2] = pair(ldmatrix_x4);
    /// Two B fragments (`n0..n0+8`, `n0+8..n0+16`) of an N-contiguous block in
    /// one `ldmatrix...x4.trans`: lane `l` passes the address of stored row (k)
    /// `l % 16`, column (n) `8 · (l / 16)`.
    ///
    /// # Safety
    /// As [`ldmatrix_x4_trans`].
    FragB<M16N8K16>::ldmatrix_trans_pair -> [Self; 2] = pair(ldmatrix_x4_trans);
    /// This lane's A fragment of a 16 × 8 block stored with K contiguous, by
    /// `ldmatrix...x2`: lane `l` (0..16) passes the address of row `l`.
    ///
    /// # Safety
    /// As [`ldmatrix_x2`].
    FragA<M16N8K8>::ldmatrix -> Self = from_regs(ldmatrix_x2);
    /// This lane's B fragment of an 8 × 8 block stored with K contiguous, by
    /// `ldmatrix...x1`: lane `l` (0..8) passes the address of stored row (n) `l`.
    ///
    /// # Safety
    /// As [`ldmatrix_x1`].
    FragB<M16N8K8>::ldmatrix -> Self = from_regs(ldmatrix_x1);
}

impl<T: Half16> FragA<T, M16N8K16> {
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
    /// The two fragments of an `ldmatrix...x4`: registers 0-1 and 2-3.
    #[inline(always)]
    fn pair(r: [u32; 4]) -> [Self; 2] {
        [Self::from_regs([r[0], r[1]]), Self::from_regs([r[2], r[3]])]
    }
}
