// C++ drop-in host: Rust NVSHMEM kernels driven from an ordinary CUDA C++
// NVSHMEM program.
//
// It includes the C header that nvshmem-builder writes beside each PTX
// (<out>/nvshmem-<version>/<arch>/<crate>.h) of one kernel crate, chosen
// when it is built:
//
//   nvcc ... -DCPP_HOST_HEADER='"ring-kernels.h"' -DCPP_HOST_KERNELS=RING_KERNELS
//
// (the header's file name and its macro prefix: the crate name in upper
// case, '-' as '_'; default ag-gemm-kernels.h and AG_GEMM_KERNELS). For any
// crate it initializes NVSHMEM the ordinary C++ way, checks that the host
// library is the NVSHMEM version the PTX was linked for, loads the crate's
// cubin (or PTX) with the driver API, registers the module with
// nvshmemx_cumodule_init, and checks that the module holds the header's
// kernels. For two crates it also launches kernels through the header's
// launch helpers and checks the results:
//
//   - ag-gemm-kernels (examples/ag_gemm/kernel): the unfused all-gather +
//     GEMM, the fused staged kernel and, where every peer is P2P-reachable,
//     the fused direct kernel, each against a full CPU GEMM;
//   - ring-kernels (examples/ring/kernel): a token passed around every PE
//     with put-with-signal.
//
// Bootstrap: under nvshmem-run (NVSHMEM_RUN_RANK, NVSHMEM_RUN_NRANKS,
// NVSHMEM_RUN_UNIQUEID set) it uses the unique id the launcher made
// (nvshmemx_set_attr_uniqueid_args + nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID));
// otherwise plain nvshmem_init() (one PE as a PMI singleton, or N under a
// PMI launcher). It calls cudaSetDevice(NVSHMEM_RUN_GPU) first.
//
// Usage: cpp_host [PTX_DIR] [--m-per-pe ROWS] [--k K] [--n N]
// PTX_DIR defaults to $NVSHMEM_RS_PTX_DIR, else the folder given at build time
// with -DNVSHMEM_RS_PTX_DIR=..., else ../../ptx/nvshmem-3.4.5/sm_90.
// Build and run: `cargo xtask cpp-host` (README.md has the nvcc commands).
// Prints "cpp_host PE i/n: PASS" or "FAIL" per PE; exit status 1 on FAIL.

#include <cuda.h>
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#ifndef CPP_HOST_HEADER
#define CPP_HOST_HEADER "ag-gemm-kernels.h"
#define CPP_HOST_KERNELS AG_GEMM_KERNELS
#endif
#include CPP_HOST_HEADER

// KERNELS(_PTX_FILE) is the chosen header's <PREFIX>_PTX_FILE, and so on.
#define CPP_HOST_CAT2(a, b) a##b
#define CPP_HOST_CAT(a, b) CPP_HOST_CAT2(a, b)
#define KERNELS(suffix) CPP_HOST_CAT(CPP_HOST_KERNELS, suffix)

#ifndef NVSHMEM_RS_PTX_DIR
#define NVSHMEM_RS_PTX_DIR "../../ptx/nvshmem-3.4.5/sm_90"
#endif

#define CU_CHECK(call)                                                                     \
    do {                                                                                   \
        CUresult r_ = (call);                                                              \
        if (r_ != CUDA_SUCCESS) {                                                          \
            const char* s_ = nullptr;                                                      \
            cuGetErrorString(r_, &s_);                                                     \
            fprintf(stderr, "cpp_host: %s failed: %s (%d) at %s:%d\n", #call,              \
                    s_ ? s_ : "?", (int)r_, __FILE__, __LINE__);                           \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

#define CUDA_CHECK(call)                                                                   \
    do {                                                                                   \
        cudaError_t e_ = (call);                                                           \
        if (e_ != cudaSuccess) {                                                           \
            fprintf(stderr, "cpp_host: %s failed: %s at %s:%d\n", #call,                   \
                    cudaGetErrorString(e_), __FILE__, __LINE__);                           \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

static long env_int(const char* name, long fallback) {
    const char* v = getenv(name);
    if (!v || !*v) return fallback;
    char* end = nullptr;
    long x = strtol(v, &end, 10);
    if (*end != '\0' || x < 0) {
        fprintf(stderr, "cpp_host: %s=%s is not a non-negative integer\n", name, v);
        exit(2);
    }
    return x;
}

// NVSHMEM_RUN_UNIQUEID: the launcher's nvshmemx_uniqueid_t, 256 lowercase hex digits.
static bool parse_uniqueid(const char* hex, nvshmemx_uniqueid_t* id) {
    static_assert(sizeof(nvshmemx_uniqueid_t) == 128, "nvshmemx_uniqueid_t is 128 bytes");
    if (strlen(hex) != 2 * sizeof(*id)) return false;
    unsigned char* out = reinterpret_cast<unsigned char*>(id);
    for (size_t i = 0; i < sizeof(*id); i++) {
        unsigned v = 0;
        for (int j = 0; j < 2; j++) {
            char c = hex[2 * i + j];
            v <<= 4;
            if (c >= '0' && c <= '9') v |= c - '0';
            else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
            else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
            else return false;
        }
        out[i] = (unsigned char)v;
    }
    return true;
}

// Loads the crate's cubin from <dir> if it loads on this GPU, else its PTX (JIT).
// The cubin is the PTX file's name with .cubin (the builder writes both).
static CUmodule load_module(const std::string& dir, const char* ptx) {
    CUmodule mod = nullptr;
    std::string ptx_path = dir + "/" + ptx;
    std::string cubin_path = ptx_path.substr(0, ptx_path.size() - 4) + ".cubin";
    if (cuModuleLoad(&mod, cubin_path.c_str()) == CUDA_SUCCESS) return mod;
    CUresult r = cuModuleLoad(&mod, ptx_path.c_str());
    if (r != CUDA_SUCCESS) {
        const char* s = nullptr;
        cuGetErrorString(r, &s);
        fprintf(stderr,
                "cpp_host: cannot load %s: %s. Build the kernels first (cargo xtask cpp-host in "
                "the repository), or pass their folder as the first argument.\n",
                ptx_path.c_str(), s ? s : "?");
        exit(1);
    }
    return mod;
}

// Every kernel of the module, with its registers; false when the module does not
// hold the header's kernel count.
static bool list_kernels(CUmodule mod, int me) {
    unsigned count = 0;
    CU_CHECK(cuModuleGetFunctionCount(&count, mod));
    std::vector<CUfunction> fns(count);
    CU_CHECK(cuModuleEnumerateFunctions(fns.data(), count, mod));
    for (CUfunction f : fns) {
        const char* name = nullptr;
        int regs = 0;
        CU_CHECK(cuFuncGetName(&name, f));
        CU_CHECK(cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f));
        if (me == 0) printf("cpp_host: kernel %s, %d registers\n", name, regs);
    }
    const bool ok = count == (unsigned)KERNELS(_NUM_KERNELS);
    if (me == 0)
        printf("cpp_host PE %d: %u kernels in the module, %d in %s: %s\n", me, count,
               KERNELS(_NUM_KERNELS), CPP_HOST_HEADER, ok ? "ok" : "MISMATCH");
    return ok;
}

struct Opts {
    std::string dir;
    size_t m_loc = 256, k = 256, n = 256;
};

static Opts parse_args(int argc, char** argv) {
    Opts o;
    const char* env_dir = getenv("NVSHMEM_RS_PTX_DIR");
    o.dir = env_dir && *env_dir ? env_dir : NVSHMEM_RS_PTX_DIR;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto value = [&](size_t multiple) -> size_t {
            if (i + 1 >= argc) {
                fprintf(stderr, "cpp_host: %s needs a value\n", a.c_str());
                exit(2);
            }
            long v = strtol(argv[++i], nullptr, 10);
            if (v <= 0 || v % (long)multiple != 0) {
                fprintf(stderr, "cpp_host: %s must be a positive multiple of %zu\n", a.c_str(),
                        multiple);
                exit(2);
            }
            return (size_t)v;
        };
        if (a == "--m-per-pe") o.m_loc = value(128);
        else if (a == "--k") o.k = value(8);
        else if (a == "--n") o.n = value(128);
        else if (a == "-h" || a == "--help") {
            printf("Usage: cpp_host [PTX_DIR] [--m-per-pe ROWS (x128)] [--k K (x8)] [--n N (x128)]\n"
                   "(the sizes are those of the ag-gemm-kernels check)\n");
            exit(0);
        } else if (!a.empty() && a[0] != '-') o.dir = a;
        else {
            fprintf(stderr, "cpp_host: unknown argument %s\n", a.c_str());
            exit(2);
        }
    }
    return o;
}

#if defined(AG_GEMM_KERNELS_KERNEL_AG_GEMM_FUSED_P2P)
// Must match examples/ag_gemm/kernel/src/lib.rs (BM, BN, BK, THREADS, SMEM_BYTES, AG_ROWS).
static const unsigned BM = 128, BN = 128, BK = 8, THREADS = 256, AG_ROWS = 8;
static const unsigned SMEM_BYTES = 2 * (BK * BM + BK * BN) * 4 + 16;

// The same inputs as examples/ag_gemm/main.rs.
static uint64_t splitmix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}
static float unit(uint64_t h) { return (float)((int32_t)(h >> 40) - (1 << 23)) / (float)(1 << 23); }
static float a_val(size_t row, size_t col) { return unit(splitmix(((uint64_t)row << 32) | col)); }
static float b_val(int pe, size_t row, size_t col) {
    return unit(splitmix(splitmix(0xb0b00000ull + pe) ^ ((uint64_t)row << 32) ^ col));
}

// Max |got - want| over C, and whether every entry is within k * eps * sum|a*b|.
static bool check_c(const std::vector<float>& got, const std::vector<double>& want,
                    const std::vector<double>& mag, size_t k, double* max_err) {
    bool ok = true;
    double worst = 0;
    for (size_t i = 0; i < got.size(); i++) {
        double err = std::fabs((double)got[i] - want[i]);
        double tol = (double)k * (double)FLT_EPSILON * mag[i] + 1e-30;
        if (!(err <= tol)) ok = false;  // NaN fails
        worst = std::isnan(err) ? NAN : std::max(worst, err);
    }
    *max_err = worst;
    return ok;
}

// All-gather + GEMM three ways, each C against a full f64 CPU GEMM.
static bool ag_gemm(CUmodule mod, const Opts& o, int gpu, cudaStream_t stream) {
    const int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    CUfunction f_ag, f_gemm, f_fused, f_p2p;
    CU_CHECK(cuModuleGetFunction(&f_ag, mod, AG_GEMM_KERNELS_KERNEL_AG_ALLGATHER));
    CU_CHECK(cuModuleGetFunction(&f_gemm, mod, AG_GEMM_KERNELS_KERNEL_GEMM));
    CU_CHECK(cuModuleGetFunction(&f_fused, mod, AG_GEMM_KERNELS_KERNEL_AG_GEMM_FUSED));
    CU_CHECK(cuModuleGetFunction(&f_p2p, mod, AG_GEMM_KERNELS_KERNEL_AG_GEMM_FUSED_P2P));
    bool ok = true;

    const size_t m_loc = o.m_loc, k = o.k, n = o.n, m = m_loc * npes;
    std::vector<float> a_host(m_loc * k), b_host(k * n);
    for (size_t i = 0; i < m_loc * k; i++) a_host[i] = a_val(me * m_loc + i / k, i % k);
    for (size_t i = 0; i < k * n; i++) b_host[i] = b_val(me, i / n, i % n);

    float* a_shard = (float*)nvshmem_malloc(m_loc * k * sizeof(float));
    float* a_full = (float*)nvshmem_malloc(m * k * sizeof(float));
    uint32_t* flags = (uint32_t*)nvshmem_malloc((m / BM) * sizeof(uint32_t));
    float* b = (float*)nvshmem_malloc(k * n * sizeof(float));
    float* c = (float*)nvshmem_malloc(m * n * sizeof(float));
    if (!a_shard || !a_full || !flags || !b || !c) {
        fprintf(stderr, "cpp_host: nvshmem_malloc failed (raise NVSHMEM_SYMMETRIC_SIZE)\n");
        exit(1);
    }
    CUDA_CHECK(cudaMemcpy(a_shard, a_host.data(), a_host.size() * 4, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(b, b_host.data(), b_host.size() * 4, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(flags, 0, (m / BM) * sizeof(uint32_t)));
    nvshmem_barrier_all();  // every shard is in place before anyone reads it

    // CPU reference for all of C (f64), with the error bound's magnitudes.
    std::vector<double> want(m * n, 0.0), mag(m * n, 0.0);
    {
        std::vector<float> a_row(k);
        for (size_t i = 0; i < m; i++) {
            for (size_t kk = 0; kk < k; kk++) a_row[kk] = a_val(i, kk);
            for (size_t kk = 0; kk < k; kk++) {
                double x = a_row[kk];
                const float* brow = &b_host[kk * n];
                for (size_t j = 0; j < n; j++) {
                    double p = x * brow[j];
                    want[i * n + j] += p;
                    mag[i * n + j] += std::fabs(p);
                }
            }
        }
    }

    int sms = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, gpu));
    const unsigned ag_blocks = (unsigned)std::min<size_t>(m / AG_ROWS, 4 * (size_t)sms);
    const nvshmem_rs_dim3_t block = {THREADS, 1, 1};
    const nvshmem_rs_dim3_t gemm_grid = {(unsigned)(n / BN), (unsigned)(m / BM), 1};
    const nvshmem_rs_dim3_t fused_grid = {(unsigned)((m / BM) * (n / BN)), 1, 1};
    bool p2p = true;
    for (int q = 0; q < npes; q++) p2p = p2p && nvshmem_ptr(a_shard, q) != nullptr;
    uint32_t epoch = 0;

    const float nan = NAN;
    uint32_t nan_bits;
    memcpy(&nan_bits, &nan, 4);
    std::vector<float> got(m * n);
    for (int variant = 0; variant < 3; variant++) {
        if (variant == 2 && !p2p) {
            printf("cpp_host PE %d: ag_gemm_fused_p2p skipped: not every peer is P2P-reachable\n", me);
            continue;
        }
        // NaN staging and output: a tile used before its data arrived shows.
        CU_CHECK(cuMemsetD32Async((CUdeviceptr)a_full, nan_bits, m * k, stream));
        CU_CHECK(cuMemsetD32Async((CUdeviceptr)c, nan_bits, m * n, stream));
        nvshmemx_barrier_all_on_stream(stream);
        const char* name = nullptr;
        if (variant == 0) {
            name = "ag_allgather + gemm";
            CU_CHECK(ag_gemm_kernels_launch_ag_allgather(f_ag, nvshmem_rs_dim3_t{ag_blocks, 1, 1}, block, 0,
                                                         stream, a_shard, a_full, (uint32_t)m_loc,
                                                         (uint32_t)k));
            CU_CHECK(ag_gemm_kernels_launch_gemm(f_gemm, gemm_grid, block, SMEM_BYTES, stream,
                                                 a_full, b, c, (uint32_t)n, (uint32_t)k));
        } else if (variant == 1) {
            name = "ag_gemm_fused";
            CU_CHECK(ag_gemm_kernels_launch_ag_gemm_fused(f_fused, fused_grid, block, SMEM_BYTES,
                                                          stream, a_shard, a_full, flags, b, c,
                                                          (uint32_t)m_loc, (uint32_t)n,
                                                          (uint32_t)k, ++epoch));
        } else {
            name = "ag_gemm_fused_p2p";
            CU_CHECK(ag_gemm_kernels_launch_ag_gemm_fused_p2p(f_p2p, fused_grid, block, SMEM_BYTES,
                                                              stream, a_shard, b, c,
                                                              (uint32_t)m_loc, (uint32_t)n,
                                                              (uint32_t)k));
        }
        CUDA_CHECK(cudaStreamSynchronize(stream));
        CUDA_CHECK(cudaMemcpy(got.data(), c, m * n * 4, cudaMemcpyDeviceToHost));
        double err = 0;
        bool pass = check_c(got, want, mag, k, &err);
        ok = ok && pass;
        printf("cpp_host PE %d: %s, M=%zu k=%zu n=%zu: max abs err vs CPU %.3e: %s\n", me, name, m,
               k, n, err, pass ? "ok" : "MISMATCH");
    }

    nvshmem_barrier_all();
    nvshmem_free(c);
    nvshmem_free(b);
    nvshmem_free(flags);
    nvshmem_free(a_full);
    nvshmem_free(a_shard);
    return ok;
}
#endif

#if defined(RING_KERNELS_KERNEL_RING_PASS)
// A token passed around every PE, `laps` times.
static bool ring(CUmodule mod, cudaStream_t stream) {
    const int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    bool ok = true;
    CUfunction f_ring;
    CU_CHECK(cuModuleGetFunction(&f_ring, mod, RING_KERNELS_KERNEL_RING_PASS));
    uint64_t* words = (uint64_t*)nvshmem_calloc(4, sizeof(uint64_t));  // token, send, signal, out
    const uint64_t laps = 100;
    nvshmem_barrier_all();
    CU_CHECK(ring_kernels_launch_ring_pass(f_ring, nvshmem_rs_dim3_t{1, 1, 1}, nvshmem_rs_dim3_t{1, 1, 1}, 0, stream,
                                           words, words + 1, words + 2, laps, words + 3));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    nvshmem_barrier_all();
    if (me == 0) {
        uint64_t token = 0;
        CUDA_CHECK(cudaMemcpy(&token, words + 3, 8, cudaMemcpyDeviceToHost));
        bool pass = token == laps * (uint64_t)npes;
        ok = ok && pass;
        printf("cpp_host PE %d: ring_pass, %llu laps: token %llu (expected %llu): %s\n", me,
               (unsigned long long)laps, (unsigned long long)token,
               (unsigned long long)(laps * npes), pass ? "ok" : "MISMATCH");
    }
    nvshmem_free(words);
    return ok;
}
#endif

int main(int argc, char** argv) {
    Opts o = parse_args(argc, argv);

    // 1. The GPU first: NVSHMEM initializes on the current device.
    int gpu = (int)env_int("NVSHMEM_RUN_GPU", 0);
    CUDA_CHECK(cudaSetDevice(gpu));
    CUDA_CHECK(cudaFree(0));  // create the primary context, current for the driver API too

    // 2. NVSHMEM, the ordinary way: the launcher's unique id, else nvshmem_init().
    const char* uid_hex = getenv("NVSHMEM_RUN_UNIQUEID");
    static nvshmemx_uniqueid_t uid;  // must outlive init: attr points to it
    if (uid_hex && *uid_hex) {
        long rank = env_int("NVSHMEM_RUN_RANK", -1), nranks = env_int("NVSHMEM_RUN_NRANKS", -1);
        if (rank < 0 || nranks <= 0 || rank >= nranks || !parse_uniqueid(uid_hex, &uid)) {
            fprintf(stderr,
                    "cpp_host: NVSHMEM_RUN_UNIQUEID needs NVSHMEM_RUN_RANK < NVSHMEM_RUN_NRANKS and "
                    "256 hex digits (start the PEs with nvshmem-run)\n");
            return 2;
        }
        nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
        if (nvshmemx_set_attr_uniqueid_args((int)rank, (int)nranks, &uid, &attr) != 0) {
            fprintf(stderr, "cpp_host: nvshmemx_set_attr_uniqueid_args failed\n");
            return 1;
        }
        nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr);  // exits on failure
    } else {
        nvshmem_init();  // exits on failure
    }
    const int me = nvshmem_my_pe(), npes = nvshmem_n_pes();

    // 3. The PTX must be linked against this NVSHMEM's version.
    int vmaj = 0, vmin = 0, vpatch = 0;
    nvshmemx_vendor_get_version_info(&vmaj, &vmin, &vpatch);
    if (vmaj != KERNELS(_NVSHMEM_VERSION_MAJOR) || vmin != KERNELS(_NVSHMEM_VERSION_MINOR) ||
        vpatch != KERNELS(_NVSHMEM_VERSION_PATCH)) {
        fprintf(stderr,
                "cpp_host: the kernels were linked against NVSHMEM %s, but this is NVSHMEM "
                "%d.%d.%d. Rebuild them against it (see README.md), in the repository:\n"
                "  NVSHMEM_HOME=/path/to/nvshmem cargo xtask cpp-host --build-only\n",
                KERNELS(_NVSHMEM_VERSION), vmaj, vmin, vpatch);
        nvshmem_finalize();
        return 1;
    }

    // 4. Load the Rust kernels and register them with NVSHMEM.
    CUmodule mod = load_module(o.dir, KERNELS(_PTX_FILE));
    if (nvshmemx_cumodule_init(mod) != 0) {
        fprintf(stderr, "cpp_host: nvshmemx_cumodule_init failed\n");
        return 1;
    }
    bool ok = list_kernels(mod, me);

    // 5. What this crate's kernels compute, for the crates this program knows.
    cudaStream_t stream;
    CUDA_CHECK(cudaStreamCreate(&stream));
#if defined(AG_GEMM_KERNELS_KERNEL_AG_GEMM_FUSED_P2P)
    ok = ag_gemm(mod, o, gpu, stream) && ok;
#elif defined(RING_KERNELS_KERNEL_RING_PASS)
    ok = ring(mod, stream) && ok;
#else
    if (me == 0)
        printf("cpp_host: no launch check for %s (only ag-gemm-kernels and ring-kernels have one)\n",
               CPP_HOST_HEADER);
#endif

    printf("cpp_host PE %d/%d: %s\n", me, npes, ok ? "PASS" : "FAIL");

    nvshmem_barrier_all();
    CUDA_CHECK(cudaStreamDestroy(stream));
    nvshmemx_cumodule_finalize(mod);
    CU_CHECK(cuModuleUnload(mod));
    nvshmem_finalize();
    return ok ? 0 : 1;
}
