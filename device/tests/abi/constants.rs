//! `Cmp`, `SignalOp` and `Team` against the headers' enums.

use crate::for_each_version;
use crate::headers::logical_lines;
use nvshmem_device::{Cmp, SignalOp, Team};
use std::collections::HashMap;

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
    for_each_version("constants", |version, nv| {
        let mut values = HashMap::new();
        for header in [
            "device_host_transport/nvshmem_constants.h",
            "device_host_transport/nvshmem_common_transport.h",
            "device_host/nvshmem_common.cuh",
        ] {
            let path = nv.include_dir().join(header);
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            values.extend(enum_values(&text));
        }
        let ours = [
            (Cmp::Eq, "NVSHMEM_CMP_EQ"),
            (Cmp::Ne, "NVSHMEM_CMP_NE"),
            (Cmp::Gt, "NVSHMEM_CMP_GT"),
            (Cmp::Le, "NVSHMEM_CMP_LE"),
            (Cmp::Lt, "NVSHMEM_CMP_LT"),
            (Cmp::Ge, "NVSHMEM_CMP_GE"),
        ]
        .map(|(c, name)| (format!("{c:?}"), c.to_c() as i64, name))
        .into_iter()
        .chain(
            [
                (SignalOp::Set, "NVSHMEM_SIGNAL_SET"),
                (SignalOp::Add, "NVSHMEM_SIGNAL_ADD"),
            ]
            .map(|(op, name)| (format!("{op:?}"), op.to_c() as i64, name)),
        )
        .chain(
            [
                (Team::WORLD, "NVSHMEM_TEAM_WORLD"),
                (Team::SHARED, "NVSHMEM_TEAM_SHARED"),
                (Team::NODE, "NVSHMEMX_TEAM_NODE"),
                (Team::SAME_MYPE_NODE, "NVSHMEMX_TEAM_SAME_MYPE_NODE"),
            ]
            .map(|(t, name)| (format!("{t:?}"), t.raw() as i64, name)),
        );
        for (what, value, name) in ours {
            assert_eq!(
                Some(&value),
                values.get(name),
                "NVSHMEM {version}: {what} vs {name}"
            );
        }
        say!("Cmp, SignalOp and Team match NVSHMEM {version}'s headers");
    });
}
