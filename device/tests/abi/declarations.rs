//! The declarations against each version's bitcode, and the API's coverage.

use crate::bitcode::{bitcode_defines, probe};
use crate::gaps::{Gap, Why, documented_gaps};
use crate::headers::{expected_names, headers};
use crate::{ARCH, bitcodes, find_nvshmem};
use nvshmem_builder::ir::FnSig as Sig;
use nvshmem_builder::{CudaMajor, Version};
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
    version: Version,
    named: &BTreeSet<String>,
    decls: &BTreeMap<String, Sig>,
    defs: &BTreeMap<String, Sig>,
) -> (Vec<String>, usize) {
    let all = documented_gaps();
    let gaps: BTreeMap<&str, &Gap> = all
        .iter()
        .filter(|g| g.applies(version))
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

/// One bitcode's whole check: the declarations of `features` against its
/// `defines`, and the coverage of its exports and header names. Returns
/// whether it passed, its defines and the number of exports.
fn check_version(
    version: Version,
    cuda: CudaMajor,
    features: &[&str],
) -> Option<(bool, BTreeMap<String, Sig>)> {
    let nv = find_nvshmem(version, cuda)?;
    let bc = nv.device_bitcode(ARCH.parse().unwrap()).unwrap();
    let defs = bitcode_defines(&bc);
    let decls = probe(features);
    let (mut problems, checked) = compare(&decls, &defs);
    let (coverage, gaps) = check_coverage(version, &expected_names(&headers(&nv)), &decls, &defs);
    problems.extend(coverage);
    let exported_gaps = documented_gaps()
        .iter()
        .filter(|g| g.applies(version) && defs.contains_key(&g.symbol))
        .count();
    say!(
        "ABI NVSHMEM {version} (CUDA {cuda}, {}), features {features:?}: the bitcode exports {} \
         functions: {checked} declared (signatures checked), {exported_gaps} in the gap table; \
         {gaps} gaps in all (with those the headers name but the bitcode lacks); {} problems \
         (undocumented gaps included)",
        bc.display(),
        defs.len(),
        problems.len()
    );
    let ok = report(&format!("NVSHMEM {version} (CUDA {cuda})"), &problems);
    Some((ok, defs))
}

/// Every installed bitcode (every supported version, CUDA 12 and 13) against
/// the declarations of the feature the builder turns on for it, and against
/// the default features (the 3.4 API links against every version).
#[test]
fn declarations_match_nvshmem_bitcode() {
    let mut ok = true;
    let mut checked = 0;
    for (version, cuda) in bitcodes() {
        let feature = version.info().and_then(|i| i.device_feature());
        let features: Vec<&str> = feature.into_iter().collect();
        let Some((passed, defs)) = check_version(version, cuda, &features) else {
            continue;
        };
        checked += 1;
        ok &= passed;
        if feature.is_some() {
            let (problems, n) = compare(&probe(&[]), &defs);
            say!(
                "ABI NVSHMEM {version} (CUDA {cuda}), default features: {n} declarations \
                 checked, {} mismatches",
                problems.len()
            );
            ok &= report(
                &format!("NVSHMEM {version} (CUDA {cuda}) with default features"),
                &problems,
            );
        }
    }
    assert!(ok, "the ABI check failed (see above)");
    if checked == 0 {
        say!("SKIPPED: no NVSHMEM installation found; nothing was checked");
    } else {
        say!("ABI: {checked} NVSHMEM bitcodes checked");
    }
}
