//! NVSHMEM's headers: the X-macro type lists and the AMO op-group invocations.

use crate::Nvshmem;
use std::collections::{BTreeSet, HashMap};
use std::path::Path;

/// Joins `\`-continued lines and strips comments.
pub(crate) fn logical_lines(text: &str) -> Vec<String> {
    let mut no_comments = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("/*") {
        no_comments.push_str(&rest[..i]);
        rest = rest[i + 2..]
            .find("*/")
            .map_or("", |j| &rest[i + 2 + j + 2..]);
    }
    no_comments.push_str(rest);
    no_comments
        .replace("\\\r\n", " ")
        .replace("\\\n", " ")
        .lines()
        .map(|l| l.find("//").map_or(l, |i| &l[..i]).trim().to_string())
        .collect()
}

#[derive(Clone, Debug)]
pub(crate) struct Define {
    params: Vec<String>,
    body: String,
}

/// The calls `NAME(args)` in `text`, top level only, args trimmed with their
/// whitespace collapsed.
fn calls(text: &str) -> Vec<(String, Vec<String>)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let is_ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'#';
        if !is_ident(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && is_ident(b[i]) {
            i += 1;
        }
        let name = &text[start..i];
        let mut j = i;
        while j < b.len() && b[j] == b' ' {
            j += 1;
        }
        if j < b.len() && b[j] == b'(' {
            let (mut depth, mut k) = (0, j);
            while k < b.len() {
                match b[k] {
                    b'(' => depth += 1,
                    b')' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                k += 1;
            }
            let args = text[j + 1..k.min(b.len())]
                .split(',')
                .map(|a| a.split_whitespace().collect::<Vec<_>>().join(" "))
                .collect();
            out.push((name.to_string(), args));
            i = k + 1;
        }
    }
    out
}

/// Parses a `#define NAME(params) body` line.
fn parse_define(line: &str) -> Option<(String, Define)> {
    let rest = line.strip_prefix("#define")?.trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    let name = rest[..end].to_string();
    let rest = &rest[end..];
    let (params, body) = match rest.strip_prefix('(') {
        Some(r) => {
            let close = r.find(')')?;
            (
                r[..close]
                    .split(',')
                    .map(|p| p.trim().to_string())
                    .collect(),
                r[close + 1..].trim().to_string(),
            )
        }
        None => (Vec::new(), rest.trim().to_string()),
    };
    Some((name, Define { params, body }))
}

/// A header's macros, the first definition of each winning until an
/// `#undef` (so `#ifdef __cplusplus ... #else ...` keeps the C++ branch, as
/// the bitcode is C++), and the op-group invocations resolved in order.
pub(crate) struct Header {
    pub(crate) defines: HashMap<String, Define>,
    /// `(kind, opname, generated function names)` per AMO op-group invocation.
    amo_invocations: Vec<(String, String, Vec<String>)>,
}

fn read_header(path: &Path) -> Header {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut defines: HashMap<String, Define> = HashMap::new();
    let mut amo_invocations = Vec::new();
    // `#ifdef NVSHMEM_COMPLEX_SUPPORT` branches are skipped (to their `#else`):
    // the device bitcode is built without it.
    let mut skipping = false;
    for line in logical_lines(&text) {
        if line.starts_with("#ifdef NVSHMEM_COMPLEX_SUPPORT") {
            skipping = true;
            continue;
        }
        if skipping {
            skipping = !(line.starts_with("#else") || line.starts_with("#endif"));
            continue;
        }
        if let Some((name, def)) = parse_define(&line) {
            defines.entry(name).or_insert(def);
        } else if let Some(name) = line.strip_prefix("#undef") {
            defines.remove(name.trim());
        } else if !line.starts_with('#') {
            for (name, args) in calls(&line) {
                if !name.starts_with("NVSHMEMI_REPT_OPGROUP_FOR_") || args.len() != 2 {
                    continue;
                }
                let (kind, op) = (&args[0], &args[1]);
                let decl = defines
                    .get(&format!("NVSHMEMI_DECL_TYPE_{kind}"))
                    .unwrap_or_else(|| panic!("{}: no NVSHMEMI_DECL_TYPE_{kind}", path.display()));
                let pattern = name_pattern(&decl.body);
                let names = list_entries(&defines, &name)
                    .iter()
                    .map(|e| {
                        pattern
                            .replace("##type##", &e[0])
                            .replace("##opname", op)
                            .replace("##", "")
                    })
                    .collect();
                amo_invocations.push((kind.clone(), op.clone(), names));
            }
        }
    }
    Header {
        defines,
        amo_invocations,
    }
}

/// The function-name template in a `NVSHMEMI_DECL_TYPE_*` body, such as
/// `nvshmem_##type##_atomic_fetch_##opname`.
fn name_pattern(body: &str) -> String {
    let at = body
        .find("##type##")
        .expect("no ##type## in a NVSHMEMI_DECL_TYPE_* body");
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '#';
    let start = body[..at].rfind(|c| !is_name(c)).map_or(0, |i| i + 1);
    let end = body[at..]
        .find(|c| !is_name(c))
        .map_or(body.len(), |i| at + i);
    body[start..end].to_string()
}

/// The entries (template arguments) of X-macro list `name`, nested lists expanded.
pub(crate) fn list_entries(defines: &HashMap<String, Define>, name: &str) -> Vec<Vec<String>> {
    let def = defines
        .get(name)
        .unwrap_or_else(|| panic!("no #define {name}"));
    let template = def.params.first().cloned().unwrap_or_default();
    let mut out = Vec::new();
    for (callee, args) in calls(&def.body) {
        if callee == template || callee.starts_with("NVSHMEMI_DECL_TYPE_##") {
            out.push(args);
        } else if defines.contains_key(&callee) && callee.starts_with("NVSHMEMI_REPT") {
            out.extend(list_entries(defines, &callee));
        }
    }
    out
}

pub(crate) struct Headers {
    pub(crate) common: Header,
    pub(crate) api: Header,
    /// `host/nvshmem_coll_api.h`, as text.
    pub(crate) coll_api: String,
}

pub(crate) fn headers(nv: &Nvshmem) -> Headers {
    let inc = nv.include_dir();
    Headers {
        common: read_header(&inc.join("device_host/nvshmem_common.cuh")),
        api: read_header(&inc.join("host/nvshmem_api.h")),
        coll_api: std::fs::read_to_string(inc.join("host/nvshmem_coll_api.h")).unwrap(),
    }
}

pub(crate) fn names(entries: &[Vec<String>]) -> Vec<String> {
    entries.iter().map(|e| e[0].clone()).collect()
}

/// The thread scope alone: `(prefix, suffix)`.
const THREAD: &[(&str, &str)] = &[("nvshmem", "")];
/// `NVSHMEMI_REPT_FOR_STANDARD_RMA_TYPES_AND_SCOPES2`'s scopes.
const SCOPES: &[(&str, &str)] = &[
    ("nvshmem", ""),
    ("nvshmemx", "_warp"),
    ("nvshmemx", "_block"),
];
/// The typed put/get family (and, with a size, the sized one).
const RMA_OPS: &[&str] = &[
    "put",
    "put_nbi",
    "get",
    "get_nbi",
    "iput",
    "iget",
    "put_signal",
    "put_signal_nbi",
];

/// Adds `{prefix}_{type}_{op}{suffix}` for every scope, type and op (an
/// empty type drops out with its `_`).
fn add_names(
    out: &mut BTreeSet<String>,
    scopes: &[(&str, &str)],
    types: &[impl AsRef<str>],
    ops: &[impl AsRef<str>],
) {
    for (pre, sfx) in scopes {
        for t in types {
            for op in ops {
                let (t, op) = (t.as_ref(), op.as_ref());
                let t = if t.is_empty() {
                    String::new()
                } else {
                    format!("{t}_")
                };
                out.insert(format!("{pre}_{t}{op}{sfx}"));
            }
        }
    }
}

/// Every function name the headers' type lists generate for the families the
/// crate covers. (Names outside the type lists need no list here: the
/// bitcode's own exports are checked too.)
pub(crate) fn expected_names(h: &Headers) -> BTreeSet<String> {
    let list = |n: &str| names(&list_entries(&h.common.defines, n));
    let rma = list("NVSHMEMI_REPT_FOR_STANDARD_RMA_TYPES");
    let untyped = [""];
    let mut out = BTreeSet::new();
    add_names(&mut out, THREAD, &rma, &["p", "g"]);
    add_names(&mut out, SCOPES, &rma, RMA_OPS);
    let waits = ["test", "wait_until"];
    let wait_ops: Vec<String> = waits
        .iter()
        .flat_map(|w| {
            [
                w.to_string(),
                format!("{w}_all"),
                format!("{w}_any"),
                format!("{w}_some"),
                format!("{w}_all_vector"),
                format!("{w}_any_vector"),
                format!("{w}_some_vector"),
            ]
        })
        .collect();
    add_names(
        &mut out,
        THREAD,
        &list("NVSHMEMI_REPT_FOR_WAIT_TYPES"),
        &wait_ops,
    );
    for (_, _, amo) in &h.api.amo_invocations {
        out.extend(amo.iter().cloned());
    }
    let mem_ops = [
        "putmem",
        "putmem_nbi",
        "getmem",
        "getmem_nbi",
        "putmem_signal",
        "putmem_signal_nbi",
    ];
    add_names(&mut out, SCOPES, &untyped, &mem_ops);
    // The sized forms: `put8`, `put8_nbi`, `iget8`, `put8_signal`, ...
    for b in list("NVSHMEMI_REPT_FOR_SIZES") {
        let sized: Vec<String> = RMA_OPS
            .iter()
            .map(|op| match op.split_once('_') {
                Some((head, tail)) => format!("{head}{b}_{tail}"),
                None => format!("{op}{b}"),
            })
            .collect();
        add_names(&mut out, SCOPES, &untyped, &sized);
    }
    // Teams and collectives (`host/nvshmem{,x}_coll_api.h`, `host/nvshmem_api.h`).
    add_names(
        &mut out,
        SCOPES,
        &rma,
        &["broadcast", "fcollect", "alltoall"],
    );
    if h.coll_api.contains("DECL_NVSHMEM_TYPENAME_ALLTOALLS") {
        add_names(&mut out, THREAD, &rma, &["alltoalls"]);
    }
    add_names(
        &mut out,
        SCOPES,
        &untyped,
        &["broadcastmem", "fcollectmem", "alltoallmem"],
    );
    for (types, ops) in [
        (
            "NVSHMEMI_REPT_FOR_BITWISE_REDUCE_TYPES",
            &["and", "or", "xor"][..],
        ),
        (
            "NVSHMEMI_REPT_FOR_STANDARD_REDUCE_TYPES",
            &["min", "max"][..],
        ),
        ("NVSHMEMI_REPT_FOR_ARITH_REDUCE_TYPES", &["sum", "prod"][..]),
    ] {
        let reduce_ops: Vec<String> = ops
            .iter()
            .flat_map(|op| [format!("{op}_reduce"), format!("{op}_reducescatter")])
            .collect();
        add_names(&mut out, SCOPES, &list(types), &reduce_ops);
    }
    out
}

#[test]
fn parses_x_macro_lists() {
    let text = "#define LIST(T) \\\n    T(int, int) \\\n    T(uint64, uint64_t)\n\
                #define OUTER(T) LIST(T) T(size, size_t) /* a comment */\n\
                #define NVSHMEMI_DECL_TYPE_K(type, TYPE, opname) TYPE nvshmem_##type##_atomic_fetch_##opname(TYPE *d);\n\
                #define NVSHMEMI_REPT_OPGROUP_FOR_X(OPGRPNAME, opname) NVSHMEMI_DECL_TYPE_##OPGRPNAME(int32, int32_t, opname)\n\
                NVSHMEMI_REPT_OPGROUP_FOR_X(K, and)\n";
    let dir = std::env::temp_dir().join(format!("nvshmem-abi-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("h.h");
    std::fs::write(&path, text).unwrap();
    let h = read_header(&path);
    let mut defines = h.defines.clone();
    defines.insert("NVSHMEMI_REPT_OUTER".into(), defines["OUTER"].clone());
    defines.insert("NVSHMEMI_REPT_LIST".into(), defines["LIST"].clone());
    defines.get_mut("NVSHMEMI_REPT_OUTER").unwrap().body =
        "NVSHMEMI_REPT_LIST(T) T(size, size_t)".into();
    assert_eq!(names(&list_entries(&defines, "LIST")), ["int", "uint64"]);
    assert_eq!(
        names(&list_entries(&defines, "NVSHMEMI_REPT_OUTER")),
        ["int", "uint64", "size"]
    );
    assert_eq!(
        h.amo_invocations,
        [(
            "K".into(),
            "and".into(),
            vec!["nvshmem_int32_atomic_fetch_and".to_string()]
        )]
    );
    std::fs::remove_dir_all(dir).ok();
}
