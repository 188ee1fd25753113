//! What a module image is, checked before the driver reads it: the driver
//! takes no length and reads as far as the image's own headers say, so a
//! truncated or malformed cubin or fatbin would make it read past the end.

/// The kinds of image `cuModuleLoadDataEx` accepts.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ImageKind {
    /// PTX text, read up to its first NUL.
    Ptx,
    /// An ELF cubin whose headers and sections lie within the image.
    Cubin,
    /// A fatbin whose header and contents lie within the image.
    Fatbin,
}

const ELF_MAGIC: &[u8] = b"\x7fELF";
const FATBIN_MAGIC: u32 = 0xBA55_ED50;
/// `__fatBinC_Wrapper_t`'s magic: the driver follows the pointer inside.
const FATBIN_WRAPPER_MAGIC: u32 = 0x4662_43B1;

fn u16_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?).into())
}
fn u32_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?).into())
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Whether `count` entries of `size` bytes from `offset` lie within `len`.
fn within(offset: u64, count: u64, size: u64, len: u64) -> bool {
    count
        .checked_mul(size)
        .and_then(|bytes| offset.checked_add(bytes))
        .is_some_and(|end| end <= len)
}

/// What `image` is, or why the driver must not be given it.
pub(crate) fn classify(image: &[u8]) -> Result<ImageKind, String> {
    let len = image.len() as u64;
    if image.starts_with(ELF_MAGIC) {
        check_elf(image, len)?;
        return Ok(ImageKind::Cubin);
    }
    if u32_at(image, 0) == Some(FATBIN_WRAPPER_MAGIC.into()) {
        return Err(
            "a fat binary wrapper, which points at an image elsewhere in memory that cannot be \
             checked: pass the fatbin itself"
                .into(),
        );
    }
    if u32_at(image, 0) == Some(FATBIN_MAGIC.into()) {
        // magic u32, version u16, header size u16, size of what follows u64.
        let header = u16_at(image, 6).ok_or("a fatbin shorter than its header")?;
        let body = u64_at(image, 8).ok_or("a fatbin shorter than its header")?;
        if header < 16 || !within(header, 1, body, len) {
            return Err(format!(
                "a fatbin whose header says {} bytes, but the image has {len}: truncated or not a fatbin",
                header.saturating_add(body)
            ));
        }
        return Ok(ImageKind::Fatbin);
    }
    Ok(ImageKind::Ptx)
}

fn check_elf(b: &[u8], len: u64) -> Result<(), String> {
    let bad = |what: &str| format!("a cubin whose {what}: truncated or not a CUDA ELF image");
    if b.len() < 64 || b[4] != 2 || b[5] != 1 {
        return Err(bad("ELF header is not a 64-bit little-endian one"));
    }
    let field = |v: Option<u64>| v.ok_or_else(|| bad("ELF header is cut short"));
    let (phoff, phentsize, phnum) = (
        field(u64_at(b, 32))?,
        field(u16_at(b, 54))?,
        field(u16_at(b, 56))?,
    );
    let (shoff, shentsize, shnum) = (
        field(u64_at(b, 40))?,
        field(u16_at(b, 58))?,
        field(u16_at(b, 60))?,
    );
    if phnum > 0 && (phentsize < 56 || !within(phoff, phnum, phentsize, len)) {
        return Err(bad("program headers lie past its end"));
    }
    // No sections is also ELF's extended numbering (the count in section
    // 0), which a cubin never needs.
    if shnum == 0 {
        return Err(bad("ELF header lists no sections"));
    }
    if shentsize < 64 || !within(shoff, shnum, shentsize, len) {
        return Err(bad("section headers lie past its end"));
    }
    for i in 0..shnum {
        let h = (shoff + i * shentsize) as usize;
        const SHT_NOBITS: u64 = 8;
        let (kind, offset, size) = (
            field(u32_at(b, h + 4))?,
            field(u64_at(b, h + 24))?,
            field(u64_at(b, h + 32))?,
        );
        const SHT_STRTAB: u64 = 3;
        if kind != SHT_NOBITS && !within(offset, 1, size, len) {
            return Err(bad(&format!("section {i} lies past its end")));
        }
        // The driver reads names up to a NUL: a string table must end in one.
        if kind == SHT_STRTAB && size > 0 && b[(offset + size - 1) as usize] != 0 {
            return Err(bad(&format!(
                "string table (section {i}) does not end in a NUL"
            )));
        }
    }
    for i in 0..phnum {
        let h = (phoff + i * phentsize) as usize;
        let (offset, size) = (field(u64_at(b, h + 8))?, field(u64_at(b, h + 32))?);
        if !within(offset, 1, size, len) {
            return Err(bad(&format!("segment {i} lies past its end")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal 64-bit ELF: header, one section header pointing at 8 bytes.
    fn elf() -> Vec<u8> {
        let mut b = vec![0u8; 64 + 8 + 64];
        b[..4].copy_from_slice(ELF_MAGIC);
        b[4] = 2;
        b[5] = 1;
        b[40..48].copy_from_slice(&72u64.to_le_bytes()); // e_shoff
        b[58..60].copy_from_slice(&64u16.to_le_bytes()); // e_shentsize
        b[60..62].copy_from_slice(&1u16.to_le_bytes()); // e_shnum
        let sh = 72;
        b[sh + 4..sh + 8].copy_from_slice(&1u32.to_le_bytes()); // PROGBITS
        b[sh + 24..sh + 32].copy_from_slice(&64u64.to_le_bytes()); // offset
        b[sh + 32..sh + 40].copy_from_slice(&8u64.to_le_bytes()); // size
        b
    }

    #[test]
    fn complete_images_pass() {
        assert_eq!(classify(&elf()), Ok(ImageKind::Cubin));
        assert_eq!(classify(b".version 8.8\n\0"), Ok(ImageKind::Ptx));
        let mut fatbin = vec![0u8; 16 + 100];
        fatbin[..4].copy_from_slice(&FATBIN_MAGIC.to_le_bytes());
        fatbin[6..8].copy_from_slice(&16u16.to_le_bytes());
        fatbin[8..16].copy_from_slice(&100u64.to_le_bytes());
        assert_eq!(classify(&fatbin), Ok(ImageKind::Fatbin));
        fatbin.pop();
        assert!(classify(&fatbin).unwrap_err().contains("truncated"));
    }

    #[test]
    fn truncated_or_lying_cubins_are_refused() {
        let e = elf();
        for cut in [4, 63, 100, e.len() - 1] {
            let err = classify(&e[..cut]).unwrap_err();
            assert!(err.contains("truncated"), "{cut}: {err}");
        }
        let mut big = e.clone();
        big[72 + 32..72 + 40].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(classify(&big).unwrap_err().contains("section 0"));
        let mut many = e.clone();
        many[60..62].copy_from_slice(&u16::MAX.to_le_bytes());
        assert!(classify(&many).unwrap_err().contains("section headers"));
        let mut class32 = e.clone();
        class32[4] = 1;
        assert!(classify(&class32).unwrap_err().contains("64-bit"));
        let mut none = e.clone();
        none[60..62].copy_from_slice(&0u16.to_le_bytes());
        assert!(classify(&none).unwrap_err().contains("no sections"));
        // A string table (type 3) must end in a NUL; the 8 bytes are zero.
        let mut strtab = e.clone();
        strtab[72 + 4..72 + 8].copy_from_slice(&3u32.to_le_bytes());
        assert_eq!(classify(&strtab), Ok(ImageKind::Cubin));
        strtab[64 + 7] = b'x';
        assert!(classify(&strtab).unwrap_err().contains("NUL"));
        let mut wrapper = vec![0u8; 16];
        wrapper[..4].copy_from_slice(&FATBIN_WRAPPER_MAGIC.to_le_bytes());
        assert!(classify(&wrapper).unwrap_err().contains("wrapper"));
    }
}
