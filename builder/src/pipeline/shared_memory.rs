//! Moves `nvshmem_device::static_shared!` statics and the dynamic shared
//! memory array into PTX shared memory, in the linked IR.
//!
//! Rust has no address-space attribute. The device crate marks a static for
//! shared memory with the link section [`SECTION`], and declares the dynamic
//! shared memory as the extern array [`DYNAMIC`]. Here, before `opt`:
//! - each such global moves to `addrspace(3)` (its initializer becomes
//!   `undef`: shared memory cannot be initialized; the section goes), and the
//!   dynamic array becomes `external addrspace(3) global [0 x i8], align 16`;
//! - every use of `@x` becomes `addrspacecast (ptr addrspace(3) @x to ptr)`,
//!   a generic pointer, as before; LLVM's address-space inference then turns
//!   the accesses into `ld.shared`/`st.shared`.

/// The link section of `static_shared!` statics.
pub(crate) const SECTION: &str = ".nvshmem.shared";
/// The dynamic shared memory array's symbol.
pub(crate) const DYNAMIC: &str = "nvshmem_rs_dynamic_shared";

/// The linked module with its shared-memory globals moved to `addrspace(3)`;
/// an error names a static that has a real initializer.
pub(crate) fn lower(ll: &str) -> Result<String, String> {
    let section = format!("section \"{SECTION}\"");
    let mut names: Vec<String> = Vec::new();
    for line in ll.lines() {
        if !line.starts_with('@') {
            continue;
        }
        let Some(name) = super::ir::global_names(line).next() else {
            continue;
        };
        if line.contains(&section) || (name == DYNAMIC && line.contains(" external ")) {
            names.push(name);
        }
    }
    if names.is_empty() {
        return Ok(ll.to_string());
    }
    let mut out = String::with_capacity(ll.len() + names.len() * 256);
    for line in ll.lines() {
        let defined = line
            .starts_with('@')
            .then(|| super::ir::global_names(line).next())
            .flatten()
            .filter(|n| names.contains(n));
        match defined {
            Some(name) => out.push_str(&definition(line, &name, &section)?),
            None => out.push_str(&replace_uses(line, &names)),
        }
        out.push('\n');
    }
    Ok(out)
}

/// `@x = <linkage> global <ty> <init>, section "...", align N` →
/// `@x = <linkage> addrspace(3) global <ty> undef, align N`.
fn definition(line: &str, name: &str, section: &str) -> Result<String, String> {
    let Some(at) = line.find(" global ") else {
        return Err(format!(
            "shared-memory global @{name} is not a `global`: {line}"
        ));
    };
    let (head, rest) = line.split_at(at);
    let mut rest = rest.replacen(" global ", " addrspace(3) global ", 1);
    if name == DYNAMIC {
        // `external global [0 x i8]` (and maybe `, align 1`).
        let ty_end = rest.find(", align").unwrap_or(rest.len());
        rest.truncate(ty_end);
        return Ok(format!("{head}{rest}, align 16"));
    }
    rest = rest.replace(&format!(", {section}"), "");
    for init in [" zeroinitializer", " poison"] {
        rest = rest.replacen(init, " undef", 1);
    }
    if !rest.contains(" undef") {
        return Err(format!(
            "static_shared! global @{name} has an initializer; shared memory starts uninitialized: {line}"
        ));
    }
    Ok(format!("{head}{rest}"))
}

/// Every `@name` (as a whole token) of `names` on `line` wrapped in an addrspacecast.
fn replace_uses(line: &str, names: &[String]) -> String {
    if !line.contains('@') {
        return line.to_string();
    }
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(i) = rest.find('@') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let (token, len) = match after.strip_prefix('"') {
            Some(q) => match q.find('"') {
                Some(end) => (&q[..end], end + 2),
                None => (after, after.len()),
            },
            None => {
                let end = after
                    .find(|c: char| {
                        !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '$' | '-'))
                    })
                    .unwrap_or(after.len());
                (&after[..end], end)
            }
        };
        let original = &rest[i..i + 1 + len];
        if names.iter().any(|n| n == token) {
            out.push_str(&format!(
                "addrspacecast (ptr addrspace(3) {original} to ptr)"
            ));
        } else {
            out.push_str(original);
        }
        rest = &rest[i + 1 + len..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const LL: &str = r#"@_RNv4TILE = internal unnamed_addr global [1024 x i8] undef, section ".nvshmem.shared", align 4
@_RNv4TILE2 = internal global [8 x i8] zeroinitializer, section ".nvshmem.shared", align 8
@other = internal global [4 x i8] zeroinitializer, align 4
@nvshmem_rs_dynamic_shared = external global [0 x i8]
define ptx_kernel void @k(ptr %p) {
  %a = getelementptr inbounds nuw float, ptr @_RNv4TILE, i64 %t
  store i64 0, ptr @_RNv4TILE2, align 8
  store ptr getelementptr (i8, ptr @nvshmem_rs_dynamic_shared, i64 8), ptr @other
  %b = load i32, ptr @_RNv4TILE.1
  ret void
}"#;

    #[test]
    fn moves_marked_globals_to_shared_memory() {
        let out = lower(LL).unwrap();
        assert!(out.contains(
            "@_RNv4TILE = internal unnamed_addr addrspace(3) global [1024 x i8] undef, align 4\n"
        ), "{out}");
        assert!(
            out.contains("@_RNv4TILE2 = internal addrspace(3) global [8 x i8] undef, align 8\n")
        );
        assert!(out.contains("@other = internal global [4 x i8] zeroinitializer, align 4\n"));
        assert!(out.contains(
            "@nvshmem_rs_dynamic_shared = external addrspace(3) global [0 x i8], align 16\n"
        ));
        assert!(out.contains(
            "getelementptr inbounds nuw float, ptr addrspacecast (ptr addrspace(3) @_RNv4TILE to ptr), i64 %t"
        ));
        assert!(out.contains("ptr addrspacecast (ptr addrspace(3) @_RNv4TILE2 to ptr), align 8"));
        assert!(out.contains(
            "getelementptr (i8, ptr addrspacecast (ptr addrspace(3) @nvshmem_rs_dynamic_shared to ptr), i64 8), ptr @other"
        ));
        // A longer name that starts with a marked one is another global.
        assert!(out.contains("load i32, ptr @_RNv4TILE.1\n"));
        assert!(!out.contains(SECTION));
    }

    #[test]
    fn modules_without_shared_memory_are_unchanged() {
        let ll = "@x = global i32 0\ndefine void @f() {\n  ret void\n}";
        assert_eq!(lower(ll).unwrap(), ll);
    }

    #[test]
    fn an_initialized_shared_static_is_refused() {
        let ll = r#"@s = internal global [4 x i8] c"abcd", section ".nvshmem.shared", align 4"#;
        assert!(lower(ll).unwrap_err().contains("initializer"));
    }
}
