// Prints, as Rust, the values NVSHMEM's headers define that bindgen cannot
// carry over: struct sizes as the C++ compiler sees them, and the byte image
// of the NVSHMEMX_INIT_ATTR_INITIALIZER macro. gen-bindings.sh compiles it
// once per NVSHMEM version against that version's headers (with the shim).
#include <cstdio>
#include "nvshmem_host.h"

// Static storage is zero-initialized first (padding included), so the byte
// image below holds exactly what the macro sets and zeros elsewhere.
static const nvshmemx_init_attr_t kInitAttr = NVSHMEMX_INIT_ATTR_INITIALIZER;

int main() {
    std::printf("/// Values read from NVSHMEM %d.%d.%d's headers by `bindgen/header_values.cpp`.\n",
                NVSHMEM_VENDOR_MAJOR_VERSION, NVSHMEM_VENDOR_MINOR_VERSION,
                NVSHMEM_VENDOR_PATCH_VERSION);
    std::printf("pub mod header {\n");
    std::printf("    /// `NVSHMEM_VENDOR_{MAJOR,MINOR,PATCH}_VERSION`.\n");
    std::printf("    pub const VERSION: (i32, i32, i32) = (%d, %d, %d);\n",
                NVSHMEM_VENDOR_MAJOR_VERSION, NVSHMEM_VENDOR_MINOR_VERSION,
                NVSHMEM_VENDOR_PATCH_VERSION);
    std::printf("    /// `sizeof(nvshmemx_init_attr_t)`.\n");
    std::printf("    pub const INIT_ATTR_SIZE: usize = %zu;\n", sizeof(nvshmemx_init_attr_t));
    std::printf("    /// `sizeof(nvshmemx_init_args_t)`.\n");
    std::printf("    pub const INIT_ARGS_SIZE: usize = %zu;\n", sizeof(nvshmemx_init_args_t));
    std::printf("    /// `sizeof(nvshmemx_uniqueid_t)`.\n");
    std::printf("    pub const UNIQUEID_SIZE: usize = %zu;\n", sizeof(nvshmemx_uniqueid_t));
    std::printf("    /// `sizeof(nvshmemx_uniqueid_args_t)`.\n");
    std::printf("    pub const UNIQUEID_ARGS_SIZE: usize = %zu;\n", sizeof(nvshmemx_uniqueid_args_t));
    std::printf("    /// `NVSHMEMX_INIT_WITH_UNIQUEID`.\n");
    std::printf("    pub const INIT_WITH_UNIQUEID: u32 = %u;\n", (unsigned)NVSHMEMX_INIT_WITH_UNIQUEID);
    std::printf("    /// The bytes of `nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;`\n");
    std::printf("    /// (padding zeroed).\n");
    std::printf("    pub const INIT_ATTR_INITIALIZER_BYTES: [u8; %zu] = [", sizeof(kInitAttr));
    const unsigned char *bytes = reinterpret_cast<const unsigned char *>(&kInitAttr);
    for (size_t i = 0; i < sizeof(kInitAttr); i++) {
        std::printf("%s%s%u", i ? "," : "", i % 16 ? " " : "\n        ", bytes[i]);
    }
    std::printf(",\n    ];\n}\n");
    return 0;
}
