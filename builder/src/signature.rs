//! Kernel signatures as written in the Rust source, for the manifest and the C header.

use quote::ToTokens;
use std::path::Path;
use syn::visit::Visit;

/// A kernel's parameters as the source declares them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SourceKernel {
    pub name: String,
    /// (parameter name, Rust type, C type)
    pub params: Vec<(String, String, String)>,
}

/// Every `#[kernel]` or `extern "ptx-kernel"` fn in the `.rs` files under `src`.
/// Files that do not parse are skipped: rustc has already accepted the crate,
/// so this only happens for macro-heavy code, whose kernels fall back to PTX types.
pub(crate) fn kernels_in(src: &Path) -> Vec<SourceKernel> {
    let mut files = Vec::new();
    collect_rs(src, &mut files);
    files.sort();
    let mut visitor = KernelVisitor::default();
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        if let Ok(ast) = syn::parse_file(&text) {
            visitor.visit_file(&ast);
        }
    }
    visitor.found
}

fn collect_rs(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            collect_rs(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[derive(Default)]
struct KernelVisitor {
    found: Vec<SourceKernel>,
}

impl<'ast> Visit<'ast> for KernelVisitor {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        let is_kernel = f
            .sig
            .abi
            .as_ref()
            .and_then(|a| a.name.as_ref())
            .is_some_and(|n| n.value() == "ptx-kernel")
            || f.attrs.iter().any(|a| {
                a.path()
                    .segments
                    .last()
                    .is_some_and(|s| s.ident == "kernel")
            });
        if is_kernel {
            let params = f
                .sig
                .inputs
                .iter()
                .enumerate()
                .filter_map(|(i, arg)| match arg {
                    syn::FnArg::Typed(t) => {
                        let name = match &*t.pat {
                            syn::Pat::Ident(id) => id.ident.to_string(),
                            _ => format!("_{i}"),
                        };
                        Some((name, rust_type(&t.ty), c_type(&t.ty)))
                    }
                    syn::FnArg::Receiver(_) => None,
                })
                .collect();
            self.found.push(SourceKernel {
                name: f.sig.ident.to_string(),
                params,
            });
        }
        syn::visit::visit_item_fn(self, f);
    }
}

/// The type as a reader writes it: `SymPtr<f32>`, `*const u8`.
pub(crate) fn rust_type(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Ptr(p) => {
            format!(
                "*{} {}",
                if p.mutability.is_some() {
                    "mut"
                } else {
                    "const"
                },
                rust_type(&p.elem)
            )
        }
        syn::Type::Reference(r) => {
            format!(
                "&{}{}",
                if r.mutability.is_some() { "mut " } else { "" },
                rust_type(&r.elem)
            )
        }
        syn::Type::Path(p) => p
            .path
            .segments
            .iter()
            .map(|s| match &s.arguments {
                syn::PathArguments::AngleBracketed(a) => {
                    let args: Vec<String> = a
                        .args
                        .iter()
                        .map(|g| match g {
                            syn::GenericArgument::Type(t) => rust_type(t),
                            other => other.to_token_stream().to_string(),
                        })
                        .collect();
                    format!("{}<{}>", s.ident, args.join(", "))
                }
                _ => s.ident.to_string(),
            })
            .collect::<Vec<_>>()
            .join("::"),
        other => other.to_token_stream().to_string(),
    }
}

/// The matching C type, or an empty string when there is none.
pub(crate) fn c_type(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Ptr(p) => {
            let elem = c_type(&p.elem);
            let elem = if elem.is_empty() {
                "void".to_string()
            } else {
                elem
            };
            if p.mutability.is_some() {
                format!("{elem}*")
            } else {
                format!("const {elem}*")
            }
        }
        syn::Type::Path(p) => {
            let Some(last) = p.path.segments.last() else {
                return String::new();
            };
            let generic = || match &last.arguments {
                syn::PathArguments::AngleBracketed(a) => a.args.iter().find_map(|g| match g {
                    syn::GenericArgument::Type(t) => Some(c_type(t)),
                    _ => None,
                }),
                _ => None,
            };
            match last.ident.to_string().as_str() {
                "SymPtr" => {
                    let elem = generic()
                        .filter(|e| !e.is_empty())
                        .unwrap_or_else(|| "void".into());
                    format!("{elem}*")
                }
                "i8" => "int8_t".into(),
                "i16" => "int16_t".into(),
                // `Team` is `nvshmem_team_t`, an `int32_t`.
                "i32" | "Team" => "int32_t".into(),
                "i64" | "isize" => "int64_t".into(),
                "u8" => "uint8_t".into(),
                "u16" | "f16" | "bf16" => "uint16_t".into(),
                "u32" | "Pe" => "uint32_t".into(),
                "u64" | "usize" => "uint64_t".into(),
                "f32" => "float".into(),
                "f64" => "double".into(),
                "bool" => "bool".into(),
                _ => String::new(),
            }
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ty(s: &str) -> syn::Type {
        syn::parse_str(s).unwrap()
    }

    #[test]
    fn maps_types_to_c() {
        let cases = [
            ("SymPtr<f32>", "float*", "SymPtr<f32>"),
            (
                "nvshmem_device::SymPtr<u64>",
                "uint64_t*",
                "nvshmem_device::SymPtr<u64>",
            ),
            ("*const u8", "const uint8_t*", "*const u8"),
            ("*mut MyStruct", "void*", "*mut MyStruct"),
            ("usize", "uint64_t", "usize"),
            ("Pe", "uint32_t", "Pe"),
            ("nvshmem_device::Team", "int32_t", "nvshmem_device::Team"),
            ("half::f16", "uint16_t", "half::f16"),
            ("MyStruct", "", "MyStruct"),
        ];
        for (src, c, rust) in cases {
            assert_eq!(c_type(&ty(src)), c, "{src}");
            assert_eq!(rust_type(&ty(src)), rust, "{src}");
        }
    }

    #[test]
    fn finds_kernels_in_nested_modules() {
        let dir = std::env::temp_dir().join(format!("nvshmem-builder-sig-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("m")).unwrap();
        std::fs::write(
            dir.join("lib.rs"),
            "mod m; #[unsafe(no_mangle)] pub unsafe extern \"ptx-kernel\" fn a(x: SymPtr<i32>, n: u32) {}\n\
             pub fn not_a_kernel(y: u8) {}",
        )
        .unwrap();
        std::fs::write(
            dir.join("m/mod.rs"),
            "mod inner { pub unsafe extern \"ptx-kernel\" fn b(_: *mut f32) {} }",
        )
        .unwrap();
        let k = kernels_in(&dir);
        std::fs::remove_dir_all(&dir).ok();
        assert_eq!(k.len(), 2);
        assert_eq!(
            k[0].params,
            vec![
                ("x".into(), "SymPtr<i32>".into(), "int32_t*".into()),
                ("n".into(), "u32".into(), "uint32_t".into())
            ]
        );
        assert_eq!(k[1].name, "b");
        assert_eq!(
            k[1].params[0],
            ("_0".into(), "*mut f32".into(), "float*".into())
        );
    }
}
