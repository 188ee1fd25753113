"""Rust NVSHMEM kernels inside PyTorch, on torch's symmetric tensors.

    torchrun --nproc-per-node N examples/torch/torch_example.py --kernels DIR

(N ranks on one GPU need CUDA MPS.) DIR holds the built kernel crates:
`nvshmem-<version>/<arch>/{ag-gemm-tc-kernels,allreduce-kernels}.json`, as
`cargo xtask gpu-pack torch` packs them (or `nvshmem_rs.build(...)` makes
them). Every comparison runs in one go and prints as a ratio (torch's time /
ours; above 1 means ours is faster):

1. bf16 all-gather + GEMM: our fused kernel (examples/ag_gemm/kernel_tc,
   `ag_gemm_mma_fused`) against `all_gather_into_tensor` + `torch.matmul`,
   and against `torch.ops.symm_mem.fused_all_gather_matmul` where the
   installed torch has it; checked against torch's result;
2. f32 all-reduce: our one-shot kernel (examples/allreduce) against
   `dist.all_reduce` and symm_mem's `one_shot_all_reduce` where present.

NCCL refuses two ranks on one GPU: then the process group is gloo, and the
torch baselines that go through it (all_gather, all_reduce) stage through the
host; the output says so. The symmetric-memory baselines do not use it.
"""

import argparse
import os
import pathlib
import statistics

import torch
import torch.distributed as dist
import torch.distributed._symmetric_memory as symm_mem

import nvshmem_rs

PANEL = 128  # rows per all-gather panel (examples/ag_gemm/kernel_tc)
SM80_SMEM = 4 * (128 + 128) * 32 * 2  # tc_gemm_tiles::sm80::SMEM_BYTES
UNROLL = 4  # examples/allreduce/kernel: UNROLL


def log(*a):
    if dist.get_rank() == 0:
        print(*a, flush=True)


def find(kernels, crate, version):
    """The folder of `crate` built for `version` (the arch folders in order)."""
    base = pathlib.Path(kernels) / f"nvshmem-{version}"
    for arch in sorted(base.glob("sm_*")):
        if (arch / f"{crate}.json").exists():
            return arch
    raise SystemExit(f"no {crate}.json under {base}: build it (cargo xtask gpu-pack torch)")


def time_ms(fn, iters, warmup=3):
    """Median ms per call, CUDA events around each call, ranks in step."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    dist.barrier()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    dist.barrier()
    return statistics.median(times)


def torch_all_gather(shard, world):
    """torch's all-gather of `shard` through the process group, the first way
    the backend supports: (a function returning the gathered tensor, its name)."""
    out = shard.new_empty(world * shard.shape[0], *shard.shape[1:])

    def into_tensor():
        dist.all_gather_into_tensor(out, shard)
        return out

    def as_list():
        parts = [torch.empty_like(shard) for _ in range(world)]
        dist.all_gather(parts, shard)
        return torch.cat(parts)

    def through_f32():  # a backend without bf16 collectives (gloo, some builds)
        parts = [torch.empty_like(shard, dtype=torch.float32) for _ in range(world)]
        dist.all_gather(parts, shard.float())
        return torch.cat(parts).to(shard.dtype)

    for fn, name in ((into_tensor, "all_gather_into_tensor"), (as_list, "all_gather (list)"),
                     (through_f32, "all_gather (list, through f32)")):
        try:
            fn()
            return fn, name
        except Exception:
            continue
    raise SystemExit("the process group supports no all-gather of these tensors")


def as_torch_op(fused, grid, pushers, a_full, sig, m_loc, n, k, epoch):
    """Our fused AG+GEMM as a torch op (torch.library.custom_op): torch.compile
    then sees one opaque node instead of tracing into the launch."""

    @torch.library.custom_op("nvshmem_rs_example::ag_gemm", mutates_args=())
    def ag_gemm(a_shard: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        c = torch.empty(a_full.shape[0], b.shape[0], dtype=torch.bfloat16, device=b.device)
        epoch[0] += 1
        fused(grid, 128, a_shard, a_full, sig, b, c, m_loc, n, k, epoch[0], pushers,
              shared_mem=SM80_SMEM)
        return c

    @ag_gemm.register_fake
    def _(a_shard, b):
        return a_shard.new_empty(a_full.shape[0], b.shape[0])

    return ag_gemm


def compiled_check(op, a_shard, b, ref):
    """torch.compile of a function around the op: inductor, else aot_eager
    (which needs no compiler toolchain); the result checked against `ref`."""
    def f(a, w):
        return op(a, w).float() * 2.0

    notes = []
    for backend in ("inductor", "aot_eager"):
        try:
            y = torch.compile(f, backend=backend, fullgraph=True)(a_shard, b)
            torch.cuda.synchronize()
            err = ((y / 2.0 - ref.float()).abs().max() / ref.float().abs().max()).item()
            verdict = "PASS" if err < 2e-2 else f"FAIL (error {err:.2e})"
            return f"{verdict} (torch.compile, backend {backend}" + (
                f"; {notes[0]}" if notes else "") + ")"
        except Exception as e:
            notes.append(f"{backend} n/a: {type(e).__name__}: {str(e).splitlines()[0][:100]}")
    return "FAIL (" + "; ".join(notes) + ")"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--kernels", default=os.environ.get("NVSHMEM_RS_EXAMPLE_KERNELS"), required=False)
    p.add_argument("--m-loc", type=int, default=2048, help="rows of A per rank (multiple of 128)")
    # Not `--n`: torchrun's parser takes any prefix of its own options
    # (`--nnodes`, `--nproc-per-node`, ...) as ambiguous, even after the script.
    p.add_argument("--n-cols", type=int, default=4096, help="columns of C (multiple of 128)")
    p.add_argument("--k", type=int, default=4096, help="inner dimension (multiple of 32)")
    p.add_argument("--ar-elems", type=int, default=1 << 18, help="all-reduce floats")
    p.add_argument("--iters", type=int, default=20)
    args = p.parse_args()
    if not args.kernels:
        raise SystemExit("--kernels DIR (or NVSHMEM_RS_EXAMPLE_KERNELS) is required")
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world < 2:
        # torch's symm_mem.rendezvous (NVSHMEM backend, torch 2.11) refuses a
        # group of one with "Expected global_ranks.size() > 1".
        raise SystemExit(
            "torch_example.py needs at least 2 ranks: torch's symmetric memory refuses a group of one. "
            "Run `torchrun --nproc-per-node 2 examples/torch/torch_example.py` "
            "(two ranks on one GPU need CUDA MPS: docs/guide.md)")

    local = int(os.environ.get("LOCAL_RANK", "0"))
    gpus = torch.cuda.device_count()
    torch.cuda.set_device(local % gpus)
    backend = "nccl" if world <= gpus else "gloo"
    dist.init_process_group(backend)
    rank, group = dist.get_rank(), dist.group.WORLD.group_name
    log(f"{world} ranks on {gpus} GPU(s), {torch.cuda.get_device_name()}, torch {torch.__version__}, "
        f"process group {backend}"
        + ("" if backend == "nccl" else " (NCCL refuses several ranks on one GPU: the "
           "all_gather/all_reduce baselines stage through the host)"))

    symm_mem.set_backend("NVSHMEM")
    m_loc, n, k = args.m_loc, args.n_cols, args.k
    M = world * m_loc
    a_shard = symm_mem.empty(m_loc, k, dtype=torch.bfloat16, device="cuda")
    a_full = symm_mem.empty(M, k, dtype=torch.bfloat16, device="cuda")
    sig = symm_mem.empty(world * (m_loc // PANEL), dtype=torch.uint64, device="cuda")
    for t in (a_shard, a_full, sig):
        symm_mem.rendezvous(t, group)
    rt = nvshmem_rs.attach()
    log(f"attached: {rt}")

    gen = torch.Generator(device="cuda").manual_seed(1234 + rank)
    a_shard.copy_(torch.randn(m_loc, k, device="cuda", generator=gen).to(torch.bfloat16))
    b = torch.randn(n, k, device="cuda", generator=torch.Generator(device="cuda").manual_seed(7)).to(torch.bfloat16)
    c = torch.empty(M, n, dtype=torch.bfloat16, device="cuda")
    sig.view(torch.int64).zero_()  # torch has no CUDA fill for uint64
    torch.cuda.synchronize()
    dist.barrier()

    version = rt.nvshmem_version
    ag = rt.load(str(find(args.kernels, "ag-gemm-tc-kernels", version)), "ag-gemm-tc-kernels")
    fused = ag["ag_gemm_mma_fused"]
    per_gpu = max(1, -(-world // gpus))
    grid = max(1, fused.max_collective_blocks(128, SM80_SMEM) // per_gpu)
    pushers = min(max(world - 1, 1), 8) * 2
    epoch = [0]

    def ours():
        epoch[0] += 1
        fused(grid, 128, a_shard, a_full, sig, b, c, m_loc, n, k, epoch[0], pushers,
              shared_mem=SM80_SMEM)

    # Correctness against torch: gather A with torch, multiply with torch.
    ours()
    torch.cuda.synchronize()
    gather, gather_how = torch_all_gather(a_shard, world)
    gathered = gather()
    ref = torch.matmul(gathered, b.t())
    err = ((c.float() - ref.float()).abs().max() / ref.float().abs().max()).item()
    ag_ok = err < 2e-2
    log(f"AG+GEMM M={M} N={n} K={k} bf16: max error / max |C| = {err:.2e} "
        f"({'PASS' if ag_ok else 'FAIL'}: ours vs {gather_how} + torch.matmul)")

    t_ours = time_ms(ours, args.iters)

    def torch_unfused():
        torch.matmul(gather(), b.t())

    t_unfused = time_ms(torch_unfused, args.iters)
    t_mm = time_ms(lambda: torch.matmul(gathered, b.t()), args.iters)
    rows = [("ours: fused AG+GEMM (ag_gemm_mma_fused)", t_ours, None),
            (f"torch: {gather_how} + matmul ({backend})", t_unfused, t_unfused / t_ours),
            ("torch: matmul alone (no communication)", t_mm, t_mm / t_ours)]
    try:
        fused_op = torch.ops.symm_mem.fused_all_gather_matmul
        t_sym = time_ms(lambda: fused_op(a_shard, [b.t()], gather_dim=0, group_name=group), args.iters)
        rows.append(("torch: symm_mem.fused_all_gather_matmul", t_sym, t_sym / t_ours))
    except Exception as e:
        rows.append((f"torch: symm_mem.fused_all_gather_matmul n/a ({type(e).__name__}: "
                     f"{str(e).splitlines()[0][:120]})", None, None))

    # All-reduce (f32, in place), one-shot.
    ar = rt.load(str(find(args.kernels, "allreduce-kernels", version)), "allreduce-kernels")
    oneshot = ar["allreduce_oneshot"]
    n_ar = args.ar_elems
    ar_grid = max(1, min(oneshot.max_collective_blocks(256) // per_gpu, 32))
    data = symm_mem.empty(n_ar, dtype=torch.float32, device="cuda")
    stage = symm_mem.empty(2 * n_ar, dtype=torch.float32, device="cuda")
    scratch = symm_mem.empty(ar_grid * 256 * UNROLL * 4, dtype=torch.float32, device="cuda")
    ready = symm_mem.empty(ar_grid * world, dtype=torch.uint64, device="cuda")
    for t in (data, stage, scratch, ready):
        symm_mem.rendezvous(t, group)
    ready.view(torch.int64).zero_()
    ar_epoch = [0]

    def ar_ours():
        ar_epoch[0] += 1
        half = ar_epoch[0] % 2
        oneshot.launch_collective(ar_grid, 256, data, stage[half * n_ar:(half + 1) * n_ar],
                                  scratch, ready, n_ar, ar_epoch[0])

    src = torch.arange(n_ar, device="cuda", dtype=torch.float32) % 97 + rank
    data.copy_(src)
    torch.cuda.synchronize()
    dist.barrier()
    ar_ours()
    torch.cuda.synchronize()
    expect = src.clone()
    dist.all_reduce(expect)
    ar_ok = torch.allclose(data, expect)
    log(f"all-reduce {n_ar} f32: {'PASS' if ar_ok else 'FAIL'} (ours vs dist.all_reduce)")
    t_ar = time_ms(ar_ours, args.iters)
    t_dist = time_ms(lambda: dist.all_reduce(expect), args.iters)
    rows += [("ours: one-shot all-reduce (allreduce_oneshot)", t_ar, None),
             (f"torch: dist.all_reduce ({backend})", t_dist, t_dist / t_ar)]
    try:
        one_shot = torch.ops.symm_mem.one_shot_all_reduce
        t_os = time_ms(lambda: one_shot(data, "sum", group), args.iters)
        rows.append(("torch: symm_mem.one_shot_all_reduce", t_os, t_os / t_ar))
    except Exception as e:
        rows.append((f"torch: symm_mem.one_shot_all_reduce n/a ({type(e).__name__}: "
                     f"{str(e).splitlines()[0][:120]})", None, None))

    op = as_torch_op(fused, grid, pushers, a_full, sig, m_loc, n, k, epoch)
    compiled = compiled_check(op, a_shard, b, ref)
    log(f"custom_op + torch.compile: {compiled}")
    log("\n| what | ms (median) | torch / ours |\n|---|---|---|")
    for name, t, ratio in rows:
        log(f"| {name} | {'' if t is None else f'{t:.3f}'} | {'' if ratio is None else f'{ratio:.2f}'} |")
    ok = ag_ok and ar_ok and compiled.startswith("PASS")
    log(f"\n{'PASS' if ok else 'FAIL'}: fused AG+GEMM, all-reduce and the custom op checked "
        "against torch")
    dist.barrier()
    dist.destroy_process_group()
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
