//! Host tests of the typed layer's pure logic: which NVSHMEM name each Rust
//! type maps to, per trait, and that the name is in the right header list
//! with the right size.

use crate::ffi::lists::{self, CType};
use crate::{
    AmoElement, BitwiseAmoElement, Cmp, FetchAddAmoElement, RmaElement, SignalOp,
    StandardAmoElement, WaitElement,
};
extern crate std;
use core::mem::size_of;
use half::{bf16, f16};
use std::vec::Vec;

fn entry(list: &[CType], name: &str) -> CType {
    *list
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("`{name}` is not in the list"))
}

/// The one NVSHMEM name of each Rust type.
fn canonical(rust: &str) -> &'static str {
    match rust {
        "i8" => "int8",
        "i16" => "int16",
        "i32" => "int32",
        "i64" => "int64",
        "u8" => "uint8",
        "u16" => "uint16",
        "u32" => "uint32",
        "u64" => "uint64",
        "usize" => "size",
        "isize" => "ptrdiff",
        "f32" => "float",
        "f64" => "double",
        "f16" => "half",
        "bf16" => "bfloat16",
        other => panic!("no canonical name for {other}"),
    }
}

fn short(type_name: &str) -> &str {
    type_name.rsplit("::").next().unwrap()
}

fn check<T>(trait_name: &str, name: &str, list: &[CType], expected: &str) {
    let rust = short(core::any::type_name::<T>());
    assert_eq!(name, expected, "{trait_name} for {rust}");
    assert_eq!(
        entry(list, name).size,
        size_of::<T>(),
        "{trait_name} for {rust}: size of `{name}`"
    );
}

#[test]
fn rma_names_are_canonical() {
    fn one<T: RmaElement>() {
        let rust = short(core::any::type_name::<T>());
        check::<T>(
            "RmaElement",
            T::RMA_NAME,
            lists::STANDARD_RMA_TYPES,
            canonical(rust),
        );
    }
    one::<i8>();
    one::<i16>();
    one::<i32>();
    one::<i64>();
    one::<u8>();
    one::<u16>();
    one::<u32>();
    one::<u64>();
    one::<usize>();
    one::<isize>();
    one::<f32>();
    one::<f64>();
    one::<f16>();
    one::<bf16>();
}

#[test]
fn wait_names_are_canonical_or_the_same_c_type() {
    fn one<T: WaitElement>(expected: &str) {
        check::<T>("WaitElement", T::WAIT_NAME, lists::WAIT_TYPES, expected);
    }
    // The wait list has no int16/uint16.
    assert!(
        !lists::WAIT_TYPES
            .iter()
            .any(|t| t.name == "int16" || t.name == "uint16")
    );
    one::<i16>("short");
    one::<u16>("ushort");
    for (f, rust) in [
        (one::<i32> as fn(&str), "i32"),
        (one::<i64>, "i64"),
        (one::<u32>, "u32"),
        (one::<u64>, "u64"),
        (one::<usize>, "usize"),
        (one::<isize>, "isize"),
    ] {
        f(canonical(rust));
    }
}

#[test]
fn amo_names_follow_the_op_groups() {
    let all: Vec<CType> = [
        lists::BITWISE_AMO_TYPES,
        lists::STANDARD_AMO_TYPES,
        lists::EXTENDED_AMO_TYPES,
    ]
    .concat();
    let ints: Vec<CType> = [lists::BITWISE_AMO_TYPES, lists::STANDARD_AMO_TYPES].concat();
    fn amo<T: AmoElement>(all: &[CType]) {
        check::<T>(
            "AmoElement",
            T::AMO_NAME,
            all,
            canonical(short(core::any::type_name::<T>())),
        );
    }
    fn standard<T: StandardAmoElement>(ints: &[CType], add: &str) {
        amo::<T>(ints);
        check::<T>("AddAmoElement", T::ADD_NAME, ints, add);
        // NVSHMEM's device code implements no add/inc for these three.
        assert!(!["int64", "longlong", "ptrdiff"].contains(&T::ADD_NAME));
    }
    fn bitwise<T: BitwiseAmoElement>(ints: &[CType]) {
        entry(lists::BITWISE_AMO_TYPES, T::AMO_NAME);
        standard::<T>(ints, T::ADD_NAME);
    }
    amo::<f32>(&all);
    amo::<f64>(&all);
    standard::<i32>(&ints, "int32");
    standard::<i64>(&ints, "long");
    standard::<u32>(&ints, "uint32");
    standard::<u64>(&ints, "uint64");
    standard::<usize>(&ints, "size");
    standard::<isize>(&ints, "long");
    bitwise::<i32>(&ints);
    bitwise::<i64>(&ints);
    bitwise::<u32>(&ints);
    bitwise::<u64>(&ints);
    fn fetch_add<T: FetchAddAmoElement>() {}
    fetch_add::<i64>();
}

#[cfg(feature = "nvshmem-3-7")]
#[test]
fn float_adds_use_the_extended_list() {
    fn one<T: crate::AddAmoElement>(list: &[CType], expected: &str) {
        check::<T>("AddAmoElement", T::ADD_NAME, list, expected);
    }
    one::<f32>(lists::EXTENDED_AMO_TYPES, "float");
    one::<f64>(lists::EXTENDED_AMO_TYPES, "double");
    one::<f16>(lists::EXTENDED_AMO_HALF_TYPES, "half");
}

#[test]
fn enum_values_are_nvshmems() {
    // device_host_transport/nvshmem_constants.h (EQ = 0, then counting up)
    // and nvshmem_common_transport.h; tests/abi/ checks them against the
    // installed headers too.
    let cmp = [
        (Cmp::Eq, 0),
        (Cmp::Ne, 1),
        (Cmp::Gt, 2),
        (Cmp::Le, 3),
        (Cmp::Lt, 4),
        (Cmp::Ge, 5),
    ];
    for (c, v) in cmp {
        assert_eq!(c.to_c(), v, "{c:?}");
    }
    assert_eq!(SignalOp::Set.to_c(), 9);
    assert_eq!(SignalOp::Add.to_c(), 10);
}

#[test]
fn lists_have_nvshmems_lengths() {
    assert_eq!(lists::STANDARD_RMA_TYPES.len(), 25);
    assert_eq!(lists::WAIT_TYPES.len(), 14);
    assert_eq!(lists::BITWISE_AMO_TYPES.len(), 7);
    assert_eq!(lists::STANDARD_AMO_TYPES.len(), 5);
    assert_eq!(lists::EXTENDED_AMO_TYPES.len(), 2);
    assert_eq!(lists::SIZES, &[8, 16, 32, 64, 128]);
}
