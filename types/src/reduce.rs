//! Reduction operators, and the (operator, element type) pairs NVSHMEM has.

use crate::__private::Sealed;
use half::{bf16, f16};

/// Which reduction an operator type stands for (NVSHMEM's `RDXN_OPS_*`).
///
/// ```
/// use nvshmem_types::{ReduceOp, ReduceOpKind, Sum};
/// assert_eq!(<Sum as ReduceOp<f32>>::KIND, ReduceOpKind::Sum);
/// assert_eq!(ReduceOpKind::Sum.name(), "sum");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOpKind {
    /// Bitwise and.
    And,
    /// Bitwise or.
    Or,
    /// Bitwise exclusive or.
    Xor,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
    /// Sum.
    Sum,
    /// Product.
    Prod,
}

impl ReduceOpKind {
    /// The operator's name in NVSHMEM's function names (`sum` in
    /// `nvshmem_float_sum_reduce`).
    pub const fn name(self) -> &'static str {
        match self {
            ReduceOpKind::And => "and",
            ReduceOpKind::Or => "or",
            ReduceOpKind::Xor => "xor",
            ReduceOpKind::Min => "min",
            ReduceOpKind::Max => "max",
            ReduceOpKind::Sum => "sum",
            ReduceOpKind::Prod => "prod",
        }
    }
}

/// A reduction operator that NVSHMEM implements for element type `T`.
///
/// Implemented exactly for NVSHMEM's pairs: the bitwise operators ([`And`],
/// [`Or`], [`Xor`]) for the integer types, and [`Min`], [`Max`], [`Sum`],
/// [`Prod`] for the integers and `f32`, `f64`, `f16`, `bf16`
/// (`NVSHMEMI_REPT_FOR_BITWISE_REDUCE_TYPES` and
/// `NVSHMEMI_REPT_FOR_STANDARD_REDUCE_TYPES`). So a reduction the library
/// lacks does not compile:
///
/// ```compile_fail
/// fn xor_floats<O: nvshmem_types::ReduceOp<f32>>() {}
/// xor_floats::<nvshmem_types::Xor>();
/// ```
///
/// ```
/// use nvshmem_types::{ReduceOp, Sum, Xor};
/// assert_eq!(<Sum as ReduceOp<f32>>::NAME, "float_sum");
/// assert_eq!(<Xor as ReduceOp<u64>>::NAME, "uint64_xor");
/// ```
///
/// Each (operator, type) pair is sealed, so no other crate can add one:
///
/// ```compile_fail
/// use nvshmem_types::{ReduceOp, ReduceOpKind, Sum};
/// #[derive(Clone, Copy)]
/// struct Pair(f32, f32);
/// impl ReduceOp<Pair> for Sum {
///     const KIND: ReduceOpKind = ReduceOpKind::Sum;
///     const NAME: &'static str = "double_sum";
/// }
/// ```
pub trait ReduceOp<T>: Copy + Default + Sealed + pair::Supported<T> {
    /// Which operator this is.
    const KIND: ReduceOpKind;
    /// NVSHMEM's type and operator part of the function name, such as
    /// `float_sum` (`nvshmem_float_sum_reduce`).
    const NAME: &'static str;
}

macro_rules! ops {
    ($($(#[$doc:meta])* $op:ident;)*) => {$(
        $(#[$doc])*
        ///
        /// An operator type: pass the value (`Sum`) to a reduction.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        pub struct $op;
        impl Sealed for $op {}
    )*};
}

ops! {
    /// Bitwise and (`RDXN_OPS_and`).
    And;
    /// Bitwise or (`RDXN_OPS_or`).
    Or;
    /// Bitwise exclusive or (`RDXN_OPS_xor`).
    Xor;
    /// Minimum (`RDXN_OPS_min`).
    Min;
    /// Maximum (`RDXN_OPS_max`).
    Max;
    /// Sum (`RDXN_OPS_sum`); floating-point sums may differ from a sequential
    /// sum in the last bits, as the order of additions is NVSHMEM's.
    Sum;
    /// Product (`RDXN_OPS_prod`).
    Prod;
}

/// Seals each (operator, type) pair, not only the operator: another crate
/// cannot add `impl ReduceOp<MyType> for Sum` naming a function for another
/// type (the reductions would then read and write past the buffers).
mod pair {
    pub trait Supported<T> {}
}

macro_rules! impl_reduce_ops {
    ([$(($op:ident, $o:literal)),*] $types:tt) => {
        $( impl_reduce_ops!(@op $op, $o, $types); )*
    };
    (@op $op:ident, $o:literal, { $($t:ty => $n:literal),* $(,)? }) => {$(
        impl pair::Supported<$t> for $op {}
        impl ReduceOp<$t> for $op {
            const KIND: ReduceOpKind = ReduceOpKind::$op;
            const NAME: &'static str = concat!($n, "_", $o);
        }
    )*};
}

// NVSHMEMI_REPT_FOR_BITWISE_REDUCE_TYPES, by Rust type.
impl_reduce_ops!([(And, "and"), (Or, "or"), (Xor, "xor")] {
    i8 => "int8", i16 => "int16", i32 => "int32", i64 => "int64",
    u8 => "uint8", u16 => "uint16", u32 => "uint32", u64 => "uint64", usize => "size",
});
// NVSHMEMI_REPT_FOR_STANDARD_REDUCE_TYPES: the bitwise list plus the floats.
impl_reduce_ops!([(Min, "min"), (Max, "max"), (Sum, "sum"), (Prod, "prod")] {
    i8 => "int8", i16 => "int16", i32 => "int32", i64 => "int64",
    u8 => "uint8", u16 => "uint16", u32 => "uint32", u64 => "uint64", usize => "size",
    f32 => "float", f64 => "double", f16 => "half", bf16 => "bfloat16",
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_join_type_and_operator() {
        assert_eq!(<Prod as ReduceOp<bf16>>::NAME, "bfloat16_prod");
        assert_eq!(<And as ReduceOp<usize>>::NAME, "size_and");
        assert_eq!(<Max as ReduceOp<i8>>::KIND.name(), "max");
    }
}
