#!/usr/bin/env bash
# Builds the C++ drop-in host (main.cu) with nvcc against the Rust kernels'
# generated headers, then runs it as 1 PE and as N PEs under nvshmem-run.
#
#   examples/cpp_host/run.sh            # 1 and 2 PEs
#   PES="1 2 4" examples/cpp_host/run.sh   # 4 PEs on one GPU need CUDA MPS running
#
# Needs, from a CPU machine's `cargo build --release` (or `./x demo`):
#   ptx/nvshmem-<ver>/<arch>/ag-gemm-kernels.{h,cubin,ptx} (and ring-kernels.* if built)
#   target/release/nvshmem-run (or NVSHMEM_RUN=path)
# Settings (environment): NVSHMEM_HOME (default: the pip wheel in /opt/torch/.venv,
# else python3's nvidia/nvshmem, else .deps/nvshmem-3.4.5), NVSHMEM_RS_PTX_DIR
# (default ptx/nvshmem-3.4.5/sm_90), CUDA_ARCH (default sm_90), PES, BUILD_DIR.
# Prints PASS or FAIL per run; exits 1 if any run failed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

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
PTX_DIR=${NVSHMEM_RS_PTX_DIR:-$root/ptx/nvshmem-3.4.5/sm_90}
CUDA_ARCH=${CUDA_ARCH:-sm_90}
PES=${PES:-1 2}
BUILD_DIR=${BUILD_DIR:-$root/target/cpp_host}
LAUNCHER=${NVSHMEM_RUN:-$root/target/release/nvshmem-run}
mkdir -p "$BUILD_DIR"

[ -f "$PTX_DIR/ag-gemm-kernels.h" ] || { echo "run.sh: $PTX_DIR/ag-gemm-kernels.h missing: run cargo build --release first" >&2; exit 1; }
command -v nvcc >/dev/null || { echo "run.sh: nvcc not on PATH" >&2; exit 1; }

# -lcuda: the toolkit's stub if nvcc has one, else the driver's libcuda.so.1.
cuda_link=()
libcuda1=$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 /{print $NF; exit}')
if [ -n "$libcuda1" ]; then
  mkdir -p "$BUILD_DIR/cuda-link" && ln -sf "$libcuda1" "$BUILD_DIR/cuda-link/libcuda.so"
  cuda_link=(-L"$BUILD_DIR/cuda-link")
fi

build=(nvcc -rdc=true -arch="$CUDA_ARCH" -O2
  -I"$NVSHMEM_HOME/include" -I"$PTX_DIR"
  "$here/main.cu" -o "$BUILD_DIR/cpp_host"
  -L"$NVSHMEM_HOME/lib" "${cuda_link[@]}"
  -Xlinker -l:libnvshmem_host.so.3 -lnvshmem_device -lcuda
  -Xlinker -rpath,"$NVSHMEM_HOME/lib")
echo "+ ${build[*]}"
"${build[@]}" || { echo "run.sh: FAIL (nvcc)"; exit 1; }

# What NVSHMEM needs here: no NVLink multicast, no network, bootstrap over loopback.
export NVSHMEM_DISABLE_NVLS=1 NVSHMEM_REMOTE_TRANSPORT=none NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=lo

status=0
for n in $PES; do
  if [ "$n" = 1 ]; then
    cmd=("$BUILD_DIR/cpp_host" "$PTX_DIR")
  else
    [ -x "$LAUNCHER" ] || { echo "run.sh: $LAUNCHER missing: cargo build --release -p nvshmem-host --bin nvshmem-run" >&2; exit 1; }
    cmd=("$LAUNCHER" -n "$n" --timeout 120 -- "$BUILD_DIR/cpp_host" "$PTX_DIR")
  fi
  echo "+ ${cmd[*]}"
  if "${cmd[@]}"; then
    echo "run.sh: $n PE(s): PASS"
  else
    echo "run.sh: $n PE(s): FAIL"
    status=1
  fi
done
exit $status
