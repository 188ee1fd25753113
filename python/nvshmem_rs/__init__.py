"""NVSHMEM kernels written in Rust, from Python and PyTorch.

    import torch, torch.distributed as dist
    import torch.distributed._symmetric_memory as symm_mem
    import nvshmem_rs

    # A copy of template/kernels: scale_to_next(dest, staging, src, n, factor, signal)
    out = nvshmem_rs.build("my_kernels")          # for this GPU and torch's NVSHMEM
    dist.init_process_group("nccl")                # under torchrun
    torch.cuda.set_device(dist.get_rank() % torch.cuda.device_count())
    symm_mem.set_backend("NVSHMEM")
    n, group = 1024, dist.group.WORLD.group_name
    dest = symm_mem.empty(n, dtype=torch.float32, device="cuda")
    staging = symm_mem.empty(n, dtype=torch.float32, device="cuda")
    signal = symm_mem.empty(1, dtype=torch.uint64, device="cuda")
    for t in (dest, staging, signal):
        symm_mem.rendezvous(t, group)
    signal.view(torch.int64).zero_()               # torch has no CUDA fill for uint64
    dist.barrier()
    src = torch.randn(n, device="cuda")
    k = nvshmem_rs.load(out, "my_kernels")["scale_to_next"]  # attached to torch's NVSHMEM
    k(1, 256, dest, staging, src, n, 2.0, signal)  # grid, block, then the kernel's arguments

Everything is checked by the Rust host crate: the kernels' NVSHMEM version
against the host library's, and each argument against the kernel's manifest
(TypeError / ValueError naming the kernel, the parameter and the fix).
"""

import os as _os
import sys as _sys

# NVLink multicast stays off in every process this package runs in.
for _name, _value in (
    ("NVSHMEM_DISABLE_NVLS", "1"),
    ("NCCL_NVLS_ENABLE", "0"),
    ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
):
    _os.environ.setdefault(_name, _value)

from ._native import (  # noqa: E402
    Kernel,
    KernelSignature,
    Manifest,
    Module,
    NotAttachableError,
    NvshmemError,
    Runtime,
    Team,
    VersionMismatchError,
    gpu_count,
    runtime,
    supported_versions,
)
from . import _native  # noqa: E402

__all__ = [
    "Kernel",
    "KernelSignature",
    "Manifest",
    "Module",
    "NotAttachableError",
    "NvshmemError",
    "Runtime",
    "Team",
    "VersionMismatchError",
    "attach",
    "build",
    "gpu_count",
    "init",
    "load",
    "runtime",
    "supported_versions",
]


def _torch_device():
    """torch's current CUDA device, when torch is imported and has one."""
    torch = _sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return None
    return torch.cuda.current_device()


def init(gpu=None):
    """Initializes NVSHMEM in this process, for use without a framework that
    owns it (the launcher's variables choose the bootstrap: torchrun, mpirun,
    srun, nvshmem-run, or one PE). Returns the `Runtime`."""
    return _native.init(gpu)


def attach(gpu=None):
    """Attaches to the NVSHMEM that PyTorch (or another component) loaded and
    initialized, on `gpu` (default: torch's current device). Raises
    `NotAttachableError` saying what to set up when there is none, and
    `NvshmemError` when the machine has no GPU or driver."""
    if gpu is None:
        gpu = _torch_device()
    return _native.attach(0 if gpu is None else gpu)


def load(path, crate_name=None):
    """Loads and registers a built kernel crate: `path` is `build()`'s output
    folder (with `crate_name`, the crate's name, `-` or `_` alike) or a
    manifest file. Uses the runtime of `init()`, else attaches to the NVSHMEM
    the process runs."""
    path = _os.fspath(path)
    # A wrong path is the first thing to say, before any GPU or NVSHMEM.
    Manifest(path, crate_name)
    rt = runtime()
    if rt is None:
        rt = attach()
    return rt.load(path, crate_name)


def build(kernel_crate_dir, arch=None, nvshmem_version=None, out_dir=None, features=None,
          target_dir=None):
    """Builds a kernel crate (its folder, or its Cargo.toml) with
    nvshmem-builder and returns its output folder.

    Defaults: the builder's environment variables where set
    (`NVSHMEM_RS_ARCH`, `NVSHMEM_RS_NVSHMEM_VERSION` or `NVSHMEM_HOME`); else
    `arch` of torch's current GPU (else GPU 0, else the builder's default,
    sm_90) and `nvshmem_version` of the NVSHMEM pip package PyTorch installed
    (`nvidia-nvshmem-cu1x` on `sys.path`), so the kernels match the host
    library in this process. Returns the absolute path of
    `<out_dir>/nvshmem-<version>/<arch>`. Needs Rust (rustup); the builder
    installs its pinned nightly and downloads NVSHMEM and ptxas when missing.
    Ctrl-C in a terminal stops the build (the signal reaches cargo too) and
    raises `KeyboardInterrupt`; an interrupt sent to Python alone (Jupyter's)
    is raised when the build ends.

    `arch`: "sm_80", "sm_90a", ...; `nvshmem_version`: "3.4.5" (one of
    `supported_versions()`); `out_dir`: where the outputs go (default: under
    the crate's `target/`); `features`: cargo features of the kernel crate, a
    list of str (or one str), e.g. ["nvshmem-device/nvshmem-path"];
    `target_dir`: cargo's target folder for the GPU build (kernel crates
    sharing one share its build of `core`)."""
    if arch is None and not _os.environ.get("NVSHMEM_RS_ARCH"):
        device = _torch_device()
        if device is not None:
            major, minor = _sys.modules["torch"].cuda.get_device_capability(device)
            arch = f"sm_{major}{minor}"
    if isinstance(features, str):
        features = [features]
    return _native.build(
        _os.fspath(kernel_crate_dir),
        arch,
        nvshmem_version,
        None if out_dir is None else _os.fspath(out_dir),
        None if features is None else list(features),
        None if target_dir is None else _os.fspath(target_dir),
    )
