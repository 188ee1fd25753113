//! NVSHMEM's transport functions split into a PTX module of their own, so
//! that separate compilation can cap their registers as NVSHMEM caps them.
//!
//! NVSHMEM keeps its remote-transport code (proxy, IBGDA, GPUNetIO) out of
//! line: `NVSHMEMI_TRANSFER_INLINE` is `noinline` in its bitcode, and its
//! static library `libnvshmem_device.a` compiles those functions with
//! `--maxrregcount=32` "to ensure that calling these NVSHMEM functions does
//! not negatively affect kernel occupancy" (its changelog, 2.1). In one
//! module with the kernels they get no such cap, and a kernel's register
//! count covers everything it calls: with NVSHMEM 3.8, whose IBGDA and
//! GPUNetIO paths make each transport function 3 000–13 000 PTX lines, the
//! ring example's kernel took 150 registers where 3.4.5 gives 38. Split out
//! and compiled at 32 registers, it takes 36, as a CUDA C++ kernel built with
//! `nvcc -rdc` against `libnvshmem_device.a` would.

use std::collections::{BTreeMap, BTreeSet};

/// The register cap of the transport module: NVSHMEM's own for these
/// functions (`src/device/CMakeLists.txt`, `--maxrregcount=32`).
pub(crate) const TRANSPORT_MAX_REGISTERS: u32 = 32;

/// Whether a PTX function is one of NVSHMEM's out-of-line transport
/// functions (`nvshmemi_transfer_*` and the proxy, IBGDA and GPUNetIO
/// functions they call), by its (mangled) name.
pub(crate) fn is_transport(name: &str) -> bool {
    [
        "nvshmemi_transfer_",
        "nvshmemi_proxy_",
        "nvshmemi_ibgda_",
        "nvshmemi_gdaki_",
    ]
    .iter()
    .any(|p| name.contains(p))
}

/// A PTX module split in two, each compiled with `ptxas -c`, then linked
/// together by `nvlink`.
#[derive(Debug)]
pub(crate) struct Split {
    /// The kernels and everything else, declaring the transport functions
    /// `.extern`.
    pub kernels: String,
    /// The transport functions, `.visible`, declaring what they use of the
    /// other module `.extern`.
    pub transport: String,
}

/// One top-level piece of a PTX module.
enum Item<'a> {
    /// `.version`, `.target`, `.address_size`.
    Header(&'a str),
    /// A module-scope variable, on one line.
    Variable { name: &'a str, line: &'a str },
    /// A function declared (`… ;`) or defined (`… { … }`).
    Function {
        name: &'a str,
        entry: bool,
        head: Vec<&'a str>,
        /// From the `{` line on; empty for a declaration.
        body: Vec<&'a str>,
    },
    /// Blank lines and comments.
    Other(&'a str),
}

/// `line` without `.visible `, `.weak ` or `.extern `, and that prefix.
fn linkage(line: &str) -> (&str, &str) {
    for p in [".visible ", ".weak ", ".extern "] {
        if let Some(rest) = line.strip_prefix(p) {
            return (p, rest);
        }
    }
    ("", line)
}

fn code(line: &str) -> &str {
    line.split("//").next().unwrap_or("").trim()
}

/// The top-level items of `ptx`, or `None` for anything this reader does
/// not know (debug sections, multi-line variables): the caller then leaves
/// the module whole.
fn items(ptx: &str) -> Option<Vec<Item<'_>>> {
    let mut out = Vec::new();
    let mut lines = ptx.lines();
    while let Some(line) = lines.next() {
        let (_, rest) = linkage(line);
        let c = code(line);
        if [".version", ".target", ".address_size"]
            .iter()
            .any(|d| c.starts_with(d))
        {
            out.push(Item::Header(line));
        } else if let Some(sig) = rest
            .strip_prefix(".func")
            .or_else(|| rest.strip_prefix(".entry"))
            .filter(|s| s.starts_with([' ', '(']) || s.is_empty())
        {
            let entry = rest.starts_with(".entry");
            let sig = sig.trim_start();
            let sig = match sig.strip_prefix('(') {
                Some(r) => r.split_once(')')?.1,
                None => sig,
            };
            let name = sig.trim().split(['(', ' ']).next()?;
            if name.is_empty() {
                return None;
            }
            let mut head = vec![line];
            let mut body = Vec::new();
            let mut cur = line;
            loop {
                let c = code(cur);
                if c.starts_with('{') {
                    body.push(head.pop()?);
                    let mut depth = c.matches('{').count().checked_sub(c.matches('}').count())?;
                    while depth > 0 {
                        let l = lines.next()?;
                        let c = code(l);
                        depth =
                            (depth + c.matches('{').count()).checked_sub(c.matches('}').count())?;
                        body.push(l);
                    }
                    break;
                }
                if c.contains('{') {
                    return None;
                }
                if c.ends_with(';') {
                    break;
                }
                cur = lines.next()?;
                head.push(cur);
            }
            out.push(Item::Function {
                name,
                entry,
                head,
                body,
            });
        } else if [".global", ".const", ".shared"]
            .iter()
            .any(|s| rest.starts_with(s))
        {
            let decl = c.strip_suffix(';')?;
            let decl = decl.split('=').next()?.trim();
            let name = decl.rsplit(' ').next()?.split('[').next()?;
            out.push(Item::Variable { name, line });
        } else if c.is_empty() {
            out.push(Item::Other(line));
        } else {
            // `.file`, `.section`, or something newer than this reader.
            return None;
        }
    }
    Some(out)
}

/// The identifiers in `lines` (PTX names: letters, digits, `_`, `$`).
fn identifiers<'a>(lines: &[&'a str], into: &mut BTreeSet<&'a str>) {
    for l in lines {
        let l = l.split("//").next().unwrap_or("");
        into.extend(
            l.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
                .filter(|w| !w.is_empty()),
        );
    }
}

/// `line` with `.visible` linkage, unless it has a linkage already.
fn visible(line: &str) -> String {
    match linkage(line) {
        ("", rest) => format!(".visible {rest}"),
        _ => line.to_string(),
    }
}

/// A declaration of a function, from its head (the lines before `{`, or a
/// declaration's lines), with `prefix` as its linkage.
fn declaration(head: &[&str], prefix: &str) -> Vec<String> {
    let mut out: Vec<String> = head.iter().map(|l| l.to_string()).collect();
    out[0] = format!("{prefix}{}", linkage(head[0]).1);
    let last = out.len() - 1;
    if !code(&out[last]).ends_with(';') {
        out.push(";".to_string());
    }
    out
}

/// Splits NVSHMEM's transport functions (see [`is_transport`]) out of `ptx`.
/// `None` when there are none, or the module has something this reader
/// does not know; then it is compiled whole.
pub(crate) fn split(ptx: &str) -> Option<Split> {
    let items = items(ptx)?;
    let mut transport: BTreeMap<&str, (&[&str], &[&str])> = BTreeMap::new();
    for item in &items {
        if let Item::Function {
            name,
            entry: false,
            head,
            body,
        } = item
            && !body.is_empty()
            && is_transport(name)
        {
            transport.insert(name, (head.as_slice(), body.as_slice()));
        }
    }
    if transport.is_empty() {
        return None;
    }
    let mut used = BTreeSet::new();
    for (head, body) in transport.values() {
        identifiers(head, &mut used);
        identifiers(body, &mut used);
    }
    // What the transport functions use of the rest: made visible there,
    // declared `.extern` here.
    let mut transport_out: Vec<String> = Vec::new();
    let mut kernels_out: Vec<String> = Vec::new();
    let mut externs: Vec<String> = Vec::new();
    let mut declared = BTreeSet::new();
    for item in &items {
        match item {
            Item::Header(l) => {
                transport_out.push(l.to_string());
                kernels_out.push(l.to_string());
            }
            Item::Variable { name, line } if used.contains(name) => {
                let (_, rest) = linkage(line);
                if rest.starts_with(".shared") {
                    return None;
                }
                let decl = code(rest).trim_end_matches(';');
                let decl = decl.split('=').next().unwrap_or(decl).trim();
                externs.push(format!(".extern {decl};"));
                kernels_out.push(visible(line));
            }
            Item::Variable { line, .. } | Item::Other(line) => kernels_out.push(line.to_string()),
            Item::Function { name, .. } if transport.contains_key(name) => {}
            Item::Function {
                name,
                entry,
                head,
                body,
            } => {
                let shared = used.contains(name) && !entry;
                if shared && declared.insert(*name) {
                    externs.extend(declaration(head, ".extern "));
                }
                let mut lines: Vec<String> = head.iter().map(|l| l.to_string()).collect();
                if shared && linkage(head[0]).0 != ".extern " {
                    lines[0] = visible(head[0]);
                }
                kernels_out.extend(lines);
                kernels_out.extend(body.iter().map(|l| l.to_string()));
            }
        }
    }
    // Each module declares the other's functions before anything uses them:
    // right after the header.
    let header_len = items
        .iter()
        .take_while(|i| matches!(i, Item::Header(_) | Item::Other(_)))
        .count();
    let kernel_decls: Vec<String> = transport
        .values()
        .flat_map(|(head, _)| declaration(head, ".extern "))
        .collect();
    kernels_out.splice(header_len..header_len, kernel_decls);
    transport_out.push(String::new());
    transport_out.extend(externs);
    for (head, _) in transport.values() {
        transport_out.extend(declaration(head, ".visible "));
    }
    for (head, body) in transport.values() {
        let mut lines = head.iter().map(|l| l.to_string());
        // `.visible` whatever its linkage was, as its declaration above.
        let first = lines.next().unwrap_or_default();
        transport_out.push(format!(".visible {}", linkage(&first).1));
        transport_out.extend(lines);
        transport_out.extend(body.iter().map(|l| l.to_string()));
    }
    let join = |v: Vec<String>| v.join("\n") + "\n";
    Some(Split {
        kernels: join(kernels_out),
        transport: join(transport_out),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "\
//
// Generated by LLVM NVPTX Back-End
//

.version 8.8
.target sm_90
.address_size 64

\t// .globl\tk
.func _Z23nvshmemi_transfer_rma_pIiEvPvT_ii
(
\t.param .b64 _Z23nvshmemi_transfer_rma_pIiEvPvT_ii_param_0
)
;
.func helper
(
\t.param .b32 helper_param_0
)
.noreturn;
.extern .func __assertfail
(
\t.param .b64 __assertfail_param_0
)
;
.global .align 1 .b8 _$_str1[3] = {104, 105, 0};
.visible .const .align 8 .b8 nvshmemi_device_state_d[848];
.global .align 1 .b8 unrelated[2] = {1, 2};
                                        // @k
.visible .entry k(
\t.param .u64 k_param_0
)
{
\t.reg .b64 \t%rd<3>;

// %bb.0:
\tld.param.b64 \t%rd1, [k_param_0];
\t{ // callseq 0, 0
\t.param .b64 param0;
\tst.param.b64 \t[param0], %rd1;
\tcall.uni
\t_Z23nvshmemi_transfer_rma_pIiEvPvT_ii,
\t(
\tparam0
\t);
\t} // callseq 0
\tmov.u64 \t%rd2, unrelated;
\tret;
}
.func _Z23nvshmemi_transfer_rma_pIiEvPvT_ii(
\t.param .b64 _Z23nvshmemi_transfer_rma_pIiEvPvT_ii_param_0
)
{
\t.reg .b64 \t%rd<4>;
\tld.const.u64 \t%rd1, [nvshmemi_device_state_d+8];
\tmov.u64 \t%rd2, _$_str1;
\tcall.uni helper, (param0);
\tcall.uni __assertfail, (param0);
\tret;
}
.func helper(
\t.param .b32 helper_param_0
)
.noreturn
{
\ttrap;
}
";

    #[test]
    fn transport_functions_go_to_their_own_module() {
        let s = split(PTX).expect("split");
        let k = &s.kernels;
        let t = &s.transport;
        // The kernels' module: the transport function declared extern, its
        // body gone; what the transport uses made visible.
        assert!(
            k.contains(".extern .func _Z23nvshmemi_transfer_rma_pIiEvPvT_ii(\n"),
            "{k}"
        );
        assert!(!k.contains("ld.const.u64"));
        assert!(k.contains(".visible .global .align 1 .b8 _$_str1[3] = {104, 105, 0};"));
        assert!(k.contains(".visible .func helper(\n"));
        assert!(k.contains(".global .align 1 .b8 unrelated[2]"));
        assert!(!k.contains(".visible .global .align 1 .b8 unrelated"));
        assert!(k.contains(".visible .entry k("));
        // The transport module: its function visible, the rest extern.
        assert!(t.starts_with(".version 8.8\n.target sm_90\n.address_size 64\n"));
        assert!(t.contains(".visible .func _Z23nvshmemi_transfer_rma_pIiEvPvT_ii(\n"));
        assert!(t.contains("ld.const.u64"));
        assert!(t.contains(".extern .global .align 1 .b8 _$_str1[3];"));
        assert!(t.contains(".extern .const .align 8 .b8 nvshmemi_device_state_d[848];"));
        assert!(t.contains(".extern .func helper\n(\n"));
        assert!(t.contains(".extern .func __assertfail\n"));
        assert!(!t.contains("unrelated"));
        assert!(!t.contains(".entry"));
    }

    #[test]
    fn a_weak_transport_function_is_declared_and_defined_alike() {
        let weak = PTX.replace(
            ".func _Z23nvshmemi_transfer_rma_pIiEvPvT_ii(",
            ".weak .func _Z23nvshmemi_transfer_rma_pIiEvPvT_ii(",
        );
        let t = split(&weak).expect("split").transport;
        assert!(!t.contains(".weak"), "{t}");
        assert_eq!(
            t.matches(".visible .func _Z23nvshmemi_transfer_rma_pIiEvPvT_ii")
                .count(),
            2
        );
    }

    #[test]
    fn nothing_to_split_or_unknown_directives_leave_the_module_whole() {
        let no_transport = PTX.replace("nvshmemi_transfer_rma_p", "plain_function");
        assert!(split(&no_transport).is_none());
        let debug = PTX.replace(".address_size 64", ".address_size 64\n.file 1 \"k.rs\"");
        assert!(split(&debug).is_none());
    }

    #[test]
    fn names_of_transport_functions() {
        assert!(is_transport(
            "_Z21nvshmemi_transfer_rmaIL13threadgroup_t1EL13nvshmemi_op_t1EEvPvS2_mii"
        ));
        assert!(is_transport(
            "_Z28nvshmemi_gdaki_submit_regionPK22nvshmemi_region_info_tj"
        ));
        assert!(!is_transport("nvshmemx_putmem_block"));
        assert!(!is_transport(
            "_RNvNtCsh8NHGRQHGE_14nvshmem_device6direct12copy_general"
        ));
    }
}
