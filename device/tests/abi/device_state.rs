//! What `ptr`'s peer lookup (`device/src/symmetric.rs`, `peer_lookup`)
//! assumes of NVSHMEM's device state, which it reads by offset: the state is
//! in constant memory with heap base at +40, heap size at +48 and the P2P
//! peer-base table at +56; `nvshmem_ptr` reads nothing else of it but the
//! PE count (+8), calls nothing, and is one of the bodies it was compared
//! with. Checked in every per-arch bitcode file of each release, since a
//! kernel links the file of its arch.

use crate::bitcode::extracted;
use crate::{bitcodes, find_nvshmem};

/// The fields of `nvshmemi_device_state_d`'s type up to the peer table, as
/// LLVM types with their byte offsets (LLVM's data layout for NVPTX: `ptr`
/// and `i64` aligned to 8): nine `i32`, two `bool` (`i8`), then `heap_base`
/// (`ptr`, 40 after padding), `heap_size` (`i64`, 48) and
/// `peer_heap_base_p2p` (`ptr`, 56).
const PREFIX: [(&str, u64); 14] = [
    ("i32", 0),
    ("i32", 4),
    ("i32", 8),
    ("i32", 12),
    ("i32", 16),
    ("i32", 20),
    ("i32", 24),
    ("i32", 28),
    ("i32", 32),
    ("i8", 36),
    ("i8", 37),
    ("ptr", 40),
    ("i64", 48),
    ("ptr", 56),
];

/// The offsets `peer_lookup` reads as `nvshmem_ptr` does, and the PE count,
/// which it reads as `nvshmem_n_pes` does (and `nvshmem_ptr` too, for its
/// range check, since 3.5).
const LOOKUP_OFFSETS: [u64; 3] = [40, 48, 56];
const PE_COUNT_OFFSET: u64 = 8;

/// The element types of the struct type of `@nvshmemi_device_state_d` in
/// `ll` (top-level commas only), or why not: also when the global is not in
/// constant memory (`addrspace(4)`), where `peer_lookup`'s `ld.const` reads.
fn device_state_fields(ll: &str) -> Result<Vec<String>, String> {
    let global = ll
        .lines()
        .find(|l| l.starts_with("@nvshmemi_device_state_d = "))
        .ok_or("no @nvshmemi_device_state_d")?;
    if !global.contains(" addrspace(4) ") {
        return Err(format!("not in constant memory: `{global}`"));
    }
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
fn device_state_layout_matches_peer_lookup() {
    let mut checked = 0;
    for (version, cuda) in bitcodes() {
        let Some(nv) = find_nvshmem(version, cuda) else {
            continue;
        };
        // Every file a kernel may link: one per arch, or the one file.
        let archs = nv.bitcode_archs();
        assert!(
            !archs.is_empty(),
            "NVSHMEM {version} (CUDA {cuda}): no bitcode in {}",
            nv.lib_dir().display()
        );
        for arch in archs {
            let what = format!("NVSHMEM {version} (CUDA {cuda}) {arch}");
            let bc = nv.bitcode_file(&arch);
            check_device_state(&what, &extracted(&bc, &["nvshmem_ptr", "nvshmem_n_pes"]));
            checked += 1;
        }
    }
    if checked == 0 {
        say!("SKIPPED: no NVSHMEM installation found; the device state's layout not checked");
    } else {
        say!(
            "ABI: the device state's layout, nvshmem_n_pes's and nvshmem_ptr's reads and nvshmem_ptr's body, as `peer_lookup` assumes, \
             in {checked} bitcode file(s)"
        );
    }
}

/// The checks of one bitcode file, `ll` being its `nvshmem_ptr` and what
/// that uses ([`extracted`]).
fn check_device_state(what: &str, ll: &str) {
    let fields = device_state_fields(ll).unwrap_or_else(|e| panic!("{what}: {e}"));
    let expected: Vec<&str> = PREFIX.iter().map(|(ty, _)| *ty).collect();
    assert!(
        fields.len() > PREFIX.len() && fields[..PREFIX.len()] == expected,
        "{what}: the device state begins {:?}, not {expected:?}: \
         the offsets of `peer_lookup` (device/src/symmetric.rs) are stale",
        &fields[..PREFIX.len().min(fields.len())]
    );
    let pe_count = state_reads(ll, "nvshmem_n_pes").unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        pe_count.iter().eq([&PE_COUNT_OFFSET]),
        "{what}: nvshmem_n_pes reads the device state at {pe_count:?}, not \
         {PE_COUNT_OFFSET}: `peer_lookup` (device/src/symmetric.rs) checks `pe` against a stale field"
    );
    let reads = state_reads(ll, "nvshmem_ptr").unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        LOOKUP_OFFSETS.iter().all(|o| reads.contains(o))
            && reads
                .iter()
                .all(|o| LOOKUP_OFFSETS.contains(o) || *o == PE_COUNT_OFFSET),
        "{what}: nvshmem_ptr reads the device state at {reads:?}, not {LOOKUP_OFFSETS:?} \
         (and the PE count): `peer_lookup` (device/src/symmetric.rs) no longer computes what it does"
    );
    let body = normalized_body(ll).unwrap_or_else(|| panic!("{what}: no nvshmem_ptr"));
    let hash = fnv1a(&body);
    assert!(
        KNOWN_NVSHMEM_PTR_BODIES.contains(&hash),
        "{what}: nvshmem_ptr is not one of the bodies `peer_lookup` (device/src/symmetric.rs) \
         was compared with. Compare it, then add {hash:#018x} to KNOWN_NVSHMEM_PTR_BODIES:\n{body}"
    );
}

/// FNV-1a hashes of every supported release's `nvshmem_ptr` body, as
/// [`normalized_body`] gives it, each read and found to compute what
/// `peer_lookup` computes: 3.3-3.4 (no PE check), 3.5 (PE check, field
/// indices), 3.6-3.8 (byte offsets) without `nuw` (CUDA 12 3.6.5, 3.7.2)
/// and with it (the others); every per-arch file of a release has its
/// release's body. A release whose
/// body is not among them fails the test until someone compares it with
/// `peer_lookup` and adds its hash (the test prints body and hash).
const KNOWN_NVSHMEM_PTR_BODIES: [u64; 4] = [
    0xc94c_19c8_8c8e_9932,
    0x2b00_ac2b_bd11_4ce3,
    0x1052_69f1_9395_ddb1,
    0xe7d9_cc79_060f_f0e1,
];

/// `@nvshmem_ptr`'s definition in `ll` without what differs between builds
/// of the same code: metadata attachments, attribute-group numbers and
/// struct type names, and `local_unnamed_addr`, which [`extracted`]'s
/// linking drops.
fn normalized_body(ll: &str) -> Option<String> {
    let mut out = String::new();
    let mut lines = ll
        .lines()
        .skip_while(|l| !(l.starts_with("define ") && l.contains(" @nvshmem_ptr(")));
    for line in lines.by_ref() {
        let mut rest = line;
        let mut kept = String::new();
        // `, !name !N` metadata attachments.
        while let Some(at) = rest.find(", !") {
            kept += &rest[..at];
            let after = &rest[at + 3..];
            let name_end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
                .unwrap_or(after.len());
            let tail = &after[name_end..];
            match tail.strip_prefix(" !") {
                Some(t) => rest = t.trim_start_matches(|c: char| c.is_ascii_digit()),
                None => {
                    kept += ", !";
                    rest = after;
                }
            }
        }
        kept += rest;
        // ` #N {` attribute groups on the `define` line.
        if let Some(at) = kept.rfind(" #")
            && kept.ends_with(" {")
        {
            kept.replace_range(at..kept.len() - 2, "");
        }
        let mut kept = kept.replace(" local_unnamed_addr", "");
        // `%struct.name` type names.
        while let Some(at) = kept.find("%struct.") {
            let end = kept[at + 8..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
                .map_or(kept.len(), |e| at + 8 + e);
            kept.replace_range(at..end, "%struct");
        }
        out += &kept;
        out.push('\n');
        if line == "}" {
            return Some(out);
        }
    }
    None
}

/// 64-bit FNV-1a of `text`.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The byte offsets of `@nvshmemi_device_state_d` that `@nvshmem_ptr`'s
/// definition in `ll` loads (field indices of [`PREFIX`] or byte offsets,
/// as each release's bitcode writes them), or why not: also when it calls a
/// function.
fn state_reads(ll: &str, function: &str) -> Result<std::collections::BTreeSet<u64>, String> {
    let body: Vec<&str> = ll
        .lines()
        .skip_while(|l| !(l.starts_with("define ") && l.contains(&format!(" @{function}("))))
        .take_while(|l| *l != "}")
        .collect();
    if body.is_empty() {
        return Err(format!("no definition of {function}"));
    }
    if let Some(call) = body.iter().find(|l| l.contains(" call ")) {
        return Err(format!("{function} calls: `{}`", call.trim()));
    }
    let mut reads = std::collections::BTreeSet::new();
    for line in body
        .iter()
        .filter(|l| l.contains("@nvshmemi_device_state_d"))
    {
        let field = |marker: &str| {
            let rest = &line[line.find(marker)? + marker.len()..];
            rest[..rest.find(')')?].parse::<u64>().ok()
        };
        let offset = if let Some(i) = field("@nvshmemi_device_state_d, i64 0, i32 ") {
            PREFIX
                .get(i as usize)
                .ok_or_else(|| format!("field {i} is past the checked prefix: `{line}`"))?
                .1
        } else if let Some(o) = field("@nvshmemi_device_state_d to ptr), i64 ") {
            o
        } else if line.contains("load ") && line.contains("@nvshmemi_device_state_d,") {
            0
        } else {
            return Err(format!(
                "an access state_reads does not parse: `{}`",
                line.trim()
            ));
        };
        reads.insert(offset);
    }
    Ok(reads)
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
    let global = "%struct.s = type { i32 }\n@nvshmemi_device_state_d = dso_local global %struct.s zeroinitializer\n";
    assert!(
        device_state_fields(global)
            .unwrap_err()
            .contains("constant memory")
    );
}

#[test]
fn normalized_body_drops_build_details() {
    let ll = "declare void @f()\n\
        define dso_local ptr @nvshmem_ptr(ptr noundef %0, i32 noundef %1) local_unnamed_addr #14 {\n  \
        %3 = load ptr, ptr addrspace(4) getelementptr inbounds (%struct.nvshmemi_device_host_state_v1, ptr addrspace(4) @s, i64 0, i32 11), align 8, !tbaa !24\n  \
        %4 = load i64, ptr addrspace(1) %3, align 8, !invariant.load !54\n  \
        ret ptr %3\n}\nafter\n";
    assert_eq!(
        normalized_body(ll).unwrap(),
        "define dso_local ptr @nvshmem_ptr(ptr noundef %0, i32 noundef %1) {\n  \
         %3 = load ptr, ptr addrspace(4) getelementptr inbounds (%struct, ptr addrspace(4) @s, i64 0, i32 11), align 8\n  \
         %4 = load i64, ptr addrspace(1) %3, align 8\n  \
         ret ptr %3\n}\n"
    );
    assert_eq!(normalized_body("define void @g() {\n}\n"), None);
    assert_eq!(fnv1a(""), 0xcbf2_9ce4_8422_2325);
}

#[test]
fn state_reads_parse() {
    // The two forms of the releases' bitcode: field indices (3.3-3.5) and byte offsets (3.6+).
    let by_field = "define ptr @nvshmem_ptr(ptr %0, i32 %1) {\n  \
        %3 = load ptr, ptr addrspace(4) getelementptr inbounds (%struct.s, ptr addrspace(4) @nvshmemi_device_state_d, i64 0, i32 11), align 8\n  \
        %4 = load i32, ptr addrspace(4) getelementptr inbounds (%struct.s, ptr addrspace(4) @nvshmemi_device_state_d, i64 0, i32 2), align 8\n}\n";
    assert_eq!(
        state_reads(by_field, "nvshmem_ptr")
            .unwrap()
            .into_iter()
            .collect::<Vec<_>>(),
        [8, 40]
    );
    let by_byte = "define ptr @nvshmem_ptr(ptr %0, i32 %1) {\n  \
        %8 = load ptr, ptr getelementptr inbounds nuw (i8, ptr addrspacecast (ptr addrspace(4) @nvshmemi_device_state_d to ptr), i64 56), align 8\n}\n";
    assert_eq!(
        state_reads(by_byte, "nvshmem_ptr")
            .unwrap()
            .into_iter()
            .collect::<Vec<_>>(),
        [56]
    );
    let calls = "define ptr @nvshmem_ptr(ptr %0, i32 %1) {\n  %3 = call ptr @f()\n}\n";
    assert!(
        state_reads(calls, "nvshmem_ptr")
            .unwrap_err()
            .contains("calls")
    );
    assert!(state_reads("", "nvshmem_ptr").is_err());
}
