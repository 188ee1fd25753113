#!/usr/bin/env bash
# Packs what a GPU machine without Rust needs into .gpu/ (ignored): the test
# binaries, examples, launcher and benchmark (stripped), and the built kernels
# (manifests, headers, cubins, and the PTX files under 4 MiB; a module whose
# PTX is left out loads from its cubin). Then, on the GPU machine, from the
# repository root: `bash tests/gpu-run.sh` (see there).
#
#   bash tests/gpu-pack.sh        # after ./x test (or cargo build + cargo test --no-run)
#   bash tests/gpu-pack.sh 3.8.0  # also .gpu-3.8.0/: the GPU tests against NVSHMEM 3.8.0,
#                                 # with its host library (run: PACK=.gpu-3.8.0 tests/gpu-run.sh tests)
set -euo pipefail
cd "$(dirname "$0")/.."
other_version=${1:-}
cargo build --release --workspace --bins --examples
tests=$(cargo test --release --workspace --no-run --message-format=json 2>/dev/null |
  python3 -c 'import sys, json
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"] \
       and m["target"]["name"] in ("gpu", "collectives", "compute", "tensor", "bench_check"):
        print(m["target"]["name"], m["executable"])')
rm -rf .gpu && mkdir -p .gpu/bin
while read -r name exe; do objcopy --strip-debug "$exe" ".gpu/bin/test-$name"; done <<< "$tests"
for b in nvshmem-run nvshmem-bench demo; do objcopy --strip-debug "target/release/$b" ".gpu/bin/$b"; done
for e in ring allreduce ag_gemm gemm_rs runtime_costs; do objcopy --strip-debug "target/release/examples/$e" ".gpu/bin/$e"; done
for d in ptx/nvshmem-*/*/; do
  mkdir -p ".gpu/$d"
  find "$d" -maxdepth 1 -type f \( -name '*.json' -o -name '*.h' -o -name '*.cubin' -o \( -name '*.ptx' -size -4M \) \) \
    -exec cp {} ".gpu/$d" \;
done
# The runtime test kernels and the benchmark's kernels (its all-reduce too) again, compiled separately
# (ptxas -c + nvlink; step `separate` of gpu-run.sh), to check that mode on the GPU.
for k in tests/kernels/runtime bench/kernel examples/allreduce/kernel; do
  target/release/examples/nvshmem-build --device-link=separate --target-dir=target/nvshmem-kernels \
    "$k" sm_90 3.4.5 target/ptx-separate > /dev/null
done
mkdir -p .gpu/ptx-separate/nvshmem-3.4.5/sm_90
cp target/ptx-separate/nvshmem-3.4.5/sm_90/* .gpu/ptx-separate/nvshmem-3.4.5/sm_90/
# The version-mismatch test looks for the other version's build beside it.
[ -d .gpu/ptx/nvshmem-3.8.0 ] && cp -r .gpu/ptx/nvshmem-3.8.0 .gpu/ptx-separate/
du -sh .gpu
if [ -n "$other_version" ]; then
  # A pack of its own (the carry limit is 64 MiB): the GPU test binary and
  # launcher, that version's runtime kernels (PTX too, for the PTX-load test),
  # the 3.4.5 ones for the mismatch test, and that version's host library,
  # bootstrap plugin and version header.
  p=.gpu-$other_version
  src=.deps/nvshmem-$other_version/nvidia/nvshmem
  [ -f "$src/lib/libnvshmem_host.so.3" ] || { echo "NVSHMEM $other_version is not in .deps: run ./x setup" >&2; exit 1; }
  rm -rf "$p" && mkdir -p "$p/bin" "$p/nvshmem/lib" "$p/nvshmem/include/non_abi"
  cp .gpu/bin/test-gpu .gpu/bin/nvshmem-run "$p/bin/"
  for v in "$other_version" 3.4.5; do
    mkdir -p "$p/ptx/nvshmem-$v/sm_90"
    cp ptx/nvshmem-$v/sm_90/runtime-kernels.* "$p/ptx/nvshmem-$v/sm_90/"
  done
  cp "$src"/lib/libnvshmem_host.so.3 "$src"/lib/nvshmem_bootstrap_uid.so.3 "$p/nvshmem/lib/"
  cp "$src"/include/non_abi/nvshmem_version.h "$p/nvshmem/include/non_abi/"
  du -sh "$p"
fi
