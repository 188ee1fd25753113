//! The `#[kernel]` attribute of `nvshmem-device`. Use it through
//! `nvshmem_device::kernel`; see there for the documentation.

use proc_macro::TokenStream;
use quote::quote;
use syn::spanned::Spanned;
use syn::{ItemFn, ReturnType, parse_macro_input};

/// Marks a function as a GPU kernel entry point. See `nvshmem_device::kernel`.
#[proc_macro_attribute]
pub fn kernel(args: TokenStream, item: TokenStream) -> TokenStream {
    if !args.is_empty() {
        let args = proc_macro2::TokenStream::from(args);
        return syn::Error::new(args.span(), "#[kernel] takes no arguments")
            .to_compile_error()
            .into();
    }
    let f = parse_macro_input!(item as ItemFn);
    match expand(f) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

fn expand(f: ItemFn) -> syn::Result<proc_macro2::TokenStream> {
    let sig = &f.sig;
    let refuse = |span: proc_macro2::Span, what: &str| {
        Err(syn::Error::new(
            span,
            format!(
                "a #[kernel] function {what}: kernels are `pub unsafe fn name(args)` returning nothing"
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
    let attrs = &f.attrs;
    let vis = &f.vis;
    let unsafety = &sig.unsafety;
    let name = &sig.ident;
    let inputs = &sig.inputs;
    let block = &f.block;
    Ok(quote! {
        // On the GPU: an unmangled `extern "ptx-kernel"` entry point. The ABI
        // comes from a macro of nvshmem-device that may use `abi_ptx`, so the
        // kernel crate needs no feature gate of its own.
        #[cfg(target_arch = "nvptx64")]
        ::nvshmem_device::__ptx_kernel! {
            #(#attrs)* #vis #unsafety fn #name(#inputs) #block
        }
        // On the host: the same function with the Rust ABI, so that
        // `cargo check`, clippy and rust-analyzer see the kernel's body.
        #[cfg(not(target_arch = "nvptx64"))]
        #(#attrs)*
        #[allow(dead_code)]
        #vis #unsafety fn #name(#inputs) #block
    })
}
