#!/bin/bash
# Several packs' modes in one device call, within a deadline: unpacks every
# carried .gpu-*.tar.xz (`tar cJf .gpu-NAME.tar.xz .gpu-NAME`), runs each step
# under `timeout` (a step is cut to the time left; one with under 20 s left is
# NOT RUN), tars each step's $OUT folder into one file (a device call returns
# a limited number of files), and prints a table last. From the repository root:
#   DEADLINE=530 TAIL=40 STEPS='step tests 120 .gpu-tests tests; step moe 150 .gpu-moe' \
#     bash xtask/gpu-call.sh
# step NAME SECS PACKDIR [MODE...] [--only TEXT]: `PACKDIR/bin/xtask gpu-run MODE...`.
set -u
DEADLINE=${DEADLINE:-530}
STEPS=${STEPS:?set STEPS, such as STEPS='step tests 120 .gpu-tests tests'}
START=$(date +%s)
OUTROOT=${OUT:-/tmp/gpu-out}
TAIL=${TAIL:-30}
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
for t in .gpu-*.tar.xz; do [ -e "$t" ] && tar xJf "$t"; done
echo "unpacked in $(( $(date +%s) - START )) s; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1)"
RESULTS=()
step() {
  local name=$1 secs=$2 pack=$3; shift 3
  local left=$(( DEADLINE - ($(date +%s) - START) ))
  if (( left < 20 )); then RESULTS+=("$(printf '%-12s NOT RUN (deadline)' "$name")"); return; fi
  (( secs > left )) && secs=$left
  mkdir -p "$OUTROOT/$name"
  local t0=$(date +%s)
  echo "=== step $name ($pack gpu-run $*; limit ${secs}s)"
  OUT="$OUTROOT/$name" timeout -k 5 "$secs" "$pack/bin/xtask" gpu-run "$@" > "$OUTROOT/$name.log" 2>&1
  local rc=$?
  tail -n "$TAIL" "$OUTROOT/$name.log"
  (cd "$OUTROOT" && tar czf "$name.tar.gz" "$name" && rm -rf "$name")
  local verdict=PASS; (( rc == 124 || rc == 137 )) && verdict=TIMEOUT; (( rc != 0 && rc != 124 && rc != 137 )) && verdict=FAIL
  RESULTS+=("$(printf '%-12s %-8s rc=%-3s %4ss' "$name" "$verdict" "$rc" "$(( $(date +%s) - t0 ))")")
}
eval "$STEPS"
echo; echo "=== table (total $(( $(date +%s) - START )) s)"
printf '%s\n' "${RESULTS[@]}"
