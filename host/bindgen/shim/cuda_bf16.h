/* Stand-in for CUDA's cuda_bf16.h (see cuda.h): same size and alignment. */
#pragma once
typedef struct { unsigned short x; } __nv_bfloat16;
