//! The macros that make one function per scope (thread, warp, block) from
//! one template, for the RMA functions and the collectives alike, and the
//! call of NVSHMEM's function of a scope.

/// `nvshmem_<name>` / `nvshmemx_<name>_warp` / `nvshmemx_<name>_block` by
/// [`Scope`](crate::__private::Scope): `scoped_ffi!(scope, [int32 _put], args..)`
/// calls `nvshmem_int32_put(args..)` in thread scope. The name is the
/// concatenation of the bracketed pieces.
macro_rules! scoped_ffi {
    ($s:expr, [$($name:tt)*], $($a:expr),* $(,)?) => { pastey::paste!(
        match $s {
            $crate::__private::Scope::Thread => $crate::ffi::[<nvshmem_ $($name)*>]($($a),*),
            $crate::__private::Scope::Warp => $crate::ffi::[<nvshmemx_ $($name)* _warp>]($($a),*),
            $crate::__private::Scope::Block => $crate::ffi::[<nvshmemx_ $($name)* _block>]($($a),*),
        }
    ) };
}

/// Three `pub unsafe fn`s, thread, warp and block scope, from one template;
/// the body sees the scope as `$scope`. `collective` adds the collective
/// launch note; the warp and block functions get their group's safety
/// requirements ([`warp_safety!`], [`block_safety!`]) after `safety`.
macro_rules! scoped {
    (
        $(#[$doc:meta])*
        $(collective: $coll:ident;)?
        safety: $safety:expr;
        example: ($ex_params:literal, $ex_call:literal);
        pub unsafe fn [$thread:ident, $warp:ident, $block:ident]
            <$($g:ident: $b:path),*> ($($arg:ident: $argty:ty),* $(,)?)
        |$scope:ident| $body:block
    ) => {
        scoped! { @one $(#[$doc])* $($coll)?; $safety; ""; ($ex_params, $ex_call);
            "Thread scope: one thread calls it (one per PE, for a collective). NVSHMEM: `nvshmem_*`.";
            ($warp, $block);
            $thread <$($g: $b),*> ($($arg: $argty),*) |$scope = Thread| $body }
        scoped! { @one $(#[$doc])* $($coll)?; $safety; warp_safety!(); ($ex_params, $ex_call);
            "**Warp scope**: every thread of the warp calls it, and the warp shares the work (one \
             warp per PE, for a collective). NVSHMEM: `nvshmemx_*_warp`.";
            ($thread, $block);
            $warp <$($g: $b),*> ($($arg: $argty),*) |$scope = Warp| $body }
        scoped! { @one $(#[$doc])* $($coll)?; $safety; block_safety!(); ($ex_params, $ex_call);
            "**Block scope**: every thread of the block calls it, and the block shares the work \
             (one block per PE, for a collective). NVSHMEM: `nvshmemx_*_block`.";
            ($thread, $warp);
            $block <$($g: $b),*> ($($arg: $argty),*) |$scope = Block| $body }
    };
    (
        @one $(#[$doc:meta])* $($coll:ident)?; $safety:expr; $group_safety:expr;
        ($ex_params:literal, $ex_call:literal); $scope_doc:literal; ($o1:ident, $o2:ident);
        $name:ident <$($g:ident: $b:path),*> ($($arg:ident: $argty:ty),*)
        |$scope:ident = $kind:ident| $body:block
    ) => {
        $(#[$doc])*
        ///
        #[doc = $scope_doc]
        #[doc = concat!("The other scopes: [`", stringify!($o1), "`], [`", stringify!($o2), "`].")]
        $(
            #[doc = scoped!(@$coll)]
        )?
        ///
        /// # Safety
        #[doc = $safety]
        ///
        #[doc = $group_safety]
        ///
        /// # Example
        /// ```no_run
        /// # #![allow(unused)]
        /// use nvshmem_device::*;
        #[doc = concat!("unsafe fn kernel(", $ex_params, ") {")]
        #[doc = concat!("    unsafe { ", stringify!($name), $ex_call, " };")]
        /// }
        /// ```
        #[inline(always)]
        #[cfg_attr(feature = "debug-checks", track_caller)]
        pub unsafe fn $name<$($g: $b),*>($($arg: $argty),*) {
            let $scope = $crate::__private::Scope::$kind;
            $body
        }
    };
    (@collective) => {
        "\n\nCollective over `team`: every PE of the team calls it, and the kernel \
         must be launched collectively."
    };
}

/// The `# Safety` sentence of every function that takes a `pe`.
macro_rules! pe_safety {
    () => {
        " `pe` must be a PE of the job (`pe < n_pes()`): NVSHMEM indexes its peer tables with it \
         unchecked (the `debug-checks` feature traps instead)."
    };
}
