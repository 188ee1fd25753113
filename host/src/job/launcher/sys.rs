//! The few Linux system calls the launcher needs, wrapped: signal handlers,
//! process groups, reaping, `prctl`.

use libc::{c_int, pid_t};
use std::io;
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};

static LAST_SIGNAL: AtomicI32 = AtomicI32::new(0);
static SIGNAL_COUNT: AtomicU32 = AtomicU32::new(0);

extern "C" fn on_signal(sig: c_int) {
    // Only atomics: async-signal-safe.
    LAST_SIGNAL.store(sig, Ordering::SeqCst);
    SIGNAL_COUNT.fetch_add(1, Ordering::SeqCst);
}

/// The signals that make the launcher stop its PEs.
const STOP_SIGNALS: [c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Handlers for [`STOP_SIGNALS`] while it lives; the previous ones come back
/// when it drops. A signal that was ignored when it was made stays ignored
/// (as `nohup` and background jobs expect).
pub(crate) struct SignalGuard {
    old: Vec<(c_int, libc::sigaction)>,
}

impl SignalGuard {
    pub(crate) fn install() -> io::Result<SignalGuard> {
        LAST_SIGNAL.store(0, Ordering::SeqCst);
        SIGNAL_COUNT.store(0, Ordering::SeqCst);
        let mut guard = SignalGuard { old: Vec::new() };
        for sig in STOP_SIGNALS {
            // SAFETY: plain sigaction calls on zero-initialised structs; the
            // handler only touches atomics.
            unsafe {
                let mut prev: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, std::ptr::null(), &mut prev) != 0 {
                    return Err(io::Error::last_os_error());
                }
                if prev.sa_sigaction == libc::SIG_IGN {
                    continue;
                }
                let mut act: libc::sigaction = std::mem::zeroed();
                act.sa_sigaction = on_signal as extern "C" fn(c_int) as libc::sighandler_t;
                libc::sigemptyset(&mut act.sa_mask);
                act.sa_flags = libc::SA_RESTART;
                if libc::sigaction(sig, &act, &mut prev) != 0 {
                    return Err(io::Error::last_os_error());
                }
                guard.old.push((sig, prev));
            }
        }
        // Reaping needs SIGCHLD not ignored (else the kernel reaps children
        // itself, and their exit statuses are lost).
        // SAFETY: as above.
        unsafe {
            let mut prev: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGCHLD, std::ptr::null(), &mut prev) == 0
                && (prev.sa_sigaction == libc::SIG_IGN || prev.sa_flags & libc::SA_NOCLDWAIT != 0)
            {
                let mut act: libc::sigaction = std::mem::zeroed();
                act.sa_sigaction = libc::SIG_DFL;
                libc::sigemptyset(&mut act.sa_mask);
                if libc::sigaction(libc::SIGCHLD, &act, &mut prev) == 0 {
                    guard.old.push((libc::SIGCHLD, prev));
                }
            }
        }
        Ok(guard)
    }

    /// How many stop signals arrived since [`SignalGuard::install`], and the last one.
    pub(crate) fn received(&self) -> (u32, c_int) {
        (
            SIGNAL_COUNT.load(Ordering::SeqCst),
            LAST_SIGNAL.load(Ordering::SeqCst),
        )
    }
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        for (sig, prev) in self.old.drain(..) {
            // SAFETY: restores a disposition read by sigaction above.
            unsafe { libc::sigaction(sig, &prev, std::ptr::null_mut()) };
        }
    }
}

/// Sends `sig` to every process in process group `pgid`. Returns whether the
/// group still had a process to signal. Never signals group 0 or 1 (which
/// `kill` would read as "my own group" or "everyone").
pub(crate) fn kill_group(pgid: pid_t, sig: c_int) -> bool {
    // SAFETY: kill has no memory-safety preconditions.
    pgid > 1 && unsafe { libc::kill(-pgid, sig) } == 0
}

/// Sends `sig` to one process (never to pid 0, -1 or 1).
pub(crate) fn kill_pid(pid: pid_t, sig: c_int) {
    if pid > 1 {
        // SAFETY: as above.
        unsafe { libc::kill(pid, sig) };
    }
}

/// What a non-blocking `waitpid` found.
pub(crate) enum Reap {
    /// This child ended with this raw wait status.
    Ended(pid_t, c_int),
    /// Matching children exist, none has ended yet.
    Running,
    /// No matching child (any more).
    NoChild,
}

/// `waitpid(which, WNOHANG)`: `which` is a pid, or `-pgid` for any child in a group.
pub(crate) fn try_reap(which: pid_t) -> Reap {
    loop {
        let mut status: c_int = 0;
        // SAFETY: status is a valid out-pointer.
        let r = unsafe { libc::waitpid(which, &mut status, libc::WNOHANG) };
        match r {
            0 => return Reap::Running,
            r if r > 0 => return Reap::Ended(r, status),
            _ => {
                if io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return Reap::NoChild;
            }
        }
    }
}

/// Makes this process a "child subreaper" (or stops it being one), returning
/// whether it was one before. Orphaned descendants then become our children
/// instead of init's, so we can reap them and see when a group is really
/// empty, even where pid 1 does not reap zombies.
pub(crate) fn set_child_subreaper(on: bool) -> Option<bool> {
    let mut prev: c_int = 0;
    // SAFETY: PR_GET_CHILD_SUBREAPER writes one int through the pointer.
    unsafe {
        if libc::prctl(
            libc::PR_GET_CHILD_SUBREAPER,
            &mut prev as *mut c_int as libc::c_ulong,
            0,
            0,
            0,
        ) != 0
        {
            return None;
        }
        if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, on as libc::c_ulong, 0, 0, 0) != 0 {
            return None;
        }
    }
    Some(prev != 0)
}

/// Run in the child between fork and exec: die with SIGKILL when the launcher
/// dies, and give up if it already has. Async-signal-safe.
pub(crate) fn die_with_parent(parent: pid_t) -> io::Result<()> {
    // SAFETY: prctl and getppid are plain system calls.
    unsafe {
        if libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        ) != 0
        {
            return Err(io::Error::last_os_error());
        }
        if libc::getppid() != parent {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
    }
    Ok(())
}

pub(crate) fn getpid() -> pid_t {
    // SAFETY: getpid cannot fail.
    unsafe { libc::getpid() }
}

/// The conventional name of a signal, e.g. `SIGKILL`.
pub(crate) fn signal_name(sig: c_int) -> Option<&'static str> {
    Some(match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGURG => "SIGURG",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGVTALRM => "SIGVTALRM",
        libc::SIGPROF => "SIGPROF",
        libc::SIGWINCH => "SIGWINCH",
        libc::SIGIO => "SIGIO",
        libc::SIGSYS => "SIGSYS",
        #[cfg(any(target_os = "linux", target_os = "android"))]
        libc::SIGPWR => "SIGPWR",
        #[cfg(any(target_os = "linux", target_os = "android"))]
        libc::SIGSTKFLT => "SIGSTKFLT",
        _ => return None,
    })
}

/// Writes `message` to stdout with one `write` (not through Rust's
/// stdout, whose lock a stuck thread may hold) and ends this process at
/// once with `code`, without exit handlers: after a hang, CUDA's and
/// NVSHMEM's teardown could wait on the same stuck work.
pub(crate) fn exit_now_saying(message: &str, code: i32) -> ! {
    // SAFETY: writes `message`'s bytes, which outlive the call; `_exit`
    // takes no pointers and never returns.
    unsafe {
        libc::write(1, message.as_ptr().cast(), message.len());
        libc::_exit(code)
    }
}
