#!/usr/bin/env bash
# The one command that regenerates the benchmark figures on a GPU machine:
# builds the CUDA C++ twins (bench/cpp/kernels.cu) with nvcc -rdc=true against
# libnvshmem_device.a (and with -dlto), dumps their SASS and the Rust cubin's,
# then runs nvshmem-bench on each PE count in $PES and writes, per count,
# $RESULTS/pe<N>.csv, pe<N>.txt (the table) and SVG plots in $RESULTS/pe<N>/.
#
#   bench/run.sh                  # 1 and 2 PEs (2 PEs on one GPU start CUDA MPS)
#   PES="1 2 4" bench/run.sh
#   MODE=--check bench/run.sh     # correctness only, nothing timed
#
# Needs, from a CPU machine's `cargo build --release -p nvshmem-bench --bin nvshmem-run`
# (or set BENCH, NVSHMEM_RUN, NVSHMEM_RS_PTX_DIR when the files are elsewhere):
#   target/release/nvshmem-bench, target/release/nvshmem-run, ptx/nvshmem-3.4.5/sm_90/
# and on the GPU machine: nvcc, NVSHMEM 3.4.5 (NVSHMEM_HOME), optionally NCCL (NCCL_LIB).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)

find_nvshmem() {
  local d
  for d in /opt/torch/.venv/lib/python3.12/site-packages/nvidia/nvshmem \
           "$(python3 -c 'import nvidia.nvshmem as m; print(list(m.__path__)[0])' 2>/dev/null)" \
           "$root/.deps/nvshmem-3.4.5/nvidia/nvshmem"; do
    if [ -n "$d" ] && [ -f "$d/lib/libnvshmem_host.so.3" ]; then echo "$d"; return 0; fi
  done
  return 1
}
NVSHMEM_HOME=${NVSHMEM_HOME:-$(find_nvshmem)} || { echo "run.sh: NVSHMEM not found; set NVSHMEM_HOME" >&2; exit 1; }
export NVSHMEM_HOME
export NVSHMEM_RS_PTX_DIR=${NVSHMEM_RS_PTX_DIR:-$root/ptx/nvshmem-3.4.5/sm_90}
BENCH=${BENCH:-$root/target/release/nvshmem-bench}
LAUNCHER=${NVSHMEM_RUN:-$root/target/release/nvshmem-run}
CUDA_ARCH=${CUDA_ARCH:-sm_90}
PES=${PES:-1 2}
MODE=${MODE:-}
RESULTS=${RESULTS:-$root/bench/results}
BUILD=${BUILD_DIR:-$root/target/bench-cpp}
TIMEOUT=${TIMEOUT:-300}
mkdir -p "$RESULTS" "$BUILD"
{ date -u +%Y-%m-%dT%H:%MZ; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv 2>&1; } > "$RESULTS/machine.txt"
export NVSHMEM_DISABLE_NVLS=1 NVSHMEM_REMOTE_TRANSPORT=none NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=lo

# 1. The C++ twins: the documented way (-rdc=true, device-linked with
#    libnvshmem_device.a into a cubin the bench loads), then with -dlto.
cpp_args=()
arch=${CUDA_ARCH#sm_}
inc=(-I"$NVSHMEM_HOME/include")
lib=(-L"$NVSHMEM_HOME/lib" -lnvshmem_device)
build_cubin() { # name, compile flags..., -- link flags...
  local name=$1; shift
  local cflags=() lflags=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do cflags+=("$1"); shift; done
  shift
  lflags=("$@")
  local obj="$BUILD/$name.o" cubin="$BUILD/$name.cubin"
  if [ -f "$cubin" ] && [ "$cubin" -nt "$here/cpp/kernels.cu" ]; then
    cpp_args+=(--cpp "$name=$cubin"); return 0
  fi
  echo "+ nvcc ${cflags[*]} -c kernels.cu"
  nvcc "${cflags[@]}" -O3 "${inc[@]}" -c "$here/cpp/kernels.cu" -o "$obj" || return 1
  echo "+ nvcc ${lflags[*]} -dlink -cubin $name.o -lnvshmem_device"
  if ! nvcc "${lflags[@]}" -dlink -cubin "$obj" "${lib[@]}" -o "$cubin"; then
    echo "  (nvcc -dlink -cubin failed; trying nvlink)"
    nvlink -arch="$CUDA_ARCH" "${lflags[@]/-dlto/-lto}" "$obj" "${lib[@]}" -o "$cubin" || return 1
  fi
  cuobjdump -res-usage "$cubin" > "$RESULTS/sass/$name.res.txt" 2>&1
  cuobjdump -sass "$cubin" > "$RESULTS/sass/$name.sass" 2>&1
  cpp_args+=(--cpp "$name=$cubin")
}
mkdir -p "$RESULTS/sass"
if command -v nvcc >/dev/null; then
  nvcc --version | tail -2
  build_cubin cpp -rdc=true -arch="$CUDA_ARCH" -- -arch="$CUDA_ARCH" \
    || echo "run.sh: the C++ build failed: C++ not measured"
  build_cubin cpp-lto -rdc=true -gencode "arch=compute_$arch,code=lto_$arch" -- -dlto -arch="$CUDA_ARCH" \
    || echo "run.sh: the C++ -dlto build failed (see above): C++ LTO not measured"
  for k in bench-kernels allreduce-kernels; do
    cuobjdump -sass "$NVSHMEM_RS_PTX_DIR/$k.cubin" > "$RESULTS/sass/rust-$k.sass" 2>&1
    cuobjdump -res-usage "$NVSHMEM_RS_PTX_DIR/$k.cubin" > "$RESULTS/sass/rust-$k.res.txt" 2>&1
  done
else
  echo "run.sh: nvcc not on PATH: C++ not measured"
fi

# 2. NCCL: cudarc looks for libnccl.so by name; PyTorch's wheel ships libnccl.so.2.
NCCL_LIB=${NCCL_LIB:-$(ls /opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2 2>/dev/null \
  || python3 -c 'import nvidia.nccl as m, os; print(os.path.join(list(m.__path__)[0], "lib/libnccl.so.2"))' 2>/dev/null)}
if [ -n "$NCCL_LIB" ] && [ -f "$NCCL_LIB" ]; then
  mkdir -p "$BUILD/nccl" && ln -sf "$NCCL_LIB" "$BUILD/nccl/libnccl.so"
  export LD_LIBRARY_PATH="$BUILD/nccl${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
  echo "run.sh: NCCL not found: NCCL not measured"
fi

# 3. The runs.
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
mps=0
start_mps() {
  export CUDA_MPS_PIPE_DIRECTORY=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/mps} CUDA_MPS_LOG_DIRECTORY=${CUDA_MPS_LOG_DIRECTORY:-/tmp/mpslog}
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  nvidia-cuda-mps-control -d && mps=1
  export NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1
}
stop_mps() { [ $mps = 1 ] && echo quit | nvidia-cuda-mps-control; mps=0; }
trap stop_mps EXIT
status=0
for n in $PES; do
  if [ "$n" -gt 1 ] && [ "$n" -gt "${gpus:-1}" ] && [ $mps = 0 ]; then start_mps; fi
  out=(--csv "$RESULTS/pe$n.csv" --plots "$RESULTS/pe$n")
  [ -n "$MODE" ] && out=()
  if [ "$n" = 1 ]; then
    cmd=(timeout "$TIMEOUT" "$BENCH" $MODE "${cpp_args[@]}" "${out[@]}")
  else
    cmd=("$LAUNCHER" -n "$n" --timeout "$TIMEOUT" -- "$BENCH" $MODE "${cpp_args[@]}" "${out[@]}")
  fi
  echo "+ ${cmd[*]}"
  if "${cmd[@]}" 2>&1 | tee "$RESULTS/pe$n${MODE:+-check}.txt"; then
    echo "run.sh: $n PE(s): PASS"
  else
    echo "run.sh: $n PE(s): FAIL"
    status=1
  fi
done
exit $status
