//! Kernel arguments and launch shapes.
//!
//! A kernel's arguments are a tuple of [`KernelParam`] values, such as
//! `(buf.sym_ptr(), n as u32, nv.my_pe())`. Before a launch they are checked
//! against the kernel's parameters in the builder's manifest (count, size of
//! each, and types that are certainly wrong), so a wrong argument is an
//! error, not a corrupted launch.

use crate::error::{Error, Result};
use crate::runtime::memory::DevicePtr;
use nvshmem_types::manifest::KernelInfo;
use std::ffi::c_void;

/// A grid or block shape. Converts from `u32`, `(u32, u32)` and `(u32, u32, u32)`.
///
/// ```
/// use nvshmem_host::Dim3;
/// assert_eq!(Dim3::from(128).count(), 128);
/// assert_eq!(Dim3::from((4, 2)).count(), 8);
/// assert_eq!(Dim3::from((2, 2, 2)), Dim3 { x: 2, y: 2, z: 2 });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dim3 {
    /// Extent in x.
    pub x: u32,
    /// Extent in y.
    pub y: u32,
    /// Extent in z.
    pub z: u32,
}

impl Dim3 {
    /// `x * y * z`.
    pub fn count(self) -> u64 {
        self.x as u64 * self.y as u64 * self.z as u64
    }
}

impl From<u32> for Dim3 {
    fn from(x: u32) -> Self {
        Dim3 { x, y: 1, z: 1 }
    }
}

impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Self {
        Dim3 { x, y, z: 1 }
    }
}

impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Self {
        Dim3 { x, y, z }
    }
}

/// A launch's shape: grid, block and dynamic shared memory.
///
/// ```
/// use nvshmem_host::LaunchConfig;
/// let cfg = LaunchConfig::new(132, 256).shared_mem_bytes(16 << 10);
/// assert_eq!(cfg.block.x, 256);
/// let cfg = LaunchConfig::for_elements(1000, 256);
/// assert_eq!(cfg.grid.x, 4);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaunchConfig {
    /// Blocks in the grid.
    pub grid: Dim3,
    /// Threads in a block.
    pub block: Dim3,
    /// Bytes of dynamic shared memory per block.
    pub shared_mem_bytes: u32,
}

impl LaunchConfig {
    /// `grid` blocks of `block` threads, no dynamic shared memory.
    pub fn new(grid: impl Into<Dim3>, block: impl Into<Dim3>) -> Self {
        LaunchConfig {
            grid: grid.into(),
            block: block.into(),
            shared_mem_bytes: 0,
        }
    }

    /// Enough blocks of `threads` (1-D) to cover `n` elements, one per thread.
    pub fn for_elements(n: u32, threads: u32) -> Self {
        let threads = threads.max(1);
        Self::new(n.div_ceil(threads).max(1), threads)
    }

    /// With `bytes` of dynamic shared memory per block.
    pub fn shared_mem_bytes(mut self, bytes: u32) -> Self {
        self.shared_mem_bytes = bytes;
        self
    }

    pub(crate) fn check(&self, kernel: &str) -> Result<()> {
        let zero = |d: Dim3| d.x == 0 || d.y == 0 || d.z == 0;
        if zero(self.grid) || zero(self.block) {
            return Err(Error::ArgumentMismatch {
                kernel: kernel.into(),
                reason: format!(
                    "grid {:?} and block {:?} must have no zero extent",
                    self.grid, self.block
                ),
            });
        }
        if self.block.count() > 1024 {
            return Err(Error::ArgumentMismatch {
                kernel: kernel.into(),
                reason: format!(
                    "a block of {} threads is over CUDA's 1024",
                    self.block.count()
                ),
            });
        }
        Ok(())
    }
}

/// A value that can be passed to a kernel parameter (defined in
/// `nvshmem-types`, so that a kernel crate's `#[derive(KernelParam)]`
/// structs are kernel arguments here too).
///
/// ```compile_fail
/// # fn f(k: &nvshmem_host::Kernel, nv: &nvshmem_host::Nvshmem, host: *mut u64) -> nvshmem_host::Result<()> {
/// // error: `*mut u64` cannot be passed to a kernel; pass `buf.sym_ptr()` or `buf.device_ptr()`
/// unsafe { k.launch(nv.stream(), 1, 1, (host,)) }
/// # }
/// ```
pub use nvshmem_types::KernelParam;

// SAFETY: `#[repr(transparent)]` over `u64`: the ABI of `T*`.
unsafe impl<T> KernelParam for DevicePtr<T> {}

/// A kernel's arguments: a tuple of up to 16 [`KernelParam`]s (`()` for none,
/// `(x,)` for one).
pub trait KernelArgs {
    /// Each argument's size in bytes and type name, in order.
    fn layout(&self) -> Vec<(usize, &'static str)>;

    /// Calls `f` with a pointer to each argument, as `cuLaunchKernel` takes them.
    fn with_params<R>(&self, f: impl FnOnce(&mut [*mut c_void]) -> R) -> R;
}

impl KernelArgs for () {
    fn layout(&self) -> Vec<(usize, &'static str)> {
        Vec::new()
    }
    fn with_params<R>(&self, f: impl FnOnce(&mut [*mut c_void]) -> R) -> R {
        f(&mut [])
    }
}

macro_rules! kernel_args_tuple {
    ($($name:ident $idx:tt),+) => {
        impl<$($name: KernelParam),+> KernelArgs for ($($name,)+) {
            fn layout(&self) -> Vec<(usize, &'static str)> {
                vec![$((std::mem::size_of::<$name>(), $name::type_name())),+]
            }
            fn with_params<R>(&self, f: impl FnOnce(&mut [*mut c_void]) -> R) -> R {
                // The driver copies the values during the launch call, so
                // pointers into `self` are enough.
                let mut params = [$(&self.$idx as *const $name as *mut c_void),+];
                f(&mut params)
            }
        }
    };
}
kernel_args_tuple!(A 0);
kernel_args_tuple!(A 0, B 1);
kernel_args_tuple!(A 0, B 1, C 2);
kernel_args_tuple!(A 0, B 1, C 2, D 3);
kernel_args_tuple!(A 0, B 1, C 2, D 3, E 4);
kernel_args_tuple!(A 0, B 1, C 2, D 3, E 4, F 5);
kernel_args_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
kernel_args_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
kernel_args_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
kernel_args_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
kernel_args_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
kernel_args_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);
kernel_args_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12);
kernel_args_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13);
kernel_args_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14);
kernel_args_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14, P 15);

/// Checks `args` against the kernel's parameters in its manifest: the count,
/// each argument's size, and its Rust type where that is certainly wrong
/// ([`type_mismatch`](crate::dynamic::type_mismatch): a number for a
/// pointer or the reverse, a float for an integer or the reverse, a pointer
/// to elements of another size). Works without a GPU.
///
/// ```
/// use nvshmem_types::manifest::{KernelInfo, ParamInfo};
/// use nvshmem_host::launch::check_kernel_args;
/// let param = |name: &str, ty: &str, size| ParamInfo {
///     name: name.into(), rust_type: ty.into(), c_type: String::new(), size, align: size,
/// };
/// let params = vec![param("data", "SymPtr<f32>", 8), param("n", "u32", 4)];
/// let info = KernelInfo::new("scale", params, false);
/// let data = unsafe { nvshmem_host::SymPtr::from_raw(std::ptr::null_mut::<f32>()) };
/// assert!(check_kernel_args(&info, &(data, 10u32)).is_ok());
/// assert!(check_kernel_args(&info, &(data, 10u64)).is_err()); // n is 4 bytes
/// assert!(check_kernel_args(&info, &(data, 10f32)).is_err()); // n is an integer
/// assert!(check_kernel_args(&info, &(data,)).is_err());       // one argument missing
/// ```
pub fn check_kernel_args<A: KernelArgs>(info: &KernelInfo, args: &A) -> Result<()> {
    check_layout(info, &args.layout())
}

/// [`check_kernel_args`] on a [`KernelArgs::layout`]: a pure function of the
/// layout and the manifest (which is what lets [`Kernel`](crate::Kernel)
/// remember the layouts that passed).
pub(crate) fn check_layout(info: &KernelInfo, given: &[(usize, &'static str)]) -> Result<()> {
    let mismatch = |reason: String| Error::ArgumentMismatch {
        kernel: info.name.clone(),
        reason,
    };
    let describe = |p: &nvshmem_types::manifest::ParamInfo| {
        if p.rust_type.is_empty() {
            format!("`{}`", p.name)
        } else {
            format!("`{}: {}`", p.name, p.rust_type)
        }
    };
    if given.len() != info.params.len() {
        let expected: Vec<String> = info.params.iter().map(describe).collect();
        return Err(mismatch(format!(
            "it takes {} argument(s) ({}), but {} were given",
            info.params.len(),
            expected.join(", "),
            given.len()
        )));
    }
    for (i, (param, &(size, type_name))) in info.params.iter().zip(given).enumerate() {
        // Only what is certainly wrong (`type_mismatch`); a parameter whose
        // type the builder could not read is checked by size only.
        if let Some(why) = (!param.rust_type.is_empty())
            .then(|| crate::runtime::dynamic::type_mismatch(&param.rust_type, type_name))
            .flatten()
        {
            return Err(mismatch(format!(
                "argument {i} ({}): {why}",
                describe(param)
            )));
        }
        if param.size as usize != size {
            return Err(mismatch(format!(
                "argument {i} ({}) is {} bytes, but a {type_name} of {size} bytes was given",
                describe(param),
                param.size
            )));
        }
    }
    Ok(())
}

/// Shared memory a block may use without opting in, on every GPU since Volta.
pub const DEFAULT_SHARED_MEM_BYTES: u32 = 48 << 10;

/// Checks a launch's shared memory per block: `static_bytes` (the kernel's
/// own, `CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES`; the manifest's
/// `static_shared_bytes`) plus `dynamic_bytes` must fit in `limit` (the
/// device's opt-in maximum per block). Returns the dynamic size the function
/// must be allowed (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`) when
/// the total is over the default 48 KiB, or `None` when no opt-in is needed.
/// Works without a GPU.
///
/// ```
/// use nvshmem_host::launch::check_shared_memory;
/// // H100/H200: 227 KiB per block, opted in.
/// let limit = 227 << 10;
/// assert_eq!(check_shared_memory("k", 1024, 16 << 10, limit).unwrap(), None);
/// assert_eq!(check_shared_memory("k", 8 << 10, 44 << 10, limit).unwrap(), Some(44 << 10));
/// assert!(check_shared_memory("k", 8 << 10, 220 << 10, limit).is_err());
/// ```
pub fn check_shared_memory(
    kernel: &str,
    static_bytes: u32,
    dynamic_bytes: u32,
    limit: u32,
) -> Result<Option<u32>> {
    let total = static_bytes as u64 + dynamic_bytes as u64;
    if total > limit as u64 {
        return Err(Error::SharedMemoryTooLarge {
            kernel: kernel.into(),
            static_bytes,
            dynamic_bytes,
            limit,
        });
    }
    Ok((total > DEFAULT_SHARED_MEM_BYTES as u64).then_some(dynamic_bytes))
}

/// Checks that `blocks` blocks can all be resident at once, given how many
/// fit on one SM (the driver's occupancy for this kernel and block) and the
/// number of SMs. Works without a GPU.
///
/// ```
/// use nvshmem_host::launch::check_co_resident;
/// assert!(check_co_resident("k", 264, 256, 2, 132).is_ok());
/// assert!(check_co_resident("k", 265, 256, 2, 132).is_err());
/// ```
pub fn check_co_resident(
    kernel: &str,
    blocks: u64,
    threads: u32,
    per_sm: u32,
    sms: u32,
) -> Result<()> {
    let max_blocks = per_sm as u64 * sms as u64;
    if blocks <= max_blocks {
        Ok(())
    } else {
        Err(Error::GridTooLarge {
            kernel: kernel.into(),
            blocks,
            threads,
            per_sm,
            sms,
            max_blocks,
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use nvshmem_types::manifest::ParamInfo;
    use nvshmem_types::{Pe, SymPtr};

    /// A kernel `k` with these `(name, Rust type, size)` parameters.
    pub(crate) fn info(params: &[(&str, &str, u32)], collective: bool) -> KernelInfo {
        let params = params
            .iter()
            .map(|(n, t, s)| ParamInfo {
                name: (*n).into(),
                rust_type: (*t).into(),
                c_type: String::new(),
                size: *s,
                align: *s,
            })
            .collect();
        KernelInfo::new("k", params, collective)
    }

    #[test]
    fn arguments_are_checked_by_count_and_size() {
        let k = info(
            &[("dst", "SymPtr<u64>", 8), ("n", "u32", 4), ("pe", "Pe", 4)],
            false,
        );
        let dst = unsafe { SymPtr::from_raw(std::ptr::null_mut::<u64>()) };
        assert!(check_kernel_args(&k, &(dst, 4u32, Pe::new(1))).is_ok());
        assert!(
            check_kernel_args(&k, &(DevicePtr::<u64>::new(0), 4i32, 1u32)).is_ok(),
            "sizes match"
        );

        let err = check_kernel_args(&k, &(dst, 4u32)).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("takes 3 argument(s)") && msg.contains("`n: u32`"),
            "{msg}"
        );

        let err = check_kernel_args(&k, &(dst, 4u64, Pe::new(1))).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("argument 1 (`n: u32`) is 4 bytes") && msg.contains("u64 of 8 bytes"),
            "{msg}"
        );

        assert!(check_kernel_args(&info(&[], false), &()).is_ok());
        assert!(check_kernel_args(&info(&[], false), &(1u8,)).is_err());
    }

    /// Only what is certainly wrong is refused: the launches that ran on the
    /// GPU (MoE's bf16 rows for `*const u16`, a byte null for any pointer,
    /// a symmetric buffer for a plain pointer) pass.
    #[test]
    fn arguments_are_refused_by_type_only_when_certainly_wrong() {
        let sym_f32 = unsafe { SymPtr::from_raw(std::ptr::null_mut::<f32>()) };
        let sym_u64 = unsafe { SymPtr::from_raw(std::ptr::null_mut::<u64>()) };
        let one = |ty: &str, size: u32| info(&[("x", ty, size)], false);
        // Accepted.
        let ok = |ty: &str, r: Result<()>| assert!(r.is_ok(), "{ty}: {:?}", r.err());
        let bf16 = DevicePtr::<half::bf16>::new(0);
        ok(
            "*const u16",
            check_kernel_args(&one("*const u16", 8), &(bf16,)),
        );
        let byte_null = DevicePtr::<u8>::new(0);
        ok(
            "*const f32",
            check_kernel_args(&one("*const f32", 8), &(byte_null,)),
        );
        ok(
            "*mut u8",
            check_kernel_args(&one("*mut u8", 8), &(DevicePtr::<u64>::new(0),)),
        );
        ok(
            "*mut u32",
            check_kernel_args(&one("*mut u32", 8), &(sym_f32,)),
        );
        let f32_ptr = DevicePtr::<f32>::new(0);
        ok(
            "SymPtr<f32>",
            check_kernel_args(&one("SymPtr<f32>", 8), &(f32_ptr,)),
        );
        let k = one("nvshmem_device::SymPtr<half::bf16>", 8);
        ok(
            "SymPtr<bf16>",
            check_kernel_args(&k, &(DevicePtr::<i16>::new(0),)),
        );
        ok(
            "*const Plan",
            check_kernel_args(&one("*const Plan", 8), &(sym_u64,)),
        );
        ok(
            "*mut c_void",
            check_kernel_args(&one("*mut c_void", 8), &(sym_u64,)),
        );
        ok("u32", check_kernel_args(&one("u32", 4), &(7i32,)));
        ok("u64", check_kernel_args(&one("u64", 8), &(7usize,)));
        ok("u8", check_kernel_args(&one("u8", 1), &(true,)));
        ok("Pe", check_kernel_args(&one("Pe", 4), &(1u32,)));
        ok(
            "i32",
            check_kernel_args(&one("i32", 4), &(nvshmem_types::Team::WORLD,)),
        );
        ok(
            "bf16",
            check_kernel_args(&one("bf16", 2), &(half::f16::ONE,)),
        );
        ok(
            "[u16; 2]",
            check_kernel_args(&one("[u16; 2]", 4), &([1u16, 2],)),
        );
        ok("Affine", check_kernel_args(&one("Affine", 4), &(1.0f32,)));
        ok("", check_kernel_args(&one("", 8), &(1.0f64,)));

        // Refused, naming the kernel, the parameter, both types and the fix.
        fn refused<A: KernelArgs>(ty: &str, size: u32, args: A, words: &[&str]) {
            let k = info(&[("x", ty, size)], false);
            let msg = check_kernel_args(&k, &args).unwrap_err().to_string();
            assert!(
                msg.contains("kernel `k`") && msg.contains(&format!("argument 0 (`x: {ty}`)")),
                "{ty}: {msg}"
            );
            for w in words {
                assert!(msg.contains(w), "{w:?} not in {msg}");
            }
        }
        refused(
            "*mut f32",
            8,
            (0x1000u64,),
            &["takes a pointer", "`u64`", "buf.device_ptr()"],
        );
        refused(
            "u64",
            8,
            (f32_ptr,),
            &["an integer by value", "`DevicePtr<f32>`", "pass a `u64`"],
        );
        refused(
            "u32",
            4,
            (1.0f32,),
            &["takes an integer", "`f32` (a float)", "`x as u32`"],
        );
        refused("f32", 4, (1i32,), &["takes a float", "`i32` (an integer)"]);
        refused("u64", 8, (1.0f64,), &["takes an integer", "`f64`"]);
        refused("Pe", 4, (1.0f32,), &["takes an integer", "`f32`"]);
        refused(
            "SymPtr<f32>",
            8,
            (sym_u64,),
            &[
                "points to f32 (4 bytes each)",
                "`SymPtr<u64>` points to u64 (8 bytes)",
                "a buffer of f32",
            ],
        );
        let u32_ptr = DevicePtr::<u32>::new(0);
        refused(
            "*const u16",
            8,
            (u32_ptr,),
            &["points to u16", "`DevicePtr<u32>`"],
        );
        // A scalar of another size: the size check.
        refused("u32", 4, (1u64,), &["is 4 bytes", "u64 of 8 bytes"]);
    }

    #[test]
    fn argument_pointers_point_at_the_values() {
        let args = (1u8, 2u32, 3.0f64);
        args.with_params(|p| {
            assert_eq!(p.len(), 3);
            assert_eq!(unsafe { *(p[1] as *const u32) }, 2);
            assert_eq!(unsafe { *(p[2] as *const f64) }, 3.0);
        });
        assert_eq!(args.layout(), vec![(1, "u8"), (4, "u32"), (8, "f64")]);
    }

    #[test]
    fn sixteen_arguments_fit() {
        let args = (
            0u8, 1u8, 2u8, 3u8, 4u8, 5u8, 6u8, 7u8, 8u8, 9u8, 10u8, 11u8, 12u8, 13u8, 14u8, 15u8,
        );
        assert_eq!(args.layout().len(), 16);
    }

    #[test]
    fn launch_shapes_are_checked() {
        assert!(LaunchConfig::new(1, 1024).check("k").is_ok());
        assert!(LaunchConfig::new(1, 1025).check("k").is_err());
        assert!(LaunchConfig::new(0, 32).check("k").is_err());
        assert!(LaunchConfig::new((1, 0), 32).check("k").is_err());
        assert_eq!(LaunchConfig::for_elements(0, 128).grid.x, 1);
        assert_eq!(LaunchConfig::for_elements(257, 128).grid.x, 3);
    }

    #[test]
    fn shared_memory_is_checked_against_the_limit() {
        let limit = 227 << 10; // sm_90, opted in
        // Within the default 48 KiB: nothing to opt into.
        assert_eq!(check_shared_memory("k", 0, 0, limit).unwrap(), None);
        assert_eq!(
            check_shared_memory("k", 16 << 10, 32 << 10, limit).unwrap(),
            None
        );
        // Over 48 KiB in total, even with less than 48 KiB dynamic: opt in.
        assert_eq!(
            check_shared_memory("k", 16 << 10, 33 << 10, limit).unwrap(),
            Some(33 << 10)
        );
        assert_eq!(
            check_shared_memory("k", 0, 200 << 10, limit).unwrap(),
            Some(200 << 10)
        );
        // Exactly the limit fits; one byte more does not.
        assert_eq!(
            check_shared_memory("k", 1 << 10, limit - (1 << 10), limit).unwrap(),
            Some(limit - (1 << 10))
        );
        let err = check_shared_memory("tile", 1 << 10, limit - (1 << 10) + 1, limit).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("kernel `tile`")
                && msg.contains("1024 bytes of static")
                && msg.contains(&format!("limit of {limit} bytes"))
                && msg.contains(&format!("at most {} bytes of dynamic", limit - 1024)),
            "{msg}"
        );
        assert!(matches!(err, Error::SharedMemoryTooLarge { .. }));
        // No overflow with absurd sizes.
        assert!(check_shared_memory("k", u32::MAX, u32::MAX, limit).is_err());
    }

    #[test]
    fn a_grid_too_large_for_a_collective_launch_says_how_many_fit() {
        let err = check_co_resident("allreduce", 1000, 512, 4, 132).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("allreduce") && msg.contains("1000 blocks") && msg.contains("at most 528"),
            "{msg}"
        );
    }
}
