//! The manifest written beside every PTX: what was built, against what.
//!
//! The host runtime reads it to check the NVSHMEM version at load time, to know
//! which kernels need a collective launch, and to check launch arguments.

mod kind;

pub use kind::{ParamKind, Scalar, ScalarClass};

use crate::{Arch, CudaVersion, DeviceLink, Version};
use core::fmt;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::format;
use std::path::Path;
use std::string::{String, ToString};
use std::vec::Vec;

/// Serializes the typed values of a manifest as the strings their `Display`
/// writes, and reads them back with their `FromStr`.
macro_rules! serde_as_string {
    ($($t:ty),*) => {$(
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                text.parse().map_err(|e| {
                    serde::de::Error::custom(format!("`{text}`: {e}"))
                })
            }
        }
    )*};
}
serde_as_string!(Arch, Version, CudaVersion, DeviceLink);

/// The file format version; bumped when a field changes meaning.
pub const MANIFEST_FORMAT: u32 = 1;

/// Everything the builder knows about one built kernel crate.
///
/// ```
/// use nvshmem_types::manifest::Manifest;
/// let json = r#"{"format":1,"crate_name":"k","nvshmem_version":"3.4.5","arch":"sm_90",
///   "ptx_isa":"8.3","ptx":"k.ptx","cubin":null,"kernels":[]}"#;
/// let m: Manifest = serde_json::from_str(json).unwrap();
/// assert_eq!(m.nvshmem_version, nvshmem_types::Version::new(3, 4, 5));
/// assert_eq!(m.arch, nvshmem_types::Arch::DEFAULT);
/// assert_eq!(serde_json::to_value(&m).unwrap()["arch"], "sm_90");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`MANIFEST_FORMAT`] when written.
    pub format: u32,
    /// The kernel crate's name, as in its `Cargo.toml` (`-` kept).
    pub crate_name: String,
    /// The NVSHMEM version whose device bitcode was linked in, `major.minor.patch`.
    /// The host library that runs the PTX must have the same version.
    pub nvshmem_version: Version,
    /// The GPU architecture, such as `sm_90`.
    pub arch: Arch,
    /// The PTX ISA version of the PTX, such as `8.3`.
    pub ptx_isa: String,
    /// The PTX file's name, relative to the manifest's folder.
    pub ptx: String,
    /// The cubin's name, relative to the manifest's folder, when `ptxas` was found.
    pub cubin: Option<String>,
    /// How the cubin was made: [`DeviceLink::WholeProgram`] (`ptxas`, every
    /// call inlined) or [`DeviceLink::Separate`] (`ptxas -c` + `nvlink`,
    /// NVSHMEM's transport functions at 32 registers at most). Absent
    /// without a cubin, and in manifests from before this field.
    #[serde(default)]
    pub device_link: Option<DeviceLink>,
    /// The CUDA toolkit whose `ptxas` made the cubin (for PTX only: the one
    /// the PTX ISA level was chosen for), such as `12.9`. The host compares
    /// it with the driver's CUDA version before loading. Absent in manifests
    /// from before this field.
    #[serde(default)]
    pub cuda_toolkit: Option<CudaVersion>,
    /// The kernels (`.entry` functions), in PTX order.
    pub kernels: Vec<KernelInfo>,
}

/// One kernel entry point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelInfo {
    /// The PTX entry name (the Rust function name, unmangled).
    pub name: String,
    /// The parameters, in order.
    pub params: Vec<ParamInfo>,
    /// True when the kernel reaches an NVSHMEM barrier, sync or collective,
    /// so every block must be co-resident: the host refuses a plain launch.
    pub collective: bool,
    /// Registers per thread, from `ptxas -v` (absent without ptxas).
    pub registers: Option<u32>,
    /// Bytes of spill stores, from `ptxas -v`: in the kernel and what it
    /// calls, but for NVSHMEM's transport functions when compiled
    /// separately (capped at 32 registers, as in `libnvshmem_device.a`, they
    /// spill on the remote path by design).
    pub spill_stores: Option<u32>,
    /// Bytes of spill loads, from `ptxas -v`, as [`spill_stores`](Self::spill_stores).
    pub spill_loads: Option<u32>,
    /// Bytes of stack frame, from `ptxas -v`.
    pub stack_frame: Option<u32>,
    /// Bytes of static shared memory (`static_shared!` arrays and NVSHMEM's
    /// own), from `ptxas -v` (`N bytes smem`); absent without ptxas and in
    /// manifests from before this field. The host adds the launch's dynamic
    /// shared memory to it to check against the GPU's limit.
    #[serde(default)]
    pub static_shared_bytes: Option<u32>,
    /// `#[kernel(max_threads = N)]`: the most threads per block it may be
    /// launched with (`.maxntid`, CUDA's `__launch_bounds__`); absent when
    /// the kernel declares none, and in manifests from before this field.
    #[serde(default)]
    pub max_threads: Option<u32>,
}

impl KernelInfo {
    /// A kernel without `ptxas` figures (as a PTX-only build describes it).
    ///
    /// ```
    /// use nvshmem_types::manifest::KernelInfo;
    /// let k = KernelInfo::new("barrier", vec![], true);
    /// assert!(k.collective && k.registers.is_none());
    /// ```
    pub fn new(name: impl Into<String>, params: Vec<ParamInfo>, collective: bool) -> Self {
        KernelInfo {
            name: name.into(),
            params,
            collective,
            registers: None,
            spill_stores: None,
            spill_loads: None,
            stack_frame: None,
            static_shared_bytes: None,
            max_threads: None,
        }
    }
}

/// One kernel parameter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParamInfo {
    /// The parameter's name in the Rust source (`_N` when unknown).
    pub name: String,
    /// The Rust type as written, such as `SymPtr<f32>` (empty when unknown).
    pub rust_type: String,
    /// The C type for the header, such as `float*`.
    pub c_type: String,
    /// Size in bytes of the PTX parameter.
    pub size: u32,
    /// Alignment in bytes of the PTX parameter.
    pub align: u32,
}

impl ParamInfo {
    /// What the parameter accepts, from [`rust_type`](ParamInfo::rust_type).
    pub fn kind(&self) -> ParamKind {
        ParamKind::parse(&self.rust_type)
    }
}

impl Manifest {
    /// Whether the cubin was compiled function by function (`ptxas -c` +
    /// `nvlink`): its PTX should be JIT-compiled through the driver's linker,
    /// not as one program.
    pub fn is_separately_compiled(&self) -> bool {
        self.device_link == Some(DeviceLink::Separate)
    }

    /// Reads a manifest file.
    ///
    /// ```no_run
    /// let m = nvshmem_types::manifest::Manifest::read("ptx/nvshmem-3.4.5/sm_90/kernels.json".as_ref())?;
    /// # Ok::<(), String>(())
    /// ```
    pub fn read(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read manifest {}: {e}", path.display()))?;
        let m: Manifest = serde_json::from_str(&text)
            .map_err(|e| format!("manifest {} is malformed: {e}", path.display()))?;
        if m.format != MANIFEST_FORMAT {
            return Err(format!(
                "manifest {} has format {}, this library reads format {MANIFEST_FORMAT}: rebuild the kernels",
                path.display(),
                m.format
            ));
        }
        Ok(m)
    }

    /// The kernel named `name`, or an error that lists the kernels there are.
    ///
    /// ```
    /// # use nvshmem_types::manifest::{KernelInfo, Manifest};
    /// # let mut m: Manifest = serde_json::from_str(r#"{"format":1,"crate_name":"k",
    /// #   "nvshmem_version":"3.4.5","arch":"sm_90","ptx_isa":"8.3","ptx":"k.ptx",
    /// #   "cubin":null,"kernels":[]}"#).unwrap();
    /// m.kernels.push(KernelInfo::new("ring_pass", vec![], false));
    /// assert!(m.kernel("ring_pass").is_ok());
    /// let err = m.kernel("ring_pas").unwrap_err();
    /// assert_eq!(err.to_string(), "kernel crate `k` has no kernel `ring_pas`; its kernels: ring_pass");
    /// ```
    pub fn kernel(&self, name: &str) -> Result<&KernelInfo, KernelNotFound> {
        self.get(name).ok_or_else(|| KernelNotFound {
            kernel: name.to_string(),
            crate_name: self.crate_name.clone(),
            available: self.kernels.iter().map(|k| k.name.clone()).collect(),
        })
    }

    /// The kernel named `name`, if the module has it.
    pub fn get(&self, name: &str) -> Option<&KernelInfo> {
        self.kernels.iter().find(|k| k.name == name)
    }
}

/// [`Manifest::kernel`] of a name the manifest does not list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelNotFound {
    /// The name asked for.
    pub kernel: String,
    /// The manifest's kernel crate.
    pub crate_name: String,
    /// The kernels it has, in PTX order.
    pub available: Vec<String>,
}

impl fmt::Display for KernelNotFound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "kernel crate `{}` has no kernel `{}`; ",
            self.crate_name, self.kernel
        )?;
        if self.available.is_empty() {
            f.write_str("it has no kernels")
        } else {
            write!(f, "its kernels: {}", self.available.join(", "))
        }
    }
}

impl core::error::Error for KernelNotFound {}
