//! Which GPU each PE uses: `--gpus` lists, and counting the visible GPUs
//! without CUDA.
//!
//! PE `r` uses `gpus[r % gpus.len()]`, a CUDA device ordinal as the PE's own
//! process sees it (that is, after `CUDA_VISIBLE_DEVICES`). The launcher never
//! sets `CUDA_VISIBLE_DEVICES` itself: NVSHMEM wants every PE to see all the
//! GPUs, so that it can map its peers' memory over NVLink or PCIe.

use std::path::Path;

/// Parses a `--gpus` list: device ordinals separated by commas, where
/// `A-B` stands for every ordinal from `A` to `B` inclusive.
///
/// Repeats are allowed: with `0,0,1,1` and four PEs, ranks 0 and 1 use GPU 0
/// and ranks 2 and 3 use GPU 1. Spaces around entries are ignored.
///
/// ```
/// use nvshmem_host::launcher::parse_gpu_list;
/// assert_eq!(parse_gpu_list("0,1"), Ok(vec![0, 1]));
/// assert_eq!(parse_gpu_list("4-7,0"), Ok(vec![4, 5, 6, 7, 0]));
/// assert!(parse_gpu_list("0,,1").is_err());
/// assert!(parse_gpu_list("gpu0").is_err());
/// ```
pub fn parse_gpu_list(list: &str) -> Result<Vec<u32>, String> {
    const MAX_ENTRIES: usize = 4096;
    let mut gpus = Vec::new();
    if list.trim().is_empty() {
        return Err("the GPU list is empty; give device ordinals such as 0,1".into());
    }
    for entry in list.split(',') {
        let entry = entry.trim();
        let ordinal = |s: &str| -> Result<u32, String> {
            s.trim().parse::<u32>().map_err(|_| {
                if s.trim().is_empty() {
                    format!("empty entry in the GPU list `{list}`")
                } else {
                    format!(
                        "`{}` in the GPU list `{list}` is not a device ordinal such as 0 or 3",
                        s.trim()
                    )
                }
            })
        };
        match entry.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (ordinal(a)?, ordinal(b)?);
                if a > b {
                    return Err(format!(
                        "the range `{entry}` in the GPU list runs backwards"
                    ));
                }
                if (b - a) as usize >= MAX_ENTRIES {
                    return Err(format!("the range `{entry}` in the GPU list is too long"));
                }
                gpus.extend(a..=b);
            }
            None => gpus.push(ordinal(entry)?),
        }
        if gpus.len() > MAX_ENTRIES {
            return Err(format!("the GPU list has more than {MAX_ENTRIES} entries"));
        }
    }
    Ok(gpus)
}

/// Counts the devices a `CUDA_VISIBLE_DEVICES` value makes visible, the way
/// CUDA reads it: entries separated by commas, each a device ordinal or a
/// `GPU-…`/`MIG-…` UUID; the first entry that is neither ends the list.
///
/// ```
/// use nvshmem_host::launcher::count_cuda_visible_devices;
/// assert_eq!(count_cuda_visible_devices("0,1,2"), 3);
/// assert_eq!(count_cuda_visible_devices("GPU-8f2c1a7e-0000-0000-0000-000000000000"), 1);
/// assert_eq!(count_cuda_visible_devices("0,1,-1,3"), 2);
/// assert_eq!(count_cuda_visible_devices(""), 0);
/// ```
pub fn count_cuda_visible_devices(value: &str) -> usize {
    value
        .split(',')
        .map(str::trim)
        .take_while(|e| e.parse::<u32>().is_ok() || e.starts_with("GPU-") || e.starts_with("MIG-"))
        .count()
}

/// The number of GPUs a PE will see, found without CUDA.
///
/// From `CUDA_VISIBLE_DEVICES` when it is set, else from the entries of
/// `/proc/driver/nvidia/gpus` (one per GPU the NVIDIA driver manages), else
/// `None`.
///
/// ```
/// let n = nvshmem_host::launcher::visible_gpu_count();
/// if let Some(n) = n {
///     println!("{n} GPUs visible");
/// }
/// ```
pub fn visible_gpu_count() -> Option<usize> {
    if let Some(v) = std::env::var_os("CUDA_VISIBLE_DEVICES") {
        return Some(count_cuda_visible_devices(&v.to_string_lossy()));
    }
    count_dir_entries(Path::new("/proc/driver/nvidia/gpus"))
}

fn count_dir_entries(dir: &Path) -> Option<usize> {
    let entries = std::fs::read_dir(dir).ok()?;
    Some(entries.filter(|e| e.is_ok()).count())
}

/// The default GPU list: every visible GPU (`0..visible_gpu_count()`), or just
/// GPU 0 when none can be counted (no driver, or `CUDA_VISIBLE_DEVICES` hides
/// them all); a PE that then fails to open GPU 0 reports that itself.
///
/// ```
/// let gpus = nvshmem_host::launcher::default_gpus();
/// assert!(!gpus.is_empty());
/// assert_eq!(gpus[0], 0);
/// ```
pub fn default_gpus() -> Vec<u32> {
    match visible_gpu_count() {
        Some(n) if n > 0 => (0..n.min(u32::MAX as usize) as u32).collect(),
        _ => vec![0],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_lists() {
        assert_eq!(parse_gpu_list(" 0 , 1 "), Ok(vec![0, 1]));
        assert_eq!(parse_gpu_list("2-2"), Ok(vec![2]));
        assert_eq!(parse_gpu_list("0,0,1,1"), Ok(vec![0, 0, 1, 1]));
        for bad in [
            "", " ", ",", "0,", "-1", "1-0", "a", "0-", "0-99999", "1.5", "0;1",
        ] {
            assert!(parse_gpu_list(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn cuda_visible_devices() {
        assert_eq!(count_cuda_visible_devices("3"), 1);
        assert_eq!(count_cuda_visible_devices(" 3, 5 ,7"), 3);
        assert_eq!(count_cuda_visible_devices("-1"), 0);
        assert_eq!(count_cuda_visible_devices("MIG-abc,0"), 2);
        assert_eq!(count_cuda_visible_devices("0,x,1"), 1);
    }

    #[test]
    fn dir_count() {
        assert_eq!(
            count_dir_entries(Path::new("/nonexistent/nvshmem-run")),
            None
        );
    }
}
