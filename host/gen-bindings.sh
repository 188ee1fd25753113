#!/usr/bin/env bash
# Regenerates the committed FFI bindings to NVSHMEM's host library in
# src/sys/vendor/ (a `vendor` folder, so that `duplicates` skips them):
#
#   api.rs      the one function table (bindgen --dynamic-loading NvshmemLib)
#               and the types and constants it names, from the newest version's
#               headers. Every version must give the same table: the script
#               generates it from each and stops on any difference.
#   v<X_Y_Z>.rs per version, what differs: the init-attribute structs
#               (nvshmemx_init_attr_t is v1 in 3.4, v2 in 3.8) and the values
#               of bindgen/header_values.cpp, among them the byte image of
#               NVSHMEMX_INIT_ATTR_INITIALIZER and the row `BINDINGS`.
#   mod.rs      the list of the version modules and their rows.
#
# Versions: the arguments, else every version of nvshmem_types::SUPPORTED_VERSIONS
# (types/src/version.rs). Adding NVSHMEM 3.9: add its row there, run this
# script, `cargo test -p nvshmem-host`.
#
# Where each version is comes from the builder's own discovery: `nvshmem-build
# setup` prints `nvshmem-<version>\t<root>` for each (python3's pip package, or
# the per-user cache, which it fills from the pip wheel when needed).
# Needs: bindgen (cargo install bindgen-cli), libclang, a C++ compiler, nm,
# python3 with pip (once). Not needed: the CUDA toolkit. bindgen/shim/ stands
# in for cuda.h and cuda_runtime.h; the bindings use cudarc's types for the
# CUDA handles.
#
#   NVSHMEM_ROOT_<maj>_<min>_<patch>=DIR overrides where a version's include/
#   and lib/ are.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=$here/src/sys/vendor
# `nvshmem-<version>\t<root>` for the versions asked for (default: every supported one).
setup_args=(--no-toolchain)
[ $# -gt 0 ] || setup_args+=(--all)
for v in "$@"; do setup_args+=(--nvshmem-version "$v"); done
roots=$(cd "$root" && cargo run -q -p nvshmem-builder --features cli --bin nvshmem-build -- \
  setup "${setup_args[@]}" | grep '^nvshmem-')
mapfile -t versions < <(cut -f1 <<<"$roots" | sed 's/^nvshmem-//')
[ ${#versions[@]} -gt 0 ] || { echo "nvshmem-build setup named no NVSHMEM version" >&2; exit 1; }
BINDGEN=${BINDGEN:-$(command -v bindgen || echo "$HOME/.cargo/bin/bindgen")}
CXX=${CXX:-$(command -v g++ || command -v clang++)}

# The host functions the runtime calls. Every one must be exported by each
# version's libnvshmem_host.so.3; the script checks that with nm. Note that
# nvshmem_init, nvshmemx_init_attr and nvshmem_finalize are inline wrappers in
# the headers, not exports: the runtime uses nvshmemx_hostlib_init_attr and
# nvshmemx_hostlib_finalize, as nvshmem4py does. (The typed
# nvshmemx_TYPE_OP_reduce_on_stream family, 276 exports, is looked up by name:
# src/sys/coll.rs.)
functions=(
  # init, finalize, queries
  nvshmemx_hostlib_init_attr nvshmemx_hostlib_finalize nvshmemx_init_status
  nvshmemx_get_uniqueid nvshmemx_set_attr_uniqueid_args
  nvshmemx_vendor_get_version_info nvshmem_info_get_version nvshmem_info_get_name
  nvshmem_my_pe nvshmem_n_pes
  # teams
  nvshmem_team_my_pe nvshmem_team_n_pes nvshmem_team_translate_pe
  nvshmem_team_split_strided nvshmem_team_split_2d nvshmem_team_destroy
  # symmetric heap
  nvshmem_malloc nvshmem_calloc nvshmem_align nvshmem_free nvshmem_ptr
  # modules
  nvshmemx_cumodule_init nvshmemx_cumodule_finalize
  # host-blocking operations
  nvshmem_barrier_all nvshmem_sync_all nvshmem_quiet nvshmem_fence
  nvshmem_putmem nvshmem_getmem nvshmem_signal_fetch
  # stream-ordered operations
  nvshmemx_barrier_all_on_stream nvshmemx_sync_all_on_stream nvshmemx_quiet_on_stream
  nvshmemx_team_sync_on_stream nvshmemx_barrier_on_stream
  nvshmemx_putmem_on_stream nvshmemx_getmem_on_stream
  nvshmemx_putmem_nbi_on_stream nvshmemx_getmem_nbi_on_stream
  nvshmemx_putmem_signal_on_stream nvshmemx_putmem_signal_nbi_on_stream
  nvshmemx_signal_op_on_stream nvshmemx_signal_wait_until_on_stream
  nvshmemx_broadcastmem_on_stream nvshmemx_fcollectmem_on_stream nvshmemx_alltoallmem_on_stream
)
# Types and constants the table names that are the same in every version.
shared_items=(nvshmemx_uniqueid_t nvshmem_team_t nvshmemx_init_status_t flags)
# The structs whose layout differs between versions: opaque in api.rs
# (crate::sys::InitAttr, filled from the header's initializer bytes),
# generated per version for the layout tests.
version_items=(nvshmemx_init_attr_t nvshmemx_init_args_t nvshmemx_uniqueid_args_t)

join() { local IFS='|'; echo "$*"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bindgen_version=$("$BINDGEN" --version | awk '{print $2}')

run_bindgen() { # header-dir output args...
  local nv=$1 output=$2
  shift 2
  echo '#include "nvshmem_host.h"' >"$tmp/wrapper.h"
  "$BINDGEN" "$tmp/wrapper.h" \
    --rust-target 1.85 --rust-edition 2024 \
    --blocklist-type 'CUmodule|CUmod_st|CUstream_st|cudaStream_t|CUlibrary|CUlib_st' \
    --default-enum-style consts --no-prepend-enum-name \
    --no-doc-comments --sort-semantically \
    "$@" -o "$output" -- -x c++ -std=c++17 -I"$here/bindgen/shim" -I"$nv/include"
}

newest=""
mods=()
for v in "${versions[@]}"; do
  var="NVSHMEM_ROOT_${v//./_}"
  nv=${!var:-$(awk -F'\t' -v k="nvshmem-$v" '$1 == k {print $2}' <<<"$roots")}
  lib=$nv/lib/libnvshmem_host.so.3
  [ -f "$lib" ] || { echo "no $lib: set $var to NVSHMEM $v's folder" >&2; exit 1; }
  exports=$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//')
  for f in "${functions[@]}"; do
    grep -qx "$f" <<<"$exports" || { echo "$f is not exported by NVSHMEM $v ($lib)" >&2; exit 1; }
  done

  # The shared table, from this version's headers.
  run_bindgen "$nv" "$tmp/api-$v.rs" \
    --dynamic-loading NvshmemLib --dynamic-link-require-all \
    --allowlist-function "^($(join "${functions[@]}"))\$" \
    --allowlist-item "^($(join "${shared_items[@]}"))\$" \
    --blocklist-type "^($(join "${version_items[@]}")|nvshmemx_(init_attr|init_args|uniqueid_args)_v[0-9]+|nvshmem_team_config(_t|_v[0-9]+)?)\$" \
    --raw-line 'pub use crate::sys::InitAttr as nvshmemx_init_attr_t;' \
    --raw-line 'pub use cudarc::driver::sys::{CUmodule, CUstream as cudaStream_t};' \
    --raw-line 'pub use std::ffi::c_void as nvshmem_team_config_t;'
  # Compared line by line in sorted order: the headers declare some functions
  # in another order in another version (bindgen's layout assertions still
  # catch a field that moved).
  sort "$tmp/api-$v.rs" >"$tmp/api-$v.sorted"
  if [ -n "$newest" ] && ! cmp -s "$tmp/api-$newest.sorted" "$tmp/api-$v.sorted"; then
    diff "$tmp/api-$newest.sorted" "$tmp/api-$v.sorted" >&2 || true
    echo "NVSHMEM $newest and $v differ in the functions or shared types above: move what" \
      "differs from shared_items/functions to version_items, or bind it per version" >&2
    exit 1
  fi
  newest=$v

  # What differs: the init-attribute structs and the header's values.
  run_bindgen "$nv" "$tmp/structs-$v.rs" \
    --allowlist-item "^($(join "${version_items[@]}"))\$" \
    --raw-line 'pub use crate::sys::vendor::api::{nvshmemx_uniqueid_t, nvshmemx_uniqueid_v1};' \
    --blocklist-type 'nvshmemx_uniqueid_t|nvshmemx_uniqueid_v1'
  "$CXX" -std=c++17 -I"$here/bindgen/shim" -I"$nv/include" \
    "$here/bindgen/header_values.cpp" -o "$tmp/header_values"
  mod=v${v//./_}
  mods+=("$mod")
  {
    echo "//! What differs in NVSHMEM $v's host API: the init-attribute structs"
    echo "//! and the values its headers define. Generated by \`host/gen-bindings.sh\`"
    echo "//! (bindgen $bindgen_version). Do not edit; rerun the script."
    echo
    cat "$tmp/structs-$v.rs"
    echo
    "$tmp/header_values"
  } >"$out/$mod.rs"
  echo "wrote $out/$mod.rs" >&2
done

{
  echo "//! The one function table of NVSHMEM's host library, \`libnvshmem_host.so.3\`,"
  echo "//! the same in every supported version (${versions[*]})."
  echo "//! Generated by \`host/gen-bindings.sh\` (bindgen $bindgen_version) from NVSHMEM $newest's"
  echo "//! headers. Do not edit; rerun the script."
  echo
  cat "$tmp/api-$newest.rs"
  echo
  echo "/// The functions of [\`NvshmemLib\`], as the headers name them."
  echo "pub const FUNCTIONS: &[&str] = &["
  printf '    "%s",\n' "${functions[@]}"
  echo "];"
} >"$out/api.rs"
{
  echo "//! NVSHMEM's host API, generated by \`host/gen-bindings.sh\`: the function"
  echo "//! table ([\`api\`]) and, per supported version, what differs. Do not edit."
  echo
  echo "pub mod api;"
  for m in "${mods[@]}"; do echo "pub mod $m;"; done
  echo
  echo "/// One row per version module, oldest first."
  echo "pub const BINDINGS: &[crate::sys::VersionBindings] = &["
  for m in "${mods[@]}"; do echo "    $m::BINDINGS,"; done
  echo "];"
  echo
  echo "/// Calls \`\$m!(module)\` for each version module (the layout tests)."
  echo "#[cfg(test)]"
  echo "macro_rules! each_version_module {"
  echo "    (\$m:ident) => {"
  for m in "${mods[@]}"; do echo "        \$m!($m);"; done
  echo "    };"
  echo "}"
  echo "#[cfg(test)]"
  echo "pub(crate) use each_version_module;"
} >"$out/mod.rs"
rustfmt --edition 2024 "$out"/*.rs
echo "wrote $out/api.rs and $out/mod.rs" >&2
