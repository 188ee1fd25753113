//! The ring: a token goes around every PE `laps` times. Each PE waits for its
//! signal, adds one to the token, and hands it to the next PE with a single
//! put-with-signal. After the last lap PE 0 holds `laps * n_pes`.
#![no_std]

use nvshmem_device::{Cmp, SignalOp, SymPtr, kernel, my_pe, n_pes, put_signal, signal_wait_until};

nvshmem_device::panic_handler!();

/// One thread per PE. `token` receives the token, `send` stages it, `signal`
/// counts arrivals (lap `k` sets it to `k + 1`). `out[0]` gets the final token on PE 0.
///
/// # Safety
/// `token`, `send` and `signal` are one-element symmetric allocations, zeroed
/// before the launch on every PE; `out` is valid for one write on PE 0; every
/// PE launches it with the same `laps`, one thread each.
#[kernel]
pub unsafe fn ring_pass(
    token: SymPtr<u64>,
    send: SymPtr<u64>,
    signal: SymPtr<u64>,
    laps: u64,
    out: *mut u64,
) {
    let me = my_pe();
    let next = me.ring_next(n_pes());
    for lap in 0..laps {
        let value = if me.index() == 0 && lap == 0 {
            0
        } else {
            // PE 0 waits for the previous lap; the others for this one.
            let arrivals = if me.index() == 0 { lap } else { lap + 1 };
            unsafe { signal_wait_until(signal, Cmp::Ge, arrivals) };
            unsafe { *token.as_ptr() }
        };
        unsafe {
            *send.as_ptr() = value + 1;
            put_signal(
                token,
                send.as_ptr(),
                1,
                signal,
                lap + 1,
                SignalOp::Set,
                next,
            );
        }
    }
    if me.index() == 0 {
        unsafe {
            signal_wait_until(signal, Cmp::Ge, laps);
            *out = *token.as_ptr();
        }
    }
}
