"""Python launch overhead: `k(grid, block, *args)` against a bare
`cuLaunchKernel` of the same kernel and arguments from the same process, and
beside a torch op on a tensor of the same size.

    python3 examples/torch/launch_overhead.py --kernels DIR

DIR holds `nvshmem-<version>/<arch>/pytest-kernels.json` (the Python tests'
kernels; `cargo xtask gpu-pack torch` packs them). One process, NVSHMEM
initialized by nvshmem_rs.init(). Launches go in bursts of 200 between
synchronizations, so the GPU's queue never fills and the CPU's cost is what
is timed. Passes when the overhead is at most 5 µs per launch."""

import argparse
import os
import pathlib
import statistics
import time

import torch

import nvshmem_rs

BURST = 200
LIMIT_US = 5.0


def per_launch_us(burst_seconds):
    """Median over bursts, in µs per launch."""
    return statistics.median(burst_seconds) / BURST * 1e6


def bursts(fn, reps):
    out = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    torch.cuda.synchronize()
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--kernels", default=os.environ.get("NVSHMEM_RS_TEST_KERNELS"))
    p.add_argument("--reps", type=int, default=50)
    p.add_argument("--elems", type=int, default=4096)
    args = p.parse_args()
    if not args.kernels:
        raise SystemExit("--kernels DIR (or NVSHMEM_RS_TEST_KERNELS) is required")
    torch.cuda.set_device(0)
    rt = nvshmem_rs.init(0)
    base = pathlib.Path(args.kernels) / f"nvshmem-{rt.nvshmem_version}"
    folder = next(d for d in sorted(base.glob("sm_*")) if (d / "pytest-kernels.json").exists())
    k = rt.load(str(folder), "pytest-kernels")["scale"]
    n = args.elems
    x = torch.ones(n, device="cuda")
    grid, block = (n + 255) // 256, 256

    def ours():
        for _ in range(BURST):
            k(grid, block, x, n, 1.0)

    def ours_explicit_stream():
        s = torch.cuda.current_stream()
        for _ in range(BURST):
            k(grid, block, x, n, 1.0, stream=s)

    def torch_op():
        for _ in range(BURST):
            x.mul_(1.0)

    raw_seconds = []
    for _ in range(3):  # warm-up
        ours(), torch_op(), k.raw_launch_loop(BURST, grid, block, x, n, 1.0)
    for _ in range(args.reps):
        torch.cuda.synchronize()
        raw_seconds.append(k.raw_launch_loop(BURST, grid, block, x, n, 1.0))
    torch.cuda.synchronize()
    t_raw = per_launch_us(raw_seconds)
    t_ours = per_launch_us(bursts(ours, args.reps))
    t_stream = per_launch_us(bursts(ours_explicit_stream, args.reps))
    t_torch = per_launch_us(bursts(torch_op, args.reps))
    overhead = t_ours - t_raw
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, NVSHMEM {rt.nvshmem_version}, "
          f"kernel scale(x: *mut f32, n: u32, factor: f32), {n} floats, bursts of {BURST}")
    print("| launch | µs per launch (median of bursts) |\n|---|---|")
    print(f"| bare cuLaunchKernel (from Rust, arguments prepared once) | {t_raw:.2f} |")
    print(f"| nvshmem_rs k(grid, block, x, n, factor) (torch's current stream) | {t_ours:.2f} |")
    print(f"| nvshmem_rs k(..., stream=torch.cuda.current_stream()) | {t_stream:.2f} |")
    print(f"| torch x.mul_(1.0) on the same tensor | {t_torch:.2f} |")
    verdict = "PASS" if overhead <= LIMIT_US else "FAIL"
    print(f"{verdict}: Python launch overhead {overhead:.2f} µs over bare cuLaunchKernel "
          f"(limit {LIMIT_US} µs)")
    raise SystemExit(0 if verdict == "PASS" else 1)


if __name__ == "__main__":
    main()
