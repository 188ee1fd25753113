//! The runtime's one error type. Every message says what went wrong and what
//! to do about it.

use cudarc::driver::DriverError;
use std::path::PathBuf;
use std::sync::Mutex;

/// Shorthand for the runtime's results.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The install hint repeated by the errors about a missing or unusable NVSHMEM.
const INSTALL_HINT: &str = "Fix: `pip install nvidia-nvshmem-cu13==3.4.5` (or the version your \
                            kernels were built against), or build your kernels with \
                            nvshmem-builder, which downloads NVSHMEM into the per-user cache \
                            ($NVSHMEM_RS_CACHE, else ~/.cache/nvshmem-rs) where it is found, or \
                            set NVSHMEM_HOME to the folder that holds NVSHMEM's include/ and lib/";

/// Everything that can go wrong in the host runtime.
///
/// ```
/// use nvshmem_host::Error;
/// let e = Error::InvalidPe { pe: 4, n_pes: 2 };
/// assert!(e.to_string().contains("0..2"));
/// ```
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The CUDA driver library (`libcuda.so.1`) could not be loaded.
    #[error(
        "no CUDA driver: libcuda.so.1 could not be loaded. This needs an NVIDIA GPU with its \
         driver installed (nvidia-smi should list the GPU); the CUDA toolkit is not needed"
    )]
    NoCudaDriver,

    /// The driver loaded, but there is no usable GPU.
    #[error(
        "no usable CUDA GPU: {source}. Fix: check that nvidia-smi lists a GPU, and that \
         CUDA_VISIBLE_DEVICES (if set) names one"
    )]
    NoGpu {
        /// What the driver said.
        source: DriverError,
    },

    /// The GPU asked for does not exist.
    #[error(
        "GPU {ordinal} was asked for{from}, but this machine has {count} GPU(s) (0..{count}). \
         Fix: choose a GPU below {count}, or leave it unset to use the local rank mod {count}"
    )]
    InvalidGpu {
        /// The ordinal asked for.
        ordinal: usize,
        /// How many GPUs the driver sees.
        count: usize,
        /// Where the ordinal came from (`" by NVSHMEM_RUN_GPU"`, ...), or empty.
        from: String,
    },

    /// No NVSHMEM installation was found (or `NVSHMEM_HOME` is not one).
    #[error("{source}{}", missing_install_hint(source))]
    NvshmemNotFound {
        /// The discovery error, which lists where it looked and how to install NVSHMEM.
        source: nvshmem_types::install::FindError,
    },

    /// A host library was found but could not be loaded or lacks a function.
    #[error("cannot load the NVSHMEM host library {}: {reason}. {INSTALL_HINT}", path.display())]
    NvshmemUnusable {
        /// The library file.
        path: PathBuf,
        /// What failed (dlopen's message or the missing symbol).
        reason: String,
    },

    /// The host library's version has no bindings in this crate.
    #[error(
        "NVSHMEM {version} (at {}) is not supported by this runtime, which has bindings for \
         {supported}. {INSTALL_HINT}",
        path.display()
    )]
    UnsupportedNvshmemVersion {
        /// The library's version.
        version: String,
        /// The library file.
        path: PathBuf,
        /// The versions this crate was generated for.
        supported: String,
    },

    /// NVSHMEM is already initialized in this process.
    #[error(
        "NVSHMEM is already initialized in this process: only one `Nvshmem` may exist at a time. \
         Fix: pass the existing `Nvshmem` around instead of initializing again"
    )]
    AlreadyInitialized,

    /// The `Nvshmem` this object belongs to has been finalized (by
    /// `Nvshmem::finalize`, or, when attached, by the component that
    /// initialized NVSHMEM).
    #[error(
        "NVSHMEM has been finalized: {what} cannot be used any more. Fix: drop buffers, modules \
         and kernels before calling `Nvshmem::finalize` (attached with `Nvshmem::attach`: \
         before the component that initialized NVSHMEM, PyTorch say, finalizes it)"
    )]
    Finalized {
        /// What was used.
        what: &'static str,
    },

    /// `nvshmemx_hostlib_init_attr` failed.
    #[error(
        "NVSHMEM initialization ({bootstrap}) failed with status {status}. Fix: rerun with \
         NVSHMEM_DEBUG=INFO to see NVSHMEM's own messages; {hint}"
    )]
    InitFailed {
        /// How it was bootstrapped.
        bootstrap: String,
        /// NVSHMEM's return code.
        status: i32,
        /// What usually causes it for this bootstrap.
        hint: &'static str,
    },

    /// Two NVSHMEM versions that must match do not.
    #[error(
        "NVSHMEM version mismatch: {what} was built against NVSHMEM {expected}, but the host \
         library {} is NVSHMEM {found}. Fix: rebuild the kernels against NVSHMEM {found}, or \
         run with NVSHMEM {expected} (set NVSHMEM_HOME to it, or `pip install \
         nvidia-nvshmem-cu13=={expected}`)",
        library.display()
    )]
    VersionMismatch {
        /// What carries the other version (a module, manifest or request).
        what: String,
        /// The version it needs.
        expected: String,
        /// The host library's version.
        found: String,
        /// The host library file.
        library: PathBuf,
    },

    /// A PE number outside `0..n_pes`.
    #[error("PE {pe} does not exist: this job has PEs 0..{n_pes}")]
    InvalidPe {
        /// The PE asked for.
        pe: u32,
        /// The number of PEs.
        n_pes: u32,
    },

    /// A size or length that cannot work (zero, overflowing, mismatched, out of range).
    #[error("bad size: {reason}")]
    BadSize {
        /// What is wrong with it.
        reason: String,
    },

    /// The symmetric heap has no room for an allocation.
    #[error(
        "the symmetric heap is exhausted: {bytes} bytes were asked for, with {used} bytes in \
         live buffers and a limit of {limit} bytes on PE {pe_index} (from {limit_from}). Fix: free \
         buffers first, or raise the limit (`InitOptions::max_memory_per_gpu` / \
         NVSHMEM_MAX_MEMORY_PER_GPU, or `InitOptions::symmetric_size` / NVSHMEM_SYMMETRIC_SIZE \
         without CUDA VMM), up to the GPU's memory (shared by the PEs on a GPU); every PE must use \
         the same sizes",
        pe_index = pe.index()
    )]
    HeapExhausted {
        /// The bytes asked for.
        bytes: usize,
        /// Bytes in live buffers of this PE.
        used: usize,
        /// The runtime's limit for live buffers.
        limit: usize,
        /// What sets the limit.
        limit_from: &'static str,
        /// The PE whose limit it is: the one with the least room, since every
        /// PE refuses an allocation that one of them cannot make.
        pe: nvshmem_types::Pe,
    },

    /// The PEs asked for different allocations where NVSHMEM needs the same
    /// one on every PE: another size or alignment, or after freeing other
    /// buffers or in another order. Every PE gets this error for the same
    /// call, before NVSHMEM allocates anything.
    #[error(
        "{what}: the PEs did not allocate alike ({detail}). Allocation and free are \
         collective: every PE must allocate the same sizes in the same order and free them in \
         the same order. Fix: keep the control flow that allocates or drops buffers the same on \
         every PE (sizes that depend on the PE belong inside one buffer of the largest size)"
    )]
    AllocationMismatch {
        /// The call.
        what: &'static str,
        /// What each PE did, as `PE n: ...` items.
        detail: String,
    },

    /// The driver is older than the module's image needs (a cubin from a
    /// newer CUDA major, or PTX of an ISA the driver does not know).
    #[error(
        "cannot load module {what}: its {image} was built with CUDA {toolkit} and needs a driver \
         of CUDA {needs} or newer, but this driver supports CUDA {driver}. Fix: rebuild the \
         kernels for this driver's CUDA major (NVSHMEM_RS_CUDA_MAJOR={driver_major}, with the \
         nvidia-nvshmem-cu{driver_major} host library), or update the driver",
        driver_major = driver.split('.').next().unwrap_or_default()
    )]
    DriverTooOld {
        /// The module.
        what: String,
        /// `cubin` or `PTX ISA x.y`.
        image: String,
        /// The manifest's `cuda_toolkit`.
        toolkit: String,
        /// The lowest CUDA version a driver must support to load it.
        needs: String,
        /// What this driver supports (`cuDriverGetVersion`).
        driver: String,
    },

    /// No builder manifest where one was asked for (a folder, a file, a crate
    /// name in a folder).
    #[error("no kernel manifest for {what}: {reason}")]
    ManifestNotFound {
        /// The path, with the crate name when one was given.
        what: String,
        /// What is there instead, and the fix.
        reason: String,
    },

    /// A module file or image could not be loaded.
    #[error("cannot load module {what}: {reason}")]
    ModuleLoad {
        /// The file or image.
        what: String,
        /// What failed.
        reason: String,
    },

    /// A module with NVSHMEM device code could not be registered with NVSHMEM
    /// (`nvshmemx_cumodule_init`), so it is not handed out: its kernels would
    /// read a zeroed NVSHMEM state and fault.
    #[error(
        "module {what} has NVSHMEM device code but could not be registered with NVSHMEM: \
         {reason}; its kernels would read a zeroed NVSHMEM state, so it was unloaded. Fix: build \
         it with nvshmem-builder (which keeps nvshmemi_device_state_d) against the host \
         library's NVSHMEM version"
    )]
    ModuleNotRegistered {
        /// The module.
        what: String,
        /// Why: NVSHMEM's return code, or what the module lacks.
        reason: String,
    },

    /// The module has no kernel of that name.
    #[error("module {module} has no kernel `{kernel}` (it has: {available})")]
    KernelNotFound {
        /// The kernel asked for.
        kernel: String,
        /// The module.
        module: String,
        /// The kernels it has.
        available: String,
    },

    /// Launch arguments that do not match the kernel's parameters in the manifest.
    #[error("kernel `{kernel}`: {reason}")]
    ArgumentMismatch {
        /// The kernel.
        kernel: String,
        /// Which parameter is wrong and how.
        reason: String,
    },

    /// A launch argument from a dynamic host (see [`crate::dynamic`]) that
    /// the kernel's parameter does not accept; nothing was launched.
    #[error("kernel `{kernel}`, {param}: {reason}. Fix: {fix}")]
    ArgumentRejected {
        /// The kernel.
        kernel: String,
        /// Which parameter (argument 2 `n: u32`), or the count expected.
        param: String,
        /// A wrong type, or a wrong value.
        refusal: Refusal,
        /// What is wrong.
        reason: String,
        /// What to do.
        fix: String,
    },

    /// NVSHMEM is not loaded or not initialized in this process, so there is
    /// nothing to attach to ([`Nvshmem::attach`](crate::Nvshmem::attach)).
    #[error("cannot attach to NVSHMEM: {reason}. Fix: {fix}")]
    NotAttachable {
        /// What is missing.
        reason: String,
        /// What to do.
        fix: &'static str,
    },

    /// A plain launch of a kernel that calls NVSHMEM barriers or collectives.
    #[error(
        "kernel `{kernel}` calls NVSHMEM barriers or collectives, so all its blocks must run at \
         once: a plain launch could hang. Fix: use `Kernel::launch_collective`"
    )]
    CollectiveLaunchRequired {
        /// The kernel.
        kernel: String,
    },

    /// A collective launch whose blocks cannot all be resident at once.
    #[error(
        "kernel `{kernel}`: a collective launch of {blocks} blocks cannot run, because at most \
         {max_blocks} blocks of {threads} threads ({per_sm} per SM x {sms} SMs) fit on the GPU \
         at once. Fix: launch at most {max_blocks} blocks (`Kernel::max_collective_blocks`), or \
         use fewer threads or less shared memory per block"
    )]
    GridTooLarge {
        /// The kernel.
        kernel: String,
        /// Blocks asked for.
        blocks: u64,
        /// Threads per block.
        threads: u32,
        /// Co-resident blocks per SM.
        per_sm: u32,
        /// SMs on the GPU.
        sms: u32,
        /// `per_sm * sms`.
        max_blocks: u64,
    },

    /// A launch asks for more shared memory per block than the GPU has.
    #[error(
        "kernel `{kernel}`: {static_bytes} bytes of static shared memory + {dynamic_bytes} bytes \
         of dynamic shared memory per block is over this GPU's limit of {limit} bytes; ask for \
         at most {} bytes of dynamic shared memory (LaunchConfig::shared_mem_bytes), or shrink \
         the kernel's static_shared! arrays",
        limit.saturating_sub(*static_bytes)
    )]
    SharedMemoryTooLarge {
        /// The kernel.
        kernel: String,
        /// Its static shared memory (`static_shared!` arrays and NVSHMEM's).
        static_bytes: u32,
        /// The launch's dynamic shared memory.
        dynamic_bytes: u32,
        /// Shared memory one block can have on this GPU, opted in
        /// (`CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`).
        limit: u32,
    },

    /// A block of more threads than the kernel's registers allow: each
    /// thread's registers come from the SM's 64 K, so a kernel that needs
    /// many runs in smaller blocks only.
    #[error(
        "kernel `{kernel}` cannot run {threads} threads per block: it uses {registers} \
         registers per thread, so at most {max_threads} fit in a block. Fix: launch at most \
         {max_threads} threads per block, or declare the block size with \
         `#[kernel(max_threads = {threads})]` so that ptxas keeps the registers within it"
    )]
    BlockTooLarge {
        /// The kernel.
        kernel: String,
        /// Threads per block the launch asked for.
        threads: u32,
        /// Registers per thread of the kernel (ptxas).
        registers: u32,
        /// The most threads per block the kernel can run with
        /// (`CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`).
        max_threads: u32,
    },

    /// The driver refused to launch a kernel.
    #[error("kernel `{kernel}` could not be launched: {source}")]
    LaunchFailed {
        /// The kernel.
        kernel: String,
        /// What the driver said.
        source: DriverError,
    },

    /// A kernel faulted on the GPU (illegal address, trap, ...).
    ///
    /// With NVSHMEM 3.8, its proxy thread may see the fault first and end
    /// the process itself (exit status 255, "proxy.cpp: cuda failed with an
    /// illegal memory access"), so this error never reaches the caller. On
    /// machines with no remote transport, `NVSHMEM_DISABLE_LOCAL_ONLY_PROXY=1`
    /// turns that thread off (and with it device-side `global_exit`).
    #[error(
        "kernel `{kernel}` faulted on the GPU: {source}. The CUDA context is unusable now; \
         restart the process. Fix: check the kernel's pointers and indices (run it under \
         compute-sanitizer to find the access)"
    )]
    KernelFault {
        /// The kernel last launched on the stream (or anywhere, if none there).
        kernel: String,
        /// What the driver said.
        source: DriverError,
    },

    /// Any other CUDA driver call failed.
    #[error("CUDA driver call {call} failed: {source}")]
    Driver {
        /// The call, such as `cuMemcpyHtoDAsync`.
        call: &'static str,
        /// What the driver said.
        source: DriverError,
    },

    /// An NVSHMEM host call returned an error code.
    #[error("NVSHMEM call {call} failed with status {status}")]
    NvshmemCall {
        /// The function.
        call: &'static str,
        /// Its return code.
        status: i32,
    },

    /// A unique id that is not 256 hex digits (128 bytes).
    #[error("invalid NVSHMEM unique id: {reason}; expected 256 hex digits")]
    InvalidUniqueId {
        /// What is wrong with it.
        reason: String,
    },

    /// An environment variable with a value that cannot be used.
    #[error("environment variable {var}={value:?} is invalid: {reason}")]
    InvalidEnv {
        /// The variable.
        var: String,
        /// Its value.
        value: String,
        /// What is wrong with it.
        reason: String,
    },

    /// NVSHMEM does not support this operation in the current setup.
    #[error("{what} is not supported here: {reason}")]
    Unsupported {
        /// The operation.
        what: &'static str,
        /// Why, and what to do.
        reason: &'static str,
    },

    /// A setting NVSHMEM must read from the environment is not there, and
    /// this process runs several threads, so init could not set it soundly.
    #[error(
        "NVSHMEM reads its settings from the environment, and {var}={value} is not in it; this \
         process already runs {threads} threads, so it cannot be set now without undefined \
         behaviour. Fix: `export {var}={value}` before starting the program (nvshmem-run and the \
         test harness set NVSHMEM's defaults for their PEs), or initialize NVSHMEM first thing \
         in `main`, before any other thread starts"
    )]
    EnvNotSet {
        /// The variable.
        var: String,
        /// The value it needs.
        value: String,
        /// The threads this process had.
        threads: usize,
    },

    /// The UID bootstrap's unique id could not be handed from rank 0 to the others.
    #[error(
        "cannot exchange NVSHMEM's unique id through {addr}: {reason}. Fix: start every rank \
         (rank 0 creates the id), and check that the address is reachable from every rank"
    )]
    Rendezvous {
        /// The store's address.
        addr: String,
        /// What went wrong.
        reason: String,
    },

    /// NVSHMEM initialized with another PE count than the launcher started.
    #[error(
        "NVSHMEM initialized {found} PE(s), but the launcher started {expected} ({bootstrap}): \
         the bootstrap did not reach the other processes. Fix: {hint}"
    )]
    WrongPeCount {
        /// The bootstrap, in words.
        bootstrap: String,
        /// What the launcher's variables say.
        expected: u32,
        /// What NVSHMEM reports.
        found: u32,
        /// What usually fixes it.
        hint: &'static str,
    },

    /// An argument that cannot be used (a stream of another context, ...).
    #[error("invalid argument: {reason}")]
    InvalidArgument {
        /// What is wrong.
        reason: String,
    },
}

/// The install hint, for discovery errors whose own message lacks it.
fn missing_install_hint(source: &nvshmem_types::install::FindError) -> String {
    if source.to_string().contains("pip install nvidia-nvshmem") {
        String::new()
    } else {
        format!(
            ". Or install NVSHMEM: {}",
            INSTALL_HINT.trim_start_matches("Fix: ")
        )
    }
}

impl Error {
    pub(crate) fn bad_size(reason: impl Into<String>) -> Self {
        Error::BadSize {
            reason: reason.into(),
        }
    }

    pub(crate) fn driver(call: &'static str) -> impl FnOnce(DriverError) -> Error {
        move |source| Error::Driver { call, source }
    }
}

/// An NVSHMEM call's status: 0 is success.
pub(crate) fn nvshmem_status(call: &'static str, status: i32) -> Result<()> {
    if status == 0 {
        Ok(())
    } else {
        Err(Error::NvshmemCall { call, status })
    }
}

impl std::fmt::Debug for Error {
    /// The message, as `Display` writes it: `fn main() -> Result<(), Error>`
    /// prints an error with `Debug`, and the message says what to do.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// Errors from `Drop` impls, which cannot return them.
static DROP_ERROR: Mutex<Option<Error>> = Mutex::new(None);

/// Keeps the first unreported error of a `Drop` (freeing a buffer, unloading a
/// module, finalizing), as cudarc records errors on its context.
pub(crate) fn record_drop_error(result: Result<()>) {
    if let Err(e) = result {
        let mut slot = DROP_ERROR.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(e);
    }
}

/// Takes the first error recorded by a `Drop` since the last call (a buffer
/// free, module unload or finalize that failed), if any.
pub fn take_drop_error() -> Option<Error> {
    DROP_ERROR.lock().unwrap_or_else(|p| p.into_inner()).take()
}

/// Whether a refused argument is of the wrong type or has a wrong value (a
/// Python host raises `TypeError` or `ValueError`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The wrong type, count or element type.
    Type,
    /// The right type, with a value the kernel cannot take.
    Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drop_errors_are_kept_until_taken() {
        record_drop_error(Err(Error::bad_size("first")));
        record_drop_error(Err(Error::bad_size("second")));
        let e = take_drop_error().unwrap();
        assert!(e.to_string().contains("first"));
    }

    #[test]
    fn block_too_large_names_both_fixes() {
        let e = Error::BlockTooLarge {
            kernel: "k".into(),
            threads: 1024,
            registers: 165,
            max_threads: 384,
        };
        let msg = e.to_string();
        assert!(msg.contains("165 registers"), "{msg}");
        assert!(msg.contains("at most 384 threads per block"), "{msg}");
        assert!(msg.contains("#[kernel(max_threads = 1024)]"), "{msg}");
    }

    #[test]
    fn debug_is_the_message_that_says_what_to_do() {
        // What `fn main() -> Result<(), Error>` prints.
        let debug = format!("{:?}", Error::NoCudaDriver);
        assert!(
            debug.starts_with("no CUDA driver") && debug.contains("nvidia-smi"),
            "{debug}"
        );
    }
}
