//! The gap table in `src/ffi/mod.rs`'s docs: what the crate does not declare, and why.

use crate::{bitcodes, device_dir};
use nvshmem_builder::Version;
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
    /// The versions it applies to, as inclusive ranges.
    pub(crate) versions: Vec<(Version, Version)>,
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
        let versions: Vec<(Version, Version)> = cells[2]
            .split(',')
            .map(|v| {
                version_range(v.trim())
                    .unwrap_or_else(|| panic!("gap table: unknown versions `{v}` in {row}"))
            })
            .collect();
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

impl Gap {
    /// Whether the row applies to `v`.
    pub(crate) fn applies(&self, v: Version) -> bool {
        self.versions.iter().any(|(lo, hi)| *lo <= v && v <= *hi)
    }
}

/// A gap table version cell: `all`, `3.5+` (3.5.0 and later), `3.3-3.7`
/// (minor versions, inclusive) or one minor version `3.8`.
fn version_range(cell: &str) -> Option<(Version, Version)> {
    let minor = |s: &str| s.parse::<Version>().ok();
    let end = |v: Version| Version::new(v.major, v.minor, u32::MAX);
    let last = Version::new(u32::MAX, 0, 0);
    if cell == "all" {
        return Some((Version::new(0, 0, 0), last));
    }
    if let Some(from) = cell.strip_suffix('+') {
        return Some((minor(from)?, last));
    }
    if let Some((lo, hi)) = cell.split_once('-') {
        return Some((minor(lo)?, end(minor(hi)?)));
    }
    let v = minor(cell)?;
    Some((v, end(v)))
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
    for (v, _) in bitcodes() {
        let mut seen = BTreeSet::new();
        for g in gaps.iter().filter(|g| g.applies(v)) {
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
fn reads_version_ranges() {
    let r = |c: &str| version_range(c).unwrap();
    let v = |s: &str| s.parse::<Version>().unwrap();
    let inside = |(lo, hi): (Version, Version), x: &str| lo <= v(x) && v(x) <= hi;
    assert!(inside(r("3.3-3.4"), "3.4.5") && !inside(r("3.3-3.4"), "3.5.19"));
    assert!(inside(r("3.5+"), "3.8.0") && !inside(r("3.5+"), "3.4.5"));
    assert!(inside(r("3.8"), "3.8.0") && !inside(r("3.8"), "3.7.2"));
    assert!(inside(r("all"), "3.3.20"));
}

#[test]
fn expands_braces() {
    assert_eq!(
        brace_expand("a_{x,y}{_n,}"),
        ["a_x_n", "a_x", "a_y_n", "a_y"]
    );
}
