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
    std::printf("    /// `NVSHMEM_STATUS_IS_INITIALIZED`.\n");
    std::printf("    pub const STATUS_IS_INITIALIZED: i32 = %d;\n", (int)NVSHMEM_STATUS_IS_INITIALIZED);
    std::printf("    /// `NVSHMEM_STATUS_LIMITED_MPG`.\n");
    std::printf("    pub const STATUS_LIMITED_MPG: i32 = %d;\n", (int)NVSHMEM_STATUS_LIMITED_MPG);
    std::printf("    /// The bytes of `nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;`\n");
    std::printf("    /// (padding zeroed).\n");
    std::printf("    pub const INIT_ATTR_INITIALIZER_BYTES: [u8; %zu] = [", sizeof(kInitAttr));
    const unsigned char *bytes = reinterpret_cast<const unsigned char *>(&kInitAttr);
    for (size_t i = 0; i < sizeof(kInitAttr); i++) {
        std::printf("%s%s%u", i ? "," : "", i % 16 ? " " : "\n        ", bytes[i]);
    }
    std::printf(",\n    ];\n}\n\n");
    std::printf("/// NVSHMEM %d.%d.%d's row of [`crate::sys::vendor::BINDINGS`].\n",
                NVSHMEM_VENDOR_MAJOR_VERSION, NVSHMEM_VENDOR_MINOR_VERSION,
                NVSHMEM_VENDOR_PATCH_VERSION);
    std::printf("pub const BINDINGS: crate::sys::VersionBindings = crate::sys::VersionBindings {\n");
    std::printf("    version: nvshmem_types::Version::new(%d, %d, %d),\n",
                NVSHMEM_VENDOR_MAJOR_VERSION, NVSHMEM_VENDOR_MINOR_VERSION,
                NVSHMEM_VENDOR_PATCH_VERSION);
    std::printf("    init_attr_initializer: &header::INIT_ATTR_INITIALIZER_BYTES,\n");
    std::printf("};\n");
    return 0;
}
