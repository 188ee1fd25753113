//! Kernel signatures as written in the Rust source, for the manifest and the C header.

use quote::ToTokens;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use syn::visit::Visit;

/// A kernel's parameters as the source declares them.
#[derive(Clone)]
pub(crate) struct SourceKernel {
    pub name: String,
    /// (parameter name, its type)
    pub params: Vec<(String, syn::Type)>,
    /// `#[kernel(max_threads = N)]`: the most threads per block it is
    /// launched with (CUDA's `__launch_bounds__(N)`), emitted as `.maxntid`.
    pub max_threads: Option<u32>,
    /// Behind a `#[cfg(..)]` that names a cargo feature (on the fn or a
    /// module around it), so some builds of the crate leave it out: its
    /// bindings treat it as optional.
    pub gated: bool,
    /// The module it is defined in, from the crate root.
    module: Vec<String>,
}

/// A `#[repr(C)]` struct of the source, without generics: its fields, in order
/// (`_0`, `_1`, ... for a tuple struct).
#[derive(Clone)]
pub(crate) struct SourceStruct {
    pub fields: Vec<(String, syn::Type)>,
    /// The module it is defined in, from the crate root (`["params"]` for
    /// `src/params.rs`); empty at the root.
    pub module: Vec<String>,
}

/// What the kernel crate's source says about its kernels' parameters.
#[derive(Default)]
pub(crate) struct Sources {
    pub kernels: Vec<SourceKernel>,
    /// Kernels written `extern "ptx-kernel"` by hand (not `#[kernel]`): they
    /// do not compile for the host.
    pub raw_ptx_kernels: Vec<String>,
    /// `#[repr(C)]` structs by name (the last one wins when two share a name;
    /// [`Sources::struct_for`] refuses such names).
    pub structs: BTreeMap<String, SourceStruct>,
    /// Names that two `#[repr(C)]` structs of different modules share.
    ambiguous_structs: BTreeSet<String>,
    /// `#[kernel(max_threads = ..)]` attributes inside macros (`macro_rules!`
    /// bodies, macro calls), which this reader does not expand: their
    /// kernels get no `.maxntid`.
    pub max_threads_in_macros: usize,
    /// The module being read (files by their path, `mod m { .. }` inline).
    module: Vec<String>,
    /// How many feature-gated (see [`SourceKernel::gated`]) inline modules
    /// enclose the item being read.
    gated_depth: usize,
    /// Feature-gated `mod m;` declarations (their files are read apart):
    /// each module's path from the crate root.
    gated_modules: Vec<Vec<String>>,
}

impl Sources {
    /// The source's kernel `name`, when its parameter count is `count`.
    pub(crate) fn kernel(&self, name: &str, count: usize) -> Option<&SourceKernel> {
        self.kernels
            .iter()
            .find(|k| k.name == name)
            .filter(|k| k.params.len() == count)
    }

    /// The source's `#[repr(C)]` struct that the type path `p` names, when
    /// that is certain from its name: no other struct of the crate has the
    /// name, and the path's modules (after `crate`, `self`, `super`) end the
    /// struct's module path. Anything else (an ambiguous name, a struct of
    /// another crate) is `None`: the caller falls back to an untyped
    /// parameter rather than risk a same-sized struct with other fields.
    pub(crate) fn struct_for(&self, p: &syn::TypePath) -> Option<&SourceStruct> {
        let segments = &p.path.segments;
        let ident = segments.last()?.ident.to_string();
        if self.ambiguous_structs.contains(&ident) {
            return None;
        }
        let st = self.structs.get(&ident)?;
        let modules: Vec<String> = segments
            .iter()
            .take(segments.len() - 1)
            .map(|s| s.ident.to_string())
            .skip_while(|m| matches!(m.as_str(), "crate" | "self" | "super"))
            .collect();
        (p.path.leading_colon.is_none() && st.module.ends_with(&modules)).then_some(st)
    }

    /// Kernel → its `#[kernel(max_threads = N)]`, for the kernels that have one.
    pub(crate) fn max_threads(&self) -> BTreeMap<String, u32> {
        self.kernels
            .iter()
            .filter_map(|k| Some((k.name.clone(), k.max_threads?)))
            .collect()
    }
}

/// The `N` of `#[kernel(max_threads = N)]` (any path ending in `kernel`).
/// Anything else in the parentheses is the proc macro's to refuse; here it
/// reads as no bound.
fn max_threads_arg(attr: &syn::Attribute) -> Option<u32> {
    let syn::Meta::List(list) = &attr.meta else {
        return None;
    };
    let mut bound = None;
    list.parse_nested_meta(|m| {
        if m.path.is_ident("max_threads") {
            let lit: syn::LitInt = m.value()?.parse()?;
            bound = Some(lit.base10_parse::<u32>()?);
            Ok(())
        } else {
            Err(m.error("not a #[kernel] argument"))
        }
    })
    .ok()?;
    bound
}

/// Every `#[kernel]` or `extern "ptx-kernel"` fn and `#[repr(C)]` struct in the `.rs` files under `src`.
/// Files that do not parse are skipped: rustc has already accepted the crate,
/// so this only happens for macro-heavy code, whose kernels fall back to PTX types.
pub(crate) fn read(src: &Path) -> Sources {
    let mut files = Vec::new();
    collect_rs(src, &mut files);
    files.sort();
    let mut visitor = Sources::default();
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        if let Ok(ast) = syn::parse_file(&text) {
            visitor.module = file_module(src, &file);
            visitor.visit_file(&ast);
        }
    }
    let gated = std::mem::take(&mut visitor.gated_modules);
    for k in &mut visitor.kernels {
        k.gated |= gated.iter().any(|m| k.module.starts_with(m));
    }
    visitor
}

/// Whether `attrs` hold `#[cfg(test)]`.
fn cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta
                .require_list()
                .is_ok_and(|l| l.tokens.to_string() == "test")
    })
}

/// Whether `attrs` hold a `#[cfg(..)]` that names a cargo feature
/// (`#[cfg(feature = "sm90a")]`, `#[cfg(all(feature = "x", ..))]`).
fn feature_gated(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta
                .require_list()
                .is_ok_and(|l| l.tokens.clone().into_iter().any(|t| tree_names_feature(&t)))
    })
}

fn tree_names_feature(t: &proc_macro2::TokenTree) -> bool {
    match t {
        proc_macro2::TokenTree::Ident(i) => i == "feature",
        proc_macro2::TokenTree::Group(g) => g.stream().into_iter().any(|t| tree_names_feature(&t)),
        _ => false,
    }
}

/// The module a file under `src` holds by Rust's file layout: `lib.rs` the
/// root, `a.rs` and `a/mod.rs` module `a`, `a/b.rs` module `a::b`
/// (`#[path]` attributes are not followed).
fn file_module(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap_or(file).with_extension("");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main") {
        parts.clear();
    }
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
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

/// `#[repr(C)]` exactly (not `packed`, `align(N)` or `transparent`, whose
/// layouts a plain C struct of the same fields does not have).
fn is_plain_repr_c(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("repr")
            && a.parse_args_with(
                syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated,
            )
            .is_ok_and(|metas| metas.len() == 1 && metas[0].path().is_ident("C"))
    })
}

impl<'ast> Visit<'ast> for Sources {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        let raw = f
            .sig
            .abi
            .as_ref()
            .and_then(|a| a.name.as_ref())
            .is_some_and(|n| n.value() == "ptx-kernel");
        if raw {
            self.raw_ptx_kernels.push(f.sig.ident.to_string());
        }
        let attr = f.attrs.iter().find(|a| {
            a.path()
                .segments
                .last()
                .is_some_and(|s| s.ident == "kernel")
        });
        if raw || attr.is_some() {
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
                        Some((name, (*t.ty).clone()))
                    }
                    syn::FnArg::Receiver(_) => None,
                })
                .collect();
            self.kernels.push(SourceKernel {
                name: f.sig.ident.to_string(),
                params,
                max_threads: attr.and_then(max_threads_arg),
                gated: self.gated_depth > 0 || feature_gated(&f.attrs),
                module: self.module.clone(),
            });
        }
        syn::visit::visit_item_fn(self, f);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.max_threads_in_macros += bounds_in_tokens(m.tokens.clone());
        syn::visit::visit_macro(self, m);
    }

    fn visit_item_struct(&mut self, s: &'ast syn::ItemStruct) {
        if is_plain_repr_c(&s.attrs) && s.generics.params.is_empty() && !cfg_test(&s.attrs) {
            let fields = s
                .fields
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let name = f
                        .ident
                        .as_ref()
                        .map(|id| id.to_string())
                        .unwrap_or_else(|| format!("_{i}"));
                    (name, f.ty.clone())
                })
                .collect();
            let module = self.module.clone();
            let name = s.ident.to_string();
            if self
                .structs
                .get(&name)
                .is_some_and(|prev| prev.module != module)
            {
                self.ambiguous_structs.insert(name.clone());
            }
            self.structs.insert(name, SourceStruct { fields, module });
        }
        syn::visit::visit_item_struct(self, s);
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        // Unit tests' modules are not built for the GPU: their structs must
        // not make a kernel's struct name ambiguous.
        if cfg_test(&m.attrs) {
            return;
        }
        self.module.push(m.ident.to_string());
        let gated = feature_gated(&m.attrs);
        if gated && m.content.is_none() {
            self.gated_modules.push(self.module.clone());
        }
        self.gated_depth += gated as usize;
        syn::visit::visit_item_mod(self, m);
        self.gated_depth -= gated as usize;
        self.module.pop();
    }
}

/// How many `#[... kernel(max_threads ...)]` attributes a macro's tokens hold.
fn bounds_in_tokens(tokens: proc_macro2::TokenStream) -> usize {
    use proc_macro2::{Delimiter, TokenTree};
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let mut count = 0;
    for (i, t) in trees.iter().enumerate() {
        let TokenTree::Group(g) = t else { continue };
        let is_attr = g.delimiter() == Delimiter::Bracket
            && i > 0
            && matches!(&trees[i - 1], TokenTree::Punct(p) if p.as_char() == '#');
        let inner: Vec<TokenTree> = g.stream().into_iter().collect();
        let bounded = is_attr
            && inner.windows(2).any(|w| match (&w[0], &w[1]) {
                (TokenTree::Ident(k), TokenTree::Group(args)) => {
                    k == "kernel"
                        && args.delimiter() == Delimiter::Parenthesis
                        && args
                            .stream()
                            .into_iter()
                            .any(|a| matches!(a, TokenTree::Ident(m) if m == "max_threads"))
                }
                _ => false,
            });
        count += usize::from(bounded);
        if !bounded {
            count += bounds_in_tokens(g.stream());
        }
    }
    count
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
        syn::Type::Array(a) => format!("[{}; {}]", rust_type(&a.elem), a.len.to_token_stream()),
        other => other.to_token_stream().to_string(),
    }
}

/// The matching C type, or an empty string when there is none.
pub(crate) fn c_type(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Ptr(syn::TypePtr {
            elem, mutability, ..
        })
        | syn::Type::Reference(syn::TypeReference {
            elem, mutability, ..
        }) => {
            let elem = c_type(elem);
            let elem = if elem.is_empty() {
                "void".to_string()
            } else {
                elem
            };
            if mutability.is_some() {
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
            ("&mut f32", "float*", "&mut f32"),
            ("&[u8; 4]", "const void*", "&[u8; 4]"),
        ];
        for (src, c, rust) in cases {
            assert_eq!(c_type(&ty(src)), c, "{src}");
            assert_eq!(rust_type(&ty(src)), rust, "{src}");
        }
    }

    #[test]
    fn reads_max_threads_from_the_kernel_attribute() {
        let file: syn::File = syn::parse_str(
            "#[kernel(max_threads = 384)] pub unsafe fn a() {}\n\
             #[nvshmem_device::kernel(max_threads = 0x80)] pub unsafe fn b(x: u32) {}\n\
             #[kernel] pub unsafe fn c() {}\n\
             #[kernel(max_threads = \"many\")] pub unsafe fn d() {}\n\
             #[kernel(min_threads = 2)] pub unsafe fn e() {}\n\
             #[unsafe(no_mangle)] pub unsafe extern \"ptx-kernel\" fn f() {}",
        )
        .unwrap();
        let mut s = Sources::default();
        s.visit_file(&file);
        let bounds: Vec<(&str, Option<u32>)> = s
            .kernels
            .iter()
            .map(|k| (k.name.as_str(), k.max_threads))
            .collect();
        assert_eq!(
            bounds,
            [
                ("a", Some(384)),
                ("b", Some(128)),
                ("c", None),
                ("d", None),
                ("e", None),
                ("f", None)
            ]
        );
        assert_eq!(
            s.max_threads(),
            BTreeMap::from([("a".to_string(), 384), ("b".to_string(), 128)])
        );
        assert_eq!(s.max_threads_in_macros, 0);

        // Kernels that macros make are not seen, but their bounds are counted.
        let file: syn::File = syn::parse_str(
            "macro_rules! k { ($n:ident) => { #[kernel(max_threads = 64)] pub unsafe fn $n() {} }; }\n\
             with_nvshmem_3_8! { #[nvshmem_device::kernel(max_threads = 32)] pub unsafe fn g() {} }\n\
             /// `#[kernel(max_threads = 1)]` in a doc comment is no attribute.\n\
             #[kernel] pub unsafe fn h() {}",
        )
        .unwrap();
        let mut s = Sources::default();
        s.visit_file(&file);
        assert_eq!(s.max_threads_in_macros, 2);
        assert!(s.max_threads().is_empty());
    }

    #[test]
    fn finds_kernels_and_structs_in_nested_modules() {
        let dir = std::env::temp_dir().join(format!("nvshmem-builder-sig-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("m")).unwrap();
        std::fs::write(
            dir.join("lib.rs"),
            "mod m; #[unsafe(no_mangle)] pub unsafe extern \"ptx-kernel\" fn a(x: SymPtr<i32>, n: u32) {}\n\
             pub fn not_a_kernel(y: u8) {}\n\
             #[repr(C)] pub struct P { pub n: u32, pub v: [f32; 4] }\n\
             #[repr(C)] pub struct T(u64, u8);\n\
             #[repr(C, packed)] pub struct Packed { a: u8, b: u32 }\n\
             #[repr(C)] pub struct G<X> { x: X }\n\
             pub struct Rust { a: u8 }",
        )
        .unwrap();
        std::fs::write(
            dir.join("m/mod.rs"),
            "mod inner { pub unsafe extern \"ptx-kernel\" fn b(_: *mut f32) {} #[repr(C)] pub struct N(u8); }",
        )
        .unwrap();
        let s = read(&dir);
        std::fs::remove_dir_all(&dir).ok();
        assert_eq!(s.kernels.len(), 2);
        let params = |k: &SourceKernel| -> Vec<(String, String, String)> {
            k.params
                .iter()
                .map(|(n, t)| (n.clone(), rust_type(t), c_type(t)))
                .collect()
        };
        assert_eq!(
            params(&s.kernels[0]),
            vec![
                ("x".into(), "SymPtr<i32>".into(), "int32_t*".into()),
                ("n".into(), "u32".into(), "uint32_t".into())
            ]
        );
        assert_eq!(s.kernels[1].name, "b");
        assert_eq!(
            params(&s.kernels[1])[0],
            ("_0".into(), "*mut f32".into(), "float*".into())
        );
        assert!(s.kernel("a", 2).is_some() && s.kernel("a", 3).is_none());
        assert_eq!(s.structs.keys().collect::<Vec<_>>(), ["N", "P", "T"]);
        assert!(s.structs["P"].module.is_empty());
        assert_eq!(s.structs["N"].module, ["m", "inner"]);
        let names: Vec<&str> = s.structs["T"].fields.iter().map(|f| f.0.as_str()).collect();
        assert_eq!(names, ["_0", "_1"]);
    }

    #[test]
    fn kernels_behind_a_feature_are_gated() {
        let dir = std::env::temp_dir().join(format!("nvshmem-rs-gated-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("hop")).unwrap();
        std::fs::write(
            dir.join("lib.rs"),
            "#[kernel] pub unsafe fn a() {}\n\
             #[cfg(feature = \"sm90a\")] mod hop;\n\
             #[cfg(feature = \"sm90a\")] mod inline { #[kernel] pub unsafe fn b() {} }\n\
             #[cfg(not(feature = \"y\"))] #[kernel] pub unsafe fn c() {}\n\
             #[cfg(target_arch = \"nvptx64\")] #[kernel] pub unsafe fn d() {}\n\
             mod open { #[kernel] pub unsafe fn e() {} }",
        )
        .unwrap();
        std::fs::write(
            dir.join("hop/mod.rs"),
            "pub mod deep; #[kernel] pub unsafe fn f() {}",
        )
        .unwrap();
        std::fs::write(dir.join("hop/deep.rs"), "#[kernel] pub unsafe fn g() {}").unwrap();
        let s = read(&dir);
        std::fs::remove_dir_all(&dir).unwrap();
        let mut gated: Vec<(&str, bool)> = s
            .kernels
            .iter()
            .map(|k| (k.name.as_str(), k.gated))
            .collect();
        gated.sort();
        assert_eq!(
            gated,
            [
                ("a", false),
                ("b", true),
                ("c", true),
                ("d", false),
                ("e", false),
                ("f", true),
                ("g", true)
            ]
        );
    }
}
