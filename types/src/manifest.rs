//! The manifest written beside every PTX: what was built, against what.
//!
//! The host runtime reads it to check the NVSHMEM version at load time, to know
//! which kernels need a collective launch, and to check launch arguments.

use crate::CudaVersion;
use serde::{Deserialize, Serialize};
use std::format;
use std::path::Path;
use std::string::String;
use std::vec::Vec;

/// The file format version; bumped when a field changes meaning.
pub const MANIFEST_FORMAT: u32 = 1;

/// Everything the builder knows about one built kernel crate.
///
/// ```
/// use nvshmem_types::manifest::Manifest;
/// let json = r#"{"format":1,"crate_name":"k","nvshmem_version":"3.4.5","arch":"sm_90",
///   "ptx_isa":"8.3","ptx":"k.ptx","cubin":null,"kernels":[]}"#;
/// let m: Manifest = serde_json::from_str(json).unwrap();
/// assert_eq!(m.nvshmem_version, "3.4.5");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`MANIFEST_FORMAT`] when written.
    pub format: u32,
    /// The kernel crate's name, as in its `Cargo.toml` (`-` kept).
    pub crate_name: String,
    /// The NVSHMEM version whose device bitcode was linked in, `major.minor.patch`.
    /// The host library that runs the PTX must have the same version.
    pub nvshmem_version: String,
    /// The GPU architecture, such as `sm_90`.
    pub arch: String,
    /// The PTX ISA version of the PTX, such as `8.3`.
    pub ptx_isa: String,
    /// The PTX file's name, relative to the manifest's folder.
    pub ptx: String,
    /// The cubin's name, relative to the manifest's folder, when `ptxas` was found.
    pub cubin: Option<String>,
    /// How the cubin was made: `whole-program` (`ptxas`, every call inlined)
    /// or `separate` (`ptxas -c` + `nvlink`, NVSHMEM's transport functions
    /// at 32 registers at most). Absent without a cubin, and in
    /// manifests from before this field.
    #[serde(default)]
    pub device_link: Option<String>,
    /// The CUDA toolkit whose `ptxas` made the cubin (for PTX only: the one
    /// the PTX ISA level was chosen for), such as `12.9`. The host compares
    /// it with the driver's CUDA version before loading. Absent in manifests
    /// from before this field.
    #[serde(default, with = "cuda_version")]
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

/// [`Manifest::device_link`] of a cubin compiled function by function.
pub const SEPARATE_COMPILATION: &str = "separate";

impl Manifest {
    /// Whether the cubin was compiled function by function (`ptxas -c` +
    /// `nvlink`): its PTX should be JIT-compiled through the driver's linker,
    /// not as one program.
    pub fn is_separately_compiled(&self) -> bool {
        self.device_link.as_deref() == Some(SEPARATE_COMPILATION)
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

    /// The kernel named `name`, if the module has it.
    ///
    /// ```
    /// # use nvshmem_types::manifest::Manifest;
    /// # let m = Manifest { format: 1, crate_name: "k".into(), nvshmem_version: "3.4.5".into(),
    /// #   arch: "sm_90".into(), ptx_isa: "8.3".into(), ptx: "k.ptx".into(), cubin: None, device_link: None, cuda_toolkit: None, kernels: vec![] };
    /// assert!(m.kernel("missing").is_none());
    /// ```
    pub fn kernel(&self, name: &str) -> Option<&KernelInfo> {
        self.kernels.iter().find(|k| k.name == name)
    }
}

/// `Option<CudaVersion>` as `"12.9"` or `null`.
mod cuda_version {
    use crate::CudaVersion;
    use serde::{Deserialize, Deserializer, Serializer};
    use std::string::{String, ToString};

    pub fn serialize<S: Serializer>(v: &Option<CudaVersion>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => s.serialize_some(&v.to_string()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<CudaVersion>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|t| t.parse().map_err(serde::de::Error::custom))
            .transpose()
    }
}
