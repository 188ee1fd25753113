//! The layout of NVSHMEM's device state that the `ptr-hoisted` candidate
//! (`device/src/symmetric.rs`, `ptr_hoisted`) reads by offset: heap base at
//! +40, heap size at +48, the P2P peer-base table at +56.

use crate::bitcode::disassembly;
use crate::{ARCH, bitcodes, find_nvshmem};

/// The fields of `nvshmemi_device_state_d`'s type up to the peer table, as
/// LLVM types: nine `i32`, two `bool` (`i8`), then `heap_base` (`ptr`, at 40
/// after padding), `heap_size` (`i64`, 48), `peer_heap_base_p2p` (`ptr`, 56).
const PREFIX: [&str; 14] = [
    "i32", "i32", "i32", "i32", "i32", "i32", "i32", "i32", "i32", "i8", "i8", "ptr", "i64", "ptr",
];

/// The element types of the struct type of `@nvshmemi_device_state_d` in
/// `ll` (top-level commas only), or why not.
fn device_state_fields(ll: &str) -> Result<Vec<String>, String> {
    let global = ll
        .lines()
        .find(|l| l.starts_with("@nvshmemi_device_state_d = "))
        .ok_or("no @nvshmemi_device_state_d")?;
    let ty = global
        .split_whitespace()
        .find(|w| w.starts_with("%struct."))
        .ok_or_else(|| format!("no struct type in `{global}`"))?;
    let def = ll
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{ty} = type {{ ")))
        .ok_or_else(|| format!("no definition of {ty}"))?;
    let (mut fields, mut depth, mut field) = (Vec::new(), 0, String::new());
    for c in def.chars() {
        match c {
            '{' | '[' | '<' | '(' => depth += 1,
            '}' | ']' | '>' | ')' if depth == 0 => break,
            '}' | ']' | '>' | ')' => depth -= 1,
            ',' if depth == 0 => {
                fields.push(field.trim().to_string());
                field.clear();
                continue;
            }
            _ => {}
        }
        field.push(c);
    }
    fields.push(field.trim().to_string());
    Ok(fields)
}

#[test]
fn device_state_layout_matches_ptr_hoisted() {
    let mut checked = 0;
    for (version, cuda) in bitcodes() {
        let Some(nv) = find_nvshmem(version, cuda) else {
            continue;
        };
        let bc = nv.device_bitcode(ARCH.parse().unwrap()).unwrap();
        let fields = device_state_fields(&disassembly(&bc))
            .unwrap_or_else(|e| panic!("NVSHMEM {version} (CUDA {cuda}): {e}"));
        assert!(
            fields.len() > PREFIX.len() && fields[..PREFIX.len()] == PREFIX,
            "NVSHMEM {version} (CUDA {cuda}): the device state begins {:?}, not {PREFIX:?}: \
             the offsets of `ptr_hoisted` (device/src/symmetric.rs) are stale",
            &fields[..PREFIX.len().min(fields.len())]
        );
        checked += 1;
    }
    if checked == 0 {
        say!("SKIPPED: no NVSHMEM installation found; the device state's layout not checked");
    } else {
        say!("ABI: the device state's layout, as `ptr_hoisted` reads it, in {checked} bitcode(s)");
    }
}

#[test]
fn device_state_fields_parse() {
    let ll = "%struct.s = type { i32, [2 x i8], { ptr, i64 }, ptr }\n\
              @nvshmemi_device_state_d = dso_local addrspace(4) global %struct.s zeroinitializer\n";
    assert_eq!(
        device_state_fields(ll).unwrap(),
        ["i32", "[2 x i8]", "{ ptr, i64 }", "ptr"]
    );
    assert!(device_state_fields("").is_err());
}
