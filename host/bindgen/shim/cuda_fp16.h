/* Stand-in for CUDA's cuda_fp16.h (see cuda.h): same size and alignment. */
#pragma once
typedef struct { unsigned short x; } __half;
typedef __half half;
