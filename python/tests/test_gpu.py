"""nvshmem_rs on a GPU, with PyTorch.

- One process (`pytest python/tests/test_gpu.py`): NVSHMEM initialized by
  nvshmem_rs.init(); kernels on torch tensors, on torch's current stream and
  captured in a CUDA graph.
- Two ranks on one GPU under CUDA MPS (`torchrun --nproc-per-node 2 -m pytest
  ...`): attached to the NVSHMEM that torch's symmetric memory initialized;
  kernels on torch's symmetric tensors, plain, collective, and in a CUDA graph;
  a module built for another NVSHMEM version is refused.

NVSHMEM_RS_TEST_KERNELS names the folder with the test kernels built for
every version (`nvshmem-<version>/<arch>/pytest-kernels.json`), as
`cargo xtask gpu-pack torch` makes it."""

import os
import pathlib

import pytest

torch = pytest.importorskip("torch", reason="SKIPPED: torch is not installed")
import torch.distributed as dist  # noqa: E402

import nvshmem_rs  # noqa: E402

WORLD = int(os.environ.get("WORLD_SIZE", "1"))
KERNELS = os.environ.get("NVSHMEM_RS_TEST_KERNELS")
CRATE = "pytest-kernels"


def kernel_dir(version):
    """The test kernels' folder for `version` (any arch folder of it)."""
    base = pathlib.Path(KERNELS) / f"nvshmem-{version}"
    for arch in sorted(base.glob("sm_*")):
        if (arch / f"{CRATE}.json").exists():
            return arch
    pytest.fail(f"no {CRATE}.json under {base}: make the pack with `cargo xtask gpu-pack torch`")


@pytest.fixture(scope="session")
def env():
    """(runtime, symmetric tensor or None, group name or None)."""
    if not torch.cuda.is_available():
        pytest.skip("SKIPPED: no CUDA GPU")
    if KERNELS is None:
        pytest.skip("SKIPPED: NVSHMEM_RS_TEST_KERNELS is not set (see the module's docs)")
    if WORLD == 1:
        torch.cuda.set_device(0)
        return nvshmem_rs.init(0), None, None
    import torch.distributed._symmetric_memory as symm_mem

    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local % torch.cuda.device_count())
    # NCCL refuses two ranks on one GPU; the symmetric memory needs only a group.
    dist.init_process_group("gloo")
    symm_mem.set_backend("NVSHMEM")
    x = symm_mem.empty(4096, dtype=torch.float32, device="cuda")
    symm_mem.rendezvous(x, dist.group.WORLD.group_name)
    rt = nvshmem_rs.attach()
    return rt, x, dist.group.WORLD.group_name


@pytest.fixture(scope="session")
def module(env):
    rt = env[0]
    return rt.load(str(kernel_dir(rt.nvshmem_version)), CRATE)


def two_ranks():
    if WORLD < 2:
        pytest.skip("SKIPPED: needs torchrun --nproc-per-node 2 (under CUDA MPS on one GPU)")


def test_scale_runs_on_torchs_current_stream(env, module):
    k = module["scale"]
    x = torch.arange(10_000, dtype=torch.float32, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        k(40, 256, x, x.numel(), 2.0)
    s.synchronize()
    assert torch.equal(x, torch.arange(10_000, dtype=torch.float32, device="cuda") * 2)


def test_a_plain_launch_is_captured_in_a_cuda_graph_and_replayed(env, module):
    k = module["scale"]
    x = torch.ones(4096, device="cuda")
    k(16, 256, x, x.numel(), 1.0)  # warm up outside the capture
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        k(16, 256, x, x.numel(), 3.0)
    torch.cuda.synchronize()
    assert torch.equal(x, torch.ones_like(x)), "capture must not run the kernel"
    for _ in range(2):
        g.replay()
    torch.cuda.synchronize()
    assert torch.equal(x, torch.full_like(x, 9.0))


def test_wrong_arguments_raise_before_any_launch(env, module):
    k = module["scale"]
    x = torch.ones(64, device="cuda")
    with pytest.raises(TypeError, match="elements are f32.*bfloat16"):
        k(1, 64, x.to(torch.bfloat16), 64, 1.0)
    with pytest.raises(ValueError, match="not contiguous"):
        k(1, 64, x.view(8, 8).t(), 64, 1.0)
    with pytest.raises(ValueError, match="host memory"):
        k(1, 64, x.cpu(), 64, 1.0)
    with pytest.raises(ValueError, match="-1 does not fit in a u32"):
        k(1, 64, x, -1, 1.0)
    with pytest.raises(TypeError, match="3 argument"):
        k(1, 64, x, 64)
    # A tensor outside the symmetric heap for a SymPtr parameter.
    with pytest.raises(ValueError, match="not inside NVSHMEM's symmetric heap"):
        module["read_peer"](1, 64, x, x, 64, 0)
    torch.cuda.synchronize()
    assert torch.equal(x, torch.ones_like(x)), "nothing may have run"


def test_a_collective_kernel_needs_launch_collective(env, module):
    x = torch.ones(1, device="cuda")
    with pytest.raises(nvshmem_rs.NvshmemError, match="launch_collective"):
        module["barrier_read_next"](1, 32, x, x)


def test_attached_to_torchs_nvshmem(env):
    two_ranks()
    rt = env[0]
    assert rt.attached and rt.n_pes == WORLD and rt.my_pe == dist.get_rank()
    import importlib.metadata as md

    wheels = [d.metadata["Name"] for d in md.distributions()]
    print("NVSHMEM", rt.nvshmem_version, "from", rt.library, "; wheels:",
          [w for w in wheels if w and "nvshmem" in w])
    assert rt.is_symmetric(env[1].data_ptr(), env[1].nbytes)


def fill_and_sync(x, value):
    x.fill_(value)
    torch.cuda.synchronize()
    dist.barrier()


def test_read_a_peers_symmetric_tensor(env, module):
    two_ranks()
    rt, x, _ = env
    me, n = rt.my_pe, rt.n_pes
    fill_and_sync(x, me + 1.0)
    out = torch.zeros_like(x)
    module["read_peer"](8, 256, x, out, x.numel(), (me + 1) % n)
    torch.cuda.synchronize()
    dist.barrier()
    assert torch.equal(out, torch.full_like(x, (me + 1) % n + 1.0))


def test_a_collective_launch_reads_the_next_pe_after_a_barrier(env, module):
    two_ranks()
    rt, x, _ = env
    me, n = rt.my_pe, rt.n_pes
    fill_and_sync(x, 10.0 * (me + 1))
    out = torch.zeros(1, device="cuda")
    module["barrier_read_next"].launch_collective(1, 32, x, out)
    torch.cuda.synchronize()
    dist.barrier()
    assert out.item() == 10.0 * ((me + 1) % n + 1)


def test_symmetric_kernels_in_a_cuda_graph(env, module):
    two_ranks()
    rt, x, _ = env
    me, n = rt.my_pe, rt.n_pes
    out = torch.zeros_like(x)
    fill_and_sync(x, 0.0)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        module["read_peer"](8, 256, x, out, x.numel(), (me + 1) % n)
    fill_and_sync(x, 5.0 + me)
    g.replay()
    torch.cuda.synchronize()
    dist.barrier()
    assert torch.equal(out, torch.full_like(x, 5.0 + (me + 1) % n))
    # A collective launch under capture: replayed correctly, or refused
    # with an error that says the capture is why.
    one = torch.zeros(1, device="cuda")
    fill_and_sync(x, 7.0 + me)
    try:
        g2 = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g2):
            module["barrier_read_next"].launch_collective(1, 32, x, one)
    except nvshmem_rs.NvshmemError as e:
        assert "captured into a CUDA graph" in str(e), e
        print("collective launch under capture refused:", e)
    else:
        g2.replay()
        torch.cuda.synchronize()
        assert one.item() == 7.0 + (me + 1) % n
    dist.barrier()


def test_a_module_of_another_nvshmem_version_is_refused(env):
    rt = env[0]
    # Another version the test kernels were built for (the pack has two).
    built = [v for v in nvshmem_rs.supported_versions() if (pathlib.Path(KERNELS) / f"nvshmem-{v}").is_dir()]
    other = next((v for v in built if v != rt.nvshmem_version), None)
    if other is None:
        pytest.fail(f"the test kernels were built only for {built}: make the pack with `cargo xtask gpu-pack torch`")
    with pytest.raises(nvshmem_rs.VersionMismatchError) as e:
        rt.load(str(kernel_dir(other)), CRATE)
    msg = str(e.value)
    assert other in msg and rt.nvshmem_version in msg, msg
    assert f'nvshmem_version="{rt.nvshmem_version}"' in msg, msg
