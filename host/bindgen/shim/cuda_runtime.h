/* Stand-in for CUDA's cuda_runtime.h (see cuda.h). Device-only declarations in
 * NVSHMEM's headers become plain prototypes, which the allowlist leaves out. */
#pragma once
#include "cuda.h"
#define CUDART_VERSION 13000
#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
typedef struct CUstream_st *cudaStream_t;
typedef struct { unsigned int x, y, z; } dim3;
typedef struct { float x, y; } float2;
typedef struct { double x, y; } double2;
