//! Host tests of the tensor-core modules' pure logic: fragment layouts
//! (every element of a tile is held by exactly one lane and register),
//! packing, descriptor bits, TF32 rounding.

extern crate std;
use crate::cp_async::SharedAddr;
use crate::mma::{FragA, FragB, FragC, M16N8K8, M16N8K16, Tf32};
use crate::wgmma::{Accum, KMajor, M64, MatDesc, Swizzle};
use half::{bf16, f16};
use std::vec;

/// Every `(row, col)` of a `rows × cols` tile is produced exactly once.
fn covers(rows: usize, cols: usize, coords: impl Iterator<Item = (usize, usize)>) {
    let mut seen = vec![0u32; rows * cols];
    for (r, c) in coords {
        assert!(r < rows && c < cols, "({r}, {c}) outside {rows}×{cols}");
        seen[r * cols + c] += 1;
    }
    assert!(seen.iter().all(|&n| n == 1), "not a bijection: {seen:?}");
}

macro_rules! layout_tests {
    ($($name:ident: $t:ty, $s:ty, $m:literal, $n:literal, $k:literal;)*) => {$(
        #[test]
        fn $name() {
            let ea = FragA::<$t, $s>::ELEMS;
            let eb = FragB::<$t, $s>::ELEMS;
            covers($m, $k, (0..32).flat_map(|l| (0..ea).map(move |j| FragA::<$t, $s>::coord(l, j))));
            covers($k, $n, (0..32).flat_map(|l| (0..eb).map(move |j| FragB::<$t, $s>::coord(l, j))));
            covers($m, $n, (0..32).flat_map(|l| (0..4).map(move |j| FragC::<f32, $s>::coord(l, j))));
        }
    )*};
}
layout_tests! {
    layout_m16n8k16_bf16: bf16, M16N8K16, 16, 8, 16;
    layout_m16n8k16_f16: f16, M16N8K16, 16, 8, 16;
    layout_m16n8k8_bf16: bf16, M16N8K8, 16, 8, 8;
    layout_m16n8k8_tf32: Tf32, M16N8K8, 16, 8, 8;
}

#[test]
fn fragments_pack_the_lower_index_in_the_low_half() {
    // Lane 0 of m16n8k16 A: elements (0,0), (0,1) in register 0.
    let a = FragA::<bf16, M16N8K16>::from_fn(0, |r, k| bf16::from_f32((r * 16 + k) as f32));
    assert_eq!(a.regs[0] & 0xffff, bf16::from_f32(0.0).to_bits() as u32);
    assert_eq!(a.regs[0] >> 16, bf16::from_f32(1.0).to_bits() as u32);
    // Register 1 is row 8, register 2 column 8 (PTX ISA's a2..a5).
    assert_eq!(a.get(2), bf16::from_f32(128.0));
    assert_eq!(a.get(4), bf16::from_f32(8.0));
    for lane in 0..32 {
        let a = FragA::<f16, M16N8K16>::from_fn(lane, |r, k| f16::from_f32((r * 16 + k) as f32));
        for j in 0..8 {
            let (r, k) = FragA::<f16, M16N8K16>::coord(lane, j);
            assert_eq!(a.get(j).to_f32(), (r * 16 + k) as f32);
        }
        let c = FragC::<f16, M16N8K16>::from_fn(lane, |r, n| f16::from_f32((r * 8 + n) as f32));
        c.for_each(lane, |r, n, v| assert_eq!(v.to_f32(), (r * 8 + n) as f32));
        let c = FragC::<f32, M16N8K8>::from_fn(lane, |r, n| (r * 8 + n) as f32);
        assert_eq!(
            c.get(0),
            FragC::<f32, M16N8K8>::coord(lane, 0).0 as f32 * 8.0 + (2 * (lane % 4)) as f32
        );
    }
}

#[test]
fn wgmma_accumulator_layout_covers_the_tile() {
    fn check<const N: usize>()
    where
        M64<N>: crate::wgmma::WgShape,
    {
        covers(
            64,
            N,
            (0..128).flat_map(|t| (0..N / 2).map(move |i| Accum::<M64<N>>::coord(t, i))),
        );
    }
    check::<8>();
    check::<16>();
    check::<32>();
    check::<64>();
    check::<96>();
    check::<128>();
    check::<192>();
    check::<256>();
    // Thread 0: (0,0) (0,1) (8,0) (8,1) then the next 8 columns.
    let c: std::vec::Vec<_> = (0..6).map(|i| Accum::<M64<16>>::coord(0, i)).collect();
    assert_eq!(c, [(0, 0), (0, 1), (8, 0), (8, 1), (0, 8), (0, 9)]);
    // Warp 1 starts at row 16.
    assert_eq!(Accum::<M64<16>>::coord(32, 0), (16, 0));
}

#[test]
fn matrix_descriptor_bits() {
    let d = MatDesc::<bf16, KMajor>::new(SharedAddr(0x1_2340), 128, 1024, Swizzle::None);
    assert_eq!(d.raw() & 0x3fff, 0x1234);
    assert_eq!((d.raw() >> 16) & 0x3fff, 8);
    assert_eq!((d.raw() >> 32) & 0x3fff, 64);
    assert_eq!(d.raw() >> 62, 0);
    let s = MatDesc::<bf16, KMajor>::k_major_sw128(SharedAddr(0x8000));
    assert_eq!(s.raw() >> 62, 1, "128B swizzle is mode 1");
    assert_eq!((s.raw() >> 32) & 0x3fff, 64, "SBO 1024 bytes");
    assert_eq!(
        s.advance(32).raw() - s.raw(),
        2,
        "+32 bytes is +2 in the address field"
    );
}

#[test]
fn tf32_rounds_to_nearest() {
    assert_eq!(Tf32::round(1.0).0, 1.0);
    let x = f32::from_bits(0x3f80_1000); // exactly halfway: away from zero
    assert_eq!(Tf32::round(x).0.to_bits(), 0x3f80_2000);
    let y = f32::from_bits(0x3f80_0fff);
    assert_eq!(Tf32::round(y).0.to_bits(), 0x3f80_0000);
    assert!(Tf32::round(f32::NAN).0.is_nan());
}
