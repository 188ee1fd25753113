// The CUDA C++ twins of the benchmark's Rust kernels (bench/kernel/src/lib.rs)
// and of the allreduce example's all-reduce kernels
// (examples/allreduce/kernel/src/lib.rs): the same names, parameters,
// algorithms and launch shapes, written the documented C++ way against
// NVSHMEM's headers and built with
//
//   nvcc -rdc=true -arch=sm_90 -O3 -c kernels.cu -o kernels.o
//   nvcc -dlink -cubin -arch=sm_90 kernels.o -L$NVSHMEM_HOME/lib -lnvshmem_device -o cpp.cubin
//
// (`cargo xtask bench`; and the same with -dlto). The bench host loads the cubin as
// a module, registers it with nvshmemx_cumodule_init and times it beside the
// Rust PTX with the same grid and block.
#include <nvshmem.h>
#include <nvshmemx.h>
#include <stdint.h>

#define KERNEL extern "C" __global__ void

// ---------------------------------------------------------------- helpers

__device__ __forceinline__ uint8_t pattern_byte(uint64_t i, uint32_t seed) {
  uint32_t h = (uint32_t)i ^ ((uint32_t)(i >> 32) * 0x27d4eb2fu);
  h = (h * 0x9e3779b1u) ^ (seed * 0x85ebca77u);
  h ^= h >> 15;
  h *= 0x2c1b3c6du;
  h ^= h >> 13;
  return (uint8_t)(h % 255u) + 1;
}

// ---------------------------------------------------------------- latency

KERNEL lat_p(uint64_t *dest, uint32_t pe, uint64_t iters) {
  for (uint64_t i = 0; i < iters; i++) {
    nvshmem_uint64_p(dest, i + 1, (int)pe);
    nvshmem_quiet();
  }
}

KERNEL lat_g(uint64_t *src, uint32_t pe, uint64_t iters, uint64_t *out) {
  uint64_t acc = 0;
  size_t idx = 0;
  for (uint64_t i = 0; i < iters; i++) {
    uint64_t v = nvshmem_uint64_g(src + idx, (int)pe);
    acc += v;
    idx = (size_t)(v & 7);
  }
  *out = acc;
}

KERNEL lat_put(uint8_t *dest, const uint8_t *src, uint64_t bytes, uint32_t pe, uint64_t iters) {
  for (uint64_t i = 0; i < iters; i++) {
    nvshmem_putmem(dest, src, (size_t)bytes, (int)pe);
    nvshmem_quiet();
  }
}

KERNEL lat_get(uint8_t *dest, const uint8_t *src, uint64_t bytes, uint32_t pe, uint64_t iters) {
  for (uint64_t i = 0; i < iters; i++) nvshmem_getmem(dest, src, (size_t)bytes, (int)pe);
}

KERNEL pingpong(uint64_t *data, uint64_t *sig, const uint64_t *src, uint64_t nelem, uint32_t peer,
                uint32_t first, uint64_t iters, uint64_t base) {
  for (uint64_t i = 0; i < iters; i++) {
    uint64_t e = base + i + 1;
    if (first != 0) {
      nvshmem_uint64_put_signal(data, src, (size_t)nelem, sig, e, NVSHMEM_SIGNAL_SET, (int)peer);
      nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, e);
    } else {
      nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, e);
      nvshmem_uint64_put_signal(data, src, (size_t)nelem, sig, e, NVSHMEM_SIGNAL_SET, (int)peer);
    }
  }
}

KERNEL barrier_lat(uint64_t iters) {
  if (threadIdx.x == 0 && blockIdx.x == 0)
    for (uint64_t i = 0; i < iters; i++) nvshmem_barrier_all();
}

// ---------------------------------------------------------------- bandwidth

// Part `part` of `total` cut into `parts`: starts a multiple of ALIGN (16
// bytes for the bandwidth kernels, 4 floats for the all-reduce's).
template <size_t ALIGN>
__device__ __forceinline__ void split(size_t total, size_t parts, size_t part, size_t *start,
                                      size_t *len) {
  size_t unit = (total + parts - 1) / parts;
  unit = (unit + ALIGN - 1) / ALIGN * ALIGN;
  size_t s = part * unit < total ? part * unit : total;
  size_t e = s + unit < total ? s + unit : total;
  *start = s;
  *len = e - s;
}

template <int SCOPE>
__device__ __forceinline__ void actor(size_t *a, size_t *na) {
  size_t b = blockIdx.x, bd = blockDim.x, t = threadIdx.x, gd = gridDim.x;
  if (SCOPE == 0) {
    *a = b * bd + t;
    *na = gd * bd;
  } else if (SCOPE == 1) {
    *a = b * (bd / 32) + t / 32;
    *na = gd * (bd / 32);
  } else {
    *a = b;
    *na = gd;
  }
}

#define BW_KERNEL(NAME, SCOPE, CALL)                                                          \
  KERNEL NAME(uint8_t *dest, const uint8_t *src, uint64_t bytes, uint32_t pe, uint64_t iters, \
              uint64_t nbuf) {                                                                \
    size_t a, na, off, len;                                                                   \
    actor<SCOPE>(&a, &na);                                                                    \
    split<16>((size_t)bytes, na, a, &off, &len);                                              \
    if (len > 0) {                                                                            \
      for (uint64_t i = 0; i < iters; i++) {                                                  \
        size_t b = (size_t)(i % nbuf) * (size_t)bytes + off;                                  \
        CALL(dest + b, src + b, len, (int)pe);                                                \
      }                                                                                       \
    }                                                                                         \
    nvshmem_quiet();                                                                          \
  }

// bw_DIR_{thread,warp,block}: NVSHMEM's OP in thread, warp and block scope.
#define BW_KERNELS(DIR, OP)                             \
  BW_KERNEL(bw_##DIR##_thread, 0, nvshmem_##OP)         \
  BW_KERNEL(bw_##DIR##_warp, 1, nvshmemx_##OP##_warp)   \
  BW_KERNEL(bw_##DIR##_block, 2, nvshmemx_##OP##_block)

BW_KERNELS(put, putmem)
BW_KERNELS(put_nbi, putmem_nbi)
BW_KERNELS(get, getmem)
BW_KERNELS(get_nbi, getmem_nbi)

// ---------------------------------------------------------------- direct-store puts

template <int SCOPE>
__device__ __forceinline__ void lane(size_t *l, size_t *lanes) {
  size_t t = threadIdx.x;
  if (SCOPE == 0) {
    *l = 0;
    *lanes = 1;
  } else if (SCOPE == 1) {
    *l = t % 32;
    *lanes = 32;
  } else {
    *l = t;
    *lanes = blockDim.x;
  }
}

__device__ __forceinline__ void copy16(uint8_t *dst, const uint8_t *src, size_t len, size_t l,
                                       size_t lanes) {
  size_t n = len / 16;
  int4 *d = (int4 *)dst;
  const int4 *s = (const int4 *)src;
  for (size_t j = l; j < n; j += lanes) d[j] = s[j];
  for (size_t k = n * 16 + l; k < len; k += lanes) dst[k] = src[k];
}

#define P2P_KERNEL(NAME, SCOPE, FALLBACK)                                                  \
  KERNEL NAME(uint8_t *dest, const uint8_t *src, uint64_t bytes, uint32_t pe, uint64_t iters, \
              uint64_t nbuf) {                                                             \
    size_t a, na, l, lanes, off, len;                                                      \
    actor<SCOPE>(&a, &na);                                                                 \
    lane<SCOPE>(&l, &lanes);                                                               \
    split<16>((size_t)bytes, na, a, &off, &len);                                           \
    uint8_t *direct = (uint8_t *)nvshmem_ptr(dest, (int)pe);                               \
    if (len > 0) {                                                                         \
      for (uint64_t i = 0; i < iters; i++) {                                               \
        size_t b = (size_t)(i % nbuf) * (size_t)bytes + off;                               \
        if (direct != nullptr)                                                             \
          copy16(direct + b, src + b, len, l, lanes);                                      \
        else                                                                               \
          FALLBACK(dest + b, src + b, len, (int)pe);                                       \
      }                                                                                    \
    }                                                                                      \
    nvshmem_quiet();                                                                       \
  }

P2P_KERNEL(bw_put_p2p_thread, 0, nvshmem_putmem)
P2P_KERNEL(bw_put_p2p_warp, 1, nvshmemx_putmem_warp)
P2P_KERNEL(bw_put_p2p_block, 2, nvshmemx_putmem_block)

// ---------------------------------------------------------------- atomics
// A chain of `iters` atomics on the word `d` of PE `pe`, returning what goes
// to `out`. A latency kernel runs it on one thread on `dest`; a throughput
// kernel on every thread `t` of the grid on `dest + t`.

__device__ __forceinline__ uint64_t fetch_add_chain(uint64_t *d, int pe, uint64_t iters) {
  uint64_t acc = 0;
  for (uint64_t i = 0; i < iters; i++) acc += nvshmem_uint64_atomic_fetch_add(d, 1, pe);
  return acc;
}

template <bool QUIET_EACH>
__device__ __forceinline__ uint64_t add_chain(uint64_t *d, int pe, uint64_t iters) {
  for (uint64_t i = 0; i < iters; i++) {
    nvshmem_uint64_atomic_add(d, 1, pe);
    if (QUIET_EACH) nvshmem_quiet();
  }
  if (!QUIET_EACH) nvshmem_quiet();
  return iters;
}

__device__ __forceinline__ uint64_t compare_swap_chain(uint64_t *d, int pe, uint64_t iters) {
  uint64_t cur = 0;
  for (uint64_t i = 0; i < iters; i++) {
    uint64_t old = nvshmem_uint64_atomic_compare_swap(d, cur, cur + 1, pe);
    cur = old == cur ? cur + 1 : old;
  }
  return cur;
}

__device__ __forceinline__ uint64_t swap_chain(uint64_t *d, int pe, uint64_t iters) {
  uint64_t cur = 0;
  for (uint64_t i = 0; i < iters; i++) cur = nvshmem_uint64_atomic_swap(d, cur + 1, pe) + 1;
  return cur;
}

#define AMO_KERNELS(LAT, LAT_CHAIN, TPUT, TPUT_CHAIN)                                         \
  KERNEL LAT(uint64_t *dest, uint32_t pe, uint64_t iters, uint64_t *out) {                    \
    *out = LAT_CHAIN(dest, (int)pe, iters);                                                   \
  }                                                                                           \
  KERNEL TPUT(uint64_t *dest, uint32_t pe, uint64_t iters, uint64_t *out) {                   \
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;                                 \
    out[t] = TPUT_CHAIN(dest + t, (int)pe, iters);                                            \
  }

AMO_KERNELS(lat_amo_fetch_add, fetch_add_chain, tput_amo_fetch_add, fetch_add_chain)
AMO_KERNELS(lat_amo_add, add_chain<true>, tput_amo_add, add_chain<false>)
AMO_KERNELS(lat_amo_compare_swap, compare_swap_chain, tput_amo_compare_swap, compare_swap_chain)
AMO_KERNELS(lat_amo_swap, swap_chain, tput_amo_swap, swap_chain)

// ---------------------------------------------------------------- all-reduce
// The allreduce example's two kernels, line for line.

#define UNROLL 4

__device__ __forceinline__ void announce(uint64_t *words, uint64_t epoch) {
  uint32_t me = nvshmem_my_pe(), np = nvshmem_n_pes();
  __threadfence_system();
  __syncthreads();
  uint64_t *row = words + (size_t)blockIdx.x * np;
  for (uint32_t j = threadIdx.x; j < np; j += blockDim.x)
    nvshmemx_signal_op(row + me, epoch, NVSHMEM_SIGNAL_SET, (int)j);  // own word too: the host checks it
}

__device__ __forceinline__ void await_all(uint64_t *words, uint64_t epoch) {
  uint32_t me = nvshmem_my_pe(), np = nvshmem_n_pes();
  uint64_t *row = words + (size_t)blockIdx.x * np;
  for (uint32_t j = threadIdx.x; j < np; j += blockDim.x)
    if (j != me) nvshmem_signal_wait_until(row + j, NVSHMEM_CMP_GE, epoch);
  __threadfence_system();
  __syncthreads();
}

__device__ __forceinline__ void complete_signals() {
  if (threadIdx.x < (uint32_t)nvshmem_n_pes()) nvshmem_quiet();
}

__device__ __forceinline__ const float *source_tile(float *buf, size_t t0, size_t tlen, int pe,
                                                    float *scratch) {
  float *at = buf + t0;
  float *p = (float *)nvshmem_ptr(at, pe);
  if (p != nullptr) return p;
  size_t tile = (size_t)blockDim.x * UNROLL * 4;
  float *mine = scratch + (size_t)blockIdx.x * tile;
  __syncthreads();
  nvshmemx_float_get_block(mine, at, tlen, pe);
  __syncthreads();
  return mine;
}

// A tile's sums: UNROLL float4s per thread and one float of the tail.
struct TileSum {
  float4 v[UNROLL];
  float tail;
};

__device__ __forceinline__ TileSum sum_tile(float *buf, size_t t0, size_t tlen, float *scratch) {
  TileSum acc;
  size_t tid = threadIdx.x, bdim = blockDim.x;
  size_t vecs = tlen / 4, tail = tlen % 4;
#pragma unroll
  for (int u = 0; u < UNROLL; u++) acc.v[u] = make_float4(0.f, 0.f, 0.f, 0.f);
  acc.tail = 0.f;
  int np = nvshmem_n_pes();
  for (int j = 0; j < np; j++) {
    const float *src = source_tile(buf, t0, tlen, j, scratch);
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
      size_t v = u * bdim + tid;
      if (v < vecs) {
        float4 x = ((const float4 *)src)[v];
        acc.v[u].x += x.x;
        acc.v[u].y += x.y;
        acc.v[u].z += x.z;
        acc.v[u].w += x.w;
      }
    }
    if (tid < tail) acc.tail += src[vecs * 4 + tid];
  }
  return acc;
}

__device__ __forceinline__ void store_tile(float *dst, size_t tlen, const TileSum &acc) {
  size_t tid = threadIdx.x, bdim = blockDim.x;
  size_t vecs = tlen / 4, tail = tlen % 4;
#pragma unroll
  for (int u = 0; u < UNROLL; u++) {
    size_t v = u * bdim + tid;
    if (v < vecs) ((float4 *)dst)[v] = acc.v[u];
  }
  if (tid < tail) dst[vecs * 4 + tid] = acc.tail;
}

__device__ __forceinline__ void copy_block(float *dst, const float *src, size_t len) {
  size_t tid = threadIdx.x, bdim = blockDim.x, vecs = len / 4;
  for (size_t v = tid; v < vecs; v += bdim) ((float4 *)dst)[v] = ((const float4 *)src)[v];
  if (tid < len % 4) dst[vecs * 4 + tid] = src[vecs * 4 + tid];
}

KERNEL allreduce_oneshot(float *data, float *stage, float *scratch, uint64_t *ready, uint64_t n,
                         uint64_t epoch) {
  size_t s, len;
  split<4>((size_t)n, gridDim.x, blockIdx.x, &s, &len);
  copy_block(stage + s, data + s, len);
  announce(ready, epoch);
  await_all(ready, epoch);
  size_t tile = (size_t)blockDim.x * UNROLL * 4;
  for (size_t t0 = s; t0 < s + len; t0 += tile) {
    size_t tlen = tile < s + len - t0 ? tile : s + len - t0;
    TileSum acc = sum_tile(stage, t0, tlen, scratch);
    store_tile(data + t0, tlen, acc);
  }
  complete_signals();
}

KERNEL allreduce_rs_ag(float *data, float *scratch, uint64_t *ready, uint64_t *done, uint64_t n,
                       uint64_t epoch) {
  int me = nvshmem_my_pe(), np = nvshmem_n_pes();
  size_t shard, shard_len, sub, len;
  split<4>((size_t)n, np, me, &shard, &shard_len);
  split<4>(shard_len, gridDim.x, blockIdx.x, &sub, &len);
  size_t s = shard + sub;
  announce(ready, epoch);
  await_all(ready, epoch);
  size_t tile = (size_t)blockDim.x * UNROLL * 4;
  bool indirect = false;
  for (size_t t0 = s; t0 < s + len; t0 += tile) {
    size_t tlen = tile < s + len - t0 ? tile : s + len - t0;
    TileSum acc = sum_tile(data, t0, tlen, scratch);
    store_tile(data + t0, tlen, acc);
    for (int j = 0; j < np; j++) {
      if (j == me) continue;
      float *at = data + t0;
      float *p = (float *)nvshmem_ptr(at, j);
      if (p != nullptr) {
        store_tile(p, tlen, acc);
      } else {
        indirect = true;
        __threadfence_system();
        __syncthreads();
        nvshmemx_float_put_nbi_block(at, at, tlen, j);
      }
    }
  }
  if (indirect) {
    __syncthreads();
    if (threadIdx.x == 0) nvshmem_quiet();
  }
  announce(done, epoch);
  await_all(done, epoch);
  complete_signals();
}
