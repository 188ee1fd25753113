//! `cargo xtask check-links`: every relative link of the README, BENCHMARKS.md
//! and the guide (`docs/`) names a file or folder that exists, and every `#anchor` a heading
//! of the file it points into. Links to the web are not followed (CI has no
//! network to spare for them).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The Markdown files checked: the README, BENCHMARKS.md and every `.md`
/// under `docs/`.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut docs = vec![root.join("README.md"), root.join("BENCHMARKS.md")];
    if let Ok(entries) = std::fs::read_dir(root.join("docs")) {
        let mut md: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "md"))
            .collect();
        md.sort();
        docs.extend(md);
    }
    docs
}

pub fn run() -> Result<ExitCode, String> {
    let root = crate::repo_root();
    let mut broken = Vec::new();
    let mut checked = 0;
    for doc in documents(&root) {
        let text = std::fs::read_to_string(&doc).map_err(|e| format!("{}: {e}", doc.display()))?;
        for (line, target) in links(&text) {
            checked += 1;
            if let Err(why) = check(&doc, &text, &target) {
                let name = doc
                    .strip_prefix(&root)
                    .unwrap_or(&doc)
                    .display()
                    .to_string();
                broken.push(format!("{name}:{line}: ({target}) {why}"));
            }
        }
    }
    for b in &broken {
        eprintln!("{b}");
    }
    println!("{checked} relative links checked, {} broken", broken.len());
    Ok(if broken.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `(line, target)` of every inline link `[text](target)` outside code
/// blocks and code spans, without web links.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Code spans hold no links.
        let prose: String = line
            .split('`')
            .enumerate()
            .filter(|(k, _)| k % 2 == 0)
            .map(|(_, s)| s)
            .collect::<Vec<_>>()
            .join(" ");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let Some(end) = rest.find(')') else { break };
            let target = rest[..end].split_whitespace().next().unwrap_or_default();
            let web = target.contains("://") || target.starts_with("mailto:");
            if !target.is_empty() && !web {
                out.push((i + 1, target.to_string()));
            }
            rest = &rest[end..];
        }
    }
    out
}

/// Whether `target`, a link in `doc` (whose text is `text`), resolves.
fn check(doc: &Path, text: &str, target: &str) -> Result<(), String> {
    let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
    let (file, body) = if path.is_empty() {
        (doc.to_path_buf(), text.to_string())
    } else {
        let file = doc.parent().unwrap_or(Path::new(".")).join(path);
        if !file.exists() {
            return Err("no such file or folder".into());
        }
        let body = match file.extension().is_some_and(|x| x == "md") {
            true => std::fs::read_to_string(&file).unwrap_or_default(),
            false => String::new(),
        };
        (file, body)
    };
    if anchor.is_empty() || file.extension().is_none_or(|x| x != "md") {
        return Ok(());
    }
    match headings(&body).iter().any(|h| h == anchor) {
        true => Ok(()),
        false => Err(format!("no heading #{anchor} in {}", file.display())),
    }
}

/// The anchors GitHub gives the headings of `text`: lower case, spaces to
/// `-`, punctuation but `-` and `_` dropped.
fn headings(text: &str) -> Vec<String> {
    let mut fenced = false;
    text.lines()
        .filter(|l| {
            if l.trim_start().starts_with("```") {
                fenced = !fenced;
            }
            !fenced && l.starts_with('#')
        })
        .map(|l| {
            l.trim_start_matches('#')
                .trim()
                .to_lowercase()
                .chars()
                .filter_map(|c| match c {
                    ' ' => Some('-'),
                    c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_relative_links_outside_code() {
        let text = "See [the guide](docs/guide.md#tests) and [web](https://x.org).\n\
                    `[not](a-link)`\n```\n[nor](this)\n```\n[anchor](#two-commands)\n";
        let found: Vec<String> = links(text).into_iter().map(|(_, t)| t).collect();
        assert_eq!(found, ["docs/guide.md#tests", "#two-commands"]);
    }

    #[test]
    fn anchors_as_github_makes_them() {
        assert_eq!(
            headings("# nvshmem-rs\n## Two commands\n### On a GPU machine, without Rust\n"),
            [
                "nvshmem-rs",
                "two-commands",
                "on-a-gpu-machine-without-rust"
            ]
        );
    }
}
