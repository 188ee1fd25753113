//! NVSHMEM's device API for Rust kernels.
//!
//! This crate is `no_std` and is built for `nvptx64-nvidia-cuda` by the
//! `nvshmem-builder` crate (a build-dependency of the host program), which
//! links the kernels against NVSHMEM's own device bitcode
//! (`libnvshmem_device*.bc`), so every call here inlines NVSHMEM's real code.
//!
//! It has two layers:
//! - [`ffi`]: the raw `extern "C"` NVSHMEM device ABI, generated from macro
//!   tables that mirror the type lists in NVSHMEM's headers.
//! - The typed layer (re-exported at the crate root): [`put`], [`get`],
//!   [`atomic_fetch_add`], [`quiet`], [`wait_until`] and the rest, over
//!   [`SymPtr`] (symmetric addresses that a local pointer cannot pass for), [`Pe`]
//!   and element traits that only NVSHMEM's supported types implement.
//!
//! The crate also type-checks on the host, so `cargo check`, rust-analyzer and
//! the doc examples work there; device functions called from host code fail to
//! link, by design.
//!
//! A kernel crate (`#![no_std]`) holds `#[kernel]` functions:
//!
//! ```no_run
//! use nvshmem_device::thread::global_index_x;
//! use nvshmem_device::{SymPtr, kernel, my_pe, n_pes, p, quiet};
//!
//! /// Writes this PE's number into `dest[i]` on the next PE, one element per thread.
//! #[kernel]
//! pub unsafe fn write_my_rank_to_next(dest: SymPtr<u32>, n: usize) {
//!     let i = global_index_x();
//!     if i < n {
//!         let next = my_pe().ring_next(n_pes());
//!         unsafe { p(dest.add(i), my_pe().index(), next) };
//!     }
//!     quiet();
//! }
//!
//! nvshmem_device::panic_handler!();
//! ```
//!
//! # Index types
//!
//! One rule picks the integer type of every index and count:
//! - **`usize` for what indexes or sizes memory** in elements: offsets and
//!   lengths ([`SymPtr::add`], [`shared::Shared::read`], slice lengths), and
//!   the grid-wide thread index and stride that kernels index arrays with
//!   ([`thread::global_index_x`], [`thread::global_stride_x`]);
//! - **`u32` for what the hardware numbers**: thread, block, lane and warp
//!   ids and dimensions ([`thread::thread_idx_x`], [`thread::lane_id`],
//!   [`thread::warp_id`], [`thread::block_thread_rank`]), PE numbers and
//!   counts ([`Pe::index`], [`n_pes`]), and PTX operands (shared-memory
//!   addresses, tile coordinates, masks).
//!
//! So a lane or PE number used as an array index is converted once, where it
//! becomes one: `buf.add(lane_id() as usize)`.
//!
//! # The typed layer at a glance
//!
//! Names follow NVSHMEM's, without the type name (the element type picks the
//! function): `nvshmem_int32_put_nbi` is [`put_nbi::<i32>`](put_nbi),
//! `nvshmemx_float_put_block` is [`put_block::<f32>`](put_block).
//!
//! | Family | Functions | Element bound |
//! |---|---|---|
//! | scalar | [`p`], [`g`] | [`RmaElement`] |
//! | contiguous | [`put`], [`put_nbi`], [`get`], [`get_nbi`] | [`RmaElement`] |
//! | strided | [`iput`], [`iget`]; [`iput_pod`], [`iget_pod`] (1 to 16-byte plain data: `iput8`..`iput128`) | [`RmaElement`], [`bytemuck::Pod`] |
//! | with signal | [`put_signal`], [`put_signal_nbi`] | [`RmaElement`] |
//! | any plain data | [`put_pod`], [`put_pod_nbi`], [`get_pod`], [`get_pod_nbi`], [`put_signal_pod`], [`put_signal_pod_nbi`] | [`bytemuck::Pod`] |
//! | atomics | [`atomic_fetch`], [`atomic_set`], [`atomic_swap`]; [`atomic_add`], [`atomic_fetch_add`]; [`atomic_compare_swap`], [`atomic_inc`], [`atomic_fetch_inc`]; [`atomic_and`], [`atomic_or`], [`atomic_xor`] and `atomic_fetch_{and,or,xor}` | [`AmoElement`], [`AddAmoElement`], [`FetchAddAmoElement`], [`StandardAmoElement`], [`BitwiseAmoElement`] |
//! | waiting | [`wait_until`], [`test`](fn@test), and `_all`/`_any`/`_some` (+`_vector`) of each, with [`Cmp`] | [`WaitElement`] |
//! | signals | [`signal_op`] (with [`SignalOp`]), [`signal_fetch`], [`signal_wait_until`] | `u64` |
//! | ordering | [`quiet`], [`fence`]; [`flush`] (+`_warp`/`_block`) with `nvshmem-3-7` | |
//! | NVLink SHARP | [`mc_ptr`] (`None` without NVLS), [`multimem_ld_reduce`], [`multimem_st`], [`multimem_red`] ([`multimem`]) | [`MultimemElement`], [`MultimemReduce`] |
//! | library | [`info_get_version`], [`info_get_name`], [`vendor_version`], [`global_exit`] | |
//! | NVSHMEM 3.8 | [`ask_smem`], [`give_smem`], [`release_smem`] (TMA), [`region_start_block`], [`region_stop_block`], [`region_is_active`], [`signal_counted_reset`] | |
//! | job-wide | [`barrier_all`], [`sync_all`] | |
//! | teams | [`Team`] (`WORLD`, `SHARED`, `NODE`, `SAME_MYPE_NODE`, or split by the host), [`team_my_pe`], [`team_n_pes`], [`team_translate_pe`] | |
//! | team sync | [`barrier`], [`barrier_warpgroup`], [`sync`](fn@sync) (+`_warp`/`_block`) | |
//! | collectives | [`broadcast`], [`fcollect`] (all-gather), [`alltoall`]; `_pod` forms | [`CollectElement`], [`bytemuck::Pod`] |
//! | reductions | [`reduce`], [`reducescatter`] with [`And`], [`Or`], [`Xor`], [`Min`], [`Max`], [`Sum`], [`Prod`]; [`maxloc_reduce_block`] | [`ReduceOp<T>`](ReduceOp) |
//! | PEs | [`my_pe`], [`n_pes`], [`ptr`] (direct load/store address) | |
//!
//! Every RMA/pod family comes in three scopes: `put` (one thread), `put_warp`
//! (the whole warp, `nvshmemx_*_warp`) and `put_block` (the whole block,
//! `nvshmemx_*_block`); likewise `put_nbi_warp`, `get_pod_block`, ...
//! [`barrier_all`], [`sync_all`], the team barriers and syncs and every
//! collective have `_warp`/`_block` forms too. Kernels that reach a barrier,
//! sync or collective must be launched collectively; the builder marks them in
//! the manifest and the host refuses a plain launch.
//!
//! Symmetric destinations (and sources of gets) are [`SymPtr`]s; the local
//! side is a raw pointer. Functions that touch memory through addresses are
//! `unsafe fn` with a `# Safety` section, and so is **every warp- and
//! block-scope function**: NVSHMEM synchronizes the group with `.aligned`
//! barriers and full-mask warp operations, which the PTX ISA makes undefined
//! behaviour when only part of the group calls them. The rest is safe:
//! [`my_pe`], [`n_pes`], [`ptr`] and [`mc_ptr`] (they translate addresses,
//! and `ptr` returns `None` for a PE out of range), [`quiet`], [`fence`], the
//! team queries (which check their PE against the team), the library
//! queries, and the thread-scope barriers and syncs (a call outside their
//! discipline hangs or returns early; it touches no memory of yours).
//! A [`Team`] is valid by construction (see its docs); a [`Pe`] is any
//! number, so every `unsafe fn` that takes one requires `pe < n_pes()`.
//!
//! # Tensor cores, asynchronous copies and TMA
//! Beside NVSHMEM's API, the crate has what tensor-core kernels need, as
//! inline PTX behind typed functions (they type-check on the host and panic
//! there if called):
//!
//! | Module | What | Arch |
//! |---|---|---|
//! | [`mma`] | `mma.sync` (m16n8k16 / m16n8k8; bf16, f16, tf32) on typed fragments, `ldmatrix` | sm_80+ |
//! | [`cp_async`] | `cp.async` global → shared copies and their groups; [`cp_async::SharedAddr`] | sm_80+ |
//! | [`wgmma`] | `wgmma.mma_async` (m64nNk16) with typed shared-memory descriptors, `setmaxnreg`, named barriers | sm_90a |
//! | [`tma`] | `mbarrier`, TMA tensor copies (`cp.async.bulk.tensor`), proxy fences, `elect.sync` | sm_90 |
//!
//! # Features
//! - `nvshmem-3-5`, `nvshmem-3-7`, `nvshmem-3-8`: the device API each
//!   NVSHMEM release added, each implying the ones before: 3.5 the raw
//!   queue-pair functions (`ffi::nvshmemx_qp_*`); 3.7 `flush*`,
//!   `f32`/`f64`/`f16` atomic add and `f32`/`f64` fetch-add; 3.8 the TMA
//!   shared-memory lease, RMA regions, `signal_counted_reset` and the
//!   warp/block `put16_signal`. `nvshmem-builder` turns on the one of the
//!   bitcode it links; kernels can use [`with_nvshmem_3_5!`],
//!   [`with_nvshmem_3_7!`] and [`with_nvshmem_3_8!`] for code that needs it.
//!   Without it, a call of one of these fails to compile:
//!   `nvshmem_device::flush()` with rustc's note "the item is gated behind
//!   the `nvshmem-3-7` feature", `atomic_add` of an `f32` with a note that
//!   says to build against NVSHMEM 3.7. These docs show every release's API
//!   whatever the features (`cargo doc` in a project of yours too); each
//!   such item names the release it needs.
//! - `nvshmem-path`: every typed put/get takes NVSHMEM's own path, never the
//!   direct copy to peers that [`ptr`] reaches ([`DIRECT_COPY`] is `false`).
//!   For testing NVSHMEM's path on one GPU (where every peer is reachable),
//!   or comparing the two; a kernel crate gets it with
//!   `Builder::feature("nvshmem-device/nvshmem-path")`. The choice is made
//!   at compile time: there is no per-call branch.
//! - `debug-checks`: the typed layer traps, after printing what and where,
//!   when a PE is out of range (`pe >= n_pes()`) or an array argument is
//!   shorter than `nelems`. Without it the checks do not exist.
//! - `abi-probe`: internal, for `tests/abi/`.
//! - `copy-thread-serial`: internal, a candidate of the direct copy for
//!   `cargo xtask bench --candidates` (BENCHMARKS.md, issue 24); not for
//!   kernels.
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(
        stdarch_nvptx,
        link_llvm_intrinsics,
        asm_experimental_arch,
        allow_internal_unstable
    )
)]
// `link_llvm_intrinsics` (for `bar.warp.sync`, which `core::arch::nvptx` lacks)
// is marked internal; kernels are built warning-free, so say it once here.
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]
#![warn(missing_docs)]

/// The `# Safety` text of every warp-scope function: what a call from part
/// of the warp breaks.
macro_rules! warp_safety {
    () => {
        "Every thread of the warp calls it together, converged and with the same arguments. \
         NVSHMEM's warp-scope code synchronizes the warp with `bar.warp.sync` and full-mask \
         shuffles (and this crate's direct put/get copy splits the work by lane): a call from \
         part of the warp is undefined behaviour, not only a hang."
    };
}

/// The `# Safety` text of every block-scope function.
macro_rules! block_safety {
    () => {
        "Every thread of the block calls it together, with the same arguments (block-uniform \
         control flow). NVSHMEM's block-scope code synchronizes the block with `.aligned` \
         barriers (`barrier.cta.sync.aligned`), which the PTX ISA makes undefined behaviour in \
         divergent code (and this crate's direct put/get copy splits the work by thread): a \
         call from part of the block is undefined behaviour, not only a hang."
    };
}

/// A doc example's call line, in `unsafe { }` for an `unsafe fn`.
macro_rules! call_doc {
    (unsafe $call:expr) => {
        concat!("unsafe { ", $call, " };")
    };
    ($call:expr) => {
        concat!($call, ";")
    };
}

/// Sealed zero-sized marker types: `Name: Trait { items }, OtherTrait;`
/// makes `pub struct Name` (`Clone`, `Copy`, `Debug`, `Default`,
/// `PartialEq`, `Eq`, `Hash`), implements the `Sealed` trait in scope where
/// it is called, and the traits.
macro_rules! markers {
    ($($(#[$doc:meta])* $name:ident: $($trait:ident $({ $($item:tt)* })?),+;)*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        pub struct $name;
        impl Sealed for $name {}
        $(impl $trait for $name { $($($item)*)? })+
    )*};
}

#[macro_use]
mod asm;
#[macro_use]
mod scope;

mod amo;
#[cfg_attr(
    not(target_arch = "nvptx64"),
    allow(unreachable_code, unused, unused_unsafe)
)] // host stubs
pub mod atomic;
mod coll;
pub mod cp_async;
mod debug;
#[cfg_attr(feature = "nvshmem-path", allow(dead_code))]
mod direct;
pub mod ffi;
mod library;
#[cfg_attr(
    not(target_arch = "nvptx64"),
    allow(unreachable_code, unused, unused_unsafe)
)] // host stubs
pub mod math;
pub mod mma;
pub mod multimem;
mod nvvm;
pub mod panic;
mod rma;
#[cfg_attr(
    not(target_arch = "nvptx64"),
    allow(unreachable_code, unused, unused_unsafe)
)] // host stubs
pub mod shared;
pub mod symmetric;
mod sync;
pub mod thread;
pub mod tma;
#[cfg_attr(
    not(target_arch = "nvptx64"),
    allow(unreachable_code, unused, unused_unsafe)
)] // host stubs
pub mod warp;
pub mod wgmma;

#[cfg(test)]
mod tensor_tests;
#[cfg(test)]
mod tests;

pub use amo::*;
pub use coll::*;
pub use library::*;
pub use multimem::*;
pub use rma::*;
pub use symmetric::{DIRECT_COPY, Pe, SymPtr, my_pe, n_pes, ptr};
pub use sync::*;

// NVSHMEM 3.7's and 3.8's functions, named here as well as through the globs
// above: without the `nvshmem-3-7` feature, `nvshmem_device::flush()` then
// fails with rustc's note "the item is gated behind the `nvshmem-3-7`
// feature" rather than a bare "not found".
#[cfg(feature = "nvshmem-3-8")]
pub use library::{
    ask_smem, give_smem, region_is_active, region_start_block, region_stop_block, release_smem,
};
#[cfg(feature = "nvshmem-3-8")]
pub use sync::signal_counted_reset;
#[cfg(feature = "nvshmem-3-7")]
pub use sync::{flush, flush_block, flush_warp};

/// Marks a function as a GPU kernel: an entry point the host launches by name.
///
/// In a kernel crate (`#![no_std]`, with `nvshmem_device::panic_handler!();`):
///
/// ```no_run
/// use nvshmem_device::{SymPtr, kernel, my_pe, n_pes, p};
///
/// /// Writes this PE's number into `dest` on the next PE.
/// #[kernel]
/// pub unsafe fn write_rank(dest: SymPtr<u32>) {
///     let next = my_pe().ring_next(n_pes());
///     unsafe { p(dest, my_pe().index(), next) };
/// }
/// ```
///
/// For the GPU (`nvptx64`), the function becomes
/// `#[unsafe(no_mangle)] pub unsafe extern "ptx-kernel" fn`, which the
/// builder finds and lists in the manifest; the kernel crate needs no
/// `#![feature(abi_ptx)]`. On the host it stays a plain Rust function, so
/// `cargo check`, clippy and rust-analyzer work in a kernel crate on stable
/// Rust, with no target or toolchain settings.
///
/// A kernel is `pub` (usually `unsafe`: its callers promise what its
/// pointers hold), not generic, returns nothing and takes only values a
/// launch can pass: integers, floats, `bool`, `f16`/`bf16`, raw pointers to
/// sized types (`*const T`, `*mut T`), [`SymPtr`], [`Pe`], [`Team`], arrays
/// of these and `#[repr(C)]` structs with [`#[derive(KernelParam)]`](KernelParam).
/// Other shapes are refused at compile time with the reason, on the host
/// too (`cargo check`):
///
/// ```compile_fail
/// #[nvshmem_device::kernel]
/// pub unsafe fn slice(data: &mut [i32]) {} // a reference, and a slice: pass a pointer and a length
/// ```
///
/// ```compile_fail
/// #[nvshmem_device::kernel]
/// pub unsafe fn pair(xy: (u32, u32)) {} // Rust chooses a tuple's layout
/// ```
///
/// ```compile_fail,E0277
/// pub struct Plain { pub n: u32 } // no #[repr(C)], no #[derive(KernelParam)]
/// #[nvshmem_device::kernel]
/// pub unsafe fn by_value(p: Plain) {}
/// ```
///
/// Writing `#[unsafe(no_mangle)] pub unsafe extern "ptx-kernel" fn` by hand
/// (with `#![feature(abi_ptx)]`) still works, for the GPU only.
///
/// # Launch bounds: `max_threads`
/// `#[kernel(max_threads = N)]` is CUDA's `__launch_bounds__(N)`: a promise
/// that the kernel is never launched with more than `N` threads per block
/// (`N` from 1 to 1024). `nvshmem-builder` emits it as `.maxntid N, 1, 1`,
/// so `ptxas` keeps the kernel within the registers that `N` threads can
/// have (65536 / `N` each, at most 255): a launch of up to `N` threads never
/// fails for lack of registers, and `wgmma::setmaxnreg_*` gets the bound it
/// needs. The driver refuses a launch of more than `N` threads.
///
/// ```no_run
/// use nvshmem_device::kernel;
///
/// /// One tile per block of 384 threads (three warpgroups).
/// #[kernel(max_threads = 384)]
/// pub unsafe fn gemm_tile(c: *mut f32) {
///     # let _ = c;
/// }
/// ```
///
/// `N` must be an integer literal: the builder reads it from the source
/// (without expanding macros, so a kernel that a `macro_rules!` macro
/// defines gets no `.maxntid`; the builder warns). Anything else is refused:
///
/// ```compile_fail
/// #[nvshmem_device::kernel(max_threads = 2048)] // more than a block can have
/// pub unsafe fn too_many() {}
/// ```
///
/// ```compile_fail
/// const THREADS: u32 = 256;
/// #[nvshmem_device::kernel(max_threads = THREADS)] // not a literal
/// pub unsafe fn named() {}
/// ```
///
/// ```compile_fail
/// #[nvshmem_device::kernel(min_blocks = 2)] // no such argument
/// pub unsafe fn occupancy() {}
/// ```
pub use nvshmem_device_macros::kernel;

/// What a launch may pass to a kernel by value; see
/// [`nvshmem_types::KernelParam`].
///
/// `#[derive(KernelParam)]` implements it for a `#[repr(C)]` struct of
/// this kernel crate that a kernel takes by value, after checking that it is
/// `#[repr(C)]` (not `packed`), not generic, and that every field is a
/// `KernelParam` itself. The host program then passes the kernel crate's own
/// struct (it depends on the kernel crate, which builds on the host too); its
/// typed bindings (`nvshmem_host::include_kernels!`) take it by value.
///
/// ```
/// use nvshmem_device::{KernelParam, SymPtr};
///
/// /// `y = a * x + b`.
/// #[derive(Clone, Copy, KernelParam)]
/// #[repr(C)]
/// pub struct Affine {
///     pub a: f32,
///     pub b: f32,
///     pub out: SymPtr<f32>,
/// }
///
/// #[nvshmem_device::kernel]
/// pub unsafe fn affine(x: *const f32, n: u32, p: Affine) {
///     # let _ = (x, n, p);
/// }
/// ```
///
/// A host pointer in a field, or Rust's own layout, is refused:
///
/// ```compile_fail
/// #[derive(Clone, Copy, nvshmem_device::KernelParam)]
/// #[repr(C)]
/// pub struct Raw { pub data: *mut f32 } // `*mut f32` cannot be passed to a kernel
/// ```
///
/// ```compile_fail
/// #[derive(Clone, Copy, nvshmem_device::KernelParam)]
/// pub struct NotC { pub a: f32 } // needs `#[repr(C)]`
/// ```
pub use nvshmem_device_macros::KernelParam;
pub use nvshmem_types::KernelParam;

/// The GPU form of a [`kernel`]: what `#[kernel]` expands to on `nvptx64`.
/// Not API.
#[doc(hidden)]
#[macro_export]
#[cfg_attr(target_arch = "nvptx64", allow_internal_unstable(abi_ptx))]
macro_rules! __ptx_kernel {
    ($(#[$m:meta])* $vis:vis unsafe fn $name:ident ($($args:tt)*) $body:block) => {
        $(#[$m])* #[unsafe(no_mangle)] $vis unsafe extern "ptx-kernel" fn $name($($args)*) $body
    };
    ($(#[$m:meta])* $vis:vis fn $name:ident ($($args:tt)*) $body:block) => {
        $(#[$m])* #[unsafe(no_mangle)] $vis extern "ptx-kernel" fn $name($($args)*) $body
    };
}

/// The `bytemuck` crate, for deriving [`bytemuck::Pod`] on types sent with [`put_pod`].
///
/// ```
/// #[derive(Clone, Copy, nvshmem_device::bytemuck::Pod, nvshmem_device::bytemuck::Zeroable)]
/// #[bytemuck(crate = "nvshmem_device::bytemuck")]
/// #[repr(C)]
/// struct Particle { pos: [f32; 3], id: u32 }
/// ```
pub use bytemuck;
/// The `half` crate: [`half::f16`] and [`half::bf16`] are NVSHMEM's `half` and `__nv_bfloat16`.
///
/// ```
/// let x = nvshmem_device::half::f16::from_f32(1.5);
/// ```
pub use half;

/// Whether this build has NVSHMEM 3.8's API (the `nvshmem-3-8` feature).
///
/// ```
/// if nvshmem_device::NVSHMEM_3_8 { /* flush() and the float atomics exist */ }
/// ```
pub const NVSHMEM_3_8: bool = cfg!(feature = "nvshmem-3-8");

/// Whether this build has NVSHMEM 3.7's API (the `nvshmem-3-7` feature:
/// float atomics, `flush`).
pub const NVSHMEM_3_7: bool = cfg!(feature = "nvshmem-3-7");

/// Whether this build has NVSHMEM 3.5's API (the `nvshmem-3-5` feature:
/// `ffi::nvshmemx_qp_*`).
pub const NVSHMEM_3_5: bool = cfg!(feature = "nvshmem-3-5");

/// Keeps its items only when `nvshmem-device` is built with `nvshmem-3-5`
/// (NVSHMEM 3.5+ bitcode): for the queue-pair functions `ffi::nvshmemx_qp_*`.
#[macro_export]
macro_rules! with_nvshmem_3_5 {
    ($($item:item)*) => { $crate::__with_nvshmem_3_5! { $($item)* } };
}

/// Keeps its items only when `nvshmem-device` is built with `nvshmem-3-7`
/// (NVSHMEM 3.7+ bitcode): as [`with_nvshmem_3_8!`] for 3.7's API.
///
/// ```no_run
/// nvshmem_device::with_nvshmem_3_7! {
///     fn drain() { nvshmem_device::flush(); }
/// }
/// ```
#[macro_export]
macro_rules! with_nvshmem_3_7 {
    ($($item:item)*) => { $crate::__with_nvshmem_3_7! { $($item)* } };
}

/// Keeps its items only when `nvshmem-device` is built with `nvshmem-3-8`, so
/// a kernel crate can use 3.8-only functions without a feature of its own
/// (the builder turns the feature on when it links 3.8+ bitcode).
///
/// ```no_run
/// nvshmem_device::with_nvshmem_3_8! {
///     fn drain() { nvshmem_device::flush(); }
/// }
/// ```
#[macro_export]
macro_rules! with_nvshmem_3_8 {
    ($($item:item)*) => { $crate::__with_nvshmem_3_8! { $($item)* } };
}

// The two forms of each `with_nvshmem_3_N!` above, documented once there: the
// feature is this crate's, so the choice is made here, not in the calling crate.
#[doc(hidden)]
#[cfg(feature = "nvshmem-3-5")]
#[macro_export]
macro_rules! __with_nvshmem_3_5 { ($($item:item)*) => { $($item)* }; }
#[doc(hidden)]
#[cfg(not(feature = "nvshmem-3-5"))]
#[macro_export]
macro_rules! __with_nvshmem_3_5 {
    ($($item:item)*) => {};
}
#[doc(hidden)]
#[cfg(feature = "nvshmem-3-7")]
#[macro_export]
macro_rules! __with_nvshmem_3_7 { ($($item:item)*) => { $($item)* }; }
#[doc(hidden)]
#[cfg(not(feature = "nvshmem-3-7"))]
#[macro_export]
macro_rules! __with_nvshmem_3_7 {
    ($($item:item)*) => {};
}
#[doc(hidden)]
#[cfg(feature = "nvshmem-3-8")]
#[macro_export]
macro_rules! __with_nvshmem_3_8 { ($($item:item)*) => { $($item)* }; }
#[doc(hidden)]
#[cfg(not(feature = "nvshmem-3-8"))]
#[macro_export]
macro_rules! __with_nvshmem_3_8 {
    ($($item:item)*) => {};
}

/// What an inline-PTX function does when called on the host, where the crate
/// only type-checks: there is no GPU instruction to run.
#[cfg(not(target_arch = "nvptx64"))]
#[cold]
#[track_caller]
pub(crate) fn device_only() -> ! {
    unreachable!("a GPU instruction (inline PTX) was called on the host")
}

/// Implementation details that public signatures have to name. Not API.
#[doc(hidden)]
pub mod __private {
    /// Seals the element traits: only this crate implements them.
    pub trait Sealed {}

    /// Which group of threads calls a scoped function together.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Scope {
        /// One thread (`nvshmem_*`).
        Thread,
        /// The whole warp (`nvshmemx_*_warp`).
        Warp,
        /// The whole block (`nvshmemx_*_block`).
        Block,
    }

    macro_rules! sealed {
        ($($t:ty),*) => { $(impl Sealed for $t {})* };
    }
    sealed!(
        i8,
        i16,
        i32,
        i64,
        u8,
        u16,
        u32,
        u64,
        usize,
        isize,
        f32,
        f64,
        half::f16,
        half::bf16
    );

    /// A parameter a kernel takes by value; `#[kernel]` asks it of each one.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be a kernel parameter",
        label = "not a kernel parameter",
        note = "kernels take numbers, `bool`, `f16`/`bf16`, `SymPtr<T>`, `Pe`, `Team`, raw \
                pointers, arrays of these, and `#[repr(C)]` structs with `#[derive(KernelParam)]`"
    )]
    pub trait KernelParamByValue {}
    impl<T: crate::KernelParam> KernelParamByValue for T {}

    /// Compiles only for a type a kernel can take by value.
    pub fn kernel_param<T: KernelParamByValue>() {}
}
