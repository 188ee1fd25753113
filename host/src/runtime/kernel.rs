//! Launching the kernels of a loaded [`Module`](crate::Module): plain and
//! collective (cooperative) launches, checked against the manifest.

use crate::error::{Error, Result};
use crate::runtime::driver;
use crate::runtime::launch::{KernelArgs, LaunchConfig, check_co_resident, check_layout};
use crate::runtime::loaded::ModuleInner;
use cudarc::driver::{CudaStream, DriverError, result, sys};
use nvshmem_types::manifest::KernelInfo;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// A kernel of a loaded [`Module`](crate::Module) (which it keeps loaded).
///
/// Launching is `unsafe`: the runtime checks the arguments' count, sizes and
/// certainly wrong types against the manifest, the launch shape, the stream, and co-residency for
/// collective launches, but what the kernel does with its arguments (which
/// memory it touches, how far) is the kernel's own contract.
pub struct Kernel {
    module: Rc<ModuleInner>,
    func: sys::CUfunction,
    info: KernelInfo,
    passed: PassedLayouts,
    /// The largest dynamic shared memory already checked and allowed for
    /// this function: a launch with at most that skips the driver queries.
    shared_mem_allowed: Cell<u32>,
    /// The last cooperative launch's (threads, dynamic shared memory) and
    /// its occupancy (blocks per SM, SMs): the same shape skips the queries.
    occupancy_seen: Cell<Option<(LaunchShape, Occupancy)>>,
}

/// A launch's threads per block and dynamic shared memory.
type LaunchShape = (u32, u32);
/// Blocks per SM and SMs.
type Occupancy = (u32, u32);
/// A [`KernelArgs::layout`]: each argument's size and type name.
type Layout = [(usize, &'static str)];

/// Argument layouts (each argument's size and type name) that passed the
/// manifest check, so that launching again with the same argument types
/// skips it (it parses type names: 0.1–0.25 µs per argument, measured on the
/// CPU). The check is a pure function of the layout and the manifest, and a
/// type name is a `&'static str`: the same address and length is the same
/// text, so a remembered layout would pass again.
#[derive(Default)]
struct PassedLayouts(RefCell<Vec<Box<Layout>>>);

impl PassedLayouts {
    /// How many layouts it remembers (the oldest goes first).
    const CAPACITY: usize = 8;

    /// [`check_layout`], unless `layout` passed before.
    fn check(&self, info: &KernelInfo, layout: Vec<(usize, &'static str)>) -> Result<()> {
        let same = |seen: &Layout| {
            seen.len() == layout.len()
                && seen
                    .iter()
                    .zip(&layout)
                    .all(|(a, b)| a.0 == b.0 && std::ptr::eq(a.1, b.1))
        };
        if self.0.borrow().iter().any(|seen| same(seen)) {
            return Ok(());
        }
        check_layout(info, &layout)?;
        let mut passed = self.0.borrow_mut();
        if passed.len() == Self::CAPACITY {
            passed.remove(0);
        }
        passed.push(layout.into_boxed_slice());
        Ok(())
    }
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernel")
            .field("name", &self.info.name)
            .field("collective", &self.info.collective)
            .finish()
    }
}

/// The launch functions, plain and with a [`LaunchConfig`]: `$launch` and
/// `$with => cooperative`.
macro_rules! launch_fns {
    ($($(#[$doc:meta])* $launch:ident, $(#[$wdoc:meta])* $with:ident => $cooperative:literal;)*) => {$(
        $(#[$doc])*
        pub unsafe fn $launch<A: KernelArgs>(
            &self,
            stream: &CudaStream,
            grid: impl Into<crate::Dim3>,
            block: impl Into<crate::Dim3>,
            args: A,
        ) -> Result<()> {
            // SAFETY: the caller's.
            unsafe { self.$with(stream, LaunchConfig::new(grid, block), args) }
        }

        $(#[$wdoc])*
        pub unsafe fn $with<A: KernelArgs>(
            &self,
            stream: &CudaStream,
            config: LaunchConfig,
            args: A,
        ) -> Result<()> {
            // SAFETY: the caller's.
            unsafe { self.launch_checked(stream, config, args, $cooperative) }
        }
    )*};
}

impl Kernel {
    pub(crate) fn new(module: Rc<ModuleInner>, func: sys::CUfunction, info: KernelInfo) -> Self {
        Kernel {
            module,
            func,
            info,
            passed: PassedLayouts::default(),
            shared_mem_allowed: Cell::new(0),
            occupancy_seen: Cell::new(None),
        }
    }

    /// The entry name.
    pub fn name(&self) -> &str {
        &self.info.name
    }

    /// Its parameters and properties from the manifest.
    pub fn info(&self) -> &KernelInfo {
        &self.info
    }

    /// The driver's function handle, for interop and benchmarks (launching
    /// through it skips every check).
    pub fn cu_function(&self) -> sys::CUfunction {
        self.func
    }

    /// Whether it calls NVSHMEM barriers or collectives, so needs
    /// [`Kernel::launch_collective`].
    pub fn is_collective(&self) -> bool {
        self.info.collective
    }

    launch_fns! {
        /// Launches `grid` blocks of `block` threads on `stream` with `args`.
        /// Refused for a collective kernel ([`Error::CollectiveLaunchRequired`]).
        ///
        /// # Safety
        /// The arguments must satisfy the kernel's own contract (the memory it
        /// reads and writes through them must be valid for that, for as long as
        /// it runs; a [`Team`](crate::Team) from a [`SplitTeam`](crate::SplitTeam)
        /// must not be destroyed before the kernel ends). Count, sizes and
        /// certainly wrong types ([`check_kernel_args`](crate::launch::check_kernel_args))
        /// are checked against the manifest, which must describe the loaded image:
        /// the builder writes the two together, and
        /// [`Nvshmem::load_module_image`](crate::Nvshmem::load_module_image)
        /// takes the one you give it.
        ///
        /// ```no_run
        /// # let nv = nvshmem_host::Nvshmem::init()?;
        /// # let module = nv.load_module("kernels.json")?;
        /// let n = 1 << 20;
        /// let buf = nv.alloc::<f32>(n)?;
        /// let k = module.kernel("scale")?;
        /// unsafe { k.launch(nv.stream(), (n as u32).div_ceil(256), 256, (buf.sym_ptr(), n as u32))? };
        /// nv.synchronize(nv.stream())?;
        /// # Ok::<(), nvshmem_host::Error>(())
        /// ```
        launch,
        /// [`Kernel::launch`] with a [`LaunchConfig`] (dynamic shared memory).
        ///
        /// # Safety
        /// As [`Kernel::launch`].
        ///
        /// ```no_run
        /// # let nv = nvshmem_host::Nvshmem::init()?;
        /// # let k = nv.load_module("kernels.json")?.kernel("tile")?;
        /// let cfg = nvshmem_host::LaunchConfig::new(132, 256).shared_mem_bytes(64 << 10);
        /// unsafe { k.launch_with(nv.stream(), cfg, ())? };
        /// # Ok::<(), nvshmem_host::Error>(())
        /// ```
        launch_with => false;
        /// Launches with every block resident at once (`cuLaunchCooperativeKernel`),
        /// as kernels that call NVSHMEM barriers or collectives need. Checks first
        /// that the grid fits on the GPU at once ([`Error::GridTooLarge`]
        /// otherwise, rather than a hang).
        ///
        /// # Safety
        /// As [`Kernel::launch`].
        ///
        /// ```no_run
        /// # let nv = nvshmem_host::Nvshmem::init()?;
        /// # let k = nv.load_module("kernels.json")?.kernel("allreduce")?;
        /// let blocks = k.max_collective_blocks(256, 0)?.min(132);
        /// unsafe { k.launch_collective(nv.stream(), blocks, 256, ())? };
        /// # Ok::<(), nvshmem_host::Error>(())
        /// ```
        launch_collective,
        /// [`Kernel::launch_collective`] with a [`LaunchConfig`].
        ///
        /// # Safety
        /// As [`Kernel::launch`].
        launch_collective_with => true;
    }

    /// Checks the stream and the typed arguments, then [`Kernel::launch_params`].
    ///
    /// # Safety
    /// As [`Kernel::launch`].
    unsafe fn launch_checked<A: KernelArgs>(
        &self,
        stream: &CudaStream,
        config: LaunchConfig,
        args: A,
        cooperative: bool,
    ) -> Result<()> {
        self.module.nv.check_stream(stream)?;
        self.passed.check(&self.info, args.layout())?;
        // SAFETY: a stream of this context; arguments checked against the
        // manifest; the rest is the caller's.
        args.with_params(|params| unsafe {
            self.launch_params(
                stream.cu_stream(),
                Some(stream),
                config,
                params,
                cooperative,
            )
        })
    }

    /// Launches with arguments a dynamic host encoded ([`crate::dynamic`]):
    /// `cuLaunchKernel` (or `cuLaunchCooperativeKernel` when `cooperative`)
    /// on a stream given by its handle (PyTorch's current stream, say), after
    /// the same checks as [`Kernel::launch`] but for the arguments, which
    /// [`Signature::encode`](crate::dynamic::Signature::encode) checked.
    ///
    /// # Safety
    /// As [`Kernel::launch`]; `args` must come from this kernel's
    /// [`Signature`](crate::dynamic::Signature), and `stream` must be a live
    /// stream of this kernel's CUDA context (or null, the legacy stream).
    pub unsafe fn launch_encoded(
        &self,
        stream: sys::CUstream,
        config: LaunchConfig,
        args: &mut crate::runtime::dynamic::ArgBuffer,
        cooperative: bool,
    ) -> Result<()> {
        // SAFETY: the caller's.
        unsafe { self.launch_params(stream, None, config, args.params(), cooperative) }
    }

    /// The checks every launch makes, without launching: a collective kernel
    /// only `cooperative`, the runtime live (its context made current), the
    /// grid and block within the GPU's limits, the shared memory (the
    /// function opted into more than 48 KiB where `config` needs it), and a
    /// cooperative launch on a GPU that supports it with a co-resident grid.
    /// For a caller that then launches with the raw driver API (a
    /// launch-overhead loop, say).
    ///
    /// ```no_run
    /// # let kernel: nvshmem_host::Kernel = todo!();
    /// kernel.check_launch(&nvshmem_host::LaunchConfig::new(1u32, 32u32), false)?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn check_launch(&self, config: &LaunchConfig, cooperative: bool) -> Result<()> {
        if self.info.collective && !cooperative {
            return Err(Error::CollectiveLaunchRequired {
                kernel: self.info.name.clone(),
            });
        }
        self.module.nv.enter("Kernel::launch")?;
        config.check(&self.info.name)?;
        self.set_shared_mem(config.shared_mem_bytes)?;
        if cooperative {
            self.check_cooperative(config)?;
        }
        Ok(())
    }

    /// Checks a launch ([`Kernel::check_launch`]), launches, and records the
    /// kernel so that a later fault on the stream can name it.
    ///
    /// # Safety
    /// As [`Kernel::launch`], with `params` pointing at the kernel's arguments.
    unsafe fn launch_params(
        &self,
        stream: sys::CUstream,
        typed: Option<&CudaStream>,
        config: LaunchConfig,
        params: &mut [*mut std::ffi::c_void],
        cooperative: bool,
    ) -> Result<()> {
        self.check_launch(&config, cooperative)?;
        let nv = &self.module.nv;
        let (grid, block) = (config.grid, config.block);
        let launch = if cooperative {
            result::launch_cooperative_kernel
        } else {
            result::launch_kernel
        };
        // SAFETY: a function of a loaded module, a stream of its context,
        // arguments checked against the manifest; the rest is the caller's.
        let launched = unsafe {
            launch(
                self.func,
                (grid.x, grid.y, grid.z),
                (block.x, block.y, block.z),
                config.shared_mem_bytes,
                stream,
                params,
            )
        };
        match launched {
            Ok(()) => {
                nv.record_launch(stream, &self.info.name);
                Ok(())
            }
            // A sticky fault reported here comes from an earlier kernel.
            Err(e) if driver::is_kernel_fault(&e) => Err(nv.classify("cuLaunchKernel", typed, e)),
            Err(source) => Err(self.refused(config.block.count() as u32, source)),
        }
    }

    /// The error for a launch the driver refused: [`Error::BlockTooLarge`]
    /// when the block has more threads than the kernel's registers allow.
    fn refused(&self, threads: u32, source: DriverError) -> Error {
        let attribute = |a| {
            // SAFETY: a function of a loaded module; a valid attribute.
            unsafe { result::function::get_function_attribute(self.func, a) }
                .ok()
                .map(|v| v.max(0) as u32)
        };
        use sys::CUfunction_attribute::{
            CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK as MAX_THREADS,
            CU_FUNC_ATTRIBUTE_NUM_REGS as REGS,
        };
        if source.0 == sys::CUresult::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
            && let (Some(max), Some(regs)) = (attribute(MAX_THREADS), attribute(REGS))
            && threads > max
        {
            return Error::BlockTooLarge {
                kernel: self.info.name.clone(),
                threads,
                registers: regs,
                max_threads: max,
            };
        }
        Error::LaunchFailed {
            kernel: self.info.name.clone(),
            source,
        }
    }

    /// The GPU supports cooperative launches and `config`'s grid fits on it at once.
    fn check_cooperative(&self, config: &LaunchConfig) -> Result<()> {
        let threads = config.block.count() as u32;
        let shape = (threads, config.shared_mem_bytes);
        let (per_sm, sms) = match self.occupancy_seen.get() {
            Some((seen, occupancy)) if seen == shape => occupancy,
            _ => {
                let cooperative = self.device_attribute(
                    sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH,
                )?;
                if cooperative == 0 {
                    return Err(Error::InvalidArgument {
                        reason: format!(
                            "kernel `{}`: this GPU does not support cooperative launches",
                            self.info.name
                        ),
                    });
                }
                let occupancy = self.occupancy(threads, config.shared_mem_bytes)?;
                self.occupancy_seen.set(Some((shape, occupancy)));
                occupancy
            }
        };
        check_co_resident(&self.info.name, config.grid.count(), threads, per_sm, sms)
    }

    /// The most blocks of `block` threads (with `shared_mem_bytes` of dynamic
    /// shared memory each) that can be resident at once: the largest grid
    /// [`Kernel::launch_collective`] accepts.
    pub fn max_collective_blocks(
        &self,
        block: impl Into<crate::Dim3>,
        shared_mem_bytes: u32,
    ) -> Result<u32> {
        self.module.nv.enter("Kernel::max_collective_blocks")?;
        let config = LaunchConfig::new(1, block).shared_mem_bytes(shared_mem_bytes);
        config.check(&self.info.name)?;
        self.set_shared_mem(shared_mem_bytes)?;
        let (per_sm, sms) = self.occupancy(config.block.count() as u32, shared_mem_bytes)?;
        Ok(per_sm.saturating_mul(sms))
    }

    /// Blocks per SM for this block size, and the SM count.
    fn occupancy(&self, threads: u32, shared_mem_bytes: u32) -> Result<(u32, u32)> {
        // SAFETY: a function of a loaded module.
        let per_sm = unsafe {
            result::occupancy::max_active_block_per_multiprocessor(
                self.func,
                threads as i32,
                shared_mem_bytes as usize,
            )
        }
        .map_err(Error::driver("cuOccupancyMaxActiveBlocksPerMultiprocessor"))?;
        let sms = self
            .device_attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
        Ok((per_sm.max(0) as u32, sms.max(0) as u32))
    }

    /// An attribute of the module's GPU.
    fn device_attribute(&self, attribute: sys::CUdevice_attribute) -> Result<i32> {
        (self.module.nv.ctx)
            .attribute(attribute)
            .map_err(Error::driver("cuDeviceGetAttribute"))
    }

    /// Checks the block's shared memory (static + `bytes` dynamic) against
    /// the GPU's limit ([`Error::SharedMemoryTooLarge`]), and opts the
    /// function into more than 48 KiB when the total needs it.
    fn set_shared_mem(&self, bytes: u32) -> Result<()> {
        // Static shared memory alone is at most 48 KiB (ptxas enforces it);
        // a size at most one allowed before needs nothing new.
        if bytes <= self.shared_mem_allowed.get() {
            return Ok(());
        }
        let launch_err = |source| Error::LaunchFailed {
            kernel: self.info.name.clone(),
            source,
        };
        // SAFETY: a function of a loaded module; a valid attribute.
        let static_bytes = unsafe {
            result::function::get_function_attribute(
                self.func,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
            )
        }
        .map_err(launch_err)?;
        let limit = self
            .module
            .nv
            .ctx
            .attribute(
                sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )
            .map_err(Error::driver("cuDeviceGetAttribute"))?;
        let opt_in = crate::runtime::launch::check_shared_memory(
            &self.info.name,
            static_bytes.max(0) as u32,
            bytes,
            limit.max(0) as u32,
        )?;
        if let Some(dynamic) = opt_in {
            let attribute =
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
            // SAFETY: a function of a loaded module; a valid attribute.
            let now = unsafe { result::function::get_function_attribute(self.func, attribute) }
                .map_err(launch_err)?;
            // Never lowered: another `Kernel` of the same function may have
            // allowed more, and remembers it (`shared_mem_allowed`).
            if (dynamic as i32) > now {
                // SAFETY: a function of a loaded module; a valid attribute and size.
                unsafe {
                    result::function::set_function_attribute(self.func, attribute, dynamic as i32)
                }
                .map_err(launch_err)?;
            }
        }
        self.shared_mem_allowed.set(bytes);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nvshmem_types::manifest::ParamInfo;

    fn info() -> KernelInfo {
        let param = |name: &str, ty: &str, size| ParamInfo {
            name: name.into(),
            rust_type: ty.into(),
            c_type: String::new(),
            size,
            align: size,
        };
        KernelInfo::new(
            "k",
            vec![param("x", "SymPtr<f32>", 8), param("n", "u32", 4)],
            false,
        )
    }

    /// A remembered layout passes again without the check; another layout is
    /// still checked (and refused) after one passed, and a refused one is not
    /// remembered.
    #[test]
    fn remembered_layouts_skip_only_the_check_they_passed() {
        let (info, passed) = (info(), PassedLayouts::default());
        let ptr = unsafe { crate::SymPtr::from_raw(std::ptr::null_mut::<f32>()) };
        let wrong = unsafe { crate::SymPtr::from_raw(std::ptr::null_mut::<u64>()) };
        assert!(passed.check(&info, (ptr, 3u32).layout()).is_ok());
        assert_eq!(passed.0.borrow().len(), 1);
        assert!(passed.check(&info, (ptr, 4u32).layout()).is_ok());
        assert_eq!(
            passed.0.borrow().len(),
            1,
            "the same types: remembered once"
        );
        assert!(passed.check(&info, (wrong, 3u32).layout()).is_err());
        assert!(
            passed.check(&info, (ptr, 3i32).layout()).is_ok(),
            "same size, integer"
        );
        assert!(passed.check(&info, (ptr, 3f32).layout()).is_err());
        assert!(passed.check(&info, (ptr,).layout()).is_err());
        assert_eq!(
            passed.0.borrow().len(),
            2,
            "refused layouts are not remembered"
        );
    }

    /// At most [`PassedLayouts::CAPACITY`] layouts, the oldest dropped first.
    #[test]
    fn remembers_a_bounded_number_of_layouts() {
        // One 4-byte parameter of a type the builder could not read: checked
        // by size only, so every 4-byte type passes.
        let param = ParamInfo {
            name: "x".into(),
            rust_type: String::new(),
            c_type: String::new(),
            size: 4,
            align: 4,
        };
        let info = KernelInfo::new("k", vec![param], false);
        let passed = PassedLayouts::default();
        let layouts = [
            (1u32,).layout(),
            (1i32,).layout(),
            (1f32,).layout(),
            ([1u8; 4],).layout(),
            ([1i8; 4],).layout(),
            ([1u16; 2],).layout(),
            ([1i16; 2],).layout(),
            ([true; 4],).layout(),
            (crate::Pe::new(0),).layout(),
            (crate::Team::WORLD,).layout(),
        ];
        for layout in layouts.iter().cloned() {
            passed.check(&info, layout).unwrap();
        }
        let kept = passed.0.borrow();
        assert_eq!(kept.len(), PassedLayouts::CAPACITY);
        assert_eq!(
            kept[0].as_ref(),
            layouts[2].as_slice(),
            "the oldest two dropped"
        );
        drop(kept);
        assert!(passed.check(&info, (1u64,).layout()).is_err());
    }
}
