//! What a kernel launch may pass by value.

use crate::{Pe, SymPtr, Team};

/// A value that can be passed to a kernel parameter of the same type.
///
/// Implemented for the integer and float primitives, `bool`, `half::f16`
/// and `half::bf16`, [`SymPtr`], [`Pe`], [`Team`], arrays of these, and (in
/// `nvshmem-host`) `DevicePtr`. A `#[repr(C)]` struct that a kernel takes
/// by value gets it from `#[derive(KernelParam)]` (`nvshmem_device`) in the
/// kernel crate, which checks its fields: the host program then uses the
/// kernel crate's own type, and the orphan rule is no obstacle, since the
/// trait lives here, below both. Raw pointers are not accepted: a host
/// pointer in a kernel is a fault; memory goes to a kernel as a `SymPtr<T>`
/// (symmetric) or a `DevicePtr<T>` (a plain `T*`).
///
/// ```
/// fn takes<T: nvshmem_types::KernelParam>(_: T) {}
/// takes((1u32, 2.0f32).0);
/// takes([0u64; 4]);
/// ```
///
/// ```compile_fail
/// fn takes<T: nvshmem_types::KernelParam>(_: T) {}
/// takes(std::ptr::null_mut::<u64>()); // `*mut u64` cannot be passed to a kernel
/// ```
///
/// # Safety
/// The type must have the ABI of the PTX parameter it is passed to: a plain
/// `#[repr(C)]` or `#[repr(transparent)]` value with no pointers to host
/// memory, passed by value.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed to a kernel",
    label = "not a kernel argument",
    note = "pass symmetric memory as `buf.sym_ptr()` (a `SymPtr<T>`) and other device memory as \
            `buf.device_ptr()` (a `DevicePtr<T>`); numbers, `Pe` and `Team` go by value",
    note = "a `#[repr(C)]` struct the kernel takes by value gets `KernelParam` from \
            `#[derive(KernelParam)]` in the kernel crate"
)]
pub unsafe trait KernelParam: Copy {
    /// The type's name, for error messages.
    fn type_name() -> &'static str {
        core::any::type_name::<Self>()
    }
}

macro_rules! kernel_params {
    ($($t:ty),* $(,)?) => { $(
        // SAFETY: a primitive passed by value has its C ABI.
        unsafe impl KernelParam for $t {}
    )* };
}
kernel_params!(
    i8,
    u8,
    i16,
    u16,
    i32,
    u32,
    i64,
    u64,
    isize,
    usize,
    f32,
    f64,
    bool,
    half::f16,
    half::bf16
);

// SAFETY: `#[repr(transparent)]` over `*mut T`: the ABI of `T*`.
unsafe impl<T> KernelParam for SymPtr<T> {}
// SAFETY: `#[repr(transparent)]` over `u32`.
unsafe impl KernelParam for Pe {}
// SAFETY: `#[repr(transparent)]` over `i32` (`nvshmem_team_t`).
unsafe impl KernelParam for Team {}
// SAFETY: an array of kernel parameters is laid out as C lays out `T[N]`.
unsafe impl<T: KernelParam, const N: usize> KernelParam for [T; N] {}
