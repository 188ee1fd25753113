/* Stand-in for CUDA's cuda.h, used only to run bindgen on NVSHMEM's host
 * headers (gen-bindings.sh). It declares the few handle types NVSHMEM's host
 * API names; the generated Rust replaces them with cudarc's identical types. */
#pragma once
typedef struct CUmod_st *CUmodule;
typedef struct CUlib_st *CUlibrary;
typedef struct CUstream_st *CUstream;
#define CUDA_VERSION 13000
