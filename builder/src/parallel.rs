//! Building several kernel crates at once.

use crate::{BuildOutput, Builder};

/// Builds every builder's kernel crate from a build script, on as many
/// threads as there are cores, and returns the outputs in the same order.
/// As [`Builder::build_from_build_script`]: prints the `rerun-if-changed`
/// lines, and on an error prints it and exits.
///
/// The builds are independent (each has its own work folder and lock), and
/// most of their time is single-threaded `ptxas` and `opt`.
///
/// ```no_run
/// // build.rs
/// use nvshmem_builder::{Builder, build_all_from_build_script};
/// let outs = build_all_from_build_script(vec![
///     Builder::new("kernels/gemm"),
///     Builder::new("kernels/allreduce"),
/// ]);
/// let dir = outs[0].ptx.parent().unwrap();
/// println!("cargo:rustc-env=NVSHMEM_RS_PTX_DIR={}", dir.display());
/// ```
///
/// Each crate's typed bindings go to `$OUT_DIR/nvshmem-kernels/` from its
/// first build in `builders` (a later build of the same crate, against
/// another NVSHMEM version say, does not replace them).
pub fn build_all_from_build_script(builders: Vec<Builder>) -> Vec<BuildOutput> {
    let outputs = run_in_parallel(&builders, |b| b.clone().build_in_build_script(false));
    let mut published = std::collections::BTreeSet::new();
    for out in &outputs {
        if published.insert(out.manifest.crate_name.clone())
            && let Err(e) = crate::pipeline::publish_bindings(out)
        {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
    outputs
}

/// Runs `f` over `jobs` on as many threads as there are cores, keeping the
/// order of the results.
fn run_in_parallel<J: Sync, R: Send>(jobs: &[J], f: impl Fn(&J) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<R>>> =
        jobs.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..threads.min(jobs.len()) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(job) = jobs.get(i) else { break };
                    let r = f(job);
                    *results[i].lock().unwrap() = Some(r);
                }
            });
        }
    });
    results
        .into_iter()
        .map(|r| r.into_inner().unwrap().expect("every job ran"))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn results_keep_the_order_of_the_jobs() {
        let jobs: Vec<u64> = (0..37).collect();
        let out = super::run_in_parallel(&jobs, |j| j * j);
        assert_eq!(out, jobs.iter().map(|j| j * j).collect::<Vec<_>>());
    }
}
