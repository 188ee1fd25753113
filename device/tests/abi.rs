//! The device crate's `extern "C"` declarations against NVSHMEM's device bitcode.
//!
//! 1. Builds the crate for nvptx64 with the internal `abi-probe` feature, which
//!    references every declared function from a `#[used]` static, and reads the
//!    `declare` lines of `--emit=llvm-ir`: the LLVM types rustc lowers the
//!    declarations to.
//! 2. Compares them with the `define` lines of `llvm-dis` of NVSHMEM's bitcode
//!    (3.4.5 with default features, 3.8.0's sm_90 file with `nvshmem-3-8`).
//!    Attributes and value names are ignored; the types must be equal.
//! 3. Checks the whole API: every function the bitcode exports (every
//!    `nvshmem*` `define`) and every name the headers' type lists generate is
//!    declared or in the one gap table, in `src/ffi/mod.rs`'s docs (parsed
//!    here: [`documented_gaps`]), and every gap is real: absent from the
//!    bitcode, returning a struct by value, or (`omitted`) exported but left
//!    out on purpose.
//!
//! Also checks the type lists and the `Cmp`/`SignalOp` values against the
//! headers. Without NVSHMEM it prints `SKIPPED: ...`;
//! `NVSHMEM_RS_REQUIRE_ALL=1` turns that into a failure.

use nvshmem_builder::Version;
use nvshmem_builder::install::Installation as Nvshmem;
use nvshmem_builder::ir::{FnSig as Sig, fn_signatures};
use nvshmem_builder::toolchain::Toolchain;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

const V345: &str = "3.4.5";
const V380: &str = "3.8.0";
const ALL: &[&str] = &[V345, V380];
const ARCH: &str = "sm_90";

/// Why a function is not declared: the gap table's `Kind` column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Why {
    /// `absent`: named by the headers, not defined in that version's bitcode.
    Absent,
    /// `struct return`: defined, but returns `%struct.__half`/`%struct.__nv_bfloat16` by value.
    StructReturn,
    /// `omitted`: defined, and left out on purpose (the table says why).
    Omitted,
}

#[derive(Debug)]
struct Gap {
    symbol: String,
    versions: Vec<&'static str>,
    why: Why,
}

/// The gap table of `src/ffi/mod.rs` (section `# Gaps`), brace groups
/// expanded: `| functions | versions | kind | why |`, one row per group.
fn documented_gaps() -> Vec<Gap> {
    let src = std::fs::read_to_string(device_dir().join("src/ffi/mod.rs")).unwrap();
    let section = src
        .split("//! # Gaps")
        .nth(1)
        .expect("src/ffi/mod.rs has no `# Gaps` section");
    let mut out = Vec::new();
    for row in section
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with("//!"))
        .filter(|l| l.starts_with("//! | `"))
    {
        let cells: Vec<&str> = row
            .trim_start_matches("//!")
            .split('|')
            .map(str::trim)
            .collect();
        let versions: Vec<&'static str> = match cells[2] {
            "all" => ALL.to_vec(),
            v => v
                .split(',')
                .map(|v| match v.trim() {
                    V345 => V345,
                    V380 => V380,
                    other => panic!("gap table: unknown version `{other}` in {row}"),
                })
                .collect(),
        };
        let why = match cells[3] {
            "absent" => Why::Absent,
            "struct return" => Why::StructReturn,
            "omitted" => Why::Omitted,
            other => panic!("gap table: unknown kind `{other}` in {row}"),
        };
        assert!(
            cells.get(4).is_some_and(|c| c.len() > 10),
            "gap table: no reason in {row}"
        );
        for quoted in cells[1].split('`').skip(1).step_by(2) {
            for symbol in brace_expand(quoted) {
                out.push(Gap {
                    symbol,
                    versions: versions.clone(),
                    why,
                });
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Environment: NVSHMEM, toolchain, skips.

fn device_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Prints to the real stderr, past the test harness's capture, so skips and
/// summaries show in every `cargo test` log.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

fn require_all() -> bool {
    std::env::var("NVSHMEM_RS_REQUIRE_ALL").is_ok_and(|v| v == "1")
}

/// Reports a skip loudly; a failure under `NVSHMEM_RS_REQUIRE_ALL=1`.
fn skip(what: &str, reason: &str) {
    if require_all() {
        panic!("{what}: NVSHMEM_RS_REQUIRE_ALL=1, but {reason}");
    }
    say!("SKIPPED: {what}: {reason}");
}

/// NVSHMEM `version`, found or downloaded into the per-user cache.
fn find_nvshmem(version: &str) -> Result<Nvshmem, String> {
    let v: Version = version.parse().unwrap();
    nvshmem_builder::wheels::nvshmem(v).map_err(|e| format!("NVSHMEM {version} not found ({e})"))
}

fn toolchain() -> &'static Toolchain {
    static TC: OnceLock<Toolchain> = OnceLock::new();
    TC.get_or_init(|| {
        Toolchain::pinned()
            .unwrap_or_else(|e| panic!("the pinned nightly toolchain is required: {e}"))
    })
}

// ---------------------------------------------------------------------------
// LLVM function types (the builder's parser: `nvshmem_builder::ir`).

/// The `nvshmem*` functions of a module's `keyword` (`"define "` or
/// `"declare "`) lines.
fn nvshmem_functions(ll: &str, keyword: &str) -> BTreeMap<String, Sig> {
    fn_signatures(ll, keyword)
        .into_iter()
        .filter(|(name, _)| name.starts_with("nvshmem"))
        .collect()
}

/// The functions NVSHMEM's bitcode defines, by `llvm-dis`.
fn bitcode_defines(bc: &Path) -> BTreeMap<String, Sig> {
    let dis = toolchain().llvm_tool("llvm-dis").unwrap();
    let out = Command::new(&dis)
        .arg(bc)
        .args(["-o", "-"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "llvm-dis {}: {}",
        bc.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let defs = nvshmem_functions(&String::from_utf8_lossy(&out.stdout), "define ");
    assert!(
        defs.len() > 1000,
        "{} defines only {} nvshmem functions",
        bc.display(),
        defs.len()
    );
    defs
}

/// What the device crate declares with `features` (plus `abi-probe`): the
/// `declare` lines of its nvptx64 LLVM IR. Also fails on any warning.
fn probe(features: &[&str]) -> BTreeMap<String, Sig> {
    static CACHE: OnceLock<Mutex<HashMap<String, BTreeMap<String, Sig>>>> = OnceLock::new();
    let key = features.join(",");
    let cache = CACHE.get_or_init(Default::default);
    if let Some(hit) = cache.lock().unwrap().get(&key) {
        return hit.clone();
    }
    let tc = toolchain();
    let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("abi-probe");
    let mut all = vec!["abi-probe"];
    all.extend_from_slice(features);
    let out = Command::new(tc.cargo())
        .current_dir(device_dir())
        .args([
            "rustc",
            "--lib",
            "--release",
            "--target",
            "nvptx64-nvidia-cuda",
            "-Zbuild-std=core",
        ])
        .arg("--manifest-path")
        .arg(device_dir().join("Cargo.toml"))
        .args(["--message-format=json", "--features", &all.join(",")])
        .args(["--", "--emit=llvm-ir", "-C", "codegen-units=1"])
        .env("CARGO_TARGET_DIR", &target_dir)
        .env("RUSTC", tc.rustc())
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("RUSTUP_TOOLCHAIN")
        .output()
        .expect("cannot run cargo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut rmeta = None;
    let mut warnings = Vec::new();
    for line in stdout.lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let ours = msg["package_id"]
            .as_str()
            .is_some_and(|p| p.contains("/device#") || p.contains("nvshmem-device"));
        match msg["reason"].as_str() {
            Some("compiler-message") if ours => {
                let m = &msg["message"];
                if m["level"].as_str() == Some("warning") {
                    warnings.push(m["rendered"].as_str().unwrap_or("").to_string());
                }
            }
            Some("compiler-artifact") if msg["target"]["name"] == "nvshmem_device" => {
                rmeta = msg["filenames"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|f| f.as_str())
                    .find(|f| f.ends_with(".rmeta"))
                    .map(PathBuf::from);
            }
            _ => {}
        }
    }
    assert!(
        out.status.success(),
        "building the ABI probe (features {key:?}) failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        stdout
            .lines()
            .filter(|l| l.contains("\"rendered\""))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        warnings.is_empty(),
        "nvptx64 build of nvshmem-device ({key:?}) has warnings:\n{}",
        warnings.join("\n")
    );
    let rmeta = rmeta.expect("no compiler-artifact message for nvshmem_device");
    let stem = rmeta
        .file_stem()
        .unwrap()
        .to_str()
        .unwrap()
        .strip_prefix("lib")
        .unwrap()
        .to_string();
    let ll = rmeta.with_file_name(format!("{stem}.ll"));
    let text = std::fs::read_to_string(&ll).unwrap_or_else(|e| panic!("{}: {e}", ll.display()));
    let decls = nvshmem_functions(&text, "declare ");
    assert!(
        decls.len() > 1000,
        "the probe declares only {} functions: is `abi-probe` wired up?",
        decls.len()
    );
    cache.lock().unwrap().insert(key, decls.clone());
    decls
}

// ---------------------------------------------------------------------------
// NVSHMEM's headers: the X-macro type lists and the AMO op-group invocations.

/// Joins `\`-continued lines and strips comments.
fn logical_lines(text: &str) -> Vec<String> {
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
struct Define {
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
struct Header {
    defines: HashMap<String, Define>,
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
fn list_entries(defines: &HashMap<String, Define>, name: &str) -> Vec<Vec<String>> {
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

struct Headers {
    common: Header,
    api: Header,
    /// `host/nvshmem_coll_api.h`, as text.
    coll_api: String,
}

fn headers(nv: &Nvshmem) -> Headers {
    let inc = nv.include_dir();
    Headers {
        common: read_header(&inc.join("device_host/nvshmem_common.cuh")),
        api: read_header(&inc.join("host/nvshmem_api.h")),
        coll_api: std::fs::read_to_string(inc.join("host/nvshmem_coll_api.h")).unwrap(),
    }
}

fn names(entries: &[Vec<String>]) -> Vec<String> {
    entries.iter().map(|e| e[0].clone()).collect()
}

/// Every function name the headers' type lists generate for the families the
/// crate covers. (Names outside the type lists need no list here: the
/// bitcode's own exports are checked too.)
fn expected_names(h: &Headers) -> BTreeSet<String> {
    let rma = names(&list_entries(
        &h.common.defines,
        "NVSHMEMI_REPT_FOR_STANDARD_RMA_TYPES",
    ));
    let wait = names(&list_entries(
        &h.common.defines,
        "NVSHMEMI_REPT_FOR_WAIT_TYPES",
    ));
    let sizes = names(&list_entries(&h.common.defines, "NVSHMEMI_REPT_FOR_SIZES"));
    let scopes = [
        ("nvshmem", ""),
        ("nvshmemx", "_warp"),
        ("nvshmemx", "_block"),
    ];
    let mut out = BTreeSet::new();
    for t in &rma {
        out.insert(format!("nvshmem_{t}_p"));
        out.insert(format!("nvshmem_{t}_g"));
        for (pre, sfx) in scopes {
            for op in [
                "put",
                "put_nbi",
                "get",
                "get_nbi",
                "iput",
                "iget",
                "put_signal",
                "put_signal_nbi",
            ] {
                out.insert(format!("{pre}_{t}_{op}{sfx}"));
            }
        }
    }
    for t in &wait {
        for op in [
            "test",
            "test_all",
            "test_any",
            "test_some",
            "wait_until",
            "wait_until_all",
            "wait_until_any",
        ] {
            out.insert(format!("nvshmem_{t}_{op}"));
        }
        out.insert(format!("nvshmem_{t}_wait_until_some"));
        for op in [
            "test_all",
            "test_any",
            "test_some",
            "wait_until_all",
            "wait_until_any",
            "wait_until_some",
        ] {
            out.insert(format!("nvshmem_{t}_{op}_vector"));
        }
    }
    for (_, _, amo) in &h.api.amo_invocations {
        out.extend(amo.iter().cloned());
    }
    for (pre, sfx) in scopes {
        for op in [
            "putmem",
            "putmem_nbi",
            "getmem",
            "getmem_nbi",
            "putmem_signal",
            "putmem_signal_nbi",
        ] {
            out.insert(format!("{pre}_{op}{sfx}"));
        }
        for b in &sizes {
            for op in [
                format!("put{b}"),
                format!("put{b}_nbi"),
                format!("get{b}"),
                format!("get{b}_nbi"),
                format!("iput{b}"),
                format!("iget{b}"),
                format!("put{b}_signal"),
                format!("put{b}_signal_nbi"),
            ] {
                out.insert(format!("{pre}_{op}{sfx}"));
            }
        }
    }
    // Teams and collectives (`host/nvshmem{,x}_coll_api.h`, `host/nvshmem_api.h`).
    for t in &rma {
        for (pre, sfx) in scopes {
            for op in ["broadcast", "fcollect", "alltoall"] {
                out.insert(format!("{pre}_{t}_{op}{sfx}"));
            }
        }
        if h.coll_api.contains("DECL_NVSHMEM_TYPENAME_ALLTOALLS") {
            out.insert(format!("nvshmem_{t}_alltoalls"));
        }
    }
    for (pre, sfx) in scopes {
        for op in ["broadcastmem", "fcollectmem", "alltoallmem"] {
            out.insert(format!("{pre}_{op}{sfx}"));
        }
    }
    let reduce_list = |n: &str| names(&list_entries(&h.common.defines, n));
    for (list, ops) in [
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
        for t in reduce_list(list) {
            for op in ops {
                for (pre, sfx) in scopes {
                    out.insert(format!("{pre}_{t}_{op}_reduce{sfx}"));
                    out.insert(format!("{pre}_{t}_{op}_reducescatter{sfx}"));
                }
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------
// The checks.

/// Every declaration exists in the bitcode with the same type. Returns the
/// problems and the number of declarations checked.
fn compare(decls: &BTreeMap<String, Sig>, defs: &BTreeMap<String, Sig>) -> (Vec<String>, usize) {
    let mut problems = Vec::new();
    for (name, sig) in decls {
        match defs.get(name) {
            None => problems.push(format!(
                "{name}: declared as `{sig}`, not defined in the bitcode"
            )),
            Some(def) if def != sig => {
                problems.push(format!("{name}: declared as `{sig}`, bitcode has `{def}`"))
            }
            Some(_) => {}
        }
    }
    (problems, decls.len())
}

/// The whole API of `version`: every function its bitcode exports and every
/// name its headers' type lists generate is declared or a documented gap,
/// and every gap is real. Returns the problems and the number of gaps.
fn check_coverage(
    version: &str,
    named: &BTreeSet<String>,
    decls: &BTreeMap<String, Sig>,
    defs: &BTreeMap<String, Sig>,
) -> (Vec<String>, usize) {
    let all = documented_gaps();
    let gaps: BTreeMap<&str, &Gap> = all
        .iter()
        .filter(|g| g.versions.contains(&version))
        .map(|g| (g.symbol.as_str(), g))
        .collect();
    let mut problems = Vec::new();
    for (symbol, g) in &gaps {
        if decls.contains_key(*symbol) {
            problems.push(format!("gap {symbol} is declared"));
        }
        if !named.contains(*symbol) && !defs.contains_key(*symbol) {
            problems.push(format!(
                "gap {symbol}: neither exported by NVSHMEM {version}'s bitcode nor named by its headers"
            ));
        }
        match (g.why, defs.get(*symbol)) {
            (Why::Absent, Some(def)) => problems.push(format!(
                "gap {symbol} (absent) is defined in NVSHMEM {version}'s bitcode as `{def}`: declare it"
            )),
            (Why::StructReturn | Why::Omitted, None) => {
                problems.push(format!("gap {symbol} ({:?}) is not defined at all", g.why))
            }
            (Why::StructReturn, Some(def)) if !def.ret.starts_with("%struct.") => problems.push(
                format!("gap {symbol} (struct return) is `{def}`: declare it"),
            ),
            _ => {}
        }
    }
    for name in named.iter().chain(defs.keys()) {
        if !decls.contains_key(name) && !gaps.contains_key(name.as_str()) {
            problems.push(format!(
                "{name}: {} NVSHMEM {version}, but neither declared nor in the gap table of src/ffi/mod.rs",
                if defs.contains_key(name) {
                    "exported by the bitcode of"
                } else {
                    "named by the headers (absent from the bitcode) of"
                }
            ));
        }
    }
    (problems, gaps.len())
}

fn report(title: &str, problems: &[String]) -> bool {
    if problems.is_empty() {
        return true;
    }
    say!("{title}: {} problem(s):", problems.len());
    for p in problems {
        say!("  {p}");
    }
    false
}

/// One version's whole check: the declarations of `features` against its
/// bitcode's `defines`, and the coverage of its exports and header names.
fn check_version(version: &str, features: &[&str]) -> Option<(bool, BTreeMap<String, Sig>)> {
    let nv = match find_nvshmem(version) {
        Ok(nv) => nv,
        Err(reason) => {
            skip(&format!("ABI check against NVSHMEM {version}"), &reason);
            return None;
        }
    };
    let bc = nv.device_bitcode(ARCH.parse().unwrap()).unwrap();
    let defs = bitcode_defines(&bc);
    let decls = probe(features);
    let (mut problems, checked) = compare(&decls, &defs);
    let (coverage, gaps) = check_coverage(version, &expected_names(&headers(&nv)), &decls, &defs);
    problems.extend(coverage);
    let exported_gaps = documented_gaps()
        .iter()
        .filter(|g| g.versions.contains(&version) && defs.contains_key(&g.symbol))
        .count();
    say!(
        "ABI NVSHMEM {version} ({}), features {features:?}: the bitcode exports {} functions: {checked} \
         declared (signatures checked), {exported_gaps} in the gap table; {gaps} gaps in all \
         (with those the headers name but the bitcode lacks); {} problems",
        bc.display(),
        defs.len(),
        problems.len()
    );
    let ok = report(&format!("NVSHMEM {version}"), &problems);
    Some((ok, defs))
}

#[test]
fn declarations_match_nvshmem_bitcode() {
    let mut ok = true;
    let v345 = check_version(V345, &[]);
    let v380 = check_version(V380, &["nvshmem-3-8"]);
    if let Some((ok380, defs)) = &v380 {
        ok &= ok380;
        // The default (3.4.5) API links against 3.8 bitcode too.
        let (problems, checked) = compare(&probe(&[]), defs);
        say!(
            "ABI NVSHMEM 3.8.0, default features: {checked} declarations checked, {} mismatches",
            problems.len()
        );
        ok &= report("NVSHMEM 3.8.0 with default features", &problems);
    }
    if let (Some((ok345, defs345)), Some(_)) = (&v345, &v380) {
        ok &= ok345;
        // What `nvshmem-3-8` adds is exactly what 3.4.5 lacks.
        let base = probe(&[]);
        let added: Vec<String> = probe(&["nvshmem-3-8"])
            .into_keys()
            .filter(|k| !base.contains_key(k))
            .collect();
        let problems: Vec<String> = added
            .iter()
            .filter(|k| defs345.contains_key(*k))
            .map(|k| format!("{k} is behind `nvshmem-3-8` but 3.4.5 has it"))
            .collect();
        say!(
            "nvshmem-3-8 adds {} functions ({} of them nvshmemx_qp_*), none of them in 3.4.5",
            added.len(),
            added
                .iter()
                .filter(|k| k.starts_with("nvshmemx_qp_"))
                .count()
        );
        ok &= report("nvshmem-3-8 feature", &problems);
    } else if let Some((ok345, _)) = &v345 {
        ok &= ok345;
    }
    assert!(ok, "the ABI check failed (see above)");
    if v345.is_none() && v380.is_none() {
        say!("SKIPPED: no NVSHMEM installation found; nothing was checked");
    }
}

// ---------------------------------------------------------------------------
// The gap table in the docs.

/// `a{b,c}d{e,}` → `abde`, `abd`, `acde`, `acd`.
fn brace_expand(s: &str) -> Vec<String> {
    let Some(open) = s.find('{') else {
        return vec![s.to_string()];
    };
    let close = open + s[open..].find('}').expect("unbalanced brace");
    s[open + 1..close]
        .split(',')
        .flat_map(|alt| brace_expand(&format!("{}{alt}{}", &s[..open], &s[close + 1..])))
        .collect()
}

/// The gap table parses: every row has a version, a kind and a reason, and
/// no function is listed twice for one version.
#[test]
fn gap_table_in_docs_parses() {
    let gaps = documented_gaps();
    assert!(gaps.len() > 50, "only {} gaps parsed", gaps.len());
    for v in ALL {
        let mut seen = BTreeSet::new();
        for g in gaps.iter().filter(|g| g.versions.contains(v)) {
            assert!(
                seen.insert(&g.symbol),
                "{} is in the gap table twice for {v}",
                g.symbol
            );
        }
    }
    assert!(gaps.iter().any(|g| g.why == Why::Omitted));
}

// ---------------------------------------------------------------------------
// Type lists and constants against the headers.

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

fn table(list: &[nvshmem_device::ffi::lists::CType]) -> Vec<(String, String)> {
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
    use nvshmem_device::ffi::lists;
    let mut ran = 0;
    for version in ALL {
        let nv = match find_nvshmem(version) {
            Ok(nv) => nv,
            Err(reason) => {
                skip(&format!("type lists against NVSHMEM {version}"), &reason);
                continue;
            }
        };
        let h = headers(&nv);
        let common = |n: &str| header_table(list_entries(&h.common.defines, n));
        let api = |n: &str| header_table(list_entries(&h.api.defines, n));
        assert_eq!(
            table(lists::STANDARD_RMA_TYPES),
            common("NVSHMEMI_REPT_FOR_STANDARD_RMA_TYPES"),
            "{version}"
        );
        assert_eq!(
            table(lists::WAIT_TYPES),
            common("NVSHMEMI_REPT_FOR_WAIT_TYPES"),
            "{version}"
        );
        assert_eq!(
            table(lists::BITWISE_AMO_TYPES),
            api("NVSHMEMI_REPT_OPGROUP_FOR_BITWISE_AMO"),
            "{version}"
        );
        assert_eq!(
            table(lists::STANDARD_AMO_TYPES),
            api("NVSHMEMI_REPT_OPGROUP_FOR_STANDARD_AMO"),
            "{version}"
        );
        let mut extended = table(lists::EXTENDED_AMO_TYPES);
        if h.api
            .defines
            .contains_key("NVSHMEMI_REPT_OPGROUP_FOR_EXTENDED_AMO_HALF")
        {
            extended.splice(0..0, table(lists::EXTENDED_AMO_HALF_TYPES));
        }
        assert_eq!(
            extended,
            api("NVSHMEMI_REPT_OPGROUP_FOR_EXTENDED_AMO"),
            "{version}"
        );
        for (ours, name) in [
            (
                lists::BITWISE_REDUCE_TYPES,
                "NVSHMEMI_REPT_FOR_BITWISE_REDUCE_TYPES",
            ),
            (
                lists::STANDARD_REDUCE_TYPES,
                "NVSHMEMI_REPT_FOR_STANDARD_REDUCE_TYPES",
            ),
            (
                lists::ARITH_REDUCE_TYPES,
                "NVSHMEMI_REPT_FOR_ARITH_REDUCE_TYPES",
            ),
        ] {
            assert_eq!(table(ours), common(name), "{version}: {name}");
        }
        let sizes: Vec<String> = lists::SIZES.iter().map(u32::to_string).collect();
        assert_eq!(
            sizes,
            names(&list_entries(&h.common.defines, "NVSHMEMI_REPT_FOR_SIZES")),
            "{version}"
        );
        say!("type lists match NVSHMEM {version}'s headers");
        ran += 1;
    }
    if ran == 0 {
        say!("SKIPPED: no NVSHMEM installation found; type lists not checked");
    }
}

/// `NAME = value` of every enum in `text` (implicit values counted on).
fn enum_values(text: &str) -> HashMap<String, i64> {
    let mut out = HashMap::new();
    let text = logical_lines(text).join("\n");
    for chunk in text.split("enum").skip(1) {
        let Some(open) = chunk.find('{') else {
            continue;
        };
        let Some(close) = chunk.find('}') else {
            continue;
        };
        if close < open {
            continue;
        }
        let mut next = Some(0i64);
        for item in chunk[open + 1..close].split(',') {
            let item = item.trim();
            if item.is_empty() {
                continue;
            }
            let (name, value) = match item.split_once('=') {
                Some((n, v)) => (n.trim(), v.trim().parse().ok()),
                None => (item, next),
            };
            if let Some(v) = value {
                out.insert(name.to_string(), v);
            }
            next = value.map(|v| v + 1);
        }
    }
    out
}

#[test]
fn constants_match_headers() {
    use nvshmem_device::{Cmp, SignalOp};
    let mut ran = 0;
    for version in ALL {
        let nv = match find_nvshmem(version) {
            Ok(nv) => nv,
            Err(reason) => {
                skip(&format!("constants against NVSHMEM {version}"), &reason);
                continue;
            }
        };
        let inc = nv.include_dir();
        let mut values = enum_values(
            &std::fs::read_to_string(inc.join("device_host_transport/nvshmem_constants.h"))
                .unwrap(),
        );
        values.extend(enum_values(
            &std::fs::read_to_string(inc.join("device_host_transport/nvshmem_common_transport.h"))
                .unwrap(),
        ));
        let get = |n: &str| {
            *values
                .get(n)
                .unwrap_or_else(|| panic!("NVSHMEM {version}: no enum value {n}"))
        };
        for (cmp, name) in [
            (Cmp::Eq, "NVSHMEM_CMP_EQ"),
            (Cmp::Ne, "NVSHMEM_CMP_NE"),
            (Cmp::Gt, "NVSHMEM_CMP_GT"),
            (Cmp::Le, "NVSHMEM_CMP_LE"),
            (Cmp::Lt, "NVSHMEM_CMP_LT"),
            (Cmp::Ge, "NVSHMEM_CMP_GE"),
        ] {
            assert_eq!(
                cmp.to_c() as i64,
                get(name),
                "NVSHMEM {version}: {cmp:?} vs {name}"
            );
        }
        for (op, name) in [
            (SignalOp::Set, "NVSHMEM_SIGNAL_SET"),
            (SignalOp::Add, "NVSHMEM_SIGNAL_ADD"),
        ] {
            assert_eq!(
                op.to_c() as i64,
                get(name),
                "NVSHMEM {version}: {op:?} vs {name}"
            );
        }
        let common = enum_values(
            &std::fs::read_to_string(inc.join("device_host/nvshmem_common.cuh")).unwrap(),
        );
        for (team, name) in [
            (nvshmem_device::Team::WORLD, "NVSHMEM_TEAM_WORLD"),
            (nvshmem_device::Team::SHARED, "NVSHMEM_TEAM_SHARED"),
            (nvshmem_device::Team::NODE, "NVSHMEMX_TEAM_NODE"),
            (
                nvshmem_device::Team::SAME_MYPE_NODE,
                "NVSHMEMX_TEAM_SAME_MYPE_NODE",
            ),
        ] {
            assert_eq!(
                Some(&(team.raw() as i64)),
                common.get(name),
                "NVSHMEM {version}: {team:?} vs {name}"
            );
        }
        say!("Cmp, SignalOp and Team match NVSHMEM {version}'s headers");
        ran += 1;
    }
    if ran == 0 {
        say!("SKIPPED: no NVSHMEM installation found; constants not checked");
    }
}

// ---------------------------------------------------------------------------
// The header parsers.

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
    assert_eq!(
        brace_expand("a_{x,y}{_n,}"),
        ["a_x_n", "a_x", "a_y_n", "a_y"]
    );
    std::fs::remove_dir_all(dir).ok();
}
