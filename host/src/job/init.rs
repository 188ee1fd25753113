//! Initialization: [`InitOptions`] and the steps of [`InitOptions::init`].

use crate::env::{self, Lookup};
use crate::error::{Error, Result};
use crate::job::bootstrap::{Bootstrap, IdSource, Plan};
use crate::job::rendezvous::{self, Store};
use crate::job::uniqueid::UniqueId;
use crate::runtime::driver;
use crate::runtime::heap::HeapLimit;
use crate::runtime::library::{HostLibrary, LibraryRequest};
use crate::runtime::nvshmem::{ActiveGuard, InitTimings, Nvshmem, Started};
use nvshmem_types::Version;
use std::path::PathBuf;
use std::time::Instant;

/// How to initialize NVSHMEM: the bootstrap, the GPU, the library, and
/// NVSHMEM's own settings. Get one from [`Nvshmem::options`].
///
/// NVSHMEM reads its settings from environment variables when it
/// initializes. [`InitOptions::init`] puts the chosen ones (see
/// [`InitOptions::environment`]) into this process's environment, which is
/// sound only while the process has a single thread: initialize first thing
/// in `main`. In a process that already runs other threads, every variable
/// must already be in the environment with that value (`nvshmem-run` and the
/// test harness put the defaults there); otherwise init fails with
/// [`Error::EnvNotSet`], naming the variable to export.
///
/// **Default: `NVSHMEM_DISABLE_NVLS=1`.** NVLink multicast (NVLS) stays off
/// unless the environment already sets `NVSHMEM_DISABLE_NVLS` or you call
/// [`InitOptions::nvls`]`(true)`: on shared multi-GPU hosts a program that
/// uses it can take the GPUs out of service.
///
/// ```no_run
/// use nvshmem_host::{Bootstrap, Nvshmem};
/// let nv = Nvshmem::options()
///     .symmetric_size(2 << 30) // 2 GiB of symmetric heap per PE
///     .bootstrap(Bootstrap::Auto) // the default: from the launcher's variables
///     .init()?;
/// # Ok::<(), nvshmem_host::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
#[must_use = "options do nothing until `init` is called"]
pub struct InitOptions {
    gpu: Option<usize>,
    bootstrap: Bootstrap,
    library: LibraryRequest,
    nvls: Option<bool>,
    symmetric_size: Option<usize>,
    env: Vec<(String, String)>,
}

impl Nvshmem {
    /// Initializes with the defaults: the bootstrap and GPU from the
    /// launcher's environment ([`Bootstrap::Auto`](crate::Bootstrap::Auto)),
    /// the default library search. Same as `Nvshmem::options().init()`.
    pub fn init() -> Result<Nvshmem> {
        InitOptions::default().init()
    }

    /// [`InitOptions`] to configure initialization.
    pub fn options() -> InitOptions {
        InitOptions::default()
    }
}

impl InitOptions {
    /// How the PEs find each other; [`Bootstrap::Auto`] by default.
    pub fn bootstrap(mut self, bootstrap: Bootstrap) -> Self {
        self.bootstrap = bootstrap;
        self
    }

    /// Use this CUDA device. By default: `NVSHMEM_RUN_GPU` (set by
    /// `nvshmem-run`), else the launcher's local rank mod the GPU count
    /// (see [`bootstrap`](crate::bootstrap)), else 0.
    pub fn gpu(mut self, ordinal: usize) -> Self {
        self.gpu = Some(ordinal);
        self
    }

    /// The symmetric heap's initial size per PE, in bytes
    /// (`NVSHMEM_SYMMETRIC_SIZE`; NVSHMEM's default is 1 GiB). Every PE must
    /// use the same size. With CUDA VMM (the default) the heap grows on demand
    /// up to [`InitOptions::max_memory_per_gpu`].
    pub fn symmetric_size(mut self, bytes: usize) -> Self {
        self.symmetric_size = Some(bytes);
        self
    }

    /// The most the symmetric heap may grow to on this GPU, in bytes
    /// (`NVSHMEM_MAX_MEMORY_PER_GPU`).
    pub fn max_memory_per_gpu(self, bytes: usize) -> Self {
        self.env("NVSHMEM_MAX_MEMORY_PER_GPU", &bytes.to_string())
    }

    /// Allow NVLink multicast (`NVSHMEM_DISABLE_NVLS=0`) or forbid it (`=1`).
    /// Without this call it is forbidden unless the environment says otherwise.
    pub fn nvls(mut self, enabled: bool) -> Self {
        self.nvls = Some(enabled);
        self
    }

    /// The transport between nodes (`NVSHMEM_REMOTE_TRANSPORT`): `"none"` for
    /// one node, or `"ibrc"`, `"ucx"`, `"libfabric"`, `"ibdevx"`.
    pub fn remote_transport(self, transport: &str) -> Self {
        self.env("NVSHMEM_REMOTE_TRANSPORT", transport)
    }

    /// The network interface of the UID bootstrap's sockets
    /// (`NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME`); `"lo"` when all PEs are on one machine.
    pub fn uid_socket_interface(self, interface: &str) -> Self {
        self.env("NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME", interface)
    }

    /// NVSHMEM's log level (`NVSHMEM_DEBUG`): `"WARN"`, `"INFO"`, `"TRACE"`.
    pub fn debug(self, level: &str) -> Self {
        self.env("NVSHMEM_DEBUG", level)
    }

    /// Accept CUDA MPS with any active-thread percentage
    /// (`NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`), as 3 or more PEs on
    /// one GPU under MPS need (`nvshmem-run --mps` sets it).
    pub fn ignore_mps_thread_percentage(self, ignore: bool) -> Self {
        self.env(
            "NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
            if ignore { "1" } else { "0" },
        )
    }

    /// Sets any other NVSHMEM variable (`NVSHMEM_...`) for init.
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// Load NVSHMEM from this installation (the folder with `include/` and
    /// `lib/`) instead of searching (see [`crate::library`]).
    pub fn nvshmem_home(mut self, dir: impl Into<PathBuf>) -> Self {
        self.library = self.library.home(dir);
        self
    }

    /// Accept only this NVSHMEM version: the one your kernels were built
    /// against (`Manifest::nvshmem_version`). Other installations are skipped.
    pub fn nvshmem_version(mut self, version: Version) -> Self {
        self.library = self.library.version(version);
        self
    }

    /// The NVSHMEM variables [`InitOptions::init`] needs in the environment,
    /// given the current one, in order (a later one wins): what a launcher
    /// must give the PEs of a multithreaded program.
    ///
    /// ```
    /// let vars = nvshmem_host::Nvshmem::options().symmetric_size(1 << 30).environment()?;
    /// assert!(vars.contains(&("NVSHMEM_SYMMETRIC_SIZE".into(), "1073741824".into())));
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn environment(&self) -> Result<Vec<(String, String)>> {
        let plan = self.bootstrap.plan(&env::process)?;
        self.environment_with(&env::process, &plan)
    }

    fn environment_with(&self, env: Lookup, plan: &Plan) -> Result<Vec<(String, String)>> {
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
        vars.extend(plan.env.iter().cloned());
        for (name, value) in &self.env {
            if name.is_empty() || name.contains('=') || name.contains('\0') || value.contains('\0')
            {
                return Err(Error::InvalidArgument {
                    reason: format!("{name:?}={value:?} cannot be an environment variable"),
                });
            }
            vars.push((name.clone(), value.clone()));
        }
        // The last value of each variable is the one that counts.
        let mut last: Vec<(String, String)> = Vec::new();
        for (name, value) in vars.into_iter().rev() {
            if !last.iter().any(|(n, _)| *n == name) {
                last.push((name, value));
            }
        }
        last.reverse();
        Ok(last)
    }

    /// Initializes NVSHMEM: loads the host library, puts the settings into
    /// the environment (see [`InitOptions`]), makes a CUDA context current on
    /// the PE's GPU, then initializes with the bootstrap. **Collective**:
    /// every PE calls it.
    pub fn init(self) -> Result<Nvshmem> {
        let plan = self.bootstrap.plan(&env::process)?;
        let vars = self.environment_with(&env::process, &plan)?;
        let guard = ActiveGuard::acquire()?;
        let t = Instant::now();
        let lib = HostLibrary::load(&self.library)?;
        let library = t.elapsed();
        if lib.is_initialized() {
            // Initialized behind our back (another binding in this process).
            return Err(Error::AlreadyInitialized);
        }
        // Before anything that starts threads (the CUDA driver, NVSHMEM).
        let t = Instant::now();
        driver::probe()?;
        env::apply(&vars)?;
        let count = driver::device_count()?;
        let gpu = driver::choose_gpu(self.gpu, &env::process, plan.local_rank, count)?;
        let driver_time = t.elapsed();
        let t = Instant::now();
        let ctx = driver::context(gpu.ordinal)?;
        let context = t.elapsed();
        let total_mem = ctx.total_mem().map_err(Error::driver("cuDeviceTotalMem"))?;
        let heap_limit = HeapLimit::from_env(&env::process, total_mem)?;
        let (uid, _store) = match &plan.uid {
            Some((rank, n_pes, source)) => {
                let (id, store) = unique_id(lib, *rank, source)?;
                (Some((*rank, *n_pes, id)), store)
            }
            None => (None, None),
        };
        let t = Instant::now();
        // SAFETY: the context is current (driver::context binds it); NVSHMEM is
        // not initialized (is_initialized and the guard).
        unsafe { lib.init(uid.as_ref().map(|(r, n, id)| (*r, *n, id))) }.map_err(
            |(call, status)| Error::InitFailed {
                bootstrap: format!("{}, {call}", plan.describe),
                status,
                hint: plan.hint,
            },
        )?;
        let nvshmem = t.elapsed();
        Nvshmem::started(Started {
            lib,
            ctx,
            gpu,
            plan,
            heap_limit,
            guard,
            timings: InitTimings {
                library,
                driver: driver_time,
                context,
                nvshmem,
            },
            attached: false,
        })
    }
}

/// The UID bootstrap's id for `rank`: given, or from the rendezvous store
/// (rank 0 makes it and puts it there, serving the store itself under
/// torchrun; the store must live until init returns).
fn unique_id(lib: &HostLibrary, rank: u32, source: &IdSource) -> Result<(UniqueId, Option<Store>)> {
    match source {
        IdSource::Given(id) => Ok((*id, None)),
        IdSource::Rendezvous { addr, job, serve } if rank == 0 => {
            let id = UniqueId::from_bytes(lib.get_uniqueid()?);
            if !*serve {
                rendezvous::put(addr, job, &id)?;
                return Ok((id, None));
            }
            let port = addr.rsplit_once(':').map_or("", |(_, p)| p);
            let store =
                Store::serve(&format!("0.0.0.0:{port}"), job).map_err(|e| Error::Rendezvous {
                    addr: addr.clone(),
                    reason: format!(
                        "rank 0 cannot listen on port {port}: {e} (set NVSHMEM_RUN_RENDEZVOUS \
                         to a free HOST:PORT for every rank)"
                    ),
                })?;
            store.set(&id);
            Ok((id, Some(store)))
        }
        IdSource::Rendezvous { addr, job, .. } => Ok((rendezvous::get(addr, job)?, None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(options: &InitOptions, env: &[(&str, &str)]) -> Result<Vec<(String, String)>> {
        let env = env::of(env);
        let plan = options.bootstrap.plan(&env)?;
        options.environment_with(&env, &plan)
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn nvls_is_disabled_by_default_unless_the_environment_or_options_say_otherwise() {
        type Vars = &'static [(&'static str, &'static str)];
        let cases: &[(InitOptions, Vars, Vars)] = &[
            (
                InitOptions::default(),
                &[],
                &[("NVSHMEM_DISABLE_NVLS", "1")],
            ),
            (
                InitOptions::default(),
                &[("NVSHMEM_DISABLE_NVLS", "0")],
                &[],
            ),
            (
                InitOptions::default().nvls(true),
                &[],
                &[("NVSHMEM_DISABLE_NVLS", "0")],
            ),
            (
                InitOptions::default().nvls(false),
                &[("NVSHMEM_DISABLE_NVLS", "0")],
                &[("NVSHMEM_DISABLE_NVLS", "1")],
            ),
        ];
        for (options, env, expected) in cases {
            assert_eq!(
                vars(options, env).unwrap(),
                pairs(expected),
                "{options:?} {env:?}"
            );
        }
    }

    #[test]
    fn typed_settings_become_nvshmem_variables_and_the_last_one_wins() {
        let options = InitOptions::default()
            .symmetric_size(3 << 20)
            .remote_transport("none")
            .uid_socket_interface("lo")
            .debug("WARN")
            .ignore_mps_thread_percentage(true)
            .env("NVSHMEM_MAX_TEAMS", "8")
            .env("NVSHMEM_DEBUG", "INFO")
            .bootstrap(Bootstrap::Pmix);
        let got = vars(&options, &[("NVSHMEM_DISABLE_NVLS", "1")]).unwrap();
        assert_eq!(
            got,
            pairs(&[
                ("NVSHMEM_SYMMETRIC_SIZE", "3145728"),
                ("NVSHMEM_BOOTSTRAP", "PMI"),
                ("NVSHMEM_BOOTSTRAP_PMI", "PMIX"),
                ("NVSHMEM_REMOTE_TRANSPORT", "none"),
                ("NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME", "lo"),
                ("NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "1"),
                ("NVSHMEM_MAX_TEAMS", "8"),
                ("NVSHMEM_DEBUG", "INFO"),
            ])
        );
    }

    #[test]
    fn bad_settings_are_errors_before_nvshmem_or_cuda_is_touched() {
        let err = vars(&InitOptions::default().symmetric_size(0), &[]).unwrap_err();
        assert!(matches!(err, Error::BadSize { .. }), "{err:?}");
        let err = vars(&InitOptions::default().env("A=B", "1"), &[]).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument { .. }), "{err:?}");
        assert!(matches!(
            InitOptions::default().symmetric_size(0).init(),
            Err(Error::BadSize { .. })
        ));
    }
}
