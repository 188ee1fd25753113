//! The type lists of `nvshmem_device::ffi::lists` against the headers.

use crate::for_each_version;
use crate::headers::{headers, list_entries, names};
use nvshmem_device::ffi::lists::{self, CType};

/// The size of a C type in NVSHMEM's lists on nvptx64.
fn c_size(c_type: &str) -> usize {
    match c_type {
        "char" | "signed char" | "unsigned char" | "int8_t" | "uint8_t" => 1,
        "short" | "unsigned short" | "int16_t" | "uint16_t" | "half" | "__half"
        | "__nv_bfloat16" => 2,
        "int" | "unsigned int" | "int32_t" | "uint32_t" | "float" => 4,
        "long" | "unsigned long" | "long long" | "unsigned long long" | "int64_t" | "uint64_t"
        | "size_t" | "ptrdiff_t" | "double" => 8,
        other => panic!("unknown C type `{other}`"),
    }
}

fn table(list: &[CType]) -> Vec<(String, String)> {
    for t in list {
        assert_eq!(
            t.size,
            c_size(t.c_type),
            "{}: the Rust type's size differs from `{}`",
            t.name,
            t.c_type
        );
    }
    list.iter()
        .map(|t| (t.name.to_string(), t.c_type.to_string()))
        .collect()
}

fn header_table(entries: Vec<Vec<String>>) -> Vec<(String, String)> {
    entries
        .into_iter()
        .map(|e| (e[0].clone(), e[1].clone()))
        .collect()
}

#[test]
fn type_lists_match_headers() {
    use lists::*;
    for_each_version("type lists", |version, nv| {
        let h = headers(nv);
        let (c, a) = (&h.common, &h.api);
        for (header, name, ours) in [
            (c, "FOR_STANDARD_RMA_TYPES", STANDARD_RMA_TYPES),
            (c, "FOR_WAIT_TYPES", WAIT_TYPES),
            (a, "OPGROUP_FOR_BITWISE_AMO", BITWISE_AMO_TYPES),
            (a, "OPGROUP_FOR_STANDARD_AMO", STANDARD_AMO_TYPES),
            (a, "OPGROUP_FOR_EXTENDED_AMO", EXTENDED_AMO_TYPES),
            (c, "FOR_BITWISE_REDUCE_TYPES", BITWISE_REDUCE_TYPES),
            (c, "FOR_STANDARD_REDUCE_TYPES", STANDARD_REDUCE_TYPES),
            (c, "FOR_ARITH_REDUCE_TYPES", ARITH_REDUCE_TYPES),
        ] {
            let name = format!("NVSHMEMI_REPT_{name}");
            let mut ours = table(ours);
            // 3.8 puts its C++-only `half` in front of the extended AMO list.
            if name.ends_with("_EXTENDED_AMO") && a.defines.contains_key(&format!("{name}_HALF")) {
                ours.splice(0..0, table(EXTENDED_AMO_HALF_TYPES));
            }
            let theirs = header_table(list_entries(&header.defines, &name));
            assert_eq!(ours, theirs, "{version}: {name}");
        }
        let sizes: Vec<String> = SIZES.iter().map(u32::to_string).collect();
        assert_eq!(
            sizes,
            names(&list_entries(&c.defines, "NVSHMEMI_REPT_FOR_SIZES")),
            "{version}"
        );
        say!("type lists match NVSHMEM {version}'s headers");
    });
}
