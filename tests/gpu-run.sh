#!/usr/bin/env bash
# Runs on a GPU machine, from the repository root, over a pack made by
# tests/gpu-pack.sh: every GPU test (1, 2 and 4 PEs; CUDA MPS is started for
# more PEs than GPUs), the benchmark's correctness check, the examples, and the
# runtime's own costs. Logs go to $OUT (default /tmp/gpu-out); a table last.
#
#   bash tests/gpu-run.sh [STEP...]     # steps: info tests compute tensor collectives bench gemm examples costs separate (default: all)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pack=${PACK:-$root/.gpu}
out=${OUT:-/tmp/gpu-out}
mkdir -p "$out"
export NVSHMEM_DISABLE_NVLS=1 NVSHMEM_REMOTE_TRANSPORT=none NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=lo
# A pack with its own NVSHMEM (tests/gpu-pack.sh 3.8.0) runs against it.
if [ -z "${NVSHMEM_HOME:-}" ]; then
  for d in "$pack/nvshmem" /opt/torch/.venv/lib/python3.12/site-packages/nvidia/nvshmem "$root/.deps/nvshmem-3.4.5/nvidia/nvshmem"; do
    [ -f "$d/lib/libnvshmem_host.so.3" ] && export NVSHMEM_HOME=$d && break
  done
fi
export LD_LIBRARY_PATH=$NVSHMEM_HOME/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# cuBLAS for `nvshmem-bench gemm` (cudarc dlopens libcublas.so.13 by name): PyTorch's wheels.
cublas=$(ls /opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcublas.so.13 \
  /opt/torch/.venv/lib/python3.12/site-packages/nvidia/cublas/lib/libcublas.so.13 2>/dev/null | head -1)
[ -n "$cublas" ] || cublas=$(find / -name 'libcublas.so.13' -path '*nvidia*' 2>/dev/null | head -1)
[ -n "$cublas" ] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(dirname "$cublas")
version=$(sed -n 's/^#define NVSHMEM_VENDOR_MAJOR_VERSION \([0-9]*\).*/\1/p; s/^#define NVSHMEM_VENDOR_MINOR_VERSION \([0-9]*\).*/\1/p; s/^#define NVSHMEM_VENDOR_PATCH_VERSION \([0-9]*\).*/\1/p' \
  "$NVSHMEM_HOME/include/non_abi/nvshmem_version.h" 2>/dev/null | paste -sd.)
export NVSHMEM_RS_PTX_DIR=$pack/ptx/nvshmem-${version:-3.4.5}/sm_90
export NVSHMEM_RS_REQUIRE_GPU=1
bin=$pack/bin
steps=${*:-info tests compute tensor collectives bench gemm examples costs separate}
table=()
record() { table+=("$(printf '%-34s %s' "$1" "$2")"); }
run() { # name, command...
  local name=$1; shift
  echo "=== $name: $*"
  local t0=$SECONDS
  if "$@" > "$out/$name.log" 2>&1; then record "$name" "PASS ($((SECONDS - t0)) s)"; else record "$name" "FAIL rc=$? ($((SECONDS - t0)) s)"; fi
  grep -E "passed, .* failed|FAIL|PASS|error" "$out/$name.log" | tail -5
}
mps=0
start_mps() {
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
  mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
  nvidia-cuda-mps-control -d && mps=1
  export NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1
}
stop_mps() { if [ $mps = 1 ]; then echo quit | nvidia-cuda-mps-control; mps=0; sleep 1; fi; }
trap stop_mps EXIT

for step in $steps; do case $step in
  info)
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv | tee "$out/machine.txt"
    echo "NVSHMEM_HOME=$NVSHMEM_HOME (version ${version:-unknown}), kernels from $NVSHMEM_RS_PTX_DIR" | tee -a "$out/machine.txt" ;;
  tests)
    # 1 and 2 PEs without MPS first (2 PEs time-slice: limited MPG), then all under MPS.
    # (no NVSHMEM_RS_REQUIRE_GPU here: the 4-PE runs skip for want of MPS)
    run gpu-no-mps env -u NVSHMEM_RS_REQUIRE_GPU NVSHMEM_RS_TEST_REPORT="$out/gpu-no-mps.json" "$bin/test-gpu"
    start_mps
    run gpu-mps env NVSHMEM_RS_TEST_REPORT="$out/gpu-mps.json" "$bin/test-gpu"
    stop_mps ;;
  compute)
    # The compute primitives (warp, shared memory, atomics, math): 1 PE, no MPS.
    run compute env NVSHMEM_RS_TEST_REPORT="$out/compute.json" "$bin/test-compute" ;;
  tensor)
    # The tensor-core primitives and GEMMs (1 PE, sm_90a kernels from the pack's sm_90a folder).
    run tensor env NVSHMEM_RS_TEST_REPORT="$out/tensor.json" "$bin/test-tensor" ;;
  gemm)
    # bf16 GEMM vs cuBLAS (1 PE: GEMM alone and the fused cases on one PE), then the fused
    # AG+GEMM / GEMM+RS on 2 PEs under MPS; CSV, table and SVG plots in $out.
    run gemm-1 "$bin/nvshmem-bench" gemm --csv "$out/gemm-pe1.csv" --plots "$out/gemm-pe1"
    start_mps
    run gemm-2 "$bin/nvshmem-run" -n 2 --timeout 500 -- "$bin/nvshmem-bench" gemm --sizes 2048,4096,8192 \
      --csv "$out/gemm-pe2.csv" --plots "$out/gemm-pe2"
    stop_mps
    grep -h "gemm\|TFLOP" "$out"/gemm-*.log | head -40 ;;
  collectives)
    start_mps
    run collectives-mps env NVSHMEM_RS_TEST_REPORT="$out/collectives.json" NVSHMEM_RS_TEST_TIMEOUT=300 "$bin/test-collectives"
    stop_mps ;;
  bench)
    start_mps
    run bench-check "$bin/test-bench_check"
    stop_mps ;;
  examples)
    run ring-1 "$bin/ring"
    run allreduce-1 "$bin/allreduce" --quick
    run ag_gemm-1 "$bin/ag_gemm"
    run gemm_rs-1 "$bin/gemm_rs"
    start_mps
    for n in 2 4; do
      run ring-$n "$bin/nvshmem-run" -n $n --timeout 120 -- "$bin/ring"
      run allreduce-$n "$bin/nvshmem-run" -n $n --timeout 200 -- "$bin/allreduce" --quick
      run ag_gemm-$n "$bin/nvshmem-run" -n $n --timeout 200 -- "$bin/ag_gemm" --iters 5
      run gemm_rs-$n "$bin/nvshmem-run" -n $n --timeout 200 -- "$bin/gemm_rs" --iters 5
    done
    stop_mps ;;
  separate)
    # The runtime test kernels compiled separately (ptxas -c + nvlink), every GPU test.
    start_mps
    run gpu-separate-mps env NVSHMEM_RS_PTX_DIR="$pack/ptx-separate/nvshmem-3.4.5/sm_90" \
      NVSHMEM_RS_TEST_REPORT="$out/gpu-separate.json" "$bin/test-gpu"
    stop_mps ;;
  costs)
    export CUDA_CACHE_DISABLE=1
    run costs-1 "$bin/runtime_costs"
    run costs-2-no-mps "$bin/nvshmem-run" -n 2 --timeout 200 -- "$bin/runtime_costs"
    start_mps
    run costs-2-mps "$bin/nvshmem-run" -n 2 --timeout 200 -- "$bin/runtime_costs"
    run costs-4-mps "$bin/nvshmem-run" -n 4 --timeout 200 -- "$bin/runtime_costs"
    stop_mps
    unset CUDA_CACHE_DISABLE
    grep -h "init\|load\|launch" "$out"/costs-*.log ;;
  *) echo "unknown step $step"; exit 2 ;;
esac; done
echo; echo "=== summary"; printf '%s\n' "${table[@]}"
