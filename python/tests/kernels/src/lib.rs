//! The Python package's GPU test kernels: one plain kernel on any device
//! tensor, one that reads a peer's symmetric tensor, one that needs a
//! collective launch.
#![no_std]

use nvshmem_device::thread::{block_dim_x, block_idx_x, grid_dim_x, thread_idx_x};
use nvshmem_device::{Pe, SymPtr, barrier_all, g, kernel, my_pe, n_pes};

nvshmem_device::panic_handler!();

/// `x[i] *= factor` for every `i < n` (grid-stride loop).
///
/// # Safety
/// `x` holds `n` floats on this GPU.
#[kernel]
pub unsafe fn scale(x: *mut f32, n: u32, factor: f32) {
    let mut i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    while i < n as usize {
        // SAFETY: i < n.
        unsafe { *x.add(i) *= factor };
        i += (grid_dim_x() * block_dim_x()) as usize;
    }
}

/// `out[i] = x[i]` of PE `pe` for every `i < n`, read with `nvshmem_g`.
///
/// # Safety
/// `x` is a symmetric allocation of `n` floats on every PE; `out` holds `n`
/// floats on this GPU.
#[kernel]
pub unsafe fn read_peer(x: SymPtr<f32>, out: *mut f32, n: u32, pe: Pe) {
    let mut i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    while i < n as usize {
        // SAFETY: i < n on every PE.
        unsafe { *out.add(i) = g(x.add(i), pe) };
        i += (grid_dim_x() * block_dim_x()) as usize;
    }
}

/// A barrier over every PE, then `out[0]` = `x[0]` of the next PE: a
/// kernel that needs a collective launch.
///
/// # Safety
/// `x` is a symmetric allocation of at least one float on every PE, written
/// before the launch; `out` holds one float; every PE launches it.
#[kernel]
pub unsafe fn barrier_read_next(x: SymPtr<f32>, out: *mut f32) {
    if block_idx_x() == 0 && thread_idx_x() == 0 {
        barrier_all();
        let next = my_pe().ring_next(n_pes());
        // SAFETY: x holds a float on every PE; out one here.
        unsafe { *out = g(x, next) };
    }
}
