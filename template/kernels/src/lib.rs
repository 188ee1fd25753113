//! The GPU side: a `no_std` crate whose `#[kernel]` functions build.rs turns
//! into PTX and a cubin linked with NVSHMEM (`nvshmem-builder`).
#![no_std]

use nvshmem_device::{Cmp, SignalOp, SymPtr, kernel, my_pe, n_pes, put_signal_block, signal_wait_until};

nvshmem_device::panic_handler!();

/// Every PE scales its `n` floats of `src` by `factor` into `staging`, hands
/// them to the next PE's `dest` with one put-with-signal (the whole block
/// copies), and waits until the previous PE's block has arrived in its own
/// `dest`.
///
/// # Safety
/// `dest` and `staging` are symmetric allocations of at least `n` floats,
/// `src` holds `n` floats, `signal` is a symmetric `u64` zeroed before the
/// launch; every PE launches one block with the same `n`.
#[kernel]
pub unsafe fn scale_to_next(
    dest: SymPtr<f32>,
    staging: SymPtr<f32>,
    src: *const f32,
    n: u64,
    factor: f32,
    signal: SymPtr<u64>,
) {
    let (tid, threads) = (
        nvshmem_device::thread::thread_idx_x() as u64,
        nvshmem_device::thread::block_dim_x() as u64,
    );
    let mut i = tid;
    while i < n {
        // SAFETY: i < n, within `src` and `staging` (the caller's contract).
        unsafe { *staging.as_ptr().add(i as usize) = *src.add(i as usize) * factor };
        i += threads;
    }
    let next = my_pe().ring_next(n_pes());
    // SAFETY: the whole block calls it with the same arguments; the sizes are
    // the caller's contract. put_signal_block waits for the block first.
    unsafe { put_signal_block(dest, staging.as_ptr(), n as usize, signal, 1, SignalOp::Set, next) };
    if tid == 0 {
        // SAFETY: `signal` is a symmetric u64 (the caller's contract).
        unsafe { signal_wait_until(signal, Cmp::Eq, 1) };
    }
}
