//! The declarations against each version's bitcode, and the API's coverage.

use crate::bitcode::{bitcode_defines, probe};
use crate::gaps::{Gap, Why, documented_gaps};
use crate::headers::{expected_names, headers};
use crate::{ARCH, V345, V380, find_nvshmem, skip};
use nvshmem_builder::ir::FnSig as Sig;
use std::collections::{BTreeMap, BTreeSet};

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
