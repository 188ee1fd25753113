//! The process environment: reading it through one lookup type (so that the
//! decisions made from it are testable), and setting NVSHMEM's variables in it
//! only while that is sound.
//!
//! NVSHMEM reads its configuration with `getenv` when it initializes, so the
//! settings of [`InitOptions`](crate::InitOptions) must be in the environment
//! by then. Writing the environment while another thread reads it is
//! undefined behaviour (the reason `std::env::set_var` is `unsafe`), and
//! CUDA's and NVSHMEM's own threads read it without Rust's lock. So a variable
//! that is missing or different is set only while this process has exactly
//! one thread (counted in `/proc/self/task`); otherwise init fails with
//! [`Error::EnvNotSet`], which names the variable and the fix.

use crate::error::{Error, Result};

/// Reads one variable; `None` when it is unset (or not UTF-8).
pub(crate) type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The real process environment.
pub(crate) fn process(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The number of threads of this process, from `/proc/self/task`.
fn thread_count() -> Option<usize> {
    Some(std::fs::read_dir("/proc/self/task").ok()?.count())
}

/// The variables of `vars` whose value the environment does not already hold.
pub(crate) fn missing<'v>(vars: &'v [(String, String)], env: Lookup) -> Vec<&'v (String, String)> {
    vars.iter()
        .filter(|(name, value)| env(name).as_deref() != Some(value.as_str()))
        .collect()
}

/// Puts `vars` into the process environment (those it does not already hold),
/// which is sound only while this is the process's one thread; otherwise it
/// fails naming the first variable that would have to change.
pub(crate) fn apply(vars: &[(String, String)]) -> Result<()> {
    let missing = missing(vars, &process);
    let Some((name, value)) = missing.first() else {
        return Ok(());
    };
    let threads = thread_count();
    if threads != Some(1) {
        return Err(Error::EnvNotSet {
            var: name.clone(),
            value: value.clone(),
            threads: threads.unwrap_or(0),
        });
    }
    for (name, value) in missing {
        // SAFETY: this thread is the process's only one (checked just above,
        // and only this thread could have started another since), so nothing
        // reads or writes the environment concurrently.
        unsafe { std::env::set_var(name, value) };
    }
    Ok(())
}

/// A lookup over fixed variables, for tests.
#[cfg(test)]
pub(crate) fn of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let map: std::collections::HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| map.get(name).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_variables_that_differ_are_missing() {
        let vars = vec![
            ("A".to_string(), "1".to_string()),
            ("B".to_string(), "2".to_string()),
        ];
        let env = of(&[("A", "1"), ("B", "3")]);
        assert_eq!(missing(&vars, &env), vec![&vars[1]]);
    }

    #[test]
    fn a_multithreaded_process_gets_an_error_naming_the_variable() {
        // The test harness runs this on one of its threads, so there are several.
        let var = "NVSHMEM_RS_TEST_NEVER_SET";
        let err = apply(&[(var.to_string(), "1".to_string())]).unwrap_err();
        assert!(
            matches!(&err, Error::EnvNotSet { var: v, .. } if v == var),
            "{err:?}"
        );
        let msg = err.to_string();
        assert!(msg.contains("export NVSHMEM_RS_TEST_NEVER_SET=1"), "{msg}");
        assert!(std::env::var_os(var).is_none());
        // Nothing to set is fine with any number of threads.
        assert!(apply(&[]).is_ok());
    }
}
