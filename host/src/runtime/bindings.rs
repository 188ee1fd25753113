//! Typed kernel bindings: the launch functions `nvshmem-builder` writes for
//! each kernel crate, included with [`include_kernels!`](crate::include_kernels).
//!
//! The builder reads every kernel's signature and writes, beside the PTX and
//! the C header, a Rust file with one function per kernel whose parameters
//! have the kernel's types, and a `Kernels` struct that loads the module and
//! looks every kernel up once. A wrong argument count or type is then a
//! compile error that names the parameter, instead of a run-time check:
//!
//! | kernel parameter | the binding takes |
//! |---|---|
//! | `SymPtr<T>` | `impl AsSymPtr<T>`: `&SymBuffer<T>`, `SymView<T>` or `SymPtr<T>` |
//! | `*const T`, `*mut T` | `impl AsDevicePtr<T>`: `&SymBuffer<T>`, `SymView<T>` or `DevicePtr<T>` |
//! | numbers, `bool`, `f16`, `bf16`, `Pe`, `Team`, arrays of them | the same type, by value |
//! | a `#[repr(C)]` struct of the kernel crate | the kernel crate's own struct, by value (it derives `KernelParam` there, and the host program depends on the kernel crate; the struct must be public at its path) |
//! | anything else | `impl KernelParam`, checked at run time only |
//!
//! Collective kernels (those that reach an NVSHMEM barrier or collective)
//! launch cooperatively; the others plainly. Each function calls
//! [`Kernel::launch_with`](crate::Kernel::launch_with) or
//! [`launch_collective_with`](crate::Kernel::launch_collective_with), which
//! still check the arguments against the loaded module's manifest.
//!
//! ```ignore
//! // build.rs: nvshmem_builder::Builder::new("kernels").build_from_build_script();
//! nvshmem_host::include_kernels!(my_kernels);
//!
//! let k = my_kernels::Kernels::load(&nv)?;
//! // kernel: fn scale_to_next(dest: SymPtr<f32>, staging: SymPtr<f32>, src: *const f32,
//! //                          n: u64, factor: f32, signal: SymPtr<u64>)
//! unsafe { my_kernels::scale_to_next(&k, nv.stream(), 1, 256, &dest, &staging, &src, n as u64, 3.0, &signal)? };
//! ```
//!
//! `Kernels::load` reads the folder the build wrote (`DIR`); a program run
//! from a copy of it (a GPU machine without Rust) uses `Kernels::load_in`.
//!
//! A kernel behind a cargo feature (`#[cfg(feature = "sm90a")]` on it or on
//! a module around it, such as the `wgmma` kernels that only an `sm_90a`
//! build has) is optional: in every build its field of `Kernels` is an
//! `Option<Kernel>` (`None` where the build left it out), and its launch
//! functions exist and return [`Error::KernelNotFound`](crate::Error::KernelNotFound)
//! there, so the host program compiles the same for every arch.
//!
//! Images loaded from elsewhere (no bindings) keep the string API:
//! [`Module::kernel`](crate::Module::kernel) and [`Kernel::launch`](crate::Kernel::launch).

use crate::runtime::memory::{DevicePtr, SymBuffer, SymView};
use bytemuck::Pod;
use nvshmem_types::SymPtr;

/// Symmetric memory of `T`s, for a kernel's `SymPtr<T>` parameter:
/// `&SymBuffer<T>`, a `SymView<T>`, or a `SymPtr<T>` itself.
///
/// ```
/// use nvshmem_host::{AsSymPtr, SymPtr};
/// fn arg(x: impl AsSymPtr<u64>) -> SymPtr<u64> { x.as_sym_ptr() }
/// let p = unsafe { SymPtr::from_raw(8 as *mut u64) };
/// assert_eq!(arg(p), p);
/// ```
///
/// Memory of another element type is refused at compile time:
///
/// ```compile_fail,E0277
/// use nvshmem_host::{AsSymPtr, SymPtr};
/// fn arg(x: impl AsSymPtr<u64>) -> SymPtr<u64> { x.as_sym_ptr() }
/// let p = unsafe { SymPtr::from_raw(8 as *mut f32) };
/// arg(p); // a `SymPtr<u64>` parameter takes symmetric memory of `u64`, not `SymPtr<f32>`
/// ```
#[diagnostic::on_unimplemented(
    message = "a `SymPtr<{T}>` parameter takes symmetric memory of `{T}`, not `{Self}`",
    label = "expected `&SymBuffer<{T}>`, `SymView<{T}>` or `SymPtr<{T}>`",
    note = "pass a symmetric buffer by reference (`&buf`); its element type must be the kernel's"
)]
pub trait AsSymPtr<T> {
    /// The symmetric address.
    fn as_sym_ptr(&self) -> SymPtr<T>;
}

/// Device memory of `T`s, for a kernel's `*const T` or `*mut T` parameter:
/// `&SymBuffer<T>` or a `SymView<T>` (this PE's copy), or a `DevicePtr<T>`.
///
/// ```
/// use nvshmem_host::{AsDevicePtr, DevicePtr};
/// fn arg(x: impl AsDevicePtr<f32>) -> DevicePtr<f32> { x.as_device_ptr() }
/// assert_eq!(arg(DevicePtr::<f32>::new(256)).addr(), 256);
/// ```
///
/// ```compile_fail,E0277
/// use nvshmem_host::{AsDevicePtr, DevicePtr};
/// fn arg(x: impl AsDevicePtr<f32>) -> DevicePtr<f32> { x.as_device_ptr() }
/// arg(DevicePtr::<u32>::new(256)); // a `*mut f32` parameter takes device memory of `f32`
/// ```
#[diagnostic::on_unimplemented(
    message = "a `*const {T}` / `*mut {T}` parameter takes device memory of `{T}`, not `{Self}`",
    label = "expected `&SymBuffer<{T}>`, `SymView<{T}>` or `DevicePtr<{T}>`",
    note = "pass a buffer by reference (`&buf`); its element type must be the kernel's"
)]
pub trait AsDevicePtr<T> {
    /// This PE's device address.
    fn as_device_ptr(&self) -> DevicePtr<T>;
}

/// Each trait for its pointer itself, `&SymBuffer<T>` and `SymView<T>`
/// (through their method of the same purpose). A buffer is taken by
/// reference only: moved into a launch, it would be freed while the kernel runs.
macro_rules! pointer_args {
    ($($trait:ident::$as:ident -> $ptr:ident by $get:ident;)*) => {$(
        impl<T> $trait<T> for $ptr<T> {
            fn $as(&self) -> $ptr<T> {
                *self
            }
        }

        impl<T: Pod> $trait<T> for &SymBuffer<T> {
            fn $as(&self) -> $ptr<T> {
                self.$get()
            }
        }

        impl<T: Pod> $trait<T> for SymView<'_, T> {
            fn $as(&self) -> $ptr<T> {
                self.$get()
            }
        }
    )*};
}
pointer_args! {
    AsSymPtr::as_sym_ptr -> SymPtr by sym_ptr;
    AsDevicePtr::as_device_ptr -> DevicePtr by device_ptr;
}

/// Includes the typed bindings of a kernel crate that this package's build
/// script built with `nvshmem-builder` (`$OUT_DIR/nvshmem-kernels/<name>.rs`)
/// as a module `name`: the kernel crate's name with `-` as `_`. See
/// [`bindings`](crate::bindings) for what it holds.
///
/// ```ignore
/// nvshmem_host::include_kernels!(my_kernels); // the kernel crate `my-kernels`
///
/// let k = my_kernels::Kernels::load(&nv)?;
/// unsafe { my_kernels::scale(&k, nv.stream(), blocks, 256, &buf, n as u32)? };
/// ```
#[macro_export]
macro_rules! include_kernels {
    ($name:ident) => {
        #[doc = concat!(
                            "Typed launches of the kernels of `", stringify!($name),
                            "`, generated by `nvshmem-builder` (see `nvshmem_host::bindings`)."
                        )]
        #[allow(dead_code)]
        pub mod $name {
            include!(concat!(
                env!("OUT_DIR"),
                "/nvshmem-kernels/",
                stringify!($name),
                ".rs"
            ));
        }
    };
}
