//! `nvshmem_rs._native`, the compiled half of the Python package
//! `nvshmem_rs` (its Python half is `python/nvshmem_rs/`).
//!
//! It only converts between Python and the host crate: manifests, argument
//! checks ([`nvshmem_host::dynamic`]), module loading, registration and
//! attaching to the NVSHMEM that PyTorch runs ([`Nvshmem::attach`]) are
//! `nvshmem-host`'s, and builds are `nvshmem-builder`'s.
#![warn(missing_docs)]

use nvshmem_builder::Builder;
use nvshmem_host::cudarc::driver::{result as cu, sys};
use nvshmem_host::dynamic::{
    Arg, ArgBuffer, ArgContext, Location, ParamKind, Refusal, Scalar, Signature, TensorArg,
};
use nvshmem_host::{Error, LaunchConfig, Nvshmem};
use pyo3::exceptions::{PyKeyError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyTuple};
use pyo3::{create_exception, intern};
use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;

create_exception!(
    nvshmem_rs,
    NvshmemError,
    PyRuntimeError,
    "An error of NVSHMEM, CUDA or the runtime; the message says what to do."
);
create_exception!(
    nvshmem_rs,
    VersionMismatchError,
    NvshmemError,
    "Kernels built against another NVSHMEM version than the host library in the process."
);
create_exception!(
    nvshmem_rs,
    NotAttachableError,
    NvshmemError,
    "No initialized NVSHMEM in the process to attach to."
);

/// The host crate's error as the Python exception that fits it.
fn to_py(e: Error) -> PyErr {
    match &e {
        Error::ArgumentRejected {
            refusal: Refusal::Type,
            ..
        } => PyTypeError::new_err(e.to_string()),
        Error::ArgumentRejected { .. } => PyValueError::new_err(e.to_string()),
        Error::VersionMismatch { found, .. } => VersionMismatchError::new_err(format!(
            "{e}. From Python: nvshmem_rs.build(kernel_crate_dir, nvshmem_version=\"{found}\")"
        )),
        Error::NotAttachable { .. } => NotAttachableError::new_err(e.to_string()),
        _ => NvshmemError::new_err(e.to_string()),
    }
}

/// A `#[pymethods]` block whose read-only properties are written as
/// `get name -> Type = |s| expression;` (`s` is the object), followed by its
/// other methods.
/// A kernel's launch methods are written `name => cooperative;` in a
/// `launchers { ... }` section after the properties.
macro_rules! methods {
    ($ty:ident { $($(#[doc = $doc:literal])* get $name:ident -> $ret:ty = |$s:ident| $e:expr;)* }
     launchers { $($(#[doc = $ldoc:literal])* $launch:ident => $coop:literal;)* }
     $($rest:tt)*) => {
        #[pymethods]
        impl $ty {
            $(
                $(#[doc = $doc])*
                #[getter]
                fn $name(&self) -> $ret {
                    let $s = self;
                    $e
                }
            )*
            $(
                $(#[doc = $ldoc])*
                #[pyo3(signature = (grid, block, *args, stream=None, shared_mem=0))]
                fn $launch(
                    &self,
                    py: Python<'_>,
                    grid: &Bound<'_, PyAny>,
                    block: &Bound<'_, PyAny>,
                    args: &Bound<'_, PyTuple>,
                    stream: Option<&Bound<'_, PyAny>>,
                    shared_mem: u32,
                ) -> PyResult<()> {
                    self.launch(py, config(grid, block, shared_mem), args, stream, $coop)
                }
            )*
            $($rest)*
        }
    };
    ($ty:ident { $($getters:tt)* } $($rest:tt)*) => {
        methods! { $ty { $($getters)* } launchers {} $($rest)* }
    };
}

thread_local! {
    /// This thread's runtime (NVSHMEM's host API belongs to one thread per PE).
    static CURRENT: RefCell<Option<Rc<Nvshmem>>> = const { RefCell::new(None) };
    /// What the launch path needs from torch, once torch is imported.
    static TORCH: RefCell<Option<Rc<Torch>>> = const { RefCell::new(None) };
}

/// torch's objects that the launch path uses, looked up once.
struct Torch {
    tensor: Py<PyAny>,
    dtypes: Vec<(Py<PyAny>, Scalar)>,
    /// `torch._C._cuda_getCurrentRawStream(device)`: the current stream's handle.
    raw_stream: Option<Py<PyAny>>,
    from_dlpack: Option<Py<PyAny>>,
}

/// torch's objects, when torch is imported (never imports it).
fn torch(py: Python<'_>) -> Option<Rc<Torch>> {
    if let Some(t) = TORCH.with(|t| t.borrow().clone()) {
        return Some(t);
    }
    let modules = py.import("sys").ok()?.getattr("modules").ok()?;
    let torch = modules.get_item("torch").ok()?;
    let dtypes = Scalar::ALL
        .iter()
        .filter_map(|s| Some((torch.getattr(s.torch_name()).ok()?.unbind(), *s)))
        .collect();
    let raw_stream = torch
        .getattr("_C")
        .and_then(|c| c.getattr("_cuda_getCurrentRawStream"))
        .ok()
        .map(Bound::unbind);
    let t = Rc::new(Torch {
        tensor: torch.getattr("Tensor").ok()?.unbind(),
        dtypes,
        raw_stream,
        from_dlpack: torch.getattr("from_dlpack").ok().map(Bound::unbind),
    });
    TORCH.with(|slot| *slot.borrow_mut() = Some(t.clone()));
    Some(t)
}

/// A torch tensor's facts, through its own methods.
fn torch_tensor(py: Python<'_>, t: &Torch, obj: &Bound<'_, PyAny>) -> PyResult<TensorArg> {
    let dtype = obj.getattr(intern!(py, "dtype"))?;
    let dtype = match t.dtypes.iter().find(|(d, _)| d.is(&dtype)) {
        Some((_, s)) => Ok(*s),
        None => Err(dtype.str()?.to_string()),
    };
    let device: i64 = obj.call_method0(intern!(py, "get_device"))?.extract()?;
    Ok(TensorArg {
        ptr: obj.call_method0(intern!(py, "data_ptr"))?.extract()?,
        bytes: obj.getattr(intern!(py, "nbytes"))?.extract()?,
        dtype,
        contiguous: obj.call_method0(intern!(py, "is_contiguous"))?.extract()?,
        location: if device >= 0 {
            Location::Cuda(device as i32)
        } else {
            Location::Cpu
        },
    })
}

/// An `__cuda_array_interface__` object's facts; the device from
/// `__dlpack_device__` when it has one.
fn cuda_array(
    py: Python<'_>,
    cai: &Bound<'_, PyAny>,
    obj: &Bound<'_, PyAny>,
) -> PyResult<TensorArg> {
    let bad =
        |what: &str| PyTypeError::new_err(format!("__cuda_array_interface__ has no valid {what}"));
    let cai = cai.cast::<PyDict>().map_err(|_| bad("dict"))?;
    let get = |k: &str| cai.get_item(k).ok().flatten().ok_or_else(|| bad(k));
    let (ptr, _readonly): (u64, bool) = get("data")?.extract().map_err(|_| bad("data"))?;
    let shape: Vec<u64> = get("shape")?.extract().map_err(|_| bad("shape"))?;
    let typestr: String = get("typestr")?.extract().map_err(|_| bad("typestr"))?;
    let itemsize: u64 = typestr
        .get(2..)
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| bad("typestr"))?;
    let strides: Option<Vec<i64>> = match cai.get_item("strides")? {
        Some(s) if !s.is_none() => Some(s.extract().map_err(|_| bad("strides"))?),
        _ => None,
    };
    // The size in bytes, refused where it overflows (a wrapped size would
    // pass the symmetric-heap check with a fraction of the tensor).
    let bytes = shape
        .iter()
        .try_fold(itemsize, |b, &n| b.checked_mul(n))
        .ok_or_else(|| bad("shape (its size in bytes overflows 64 bits)"))?;
    // Row-major: each stride is the product of the later extents (extents of 1 are free).
    let contiguous = strides.is_none_or(|strides| {
        let mut want = itemsize as i64;
        shape.iter().zip(&strides).rev().all(|(&n, &s)| {
            let ok = n <= 1 || s == want;
            want = want.saturating_mul(n as i64);
            ok
        })
    });
    let location = match obj.call_method0(intern!(py, "__dlpack_device__")) {
        // DLPack's device types: 1 CPU, 2 CUDA, 3 CUDA host, 13 CUDA managed.
        Ok(d) => match d.extract::<(i32, i32)>()? {
            (2 | 13, id) => Location::Cuda(id),
            (1 | 3, _) => Location::Cpu,
            _ => Location::Unknown,
        },
        Err(_) => Location::Unknown,
    };
    Ok(TensorArg {
        ptr,
        bytes,
        dtype: Scalar::from_typestr(&typestr).ok_or(typestr),
        contiguous,
        location,
    })
}

/// One Python argument as the host crate's [`Arg`]. A tensor made from the
/// object (through DLPack) goes into `keep`: its memory is promised only
/// while it lives, so the caller keeps it until the launch is issued.
fn convert<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    keep: &mut Vec<Bound<'py, PyAny>>,
) -> PyResult<Arg> {
    if obj.is_instance_of::<PyBool>() {
        return Ok(Arg::Bool(obj.extract()?));
    }
    if obj.is_instance_of::<PyInt>() {
        return Ok(match obj.extract::<i128>() {
            Ok(v) => Arg::Int(v),
            Err(_) => Arg::Other("int beyond 128 bits".into()),
        });
    }
    if obj.is_instance_of::<PyFloat>() {
        return Ok(Arg::Float(obj.extract()?));
    }
    if let Ok(team) = obj.cast::<Team>() {
        return Ok(Arg::Team(team.get().team()));
    }
    let torch = torch(py);
    if let Some(t) = &torch
        && obj.is_instance(t.tensor.bind(py))?
    {
        return Ok(Arg::Tensor(torch_tensor(py, t, obj)?));
    }
    if let Some(arg) = numpy_scalar(py, obj)? {
        return Ok(arg);
    }
    if let Ok(cai) = obj.getattr(intern!(py, "__cuda_array_interface__")) {
        return Ok(Arg::Tensor(cuda_array(py, &cai, obj)?));
    }
    if obj.hasattr(intern!(py, "__dlpack__"))?
        && let Some(from) = torch.as_ref().and_then(|t| t.from_dlpack.as_ref())
    {
        let t = from.bind(py).call1((obj,))?;
        let arg = torch_tensor(py, torch.as_ref().unwrap(), &t)?;
        keep.push(t);
        return Ok(Arg::Tensor(arg));
    }
    Ok(Arg::Other(obj.get_type().name()?.to_string()))
}

/// A NumPy scalar (`np.int64(16)`, `np.float32(2.0)`, or a 0-d array) as
/// the Python int, float or bool it holds; `None` for anything else.
fn numpy_scalar(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Option<Arg>> {
    let ty = obj.get_type();
    if !ty
        .getattr(intern!(py, "__module__"))
        .is_ok_and(|m| m.extract::<String>().is_ok_and(|m| m == "numpy"))
        || !obj
            .getattr(intern!(py, "shape"))
            .is_ok_and(|s| s.len().is_ok_and(|n| n == 0))
    {
        return Ok(None);
    }
    let kind: String = obj
        .getattr(intern!(py, "dtype"))?
        .getattr(intern!(py, "kind"))?
        .extract()?;
    let value = obj.call_method0(intern!(py, "item"))?;
    Ok(match kind.as_str() {
        "b" => Some(Arg::Bool(value.extract()?)),
        "i" | "u" => Some(Arg::Int(value.extract()?)),
        "f" => Some(Arg::Float(value.extract()?)),
        _ => None,
    })
}

/// Every argument of a call, converted; see [`convert`] for `keep`.
fn convert_all<'py>(
    py: Python<'py>,
    args: &Bound<'py, PyTuple>,
    out: &mut Vec<Arg>,
    keep: &mut Vec<Bound<'py, PyAny>>,
) -> PyResult<()> {
    out.clear();
    for a in args.iter() {
        out.push(convert(py, &a, keep)?);
    }
    Ok(())
}

/// A grid or block: an int, or a tuple of 1 to 3 ints.
fn dim3(what: &str, obj: &Bound<'_, PyAny>) -> PyResult<nvshmem_host::Dim3> {
    if let Ok(x) = obj.extract::<u32>() {
        return Ok(x.into());
    }
    match obj.extract::<Vec<u32>>().as_deref() {
        Ok([x]) => Ok((*x).into()),
        Ok([x, y]) => Ok((*x, *y).into()),
        Ok([x, y, z]) => Ok((*x, *y, *z).into()),
        _ => Err(PyTypeError::new_err(format!(
            "{what} must be an int or a tuple of 1 to 3 non-negative ints, not {}",
            obj.repr()?
        ))),
    }
}

/// A launch's shape from Python's grid, block and shared memory.
fn config(
    grid: &Bound<'_, PyAny>,
    block: &Bound<'_, PyAny>,
    shared_mem: u32,
) -> PyResult<LaunchConfig> {
    Ok(LaunchConfig::new(dim3("grid", grid)?, dim3("block", block)?).shared_mem_bytes(shared_mem))
}

/// The facts of a live runtime, for the checks.
struct Live<'a>(&'a Nvshmem);

impl ArgContext for Live<'_> {
    fn device(&self) -> i32 {
        self.0.gpu() as i32
    }
    fn n_pes(&self) -> Option<u32> {
        Some(self.0.n_pes())
    }
    fn is_symmetric(&self, ptr: u64, bytes: u64) -> bool {
        self.0.is_symmetric(ptr, bytes)
    }
    fn location_of(&self, ptr: u64) -> Option<Location> {
        self.0.memory_location(ptr).ok()
    }
}

/// Given facts, for checks without a GPU.
struct Given {
    device: i32,
    n_pes: Option<u32>,
    symmetric: Vec<(u64, u64)>,
}

impl ArgContext for Given {
    fn device(&self) -> i32 {
        self.device
    }
    fn n_pes(&self) -> Option<u32> {
        self.n_pes
    }
    fn is_symmetric(&self, ptr: u64, bytes: u64) -> bool {
        self.symmetric.iter().any(|&(base, size)| {
            ptr >= base && ptr.saturating_add(bytes) <= base.saturating_add(size)
        })
    }
    fn not_symmetric_fix(&self) -> String {
        // Here the heap is only what `symmetric=` says.
        if self.symmetric.is_empty() {
            "in KernelSignature.check, pass the heap as symmetric=[(base, size)]".into()
        } else {
            nvshmem_host::dynamic::SYMMETRIC_ALLOCATION_FIX.into()
        }
    }
}

/// An NVSHMEM team handle: one of NVSHMEM's predefined teams.
#[pyclass(frozen, eq, hash, skip_from_py_object, module = "nvshmem_rs")]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Team {
    raw: i32,
}

impl Team {
    fn team(&self) -> nvshmem_host::Team {
        nvshmem_host::Team::PREDEFINED
            .into_iter()
            .find(|t| t.raw() == self.raw)
            .unwrap_or(nvshmem_host::Team::WORLD)
    }
}

#[pymethods]
impl Team {
    /// Every PE.
    #[classattr]
    const WORLD: Team = Team { raw: 0 };
    /// The PEs that share memory with this one.
    #[classattr]
    const SHARED: Team = Team { raw: 1 };
    /// The PEs on this node.
    #[classattr]
    const NODE: Team = Team { raw: 2 };
    /// The PEs with this PE's number on every node.
    #[classattr]
    const SAME_MYPE_NODE: Team = Team { raw: 3 };

    fn __repr__(&self) -> &'static str {
        [
            "Team.WORLD",
            "Team.SHARED",
            "Team.NODE",
            "Team.SAME_MYPE_NODE",
        ][self.raw as usize]
    }
}

/// An NVSHMEM PE of this process: initialized here (`init()`) or attached
/// to the NVSHMEM another component (PyTorch) runs (`attach()`).
#[pyclass(unsendable, module = "nvshmem_rs")]
struct Runtime {
    nv: Rc<Nvshmem>,
}

methods! {
    Runtime {
        /// This PE's number.
        get my_pe -> u32 = |s| s.nv.my_pe().index();
        /// The PE count.
        get n_pes -> u32 = |s| s.nv.n_pes();
        /// The CUDA device ordinal.
        get gpu -> usize = |s| s.nv.gpu();
        /// The host library's NVSHMEM version.
        get nvshmem_version -> String = |s| s.nv.version().to_string();
        /// The host library's file.
        get library -> PathBuf = |s| s.nv.library_path().to_path_buf();
        /// Whether NVSHMEM belongs to another component (PyTorch), which finalizes it.
        get attached -> bool = |s| s.nv.is_attached();
        /// Whether PEs share this GPU without CUDA MPS (NVSHMEM then supports only part of its API).
        get limited_mpg -> bool = |s| s.nv.limited_mpg();
    }

    /// Loads and registers the module of kernel crate `crate_name` in folder
    /// `path` (a builder output folder), or the manifest `path` itself.
    #[pyo3(signature = (path, crate_name=None))]
    fn load(&self, path: PathBuf, crate_name: Option<&str>) -> PyResult<Module> {
        let manifest = nvshmem_host::find_manifest(&path, crate_name).map_err(to_py)?;
        let module = self.nv.load_module(&manifest).map_err(to_py)?;
        Ok(Module {
            module,
            nv: self.nv.clone(),
            path: manifest,
        })
    }

    /// Whether `[ptr, ptr + nbytes)` is inside NVSHMEM's symmetric heap.
    fn is_symmetric(&self, ptr: u64, nbytes: u64) -> bool {
        self.nv.is_symmetric(ptr, nbytes)
    }

    fn __repr__(&self) -> String {
        format!(
            "Runtime(pe={}/{}, gpu={}, nvshmem={}, {})",
            self.nv.my_pe().index(),
            self.nv.n_pes(),
            self.nv.gpu(),
            self.nv.version(),
            if self.nv.is_attached() {
                "attached"
            } else {
                "initialized here"
            }
        )
    }
}

fn install(nv: Nvshmem) -> Runtime {
    let nv = Rc::new(nv);
    CURRENT.with(|c| *c.borrow_mut() = Some(nv.clone()));
    Runtime { nv }
}

fn current() -> Option<Runtime> {
    CURRENT
        .with(|c| c.borrow().clone())
        .map(|nv| Runtime { nv })
}

/// Initializes NVSHMEM in this process, for use without a framework that
/// owns it (the launcher's variables choose the bootstrap; `gpu` the device).
#[pyfunction]
#[pyo3(signature = (gpu=None))]
fn init(gpu: Option<i128>) -> PyResult<Runtime> {
    let gpu = gpu.map(|g| device_ordinal("gpu", g)).transpose()?;
    if let Some(rt) = current() {
        return Ok(rt);
    }
    let mut options = Nvshmem::options();
    if let Some(gpu) = gpu {
        options = options.gpu(gpu);
    }
    Ok(install(options.init().map_err(to_py)?))
}

/// Attaches to the NVSHMEM that another component of the process
/// (PyTorch's symmetric memory) loaded and initialized, on CUDA device `gpu`.
#[pyfunction]
fn attach(gpu: i128) -> PyResult<Runtime> {
    let gpu = device_ordinal("gpu", gpu)?;
    if let Some(rt) = current() {
        return Ok(rt);
    }
    Ok(install(Nvshmem::attach(gpu).map_err(to_py)?))
}

/// `gpu` (the argument `name`) as a CUDA device ordinal, or the ValueError
/// that says what one is.
fn device_ordinal(name: &str, gpu: i128) -> PyResult<usize> {
    i32::try_from(gpu)
        .ok()
        .and_then(|g| usize::try_from(g).ok())
        .ok_or_else(|| {
            PyValueError::new_err(format!(
                "{name}={gpu}: a CUDA device ordinal is 0 or more (nvshmem_rs.gpu_count() GPUs: 0..count)"
            ))
        })
}

/// The runtime of this thread, if `init()` or `attach()` made one.
#[pyfunction]
fn runtime() -> Option<Runtime> {
    current()
}

/// How many GPUs the driver sees; an error saying why when there are none.
#[pyfunction]
fn gpu_count() -> PyResult<usize> {
    nvshmem_host::gpu_count().map_err(to_py)
}

/// The NVSHMEM versions kernels can be built against and run with.
#[pyfunction]
fn supported_versions() -> Vec<String> {
    nvshmem_types::SUPPORTED_VERSIONS
        .iter()
        .map(|i| i.version.to_string())
        .collect()
}

/// Builds a kernel crate with nvshmem-builder and returns the output folder
/// (holding `<crate>.json`, `.ptx`, `.cubin`, `.h`): `<out_dir>/nvshmem-<version>/<arch>`,
/// an absolute path. An argument left out takes the builder's environment
/// variable when it is set (`NVSHMEM_RS_NVSHMEM_VERSION` or `NVSHMEM_HOME`,
/// `NVSHMEM_RS_ARCH`); else `nvshmem_version` is the NVSHMEM pip package's on
/// `sys.path` (PyTorch's; `NVSHMEM_RS_CUDA_MAJOR` may choose that release's
/// other CUDA build), else the builder's default; `arch` is GPU 0's, else
/// the builder's default; `target_dir` (cargo's, for the nvptx64 build) is the
/// crate's `target/`. Ctrl-C in a terminal stops the build (it reaches cargo
/// too) and raises `KeyboardInterrupt`; an interrupt sent to Python alone
/// (Jupyter's) is raised when the build ends.
#[pyfunction]
#[pyo3(signature = (kernel_crate_dir, arch=None, nvshmem_version=None, out_dir=None, features=None, target_dir=None))]
fn build(
    py: Python<'_>,
    kernel_crate_dir: PathBuf,
    arch: Option<String>,
    nvshmem_version: Option<String>,
    out_dir: Option<PathBuf>,
    features: Option<Vec<String>>,
    target_dir: Option<PathBuf>,
) -> PyResult<PathBuf> {
    let mut builder = Builder::new(&kernel_crate_dir);
    // The builder reads these itself: a default chosen here would hide them.
    let env_set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    let version_from_env = ["NVSHMEM_RS_NVSHMEM_VERSION", "NVSHMEM_HOME"]
        .into_iter()
        .any(env_set);
    match nvshmem_version {
        Some(v) => {
            let v = v.parse().map_err(|e| {
                PyValueError::new_err(format!(
                    "nvshmem_version={v:?}: {e}. Supported: {}",
                    supported_versions().join(", ")
                ))
            })?;
            builder = builder.nvshmem_version(v);
        }
        None if version_from_env => {}
        None => {
            let sys_path: Vec<PathBuf> = py
                .import("sys")?
                .getattr("path")?
                .try_iter()?
                .filter_map(|p| p.ok()?.extract().ok())
                .collect();
            if let Some(nv) = nvshmem_types::install::in_site_packages(&sys_path) {
                builder = builder.nvshmem_version(nv.version);
                // NVSHMEM_RS_CUDA_MAJOR may ask for the other CUDA's wheel of
                // that release: the builder finds (or downloads) it.
                let asked_cuda = std::env::var("NVSHMEM_RS_CUDA_MAJOR")
                    .ok()
                    .and_then(|c| c.parse::<nvshmem_types::CudaMajor>().ok());
                if asked_cuda.is_none() || asked_cuda == nv.cuda {
                    builder = builder.nvshmem_home(nv.root);
                }
            }
        }
    }
    let arch = match arch {
        Some(a) => Some(
            a.parse::<nvshmem_host::Arch>()
                .map_err(|e| PyValueError::new_err(format!("arch={a:?}: {e}")))?,
        ),
        None if env_set("NVSHMEM_RS_ARCH") => None,
        None => nvshmem_host::gpu_arch(0).ok(),
    };
    if let Some(arch) = arch {
        builder = builder.arch(arch);
    }
    if let Some(out) = out_dir {
        builder = builder.out_dir(out);
    }
    if let Some(target) = target_dir {
        builder = builder.target_dir(target);
    }
    for f in features.unwrap_or_default() {
        builder = builder.feature(f);
    }
    let built = py.detach(|| builder.build());
    // Ctrl-C reached the build's rustc too: raise it, not the build's failure.
    py.check_signals()?;
    let out = built.map_err(|e| {
        // The builder's fixes name Rust's and the environment's knobs.
        let python = match &e {
            nvshmem_builder::Error::UnsupportedVersion { .. } => {
                ". From Python: nvshmem_rs.build(kernel_crate_dir, nvshmem_version=\"...\") \
                         with one of those"
            }
            _ => "",
        };
        NvshmemError::new_err(format!(
            "building {}: {e}{python}",
            kernel_crate_dir.display()
        ))
    })?;
    let dir = out
        .manifest_path
        .parent()
        .map(PathBuf::from)
        .unwrap_or_default();
    Ok(std::path::absolute(&dir).unwrap_or(dir))
}

/// A loaded module: the kernels of one kernel crate, registered with NVSHMEM.
#[pyclass(unsendable, module = "nvshmem_rs")]
struct Module {
    module: nvshmem_host::Module,
    nv: Rc<Nvshmem>,
    path: PathBuf,
}

methods! {
    Module {
        /// The kernels' names.
        get kernels -> Vec<String> = |s| s.module.kernel_names().iter().map(|n| n.to_string()).collect();
        /// The NVSHMEM version its device code was linked against.
        get nvshmem_version -> String = |s| s.module.manifest().nvshmem_version.to_string();
        /// The GPU architecture it was built for.
        get arch -> String = |s| s.module.manifest().arch.to_string();
        /// The manifest file.
        get manifest_path -> PathBuf = |s| s.path.clone();
    }

    /// The kernel `name`.
    fn kernel(&self, name: &str) -> PyResult<Kernel> {
        let kernel = self.module.kernel(name).map_err(|e| match e {
            Error::KernelNotFound { .. } => PyKeyError::new_err(e.to_string()),
            e => to_py(e),
        })?;
        let signature = Signature::new(kernel.info());
        Ok(Kernel {
            kernel,
            signature,
            nv: self.nv.clone(),
            scratch: RefCell::new((Vec::new(), ArgBuffer::default())),
        })
    }

    fn __getitem__(&self, name: &str) -> PyResult<Kernel> {
        self.kernel(name)
    }

    fn __contains__(&self, name: &Bound<'_, PyAny>) -> bool {
        name.extract::<String>()
            .is_ok_and(|n| self.module.kernel_names().contains(&n.as_str()))
    }

    /// The kernels' names, as `kernels`.
    fn __iter__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        names_iter(py, self.module.kernel_names().iter().map(|n| n.to_string()))
    }

    fn __len__(&self) -> usize {
        self.module.kernel_names().len()
    }

    fn __repr__(&self) -> String {
        format!(
            "Module({:?}, nvshmem={}, arch={}, kernels={:?})",
            self.module.manifest().crate_name,
            self.module.manifest().nvshmem_version,
            self.module.manifest().arch,
            self.module.kernel_names()
        )
    }
}

/// A kernel of a loaded module: call it as `k(grid, block, *args,
/// stream=None, shared_mem=0)`.
///
/// The call launches `grid` blocks of `block` threads (an int, or a tuple of
/// 1 to 3 ints) with `args` on `stream` (a `torch.cuda.Stream`, or a raw
/// `CUstream` int, trusted to be a live stream of this GPU; default: torch's
/// current stream), with `shared_mem` bytes of dynamic shared memory. The
/// arguments are checked against the manifest first (TypeError / ValueError
/// naming the parameter and the fix). Kernels that call NVSHMEM barriers or
/// collectives need `launch_collective(...)`, with the same arguments.
#[pyclass(unsendable, module = "nvshmem_rs")]
struct Kernel {
    kernel: nvshmem_host::Kernel,
    signature: Signature,
    nv: Rc<Nvshmem>,
    /// The converted and the encoded arguments, reused between launches.
    scratch: RefCell<(Vec<Arg>, ArgBuffer)>,
}

impl Kernel {
    /// The stream to launch on: `stream` (a handle, or an object with
    /// `cuda_stream`, such as a `torch.cuda.Stream`), else torch's current
    /// stream, else the runtime's own. A handle (int) is trusted, as
    /// `torch.cuda.ExternalStream` trusts one: it must be a live `CUstream`
    /// of this process's GPU (or 0, the legacy stream); the driver cannot
    /// tell a stale or made-up handle and may crash on one.
    fn stream(&self, py: Python<'_>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<sys::CUstream> {
        let handle: u64 = match stream {
            Some(s) if !s.is_none() => {
                if let Ok(h) = s.extract::<u64>() {
                    h
                } else {
                    if let Ok(dev) = s.getattr(intern!(py, "device_index"))
                        && let Ok(dev) = dev.extract::<i64>()
                        && dev != self.nv.gpu() as i64
                    {
                        return Err(PyValueError::new_err(format!(
                            "kernel `{}`: the stream is on cuda:{dev}, but this process's GPU is cuda:{}. \
                             Fix: pass a stream of cuda:{}",
                            self.kernel.name(),
                            self.nv.gpu(),
                            self.nv.gpu()
                        )));
                    }
                    s.getattr(intern!(py, "cuda_stream"))
                        .and_then(|h| h.extract())
                        .map_err(|_| {
                            PyTypeError::new_err(format!(
                                "kernel `{}`: stream must be a torch.cuda.Stream, an object with \
                                 cuda_stream, or a CUstream handle (int), not {}",
                                self.kernel.name(),
                                s.get_type()
                                    .name()
                                    .map(|n| n.to_string())
                                    .unwrap_or_default()
                            ))
                        })?
                }
            }
            _ => match torch(py).and_then(|t| t.raw_stream.as_ref().map(|f| f.clone_ref(py))) {
                Some(f) => f.bind(py).call1((self.nv.gpu(),))?.extract()?,
                None => self.nv.stream().cu_stream() as u64,
            },
        };
        Ok(handle as sys::CUstream)
    }

    /// Converts, checks, encodes and launches.
    fn launch(
        &self,
        py: Python<'_>,
        config: PyResult<LaunchConfig>,
        args: &Bound<'_, PyTuple>,
        stream: Option<&Bound<'_, PyAny>>,
        cooperative: bool,
    ) -> PyResult<()> {
        // The kernel-level refusal first: a collective kernel's arguments
        // may be fine, and an argument error would hide the real fix.
        if self.kernel.is_collective() && !cooperative {
            return Err(to_py(Error::CollectiveLaunchRequired {
                kernel: self.kernel.name().to_string(),
            }));
        }
        let config = config?;
        let stream = self.stream(py, stream)?;
        let mut scratch = self.scratch.borrow_mut();
        let (converted, buf) = &mut *scratch;
        // DLPack temporaries: alive until the launch has been issued.
        let mut temporaries = Vec::new();
        convert_all(py, args, converted, &mut temporaries)?;
        self.signature
            .encode_into(converted, &Live(&self.nv), buf)
            .map_err(to_py)?;
        // SAFETY: `buf` was encoded from this kernel's signature, with
        // tensors checked for dtype, contiguity, device and (for SymPtr)
        // the symmetric heap; the stream is torch's current stream of this
        // GPU or one the caller named. What the kernel does with the memory
        // (how far it reads and writes) is its own contract, as in CUDA.
        let launched = unsafe { self.kernel.launch_encoded(stream, config, buf, cooperative) };
        drop(temporaries);
        launched.map_err(|e| capture_note(e, stream))
    }
}

/// The error, with a note when the stream is being captured into a CUDA graph.
fn capture_note(e: Error, stream: sys::CUstream) -> PyErr {
    let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    // SAFETY: only reads the stream's capture status.
    let capturing = unsafe { sys::cuStreamIsCapturing(stream, &mut status) }
        == sys::CUresult::CUDA_SUCCESS
        && status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    let err = to_py(e);
    if capturing {
        Python::attach(|py| {
            NvshmemError::new_err(format!(
                "{} (the launch was being captured into a CUDA graph: the driver or NVSHMEM \
                 refused it under capture. Fix: launch it outside torch.cuda.graph, or \
                 capture a plain launch instead of a collective one)",
                err.value(py)
            ))
        })
    } else {
        err
    }
}

methods! {
    Kernel {
        /// The kernel's name.
        get name -> String = |s| s.kernel.name().to_string();
        /// Whether it needs `launch_collective`.
        get collective -> bool = |s| s.kernel.is_collective();
        /// `name(param: Type, ...)`.
        get signature -> String = |s| s.signature.describe();
    }

    launchers {
        /// Launches `grid` blocks of `block` threads with `args` on `stream`
        /// (a `torch.cuda.Stream`, or a raw `CUstream` int, trusted to be a
        /// live stream of this GPU; default: torch's current stream), with `shared_mem` bytes of
        /// dynamic shared memory. Arguments are checked against the manifest
        /// first (TypeError / ValueError naming the parameter and the fix).
        __call__ => false;
        /// `k(...)` as a cooperative launch (every block resident at once), as
        /// kernels that call NVSHMEM barriers or collectives need.
        launch_collective => true;
    }

    /// Checks `args` as a launch would, without launching; returns each
    /// argument's encoded value.
    #[pyo3(signature = (*args))]
    fn check(&self, py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<Vec<u64>> {
        let mut converted = Vec::new();
        convert_all(py, args, &mut converted, &mut Vec::new())?;
        let buf = self
            .signature
            .encode(&converted, &Live(&self.nv))
            .map_err(to_py)?;
        Ok(buf.slots().to_vec())
    }

    /// The most blocks of `block` threads that can be resident at once
    /// (the largest grid `launch_collective` accepts).
    #[pyo3(signature = (block, shared_mem=0))]
    fn max_collective_blocks(&self, block: &Bound<'_, PyAny>, shared_mem: u32) -> PyResult<u32> {
        self.kernel
            .max_collective_blocks(dim3("block", block)?, shared_mem)
            .map_err(to_py)
    }

    /// For the launch-overhead benchmark: `iterations` bare `cuLaunchKernel`
    /// calls with these arguments (converted and checked once, with the
    /// launch's own checks), with no per-call work; returns the seconds they
    /// took (queueing, not GPU time).
    #[pyo3(signature = (iterations, grid, block, *args, stream=None))]
    fn raw_launch_loop(
        &self,
        py: Python<'_>,
        iterations: u32,
        grid: &Bound<'_, PyAny>,
        block: &Bound<'_, PyAny>,
        args: &Bound<'_, PyTuple>,
        stream: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<f64> {
        let (grid, block) = (dim3("grid", grid)?, dim3("block", block)?);
        // A launch's checks, once: the kernel not collective, the runtime's
        // context current, the grid and block within the GPU's limits.
        self.kernel
            .check_launch(&LaunchConfig::new(grid, block), false)
            .map_err(to_py)?;
        let stream = self.stream(py, stream)?;
        let mut converted = Vec::new();
        // DLPack temporaries: alive until the last launch has been issued.
        let mut temporaries = Vec::new();
        convert_all(py, args, &mut converted, &mut temporaries)?;
        let mut buf = self
            .signature
            .encode(&converted, &Live(&self.nv))
            .map_err(to_py)?;
        let params = buf.params();
        let start = std::time::Instant::now();
        for _ in 0..iterations {
            // SAFETY: the same checked arguments and stream as a launch.
            unsafe {
                cu::launch_kernel(
                    self.kernel.cu_function(),
                    (grid.x, grid.y, grid.z),
                    (block.x, block.y, block.z),
                    0,
                    stream,
                    params,
                )
            }
            .map_err(|e| NvshmemError::new_err(format!("cuLaunchKernel: {e}")))?;
        }
        let elapsed = start.elapsed().as_secs_f64();
        drop(temporaries);
        Ok(elapsed)
    }

    fn __repr__(&self) -> String {
        format!("Kernel({})", self.signature.describe())
    }
}

/// A builder manifest read without a GPU: what was built, and each kernel's
/// `KernelSignature`.
#[pyclass(frozen, module = "nvshmem_rs")]
struct Manifest {
    manifest: nvshmem_host::Manifest,
    path: PathBuf,
}

methods! {
    Manifest {
        /// The kernel crate's name.
        get crate_name -> String = |s| s.manifest.crate_name.clone();
        /// The NVSHMEM version linked against.
        get nvshmem_version -> String = |s| s.manifest.nvshmem_version.to_string();
        /// The GPU architecture.
        get arch -> String = |s| s.manifest.arch.to_string();
        /// The manifest file.
        get path -> PathBuf = |s| s.path.clone();
        /// The kernels' names.
        get kernels -> Vec<String> = |s| s.manifest.kernels.iter().map(|k| k.name.clone()).collect();
    }

    /// Reads the manifest `path`, or the one of kernel crate `crate_name` in folder `path`.
    #[new]
    #[pyo3(signature = (path, crate_name=None))]
    fn new(path: PathBuf, crate_name: Option<&str>) -> PyResult<Self> {
        let path = nvshmem_host::find_manifest(&path, crate_name).map_err(to_py)?;
        let manifest = nvshmem_host::Manifest::read(&path).map_err(NvshmemError::new_err)?;
        Ok(Manifest { manifest, path })
    }

    /// The kernel `name`'s signature.
    fn kernel(&self, name: &str) -> PyResult<KernelSignature> {
        let info = self
            .manifest
            .kernel(name)
            .map_err(|e| PyKeyError::new_err(format!("{}: {e}", self.path.display())))?;
        Ok(KernelSignature {
            signature: Signature::new(info),
            collective: info.collective,
        })
    }

    fn __getitem__(&self, name: &str) -> PyResult<KernelSignature> {
        self.kernel(name)
    }

    fn __contains__(&self, name: &Bound<'_, PyAny>) -> bool {
        name.extract::<String>()
            .is_ok_and(|n| self.manifest.kernels.iter().any(|k| k.name == n))
    }

    /// The kernels' names, as `kernels`.
    fn __iter__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        names_iter(py, self.manifest.kernels.iter().map(|k| k.name.clone()))
    }

    fn __len__(&self) -> usize {
        self.manifest.kernels.len()
    }

    fn __repr__(&self) -> String {
        format!(
            "Manifest({:?}, nvshmem={}, arch={}, kernels={:?})",
            self.manifest.crate_name,
            self.manifest.nvshmem_version,
            self.manifest.arch,
            self.manifest.kernels.iter().map(|k| k.name.as_str()).collect::<Vec<_>>()
        )
    }
}

/// An iterator over `names` (a Python list's), for `iter(module)`.
fn names_iter(py: Python<'_>, names: impl Iterator<Item = String>) -> PyResult<Py<PyAny>> {
    let list = pyo3::types::PyList::new(py, names.collect::<Vec<_>>())?;
    Ok(list.try_iter()?.into_any().unbind())
}

/// A kernel's parameters, as the launch checks them; usable without a GPU.
#[pyclass(frozen, module = "nvshmem_rs")]
struct KernelSignature {
    signature: Signature,
    collective: bool,
}

methods! {
    KernelSignature {
        /// The kernel's name.
        get name -> String = |s| s.signature.kernel().to_string();
        /// Whether it needs `launch_collective`.
        get collective -> bool = |s| s.collective;
        /// `(name, Rust type, kind)` of each parameter.
        get params -> Vec<(String, String, String)> = |s| s.signature.params().iter()
            .map(|(kind, p)| (p.name.clone(), p.rust_type.clone(), kind_name(*kind)))
            .collect();
    }
    /// Checks `args` as a launch would, with the GPU's facts given: this
    /// process's `device`, the PE count, and the symmetric heap as a list of
    /// `(base, size)` ranges (or one range). Returns each argument's encoded value.
    #[pyo3(
        signature = (*args, device=0, n_pes=None, symmetric=None),
        text_signature = "($self, *args, device=0, n_pes=None, symmetric=())"
    )]
    fn check(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        device: i128,
        n_pes: Option<i128>,
        symmetric: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<u64>> {
        // Below i32::MAX, as device_ordinal checks.
        let device = device_ordinal("device", device)? as i32;
        let n_pes = n_pes
            .map(|n| {
                u32::try_from(n).ok().filter(|&n| n > 0).ok_or_else(|| {
                    PyValueError::new_err(format!(
                        "n_pes={n}: the job's PE count is 1 or more (or None: not checked)"
                    ))
                })
            })
            .transpose()?;
        let mut converted = Vec::new();
        convert_all(py, args, &mut converted, &mut Vec::new())?;
        let symmetric = match symmetric {
            None => Vec::new(),
            Some(given) => match given.extract::<(u64, u64)>() {
                Ok(one) => vec![one],
                Err(_) => given.extract().map_err(|_| {
                    PyTypeError::new_err(format!(
                        "symmetric={}: pass the heap as (base, size) or a list of them, in bytes",
                        given.repr().map_or_else(|_| "?".into(), |r| r.to_string())
                    ))
                })?,
            },
        };
        let ctx = Given {
            device,
            n_pes,
            symmetric,
        };
        let buf = self.signature.encode(&converted, &ctx).map_err(to_py)?;
        Ok(buf.slots().to_vec())
    }

    fn __repr__(&self) -> String {
        format!("KernelSignature({})", self.signature.describe())
    }
}

/// A parameter kind in words.
fn kind_name(kind: ParamKind) -> String {
    match kind {
        ParamKind::Symmetric(e) => format!("symmetric {}", e.map_or("any", Scalar::name)),
        ParamKind::Device(e) => format!("device {}", e.map_or("any", Scalar::name)),
        ParamKind::Scalar(s) => s.name().to_string(),
        ParamKind::Pe => "pe".into(),
        ParamKind::Team => "team".into(),
        ParamKind::Unsupported => "unsupported".into(),
    }
}

/// The module `nvshmem_rs._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("NvshmemError", py.get_type::<NvshmemError>())?;
    m.add(
        "VersionMismatchError",
        py.get_type::<VersionMismatchError>(),
    )?;
    m.add("NotAttachableError", py.get_type::<NotAttachableError>())?;
    m.add_class::<Team>()?;
    m.add_class::<Runtime>()?;
    m.add_class::<Module>()?;
    m.add_class::<Kernel>()?;
    m.add_class::<Manifest>()?;
    m.add_class::<KernelSignature>()?;
    m.add_function(wrap_pyfunction!(init, m)?)?;
    m.add_function(wrap_pyfunction!(attach, m)?)?;
    m.add_function(wrap_pyfunction!(runtime, m)?)?;
    m.add_function(wrap_pyfunction!(gpu_count, m)?)?;
    m.add_function(wrap_pyfunction!(supported_versions, m)?)?;
    m.add_function(wrap_pyfunction!(build, m)?)?;
    Ok(())
}
