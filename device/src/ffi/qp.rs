//! NVSHMEM 3.5's queue-pair (`nvshmemx_qp_*`) RMA: the standard RMA
//! functions with one more argument, the queue pair (`nvshmemx_qp_handle_t`,
//! from the host's `nvshmemx_qp_create`) that carries them over a network
//! transport. Generated, as the headers do, from the RMA type list
//! (`host/nvshmemx_api.h`, "QPair (qp) device APIs"): 25 types × 20
//! functions, `signal_op`, and `quiet`/`fence` in three scopes. Raw only:
//! there is no typed layer for queue pairs yet.

use super::lists::standard_rma_types;
use core::ffi::c_int;

/// `nvshmemx_qp_handle_t` (`int`, NVSHMEM 3.5+).
#[allow(non_camel_case_types)]
pub type nvshmemx_qp_handle_t = c_int;

/// `NVSHMEMX_QP_HOST`: the host proxy's queue pair.
pub const NVSHMEMX_QP_HOST: nvshmemx_qp_handle_t = 0;
/// `NVSHMEMX_QP_DEFAULT`: the queue pair the functions without `qp_` use.
pub const NVSHMEMX_QP_DEFAULT: nvshmemx_qp_handle_t = 1;
/// `NVSHMEMX_QP_ANY`: any queue pair.
pub const NVSHMEMX_QP_ANY: nvshmemx_qp_handle_t = c_int::MAX;
/// `NVSHMEMX_QP_ALL`: every queue pair (for `nvshmemx_qp_quiet`/`_fence`).
pub const NVSHMEMX_QP_ALL: nvshmemx_qp_handle_t = c_int::MAX;

// NVSHMEMX_DECL_TYPE_QP_{P,G,PUT,GET,PUT_NBI,GET_NBI,PUT_SIGNAL,PUT_SIGNAL_NBI}
// and their _THREADGROUP forms, for one type.
macro_rules! decl_qp {
    ($n:ident, $c:literal, $t:ty) => { pastey::paste! {
        extern_fn! {
            concat!("`void (", $c, " *dest, const ", $c, " value, int pe, nvshmemx_qp_handle_t qp)`.");
            fn [<nvshmemx_qp_ $n _p>](dest: *mut $t, value: byval!($n $t), pe: c_int, qp: nvshmemx_qp_handle_t)
        }
        decl_qp_g! { $n, $c, $t }
        decl_qp! { @rma $n, $c, $t, [put get put_nbi get_nbi], ["" _warp _block] }
        decl_qp! { @signal $n, $c, $t, [put_signal put_signal_nbi], ["" _warp _block] }
    } };
    (@rma $n:ident, $c:literal, $t:ty, [$($op:ident)*], $sfx:tt) => {
        $( decl_qp! { @rma_op $n, $c, $t, $op, $sfx } )*
    };
    (@rma_op $n:ident, $c:literal, $t:ty, $op:ident, [$($sfx:tt)*]) => { pastey::paste! { $(
        extern_fn! {
            concat!("`void (", $c, " *dest, const ", $c,
                " *source, size_t nelems, int pe, nvshmemx_qp_handle_t qp)`.");
            fn [<nvshmemx_qp_ $n _ $op $sfx>](
                dest: *mut $t, source: *const $t, nelems: usize, pe: c_int, qp: nvshmemx_qp_handle_t)
        }
    )* } };
    (@signal $n:ident, $c:literal, $t:ty, [$($op:ident)*], $sfx:tt) => {
        $( decl_qp! { @signal_op $n, $c, $t, $op, $sfx } )*
    };
    (@signal_op $n:ident, $c:literal, $t:ty, $op:ident, [$($sfx:tt)*]) => { pastey::paste! { $(
        extern_fn! {
            concat!("`void (", $c, " *dest, const ", $c, " *source, size_t nelems, uint64_t *sig_addr, ",
                "uint64_t signal, int sig_op, int pe, nvshmemx_qp_handle_t qp)`.");
            fn [<nvshmemx_qp_ $n _ $op $sfx>](dest: *mut $t, source: *const $t, nelems: usize,
                sig_addr: *mut u64, signal: u64, sig_op: c_int, pe: c_int, qp: nvshmemx_qp_handle_t)
        }
    )* } };
}

macro_rules! decl_qp_g {
    // Returned as `%struct.__half` / `%struct.__nv_bfloat16`: a documented gap.
    (half, $c:literal, $t:ty) => {};
    (bfloat16, $c:literal, $t:ty) => {};
    ($n:ident, $c:literal, $t:ty) => { pastey::paste! {
        extern_fn! {
            concat!("`", $c, " (const ", $c, " *source, int pe, nvshmemx_qp_handle_t qp)`.");
            fn [<nvshmemx_qp_ $n _g>](source: *const $t, pe: c_int, qp: nvshmemx_qp_handle_t) -> $t
        }
    } };
}

standard_rma_types!(each! decl_qp!);

extern_fn! {
    "`void (uint64_t *sig_addr, uint64_t signal, int sig_op, int pe, nvshmemx_qp_handle_t qp)`.";
    fn nvshmemx_qp_signal_op(sig_addr: *mut u64, signal: u64, sig_op: c_int, pe: c_int, qp: nvshmemx_qp_handle_t)
}

// Quiet and fence over `num_qps` queue pairs to `pe`, in every scope.
macro_rules! decl_qp_order {
    ($($op:ident)*) => { pastey::paste! { $(
        extern_fn! {
            "`void (int pe, nvshmemx_qp_handle_t *qp_handle, int num_qps)`, thread scope.";
            fn [<nvshmemx_qp_ $op>](pe: c_int, qp_handle: *const nvshmemx_qp_handle_t, num_qps: c_int)
        }
        extern_fn! {
            "`void (int pe, nvshmemx_qp_handle_t *qp_handle, int num_qps)`, warp scope.";
            fn [<nvshmemx_qp_ $op _warp>](pe: c_int, qp_handle: *const nvshmemx_qp_handle_t, num_qps: c_int)
        }
        extern_fn! {
            "`void (int pe, nvshmemx_qp_handle_t *qp_handle, int num_qps)`, block scope.";
            fn [<nvshmemx_qp_ $op _block>](pe: c_int, qp_handle: *const nvshmemx_qp_handle_t, num_qps: c_int)
        }
    )* } };
}

decl_qp_order!(quiet fence);
