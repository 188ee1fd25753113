//! `device_asm!`: functions that run one inline-PTX template on the GPU and
//! are [`device_only`](crate::device_only) on the host, where the crate only
//! type-checks.

/// Functions of one `asm!` each (`options(nostack)`, `#[inline(always)]`):
///
/// ```ignore
/// device_asm! {
///     /// Docs (with `# Safety` for an `unsafe fn`).
///     pub unsafe fn name(a: SharedAddr, n: u32) = "ptx [{a}], {n};", [a = in(reg32) a.0, n = in(reg32) n,];
///     /// A fence or a wait: no operands, or const generic ones.
///     pub fn wait<const N: u32>() = "ptx.wait {n};", [n = const N,];
/// }
/// ```
///
/// An `unsafe fn`'s caller keeps the contract of its `# Safety` section; a
/// safe one must be an instruction that is sound for any arguments (a fence,
/// a wait, a barrier that only orders or blocks the caller) and in any
/// control flow: never an `.aligned` instruction, which is undefined
/// behaviour when the threads of the warp (or warpgroup) do not all execute
/// it together.
macro_rules! device_asm {
    (@body [$($arg:ident),*] $tmpl:expr, [$($op:tt)*]) => {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: see the macro's docs: the `unsafe fn`'s contract, or an
        // instruction that is sound for any arguments.
        unsafe {
            core::arch::asm!($tmpl, $($op)* options(nostack))
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = ($($arg,)*);
            crate::device_only()
        }
    };
    () => {};
    (
        $(#[$doc:meta])* $vis:vis unsafe fn $name:ident $(<const $c:ident: $ct:ty>)? ($($arg:ident: $ty:ty),*)
            = $tmpl:expr $(, [$($op:tt)*])?;
        $($rest:tt)*
    ) => {
        $(#[$doc])*
        #[inline(always)]
        $vis unsafe fn $name $(<const $c: $ct>)? ($($arg: $ty),*) {
            device_asm!(@body [$($arg),*] $tmpl, [$($($op)*)?]);
        }
        device_asm! { $($rest)* }
    };
    (
        $(#[$doc:meta])* $vis:vis fn $name:ident $(<const $c:ident: $ct:ty>)? ($($arg:ident: $ty:ty),*)
            = $tmpl:expr $(, [$($op:tt)*])?;
        $($rest:tt)*
    ) => {
        $(#[$doc])*
        #[inline(always)]
        $vis fn $name $(<const $c: $ct>)? ($($arg: $ty),*) {
            device_asm!(@body [$($arg),*] $tmpl, [$($($op)*)?]);
        }
        device_asm! { $($rest)* }
    };
}
