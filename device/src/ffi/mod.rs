//! The raw NVSHMEM device ABI: `extern "C"` declarations of the functions in
//! NVSHMEM's device bitcode (`libnvshmem_device*.bc`).
//!
//! Nothing here is written out one function at a time. The declarations are
//! generated the way NVSHMEM's own headers generate them: X-macro type lists
//! ([`lists`], copies of `NVSHMEMI_REPT_FOR_STANDARD_RMA_TYPES`,
//! `NVSHMEMI_REPT_FOR_WAIT_TYPES`, `NVSHMEMI_REPT_OPGROUP_FOR_{BITWISE,STANDARD,EXTENDED}_AMO`,
//! `NVSHMEMI_REPT_FOR_{BITWISE,STANDARD,ARITH}_REDUCE_TYPES` and
//! `NVSHMEMI_REPT_FOR_SIZES`) are expanded over per-family templates, over
//! the thread, warp (`nvshmemx_*_warp`) and block (`nvshmemx_*_block`) scopes.
//! The C types map to Rust as C does on nvptx64 (`int` → `c_int`, `long` →
//! `c_long` = `i64`, `size_t` → `usize`, `half` → [`half::f16`],
//! `__nv_bfloat16` → [`half::bf16`]).
//!
//! Prefer the typed layer at the crate root ([`crate::put`], [`crate::atomic_fetch_add`], ...):
//! it takes [`SymPtr`](crate::SymPtr)/[`Pe`](crate::Pe), picks the right
//! function for the element type and hides the ABI details below.
//!
//! ```no_run
//! use nvshmem_device::ffi;
//! // The raw C call behind `nvshmem_device::p::<i32>`:
//! unsafe fn raw(dest: *mut i32) {
//!     unsafe { ffi::nvshmem_int32_p(dest, 42, 1) };
//! }
//! ```
//!
//! # ABI notes
//! - **`half` / `__nv_bfloat16` by value.** clang passes them as
//!   `ptr byval(%struct.__half)`. Rust's nvptx C ABI passes a 2-byte struct
//!   differently, so those parameters are declared as `*const f16` /
//!   `*const bf16` (LLVM type `ptr`, as in the bitcode); the inliner applies
//!   the callee's `byval`. Pass a pointer to a local copy.
//! - **Returns of `%struct.__half` / `%struct.__nv_bfloat16`** have no Rust
//!   equivalent, so those functions are not declared (see the gaps below); the
//!   typed layer does `g` for `f16`/`bf16` with a one-element `get`.
//! - `char` arguments carry `signext` in the bitcode; the LLVM type is still
//!   `i8`, which is what `c_char` lowers to.
//! - **Beware of NVSHMEM's `long`/`ulong` AMOs** (3.4.5 and 3.8.0,
//!   `device/nvshmem_defines.h`): over load/store peers, `nvshmem_long_atomic_swap`
//!   (and so `_set`) is a 32-bit `atomicExch` on `int`, and
//!   `nvshmem_ulong_atomic_fetch_add` (and `_add`, `_inc`, `_fetch_inc`) a 32-bit
//!   `atomicAdd` on `unsigned int`. The typed layer never uses those: `i64`/`u64`
//!   go to `int64`/`uint64`, and only the add/inc of `i64`/`isize` use `long`,
//!   whose fetch-add is a correct 64-bit one.
//!
//! `tests/abi/` checks every declaration here against the `define` lines of
//! the bitcode of every supported NVSHMEM version, 3.3.20 to 3.8.0, for CUDA
//! 12 and 13 (LLVM function types must be equal), and checks the whole API:
//! **every function each version's bitcode exports** (every `nvshmem*`
//! symbol: 2,208 in 3.3-3.4, 2,715 in 3.5-3.6, 2,724 in 3.7, 2,731 in 3.8),
//! and every name their headers' type lists generate, is declared here or
//! listed in the gap table below, whose every row it verifies.
//!
//! # Versions
//! The default is NVSHMEM 3.3/3.4's API. Three features (turned on by
//! `nvshmem-builder` for the bitcode it links; each implies the ones before)
//! add what later versions have:
//! - `nvshmem-3-5`: the 505 queue-pair functions `nvshmemx_qp_*` (generated
//!   from the RMA type list, as the headers do);
//! - `nvshmem-3-7`: `nvshmemx_{float,double}_atomic_{add,fetch_add}`,
//!   `nvshmemx_half_atomic_add`, `nvshmemx_flush{,_warp,_block}`;
//! - `nvshmem-3-8`: `nvshmemx_put16_signal{,_nbi}_{warp,block}`,
//!   `nvshmemx_{ask,give,release}_smem`, `nvshmemx_region_{start_block,stop_block,is_active}`,
//!   `nvshmemx_signal_counted_reset`.
//!
//! # Gaps
//! Every NVSHMEM device function that this module deliberately does not
//! declare, so that none can become an unresolved symbol at link time.
//! `Versions` is `all`, a minor version (`3.8`), a range of them (`3.3-3.7`)
//! or one and later (`3.5+`). `Kind` is what `tests/abi/` verifies: `absent` (the headers name it, the
//! bitcode lacks it), `struct return` (exported, returns a struct by value),
//! `omitted` (exported, left out for the reason given).
//!
//! | Functions | Versions | Kind | Why |
//! |---|---|---|---|
//! | `nvshmem_half_g`, `nvshmem_bfloat16_g` | all | struct return | return `%struct.__half`/`%struct.__nv_bfloat16` by value: no matching Rust type. [`crate::g`] uses `get` of one element instead. |
//! | `nvshmemx_qp_half_g`, `nvshmemx_qp_bfloat16_g` | 3.5+ | struct return | as `nvshmem_half_g`: the queue-pair forms. |
//! | `nvshmemx_half_atomic_fetch_add` | 3.7+ | struct return | returns `%struct.__half` by value. `nvshmemx_half_atomic_add` is declared. |
//! | `nvshmem_{int64,longlong,ptrdiff}_atomic_{fetch_add,add,fetch_inc,inc}` | all | absent | listed in the AMO op groups of `host/nvshmem_api.h`, but not in the device bitcode ("not implemented for FADD because of lack of CUDA support", `device/nvshmem_defines.h`). The typed layer uses `long` (the same C type as `int64_t` and `ptrdiff_t` on nvptx64) for `i64`/`isize`. |
//! | `nvshmemx_put16_signal_{warp,block,nbi_warp,nbi_block}` | 3.3-3.7 | absent | 3.3-3.7's `NVSHMEMI_REPT_FOR_SIZES_WITH_SCOPE2` lists `6` instead of `16`. Declared with `nvshmem-3-8`. |
//! | `nvshmemx_put6_signal_{warp,block,nbi_warp,nbi_block}` | 3.3-3.7 | omitted | what that typo generates instead: a put of 6-bit elements, which no Rust type has and 3.8 no longer exports; `put16_signal` (3.8) is the intended function. |
//! | `nvshmem_half_atomic_{fetch,set,swap}` | 3.7+ | absent | in 3.7's and 3.8's C++ `NVSHMEMI_REPT_OPGROUP_FOR_EXTENDED_AMO`, but not in the device bitcode. |
//! | `nvshmem_{bfloat16,half,float,double,char,short,schar,int,long,longlong,uchar,ushort,uint,ulong,ulonglong,int8,int16,int32,int64,uint8,uint16,uint32,uint64,size,ptrdiff}_alltoalls` | 3.3-3.4 | absent | declared by 3.4.5's `host/nvshmem_coll_api.h`, but not in the device bitcode (3.8 drops the declaration). |
//!
//! Not in any bitcode, so neither declared nor in the table (the ABI test
//! sees only what the bitcode exports or the type lists generate):
//! - NVSHMEM's tile API (`nvshmemx::tile_put`, `tile_allgather`,
//!   `tile_*_reduce`, `tile_collective_wait`, …; 3.3+): C++ templates in
//!   `device/tile/`, compiled into the caller. Here the building blocks are
//!   [`crate::tma`], [`crate::multimem`] and the typed RMA.
//! - 3.8's `nvshmemx_signal_counted_load`, `nvshmemx_signal_counted_wait_until`
//!   and `nvshmemx_putmem_signal_counted_nbi_block`: declared only with
//!   `NVSHMEM_CFT_HANDLES_SUPPORT`, which the bitcode is built without
//!   (`nvshmemx_signal_counted_reset` is exported and declared).
//! - Queue pairs (`nvshmemx_qp_*`, 3.5+) are declared, raw only: there is no
//!   typed layer, and the host crate does not call `nvshmemx_qp_create`, so
//!   the handles a kernel has are the constants (`NVSHMEMX_QP_DEFAULT`,
//!   `NVSHMEMX_QP_ALL`, …).
//!
//! Declared although outside every type list: the library queries
//! (`nvshmem_info_get_version`, `nvshmem_info_get_name`,
//! `nvshmemx_vendor_get_version_info`; typed [`crate::info_get_version`],
//! [`crate::info_get_name`], [`crate::vendor_version`]), `nvshmem_global_exit`
//! ([`crate::global_exit`]), `nvshmemx_mc_ptr` ([`crate::mc_ptr`]) and
//! `nvshmemx_double2_maxloc_reduce_block` ([`crate::maxloc_reduce_block`]).
//!
//! The collectives are the same in both versions' bitcode (no version gap):
//! teams, `barrier`/`team_sync`, `broadcast`, `fcollect`, `alltoall` (typed and
//! `*mem`), and `reduce`/`reducescatter` for every op and type of
//! `NVSHMEMI_REPT_FOR_{BITWISE,STANDARD,ARITH}_REDUCE_TYPES` (`complexf`/`complexd`
//! need `NVSHMEM_COMPLEX_SUPPORT`, which neither bitcode has). NVSHMEM has no
//! device-side `collect` (only `fcollect`, whose blocks are all the same size).

// Each generated function gets its own `extern` block and, with `abi-probe`,
// its own `#[used]` reference, so that `--emit=llvm-ir` prints a `declare`
// line with the LLVM type rustc lowers it to.
macro_rules! extern_fn {
    ($doc:expr; fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?) => {
        unsafe extern "C" {
            #[doc = concat!("`", stringify!($name), "`: ", $doc)]
            pub fn $name($($arg: $ty),*) $(-> $ret)?;
        }
        #[cfg(feature = "abi-probe")]
        const _: () = {
            #[used]
            static PROBE: $crate::ffi::Probe = $crate::ffi::Probe($name as *const ());
        };
    };
}

// `each!([(a..) (b..)] m! args..)` calls `m!{args.. a..}`, `m!{args.. b..}`:
// the X-macro `NVSHMEMI_FN_TEMPLATE` step.
macro_rules! each {
    ([] $m:ident! $($args:tt)*) => {};
    ([($($e:tt)*) $($rest:tt)*] $m:ident! $($args:tt)*) => {
        $m!{ $($args)* $($e)* }
        each!{ [$($rest)*] $m! $($args)* }
    };
}

// The Rust type a C parameter of type `$t` passed by value is declared with:
// `half`/`__nv_bfloat16` are `ptr byval(...)` in clang's bitcode.
macro_rules! byval {
    (half $t:ty) => { *const $t };
    (bfloat16 $t:ty) => { *const $t };
    ($n:ident $t:ty) => { $t };
}

// The X-macro scope list `NVSHMEMI_REPT_FOR_STANDARD_RMA_TYPES_AND_SCOPES2`:
// (prefix, suffix, scope name).
macro_rules! scopes2 {
    ($m:ident! $($args:tt)*) => {
        $m!{ $($args)* nvshmem, "", "thread", }
        $m!{ $($args)* nvshmemx, "_warp", "warp", }
        $m!{ $($args)* nvshmemx, "_block", "block", }
    };
}

pub mod lists;

mod amo;
mod coll;
mod library;
#[cfg(any(doc, feature = "nvshmem-3-5"))]
mod qp;
mod rma;
mod sync;

pub use amo::*;
pub use coll::*;
pub use library::*;
#[cfg(any(doc, feature = "nvshmem-3-5"))]
pub use qp::*;
pub use rma::*;
pub use sync::*;

/// `int` in NVSHMEM's signatures (PE numbers, comparison and signal operators).
pub use core::ffi::c_int;
/// `void *` in NVSHMEM's signatures.
pub use core::ffi::c_void;

/// A reference to a declared function, kept alive by `#[used]` (feature `abi-probe` only).
///
/// ```ignore
/// // generated next to each declaration:
/// #[used] static PROBE: Probe = Probe(nvshmem_int_p as *const ());
/// ```
#[cfg(feature = "abi-probe")]
#[doc(hidden)]
#[repr(transparent)]
pub struct Probe(pub *const ());

// SAFETY: a function address, never dereferenced.
#[cfg(feature = "abi-probe")]
unsafe impl Sync for Probe {}
