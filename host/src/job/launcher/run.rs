//! [`run`]: start the PEs, forward their output, watch them, stop them.

use super::env;
use super::error::LaunchError;
use super::output::{self, Dest, OpenStreams};
use super::plan::LaunchPlan;
use super::sys::{self, Reap, SignalGuard};
use libc::{c_int, pid_t};
use std::ffi::OsString;
use std::fmt;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The exit status `nvshmem-run` ends with after `--timeout` (as `timeout(1)` does).
pub const TIMEOUT_EXIT_CODE: u8 = 124;

/// How often the launcher looks at its PEs.
const POLL: Duration = Duration::from_millis(5);
/// How long a failed rank's last output may take to arrive before the
/// launcher reports the failure (so the report comes after that output).
const LAST_WORDS: Duration = Duration::from_millis(250);
/// How long to wait for processes to vanish after SIGKILL, and for output
/// pipes to close at the end, before giving up on them.
const AFTER_KILL: Duration = Duration::from_secs(1);
/// How long a PE may survive SIGKILL (stuck in the kernel) before the
/// launcher stops waiting for it.
const UNKILLABLE: Duration = Duration::from_secs(10);

/// How one PE's process ended.
///
/// ```
/// use nvshmem_host::launcher::RankStatus;
/// assert_eq!(RankStatus::Exited(3).to_string(), "exited with status 3");
/// let killed = RankStatus::Signaled { signal: 9, core_dumped: false };
/// assert_eq!(killed.to_string(), "was killed by signal 9 (SIGKILL)");
/// assert_eq!(killed.exit_code(), 128 + 9);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RankStatus {
    /// It exited with this status (0 is success).
    Exited(i32),
    /// A signal killed it.
    Signaled {
        /// The signal's number.
        signal: i32,
        /// Whether it left a core dump.
        core_dumped: bool,
    },
}

impl RankStatus {
    fn from_wait_status(status: c_int) -> RankStatus {
        if libc::WIFSIGNALED(status) {
            RankStatus::Signaled {
                signal: libc::WTERMSIG(status),
                core_dumped: libc::WCOREDUMP(status),
            }
        } else {
            RankStatus::Exited(libc::WEXITSTATUS(status))
        }
    }

    /// Whether it exited with status 0.
    ///
    /// ```
    /// assert!(nvshmem_host::launcher::RankStatus::Exited(0).success());
    /// ```
    pub fn success(&self) -> bool {
        *self == RankStatus::Exited(0)
    }

    /// The exit status a shell would give: the status itself, or 128 + the signal.
    ///
    /// ```
    /// assert_eq!(nvshmem_host::launcher::RankStatus::Exited(3).exit_code(), 3);
    /// ```
    pub fn exit_code(&self) -> u8 {
        match *self {
            RankStatus::Exited(code) => code.clamp(0, 255) as u8,
            RankStatus::Signaled { signal, .. } => (128 + signal).clamp(0, 255) as u8,
        }
    }
}

impl fmt::Display for RankStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            RankStatus::Exited(code) => write!(f, "exited with status {code}"),
            RankStatus::Signaled {
                signal,
                core_dumped,
            } => {
                write!(f, "was killed by signal {signal}")?;
                if let Some(name) = sys::signal_name(signal) {
                    write!(f, " ({name})")?;
                }
                if core_dumped {
                    write!(f, " (core dumped)")?;
                }
                Ok(())
            }
        }
    }
}

/// How a run ended. [`Outcome::exit_code`] is what `nvshmem-run` exits with.
///
/// ```
/// use nvshmem_host::launcher::{Outcome, RankStatus};
/// let failed = Outcome::RankFailed { rank: 1, status: RankStatus::Exited(3) };
/// assert_eq!(failed.exit_code(), 3);
/// assert_eq!(failed.to_string(), "rank 1 exited with status 3");
/// assert_eq!(Outcome::Success.exit_code(), 0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every PE exited with status 0.
    Success,
    /// This PE failed first (exited non-zero or was killed by a signal that
    /// the launcher did not send); the others were stopped.
    RankFailed {
        /// The rank that failed.
        rank: usize,
        /// How it ended.
        status: RankStatus,
    },
    /// The plan's timeout passed; every PE was stopped.
    TimedOut {
        /// The timeout.
        after: Duration,
    },
    /// The launcher received SIGINT, SIGTERM or SIGHUP; every PE was stopped.
    Interrupted {
        /// The signal's number.
        signal: i32,
    },
}

impl Outcome {
    /// Whether every PE succeeded.
    ///
    /// ```
    /// assert!(nvshmem_host::launcher::Outcome::Success.success());
    /// ```
    pub fn success(&self) -> bool {
        *self == Outcome::Success
    }

    /// The launcher's exit status: 0; the failed rank's status (128 + signal
    /// when a signal killed it); [`TIMEOUT_EXIT_CODE`]; or 128 + the signal
    /// the launcher received.
    ///
    /// ```
    /// use nvshmem_host::launcher::Outcome;
    /// use std::time::Duration;
    /// assert_eq!(Outcome::TimedOut { after: Duration::from_secs(2) }.exit_code(), 124);
    /// assert_eq!(Outcome::Interrupted { signal: 2 }.exit_code(), 130);
    /// ```
    pub fn exit_code(&self) -> u8 {
        match *self {
            Outcome::Success => 0,
            // A rank that "fails" with status 0 cannot happen; never report success for a failure.
            Outcome::RankFailed { status, .. } => status.exit_code().max(1),
            Outcome::TimedOut { .. } => TIMEOUT_EXIT_CODE,
            Outcome::Interrupted { signal } => (128 + signal).clamp(0, 255) as u8,
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Outcome::Success => write!(f, "all ranks exited with status 0"),
            Outcome::RankFailed { rank, status } => write!(f, "rank {rank} {status}"),
            Outcome::TimedOut { after } => write!(f, "timed out after {}", seconds(after)),
            Outcome::Interrupted { signal } => match sys::signal_name(signal) {
                Some(name) => write!(f, "received {name}"),
                None => write!(f, "received signal {signal}"),
            },
        }
    }
}

/// Formats a duration as seconds, e.g. `2s` or `0.5s`.
fn seconds(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else {
        let s = format!("{:.3}", d.as_secs_f64());
        format!("{}s", s.trim_end_matches('0').trim_end_matches('.'))
    }
}

fn ranks(n: usize) -> String {
    format!("{n} rank{}", if n == 1 { "" } else { "s" })
}

/// Starts the plan's PEs and supervises them until they have all ended.
///
/// Each PE runs `program args…` with the launcher's environment plus
/// [`LaunchPlan::pe_env`], stdin from `/dev/null`, in a process group of its
/// own, and dies with SIGKILL if the launcher dies (`PR_SET_PDEATHSIG`). Its
/// stdout and stderr are forwarded to the launcher's, each line prefixed with
/// `[rank] `. While it runs, the launcher is a child subreaper, so that it can
/// reap the PEs' orphaned children.
///
/// When a PE fails, the timeout passes, or the process receives SIGINT,
/// SIGTERM or SIGHUP (which `run` catches while it runs, unless they are
/// ignored), `run` prints why on stderr (`nvshmem-run: rank 1 exited with
/// status 3; stopping the other 3 ranks`), sends SIGTERM to every PE's process
/// group, and SIGKILL to those still there after [`LaunchPlan::grace`] (or at
/// a second signal). When all PEs have exited, it stops whatever they left
/// running in their process groups the same way. It returns once every PE has
/// been reaped.
///
/// The signal handlers and the subreaper setting are process-wide and are
/// put back when `run` returns, so run one plan at a time in a process.
///
/// ```
/// use nvshmem_host::launcher::{LaunchPlan, Outcome, RankStatus, run};
///
/// let ok = LaunchPlan::new(2, "sh").with_args(["-c", "echo rank $NVSHMEM_RUN_RANK"]);
/// assert_eq!(run(&ok)?, Outcome::Success);
///
/// let failing = LaunchPlan::new(2, "sh").with_args(["-c", "exit $((NVSHMEM_RUN_RANK + 3))"]);
/// let outcome = run(&failing)?;
/// assert!(matches!(outcome, Outcome::RankFailed { status: RankStatus::Exited(3 | 4), .. }));
/// # Ok::<(), nvshmem_host::launcher::LaunchError>(())
/// ```
pub fn run(plan: &LaunchPlan) -> Result<Outcome, LaunchError> {
    plan.validate()?;
    // The store rank 0 puts NVSHMEM's unique id into, for the others to get.
    let job = crate::job::rendezvous::new_job();
    let store = crate::job::rendezvous::Store::serve("127.0.0.1:0", &job).map_err(|source| {
        LaunchError::System {
            what: "cannot listen on a loopback port for the unique-id store".into(),
            source,
        }
    })?;
    let rendezvous = vec![
        (env::RENDEZVOUS.into(), store.addr().to_string().into()),
        (env::JOB.into(), job.into()),
    ];
    let signals = SignalGuard::install().map_err(|source| LaunchError::System {
        what: "cannot install signal handlers".into(),
        source,
    })?;
    let _subreaper = SubreaperGuard::enable();
    let mut sup = Supervisor {
        plan,
        pes: Vec::with_capacity(plan.nranks),
        streams: OpenStreams::new(plan.nranks),
        signals,
        signals_seen: 0,
        rendezvous,
    };
    let start = Instant::now();
    let parent = sys::getpid();
    for rank in 0..plan.nranks {
        if let Err(e) = sup.spawn(rank, parent) {
            sup.supervise(start, true);
            return Err(e);
        }
    }
    Ok(sup.supervise(start, false))
}

/// Restores the subreaper setting when it drops.
struct SubreaperGuard {
    previous: Option<bool>,
}

impl SubreaperGuard {
    fn enable() -> SubreaperGuard {
        SubreaperGuard {
            previous: sys::set_child_subreaper(true),
        }
    }
}

impl Drop for SubreaperGuard {
    fn drop(&mut self) {
        if self.previous == Some(false) {
            sys::set_child_subreaper(false);
        }
    }
}

/// One PE's process, which leads a process group of the same id.
struct PeProcess {
    pid: pid_t,
    status: Option<RankStatus>,
    /// Whether its process group may still hold processes.
    group_alive: bool,
}

struct Supervisor<'a> {
    plan: &'a LaunchPlan,
    pes: Vec<PeProcess>,
    streams: Arc<OpenStreams>,
    signals: SignalGuard,
    signals_seen: u32,
    /// [`env::RENDEZVOUS`] and [`env::JOB`] for every PE.
    rendezvous: Vec<(OsString, OsString)>,
}

/// The stopping phase: when SIGTERM went out, and when SIGKILL did.
struct Stopping {
    since: Instant,
    killed: Option<Instant>,
}

impl Supervisor<'_> {
    fn spawn(&mut self, rank: usize, parent: pid_t) -> Result<(), LaunchError> {
        let plan = self.plan;
        let mut cmd = Command::new(&plan.program);
        cmd.args(&plan.args)
            .envs(plan.pe_env(rank))
            .envs(self.rendezvous.iter().cloned())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        // SAFETY: die_with_parent only makes async-signal-safe system calls.
        unsafe { cmd.pre_exec(move || sys::die_with_parent(parent)) };
        let mut child = cmd.spawn().map_err(|source| LaunchError::Spawn {
            rank,
            program: plan.program.to_string_lossy().into_owned(),
            source,
        })?;
        // std's Child never reaps on drop; we reap with waitpid ourselves.
        self.pes.push(PeProcess {
            pid: child.id() as pid_t,
            status: None,
            group_alive: true,
        });
        let thread_error = |source| LaunchError::System {
            what: format!("cannot forward rank {rank}'s output"),
            source,
        };
        if let Some(out) = child.stdout.take() {
            output::forward(rank, out, Dest::Stdout, &self.streams).map_err(thread_error)?;
        }
        if let Some(err) = child.stderr.take() {
            output::forward(rank, err, Dest::Stderr, &self.streams).map_err(thread_error)?;
        }
        Ok(())
    }

    /// Reaps every child that has ended: PEs, and orphans of their groups.
    fn reap(&mut self) {
        for pe in &mut self.pes {
            if pe.group_alive {
                while let Reap::Ended(pid, status) = sys::try_reap(-pe.pid) {
                    if pid == pe.pid {
                        pe.status = Some(RankStatus::from_wait_status(status));
                    }
                }
            }
            if pe.status.is_none() {
                // The PE may have moved to another process group.
                match sys::try_reap(pe.pid) {
                    Reap::Ended(_, status) => {
                        pe.status = Some(RankStatus::from_wait_status(status))
                    }
                    Reap::Running => {}
                    // Not our child any more (cannot happen unless someone else reaped it).
                    Reap::NoChild => pe.status = Some(RankStatus::Exited(0)),
                }
            }
        }
    }

    fn running(&self) -> usize {
        self.pes.iter().filter(|pe| pe.status.is_none()).count()
    }

    /// Signals every process group that may still have processes, and every
    /// PE not yet reaped; returns how many groups still had processes.
    fn signal_all(&mut self, sig: c_int) -> usize {
        let mut alive = 0;
        for pe in &mut self.pes {
            if pe.group_alive {
                pe.group_alive = sys::kill_group(pe.pid, sig);
            }
            if pe.status.is_none() {
                sys::kill_pid(pe.pid, sig);
            }
            alive += (pe.group_alive || pe.status.is_none()) as usize;
        }
        alive
    }

    /// Whether any PE is unreaped or any group still has processes.
    fn anything_left(&mut self) -> bool {
        self.signal_all(0) > 0
    }

    /// Watches the PEs until all have ended and their groups are empty; with
    /// `stop_now`, stops them at once.
    fn supervise(&mut self, start: Instant, stop_now: bool) -> Outcome {
        let mut outcome: Option<Outcome> = None;
        let mut stopping: Option<Stopping> = None;
        if stop_now {
            outcome = Some(Outcome::Interrupted {
                signal: libc::SIGTERM,
            });
            self.begin_stop(&mut stopping);
        }
        loop {
            self.reap();
            let (count, last_signal) = self.signals.received();
            let new_signal = count > self.signals_seen;
            self.signals_seen = count;

            if outcome.is_none() {
                if let Some(rank) = self
                    .pes
                    .iter()
                    .position(|pe| pe.status.is_some_and(|s| !s.success()))
                {
                    let status = self.pes[rank].status.unwrap_or(RankStatus::Exited(1));
                    self.streams.wait_rank(rank, LAST_WORDS);
                    self.reap();
                    let others = self.running();
                    let failed = Outcome::RankFailed { rank, status };
                    if others > 0 {
                        output::message(&format!("{failed}; stopping the other {}", ranks(others)));
                    } else {
                        output::message(&failed.to_string());
                    }
                    outcome = Some(failed);
                } else if let Some(after) = self.plan.timeout.filter(|&t| start.elapsed() >= t) {
                    let timed_out = Outcome::TimedOut { after };
                    output::message(&format!("{timed_out}; stopping {}", ranks(self.running())));
                    outcome = Some(timed_out);
                } else if new_signal {
                    let interrupted = Outcome::Interrupted {
                        signal: last_signal,
                    };
                    output::message(&format!(
                        "{interrupted}; stopping {}",
                        ranks(self.running())
                    ));
                    outcome = Some(interrupted);
                }
                if outcome.is_some() {
                    self.begin_stop(&mut stopping);
                }
            } else if new_signal && stopping.as_ref().is_some_and(|s| s.killed.is_none()) {
                output::message("received another signal; sending SIGKILL");
                self.kill_now(&mut stopping);
            }

            if self.running() == 0 {
                if outcome.is_none() {
                    outcome = Some(Outcome::Success);
                }
                if !self.anything_left() {
                    break;
                }
                if stopping.is_none() {
                    let groups: Vec<String> = (0..self.pes.len())
                        .filter(|&r| self.pes[r].group_alive)
                        .map(|r| r.to_string())
                        .collect();
                    output::message(&format!(
                        "all ranks have exited; stopping the processes they left running (rank {})",
                        groups.join(", ")
                    ));
                    self.begin_stop(&mut stopping);
                }
            }

            if let Some(stop) = &stopping {
                match stop.killed {
                    None if stop.since.elapsed() >= self.plan.grace => {
                        self.reap();
                        if self.anything_left() {
                            let left = self
                                .pes
                                .iter()
                                .filter(|pe| pe.group_alive || pe.status.is_none())
                                .count();
                            output::message(&format!(
                                "{} still running {} after SIGTERM; sending SIGKILL",
                                ranks(left),
                                seconds(self.plan.grace)
                            ));
                            self.kill_now(&mut stopping);
                        }
                    }
                    // Whatever is left now cannot be killed or reaped by us
                    // (uninterruptible, or a zombie of a process that left
                    // the group); once every PE is reaped, stop waiting.
                    Some(at) if at.elapsed() >= AFTER_KILL && self.running() == 0 => break,
                    // A PE stuck in the kernel (a hung driver call, say)
                    // ignores even SIGKILL; do not hang with it forever.
                    Some(at) if at.elapsed() >= UNKILLABLE => {
                        let stuck: Vec<String> = self
                            .pes
                            .iter()
                            .enumerate()
                            .filter(|(_, pe)| pe.status.is_none())
                            .map(|(rank, pe)| format!("rank {rank} (pid {})", pe.pid))
                            .collect();
                        output::message(&format!(
                            "{} still running {} after SIGKILL; giving up on it",
                            stuck.join(", "),
                            seconds(UNKILLABLE)
                        ));
                        break;
                    }
                    _ => {}
                }
            }
            std::thread::sleep(POLL);
        }

        let still_open = self.streams.wait_all(AFTER_KILL);
        if !still_open.is_empty() {
            let list: Vec<String> = still_open.iter().map(|r| r.to_string()).collect();
            output::message(&format!(
                "the output of rank {} is still held open by a process outside its process group; not waiting for it",
                list.join(", ")
            ));
        }
        output::write_locked(Dest::Stdout, b"");
        outcome.unwrap_or(Outcome::Success)
    }

    fn begin_stop(&mut self, stopping: &mut Option<Stopping>) {
        if stopping.is_none() {
            self.signal_all(libc::SIGTERM);
            *stopping = Some(Stopping {
                since: Instant::now(),
                killed: None,
            });
        }
    }

    fn kill_now(&mut self, stopping: &mut Option<Stopping>) {
        self.signal_all(libc::SIGKILL);
        let since = stopping.as_ref().map_or_else(Instant::now, |s| s.since);
        *stopping = Some(Stopping {
            since,
            killed: Some(Instant::now()),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_seconds() {
        assert_eq!(seconds(Duration::from_secs(2)), "2s");
        assert_eq!(seconds(Duration::from_millis(500)), "0.5s");
        assert_eq!(seconds(Duration::from_millis(1250)), "1.25s");
    }

    #[test]
    fn statuses() {
        let segv = RankStatus::Signaled {
            signal: libc::SIGSEGV,
            core_dumped: true,
        };
        assert_eq!(
            segv.to_string(),
            "was killed by signal 11 (SIGSEGV) (core dumped)"
        );
        assert_eq!(RankStatus::Exited(256).exit_code(), 255);
        assert_eq!(
            Outcome::RankFailed {
                rank: 0,
                status: RankStatus::Exited(0)
            }
            .exit_code(),
            1
        );
        assert_eq!(
            Outcome::Interrupted {
                signal: libc::SIGTERM
            }
            .to_string(),
            "received SIGTERM"
        );
    }
}
