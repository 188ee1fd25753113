//! Coverage kernels: together they call every public device function of
//! `nvshmem-device`'s typed layer (every scope, blocking and `_nbi`, every AMO,
//! every wait/test form, signals, `ptr`, strided RMA), for every element type
//! of each trait, including the `f16`/`bf16` paths.
//!
//! The builder links this crate with NVSHMEM's bitcode for each supported
//! version and architecture and checks that ptxas accepts it, that every
//! kernel is an `.entry`, and that no unresolved `.extern .func` remains.
//! The kernels are never launched; their arguments only have to be opaque
//! to the optimizer.
#![no_std]
// Never launched: the kernels have no contract to document.
#![allow(clippy::missing_safety_doc)]

use nvshmem_device::half::{bf16, f16};
use nvshmem_device::*;

nvshmem_device::panic_handler!();

/// The PE every operation targets: the next one around the ring.
#[inline(always)]
fn peer() -> Pe {
    my_pe().ring_next(n_pes())
}

include!("../../every_scope.rs");

/// Every put, get, strided put and get, and put-with-signal, blocking and
/// `_nbi`, in every scope: the typed forms, or with `pod` the byte-wise ones
/// (`put_pod`, `put_pod_nbi_warp`, ...).
macro_rules! rma_calls {
    ($dest:ident, $local:ident, $sig:ident, $n:ident, $pe:ident $(, $pod:ident)?) => { pastey::paste! {
        every_scope! {
            [<put $(_ $pod)?>]($dest, $local, $n, $pe);
            [<put $(_ $pod)? _nbi>]($dest, $local, $n, $pe);
            [<get $(_ $pod)?>]($local, $dest, $n, $pe);
            [<get $(_ $pod)? _nbi>]($local, $dest, $n, $pe);
            [<iput $(_ $pod)?>]($dest, $local, 2, 1, $n, $pe);
            [<iget $(_ $pod)?>]($local, $dest, 1, 2, $n, $pe);
            [<put_signal $(_ $pod)?>]($dest, $local, $n, $sig, 1, SignalOp::Set, $pe);
            [<put_signal $(_ $pod)? _nbi>]($dest, $local, $n, $sig, 1, SignalOp::Add, $pe);
        }
    } };
}

/// Every RMA function for one element type, in every scope.
#[inline(always)]
unsafe fn rma_all<T: RmaElement>(dest: SymPtr<T>, local: *mut T, sig: SymPtr<u64>, n: usize) {
    let pe = peer();
    unsafe {
        let v = g(dest, pe);
        p(dest, v, pe);
        rma_calls!(dest, local, sig, n, pe);
    }
    quiet();
}

macro_rules! rma_kernels {
    ($($t:ty => $name:ident),* $(,)?) => {$(
        #[kernel]
        pub unsafe fn $name(dest: SymPtr<$t>, local: *mut $t, sig: SymPtr<u64>, n: usize) {
            unsafe { rma_all::<$t>(dest, local, sig, n) }
        }
    )*};
}

rma_kernels! {
    i8 => rma_i8, i16 => rma_i16, i32 => rma_i32, i64 => rma_i64,
    u8 => rma_u8, u16 => rma_u16, u32 => rma_u32, u64 => rma_u64,
    usize => rma_usize, isize => rma_isize,
    f32 => rma_f32, f64 => rma_f64, f16 => rma_f16, bf16 => rma_bf16,
}

/// A plain-data type that is no RMA element.
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[bytemuck(crate = "nvshmem_device::bytemuck")]
#[repr(C)]
pub struct Particle {
    pos: [f32; 3],
    id: u32,
}

/// The byte-wise (`putmem`/`getmem`) family, every scope; `Particle` is 16
/// bytes, so the strided ones are `iput128`/`iget128`.
#[kernel]
pub unsafe fn rma_pod(dest: SymPtr<Particle>, local: *mut Particle, sig: SymPtr<u64>, n: usize) {
    let pe = peer();
    unsafe {
        rma_calls!(dest, local, sig, n, pe, pod);
    }
    quiet();
}

/// fetch / set / swap.
#[inline(always)]
unsafe fn amo_basic<T: AmoElement>(x: SymPtr<T>, v: T, out: *mut T) {
    let pe = peer();
    unsafe {
        atomic_set(x, v, pe);
        *out = atomic_fetch(x, pe);
        *out.add(1) = atomic_swap(x, v, pe);
    }
}

/// add / fetch_add.
#[inline(always)]
unsafe fn amo_add<T: FetchAddAmoElement>(x: SymPtr<T>, v: T, out: *mut T) {
    let pe = peer();
    unsafe {
        atomic_add(x, v, pe);
        *out.add(2) = atomic_fetch_add(x, v, pe);
    }
}

/// compare_swap / fetch_inc / inc, on top of the above.
#[inline(always)]
unsafe fn amo_standard<T: StandardAmoElement>(x: SymPtr<T>, v: T, out: *mut T) {
    let pe = peer();
    unsafe {
        amo_basic(x, v, out);
        amo_add(x, v, out);
        *out.add(3) = atomic_compare_swap(x, v, v, pe);
        *out.add(4) = atomic_fetch_inc(x, pe);
        atomic_inc(x, pe);
    }
}

/// and / or / xor, fetching and not, on top of the above.
#[inline(always)]
unsafe fn amo_bitwise<T: BitwiseAmoElement>(x: SymPtr<T>, v: T, out: *mut T) {
    let pe = peer();
    unsafe {
        amo_standard(x, v, out);
        *out.add(5) = atomic_fetch_and(x, v, pe);
        *out.add(6) = atomic_fetch_or(x, v, pe);
        *out.add(7) = atomic_fetch_xor(x, v, pe);
        atomic_and(x, v, pe);
        atomic_or(x, v, pe);
        atomic_xor(x, v, pe);
    }
}

macro_rules! amo_kernels {
    ($($helper:ident: $($t:ty => $name:ident),*;)*) => {$($(
        #[kernel]
        pub unsafe fn $name(x: SymPtr<$t>, v: $t, out: *mut $t) {
            unsafe { $helper::<$t>(x, v, out) }
        }
    )*)*};
}

amo_kernels! {
    amo_bitwise: i32 => amo_i32, i64 => amo_i64, u32 => amo_u32, u64 => amo_u64;
    amo_bitwise: usize => amo_usize, isize => amo_isize;
    amo_basic: f32 => amo_f32, f64 => amo_f64;
}

nvshmem_device::with_nvshmem_3_7! {
    /// NVSHMEM 3.7's floating-point adds.
    #[kernel]
    pub unsafe fn amo_float_add_3_7(
        x32: SymPtr<f32>, x64: SymPtr<f64>, x16: SymPtr<f16>, v: f32, out32: *mut f32, out64: *mut f64,
    ) {
        unsafe {
            amo_add(x32, v, out32);
            amo_add(x64, v as f64, out64);
            atomic_add(x16, f16::from_f32(v), peer());
        }
    }

    /// NVSHMEM 3.7's flush, every scope.
    #[kernel]
    pub unsafe fn flush_3_7() {
        flush();
        // SAFETY: every thread of the block calls them.
        unsafe {
            flush_warp();
            flush_block();
        }
    }
}

nvshmem_device::with_nvshmem_3_5! {
    /// NVSHMEM 3.5's queue-pair RMA (raw), in each scope.
    #[kernel]
    pub unsafe fn qp_3_5(sig: SymPtr<u64>, dest: SymPtr<f32>, local: *mut f32, n: usize, qp: i32, out: *mut i32) {
        let pe = peer();
        unsafe {
            let (d, c) = (dest.as_ptr(), pe.to_c());
            ffi::nvshmemx_qp_float_p(d, 1.0, c, qp);
            *out = ffi::nvshmemx_qp_int_g(dest.cast::<i32>().as_ptr(), c, qp);
            ffi::nvshmemx_qp_float_put_nbi(d, local, n, c, qp);
            ffi::nvshmemx_qp_float_get_warp(local, d, n, c, qp);
            ffi::nvshmemx_qp_float_put_signal_nbi_block(d, local, n, sig.as_ptr(), 1, 0, c, qp);
            ffi::nvshmemx_qp_signal_op(sig.as_ptr(), 1, 1, c, qp);
            ffi::nvshmemx_qp_quiet(c, &qp, 1);
            ffi::nvshmemx_qp_fence_block(c, &qp, 1);
        }
    }
}

nvshmem_device::with_nvshmem_3_8! {
    /// NVSHMEM 3.8's shared-memory lease, RMA regions and counted-signal reset.
    #[kernel]
    pub unsafe fn extensions_3_8(smem: *mut u8, sig: SymPtr<u64>, out: *mut i32) {
        unsafe {
            // SAFETY (the block-scope calls): every thread of the block calls them.
            give_smem(smem, ask_smem(SmemAmount::Minimum));
            if let Ok(region) = region_start_block(&RegionAttrs::new(REGION_HINT_BATCH_RMA)) {
                *out = region_is_active(REGION_HINT_BATCH_RMA).unwrap_or(false) as i32;
                *out.add(1) = region_stop_block(region).err().unwrap_or(0);
            }
            release_smem();
            signal_counted_reset(sig);
        }
    }
}

/// Every wait and test form for one element type.
#[inline(always)]
unsafe fn wait_all<T: WaitElement>(
    ivars: SymPtr<T>,
    values: *const T,
    status: *const i32,
    out: *mut usize,
) {
    let n = 4;
    let values = unsafe { core::slice::from_raw_parts(values, n) };
    let status = Some(unsafe { core::slice::from_raw_parts(status, n) });
    let mut idx = [0usize; 4];
    let v = values[0];
    unsafe {
        wait_until(ivars, Cmp::Eq, v);
        wait_until_all(ivars, n, None, Cmp::Ne, v);
        *out = wait_until_any(ivars, n, status, Cmp::Gt, v).unwrap_or(usize::MAX);
        *out.add(1) = wait_until_some(ivars, n, &mut idx, None, Cmp::Ge, v);
        wait_until_all_vector(ivars, n, status, Cmp::Le, values);
        *out.add(2) = wait_until_any_vector(ivars, n, None, Cmp::Lt, values).unwrap_or(usize::MAX);
        *out.add(3) = wait_until_some_vector(ivars, n, &mut idx, status, Cmp::Eq, values);

        *out.add(4) = test(ivars, Cmp::Eq, v) as usize;
        *out.add(5) = test_all(ivars, n, status, Cmp::Ne, v) as usize;
        *out.add(6) = test_any(ivars, n, None, Cmp::Gt, v).unwrap_or(usize::MAX);
        *out.add(7) = test_some(ivars, n, &mut idx, status, Cmp::Ge, v);
        *out.add(8) = test_all_vector(ivars, n, None, Cmp::Le, values) as usize;
        *out.add(9) = test_any_vector(ivars, n, status, Cmp::Lt, values).unwrap_or(usize::MAX);
        *out.add(10) = test_some_vector(ivars, n, &mut idx, None, Cmp::Eq, values);
        *out.add(11) = idx[0];
    }
}

macro_rules! wait_kernels {
    ($($t:ty => $name:ident),* $(,)?) => {$(
        #[kernel]
        pub unsafe fn $name(
            ivars: SymPtr<$t>, values: *const $t, status: *const i32, out: *mut usize,
        ) {
            unsafe { wait_all::<$t>(ivars, values, status, out) }
        }
    )*};
}

wait_kernels! {
    i16 => wait_i16, u16 => wait_u16, i32 => wait_i32, i64 => wait_i64,
    u32 => wait_u32, u64 => wait_u64, usize => wait_usize, isize => wait_isize,
}

/// Signals, ordering, PE queries and `ptr`.
#[kernel]
pub unsafe fn signals_and_order(sig: SymPtr<u64>, data: SymPtr<u32>, out: *mut u64) {
    let pe = peer();
    unsafe {
        signal_op(sig, 1, SignalOp::Add, pe);
        signal_op(sig, 2, SignalOp::Set, pe);
        fence();
        quiet();
        *out = signal_fetch(sig);
        *out.add(1) = signal_wait_until(sig, Cmp::Ge, 1);
        *out.add(2) = my_pe().index() as u64 + n_pes() as u64;
        if let Some(direct) = ptr(data, pe) {
            *direct.as_ptr() += 1;
        }
    }
}

/// The job-wide barriers, every scope (a cooperative launch would be needed
/// to run it).
#[kernel]
pub unsafe fn barriers() {
    barrier_all();
    sync_all();
    // SAFETY: every thread of the block calls them.
    unsafe {
        barrier_all_warp();
        barrier_all_block();
        sync_all_warp();
        sync_all_block();
    }
}

/// The library's queries, and `global_exit` (when `out[0]` says so).
#[kernel]
pub unsafe fn library(out: *mut i32) {
    let (major, minor) = info_get_version();
    let v = vendor_version();
    let name = info_get_name();
    unsafe {
        if *out == 12345 {
            global_exit(3);
        }
        *out = major * 100 + minor + (v.major * 10_000 + v.minor * 100 + v.patch) as i32;
        *out.add(1) = name[0] as i32;
    }
}

/// The panic path: `report_and_trap` through vprintf.
#[kernel]
pub unsafe fn panics(n: usize) {
    if n > 3 {
        panic!("coverage: n > 3");
    }
}

/// A PE and array lengths from the host, which the optimizer cannot prove in
/// range: with `debug-checks` this keeps the checks (and their vprintf/trap
/// path) in the PTX.
#[kernel]
pub unsafe fn unchecked_inputs(
    dest: SymPtr<i32>,
    pe: u32,
    ivars: SymPtr<u64>,
    nelems: usize,
    status: *const i32,
    status_len: usize,
) {
    let status = unsafe { core::slice::from_raw_parts(status, status_len) };
    unsafe {
        p(dest, 1, Pe::new(pe));
        wait_until_all(ivars, nelems, Some(status), Cmp::Eq, 1);
    }
}
