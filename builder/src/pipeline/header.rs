//! The C header shipped beside each PTX, for C and CUDA C++ hosts.
//!
//! It compiles as C99, C11 and C++11 or newer (`-Wall -Werror`). Every
//! kernel parameter has a named C type: scalars and pointers map to
//! `<stdint.h>` types; a by-value `#[repr(C)]` struct becomes a `typedef`
//! with its fields (or, when a field has no C equivalent, an opaque one of
//! the right size and alignment), and `static_assert`s check its size and
//! alignment against the PTX. The launch helpers need `<cuda.h>`; defining
//! `NVSHMEM_RS_NO_LAUNCH_HELPERS` leaves them (and `<cuda.h>`) out.

use super::ptx::PtxParam;
use super::signature::{Sources, c_type};
use crate::manifest::{KernelInfo, Manifest, ParamKind};
use quote::ToTokens;
use std::fmt::Write;

/// One C struct typedef the header declares.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CStruct {
    /// The typedef name, such as `ring_kernels_params_t`.
    pub name: String,
    /// Its fields; `None` for an opaque byte array.
    pub fields: Option<Vec<CField>>,
    /// Size and alignment as the PTX declares them (checked in the header);
    /// unknown for a struct nested in another.
    pub layout: Option<(u32, u32)>,
}

/// A field of a [`CStruct`]: `c_type name[len]`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CField {
    pub c_type: String,
    pub name: String,
    pub len: Option<u64>,
}

/// The C types of one crate's kernel parameters.
pub(crate) struct CTypes<'a> {
    prefix: String,
    sources: &'a Sources,
    /// The typedefs, each after those it uses.
    pub structs: Vec<CStruct>,
}

/// The prefix of the names in a kernel crate's C header: the crate name as
/// a C identifier, lower case (`ring-kernels` → `ring_kernels`, as in
/// `ring_kernels_launch_put`); its macros use it in upper case
/// (`RING_KERNELS_NUM_KERNELS`).
///
/// ```
/// assert_eq!(nvshmem_builder::c_prefix("ring-kernels"), "ring_kernels");
/// ```
pub fn c_prefix(crate_name: &str) -> String {
    crate_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect()
}

fn snake(ident: &str) -> String {
    let mut out = String::new();
    for (i, c) in ident.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

impl<'a> CTypes<'a> {
    pub(crate) fn new(crate_name: &str, sources: &'a Sources) -> Self {
        CTypes {
            prefix: c_prefix(crate_name),
            sources,
            structs: Vec::new(),
        }
    }

    /// The C type of parameter `name` of `kernel`, whose Rust type is `ty`
    /// (when the source was read) and PTX declaration `ptx`.
    pub(crate) fn param(
        &mut self,
        kernel: &str,
        name: &str,
        ty: Option<&syn::Type>,
        ptx: &PtxParam,
    ) -> String {
        if let Some(c) = ty.map(c_type).filter(|c| !c.is_empty()) {
            return c;
        }
        // A byte array (`.b8 name[N]`) is a struct by value, even of one byte.
        if ptx.ty != "b8" {
            return scalar_c_type(ptx);
        }
        if let Some(c) = ty.and_then(|t| self.named_struct(t, 0)) {
            if let Some(s) = self.structs.iter_mut().find(|s| s.name == c) {
                s.layout.get_or_insert((ptx.size, ptx.align));
            }
            return c;
        }
        if ptx.size == 1 {
            return scalar_c_type(ptx);
        }
        let opaque = format!("{}_{kernel}_{name}_t", self.prefix);
        if !self.structs.iter().any(|s| s.name == opaque) {
            self.structs.push(CStruct {
                name: opaque.clone(),
                fields: None,
                layout: Some((ptx.size, ptx.align)),
            });
        }
        opaque
    }

    /// The typedef for a `#[repr(C)]` struct of the source whose fields all
    /// have C types (declared first, with the structs it nests), else `None`.
    fn named_struct(&mut self, ty: &syn::Type, depth: u32) -> Option<String> {
        let syn::Type::Path(p) = ty else { return None };
        let last = p.path.segments.last()?;
        if !matches!(last.arguments, syn::PathArguments::None) || depth > 8 {
            return None;
        }
        let src = self.sources.struct_for(p)?;
        let ident = last.ident.to_string();
        let name = format!("{}_{}_t", self.prefix, snake(&ident));
        if self.structs.iter().any(|s| s.name == name) {
            return Some(name);
        }
        if src.fields.is_empty() {
            return None;
        }
        let mut fields = Vec::new();
        for (fname, fty) in &src.fields {
            let (c_type, len) = self.field(fty, depth)?;
            fields.push(CField {
                c_type,
                name: fname.clone(),
                len,
            });
        }
        self.structs.push(CStruct {
            name: name.clone(),
            fields: Some(fields),
            layout: None,
        });
        Some(name)
    }

    fn field(&mut self, ty: &syn::Type, depth: u32) -> Option<(String, Option<u64>)> {
        if let syn::Type::Array(a) = ty {
            let len: u64 = a.len.to_token_stream().to_string().parse().ok()?;
            let (elem, None) = self.field(&a.elem, depth)? else {
                return None;
            };
            return Some((elem, Some(len)));
        }
        let c = c_type(ty);
        if !c.is_empty() {
            return Some((c, None));
        }
        self.named_struct(ty, depth + 1).map(|n| (n, None))
    }
}

/// The C type of a scalar PTX parameter.
pub(crate) fn scalar_c_type(p: &PtxParam) -> String {
    match p.ty.as_str() {
        "u64" | "b64" => "uint64_t",
        "u32" | "b32" => "uint32_t",
        "s64" => "int64_t",
        "s32" => "int32_t",
        "f32" => "float",
        "f64" => "double",
        "u16" | "b16" => "uint16_t",
        "s16" => "int16_t",
        "s8" => "int8_t",
        _ => "uint8_t",
    }
    .into()
}

/// Macros every generated header shares (defined once per translation unit).
const COMMON: &str = r#"#ifndef NVSHMEM_RS_HEADER_COMMON
#define NVSHMEM_RS_HEADER_COMMON
/* Alignment and compile-time checks in C99, C11 and C++11. */
#if defined(__cplusplus)
#define NVSHMEM_RS_ALIGNAS(n) alignas(n)
#define NVSHMEM_RS_ALIGNOF(t) alignof(t)
#define NVSHMEM_RS_STATIC_ASSERT(id, cond) static_assert(cond, #id)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define NVSHMEM_RS_ALIGNAS(n) _Alignas(n)
#define NVSHMEM_RS_ALIGNOF(t) _Alignof(t)
#define NVSHMEM_RS_STATIC_ASSERT(id, cond) _Static_assert(cond, #id)
#else
#if defined(__GNUC__) || defined(__clang__)
#define NVSHMEM_RS_ALIGNAS(n) __attribute__((aligned(n)))
#define NVSHMEM_RS_ALIGNOF(t) __alignof__(t)
#else
#define NVSHMEM_RS_ALIGNAS(n)
#define NVSHMEM_RS_ALIGNOF(t) offsetof(struct { char c; t x; }, x)
#endif
#define NVSHMEM_RS_STATIC_ASSERT(id, cond) typedef char id##_check[(cond) ? 1 : -1]
#endif
#endif /* NVSHMEM_RS_HEADER_COMMON */
"#;

/// Renders `<crate>.h`: the NVSHMEM version and arch the PTX was linked for,
/// the parameter structs, every kernel's entry name and C parameters, and a
/// launch helper per kernel.
pub(crate) fn render(m: &Manifest, structs: &[CStruct]) -> String {
    let lower = c_prefix(&m.crate_name);
    let upper = lower.to_ascii_uppercase();
    let mut h = String::new();
    let v = m.nvshmem_version;
    let _ = writeln!(
        h,
        "/* Generated by nvshmem-builder from the Rust kernel crate `{crate_name}`. Do not edit.\n\
         \x20*\n\
         \x20* The PTX was linked with NVSHMEM {ver}'s device bitcode for {arch}. The host must run\n\
         \x20* the same NVSHMEM release, all three numbers: nvshmemx_cumodule_init() checks only the\n\
         \x20* major version, but the device state's layout changes between releases. Check it with\n\
         \x20*   int major, minor, patch; nvshmemx_vendor_get_version_info(&major, &minor, &patch);\n\
         \x20* against {upper}_NVSHMEM_VERSION_MAJOR/_MINOR/_PATCH. To use another NVSHMEM, rebuild\n\
         \x20* the PTX with nvshmem-builder against it (NVSHMEM_RS_NVSHMEM_VERSION, or NVSHMEM_HOME).\n\
         \x20*\n\
         \x20* Load the module, then call nvshmemx_cumodule_init(module) before any launch.\n\
         \x20* Parameters marked symmetric take memory from nvshmem_malloc (the same on every PE).\n\
         \x20* Kernels marked collective (<KERNEL>_COLLECTIVE 1) must be launched on every PE, with\n\
         \x20* every block co-resident (cuLaunchCooperativeKernel; a grid above what fits at once fails\n\
         \x20* with CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE); the launch helpers below do that. A\n\
         \x20* kernel with <KERNEL>_MAX_THREADS fails to launch with more threads per block. The helpers\n\
         \x20* need <cuda.h>; define NVSHMEM_RS_NO_LAUNCH_HELPERS before including this header to leave\n\
         \x20* them out. The header compiles as C99, C11 and C++11 or newer on its own (NVSHMEM's and\n\
         \x20* CUDA 13's own headers need C++17). */\n\
         #ifndef {upper}_KERNELS_H\n#define {upper}_KERNELS_H\n\n\
         #include <stddef.h>\n#include <stdint.h>\n#if !defined(__cplusplus)\n#include <stdbool.h>\n#endif\n\n\
         {COMMON}\n\
         #define {upper}_NVSHMEM_VERSION \"{ver}\"\n\
         #define {upper}_NVSHMEM_VERSION_MAJOR {major}\n#define {upper}_NVSHMEM_VERSION_MINOR {minor}\n#define {upper}_NVSHMEM_VERSION_PATCH {patch}\n\
         /* NVSHMEM's own headers, when included before this one, must be of the same release\n\
         \x20* (define NVSHMEM_RS_NO_VERSION_CHECK to leave it to the check at run time above). */\n\
         #if defined(NVSHMEM_VENDOR_MAJOR_VERSION) && !defined(NVSHMEM_RS_NO_VERSION_CHECK)\n\
         #if NVSHMEM_VENDOR_MAJOR_VERSION != {major} || NVSHMEM_VENDOR_MINOR_VERSION != {minor} || NVSHMEM_VENDOR_PATCH_VERSION != {patch}\n\
         #error \"{crate_name}: the PTX was linked with NVSHMEM {ver}, but the NVSHMEM headers included are of another release. Rebuild the PTX against yours (NVSHMEM_RS_NVSHMEM_VERSION or NVSHMEM_HOME)\"\n\
         #endif\n#endif\n\
         #define {upper}_ARCH \"{arch}\"\n#define {upper}_PTX_ISA \"{isa}\"\n#define {upper}_PTX_FILE \"{ptx}\"",
        major = v.major,
        minor = v.minor,
        patch = v.patch,
        crate_name = m.crate_name,
        ver = v,
        arch = m.arch,
        isa = m.ptx_isa,
        ptx = m.ptx,
    );
    if let Some(cubin) = &m.cubin {
        let _ = writeln!(h, "#define {upper}_CUBIN_FILE \"{cubin}\"");
    }
    if let Some(cuda) = m.cuda_toolkit {
        let _ = writeln!(
            h,
            "/* The CUDA toolkit the cubin (or the PTX ISA level) is for: a driver of this CUDA\n\
             \x20* version or newer loads it. */\n\
             #define {upper}_CUDA_TOOLKIT \"{cuda}\""
        );
    }
    if m.is_separately_compiled() {
        let _ = writeln!(
            h,
            "/* The cubin was compiled function by function (ptxas -c + nvlink), NVSHMEM's transport\n\
             \x20* functions at 32 registers at most, as in libnvshmem_device.a. Load the cubin; to JIT\n\
             \x20* the PTX instead, add it to a cuLinkCreate() link (relocatable, like the cubin) rather\n\
             \x20* than cuModuleLoadData(), which compiles it whole, very slowly; neither caps those\n\
             \x20* registers. */\n\
             #define {upper}_SEPARATE_COMPILATION 1"
        );
    }
    // Not `_KERNEL_COUNT`: a kernel named `count` has `{upper}_KERNEL_COUNT`.
    let _ = writeln!(h, "#define {upper}_NUM_KERNELS {}\n", m.kernels.len());
    for s in structs {
        render_struct(&mut h, s);
    }
    for k in &m.kernels {
        let c = c_params(k);
        let rust: Vec<String> = k
            .params
            .iter()
            .map(|p| format!("{}: {}", p.name, p.rust_type))
            .collect();
        let symmetric: Vec<&str> = k
            .params
            .iter()
            .filter(|p| matches!(p.kind(), ParamKind::Symmetric(_)))
            .map(|p| p.name.as_str())
            .collect();
        let kupper = k.name.to_ascii_uppercase();
        let _ = writeln!(
            h,
            "/* {name}({c})\n * Rust: fn {name}({rust}){sym}\n * collective: {coll}{regs}{bound} */\n\
             #define {upper}_KERNEL_{kupper} \"{name}\"\n\
             #define {upper}_{kupper}_COLLECTIVE {collective}",
            name = k.name,
            c = c.join(", "),
            rust = rust.join(", "),
            sym = if symmetric.is_empty() {
                String::new()
            } else {
                format!("\n * symmetric (nvshmem_malloc): {}", symmetric.join(", "))
            },
            coll = if k.collective {
                "yes (every PE launches it, cooperatively)"
            } else {
                "no"
            },
            collective = u8::from(k.collective),
            regs = k
                .registers
                .map(|r| format!(", {r} registers"))
                .unwrap_or_default(),
            bound = k
                .max_threads
                .map(|n| format!(", at most {n} threads per block"))
                .unwrap_or_default(),
        );
        if let Some(n) = k.max_threads {
            let _ = writeln!(h, "#define {upper}_{kupper}_MAX_THREADS {n}");
        }
    }
    let _ = writeln!(
        h,
        "\n#if !defined(NVSHMEM_RS_NO_LAUNCH_HELPERS)\n#include <cuda.h>\n\n\
         #ifndef NVSHMEM_RS_DIM3_T\n#define NVSHMEM_RS_DIM3_T\n\
         /* Grid or block size for the launch helpers. */\n\
         typedef struct {{ unsigned x, y, z; }} nvshmem_rs_dim3_t;\n#endif\n"
    );
    for k in &m.kernels {
        let c: Vec<String> = k
            .params
            .iter()
            .map(|p| format!("{} {}", p.c_type, helper_param(&p.name)))
            .collect();
        // `&x` converts to `void*` without a cast in C and C++ (no -Wold-style-cast).
        let addrs = if k.params.is_empty() {
            "NULL".to_string()
        } else {
            k.params
                .iter()
                .map(|p| format!("&{}", helper_param(&p.name)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let (launch, extra) = if k.collective {
            ("cuLaunchCooperativeKernel", "")
        } else {
            ("cuLaunchKernel", ", NULL")
        };
        let _ = writeln!(
            h,
            "static inline CUresult {lower}_launch_{name}(CUfunction f, nvshmem_rs_dim3_t grid, nvshmem_rs_dim3_t block,\n\
             \x20   unsigned shared_bytes, CUstream stream{sep}{c}) {{\n\
             \x20   void* args[] = {{{addrs}}};\n\
             \x20   return {launch}(f, grid.x, grid.y, grid.z, block.x, block.y, block.z, shared_bytes, stream, args{extra});\n}}\n",
            name = k.name,
            sep = if c.is_empty() { "" } else { ", " },
            c = c.join(", "),
        );
    }
    let _ = writeln!(
        h,
        "#endif /* NVSHMEM_RS_NO_LAUNCH_HELPERS */\n\n#endif /* {upper}_KERNELS_H */"
    );
    h
}

fn render_struct(h: &mut String, s: &CStruct) {
    let name = &s.name;
    match &s.fields {
        Some(fields) => {
            let _ = writeln!(h, "typedef struct {{");
            for f in fields {
                let len = f.len.map(|n| format!("[{n}]")).unwrap_or_default();
                let _ = writeln!(h, "    {} {}{len};", f.c_type, c_ident(&f.name));
            }
            let _ = writeln!(h, "}} {name};");
        }
        None => {
            let (size, align) = s.layout.unwrap_or((0, 1));
            let _ = writeln!(
                h,
                "/* A by-value parameter whose Rust type has no C equivalent: pass its bytes. */\n\
                 typedef struct {{ NVSHMEM_RS_ALIGNAS({align}) unsigned char bytes[{size}]; }} {name};"
            );
        }
    }
    if let Some((size, align)) = s.layout {
        let _ = writeln!(
            h,
            "NVSHMEM_RS_STATIC_ASSERT({name}_size, sizeof({name}) == {size});\n\
             NVSHMEM_RS_STATIC_ASSERT({name}_align, NVSHMEM_RS_ALIGNOF({name}) == {align});"
        );
    }
    h.push('\n');
}

/// C and C++ keywords that are not Rust keywords, so a Rust parameter or
/// field may have the name (`new`, `this`, `class`, `int`, ...).
#[rustfmt::skip]
const C_KEYWORDS: &[&str] = &[
    "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "case",
    "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "consteval",
    "constexpr", "constinit", "const_cast", "co_await", "co_return", "co_yield", "decltype",
    "default", "delete", "double", "dynamic_cast", "explicit", "export", "float", "friend", "goto",
    "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq", "nullptr",
    "operator", "or", "or_eq", "private", "protected", "public", "register", "reinterpret_cast",
    "requires", "restrict", "short", "signed", "sizeof", "static_assert", "static_cast", "switch",
    "template", "this", "thread_local", "throw", "typedef", "typeid", "typename", "union",
    "unsigned", "using", "virtual", "void", "volatile", "wchar_t", "xor", "xor_eq", "_Alignas",
    "_Alignof", "_Atomic", "_Bool", "_Complex", "_Generic", "_Imaginary", "_Noreturn",
    "_Static_assert", "_Thread_local",
];

/// A Rust parameter or field name as a C identifier: `new_` for a C or C++
/// keyword, which would not compile as a name (`r#type` → `type_` too).
fn c_ident(name: &str) -> String {
    if let Some(raw) = name.strip_prefix("r#") {
        format!("{raw}_")
    } else if C_KEYWORDS.contains(&name) {
        format!("{name}_")
    } else {
        name.to_string()
    }
}

/// A kernel parameter's name in its launch helper: as [`c_ident`], and `f_`
/// for a parameter named like one of the helper's own (`f`, `grid`, `block`,
/// `shared_bytes`, `stream`, `args`), which C would refuse as a redefinition.
fn helper_param(name: &str) -> String {
    const OWN: [&str; 6] = ["f", "grid", "block", "shared_bytes", "stream", "args"];
    if OWN.contains(&name) {
        format!("{name}_")
    } else {
        c_ident(name)
    }
}

/// A kernel's parameters as C declares them: `type name` each.
fn c_params(k: &KernelInfo) -> Vec<String> {
    k.params
        .iter()
        .map(|p| format!("{} {}", p.c_type, c_ident(&p.name)))
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::manifest::{KernelInfo, ParamInfo};

    fn param(n: &str, c: &str) -> ParamInfo {
        ParamInfo {
            name: n.into(),
            rust_type: String::new(),
            c_type: c.into(),
            size: 8,
            align: 8,
        }
    }

    pub(crate) fn manifest(kernels: Vec<KernelInfo>) -> Manifest {
        Manifest {
            format: 1,
            crate_name: "ring-kernels".into(),
            nvshmem_version: nvshmem_types::Version::new(3, 4, 5),
            arch: nvshmem_types::Arch::DEFAULT,
            ptx_isa: "8.3".into(),
            ptx: "ring-kernels.ptx".into(),
            cubin: Some("ring-kernels.cubin".into()),
            device_link: Some(nvshmem_types::DeviceLink::WholeProgram),
            cuda_toolkit: None,
            kernels,
        }
    }

    fn kernel(name: &str, collective: bool, params: Vec<ParamInfo>) -> KernelInfo {
        KernelInfo {
            registers: Some(12),
            ..KernelInfo::new(name, params, collective)
        }
    }

    #[test]
    fn c_keywords_and_raw_names_get_an_underscore() {
        assert_eq!(c_ident("new"), "new_");
        assert_eq!(c_ident("r#type"), "type_");
        assert_eq!(c_ident("dest"), "dest");
        assert_eq!(helper_param("this"), "this_");
        assert_eq!(helper_param("stream"), "stream_");
        assert!(render(&manifest(vec![]), &[]).contains("#define RING_KERNELS_NUM_KERNELS 0\n"));
    }

    #[test]
    fn header_lists_kernels_and_versions() {
        let p = || vec![param("dest", "int32_t*"), param("n", "uint32_t")];
        let mut bounded = kernel("allreduce", true, p());
        bounded.max_threads = Some(256);
        bounded.params[0].rust_type = "SymPtr<i32>".into();
        let mut m = manifest(vec![kernel("ring_put", false, p()), bounded]);
        m.cuda_toolkit = Some(nvshmem_types::CudaVersion::new(13, 0));
        let h = render(&m, &[]);
        assert!(
            h.contains("#define RING_KERNELS_ALLREDUCE_COLLECTIVE 1\n"),
            "{h}"
        );
        assert!(h.contains("#define RING_KERNELS_RING_PUT_COLLECTIVE 0\n"));
        assert!(h.contains("#define RING_KERNELS_ALLREDUCE_MAX_THREADS 256\n"));
        assert!(!h.contains("RING_PUT_MAX_THREADS"));
        assert!(h.contains(" * symmetric (nvshmem_malloc): dest\n"));
        assert!(h.contains("#define RING_KERNELS_CUDA_TOOLKIT \"13.0\""));
        assert!(h.contains("nvshmemx_vendor_get_version_info"));
        assert!(h.contains("#define RING_KERNELS_NVSHMEM_VERSION \"3.4.5\""));
        assert!(h.contains("#define RING_KERNELS_NVSHMEM_VERSION_MINOR 4"));
        assert!(h.contains("#define RING_KERNELS_KERNEL_RING_PUT \"ring_put\""));
        assert!(h.contains("ring_kernels_launch_ring_put(CUfunction f, nvshmem_rs_dim3_t grid, nvshmem_rs_dim3_t block,\n    unsigned shared_bytes, CUstream stream, int32_t* dest, uint32_t n)"));
        assert!(h.contains("cuLaunchCooperativeKernel(f"));
        assert_eq!(
            h.matches("typedef struct { unsigned x, y, z; } nvshmem_rs_dim3_t;")
                .count(),
            1
        );
        assert!(h.find("nvshmem_rs_dim3_t;").unwrap() < h.find("nvshmem_rs_dim3_t grid").unwrap());
        assert!(
            h.find("#include <cuda.h>").unwrap() > h.find("NVSHMEM_RS_NO_LAUNCH_HELPERS)").unwrap()
        );
    }

    #[test]
    fn by_value_structs_get_named_types() {
        let src = "#[repr(C)] pub struct Inner { pub a: u8, pub b: f32 }\n\
                   #[repr(C)] pub struct Params { pub n: u32, pub v: [f32; 3], pub i: Inner, pub p: *mut u64 }\n\
                   #[repr(C)] pub struct Odd { pub x: Option<u32> }";
        let ast: syn::File = syn::parse_str(src).unwrap();
        let mut sources = Sources::default();
        syn::visit::Visit::visit_file(&mut sources, &ast);
        let mut c = CTypes::new("ring-kernels", &sources);
        let aggregate = |size, align| PtxParam {
            size,
            align,
            ty: "b8".into(),
        };
        let params: syn::Type = syn::parse_str("Params").unwrap();
        let odd: syn::Type = syn::parse_str("Odd").unwrap();
        assert_eq!(
            c.param("k", "p", Some(&params), &aggregate(32, 8)),
            "ring_kernels_params_t"
        );
        assert_eq!(
            c.param("k", "o", Some(&odd), &aggregate(8, 4)),
            "ring_kernels_k_o_t"
        );
        let names: Vec<&str> = c.structs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "ring_kernels_inner_t",
                "ring_kernels_params_t",
                "ring_kernels_k_o_t"
            ]
        );
        let mut h = String::new();
        for s in &c.structs {
            render_struct(&mut h, s);
        }
        assert!(h.contains("    float v[3];\n    ring_kernels_inner_t i;\n    uint64_t* p;\n} ring_kernels_params_t;"), "{h}");
        assert!(h.contains("sizeof(ring_kernels_params_t) == 32"), "{h}");
        assert!(
            h.contains("NVSHMEM_RS_ALIGNAS(4) unsigned char bytes[8]; } ring_kernels_k_o_t;"),
            "{h}"
        );
    }
}
