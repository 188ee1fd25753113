//! Kernels that use NVLink SHARP (`mc_ptr` and the `multimem` instructions)
//! for ptxas to check (`multimem_kernels_pass_ptxas` in the builder tests),
//! sm_90 and later.
//! **Nothing launches them**: this project keeps NVLS off
//! (`NVSHMEM_DISABLE_NVLS=1`), and `mc_ptr` returns `None` then anyway.
#![no_std]
// Nothing launches these kernels (see above).
#![allow(clippy::missing_safety_doc)]

use nvshmem_device::half::{bf16, f16};
use nvshmem_device::thread::{global_index_x, global_stride_x};
use nvshmem_device::*;

nvshmem_device::panic_handler!();

/// One-shot all-reduce of `n` floats over NVLS, 16 bytes per thread and step
/// (`multimem.ld_reduce.v4.f32` + `multimem.st.v4.f32`), and the other
/// multimem forms once each. **Never launched by the tests** (this project
/// keeps NVLS off): it is here so that ptxas checks the instructions.
/// `out[0]` = 1 if it ran the NVLS path.
#[kernel]
pub unsafe fn nvls_allreduce_f32(data: SymPtr<f32>, n: u64, out: *mut u32) {
    let Some(mc) = mc_ptr(Team::WORLD, data) else {
        return;
    };
    let v4 = mc.cast::<[f32; 4]>();
    let mut i = global_index_x();
    while i < n as usize / 4 {
        unsafe {
            let m = v4.add(i);
            multimem_st(m, multimem_ld_reduce(Sum, m));
        }
        i += global_stride_x();
    }
    if global_index_x() == 0 {
        unsafe {
            let (h, b) = (mc.cast::<[f16; 2]>(), mc.cast::<[bf16; 2]>());
            multimem_st(h, multimem_ld_reduce(Max, h));
            multimem_red(Sum, b, multimem_ld_reduce(Min, b));
            let h4 = mc.cast::<[[f16; 2]; 4]>();
            multimem_st(h4, multimem_ld_reduce(Sum, h4));
            let b4 = mc.cast::<[[bf16; 2]; 4]>();
            multimem_st(b4, multimem_ld_reduce(Max, b4));
            multimem_red(Sum, mc, 1.0);
            let d = mc.cast::<f64>();
            multimem_st(d, multimem_ld_reduce(Sum, d));
            multimem_red(Sum, d, 2.0);
            let (u, s) = (mc.cast::<u32>(), mc.cast::<i32>());
            multimem_red(Sum, u, multimem_ld_reduce(Xor, u));
            multimem_red(Or, u, multimem_ld_reduce(Max, s) as u32);
            multimem_red(Min, s, multimem_ld_reduce(Sum, s));
            let (u, s) = (mc.cast::<u64>(), mc.cast::<i64>());
            multimem_red(And, u, multimem_ld_reduce(Sum, u));
            multimem_red(Max, s, multimem_ld_reduce(Min, s));
            multimem_st(u, multimem_ld_reduce(Or, u));
            *out = 1;
        }
    }
}

/// Every multimem form the device crate has, once: `multimem_st` of each
/// type, `multimem_ld_reduce` with each of its operators, `multimem_red`
/// likewise. **Never launched** (NVLS stays off here): ptxas checks them.
///
#[kernel]
pub unsafe fn nvls_every_form(data: SymPtr<u64>, i: u64) {
    let Some(mc) = mc_ptr(Team::WORLD, data) else {
        return;
    };
    let mc = unsafe { mc.add(i as usize) };
    macro_rules! forms {
        ($($t:ty: ld_reduce [$($o:ident)*] red [$($r:ident)*];)*) => {$(
            let m = mc.cast::<$t>();
            unsafe {
                $( multimem_st(m, multimem_ld_reduce($o, m)); )*
                $( multimem_red($r, m, multimem_ld_reduce($r, m)); )*
            }
        )*};
    }
    forms! {
        f32: ld_reduce [Sum] red [Sum];
        [f32; 4]: ld_reduce [Sum] red [];
        f64: ld_reduce [Sum] red [Sum];
        [f16; 2]: ld_reduce [Sum Min Max] red [Sum];
        [bf16; 2]: ld_reduce [Sum Min Max] red [Sum];
        [[f16; 2]; 4]: ld_reduce [Sum Min Max] red [];
        [[bf16; 2]; 4]: ld_reduce [Sum Min Max] red [];
        u32: ld_reduce [Sum Min Max And Or Xor] red [Sum Min Max And Or Xor];
        i32: ld_reduce [Sum Min Max] red [Sum Min Max];
        u64: ld_reduce [Sum Min Max And Or Xor] red [Sum Min Max And Or Xor];
        i64: ld_reduce [Min Max] red [Min Max];
    }
}
