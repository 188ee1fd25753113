//! The runtime handle, [`Nvshmem`], and the state its buffers, modules and
//! kernels share; finalization.

use crate::error::{Error, Result, record_drop_error, take_drop_error};
use crate::job::bootstrap::Plan;
use crate::runtime::driver::{self, GpuChoice};
use crate::runtime::heap::HeapLimit;
use crate::runtime::library::HostLibrary;
use cudarc::driver::{CudaContext, CudaStream, DriverError};
use nvshmem_types::{Pe, Version};
use std::cell::{Cell, RefCell};
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const LIMITED_MPG_REASON: &str = "several PEs share this GPU without CUDA MPS, and NVSHMEM then \
    supports only part of its API (limited MPG). Fix: run one PE per GPU, or start CUDA MPS \
    (`nvidia-cuda-mps-control -d`) with NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1 \
    (`nvshmem-run --mps` does both)";

/// Whether an `Nvshmem` is alive in this process.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Holds [`ACTIVE`] during init; releases it unless init succeeds.
pub(crate) struct ActiveGuard {
    keep: bool,
}

impl ActiveGuard {
    pub(crate) fn acquire() -> Result<Self> {
        ACTIVE
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .map_err(|_| Error::AlreadyInitialized)?;
        Ok(ActiveGuard { keep: false })
    }
    pub(crate) fn keep(mut self) {
        self.keep = true;
    }
}

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        if !self.keep {
            ACTIVE.store(false, Ordering::Release);
        }
    }
}

/// What a successful `nvshmemx_hostlib_init_attr` leaves, for [`Nvshmem::started`].
pub(crate) struct Started {
    pub(crate) lib: &'static HostLibrary,
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) gpu: GpuChoice,
    pub(crate) plan: Plan,
    pub(crate) heap_limit: HeapLimit,
    pub(crate) guard: ActiveGuard,
    pub(crate) timings: InitTimings,
    /// Initialized by another component ([`Nvshmem::attach`]).
    pub(crate) attached: bool,
}

/// The state behind [`Nvshmem`], shared by its buffers, modules and kernels
/// so that NVSHMEM is finalized only after the last of them is dropped.
pub(crate) struct Inner {
    pub(crate) lib: &'static HostLibrary,
    pub(crate) ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    gpu: GpuChoice,
    my_pe: u32,
    n_pes: u32,
    bootstrap: String,
    finalized: Cell<bool>,
    /// Bytes of the live buffers, and the most this runtime lets them reach
    /// (see [`HeapLimit`]).
    pub(crate) heap_used: Cell<usize>,
    pub(crate) heap_limit: HeapLimit,
    /// The checked buffers freed so far: their count, and a fingerprint of
    /// their allocation numbers in the order freed (see `Nvshmem::alloc`).
    pub(crate) frees: Cell<(u64, u64)>,
    /// The first kernel fault: the context is unusable from then on, and
    /// NVSHMEM's teardown (free, finalize) would abort the process on it.
    fault: RefCell<Option<(String, DriverError)>>,
    /// Several PEs share a GPU without MPS, so NVSHMEM supports only some APIs.
    limited_mpg: bool,
    /// NVSHMEM belongs to another component of the process ([`Nvshmem::attach`]),
    /// which finalizes it: this runtime never does.
    attached: bool,
    /// The last kernel launched on each stream, to name it in a fault.
    launches: RefCell<Vec<(usize, String)>>,
    /// The handles of the live split teams: host calls refuse any other
    /// non-predefined handle (NVSHMEM would index a freed team slot).
    pub(crate) split_teams: RefCell<Vec<i32>>,
    /// Where init's time went.
    timings: InitTimings,
}

impl Inner {
    /// Fails once NVSHMEM has been finalized: by us, or, attached, by its
    /// owner (asked each time: its heap and teams are gone then, and freeing
    /// or calling into them is undefined behaviour).
    pub(crate) fn check_active(&self, what: &'static str) -> Result<()> {
        if self.finalized.get() || (self.attached && !self.lib.is_initialized()) {
            Err(Error::Finalized { what })
        } else {
            Ok(())
        }
    }

    /// Checks activity and makes the context current for a driver or NVSHMEM call.
    pub(crate) fn enter(&self, what: &'static str) -> Result<()> {
        self.check_active(what)?;
        self.ctx
            .bind_to_thread()
            .map_err(Error::driver("cuCtxSetCurrent"))
    }

    /// [`Inner::enter`] for a safe operation on symmetric memory issued on
    /// `stream`: the stream is of this context and is not capturing a CUDA
    /// graph. A captured operation runs whenever the graph is launched, after
    /// its buffers may have been freed (their drop waits only for queued
    /// work), so only an unsafe kernel launch may be captured.
    pub(crate) fn enter_stream(&self, stream: &CudaStream, what: &'static str) -> Result<()> {
        if !self.enter_capturing(stream, what)? {
            Ok(())
        } else {
            Err(Error::Unsupported {
                what,
                reason: "the stream is capturing a CUDA graph, which could replay this operation \
                         after its buffers are freed. Fix: issue it before or after the capture, \
                         or capture a kernel launch (unsafe: the buffers must then outlive every \
                         launch of the graph)",
            })
        }
    }

    /// [`Inner::enter`] and the stream's check, then whether it is capturing
    /// a CUDA graph.
    fn enter_capturing(&self, stream: &CudaStream, what: &'static str) -> Result<bool> {
        self.enter(what)?;
        self.check_stream(stream)?;
        driver::is_capturing(stream)
    }

    /// Fails unless `stream` belongs to this context.
    pub(crate) fn check_stream(&self, stream: &CudaStream) -> Result<()> {
        if stream.context().cu_ctx() == self.ctx.cu_ctx() {
            Ok(())
        } else {
            Err(Error::InvalidArgument {
                reason:
                    "the stream belongs to another CUDA context; create it with Nvshmem::new_stream"
                        .into(),
            })
        }
    }

    pub(crate) fn check_pe(&self, pe: Pe) -> Result<()> {
        if pe.index() < self.n_pes {
            Ok(())
        } else {
            Err(Error::InvalidPe {
                pe: pe.index(),
                n_pes: self.n_pes,
            })
        }
    }

    pub(crate) fn record_launch(&self, stream: cudarc::driver::sys::CUstream, kernel: &str) {
        let key = stream as usize;
        let mut launches = self.launches.borrow_mut();
        match launches.iter_mut().find(|(s, _)| *s == key) {
            Some(entry) => kernel.clone_into(&mut entry.1),
            None => launches.push((key, kernel.to_string())),
        }
        // The most recent launch anywhere goes last.
        if let Some(pos) = launches.iter().position(|(s, _)| *s == key) {
            let entry = launches.remove(pos);
            launches.push(entry);
        }
    }

    /// The kernel a fault seen on `stream` most likely came from.
    pub(crate) fn faulting_kernel(&self, stream: Option<&CudaStream>) -> String {
        let launches = self.launches.borrow();
        let on_stream =
            stream.and_then(|s| launches.iter().find(|(k, _)| *k == s.cu_stream() as usize));
        match on_stream.or(launches.last()) {
            Some((_, name)) => name.clone(),
            None => "(no kernel launched by this runtime)".into(),
        }
    }

    /// A driver error as a [`Error::KernelFault`] when it is one (which
    /// poisons the context).
    pub(crate) fn classify(
        &self,
        call: &'static str,
        stream: Option<&CudaStream>,
        source: DriverError,
    ) -> Error {
        if driver::is_kernel_fault(&source) {
            let kernel = self.faulting_kernel(stream);
            self.fault
                .borrow_mut()
                .get_or_insert_with(|| (kernel.clone(), source));
            Error::KernelFault { kernel, source }
        } else {
            Error::Driver { call, source }
        }
    }

    /// Whether a kernel fault made the context unusable.
    pub(crate) fn poisoned(&self) -> bool {
        self.fault.borrow().is_some()
    }

    /// Fails with [`Error::Unsupported`] when several PEs share the GPU
    /// without MPS: NVSHMEM would end the process in `what` instead.
    pub(crate) fn check_full_mpg(&self, what: &'static str) -> Result<()> {
        if self.limited_mpg {
            Err(Error::Unsupported {
                what,
                reason: LIMITED_MPG_REASON,
            })
        } else {
            Ok(())
        }
    }

    /// Waits for the whole GPU (marking the context poisoned on a fault).
    pub(crate) fn sync_context(&self) -> Result<()> {
        self.ctx
            .bind_to_thread()
            .and_then(|_| self.ctx.synchronize())
            .map_err(|e| self.classify("cuCtxSynchronize", None, e))
    }

    /// Waits for the GPU, then finalizes NVSHMEM. Idempotent. After a kernel
    /// fault it skips NVSHMEM's teardown, which would abort the process.
    fn finalize_now(&self) -> Result<()> {
        if self.finalized.replace(true) {
            return Ok(());
        }
        let synced = if self.poisoned() {
            Ok(())
        } else {
            self.sync_context()
        };
        let fault = self.fault.borrow().clone();
        if fault.is_none() && !self.attached {
            // SAFETY: initialized, and no work of ours is in flight after the sync.
            unsafe { self.lib.raw().nvshmemx_hostlib_finalize() };
        }
        ACTIVE.store(false, Ordering::Release);
        match fault {
            // Teardown was skipped: say why.
            Some((kernel, source)) => Err(Error::KernelFault { kernel, source }),
            None => synced,
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        record_drop_error(self.finalize_now());
    }
}

/// An initialized NVSHMEM PE: the entry point of the runtime.
///
/// There is at most one per process ([`Error::AlreadyInitialized`] otherwise).
/// It is neither `Send` nor `Sync`: NVSHMEM's host API, and the order of its
/// collective calls, belong to one thread per PE. Buffers, modules and kernels
/// keep it alive; NVSHMEM is finalized when the last of them and the
/// `Nvshmem` are dropped, or at [`Nvshmem::finalize`].
///
/// ```no_run
/// use nvshmem_host::Nvshmem;
/// let nv = Nvshmem::init()?;
/// let stream = nv.stream();
/// let buf = nv.alloc::<f32>(1024)?;
/// buf.fill(stream, 1.0)?;
/// nv.barrier_all_on_stream(stream)?;
/// assert_eq!(buf.to_vec(stream)?[0], 1.0);
/// # Ok::<(), nvshmem_host::Error>(())
/// ```
pub struct Nvshmem {
    /// Where the PEs compare their allocations (see `Nvshmem::alloc`);
    /// made at the first one. Declared first: dropped (freed, collectively)
    /// before `inner` lets NVSHMEM finalize.
    pub(crate) alloc_check: std::cell::OnceCell<AllocCheck>,
    /// Allocation calls made so far: the next allocation's number, the
    /// first word each PE compares.
    pub(crate) allocations: Cell<u64>,
    pub(crate) inner: Rc<Inner>,
}

/// What `Nvshmem::alloc`'s agreement uses: its exchange, on a stream of its
/// own, and this PE's [`gpu_key`](Nvshmem::gpu_key) (PEs sharing a GPU
/// share its memory).
pub(crate) struct AllocCheck {
    pub(crate) exchange: crate::runtime::exchange::WordExchange,
    pub(crate) stream: Arc<CudaStream>,
    pub(crate) gpu_key: u64,
}

impl std::fmt::Debug for Nvshmem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nvshmem")
            .field("my_pe", &self.inner.my_pe)
            .field("n_pes", &self.inner.n_pes)
            .field("gpu", &self.inner.gpu.ordinal)
            .field("version", &self.inner.lib.version())
            .field("bootstrap", &self.inner.bootstrap)
            .finish()
    }
}

impl Nvshmem {
    /// Attaches to the NVSHMEM that another component of this process
    /// (PyTorch's symmetric memory, say) loaded and initialized, on CUDA
    /// device `gpu` (that component's): its host library is found without
    /// loading a second copy ([`HostLibrary::attach`]), and modules loaded
    /// through the returned handle are registered with it. This runtime
    /// never finalizes it; dropping the handle only unloads modules.
    /// [`Error::NoGpu`] without a GPU; [`Error::NotAttachable`] when NVSHMEM
    /// is not loaded or not initialized.
    ///
    /// Every later call asks NVSHMEM whether it is still initialized: once
    /// the owner has finalized it, calls return [`Error::Finalized`] and
    /// buffers allocated here are dropped without `nvshmem_free` (the owner's
    /// finalize released the heap). Finalize and re-initialize in the owner
    /// while this handle lives is not detected: drop the handle first.
    ///
    /// ```no_run
    /// // Inside a process where torch has set up NVSHMEM symmetric memory:
    /// let nv = nvshmem_host::Nvshmem::attach(0)?;
    /// let module = nv.load_module("ptx/nvshmem-3.4.5/sm_90/kernels.json")?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn attach(gpu: usize) -> Result<Nvshmem> {
        // Without a GPU nothing can have initialized NVSHMEM: say so first
        // (`Error::NoGpu`), not that no NVSHMEM is loaded.
        let count = driver::device_count()?;
        let lib = HostLibrary::attach()?;
        if !lib.is_initialized() {
            return Err(Error::NotAttachable {
                reason: format!(
                    "NVSHMEM {} is loaded from {} but not initialized",
                    lib.version(),
                    lib.path().display()
                ),
                fix: crate::runtime::library::ATTACH_FIX,
            });
        }
        let guard = ActiveGuard::acquire()?;
        let gpu = driver::choose_gpu(Some(gpu), &crate::env::process, None, count)?;
        let ctx = driver::context(gpu.ordinal)?;
        let total_mem = ctx.total_mem().map_err(Error::driver("cuDeviceTotalMem"))?;
        let heap_limit = HeapLimit::from_env(&crate::env::process, total_mem)?;
        Nvshmem::started(Started {
            lib,
            ctx,
            gpu,
            plan: Plan::attached(),
            heap_limit,
            guard,
            // Another component initialized NVSHMEM: no init of ours to time.
            timings: InitTimings::default(),
            attached: true,
        })
    }

    /// Whether this handle is attached to another component's NVSHMEM
    /// ([`Nvshmem::attach`]) rather than initialized by this runtime.
    pub fn is_attached(&self) -> bool {
        self.inner.attached
    }

    /// Whether `[ptr, ptr + bytes)` lies in NVSHMEM's symmetric heap on this
    /// PE (`nvshmem_ptr` of both ends, which is null elsewhere): memory a
    /// `SymPtr` may point at.
    pub fn is_symmetric(&self, ptr: u64, bytes: u64) -> bool {
        if self.inner.check_active("Nvshmem::is_symmetric").is_err() {
            return false;
        }
        let lib = self.inner.lib.raw();
        let last = ptr.saturating_add(bytes.max(1) - 1);
        // SAFETY: nvshmem_ptr only compares the address with the heap's range.
        [ptr, last].iter().all(|&p| {
            !unsafe { lib.nvshmem_ptr(p as *const std::ffi::c_void, self.inner.my_pe as i32) }
                .is_null()
        })
    }

    /// Where CUDA says `ptr` points: device memory of a GPU (managed memory
    /// counts as this GPU's), host memory, or [`Location::Unknown`] for an
    /// address CUDA neither allocated nor registered. For arguments whose
    /// owner does not say (an `__cuda_array_interface__` object without
    /// `__dlpack_device__`).
    ///
    /// [`Location::Unknown`]: crate::dynamic::Location::Unknown
    pub fn memory_location(&self, ptr: u64) -> Result<crate::dynamic::Location> {
        use crate::dynamic::Location;
        use cudarc::driver::sys;
        self.inner.enter("Nvshmem::memory_location")?;
        let query = |attribute, out: &mut i32| {
            // SAFETY: the attribute is an `unsigned int` or `int`, written to
            // `out`; the driver only looks the address up.
            unsafe {
                sys::cuPointerGetAttribute(
                    (out as *mut i32).cast(),
                    attribute,
                    ptr as sys::CUdeviceptr,
                )
            }
        };
        // Managed memory is reachable from this GPU whichever allocated it.
        let mut managed = 0;
        if query(
            sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_IS_MANAGED,
            &mut managed,
        ) == sys::CUresult::CUDA_SUCCESS
            && managed != 0
        {
            return Ok(Location::Cuda(self.gpu() as i32));
        }
        let mut kind = 0;
        if query(
            sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
            &mut kind,
        ) != sys::CUresult::CUDA_SUCCESS
        {
            return Ok(Location::Unknown);
        }
        Ok(match kind as u32 {
            k if k == sys::CUmemorytype::CU_MEMORYTYPE_DEVICE as u32 => {
                let mut ordinal = -1;
                let found = query(
                    sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                    &mut ordinal,
                );
                if found == sys::CUresult::CUDA_SUCCESS {
                    Location::Cuda(ordinal)
                } else {
                    Location::Unknown
                }
            }
            k if k == sys::CUmemorytype::CU_MEMORYTYPE_UNIFIED as u32 => {
                Location::Cuda(self.gpu() as i32)
            }
            k if k == sys::CUmemorytype::CU_MEMORYTYPE_HOST as u32 => Location::Cpu,
            _ => Location::Unknown,
        })
    }

    /// The handle over a library [`InitOptions::init`](crate::InitOptions::init) just initialized;
    /// checks that NVSHMEM sees as many PEs as the launcher started.
    pub(crate) fn started(s: Started) -> Result<Nvshmem> {
        let lib = s.lib;
        // SAFETY: initialized just now.
        let (my_pe, n_pes) = unsafe { (lib.raw().nvshmem_my_pe(), lib.raw().nvshmem_n_pes()) };
        let finalize_with = |e: Error| {
            // SAFETY: initialized above, nothing in flight.
            unsafe { lib.raw().nvshmemx_hostlib_finalize() };
            Err(e)
        };
        let n_pes = u32::try_from(n_pes).unwrap_or(0);
        if let Some(expected) = s.plan.expected_pes.filter(|&n| n != n_pes) {
            return finalize_with(Error::WrongPeCount {
                bootstrap: s.plan.describe.clone(),
                expected,
                found: n_pes,
                hint: s.plan.hint,
            });
        }
        let stream = match s.ctx.new_stream() {
            Ok(stream) => stream,
            Err(e) => return finalize_with(Error::driver("cuStreamCreate")(e)),
        };
        s.guard.keep();
        Ok(Nvshmem {
            alloc_check: std::cell::OnceCell::new(),
            allocations: Cell::new(0),
            inner: Rc::new(Inner {
                lib,
                ctx: s.ctx,
                stream,
                gpu: s.gpu,
                my_pe: u32::try_from(my_pe).unwrap_or(0),
                n_pes,
                bootstrap: s.plan.describe,
                finalized: Cell::new(false),
                fault: RefCell::new(None),
                heap_used: Cell::new(0),
                frees: Cell::new((0, 0)),
                heap_limit: s.heap_limit,
                limited_mpg: lib.is_limited_mpg(),
                attached: s.attached,
                launches: RefCell::new(Vec::new()),
                split_teams: RefCell::new(Vec::new()),
                timings: s.timings,
            }),
        })
    }

    /// This PE's number.
    pub fn my_pe(&self) -> Pe {
        Pe::new(self.inner.my_pe)
    }

    /// Where [`InitOptions::init`](crate::InitOptions::init)'s time went:
    /// loading the host library, the driver, the context, NVSHMEM's init.
    pub fn init_timings(&self) -> InitTimings {
        self.inner.timings
    }

    /// The number of PEs in the job.
    pub fn n_pes(&self) -> u32 {
        self.inner.n_pes
    }

    /// Whether NVSHMEM runs with limited support because several PEs share
    /// this GPU without CUDA MPS ("limited MPG"). Then the team barriers and
    /// syncs, `signal_wait_until_on_stream` and the collectives on streams
    /// return [`Error::Unsupported`] (NVSHMEM would end the process);
    /// `barrier_all_on_stream`, `sync_all_on_stream`, puts, gets and signals work.
    pub fn limited_mpg(&self) -> bool {
        self.inner.limited_mpg
    }

    /// Whether a kernel fault made the CUDA context unusable. Then only
    /// ending the process helps: NVSHMEM's teardown is skipped (it would abort
    /// the process), and [`Nvshmem::finalize`] returns the fault again.
    pub fn is_poisoned(&self) -> bool {
        self.inner.poisoned()
    }

    /// The CUDA device ordinal this PE uses.
    pub fn gpu(&self) -> usize {
        self.inner.gpu.ordinal
    }

    /// How the GPU was chosen (`"NVSHMEM_RUN_GPU"`, `"local rank 1 (SLURM_LOCALID) mod 4"`, ...).
    pub fn gpu_reason(&self) -> &str {
        &self.inner.gpu.reason
    }

    /// How the PEs were bootstrapped, in words.
    pub fn bootstrap(&self) -> &str {
        &self.inner.bootstrap
    }

    /// The loaded host library's NVSHMEM version.
    pub fn version(&self) -> Version {
        self.inner.lib.version()
    }

    /// The loaded host library.
    pub fn library(&self) -> &'static HostLibrary {
        self.inner.lib
    }

    /// The host library's file.
    pub fn library_path(&self) -> &Path {
        self.inner.lib.path()
    }

    /// The CUDA context (the GPU's primary context), for other cudarc work.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.inner.ctx
    }

    /// A non-blocking stream created at init, for convenience.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.inner.stream
    }

    /// A new non-blocking stream on this PE's GPU.
    pub fn new_stream(&self) -> Result<Arc<CudaStream>> {
        self.inner.enter("Nvshmem::new_stream")?;
        self.inner
            .ctx
            .new_stream()
            .map_err(Error::driver("cuStreamCreate"))
    }

    /// Whether `stream` (of this PE's context) is capturing a CUDA graph (or
    /// was, and the capture was invalidated and not yet ended). A
    /// library whose safe calls launch kernels on its own buffers asks this,
    /// to refuse a capture that could outlive them.
    pub fn is_capturing(&self, stream: &CudaStream) -> Result<bool> {
        self.inner.enter_capturing(stream, "Nvshmem::is_capturing")
    }

    /// Refuses ([`Error::Unsupported`], naming `what`) a `stream` that is
    /// capturing a CUDA graph, as this crate's safe stream operations do: for
    /// a library whose safe calls launch kernels on buffers it owns, which a
    /// graph launched after the library is dropped would write.
    pub fn refuse_capture(&self, stream: &CudaStream, what: &'static str) -> Result<()> {
        self.inner.enter_stream(stream, what)
    }

    /// Waits for `stream`'s work. A kernel fault comes back as
    /// [`Error::KernelFault`] naming the kernel last launched on the stream.
    pub fn synchronize(&self, stream: &CudaStream) -> Result<()> {
        self.inner.enter("Nvshmem::synchronize")?;
        self.inner.check_stream(stream)?;
        stream
            .synchronize()
            .map_err(|e| self.inner.classify("cuStreamSynchronize", Some(stream), e))
    }

    /// Any error a `Drop` recorded since the last check (see [`take_drop_error`]).
    pub fn check_err(&self) -> Result<()> {
        take_drop_error().map_or(Ok(()), Err)
    }

    /// Finalizes NVSHMEM now (collective: every PE calls it), after waiting for
    /// the GPU. NVSHMEM can be initialized again afterwards (with a new unique
    /// id for the UID bootstrap). Buffers, modules and kernels still alive become unusable: their
    /// methods return [`Error::Finalized`] and their drops do nothing. Also
    /// returns any error a `Drop` recorded before.
    ///
    /// Dropping the `Nvshmem` and everything allocated from it finalizes too.
    ///
    /// ```no_run
    /// let nv = nvshmem_host::Nvshmem::init()?;
    /// nv.finalize()?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn finalize(self) -> Result<()> {
        let pending = take_drop_error();
        self.inner.finalize_now()?;
        pending.map_or(Ok(()), Err)
    }
}

/// Where [`InitOptions::init`](crate::InitOptions::init)'s time went, step by step
/// ([`Nvshmem::init_timings`]): what the runtime adds to NVSHMEM's own init.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InitTimings {
    /// Loading NVSHMEM's host library (`dlopen`; zero when already loaded).
    pub library: Duration,
    /// Loading the CUDA driver library, its init, and choosing the GPU.
    pub driver: Duration,
    /// Making the GPU's primary context current (its creation, the first time).
    pub context: Duration,
    /// `nvshmemx_hostlib_init_attr`: the bootstrap, the symmetric heap, the
    /// transports (what C++'s `nvshmemx_init_attr` spends).
    pub nvshmem: Duration,
}
