//! Reading PTX text and what `ptxas` and `nvlink` print: entries and their
//! parameters, leftover externs, the call graph, register figures.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// A kernel's parameters as the PTX declares them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PtxParam {
    pub size: u32,
    pub align: u32,
    /// `u64`, `u32`, `f32`, `b8`... (for `.b8 name[N]` byte arrays: `b8`).
    pub ty: String,
}

/// Adds `.maxntid N, 1, 1` (CUDA's `__launch_bounds__(N)`) to each entry of
/// `bounds` (kernel name → threads per block), after its parameter list.
/// Names that are not an `.entry` of `ptx` (a cargo feature left the kernel
/// out of this build) are ignored.
pub(crate) fn add_maxntid(ptx: &str, bounds: &BTreeMap<String, u32>) -> String {
    let mut out = String::with_capacity(ptx.len() + 64 * bounds.len());
    let mut pending: Option<u32> = None;
    for line in ptx.lines() {
        out.push_str(line);
        out.push('\n');
        if let Some(rest) = line
            .strip_prefix(".visible .entry ")
            .or_else(|| line.strip_prefix(".entry "))
        {
            let name = rest.split('(').next().unwrap_or("").trim();
            if let Some(&n) = bounds.get(name) {
                pending = Some(n);
            }
        }
        // The parameter list ends with a line `)` (or on the entry line: `()`).
        // (llc may follow it with a `// @name` comment.)
        let code = line.split("//").next().unwrap_or("").trim_end();
        if let Some(n) = pending
            && code.ends_with(')')
        {
            out.push_str(&format!(".maxntid {n}, 1, 1\n"));
            pending = None;
        }
    }
    out
}

/// The `.entry` kernels of a PTX file with their parameters, in order.
pub(crate) fn ptx_entries(ptx: &str) -> Vec<(String, Vec<PtxParam>)> {
    let mut out = Vec::new();
    let mut lines = ptx.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim();
        let Some(rest) = t
            .strip_prefix(".visible .entry ")
            .or_else(|| t.strip_prefix(".entry "))
        else {
            continue;
        };
        let name = rest
            .split(['(', ' '])
            .next()
            .unwrap_or_default()
            .to_string();
        let mut params = Vec::new();
        // The parameter list up to its `)`, without comments (llc writes
        // `)  // @name` after the last parameter).
        let code = |l: &str| l.split("//").next().unwrap_or("").trim().to_string();
        let mut header = code(rest);
        while !header.contains(')') {
            match lines.next() {
                Some(l) => {
                    header.push(' ');
                    header.push_str(&code(l));
                }
                None => break,
            }
        }
        let header = header.split(')').next().unwrap_or_default();
        for decl in header.split(".param").skip(1) {
            params.push(parse_param(decl));
        }
        out.push((name, params));
    }
    out
}

/// One `.param` declaration (without the `.param`): `.align 8 .b8 k_param_1[24]`,
/// `.u64 .ptr .align 1 k_param_0`, `.u32 k_param_2`.
fn parse_param(decl: &str) -> PtxParam {
    let words: Vec<&str> = decl
        .split([' ', '\t', ','])
        .filter(|w| !w.is_empty())
        .collect();
    // `.align N` before the type aligns the parameter (byte arrays); after
    // `.ptr` it describes the pointee, which does not change the parameter.
    let (explicit_align, rest) = match words.as_slice() {
        [".align", n, rest @ ..] => (n.parse::<u32>().ok(), rest),
        rest => (None, rest),
    };
    let ty = rest
        .first()
        .map(|w| w.trim_start_matches('.').to_string())
        .unwrap_or_default();
    let elem: u32 = (ty
        .trim_start_matches(|c: char| c.is_ascii_alphabetic())
        .parse::<u32>()
        .unwrap_or(8)
        / 8)
    .max(1);
    // The name's `[N]`, for byte arrays.
    let count = rest
        .iter()
        .find_map(|w| w.split_once('['))
        .map(|(_, n)| n.trim_end_matches(']').parse::<u32>().unwrap_or(1))
        .unwrap_or(1);
    PtxParam {
        size: elem * count,
        align: explicit_align.unwrap_or(elem),
        ty,
    }
}

/// What follows a leading `(...)` return parameter, as in `.func (.param .b32
/// func_retval0) name(` or `call.uni (retval0), name, (...)`; `None` when the
/// parenthesis does not close on this line.
fn skip_return_param(rest: &str) -> Option<&str> {
    let rest = rest.trim_start();
    match rest.strip_prefix('(') {
        Some(r) => r.split_once(')').map(|(_, after)| after),
        None => Some(rest),
    }
}

/// `.extern .func` declarations left in a PTX file.
pub(crate) fn ptx_extern_funcs(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter_map(|l| {
            let rest = l.trim().strip_prefix(".extern .func")?;
            // `.extern .func (.param .b32 ret) name(` or `.extern .func name(`
            let rest = skip_return_param(rest)?;
            let name = rest.trim().split(['(', ' ', ';']).next()?.to_string();
            (!name.is_empty()).then_some(name)
        })
        .collect()
}

/// One function of a PTX module: its size and the functions it calls.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct PtxFunction {
    /// An `.entry` (kernel) rather than a `.func`.
    pub is_entry: bool,
    /// Lines of its body.
    pub lines: usize,
    /// The functions it calls, once per call site.
    pub calls: Vec<String>,
}

/// Every function defined in a PTX module, with its body size and call sites.
pub(crate) fn ptx_functions(ptx: &str) -> BTreeMap<String, PtxFunction> {
    let mut out = BTreeMap::new();
    // The last `.func`/`.entry` header seen, and the function whose body is open.
    let mut header: Option<(String, bool)> = None;
    let mut open: Option<(String, PtxFunction, usize)> = None;
    let mut call_pending = false;
    for line in ptx.lines() {
        if let Some((_, f, depth)) = open.as_mut() {
            *depth += line.matches('{').count();
            *depth -= line.matches('}').count().min(*depth);
            f.lines += 1;
            let t = line.trim_start();
            // `call.uni (retval0), name, (args);` or, from llc, the name on the next line.
            let target = if call_pending {
                call_pending = false;
                Some(t)
            } else if let Some(rest) = t.strip_prefix("call") {
                let rest = rest.trim_start_matches(|c: char| c == '.' || c.is_alphabetic());
                let rest = skip_return_param(rest).unwrap_or_default();
                let rest = rest.trim_start().trim_start_matches(',').trim_start();
                if rest.is_empty() {
                    call_pending = true;
                    None
                } else {
                    Some(rest)
                }
            } else {
                None
            };
            if let Some(name) = target.and_then(|r| r.split([',', ' ', ';', '(']).next())
                && !name.is_empty()
            {
                f.calls.push(name.to_string());
            }
            if *depth == 0 {
                let (name, f, _) = open.take().expect("open");
                out.insert(name, f);
            }
            continue;
        }
        let t = line.trim();
        let t = t
            .strip_prefix(".visible ")
            .or_else(|| t.strip_prefix(".weak "))
            .unwrap_or(t);
        if let Some(rest) = t
            .strip_prefix(".entry ")
            .or_else(|| t.strip_prefix(".func "))
        {
            let rest = skip_return_param(rest).unwrap_or_default();
            let name = rest.trim().split(['(', ' ']).next().unwrap_or_default();
            header = (!name.is_empty()).then(|| (name.to_string(), t.starts_with(".entry")));
        } else if line.starts_with('{')
            && let Some((name, is_entry)) = header.take()
        {
            let f = PtxFunction {
                is_entry,
                ..Default::default()
            };
            open = Some((name, f, 1));
        }
    }
    out
}

/// For every kernel, how many PTX lines it would have with every call inlined
/// at every call site, as whole-program `ptxas` does. A recursive call counts
/// its callee once (ptxas cannot inline recursion).
pub(crate) fn inlined_lines(funcs: &BTreeMap<String, PtxFunction>) -> BTreeMap<String, usize> {
    fn size(
        name: &str,
        funcs: &BTreeMap<String, PtxFunction>,
        memo: &mut BTreeMap<String, usize>,
        on_stack: &mut BTreeSet<String>,
    ) -> usize {
        if let Some(&n) = memo.get(name) {
            return n;
        }
        let Some(f) = funcs.get(name) else {
            return 0;
        };
        if !on_stack.insert(name.to_string()) {
            return f.lines;
        }
        let mut total = f.lines;
        for callee in &f.calls {
            total = total.saturating_add(size(callee, funcs, memo, on_stack));
        }
        on_stack.remove(name);
        memo.insert(name.to_string(), total);
        total
    }
    let mut memo = BTreeMap::new();
    let mut on_stack = BTreeSet::new();
    funcs
        .iter()
        .filter(|(_, f)| f.is_entry)
        .map(|(name, _)| (name.clone(), size(name, funcs, &mut memo, &mut on_stack)))
        .collect()
}

/// The functions `entry` reaches through calls, itself included.
pub(crate) fn reachable<'a>(
    funcs: &'a BTreeMap<String, PtxFunction>,
    entry: &'a str,
) -> BTreeSet<&'a str> {
    let mut seen = BTreeSet::from([entry]);
    let mut queue = VecDeque::from([entry]);
    while let Some(name) = queue.pop_front() {
        for callee in funcs
            .get(name)
            .map(|f| f.calls.as_slice())
            .unwrap_or_default()
        {
            if funcs.contains_key(callee.as_str()) && seen.insert(callee.as_str()) {
                queue.push_back(callee.as_str());
            }
        }
    }
    seen
}

/// Registers, stack and static shared memory per kernel after linking, from
/// `nvlink -v`: with separate compilation these cover everything the kernel calls.
pub(crate) fn nvlink_figures(stderr: &str) -> BTreeMap<String, (u32, u32, u32)> {
    let mut out = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in stderr.lines() {
        if let Some((_, rest)) = line.split_once("Function properties for '") {
            current = rest.split('\'').next().map(str::to_string);
            continue;
        }
        let Some(name) = current.take() else {
            continue;
        };
        let words: Vec<&str> = line.split([' ', ',']).filter(|w| !w.is_empty()).collect();
        let before = |word: &str| {
            let i = words.iter().position(|w| *w == word)?;
            words.get(i.checked_sub(1)?)?.parse::<u32>().ok()
        };
        if let (Some(registers), Some(stack)) = (before("registers"), before("stack")) {
            let shared = words
                .windows(3)
                .find(|w| w[1] == "bytes" && w[2] == "smem")
                .and_then(|w| w[0].parse().ok())
                .unwrap_or(0);
            out.insert(name, (registers, stack, shared));
        }
    }
    out
}

/// Register and spill figures per kernel from `ptxas -v`.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(crate) struct PtxasFigures {
    pub registers: u32,
    pub stack_frame: u32,
    pub spill_stores: u32,
    pub spill_loads: u32,
    /// Bytes of static shared memory (`N bytes smem`).
    pub shared_bytes: u32,
}

pub(crate) fn ptxas_figures(stderr: &str) -> BTreeMap<String, PtxasFigures> {
    let mut out: BTreeMap<String, PtxasFigures> = BTreeMap::new();
    let mut current: Option<String> = None;
    let number_before = |line: &str, word: &str| -> Option<u32> {
        let i = line.find(word)?;
        line[..i].split_whitespace().last()?.parse().ok()
    };
    for line in stderr.lines() {
        if let Some(i) = line
            .find("Compiling entry function '")
            .or_else(|| line.find("Function properties for "))
        {
            let rest = &line[i..];
            let name = rest
                .split_once('\'')
                .map(|(_, r)| r.split('\'').next().unwrap_or_default())
                .unwrap_or_else(|| rest.trim_start_matches("Function properties for ").trim());
            current = Some(name.to_string());
            continue;
        }
        let Some(name) = current.clone() else {
            continue;
        };
        let fig = out.entry(name).or_default();
        if let Some(r) = number_before(line, "registers") {
            fig.registers = r;
        }
        if let Some(v) = number_before(line, "bytes stack frame") {
            fig.stack_frame = v;
        }
        if let Some(v) = number_before(line, "bytes spill stores") {
            fig.spill_stores = v;
        }
        if let Some(v) = number_before(line, "bytes spill loads") {
            fig.spill_loads = v;
        }
        if let Some(v) = number_before(line, "bytes smem") {
            fig.shared_bytes = v;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maxntid_follows_the_parameter_list() {
        let ptx = ".visible .entry a(\n\t.param .u64 a_param_0\n)                 // @a\n{\n\tret;\n}\n.visible .entry b()\n{\n\tret;\n}\n";
        let bounds: BTreeMap<String, u32> = [("a".to_string(), 384), ("b".to_string(), 128)].into();
        let out = add_maxntid(ptx, &bounds);
        assert!(
            out.contains("a_param_0\n)                 // @a\n.maxntid 384, 1, 1\n{"),
            "{out}"
        );
        assert!(out.contains(".entry b()\n.maxntid 128, 1, 1\n{"), "{out}");
        let absent: BTreeMap<String, u32> = [("c".to_string(), 64)].into();
        assert_eq!(add_maxntid(ptx, &absent), ptx);
    }

    #[test]
    fn parses_ptx_entries_and_externs() {
        let ptx = ".extern .func  (.param .b32 func_retval0) vprintf\n(\n\t.param .b64 vprintf_param_0\n);\n\
            .extern .func __assertfail(\n.param .b64 a\n);\n\
            .visible .entry ring(\n\t.param .u64 .ptr .align 1 ring_param_0,\n\t.param .u32 ring_param_1,\n\
            \t.param .align 4 .b8 ring_param_2[12]\n)\n{\n}\n.visible .entry empty()\n{\n}\n";
        assert_eq!(ptx_extern_funcs(ptx), ["vprintf", "__assertfail"]);
        let e = ptx_entries(ptx);
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].0, "ring");
        assert_eq!(
            e[0].1[0],
            PtxParam {
                size: 8,
                align: 8,
                ty: "u64".into()
            }
        );
        assert_eq!(
            e[0].1[1],
            PtxParam {
                size: 4,
                align: 4,
                ty: "u32".into()
            }
        );
        assert_eq!(
            e[0].1[2],
            PtxParam {
                size: 12,
                align: 4,
                ty: "b8".into()
            }
        );
        assert_eq!(e[1], ("empty".to_string(), vec![]));
    }

    /// llc 22 writes `)  // @name` after the last parameter: a byte array
    /// there keeps its `[N]`, in every position.
    #[test]
    fn struct_parameters_keep_their_size_in_every_position() {
        let byval = |name: &str, i: u32| format!("\t.param .align 8 .b8 {name}_param_{i}[24]");
        let ptr = |name: &str, i: u32| format!("\t.param .u64 .ptr .align 1 {name}_param_{i}");
        let entry = |name: &str, params: Vec<String>| {
            format!(
                "\t// .globl\t{name}          // -- Begin function {name}\n.visible .entry {name}(\n{}\n)                                       // @{name}\n{{\n\tret;\n}}\n",
                params.join(",\n")
            )
        };
        let ptx = [
            entry("first", vec![byval("first", 0), ptr("first", 1)]),
            entry(
                "middle",
                vec![
                    ptr("middle", 0),
                    byval("middle", 1),
                    "\t.param .u32 middle_param_2".into(),
                ],
            ),
            entry("last", vec![ptr("last", 0), byval("last", 1)]),
            entry("only", vec![byval("only", 0)]),
        ]
        .concat();
        let s = PtxParam {
            size: 24,
            align: 8,
            ty: "b8".into(),
        };
        let p = PtxParam {
            size: 8,
            align: 8,
            ty: "u64".into(),
        };
        let n = PtxParam {
            size: 4,
            align: 4,
            ty: "u32".into(),
        };
        let e = ptx_entries(&ptx);
        let got: Vec<(&str, &[PtxParam])> = e.iter().map(|(k, v)| (k.as_str(), &v[..])).collect();
        assert_eq!(
            got,
            [
                ("first", &[s.clone(), p.clone()][..]),
                ("middle", &[p.clone(), s.clone(), n][..]),
                ("last", &[p, s.clone()][..]),
                ("only", &[s][..]),
            ]
        );
    }

    #[test]
    fn parses_ptxas_verbose_output() {
        let err = "ptxas info    : 0 bytes gmem\nptxas info    : Compiling entry function 'ring' for 'sm_90'\n\
            ptxas info    : Function properties for ring\n    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n\
            ptxas info    : Used 24 registers, used 1 barriers, 1024 bytes smem, 380 bytes cmem[0]\n";
        let f = ptxas_figures(err);
        assert_eq!(
            f["ring"],
            PtxasFigures {
                registers: 24,
                stack_frame: 8,
                spill_stores: 4,
                spill_loads: 4,
                shared_bytes: 1024,
            }
        );
    }

    const PTX_CALLS: &str = r#"
.func leaf
(
	.param .b64 leaf_param_0
)
;
.func  (.param .b32 func_retval0) helper(
	.param .b64 helper_param_0
)
{
	.reg .b32 	%r<3>;
	{ // callseq 0, 0
	call.uni
	leaf,
	(
	param0
	);
	} // callseq 0
	ret;
}
.func leaf(
	.param .b64 leaf_param_0
)
{
	ret;
}
.func spin()
{
	call.uni spin, ();
	ret;
}
	// .globl	k
.visible .entry k(
	.param .u64 k_param_0
)
{
	{ // callseq 1, 0
	call.uni (retval0), helper, (param0);
	} // callseq 1
	{ // callseq 2, 0
	call.uni (retval0), helper, (param0);
	} // callseq 2
	call.uni spin, ();
	call (retval0), %rd4, (param0), prototype_3;
	ret;
}
"#;

    #[test]
    fn reads_the_ptx_call_graph() {
        let f = ptx_functions(PTX_CALLS);
        assert_eq!(f.len(), 4, "{f:?}");
        assert!(f["k"].is_entry && !f["helper"].is_entry);
        assert_eq!(f["helper"].calls, ["leaf"]);
        assert_eq!(f["k"].calls, ["helper", "helper", "spin", "%rd4"]);
        assert_eq!(f["leaf"].lines, 2);
        assert_eq!(f["helper"].lines, 10);
        let reach: Vec<&str> = reachable(&f, "k").into_iter().collect();
        assert_eq!(reach, ["helper", "k", "leaf", "spin"]);
    }

    #[test]
    fn counts_lines_inlined_at_every_call_site() {
        let f = ptx_functions(PTX_CALLS);
        let n = inlined_lines(&f);
        assert_eq!(n.len(), 1);
        // k itself, helper (with leaf) twice, spin once (its self-call is not inlined).
        let helper = f["helper"].lines + f["leaf"].lines;
        let spin = f["spin"].lines + f["spin"].lines;
        assert_eq!(n["k"], f["k"].lines + 2 * helper + spin);
    }

    #[test]
    fn parses_nvlink_verbose_output() {
        let err = "nvlink info    : 26089 bytes gmem, 11500 bytes cmem[3]\n\
            nvlink info    : Function properties for 'rma_f32':\n\
            nvlink info    : used 187 registers, used 1 barriers, 200 stack, 0 bytes smem, 560 bytes cmem[0], 0 bytes lmem\n\
            nvlink info    : Function properties for 'barriers':\n\
            nvlink info    : Function properties for 'k2':\n\
            nvlink info    : used 40 registers, used 0 barriers, 0 stack, 0 bytes smem\n\
            nvlink info    : Function properties for 'tile':\n\
            nvlink info    : used 30 registers, used 1 barriers, 0 stack, 4096 bytes smem\n";
        let f = nvlink_figures(err);
        assert_eq!(f.len(), 3, "{f:?}");
        assert_eq!(f["tile"], (30, 0, 4096));
        assert_eq!(f["rma_f32"], (187, 200, 0));
        assert_eq!(f["k2"], (40, 0, 0));
    }
}
