//! The `#[kernel]` attribute of `nvshmem-device`. Use it through
//! `nvshmem_device::kernel`; see there for the documentation.

use proc_macro::TokenStream;
use quote::quote;
use syn::spanned::Spanned;
use syn::{ItemFn, ReturnType, parse_macro_input};

/// Marks a function as a GPU kernel entry point. See `nvshmem_device::kernel`.
#[proc_macro_attribute]
pub fn kernel(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut max_threads = None;
    let parser = syn::meta::parser(|m| parse_arg(m, &mut max_threads));
    parse_macro_input!(args with parser);
    let f = parse_macro_input!(item as ItemFn);
    match expand(f) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// The most threads per block a GPU can launch.
const MAX_BLOCK_THREADS: u32 = 1024;

/// One argument of `#[kernel(...)]`: only `max_threads = <integer literal>`.
/// The macro checks it and leaves it out of the expansion: `nvshmem-builder`
/// reads it from the source and emits `.maxntid`.
fn parse_arg(m: syn::meta::ParseNestedMeta, max_threads: &mut Option<u32>) -> syn::Result<()> {
    if !m.path.is_ident("max_threads") {
        let name = m
            .path
            .get_ident()
            .map_or_else(|| "this".to_string(), |i| format!("`{i}`"));
        return Err(m.error(format!(
            "{name} is not a #[kernel] argument: the only one is `max_threads = N` \
             (CUDA's __launch_bounds__(N))"
        )));
    }
    if max_threads.is_some() {
        return Err(m.error("`max_threads` is given twice"));
    }
    let expr: syn::Expr = m.value()?.parse()?;
    let n = match &expr {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(lit),
            ..
        }) => lit.base10_parse::<u32>().ok(),
        _ => {
            return Err(syn::Error::new(
                expr.span(),
                "`max_threads` takes an integer literal (`max_threads = 256`): the builder \
                 reads it from the source, so it cannot be a constant or an expression",
            ));
        }
    };
    match n {
        Some(n @ 1..=MAX_BLOCK_THREADS) => {
            *max_threads = Some(n);
            Ok(())
        }
        _ => Err(syn::Error::new(
            expr.span(),
            format!("`max_threads` must be 1 to {MAX_BLOCK_THREADS} (threads per block)"),
        )),
    }
}

fn expand(f: ItemFn) -> syn::Result<proc_macro2::TokenStream> {
    let sig = &f.sig;
    let refuse = |span: proc_macro2::Span, what: &str| {
        Err(syn::Error::new(
            span,
            format!(
                "a #[kernel] function {what}: kernels are `pub unsafe fn name(args)` (or `pub fn`) returning nothing"
            ),
        ))
    };
    if let Some(abi) = &sig.abi {
        return refuse(
            abi.span(),
            "has no `extern` ABI of its own (the attribute gives it `ptx-kernel`)",
        );
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return refuse(
            sig.generics.span(),
            "cannot be generic (PTX entry points have one signature)",
        );
    }
    if let ReturnType::Type(_, ty) = &sig.output {
        return refuse(ty.span(), "cannot return a value");
    }
    if sig.asyncness.is_some() || sig.constness.is_some() {
        return refuse(sig.ident.span(), "cannot be `async` or `const`");
    }
    if sig.variadic.is_some() {
        return refuse(sig.ident.span(), "cannot be variadic");
    }
    if let Some(arg) = sig
        .inputs
        .iter()
        .find(|a| matches!(a, syn::FnArg::Receiver(_)))
    {
        return refuse(arg.span(), "cannot take `self`");
    }
    if !matches!(f.vis, syn::Visibility::Public(_)) {
        return refuse(
            sig.ident.span(),
            "must be `pub` (the host finds it by name)",
        );
    }
    let mut by_value = Vec::new();
    for arg in &sig.inputs {
        if let syn::FnArg::Typed(arg) = arg
            && let Some(ty) = check_param(&arg.ty)?
        {
            by_value.push(ty);
        }
    }
    // Each parameter taken by value is a `KernelParam`: the rest (a struct
    // without `#[derive(KernelParam)]`, `Option`, `String`) cannot be
    // launched. Spanned at the type, so the error points at the parameter.
    let param_checks = by_value.iter().map(|ty| {
        quote::quote_spanned! {ty.span()=>
            ::nvshmem_device::__private::kernel_param::<#ty>();
        }
    });
    let attrs = &f.attrs;
    let vis = &f.vis;
    let unsafety = &sig.unsafety;
    let name = &sig.ident;
    let inputs = &sig.inputs;
    let block = &f.block;
    Ok(quote! {
        const _: () = {
            #[allow(dead_code)]
            fn parameters_are_kernel_params() {
                #(#param_checks)*
            }
        };
        // On the GPU: an unmangled `extern "ptx-kernel"` entry point. The ABI
        // comes from a macro of nvshmem-device that may use `abi_ptx`, so the
        // kernel crate needs no feature gate of its own.
        #[cfg(target_arch = "nvptx64")]
        ::nvshmem_device::__ptx_kernel! {
            #(#attrs)* #[allow(clippy::too_many_arguments)] #vis #unsafety fn #name(#inputs) #block
        }
        // On the host: the same function with the Rust ABI, so that
        // `cargo check`, clippy and rust-analyzer see the kernel's body.
        #[cfg(not(target_arch = "nvptx64"))]
        #(#attrs)*
        #[allow(dead_code, clippy::too_many_arguments)]
        #vis #unsafety fn #name(#inputs) #block
    })
}

/// Refuses a parameter type that a launch cannot pass, with the reason;
/// returns the type when it is passed by value (to be checked for
/// `KernelParam`), `None` for a raw pointer to a sized type.
fn check_param(ty: &syn::Type) -> syn::Result<Option<&syn::Type>> {
    let refuse = |what: &str| {
        Err(syn::Error::new(
            ty.span(),
            format!("a kernel parameter {what}"),
        ))
    };
    match ty {
        syn::Type::Paren(p) => check_param(&p.elem),
        syn::Type::Group(g) => check_param(&g.elem),
        syn::Type::Ptr(p) if unsized_type(&p.elem) => refuse(
            "cannot point to a slice, `str` or `dyn` type: such pointers carry a length or a \
             vtable that C cannot pass; take `*const T`/`*mut T` to the first element and the \
             length as another parameter",
        ),
        syn::Type::Ptr(_) => Ok(None),
        syn::Type::Reference(_) => refuse(
            "cannot be a reference: `&`/`&mut` promise Rust's aliasing rules over memory that \
             other threads and PEs write; take `SymPtr<T>` (symmetric memory) or \
             `*const T`/`*mut T` (other device memory), and the length as another parameter",
        ),
        syn::Type::Slice(_) | syn::Type::TraitObject(_) | syn::Type::ImplTrait(_) => {
            refuse("must have a size known to the launch (no slices, `dyn` or `impl` types)")
        }
        syn::Type::Tuple(_) => refuse(
            "cannot be a tuple (Rust chooses a tuple's layout); use a `#[repr(C)]` struct with \
             `#[derive(KernelParam)]`",
        ),
        syn::Type::BareFn(_) | syn::Type::Never(_) | syn::Type::Infer(_) => {
            refuse("must be a number, a pointer, `SymPtr`, `Pe`, `Team` or a `#[repr(C)]` struct")
        }
        _ => Ok(Some(ty)),
    }
}

/// Whether a pointee is a slice, `str` or trait object (a fat pointer).
fn unsized_type(ty: &syn::Type) -> bool {
    match ty {
        syn::Type::Slice(_) | syn::Type::TraitObject(_) => true,
        syn::Type::Path(p) => p.qself.is_none() && p.path.is_ident("str"),
        syn::Type::Paren(p) => unsized_type(&p.elem),
        syn::Type::Group(g) => unsized_type(&g.elem),
        _ => false,
    }
}

/// `unsafe impl KernelParam` for a kernel crate's `#[repr(C)]` struct, after
/// checking it. See `nvshmem_device::KernelParam`.
#[proc_macro_derive(KernelParam)]
pub fn derive_kernel_param(item: TokenStream) -> TokenStream {
    let s = parse_macro_input!(item as syn::DeriveInput);
    match expand_kernel_param(s) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

fn expand_kernel_param(s: syn::DeriveInput) -> syn::Result<proc_macro2::TokenStream> {
    let name = &s.ident;
    let syn::Data::Struct(data) = &s.data else {
        return Err(syn::Error::new(
            name.span(),
            "#[derive(KernelParam)] is for `#[repr(C)]` structs (a kernel parameter has the C layout)",
        ));
    };
    if !s.generics.params.is_empty() {
        return Err(syn::Error::new(
            s.generics.span(),
            "a kernel parameter struct cannot be generic (a PTX entry has one signature)",
        ));
    }
    // `#[repr(C)]` alone, as the builder's C header and the PTX assume (not
    // `packed`, whose fields may be misaligned, nor Rust's own layout).
    let repr_c = s.attrs.iter().any(|a| {
        a.path().is_ident("repr")
            && a.parse_args_with(
                syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated,
            )
            .is_ok_and(|m| {
                m.iter().any(|m| m.path().is_ident("C"))
                    && !m.iter().any(|m| m.path().is_ident("packed"))
            })
    });
    if !repr_c {
        return Err(syn::Error::new(
            name.span(),
            format!(
                "`{name}` needs `#[repr(C)]` to be a kernel parameter: the kernel and the host \
                 must agree on its layout"
            ),
        ));
    }
    let fields = data.fields.iter().map(|f| &f.ty);
    Ok(quote! {
        // Every field must be a kernel parameter itself (no host pointers).
        const _: () = {
            fn field_is_a_kernel_param<T: ::nvshmem_device::KernelParam>() {}
            #[allow(dead_code)]
            fn fields() {
                #(field_is_a_kernel_param::<#fields>();)*
            }
        };
        // SAFETY: `#[repr(C)]`, not generic, every field a `KernelParam`.
        unsafe impl ::nvshmem_device::KernelParam for #name {}
    })
}

#[cfg(test)]
mod tests {
    use super::check_param;

    #[test]
    fn refuses_parameters_a_launch_cannot_pass() {
        let by_value = ["u32", "SymPtr<f32>", "[u64; 4]", "MyStruct", "Option<u32>"];
        for t in by_value {
            let ty: syn::Type = syn::parse_str(t).unwrap();
            assert!(matches!(check_param(&ty), Ok(Some(_))), "{t}");
        }
        for t in ["*const f32", "*mut MyStruct", "(*mut u8)"] {
            let ty: syn::Type = syn::parse_str(t).unwrap();
            assert!(matches!(check_param(&ty), Ok(None)), "{t}");
        }
        let refused = [
            ("&mut [i32]", "reference"),
            ("&u32", "reference"),
            ("*const [i32]", "slice"),
            ("*const str", "slice"),
            ("*mut dyn Fn()", "slice"),
            ("(u32, u32)", "tuple"),
            ("[u8]", "size"),
            ("impl Copy", "size"),
            ("fn()", "number"),
        ];
        for (t, why) in refused {
            let ty: syn::Type = syn::parse_str(t).unwrap();
            let Err(e) = check_param(&ty) else {
                panic!("{t} accepted")
            };
            let e = e.to_string();
            assert!(e.contains(why), "{t}: {e}");
        }
    }
}
