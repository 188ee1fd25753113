//! What a test binary reads besides its tests: the environment
//! ([`Settings`], [`REQUIRE_GPU`]) and the command line ([`Args`], as
//! libtest reads it).

use std::time::Duration;

/// The variable that makes a missing GPU a failure (GPU runners set it).
pub const REQUIRE_GPU: &str = "NVSHMEM_RS_REQUIRE_GPU";

/// Whether [`REQUIRE_GPU`] asks for a GPU: `1`, `true` or `yes`; unset,
/// empty, `0`, `false` or `no` do not; anything else is an error that says
/// what is expected. Programs that exit cleanly without a GPU read it here
/// too, so that every binary of a project reads it alike.
///
/// ```
/// # fn main() -> Result<(), String> {
/// if !nvshmem_host::harness::gpu_required()? {
///     println!("no GPU: skipped");
/// }
/// # Ok(()) }
/// ```
pub fn gpu_required() -> std::result::Result<bool, String> {
    parse_require_gpu(std::env::var(REQUIRE_GPU).ok().as_deref())
}

fn parse_require_gpu(value: Option<&str>) -> std::result::Result<bool, String> {
    match value.map(str::trim) {
        None | Some("" | "0" | "false" | "no") => Ok(false),
        Some("1" | "true" | "yes") => Ok(true),
        Some(other) => Err(format!(
            "{REQUIRE_GPU}={other}: expected 1 (a missing GPU fails) or 0"
        )),
    }
}

/// The harness's settings from the environment; a value that does not
/// parse is an error, never silently the default.
#[derive(Debug, PartialEq)]
pub(super) struct Settings {
    /// `NVSHMEM_RS_REQUIRE_GPU`: a skip for want of a GPU (or MPS) fails.
    pub(super) require_gpu: bool,
    /// `NVSHMEM_RS_TEST_TIMEOUT` (seconds), else 120 s: each run's limit.
    pub(super) timeout: Duration,
}

impl Settings {
    pub(super) fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<Settings, String> {
        let require_gpu = parse_require_gpu(env(REQUIRE_GPU).as_deref())?;
        let timeout = match env("NVSHMEM_RS_TEST_TIMEOUT") {
            None => Duration::from_secs(120),
            Some(v) => match v.trim().parse::<f64>() {
                Ok(secs) if (0.001..1e9).contains(&secs) => Duration::from_secs_f64(secs),
                _ => {
                    return Err(format!(
                        "NVSHMEM_RS_TEST_TIMEOUT={v}: expected a number of seconds, at least 0.001, such as 300"
                    ));
                }
            },
        };
        Ok(Settings {
            require_gpu,
            timeout,
        })
    }
}

/// The command line, as libtest reads it: substrings (or, with `--exact`,
/// names) select tests, `--skip` leaves some out, `--list` lists them,
/// `--help` says so.
/// Other flags (`--nocapture`, `--test-threads 1`, ...) are accepted and
/// have no effect.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Args {
    /// The command line as given, for messages.
    pub(super) given: Vec<String>,
    pub(super) filters: Vec<String>,
    skip: Vec<String>,
    exact: bool,
    pub(super) list: bool,
    /// `--format terse`: the list without its count line.
    pub(super) terse: bool,
    /// `--ignored`: only ignored tests, and this harness has none.
    ignored: bool,
    /// `-h`/`--help`.
    pub(super) help: bool,
}

impl Args {
    pub(super) fn parse(args: impl IntoIterator<Item = String>) -> Args {
        /// libtest's flags that take the next argument as their value.
        const WITH_VALUE: [&str; 7] = [
            "--skip",
            "--test-threads",
            "--color",
            "--format",
            "--logfile",
            "--shuffle-seed",
            "-Z",
        ];
        let given: Vec<String> = args.into_iter().collect();
        let mut out = Args {
            given: given.clone(),
            ..Args::default()
        };
        let mut args = given.into_iter();
        while let Some(a) = args.next() {
            let (flag, inline) = match a.split_once('=') {
                Some((f, v)) if a.starts_with("--") => (f.to_string(), Some(v.to_string())),
                _ => (a.clone(), None),
            };
            let value =
                |args: &mut dyn Iterator<Item = String>| inline.clone().or_else(|| args.next());
            match flag.as_str() {
                "--exact" => out.exact = true,
                "--list" => out.list = true,
                "-h" | "--help" => out.help = true,
                "-q" | "--quiet" => out.terse = true,
                "--ignored" => out.ignored = true,
                "--skip" => out.skip.extend(value(&mut args)),
                "--format" => out.terse = value(&mut args).as_deref() == Some("terse"),
                f if WITH_VALUE.contains(&f) => {
                    let _ = value(&mut args);
                }
                f if f.starts_with('-') => {}
                _ => out.filters.push(a),
            }
        }
        out
    }

    /// Whether test `name` runs.
    pub(super) fn selects(&self, name: &str) -> bool {
        let hit = |f: &String| {
            if self.exact {
                name == f
            } else {
                name.contains(f.as_str())
            }
        };
        !self.ignored
            && (self.filters.is_empty() || self.filters.iter().any(hit))
            && !self.skip.iter().any(hit)
    }
}

/// What `--help` prints.
pub(super) const USAGE: &str = "\
A GPU test binary (nvshmem_host::harness): each test runs on each of its PE counts.

Usage: <binary> [FILTER...] [--exact] [--skip FILTER] [--list [--format terse]]

  FILTER          run the tests whose name contains it (--exact: equals it)
  --skip FILTER   leave out the tests it matches
  --list          list the tests (as libtest does, for cargo-nextest)
  other libtest flags (--nocapture, --test-threads N, ...) change nothing

Environment: NVSHMEM_RS_REQUIRE_GPU=1 (a missing GPU fails), NVSHMEM_RS_TEST_TIMEOUT=secs
(per run, default 120), NVSHMEM_RS_TEST_REPORT=path (a JSON report), NVSHMEM_RS_PTX_DIR=dir.
Under mpirun/srun/torchrun the binary is one PE of the job. See the rustdoc of
nvshmem_host::harness.
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_refuse_what_does_not_parse() {
        let with = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        let s = Settings::from_env(&with(&[])).unwrap();
        assert_eq!(
            (s.require_gpu, s.timeout),
            (false, Duration::from_secs(120))
        );
        let s = Settings::from_env(&with(&[
            ("NVSHMEM_RS_REQUIRE_GPU", "true"),
            ("NVSHMEM_RS_TEST_TIMEOUT", "1.5"),
        ]))
        .unwrap();
        assert_eq!(
            (s.require_gpu, s.timeout),
            (true, Duration::from_millis(1500))
        );
        assert_eq!(parse_require_gpu(Some(" 0 ")), Ok(false));
        let e = Settings::from_env(&with(&[("NVSHMEM_RS_REQUIRE_GPU", "maybe")])).unwrap_err();
        assert!(
            e.contains("NVSHMEM_RS_REQUIRE_GPU=maybe: expected 1"),
            "{e}"
        );
        for bad in ["abc", "0", "-5", "inf", "1e-12"] {
            let vars: &'static [(&str, &str)] =
                Box::leak(Box::new([("NVSHMEM_RS_TEST_TIMEOUT", bad)]));
            let e = Settings::from_env(&with(vars)).unwrap_err();
            assert!(e.contains("expected a number of seconds"), "{e}");
        }
    }

    #[test]
    fn args_read_as_libtest_reads_them() {
        let parse = |a: &[&str]| Args::parse(a.iter().map(|s| s.to_string()));
        let a = parse(&[
            "ring",
            "--nocapture",
            "--test-threads",
            "1",
            "--skip",
            "ring_big",
        ]);
        assert_eq!(a.filters, ["ring"]);
        assert!(a.selects("ring") && a.selects("ring_small") && !a.selects("ring_big"));
        assert!(!a.selects("allreduce"));
        let a = parse(&["--exact", "ring", "--test-threads=2"]);
        assert!(a.selects("ring") && !a.selects("ring_small"));
        let a = parse(&["--list", "--format", "terse"]);
        assert!(a.list && a.terse && a.selects("anything"));
        assert!(!parse(&["--ignored"]).selects("ring"));
        assert!(parse(&["-h"]).help && parse(&["-q"]).terse);
    }
}
