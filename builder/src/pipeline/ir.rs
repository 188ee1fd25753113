//! Reading and rewriting textual LLVM IR and PTX: just what the pipeline needs.
//!
//! Not API: public only for the device crate's ABI test, which reads
//! function signatures with [`fn_signatures`].

use nvshmem_types::Arch;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;

/// An LLVM function type without attributes: `ret (param, ...)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FnSig {
    /// The return type, such as `void`, `i32` or `%struct.__half`.
    pub ret: String,
    /// The parameter types, such as `ptr` or `i64`.
    pub params: Vec<String>,
}

impl fmt::Display for FnSig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.ret, self.params.join(", "))
    }
}

/// Parses a `define`/`declare` line into the function's name and type. LLVM
/// writes each parameter as `type [attributes] [%name]` and the return type
/// right before `@name`, so attributes (`noundef`, `signext`, `byval(...)`,
/// `align N`, `captures(...)`, ...) and names drop out by taking those tokens.
pub fn parse_fn_line(line: &str) -> Option<(String, FnSig)> {
    let at = line.find(" @")?;
    let rest = &line[at + 2..];
    let open = rest.find('(')?;
    let name = rest[..open].trim_matches('"').to_string();
    let ret = line[..at].split_whitespace().last()?.to_string();
    let mut params = Vec::new();
    let (mut depth, mut cur) = (0i32, String::new());
    for c in rest[open + 1..].chars() {
        match c {
            ')' if depth == 0 => break,
            '(' | '{' | '[' | '<' => depth += 1,
            ')' | '}' | ']' | '>' => depth -= 1,
            ',' if depth == 0 => {
                params.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        params.push(cur);
    }
    let params = params
        .iter()
        .map(|p| p.split_whitespace().next().unwrap_or("").to_string())
        .collect();
    Some((name, FnSig { ret, params }))
}

/// The functions of a module's lines that start with `keyword` (`"define "`
/// or `"declare "`), by name.
pub fn fn_signatures(ll: &str, keyword: &str) -> BTreeMap<String, FnSig> {
    ll.lines()
        .filter(|l| l.starts_with(keyword))
        .filter_map(parse_fn_line)
        .collect()
}

/// One `define` in an LLVM IR module.
#[derive(Debug, Default)]
pub(crate) struct Function {
    pub is_kernel: bool,
    /// Names this function calls or takes the address of.
    pub references: BTreeSet<String>,
}

/// The functions of a module, by name.
pub(crate) fn functions(ll: &str) -> BTreeMap<String, Function> {
    let mut out = BTreeMap::new();
    let mut current: Option<(String, Function)> = None;
    for line in ll.lines() {
        if line.starts_with("define ") {
            let Some(name) = first_global_name(line) else {
                continue;
            };
            let f = Function {
                is_kernel: line.contains(" ptx_kernel "),
                ..Default::default()
            };
            current = Some((name, f));
        } else if line.starts_with('}') {
            if let Some((name, f)) = current.take() {
                out.insert(name, f);
            }
        } else if let Some((_, f)) = current.as_mut() {
            f.references.extend(global_names(line));
        }
    }
    out
}

/// Every function the module declares but does not define (`declare` lines).
pub(crate) fn declared_functions(ll: &str) -> Vec<String> {
    ll.lines()
        .filter(|l| l.starts_with("declare "))
        .filter_map(first_global_name)
        .collect()
}

/// The name `nvshmem_device::math::cuda_arch` calls for `__nvvm_reflect`:
/// rustc's own LLVM pipeline runs NVVMReflect too, with rustc's default arch,
/// so the device crate hides the call under this name until the builder's
/// `opt -mcpu=<arch>` can resolve it.
pub(crate) const REFLECT_ALIAS: &str = "nvshmem_rs_nvvm_reflect";

/// `ll` with calls to [`REFLECT_ALIAS`] turned into `__nvvm_reflect` calls
/// (one declaration kept).
pub(crate) fn unhide_reflect(ll: &str) -> String {
    let alias = format!("@{REFLECT_ALIAS}(");
    if !ll.contains(&alias) {
        return ll.to_string();
    }
    let has_reflect = ll
        .lines()
        .any(|l| l.starts_with("declare ") && l.contains("@__nvvm_reflect("));
    let mut out = String::with_capacity(ll.len());
    for line in ll.lines() {
        if line.starts_with("declare ") && line.contains(&alias) && has_reflect {
            continue;
        }
        out.push_str(&line.replace(&alias, "@__nvvm_reflect("));
        out.push('\n');
    }
    out
}

/// The libdevice functions `ll` declares but does not define.
pub(crate) fn libdevice_calls(ll: &str) -> Vec<String> {
    declared_functions(ll)
        .into_iter()
        .filter(|f| f.starts_with("__nv_"))
        .collect()
}

/// The first `@name` on a line (the defined function for a `define` line).
fn first_global_name(line: &str) -> Option<String> {
    global_names(line).next()
}

/// Every `@name` or `@"name"` on a line.
pub(crate) fn global_names(line: &str) -> impl Iterator<Item = String> + '_ {
    line.match_indices('@').filter_map(move |(i, _)| {
        let rest = &line[i + 1..];
        if let Some(quoted) = rest.strip_prefix('"') {
            return quoted.find('"').map(|end| quoted[..end].to_string());
        }
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '$' | '-')))
            .unwrap_or(rest.len());
        (end > 0).then(|| rest[..end].to_string())
    })
}

/// NVSHMEM entry points that synchronize PEs: a kernel reaching one needs
/// every block co-resident (a collective launch).
pub(crate) fn is_collective_entry(name: &str) -> bool {
    const WORDS: &[&str] = &[
        "barrier",
        "sync",
        "broadcast",
        "fcollect",
        "collect",
        "alltoall",
        "reduce",
        "_scan",
    ];
    (name.starts_with("nvshmem_") || name.starts_with("nvshmemx_"))
        && WORDS.iter().any(|w| name.contains(w))
        // Point-to-point names that contain one of the words above.
        && !name.contains("signal")
}

/// For each kernel, whether it reaches a collective NVSHMEM entry point.
pub(crate) fn collective_kernels(funcs: &BTreeMap<String, Function>) -> BTreeMap<String, bool> {
    let mut out = BTreeMap::new();
    for (name, f) in funcs.iter().filter(|(_, f)| f.is_kernel) {
        let mut seen = BTreeSet::new();
        let mut queue: VecDeque<&str> = f.references.iter().map(String::as_str).collect();
        let mut collective = false;
        while let Some(callee) = queue.pop_front() {
            if !seen.insert(callee) {
                continue;
            }
            if is_collective_entry(callee) {
                collective = true;
                break;
            }
            // NVSHMEM's own internals are leaves: only its entry names matter.
            if callee.starts_with("nvshmem") {
                continue;
            }
            if let Some(g) = funcs.get(callee) {
                queue.extend(g.references.iter().map(String::as_str));
            }
        }
        out.insert(name.clone(), collective);
    }
    out
}

/// An NVVM intrinsic that only some architectures have: `llc` aborts on the
/// others ("Cannot select: intrinsic"), so the builder checks first.
pub(crate) struct ArchIntrinsic {
    /// The intrinsic name, or the prefix of a family of them.
    pub prefix: &'static str,
    /// What the Rust side calls it, for the message.
    pub what: &'static str,
    /// The architectures that have it, as the message says them.
    pub needs: &'static str,
    /// Whether `arch` has it.
    pub has: fn(Arch) -> bool,
}

/// The intrinsics the device crate declares that not every architecture has.
pub(crate) const ARCH_INTRINSICS: &[ArchIntrinsic] = &[
    ArchIntrinsic {
        prefix: "llvm.nvvm.wgmma.",
        what: "wgmma (nvshmem_device::wgmma)",
        needs: "sm_90a",
        has: |a| a.number() == 90 && a.is_arch_specific(),
    },
    ArchIntrinsic {
        prefix: "llvm.nvvm.setmaxnreg.",
        what: "setmaxnreg (nvshmem_device::wgmma::setmaxnreg_*)",
        needs: "sm_90a (or another `a` architecture)",
        has: |a| a.number() >= 90 && a.is_arch_specific(),
    },
    ArchIntrinsic {
        prefix: "llvm.nvvm.elect.sync",
        what: "elect.sync",
        needs: "sm_90 or newer",
        has: |a| a.number() >= 90,
    },
];

/// A use of an [`ArchIntrinsic`] that `arch` lacks.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ArchMisuse {
    /// The intrinsic as declared.
    pub intrinsic: String,
    pub what: &'static str,
    pub needs: &'static str,
    /// The functions that call it (demangled, without hashes).
    pub callers: Vec<String>,
    /// The kernels that reach it.
    pub kernels: Vec<String>,
}

/// The intrinsics that `ll` declares and `arch` lacks, with the functions
/// that call them and the kernels that reach those.
pub(crate) fn arch_misuses(ll: &str, arch: Arch) -> Vec<ArchMisuse> {
    let lacking: Vec<(String, &ArchIntrinsic)> = declared_functions(ll)
        .into_iter()
        .filter_map(|f| {
            let i = ARCH_INTRINSICS.iter().find(|i| f.starts_with(i.prefix))?;
            (!(i.has)(arch)).then_some((f, i))
        })
        .collect();
    if lacking.is_empty() {
        return Vec::new();
    }
    let funcs = functions(ll);
    lacking
        .into_iter()
        .map(|(intrinsic, i)| {
            let calls = |f: &Function| f.references.contains(&intrinsic);
            let callers = funcs
                .iter()
                .filter(|(_, f)| calls(f))
                .map(|(name, _)| readable(name))
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            let kernels = funcs
                .iter()
                .filter(|(_, f)| f.is_kernel)
                .filter(|(name, _)| reaches(&funcs, name, &intrinsic))
                .map(|(name, _)| name.clone())
                .collect();
            ArchMisuse {
                intrinsic,
                what: i.what,
                needs: i.needs,
                callers,
                kernels,
            }
        })
        .collect()
}

/// Whether `from` calls or references `target`, directly or through others.
fn reaches(funcs: &BTreeMap<String, Function>, from: &str, target: &str) -> bool {
    let mut seen = BTreeSet::new();
    let mut queue = VecDeque::from([from]);
    while let Some(name) = queue.pop_front() {
        if name == target {
            return true;
        }
        if seen.insert(name)
            && let Some(f) = funcs.get(name)
        {
            queue.extend(f.references.iter().map(String::as_str));
        }
    }
    false
}

/// A Rust symbol demangled without its hash (`nvshmem_device::wgmma::fence`);
/// other names as they are.
fn readable(name: &str) -> String {
    format!("{:#}", rustc_demangle::demangle(name))
}

/// Whether an optimized bitcode file still declares `name` (its string
/// table holds every symbol name as plain bytes; `globaldce` has removed
/// unused declarations).
pub(crate) fn bitcode_mentions(bytes: &[u8], name: &str) -> bool {
    find(bytes, name.as_bytes()).is_some()
}

/// The highest `+ptxNN` any function's `target-features` asks for, as NN.
pub(crate) fn max_ptx_feature(ll: &str) -> Option<u32> {
    ll.match_indices("+ptx")
        .filter_map(|(i, _)| {
            let digits: String = ll[i + 4..]
                .chars()
                .take_while(|c| c.is_ascii_digit())
                .collect();
            digits.parse().ok()
        })
        .max()
}

/// Points every function at `arch`, with PTX ISA `ptx`: NVSHMEM's bitcode
/// carries its own `target-cpu`, which would otherwise override `llc -mcpu`.
pub(crate) fn retarget(ll: &str, arch: &str, ptx: u32) -> String {
    let features = format!("\"target-features\"=\"+ptx{ptx},+{arch}\"");
    let cpu = format!("\"target-cpu\"=\"{arch}\"");
    let mut out = String::with_capacity(ll.len() + 1024);
    for line in ll.lines() {
        if line.starts_with("attributes #") {
            out.push_str(&replace_attr(
                &replace_attr(line, "\"target-features\"=\"", &features),
                "\"target-cpu\"=\"",
                &cpu,
            ));
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

fn replace_attr(line: &str, key: &str, replacement: &str) -> String {
    let Some(start) = line.find(key) else {
        return line.to_string();
    };
    let value_start = start + key.len();
    let Some(len) = line[value_start..].find('"') else {
        return line.to_string();
    };
    format!(
        "{}{}{}",
        &line[..start],
        replacement,
        &line[value_start + len + 1..]
    )
}

/// The highest `clang version N` recorded in a bitcode file's metadata.
pub(crate) fn bitcode_producer_major(bytes: &[u8]) -> Option<(u32, String)> {
    const KEY: &[u8] = b"clang version ";
    let mut best: Option<(u32, String)> = None;
    let mut i = 0;
    while let Some(pos) = find(&bytes[i..], KEY) {
        let start = i + pos + KEY.len();
        let ver: String = bytes[start..]
            .iter()
            .take_while(|b| b.is_ascii_digit() || **b == b'.')
            .map(|b| *b as char)
            .collect();
        if let Some(major) = ver.split('.').next().and_then(|m| m.parse::<u32>().ok())
            && best.as_ref().is_none_or(|(m, _)| major > *m)
        {
            best = Some((major, ver));
        }
        i = start;
    }
    best
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_undefined_nv_functions_are_needed() {
        let ll = "declare float @__nv_expf(float)\ndeclare void @nvshmem_quiet()\n\
                  define float @__nv_fabsf(float %x) {\n  ret float %x\n}\n";
        assert_eq!(libdevice_calls(ll), ["__nv_expf"]);
    }

    #[test]
    fn the_reflect_alias_becomes_nvvm_reflect() {
        let ll = "declare i32 @nvshmem_rs_nvvm_reflect(ptr)\ndeclare i32 @__nvvm_reflect(ptr)\n\
                  %1 = call i32 @nvshmem_rs_nvvm_reflect(ptr @s)\n";
        let out = unhide_reflect(ll);
        assert_eq!(
            out.matches("declare i32 @__nvvm_reflect(ptr)").count(),
            1,
            "{out}"
        );
        assert!(out.contains("call i32 @__nvvm_reflect(ptr @s)") && !out.contains(REFLECT_ALIAS));
        let alone = unhide_reflect("declare i32 @nvshmem_rs_nvvm_reflect(ptr)\n");
        assert_eq!(alone, "declare i32 @__nvvm_reflect(ptr)\n");
    }

    #[test]
    fn parses_llvm_function_lines() {
        let (name, sig) = parse_fn_line(
            "define dso_local void @nvshmem_half_p(ptr noundef %0, ptr noundef readonly byval(%struct.__half) \
             align 2 captures(none) %1, i32 noundef %2) local_unnamed_addr #5 {",
        )
        .unwrap();
        assert_eq!(name, "nvshmem_half_p");
        assert_eq!(sig.to_string(), "void (ptr, ptr, i32)");
        let (_, sig) = parse_fn_line(
            "define dso_local signext i8 @nvshmem_char_g(ptr noundef %0, i32 noundef %1) #1 {",
        )
        .unwrap();
        assert_eq!(sig.to_string(), "i8 (ptr, i32)");
        let ll = "declare noundef i32 @nvshmem_my_pe() unnamed_addr #2\n\
                  define dso_local %struct.__half @nvshmem_half_g(ptr noundef %0, i32 noundef %1) {\n}";
        let decls = fn_signatures(ll, "declare ");
        assert_eq!(decls["nvshmem_my_pe"].to_string(), "i32 ()");
        assert_eq!(
            fn_signatures(ll, "define ")["nvshmem_half_g"].ret,
            "%struct.__half"
        );
    }

    const LL: &str = r#"
define ptx_kernel void @k1(ptr %0) #0 {
  call void @helper(ptr %0)
  ret void
}
define internal void @helper(ptr %0) #1 {
  call void @nvshmem_barrier_all()
  ret void
}
define ptx_kernel void @k2(ptr %0) #0 {
  call void @nvshmem_int_p(ptr %0, i32 1, i32 0)
  call void @nvshmemx_signal_op(ptr %0, i64 1, i32 0, i32 0)
  ret void
}
attributes #0 = { "target-cpu"="sm_90" "target-features"="+ptx83,+sm_90" }
attributes #1 = { nounwind "target-cpu"="sm_90" "target-features"="+ptx78,+sm_90" }
"#;

    #[test]
    fn finds_kernels_and_collectives_through_helpers() {
        let f = functions(LL);
        assert!(f["k1"].is_kernel && f["k2"].is_kernel && !f["helper"].is_kernel);
        let c = collective_kernels(&f);
        assert!(c["k1"]);
        assert!(!c["k2"]);
    }

    #[test]
    fn collective_names() {
        for n in [
            "nvshmem_barrier_all",
            "nvshmemx_barrier_all_block",
            "nvshmem_sync_all",
            "nvshmem_team_sync",
            "nvshmem_int_sum_reduce",
            "nvshmemx_float_fcollect_warp",
            "nvshmem_int_alltoall",
            "nvshmem_int_broadcast",
            "nvshmem_float_sum_reducescatter",
            // The team collectives of the device crate, every family and scope.
            "nvshmem_barrier",
            "nvshmemx_barrier_warp",
            "nvshmemx_barrier_block",
            "nvshmemx_barrier_warpgroup",
            "nvshmemx_team_sync_warp",
            "nvshmemx_team_sync_block",
            "nvshmemx_bfloat16_broadcast_block",
            "nvshmem_broadcastmem",
            "nvshmemx_fcollectmem_warp",
            "nvshmem_alltoallmem",
            "nvshmemx_uint64_alltoall_block",
            "nvshmemx_half_prod_reduce_warp",
            "nvshmemx_size_xor_reducescatter_block",
            "nvshmem_uchar_and_reduce",
        ] {
            assert!(is_collective_entry(n), "{n}");
        }
        for n in [
            "nvshmem_int_p",
            "nvshmem_quiet",
            "nvshmemx_signal_op",
            "nvshmem_uint64_wait_until",
            "nvshmemx_putmem_signal_block",
            "nvshmem_signal_wait_until",
            "my_sync_helper",
            // Team queries do not synchronize.
            "nvshmem_team_my_pe",
            "nvshmem_team_n_pes",
            "nvshmem_team_translate_pe",
        ] {
            assert!(!is_collective_entry(n), "{n}");
        }
    }

    #[test]
    fn ptx_features_and_retarget() {
        assert_eq!(max_ptx_feature(LL), Some(83));
        let r = retarget(LL, "sm_80", 85);
        assert!(!r.contains("sm_90"));
        assert_eq!(
            r.matches("\"target-features\"=\"+ptx85,+sm_80\"").count(),
            2
        );
        assert!(r.contains("nounwind \"target-cpu\"=\"sm_80\""));
    }

    #[test]
    fn reads_the_producer_from_bitcode_bytes() {
        let bytes = b"\x00\x01clang version 3.8.0\x00junkclang version 18.1.1 (git)\x00";
        assert_eq!(bitcode_producer_major(bytes), Some((18, "18.1.1".into())));
        assert_eq!(bitcode_producer_major(b"nothing"), None);
    }
}
