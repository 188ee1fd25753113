//! The gap table in `src/ffi/mod.rs`'s docs: what the crate does not declare, and why.

use crate::{ALL, V345, V380, device_dir};
use std::collections::BTreeSet;

/// Why a function is not declared: the gap table's `Kind` column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Why {
    /// `absent`: named by the headers, not defined in that version's bitcode.
    Absent,
    /// `struct return`: defined, but returns `%struct.__half`/`%struct.__nv_bfloat16` by value.
    StructReturn,
    /// `omitted`: defined, and left out on purpose (the table says why).
    Omitted,
}

#[derive(Debug)]
pub(crate) struct Gap {
    pub(crate) symbol: String,
    pub(crate) versions: Vec<&'static str>,
    pub(crate) why: Why,
}

/// The gap table of `src/ffi/mod.rs` (section `# Gaps`), brace groups
/// expanded: `| functions | versions | kind | why |`, one row per group.
pub(crate) fn documented_gaps() -> Vec<Gap> {
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

#[test]
fn expands_braces() {
    assert_eq!(
        brace_expand("a_{x,y}{_n,}"),
        ["a_x_n", "a_x", "a_y_n", "a_y"]
    );
}
