// The C++ side of `cargo xtask init-cost`: NVSHMEM initialized the ordinary
// C++ way (a CUDA context, then nvshmemx_init_attr with the default
// bootstrap: a PMI singleton at 1 PE, as `Nvshmem::init` without a launcher),
// then finalized; one INIT line with where the time went, the same fields as
// `runtime_costs --init-only` prints.
//
//   init [BYTES]   # the symmetric heap size (NVSHMEM_SYMMETRIC_SIZE); default: NVSHMEM's
//
// The host library is linked, so the dynamic loader maps it before main
// (dlopen_ms is 0 here; the caller's wall clock counts it).
#include <cuda.h>
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

using Clock = std::chrono::steady_clock;

static double ms(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

int main(int argc, char** argv) {
    Clock::time_point t0 = Clock::now();
    const char* heap = argc > 1 ? argv[1] : nullptr;
    if (heap) setenv("NVSHMEM_SYMMETRIC_SIZE", heap, 1);
    if (cuInit(0) != CUDA_SUCCESS) {
        fprintf(stderr, "init: cuInit failed\n");
        return 1;
    }
    Clock::time_point t1 = Clock::now();
    if (cudaSetDevice(0) != cudaSuccess || cudaFree(0) != cudaSuccess) {
        fprintf(stderr, "init: no CUDA context on GPU 0\n");
        return 1;
    }
    Clock::time_point t2 = Clock::now();
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    nvshmemx_init_attr(0, &attr);  // exits on failure
    Clock::time_point t3 = Clock::now();
    nvshmem_finalize();
    Clock::time_point t4 = Clock::now();
    printf("INIT cpp heap=%s total_ms=%.1f dlopen_ms=0.0 driver_ms=%.1f context_ms=%.1f "
           "nvshmem_init_ms=%.1f finalize_ms=%.1f\n",
           heap ? heap : "default", ms(t0, t3), ms(t0, t1), ms(t1, t2), ms(t2, t3), ms(t3, t4));
    return 0;
}
