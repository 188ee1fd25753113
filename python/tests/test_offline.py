"""nvshmem_rs without a GPU: import, manifests, every argument check and its
message (through a __cuda_array_interface__ object), build(), and the
messages a machine without a GPU or without NVSHMEM gets.

Run: `cargo xtask python-test` (CI), or, from the checkout's root,
`pip install "./python[test]"` then `pytest python/tests`."""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

import nvshmem_rs

REPO = pathlib.Path(__file__).resolve().parents[2]

PARAMS = [
    ("x", "SymPtr<f32>", 8),
    ("y", "*const i32", 8),
    ("n", "u32", 4),
    ("scale", "f32", 4),
    ("pe", "Pe", 4),
    ("team", "Team", 4),
    ("flag", "bool", 1),
]
HEAP = (0x7000_0000, 1 << 20)  # the symmetric heap the checks are told about
DEVICE = 1


class Cai:
    """A device array known only through __cuda_array_interface__ (v3) and
    __dlpack_device__, as CuPy and Numba arrays are."""

    def __init__(self, ptr, shape, typestr="<f4", strides=None, device=(2, DEVICE)):
        self.__cuda_array_interface__ = {
            "data": (ptr, False),
            "shape": shape,
            "typestr": typestr,
            "strides": strides,
            "version": 3,
        }
        self._device = device

    def __dlpack_device__(self):
        return self._device


@pytest.fixture
def manifest(tmp_path):
    def kernel(name, params, collective=False):
        return {
            "name": name,
            "params": [
                {"name": n, "rust_type": t, "c_type": "", "size": s, "align": s}
                for n, t, s in params
            ],
            "collective": collective,
            "registers": None,
            "spill_stores": None,
            "spill_loads": None,
            "stack_frame": None,
        }

    m = {
        "format": 1,
        "crate_name": "my-kernels",
        "nvshmem_version": "3.4.5",
        "arch": "sm_90",
        "ptx_isa": "8.3",
        "ptx": "my-kernels.ptx",
        "cubin": None,
        "kernels": [
            kernel("k", PARAMS),
            kernel("allreduce", [("data", "SymPtr<bf16>", 8)], collective=True),
            kernel("by_value", [("p", "Params", 16)]),
        ],
    }
    (tmp_path / "my-kernels.json").write_text(json.dumps(m))
    return nvshmem_rs.Manifest(str(tmp_path), "my_kernels")


def good_args():
    return [
        Cai(HEAP[0], (64,)),
        Cai(0x1000, (4, 4), "<i4"),
        64,
        0.5,
        1,
        nvshmem_rs.Team.WORLD,
        True,
    ]


def check(sig, args):
    return sig.check(*args, device=DEVICE, n_pes=2, symmetric=[HEAP])


def test_import_and_what_it_supports():
    assert "3.4.5" in nvshmem_rs.supported_versions()
    assert repr(nvshmem_rs.Team.WORLD) == "Team.WORLD"
    # NVLink multicast stays off in every process the package runs in.
    assert os.environ["NVSHMEM_DISABLE_NVLS"] == "1"
    assert os.environ["TORCH_SYMM_MEM_DISABLE_MULTICAST"] == "1"


def test_manifest_is_read_with_its_kernels_and_kinds(manifest):
    assert manifest.crate_name == "my-kernels"
    assert manifest.nvshmem_version == "3.4.5" and manifest.arch == "sm_90"
    assert manifest.kernels == ["k", "allreduce", "by_value"]
    sig = manifest["k"]
    assert sig.name == "k" and not sig.collective
    assert [kind for _, _, kind in sig.params] == [
        "symmetric f32", "device i32", "u32", "f32", "pe", "team", "bool"]
    assert manifest["allreduce"].collective
    with pytest.raises(KeyError, match="no kernel `nope`.*k, allreduce"):
        manifest.kernel("nope")


def test_errors_are_the_packages_and_cross_processes():
    import pickle

    for cls in (nvshmem_rs.NvshmemError, nvshmem_rs.VersionMismatchError, nvshmem_rs.NotAttachableError):
        assert cls.__module__ == "nvshmem_rs", cls
        # Unpickled in a fresh interpreter, as multiprocessing does.
        code = "import pickle, sys; e = pickle.load(sys.stdin.buffer); print(type(e).__module__, type(e).__name__, e)"
        out = subprocess.run([sys.executable, "-c", code], input=pickle.dumps(cls("what to do")),
                             capture_output=True, check=True)
        assert out.stdout.decode().strip() == f"nvshmem_rs {cls.__name__} what to do", out


def test_a_negative_gpu_is_a_value_error(manifest):
    for f in (nvshmem_rs.init, nvshmem_rs.attach):
        for gpu in (-1, 2**64):
            with pytest.raises(ValueError, match=f"gpu={gpu}: a CUDA device ordinal is 0 or more"):
                f(gpu)
    with pytest.raises(ValueError, match="device=-1: a CUDA device ordinal"):
        manifest["k"].check(*good_args(), device=-1, n_pes=2, symmetric=[HEAP])
    for n in (0, -1):
        with pytest.raises(ValueError, match=f"n_pes={n}: the job's PE count is 1 or more"):
            manifest["k"].check(*good_args(), n_pes=n, symmetric=[HEAP])


def test_a_manifest_is_a_collection_of_kernel_names(manifest):
    assert "allreduce" in manifest and "nope" not in manifest and 5 not in manifest
    assert list(manifest) == manifest.kernels and len(manifest) == 3


def test_numpy_scalars_are_the_numbers_they_hold(manifest):
    np = pytest.importorskip("numpy")
    args = good_args()
    args[2], args[3], args[6] = np.uint64(64), np.float32(0.5), np.bool_(True)
    assert check(manifest["k"], args) == check(manifest["k"], good_args())
    args[2] = np.int64(-1)
    with pytest.raises(ValueError, match="-1 does not fit"):
        check(manifest["k"], args)


def test_teams_are_values():
    teams = {nvshmem_rs.Team.WORLD: "world", nvshmem_rs.Team.NODE: "node"}
    assert teams[nvshmem_rs.Team.WORLD] == "world" and nvshmem_rs.Team.WORLD != nvshmem_rs.Team.NODE


def test_a_manifest_shows_what_it_holds(manifest):
    assert repr(manifest) == 'Manifest("my-kernels", nvshmem=3.4.5, arch=sm_90, kernels=["k", "allreduce", "by_value"])', repr(manifest)


def test_a_missing_manifest_says_to_build(tmp_path):
    with pytest.raises(nvshmem_rs.NvshmemError, match=r"no other.json there \(it holds no builder manifest\); build.*nvshmem_rs.build\(\)"):
        nvshmem_rs.Manifest(str(tmp_path), "other")
    # The kernel crate's folder instead of what build() wrote.
    (tmp_path / "Cargo.toml").write_text("[package]\n")
    with pytest.raises(nvshmem_rs.NvshmemError, match="a kernel crate, not what its build wrote"):
        nvshmem_rs.Manifest(str(tmp_path))
    # load() says so before it looks for a GPU or NVSHMEM.
    with pytest.raises(nvshmem_rs.NvshmemError, match="no such file"):
        nvshmem_rs.load(tmp_path / "missing")


def test_offline_check_says_how_to_give_the_heap(manifest):
    # Without symmetric=, no address is in the heap: the message says how to pass it.
    with pytest.raises(ValueError, match=r"symmetric=\[\(base, size\)\]"):
        manifest["k"].check(*good_args(), device=DEVICE, n_pes=2)
    # One range alone, or a list of them; anything else says the shape.
    one = manifest["k"].check(*good_args(), device=DEVICE, n_pes=2, symmetric=HEAP)
    assert one == check(manifest["k"], good_args())
    with pytest.raises(TypeError, match=r"symmetric=5: pass the heap as \(base, size\)"):
        manifest["k"].check(*good_args(), device=DEVICE, n_pes=2, symmetric=5)
    assert "symmetric=()" in manifest["k"].check.__text_signature__


def test_good_arguments_are_encoded(manifest):
    slots = check(manifest["k"], good_args())
    assert slots == [HEAP[0], 0x1000, 64, 0x3F000000, 1, 0, 1]


# (argument index, value, exception, words the message must hold)
REFUSED = [
    (0, Cai(HEAP[0], (64,), "<f8"), TypeError, ["`x: SymPtr<f32>`", "float64", "torch.float32"]),
    (0, Cai(HEAP[0], (8, 8), strides=(4, 32)), ValueError, ["`x: SymPtr<f32>`", "not contiguous", "contiguous()"]),
    (0, Cai(HEAP[0], (64,), device=(2, 0)), ValueError, ["cuda:0", "cuda:1", "tensor.to('cuda:1')"]),
    (0, Cai(HEAP[0], (64,), device=(1, 0)), ValueError, ["host memory"]),
    (0, Cai(0x1000, (64,)), ValueError, ["not inside NVSHMEM's symmetric heap", "_symmetric_memory.empty"]),
    (0, Cai(HEAP[0] + HEAP[1] - 4, (64,)), ValueError, ["symmetric heap"]),  # runs past its end
    (1, 5, TypeError, ["`y: *const i32`", "the int 5", "tensor"]),
    (1, object(), TypeError, ["`y: *const i32`", "an object"]),
    (2, -1, ValueError, ["`n: u32`", "-1 does not fit", "0..=4294967295"]),
    (2, 1 << 32, ValueError, ["`n: u32`", "4294967296 does not fit"]),
    (2, 2.5, TypeError, ["`n: u32`", "the float 2.5", "an int"]),
    (3, 1e300, ValueError, ["`scale: f32`", "overflows an f32", "within ±3.4028235e38"]),
    (6, 1, TypeError, ["`flag: bool`", "the int 1"]),
    (3, "0.5", TypeError, ["`scale: f32`", "a str", "a float"]),
    (4, 2, ValueError, ["`pe: Pe`", "PE 2 does not exist", "0..2"]),
    (4, -1, ValueError, ["`pe: Pe`", "PE -1"]),
    (5, 0, TypeError, ["`team: Team`", "Team.WORLD"]),
    (6, 1, TypeError, ["`flag: bool`", "a bool"]),
]


@pytest.mark.parametrize("index,value,exc,words", REFUSED)
def test_every_refused_argument_names_kernel_parameter_and_fix(manifest, index, value, exc, words):
    args = good_args()
    args[index] = value
    with pytest.raises(exc) as e:
        check(manifest["k"], args)
    msg = str(e.value)
    assert "kernel `k`" in msg and f"argument {index}" in msg and "Fix:" in msg, msg
    for w in words:
        assert w in msg, (w, msg)


def test_a_size_that_overflows_is_refused_not_wrapped(manifest):
    # 2**62 x 4 elements of 4 bytes wraps to 0 bytes in 64 bits.
    args = good_args()
    args[0] = Cai(HEAP[0], (1 << 62, 4))
    with pytest.raises(TypeError, match="overflows 64 bits"):
        check(manifest["k"], args)


def test_a_wrong_count_shows_the_signature(manifest):
    with pytest.raises(TypeError) as e:
        check(manifest["k"], good_args()[:3])
    msg = str(e.value)
    assert "7 argument(s)" in msg and "3 were given" in msg and "k(x: SymPtr<f32>, y: *const i32" in msg, msg


def test_ints_are_accepted_for_floats_and_bf16_is_typed(manifest):
    args = good_args()
    args[3] = 2  # an int for an f32
    assert check(manifest["k"], args)[3] == 0x40000000
    # bf16 has no __cuda_array_interface__ type string: the dtype is named.
    with pytest.raises(TypeError, match="elements are bf16.*<V2.*torch.bfloat16"):
        manifest["allreduce"].check(Cai(HEAP[0], (8,), "<V2"), symmetric=[HEAP])


def test_a_struct_by_value_is_refused(manifest):
    with pytest.raises(TypeError, match="`Params` cannot be passed"):
        manifest["by_value"].check({"a": 1})


def test_without_a_gpu_init_and_gpu_count_say_why():
    try:
        n = nvshmem_rs.gpu_count()
    except nvshmem_rs.NvshmemError as e:
        msg = str(e)
        assert "GPU" in msg and ("libcuda" in msg or "nvidia-smi" in msg), msg
    else:
        pytest.skip(f"SKIPPED: this machine has {n} GPU(s); the no-GPU message needs none")
    with pytest.raises(nvshmem_rs.NvshmemError, match="GPU"):
        nvshmem_rs.init()


def test_attach_without_torch_says_what_to_set_up(tmp_path):
    # A fresh interpreter: nothing has loaded NVSHMEM there. Without a GPU,
    # attach (and load) say that first; with one, what to set up.
    (tmp_path / "my_kernels.json").write_text(json.dumps({
        "format": 1, "crate_name": "my_kernels", "nvshmem_version": "3.4.5", "arch": "sm_90",
        "ptx_isa": "8.3", "ptx": "my_kernels.ptx", "cubin": None, "kernels": [],
    }))
    code = (
        "import nvshmem_rs\n"
        f"try:\n    nvshmem_rs.load({str(tmp_path)!r}, 'my_kernels')\n"
        "except nvshmem_rs.NotAttachableError as e:\n    print('NotAttachable', e)\n"
        "except nvshmem_rs.NvshmemError as e:\n    print('NvshmemError', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    try:
        nvshmem_rs.gpu_count()
    except nvshmem_rs.NvshmemError as e:
        assert out.stdout.startswith("NvshmemError"), out
        assert str(e) in out.stdout, out
        return
    assert out.stdout.startswith("NotAttachable"), out
    assert "no libnvshmem_host.so.3 is loaded" in out.stdout, out
    assert "symm_mem.set_backend" in out.stdout and "nvshmem_rs.init()" in out.stdout, out


needs_rust = pytest.mark.skipif(
    shutil.which("cargo") is None or not (REPO / "python/tests/kernels/Cargo.toml").exists(),
    reason="SKIPPED: build() needs Rust (cargo) and this checkout's kernel crates",
)


@needs_rust
def test_build_refuses_an_unknown_version_with_the_supported_ones():
    with pytest.raises(ValueError, match="nvshmem_version=\"three\".*3.4.5"):
        nvshmem_rs.build(str(REPO / "python/tests/kernels"), nvshmem_version="three")
    with pytest.raises(nvshmem_rs.NvshmemError, match="9.9.9"):
        nvshmem_rs.build(str(REPO / "python/tests/kernels"), nvshmem_version="9.9.9")


@needs_rust
def test_build_leaves_the_version_to_the_environment_when_it_is_set(tmp_path, monkeypatch):
    # An NVSHMEM wheel on sys.path is build()'s default only while the
    # builder's own variables are unset: NVSHMEM_RS_NVSHMEM_VERSION wins.
    cache = pathlib.Path(os.environ.get("NVSHMEM_RS_CACHE") or pathlib.Path.home() / ".cache/nvshmem-rs")
    installs = sorted(cache.glob("nvidia-nvshmem-cu*-*/nvidia/nvshmem"))
    if not installs:
        pytest.skip(f"SKIPPED: no NVSHMEM in the per-user cache {cache} (./x setup)")
    (tmp_path / "site/nvidia").mkdir(parents=True)
    (tmp_path / "site/nvidia/nvshmem").symlink_to(installs[0])
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("NVSHMEM_RS_NVSHMEM_VERSION", "9.9.9")
    with pytest.raises(nvshmem_rs.NvshmemError, match="9.9.9"):
        nvshmem_rs.build(str(REPO / "python/tests/kernels"), out_dir=str(tmp_path / "out"))


@needs_rust
def test_build_makes_a_loadable_output_folder(tmp_path):
    # The workspace's kernel target folder: its nvptx64 `core` is built once.
    out = nvshmem_rs.build(str(REPO / "python/tests/kernels"), out_dir=str(tmp_path),
                           target_dir=str(REPO / "target/nvshmem-kernels"))
    out = pathlib.Path(out)
    assert out.parent.parent == tmp_path and out.name.startswith("sm_"), out
    m = nvshmem_rs.Manifest(str(out), "pytest-kernels")
    assert set(m.kernels) == {"scale", "read_peer", "barrier_read_next"}
    assert m["barrier_read_next"].collective and not m["scale"].collective
    assert [k for _, _, k in m["read_peer"].params] == ["symmetric f32", "device f32", "u32", "pe"]
    assert (out / "pytest_kernels.cubin").exists() or (out / "pytest-kernels.cubin").exists()


def test_type_stubs_name_exactly_the_native_api():
    import ast

    stubs = pathlib.Path(nvshmem_rs.__file__).with_name("_native.pyi")
    assert stubs.with_name("py.typed").exists(), "py.typed is missing from the package"
    tree = ast.parse(stubs.read_text())
    native = nvshmem_rs._native
    public = lambda names: {n for n in names if not n.startswith("_")}  # noqa: E731
    top = {
        node.name
        for node in tree.body
        if isinstance(node, (ast.ClassDef, ast.FunctionDef))
    }
    assert top == public(dir(native)), top ^ public(dir(native))
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        cls = getattr(native, node.name)
        stubbed = {
            n.name if isinstance(n, ast.FunctionDef) else n.target.id
            for n in node.body
            if isinstance(n, ast.FunctionDef) or isinstance(n, ast.AnnAssign)
        }
        base = Exception if issubclass(cls, Exception) else object
        real = public(dir(cls)) - public(dir(base))
        assert public(stubbed) == real, (node.name, public(stubbed) ^ real)
        for dunder in stubbed - public(stubbed):
            assert dunder in vars(cls), (node.name, dunder)


# The Python types of the Rust getters' return types (python/src/lib.rs).
STUB_TYPE_OF_RUST = {
    "String": "str",
    "PathBuf": "pathlib.Path",
    "bool": "bool",
    "u32": "int",
    "i32": "int",
    "usize": "int",
    "Vec<String>": "list[str]",
    "Vec<(String, String, String)>": "list[Tuple[str, str, str]]",
}


def test_type_stubs_give_each_property_its_getters_type():
    import ast
    import re

    source = REPO / "python" / "src" / "lib.rs"
    if not source.exists():
        pytest.skip(f"SKIPPED: {source} is not here (an installed package without its source)")
    getters = {}
    for block in re.finditer(r"methods! \{\s*(\w+) \{(.*?)\n\}", source.read_text(), re.S):
        for name, rust in re.findall(r"get (\w+) -> (.+?) = ", block.group(2)):
            getters[(block.group(1), name)] = STUB_TYPE_OF_RUST[rust]
    stubs = pathlib.Path(nvshmem_rs.__file__).with_name("_native.pyi")
    stubbed = {}
    for cls in ast.parse(stubs.read_text()).body:
        for f in getattr(cls, "body", []):
            if isinstance(f, ast.FunctionDef) and any(
                isinstance(d, ast.Name) and d.id == "property" for d in f.decorator_list
            ):
                stubbed[(cls.name, f.name)] = ast.unparse(f.returns)
    assert getters, "no getters found in lib.rs: the pattern above is out of date"
    assert stubbed == getters, {k: (stubbed.get(k), getters.get(k)) for k in stubbed.keys() | getters.keys() if stubbed.get(k) != getters.get(k)}
