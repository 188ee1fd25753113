//! Initialization and finalization: [`Nvshmem`], its [`Builder`] and [`Bootstrap`].

use crate::driver::{self, GpuChoice};
use crate::error::{Error, Result};
use crate::launcher::env as launcher_env;
use crate::library::{HostLibrary, LibraryRequest};
use crate::uniqueid::UniqueId;
use cudarc::driver::{CudaContext, CudaStream, DriverError};
use nvshmem_types::{Pe, Version};
use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// How the PEs of a job find each other.
///
/// ```
/// use nvshmem_host::{Bootstrap, UniqueId};
/// let b = Bootstrap::UniqueId { rank: 0, n_pes: 2, id: UniqueId::from_bytes([0; 128]) };
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Bootstrap {
    /// Decide from the environment (the default): the UID bootstrap with the
    /// launcher's variables when `nvshmem-run` started this process
    /// (`NVSHMEM_RUN_RANK`, `NVSHMEM_RUN_NRANKS`, `NVSHMEM_RUN_UNIQUEID`), else
    /// NVSHMEM's own bootstrap as `NVSHMEM_BOOTSTRAP` selects (PMI by default:
    /// N PEs under `srun`, or one PE, a PMI singleton, when started directly).
    #[default]
    Auto,
    /// One PE with no launcher (NVSHMEM's PMI bootstrap as a singleton).
    Single,
    /// NVSHMEM's UID bootstrap: every PE passes the same id, its own rank and
    /// the PE count. One process generates the id ([`UniqueId::generate`]).
    UniqueId {
        /// This PE's rank, `0..n_pes`.
        rank: u32,
        /// The number of PEs.
        n_pes: u32,
        /// The job's id.
        id: UniqueId,
    },
    /// NVSHMEM's PMI-1 bootstrap (`srun --mpi=pmi1`, Hydra).
    Pmi,
    /// NVSHMEM's PMI-2 bootstrap (`srun --mpi=pmi2`).
    Pmi2,
    /// NVSHMEM's PMIx bootstrap (`srun --mpi=pmix`, Open MPI's `mpirun`).
    Pmix,
    /// NVSHMEM's MPI bootstrap plugin over `MPI_COMM_WORLD` (needs an MPI library).
    Mpi,
}

/// A bootstrap turned into what init does.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ResolvedBootstrap {
    pub(crate) uid: Option<(u32, u32, UniqueId)>,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) describe: String,
    pub(crate) hint: &'static str,
}

const UID_HINT: &str = "every PE must be given the same unique id, its own rank and the same PE \
                        count; the process that generated the id (nvshmem-run) must still be \
                        running; on one machine set NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=lo; 3 or more \
                        PEs on one GPU need CUDA MPS";
const PMI_HINT: &str = "to run one PE, start the program directly; under srun or mpirun, make \
                        NVSHMEM_BOOTSTRAP and NVSHMEM_BOOTSTRAP_PMI match the launcher (PMI, \
                        PMI-2, PMIX or MPI), or start the PEs with nvshmem-run";

impl Bootstrap {
    /// What init will do for this bootstrap, given the environment.
    pub(crate) fn resolve(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ResolvedBootstrap> {
        let pmi = |kind: &str| ResolvedBootstrap {
            uid: None,
            env: vec![
                ("NVSHMEM_BOOTSTRAP".into(), "PMI".into()),
                ("NVSHMEM_BOOTSTRAP_PMI".into(), kind.into()),
            ],
            describe: format!("{kind} bootstrap"),
            hint: PMI_HINT,
        };
        let uid = |rank: u32, n_pes: u32, id: UniqueId, from: &str| {
            if n_pes == 0 || rank >= n_pes {
                return Err(Error::InvalidArgument {
                    reason: format!(
                        "UID bootstrap rank {rank} of {n_pes} PEs{from}: the rank must be below the PE count"
                    ),
                });
            }
            Ok(ResolvedBootstrap {
                uid: Some((rank, n_pes, id)),
                env: vec![],
                describe: format!("UID bootstrap, rank {rank} of {n_pes}{from}"),
                hint: UID_HINT,
            })
        };
        match self {
            Bootstrap::Auto => match launcher_uid(env)? {
                Some((rank, n_pes, id)) => uid(rank, n_pes, id, " from nvshmem-run's environment"),
                None => Ok(ResolvedBootstrap {
                    uid: None,
                    env: vec![],
                    describe: match env("NVSHMEM_BOOTSTRAP") {
                        Some(b) => format!("NVSHMEM_BOOTSTRAP={b}"),
                        None => "PMI bootstrap (one PE unless a PMI launcher started this process)"
                            .into(),
                    },
                    hint: PMI_HINT,
                }),
            },
            Bootstrap::Single => Ok(ResolvedBootstrap {
                describe: "single PE".into(),
                ..pmi("PMI")
            }),
            Bootstrap::UniqueId { rank, n_pes, id } => uid(*rank, *n_pes, *id, ""),
            Bootstrap::Pmi => Ok(pmi("PMI")),
            Bootstrap::Pmi2 => Ok(pmi("PMI-2")),
            Bootstrap::Pmix => Ok(pmi("PMIX")),
            Bootstrap::Mpi => Ok(ResolvedBootstrap {
                uid: None,
                env: vec![("NVSHMEM_BOOTSTRAP".into(), "MPI".into())],
                describe: "MPI bootstrap".into(),
                hint: "start the PEs with mpirun, and check that NVSHMEM's MPI plugin \
                       (nvshmem_bootstrap_mpi.so.3) finds the same MPI library",
            }),
        }
    }
}

/// The launcher's UID bootstrap variables, if `nvshmem-run` started this process.
fn launcher_uid(env: &dyn Fn(&str) -> Option<String>) -> Result<Option<(u32, u32, UniqueId)>> {
    let Some(hex) = env(launcher_env::UNIQUEID) else {
        return Ok(None);
    };
    let id = UniqueId::from_hex(&hex).map_err(|e| Error::InvalidEnv {
        var: launcher_env::UNIQUEID.into(),
        value: hex.clone(),
        reason: e.to_string(),
    })?;
    let number = |var: &str| -> Result<u32> {
        let value = env(var).ok_or_else(|| Error::InvalidEnv {
            var: var.into(),
            value: String::new(),
            reason: format!(
                "it must be set when {} is (start the PEs with nvshmem-run)",
                launcher_env::UNIQUEID
            ),
        })?;
        u32::try_from(driver::parse_index(var, &value)?).map_err(|_| Error::InvalidEnv {
            var: var.into(),
            value,
            reason: "too large".into(),
        })
    };
    Ok(Some((
        number(launcher_env::RANK)?,
        number(launcher_env::NRANKS)?,
        id,
    )))
}

/// Configures and initializes NVSHMEM. Get one from [`Nvshmem::builder`].
///
/// NVSHMEM reads its configuration from environment variables when it
/// initializes; [`Builder::init`] sets the ones chosen here in this process's
/// environment just before (see [`Builder::environment`]). A variable set by
/// a builder method wins over the same variable already in the environment.
///
/// **Default: `NVSHMEM_DISABLE_NVLS=1`.** NVLink multicast (NVLS) stays off
/// unless the environment already sets `NVSHMEM_DISABLE_NVLS` or you call
/// [`Builder::nvls`]`(true)`: on shared multi-GPU hosts a program that uses it
/// can take the GPUs out of service.
///
/// ```no_run
/// use nvshmem_host::Nvshmem;
/// let nv = Nvshmem::builder()
///     .symmetric_size(2 << 30) // 2 GiB of symmetric heap per PE
///     .init()?;
/// # Ok::<(), nvshmem_host::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
#[must_use = "a builder does nothing until `init` is called"]
pub struct Builder {
    gpu: Option<usize>,
    bootstrap: Bootstrap,
    library: LibraryRequest,
    nvls: Option<bool>,
    symmetric_size: Option<usize>,
    env: Vec<(String, String)>,
}

impl Builder {
    /// How the PEs find each other; [`Bootstrap::Auto`] by default.
    ///
    /// ```no_run
    /// use nvshmem_host::{Bootstrap, Nvshmem};
    /// let nv = Nvshmem::builder().bootstrap(Bootstrap::Single).init()?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn bootstrap(mut self, bootstrap: Bootstrap) -> Self {
        self.bootstrap = bootstrap;
        self
    }

    /// Use this CUDA device. By default: `NVSHMEM_RUN_GPU` (set by
    /// `nvshmem-run`), else the local rank from Slurm / Open MPI / MPICH / PMIx
    /// variables mod the GPU count, else 0.
    ///
    /// ```no_run
    /// let nv = nvshmem_host::Nvshmem::builder().gpu(1).init()?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn gpu(mut self, ordinal: usize) -> Self {
        self.gpu = Some(ordinal);
        self
    }

    /// The symmetric heap's initial size per PE, in bytes
    /// (`NVSHMEM_SYMMETRIC_SIZE`; NVSHMEM's default is 1 GiB). Every PE must
    /// use the same size. With CUDA VMM (the default) the heap grows on demand
    /// up to [`Builder::max_memory_per_gpu`].
    ///
    /// ```no_run
    /// let nv = nvshmem_host::Nvshmem::builder().symmetric_size(256 << 20).init()?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn symmetric_size(mut self, bytes: usize) -> Self {
        self.symmetric_size = Some(bytes);
        self
    }

    /// The most the symmetric heap may grow to on this GPU, in bytes
    /// (`NVSHMEM_MAX_MEMORY_PER_GPU`).
    ///
    /// ```no_run
    /// let nv = nvshmem_host::Nvshmem::builder().max_memory_per_gpu(16 << 30).init()?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn max_memory_per_gpu(self, bytes: usize) -> Self {
        self.env("NVSHMEM_MAX_MEMORY_PER_GPU", &bytes.to_string())
    }

    /// Allow NVLink multicast (`NVSHMEM_DISABLE_NVLS=0`) or forbid it (`=1`).
    /// Without this call it is forbidden unless the environment says otherwise.
    ///
    /// ```no_run
    /// let nv = nvshmem_host::Nvshmem::builder().nvls(false).init()?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn nvls(mut self, enabled: bool) -> Self {
        self.nvls = Some(enabled);
        self
    }

    /// The transport between nodes (`NVSHMEM_REMOTE_TRANSPORT`): `"none"` for
    /// one node, or `"ibrc"`, `"ucx"`, `"libfabric"`, `"ibdevx"`.
    ///
    /// ```no_run
    /// let nv = nvshmem_host::Nvshmem::builder().remote_transport("none").init()?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn remote_transport(self, transport: &str) -> Self {
        self.env("NVSHMEM_REMOTE_TRANSPORT", transport)
    }

    /// The network interface of the UID bootstrap's sockets
    /// (`NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME`); `"lo"` when all PEs are on one machine.
    ///
    /// ```no_run
    /// let nv = nvshmem_host::Nvshmem::builder().uid_socket_interface("lo").init()?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn uid_socket_interface(self, interface: &str) -> Self {
        self.env("NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME", interface)
    }

    /// NVSHMEM's log level (`NVSHMEM_DEBUG`): `"WARN"`, `"INFO"`, `"TRACE"`.
    ///
    /// ```no_run
    /// let nv = nvshmem_host::Nvshmem::builder().debug("INFO").init()?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn debug(self, level: &str) -> Self {
        self.env("NVSHMEM_DEBUG", level)
    }

    /// Accept CUDA MPS with any active-thread percentage
    /// (`NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`), as 3 or more PEs on
    /// one GPU under MPS need.
    ///
    /// ```no_run
    /// let nv = nvshmem_host::Nvshmem::builder().ignore_mps_thread_percentage(true).init()?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn ignore_mps_thread_percentage(self, ignore: bool) -> Self {
        self.env(
            "NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
            if ignore { "1" } else { "0" },
        )
    }

    /// Sets any other NVSHMEM variable (`NVSHMEM_...`) for init.
    ///
    /// ```no_run
    /// let nv = nvshmem_host::Nvshmem::builder().env("NVSHMEM_DISABLE_CUDA_VMM", "1").init()?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// Load NVSHMEM from this installation (the folder with `include/` and
    /// `lib/`) instead of searching (see [`crate::library`]).
    ///
    /// ```no_run
    /// let nv = nvshmem_host::Nvshmem::builder()
    ///     .nvshmem_home("/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nvshmem")
    ///     .init()?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn nvshmem_home(mut self, dir: impl Into<PathBuf>) -> Self {
        self.library = self.library.home(dir);
        self
    }

    /// Accept only this NVSHMEM version: the one your kernels were built
    /// against (`Manifest::nvshmem_version`). Other installations are skipped.
    ///
    /// ```no_run
    /// let nv = nvshmem_host::Nvshmem::builder().nvshmem_version("3.4.5".parse().unwrap()).init()?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn nvshmem_version(mut self, version: Version) -> Self {
        self.library = self.library.version(version);
        self
    }

    /// The NVSHMEM environment variables [`Builder::init`] will set, given
    /// the current environment, in the order it sets them.
    ///
    /// ```
    /// let vars = nvshmem_host::Nvshmem::builder().symmetric_size(1 << 30).environment()?;
    /// assert!(vars.contains(&("NVSHMEM_SYMMETRIC_SIZE".into(), "1073741824".into())));
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn environment(&self) -> Result<Vec<(String, String)>> {
        self.environment_with(&|name| std::env::var(name).ok())
    }

    pub(crate) fn environment_with(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Vec<(String, String)>> {
        let mut vars: Vec<(String, String)> = Vec::new();
        match self.nvls {
            None if env("NVSHMEM_DISABLE_NVLS").is_none() => {
                vars.push(("NVSHMEM_DISABLE_NVLS".into(), "1".into()))
            }
            None => {}
            Some(enabled) => vars.push((
                "NVSHMEM_DISABLE_NVLS".into(),
                if enabled { "0" } else { "1" }.into(),
            )),
        }
        if let Some(bytes) = self.symmetric_size {
            if bytes == 0 {
                return Err(Error::bad_size(
                    "the symmetric heap size must be above 0 bytes",
                ));
            }
            vars.push(("NVSHMEM_SYMMETRIC_SIZE".into(), bytes.to_string()));
        }
        vars.extend(self.bootstrap.resolve(env)?.env);
        for (name, value) in &self.env {
            if name.is_empty() || name.contains('=') || name.contains('\0') || value.contains('\0')
            {
                return Err(Error::InvalidArgument {
                    reason: format!("{name:?}={value:?} cannot be an environment variable"),
                });
            }
            vars.push((name.clone(), value.clone()));
        }
        Ok(vars)
    }

    /// Initializes NVSHMEM: loads the host library, makes a CUDA context
    /// current on the PE's GPU, sets the configured environment variables,
    /// then initializes with the chosen bootstrap. Collective: every PE calls it.
    ///
    /// Setting variables changes the process environment, which is only sound
    /// while no other thread reads or writes it: initialize before starting
    /// threads.
    ///
    /// ```no_run
    /// let nv = nvshmem_host::Nvshmem::builder().init()?;
    /// println!("PE {} of {}", nv.my_pe().index(), nv.n_pes());
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn init(self) -> Result<Nvshmem> {
        let env = |name: &str| std::env::var(name).ok();
        let bootstrap = self.bootstrap.resolve(&env)?;
        let vars = self.environment_with(&env)?;
        let guard = ActiveGuard::acquire()?;
        let lib = HostLibrary::load(&self.library)?;
        if lib.init_status() >= IS_INITIALIZED {
            // Initialized behind our back (another binding in this process).
            // After a finalize the status is "bootstrapped", and init works again.
            return Err(Error::AlreadyInitialized);
        }
        let count = driver::device_count()?;
        let gpu = driver::choose_gpu(self.gpu, &env, count)?;
        let ctx = driver::context(gpu.ordinal)?;
        // The environment NVSHMEM will see, checked before it is set.
        let merged = |name: &str| {
            let set = vars.iter().rev().find(|(n, _)| n == name);
            set.map(|(_, v)| v.clone()).or_else(|| env(name))
        };
        let total_mem = ctx.total_mem().map_err(Error::driver("cuDeviceTotalMem"))?;
        let heap_limit = HeapLimit::from_env(&merged, total_mem)?;
        for (name, value) in &vars {
            // SAFETY: NVSHMEM reads its configuration only from the environment;
            // init is documented to run before other threads use the environment.
            unsafe { std::env::set_var(name, value) };
        }
        let uid = bootstrap
            .uid
            .as_ref()
            .map(|(rank, n_pes, id)| (*rank, *n_pes, id));
        // SAFETY: the context is current (driver::context binds it); NVSHMEM is
        // not initialized (init_status and the guard).
        unsafe { lib.init(uid) }.map_err(|(call, status)| Error::InitFailed {
            bootstrap: format!("{}, {call}", bootstrap.describe),
            status,
            hint: bootstrap.hint,
        })?;
        // SAFETY: initialized just now.
        let (my_pe, n_pes) = unsafe { (lib.nvshmem_my_pe(), lib.nvshmem_n_pes()) };
        let stream = match ctx.new_stream() {
            Ok(s) => s,
            Err(e) => {
                // SAFETY: initialized above, nothing in flight.
                unsafe { lib.nvshmemx_hostlib_finalize() };
                return Err(Error::Driver {
                    call: "cuStreamCreate",
                    source: e,
                });
            }
        };
        guard.keep();
        Ok(Nvshmem {
            inner: Rc::new(Inner {
                lib,
                ctx,
                stream,
                gpu,
                my_pe: u32::try_from(my_pe).unwrap_or(0),
                n_pes: u32::try_from(n_pes).unwrap_or(1),
                bootstrap: bootstrap.describe,
                finalized: Cell::new(false),
                fault: RefCell::new(None),
                heap_used: Cell::new(0),
                heap_limit,
                limited_mpg: lib.init_status() == LIMITED_MPG,
                launches: RefCell::new(Vec::new()),
            }),
        })
    }
}

/// NVSHMEM's defaults for the heap (as `NVSHMEM_INFO=1` prints them for 3.4 and 3.8).
const DEFAULT_SYMMETRIC_SIZE: usize = 1 << 30;
const DEFAULT_MAX_MEMORY_PER_GPU: usize = 128 << 30;

/// The most symmetric memory this runtime hands out per PE.
///
/// NVSHMEM does not survive an allocation it cannot serve: it reports "Not
/// enough space", then faults inside the allocation's barrier. So the runtime
/// refuses allocations that cannot fit before NVSHMEM sees them. The limit is
/// the same on every PE (it depends on the environment and the GPU model, not
/// on free memory), so every PE refuses the same allocation and none is left
/// waiting in the collective call. Memory used by other processes can still
/// make NVSHMEM fail below the limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HeapLimit {
    /// Bytes.
    pub(crate) bytes: usize,
    /// What sets it, for messages.
    pub(crate) from: &'static str,
}

impl HeapLimit {
    /// With CUDA VMM (NVSHMEM's default on x86), the heap grows up to
    /// `NVSHMEM_MAX_MEMORY_PER_GPU`, and never past the GPU's memory; without,
    /// it is `NVSHMEM_SYMMETRIC_SIZE`.
    pub(crate) fn from_env(
        env: &dyn Fn(&str) -> Option<String>,
        gpu_memory: usize,
    ) -> Result<Self> {
        let size = |var: &str, default: usize| -> Result<usize> {
            match env(var) {
                None => Ok(default),
                Some(v) => parse_nvshmem_size(&v).ok_or_else(|| Error::InvalidEnv {
                    var: var.into(),
                    value: v.clone(),
                    reason: "expected a size such as 1073741824, 512m or 2G".into(),
                }),
            }
        };
        let symmetric = size("NVSHMEM_SYMMETRIC_SIZE", DEFAULT_SYMMETRIC_SIZE)?;
        let vmm_disabled = env("NVSHMEM_DISABLE_CUDA_VMM").is_some_and(|v| {
            matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "1" | "y" | "yes" | "t" | "true" | "on"
            )
        });
        if vmm_disabled {
            return Ok(HeapLimit {
                bytes: symmetric,
                from: "NVSHMEM_SYMMETRIC_SIZE (CUDA VMM is disabled)",
            });
        }
        let max = size("NVSHMEM_MAX_MEMORY_PER_GPU", DEFAULT_MAX_MEMORY_PER_GPU)?.max(symmetric);
        Ok(if max <= gpu_memory {
            HeapLimit {
                bytes: max,
                from: "NVSHMEM_MAX_MEMORY_PER_GPU",
            }
        } else {
            HeapLimit {
                bytes: gpu_memory,
                from: "the GPU's memory",
            }
        })
    }
}

/// Parses a size as NVSHMEM does: a number, possibly fractional, and an
/// optional `k`/`m`/`g`/`t` suffix (binary multiples); later characters are ignored.
pub(crate) fn parse_nvshmem_size(text: &str) -> Option<usize> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, rest) = text.split_at(split);
    let number: f64 = if number.starts_with('.') {
        format!("0{number}").parse().ok()?
    } else {
        number.parse().ok()?
    };
    let scale: f64 = match rest.chars().next().map(|c| c.to_ascii_lowercase()) {
        None => 1.0,
        Some('k') => (1u64 << 10) as f64,
        Some('m') => (1u64 << 20) as f64,
        Some('g') => (1u64 << 30) as f64,
        Some('t') => (1u64 << 40) as f64,
        Some(_) => return None,
    };
    let bytes = (number * scale).ceil();
    (bytes.is_finite() && bytes < usize::MAX as f64).then_some(bytes as usize)
}

/// `NVSHMEM_STATUS_IS_INITIALIZED` and up mean initialized; the same in every
/// supported version (sys tests).
const IS_INITIALIZED: i32 = crate::sys::v3_4_5::NVSHMEM_STATUS_IS_INITIALIZED as i32;
/// `NVSHMEM_STATUS_LIMITED_MPG`, the same in every supported version (sys tests).
const LIMITED_MPG: i32 = crate::sys::v3_4_5::NVSHMEM_STATUS_LIMITED_MPG as i32;

const LIMITED_MPG_REASON: &str = "several PEs share this GPU without CUDA MPS, and NVSHMEM then \
    supports only part of its API (limited MPG). Fix: run one PE per GPU, or start CUDA MPS \
    (`nvidia-cuda-mps-control -d`) with Builder::ignore_mps_thread_percentage(true)";

/// Whether an `Nvshmem` is alive in this process.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Holds [`ACTIVE`] during init; releases it unless init succeeds.
struct ActiveGuard {
    keep: bool,
}

impl ActiveGuard {
    fn acquire() -> Result<Self> {
        ACTIVE
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .map_err(|_| Error::AlreadyInitialized)?;
        Ok(ActiveGuard { keep: false })
    }
    fn keep(mut self) {
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
///
/// ```
/// assert!(nvshmem_host::take_drop_error().is_none());
/// ```
pub fn take_drop_error() -> Option<Error> {
    DROP_ERROR.lock().unwrap_or_else(|p| p.into_inner()).take()
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
    /// The first kernel fault: the context is unusable from then on, and
    /// NVSHMEM's teardown (free, finalize) would abort the process on it.
    fault: RefCell<Option<(String, DriverError)>>,
    /// Several PEs share a GPU without MPS, so NVSHMEM supports only some APIs.
    limited_mpg: bool,
    /// The last kernel launched on each stream, to name it in a fault.
    launches: RefCell<Vec<(usize, String)>>,
}

impl Inner {
    /// Fails once NVSHMEM has been finalized.
    pub(crate) fn check_active(&self, what: &'static str) -> Result<()> {
        if self.finalized.get() {
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

    pub(crate) fn record_launch(&self, stream: &CudaStream, kernel: &str) {
        let key = stream.cu_stream() as usize;
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
        if fault.is_none() {
            // SAFETY: initialized, and no work of ours is in flight after the sync.
            unsafe { self.lib.nvshmemx_hostlib_finalize() };
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
    pub(crate) inner: Rc<Inner>,
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
    /// Initializes with the defaults: [`Bootstrap::Auto`], the GPU from the
    /// environment, the default library search. Same as `Nvshmem::builder().init()`.
    ///
    /// ```no_run
    /// let nv = nvshmem_host::Nvshmem::init()?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn init() -> Result<Nvshmem> {
        Builder::default().init()
    }

    /// A [`Builder`] to configure initialization.
    ///
    /// ```no_run
    /// let nv = nvshmem_host::Nvshmem::builder().symmetric_size(1 << 30).init()?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// This PE's number.
    pub fn my_pe(&self) -> Pe {
        Pe::new(self.inner.my_pe)
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
    ///
    /// ```no_run
    /// # let nv = nvshmem_host::Nvshmem::init()?;
    /// let s = nv.new_stream()?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn new_stream(&self) -> Result<Arc<CudaStream>> {
        self.inner.enter("Nvshmem::new_stream")?;
        self.inner
            .ctx
            .new_stream()
            .map_err(Error::driver("cuStreamCreate"))
    }

    /// Waits for `stream`'s work. A kernel fault comes back as
    /// [`Error::KernelFault`] naming the kernel last launched on the stream.
    ///
    /// ```no_run
    /// # let nv = nvshmem_host::Nvshmem::init()?;
    /// nv.synchronize(nv.stream())?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn synchronize(&self, stream: &CudaStream) -> Result<()> {
        self.inner.enter("Nvshmem::synchronize")?;
        self.inner.check_stream(stream)?;
        stream
            .synchronize()
            .map_err(|e| self.inner.classify("cuStreamSynchronize", Some(stream), e))
    }

    /// Any error a `Drop` recorded since the last check (see [`take_drop_error`]).
    ///
    /// ```no_run
    /// # let nv = nvshmem_host::Nvshmem::init()?;
    /// nv.check_err()?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned()
    }

    fn launcher_env(rank: &str, nranks: &str, id: &str) -> impl Fn(&str) -> Option<String> {
        let vars = [
            ("NVSHMEM_RUN_RANK", rank),
            ("NVSHMEM_RUN_NRANKS", nranks),
            ("NVSHMEM_RUN_UNIQUEID", id),
        ];
        let map: HashMap<String, String> = vars
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn nvls_is_disabled_by_default_unless_the_environment_or_builder_says_otherwise() {
        let vars = Builder::default().environment_with(&env_of(&[])).unwrap();
        assert_eq!(
            vars,
            vec![("NVSHMEM_DISABLE_NVLS".to_string(), "1".to_string())]
        );
        let vars = Builder::default()
            .environment_with(&env_of(&[("NVSHMEM_DISABLE_NVLS", "0")]))
            .unwrap();
        assert!(vars.is_empty(), "the user's own setting is kept: {vars:?}");
        let vars = Builder::default()
            .nvls(true)
            .environment_with(&env_of(&[]))
            .unwrap();
        assert_eq!(
            vars,
            vec![("NVSHMEM_DISABLE_NVLS".to_string(), "0".to_string())]
        );
        let vars = Builder::default()
            .nvls(false)
            .environment_with(&env_of(&[("NVSHMEM_DISABLE_NVLS", "0")]))
            .unwrap();
        assert_eq!(
            vars,
            vec![("NVSHMEM_DISABLE_NVLS".to_string(), "1".to_string())]
        );
    }

    #[test]
    fn typed_settings_become_nvshmem_variables() {
        let vars = Builder::default()
            .symmetric_size(3 << 20)
            .remote_transport("none")
            .uid_socket_interface("lo")
            .debug("WARN")
            .ignore_mps_thread_percentage(true)
            .env("NVSHMEM_MAX_TEAMS", "8")
            .bootstrap(Bootstrap::Pmix)
            .environment_with(&env_of(&[("NVSHMEM_DISABLE_NVLS", "1")]))
            .unwrap();
        let get = |k: &str| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("NVSHMEM_SYMMETRIC_SIZE"), Some("3145728"));
        assert_eq!(get("NVSHMEM_REMOTE_TRANSPORT"), Some("none"));
        assert_eq!(get("NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME"), Some("lo"));
        assert_eq!(get("NVSHMEM_DEBUG"), Some("WARN"));
        assert_eq!(
            get("NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"),
            Some("1")
        );
        assert_eq!(get("NVSHMEM_MAX_TEAMS"), Some("8"));
        assert_eq!(get("NVSHMEM_BOOTSTRAP"), Some("PMI"));
        assert_eq!(get("NVSHMEM_BOOTSTRAP_PMI"), Some("PMIX"));
        assert_eq!(get("NVSHMEM_DISABLE_NVLS"), None);
    }

    #[test]
    fn bad_settings_are_errors() {
        let err = Builder::default()
            .symmetric_size(0)
            .environment_with(&env_of(&[]))
            .unwrap_err();
        assert!(matches!(err, Error::BadSize { .. }), "{err:?}");
        let err = Builder::default()
            .env("A=B", "1")
            .environment_with(&env_of(&[]))
            .unwrap_err();
        assert!(matches!(err, Error::InvalidArgument { .. }), "{err:?}");
        // init reports them before touching NVSHMEM or CUDA.
        assert!(matches!(
            Builder::default().symmetric_size(0).init(),
            Err(Error::BadSize { .. })
        ));
    }

    #[test]
    fn auto_bootstrap_uses_the_launcher_environment() {
        let id = UniqueId::from_bytes([9; 128]);
        let r = Bootstrap::Auto
            .resolve(&launcher_env("1", "4", &id.to_hex()))
            .unwrap();
        assert_eq!(r.uid, Some((1, 4, id)));
        assert!(r.describe.contains("rank 1 of 4"), "{}", r.describe);
        let r = Bootstrap::Auto.resolve(&env_of(&[])).unwrap();
        assert_eq!(r.uid, None);
        assert!(r.env.is_empty(), "NVSHMEM_BOOTSTRAP is left to the user");
    }

    #[test]
    fn malformed_launcher_environment_is_an_error_naming_the_variable() {
        let id = UniqueId::from_bytes([1; 128]).to_hex();
        for (env, var) in [
            (launcher_env("0", "2", "xyz"), "NVSHMEM_RUN_UNIQUEID"),
            (launcher_env("", "2", &id), "NVSHMEM_RUN_RANK"),
            (launcher_env("0", "", &id), "NVSHMEM_RUN_NRANKS"),
            (launcher_env("-1", "2", &id), "NVSHMEM_RUN_RANK"),
        ] {
            let err = Bootstrap::Auto.resolve(&env).unwrap_err();
            assert!(
                matches!(&err, Error::InvalidEnv { var: v, .. } if v == var),
                "{var}: {err:?}"
            );
        }
        let err = Bootstrap::Auto
            .resolve(&launcher_env("2", "2", &id))
            .unwrap_err();
        assert!(matches!(err, Error::InvalidArgument { .. }), "{err:?}");
    }

    #[test]
    fn explicit_uid_bootstrap_checks_rank_and_count() {
        let id = UniqueId::from_bytes([0; 128]);
        assert!(
            Bootstrap::UniqueId {
                rank: 0,
                n_pes: 1,
                id
            }
            .resolve(&env_of(&[]))
            .is_ok()
        );
        assert!(
            Bootstrap::UniqueId {
                rank: 1,
                n_pes: 1,
                id
            }
            .resolve(&env_of(&[]))
            .is_err()
        );
        assert!(
            Bootstrap::UniqueId {
                rank: 0,
                n_pes: 0,
                id
            }
            .resolve(&env_of(&[]))
            .is_err()
        );
    }

    #[test]
    fn pmi_family_and_mpi_select_nvshmem_bootstraps() {
        let none = env_of(&[]);
        let boot = |b: Bootstrap| b.resolve(&none).unwrap().env;
        assert_eq!(boot(Bootstrap::Pmi2)[1].1, "PMI-2");
        assert_eq!(
            boot(Bootstrap::Single)[0],
            ("NVSHMEM_BOOTSTRAP".into(), "PMI".into())
        );
        assert_eq!(
            boot(Bootstrap::Mpi),
            vec![("NVSHMEM_BOOTSTRAP".into(), "MPI".into())]
        );
    }

    #[test]
    fn sizes_parse_as_nvshmem_parses_them() {
        assert_eq!(parse_nvshmem_size("1073741824"), Some(1 << 30));
        assert_eq!(parse_nvshmem_size("20m"), Some(20 << 20));
        assert_eq!(parse_nvshmem_size("3.1M"), Some(3250586));
        assert_eq!(parse_nvshmem_size(".5m"), Some(1 << 19));
        assert_eq!(parse_nvshmem_size("2G"), Some(2 << 30));
        assert_eq!(parse_nvshmem_size("20kk"), Some(20 << 10));
        assert_eq!(parse_nvshmem_size("1t"), Some(1 << 40));
        for bad in ["", "x", "12q", "-1"] {
            assert_eq!(parse_nvshmem_size(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_heap_limit_is_the_same_on_every_pe_and_below_the_gpu() {
        let gpu = 140 << 30;
        let limit = |vars: &[(&str, &str)]| HeapLimit::from_env(&env_of(vars), gpu).unwrap();
        assert_eq!(limit(&[]).bytes, 128 << 30);
        assert_eq!(
            limit(&[("NVSHMEM_MAX_MEMORY_PER_GPU", "1t")]),
            HeapLimit {
                bytes: gpu,
                from: "the GPU's memory"
            }
        );
        assert_eq!(
            limit(&[("NVSHMEM_MAX_MEMORY_PER_GPU", "8g")]).bytes,
            8 << 30
        );
        let fixed = limit(&[
            ("NVSHMEM_DISABLE_CUDA_VMM", "1"),
            ("NVSHMEM_SYMMETRIC_SIZE", "256m"),
        ]);
        assert_eq!(fixed.bytes, 256 << 20);
        assert!(HeapLimit::from_env(&env_of(&[("NVSHMEM_SYMMETRIC_SIZE", "big")]), gpu).is_err());
    }

    #[test]
    fn drop_errors_are_kept_until_taken() {
        record_drop_error(Err(Error::bad_size("first")));
        record_drop_error(Err(Error::bad_size("second")));
        let e = take_drop_error().unwrap();
        assert!(e.to_string().contains("first"));
    }
}
