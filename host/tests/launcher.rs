//! Tests of the `nvshmem-run` binary with small shell programs as PEs. They
//! need no GPU and no NVSHMEM: the launcher never loads it (rank 0 of a real
//! job creates the unique id).

use std::borrow::BorrowMut;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_nvshmem-run");
/// No test should take anywhere near this long; past it the launcher is hung.
const HANG: Duration = Duration::from_secs(20);

/// `nvshmem-run ARGS…`
fn launcher(args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args);
    cmd
}

struct Ran {
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: String,
    elapsed: Duration,
}

impl Ran {
    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// The launcher exited with `code`.
    #[track_caller]
    fn exits(&self, code: i32) {
        assert_eq!(self.code, Some(code), "stderr: {}", self.stderr);
    }

    /// The launcher's stderr has `text`.
    #[track_caller]
    fn says(&self, text: &str) {
        assert!(self.stderr.contains(text), "stderr: {}", self.stderr);
    }

    /// The run took a time in `range`.
    #[track_caller]
    fn took(&self, range: impl std::ops::RangeBounds<Duration>) {
        assert!(range.contains(&self.elapsed), "took {:?}", self.elapsed);
    }

    /// The launcher exited with `code`, its stderr has `text`, and none of
    /// `pids` (the processes the ranks wrote to `$PIDS`) survives.
    #[track_caller]
    fn stopped(&self, code: i32, text: &str, pids: &[i32]) {
        self.exits(code);
        self.says(text);
        assert_all_dead(pids);
    }
}

/// `nvshmem-run ARGS -- sh -c SCRIPT`, with `$PIDS` naming a fresh file
/// (where the script writes the pids the test checks are gone).
fn sh_with_pids(args: &[&str], script: &str) -> (Command, TempFile) {
    let pid_file = TempFile::new("pids");
    let mut cmd = launcher(args);
    cmd.args(["--", "sh", "-c", script]).env("PIDS", &pid_file);
    (cmd, pid_file)
}

/// Runs [`sh_with_pids`]; returns the result and the pids the script wrote.
fn run_sh(args: &[&str], script: &str) -> (Ran, Vec<i32>) {
    let (cmd, pid_file) = sh_with_pids(args, script);
    let r = run(cmd);
    (r, read_pids(&pid_file))
}

/// Starts [`sh_with_pids`] and waits until the script has written `n` pids;
/// returns the launcher, when it started, and the pids.
fn start_sh(args: &[&str], script: &str, n: usize) -> (Child, Instant, Vec<i32>) {
    let started = Instant::now();
    let (cmd, pid_file) = sh_with_pids(args, script);
    let child = start(cmd);
    let pids = wait_for_pids(&pid_file, n);
    (child, started, pids)
}

fn start(mut cmd: impl BorrowMut<Command>) -> Child {
    cmd.borrow_mut()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start nvshmem-run")
}

/// Waits for a started launcher (killing it after [`HANG`]) and collects its output.
fn finish(mut child: Child, started: Instant) -> Ran {
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = thread::spawn(move || {
        let mut v = Vec::new();
        out.read_to_end(&mut v).unwrap();
        v
    });
    let err = thread::spawn(move || {
        let mut v = Vec::new();
        err.read_to_end(&mut v).unwrap();
        v
    });
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > HANG {
            let _ = child.kill();
            panic!("nvshmem-run did not finish within {HANG:?}");
        }
        thread::sleep(Duration::from_millis(5));
    };
    let elapsed = started.elapsed();
    let stdout = out.join().unwrap();
    let stderr = String::from_utf8_lossy(&err.join().unwrap()).into_owned();
    Ran {
        code: status.code(),
        stdout,
        stderr,
        elapsed,
    }
}

fn run(cmd: impl BorrowMut<Command>) -> Ran {
    let started = Instant::now();
    finish(start(cmd), started)
}

/// A fresh path in the temporary folder, removed when this drops.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str) -> TempFile {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::SeqCst);
        let path = std::env::temp_dir().join(format!(
            "nvshmem-run-test-{}-{n}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&path);
        TempFile(path)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

impl std::ops::Deref for TempFile {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for TempFile {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

fn read_pids(path: &Path) -> Vec<i32> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .split_whitespace()
        .map(|p| p.parse().expect("a pid"))
        .collect()
}

/// Whether `pid` is a running (not dead, not zombie) process.
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses.
        Ok(stat) => !matches!(
            stat.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().as_bytes()[0]),
            Some(b'Z' | b'X')
        ),
        Err(_) => false,
    }
}

fn wait_for_pids(path: &Path, n: usize) -> Vec<i32> {
    let t = Instant::now();
    loop {
        let pids = read_pids(path);
        if pids.len() >= n {
            return pids;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "only {} of {n} pids in {path:?}",
            pids.len()
        );
        thread::sleep(Duration::from_millis(10));
    }
}

fn assert_all_dead(pids: &[i32]) {
    assert!(!pids.is_empty());
    // The launcher has exited, so everything should be gone already; a
    // process killed by PR_SET_PDEATHSIG may take a moment.
    let t = Instant::now();
    while pids.iter().any(|&p| alive(p)) && t.elapsed() < Duration::from_secs(2) {
        thread::sleep(Duration::from_millis(10));
    }
    let survivors: Vec<_> = pids.iter().filter(|&&p| alive(p)).collect();
    for &&p in &survivors {
        unsafe { libc::kill(p, libc::SIGKILL) };
    }
    assert!(survivors.is_empty(), "processes left behind: {survivors:?}");
}

#[test]
fn all_ranks_succeed_with_their_environment() {
    let script = r#"
        echo "rank=$NVSHMEM_RUN_RANK nranks=$NVSHMEM_RUN_NRANKS gpu=$NVSHMEM_RUN_GPU store=${NVSHMEM_RUN_RENDEZVOUS%:*} job=${#NVSHMEM_RUN_JOB} ifname=$NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME nvls=$NVSHMEM_DISABLE_NVLS nccl=$NCCL_NVLS_ENABLE user=$LAUNCHER_TEST_VAR"
        echo "on stderr $NVSHMEM_RUN_RANK" >&2
    "#;
    let r = run(
        launcher(&["-n", "4", "--gpus", "0,1", "--", "sh", "-c", script])
            .env("LAUNCHER_TEST_VAR", "passed through")
            .env_remove("NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME")
            .env_remove("NVSHMEM_DISABLE_NVLS")
            .env_remove("NCCL_NVLS_ENABLE"),
    );
    r.exits(0);
    let stdout = r.stdout();
    let mut ranks: Vec<usize> = Vec::new();
    for line in stdout.lines() {
        let (prefix, rest) = line.split_once(' ').unwrap();
        let rank: usize = rest
            .strip_prefix("rank=")
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(
            prefix,
            format!("[{rank}]"),
            "line {line:?} has the wrong prefix"
        );
        let gpu = [0, 1, 0, 1][rank];
        let expected = format!(
            "rank={rank} nranks=4 gpu={gpu} store=127.0.0.1 job=16 ifname=lo nvls=1 nccl=0 user=passed through"
        );
        assert_eq!(rest, expected);
        ranks.push(rank);
    }
    ranks.sort();
    assert_eq!(ranks, [0, 1, 2, 3], "stdout: {stdout}");
    let mut err_lines: Vec<&str> = r.stderr.lines().collect();
    err_lines.sort();
    assert_eq!(
        err_lines,
        [
            "[0] on stderr 0",
            "[1] on stderr 1",
            "[2] on stderr 2",
            "[3] on stderr 3"
        ]
    );
    assert!(!stdout.contains("on stderr"));
}

#[test]
fn users_settings_win_over_the_defaults() {
    let script = r#"echo "$NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME $NVSHMEM_DISABLE_NVLS $NVSHMEM_RUN_RANK $NVSHMEM_RUN_NRANKS""#;
    let r = run(launcher(&["-n", "1", "--", "sh", "-c", script])
        .env("NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME", "eth7")
        .env("NVSHMEM_DISABLE_NVLS", "0")
        .env("NVSHMEM_RUN_RANK", "99")
        .env("NVSHMEM_RUN_NRANKS", "99"));
    r.exits(0);
    // The launcher's own variables always win; NVSHMEM's defaults never do.
    assert_eq!(r.stdout(), "[0] eth7 0 0 1\n");
}

#[test]
fn default_gpus_follow_cuda_visible_devices() {
    let r = run(
        launcher(&["-n", "4", "--", "sh", "-c", "echo $NVSHMEM_RUN_GPU"])
            .env("CUDA_VISIBLE_DEVICES", "3,5,7"),
    );
    r.exits(0);
    let mut lines: Vec<String> = r.stdout().lines().map(String::from).collect();
    lines.sort();
    assert_eq!(lines, ["[0] 0", "[1] 1", "[2] 2", "[3] 0"]);
}

#[test]
fn partial_lines_and_bytes_that_are_not_utf8() {
    let script = r#"printf 'one\n\377\376 bytes\n\nno newline'; printf 'err partial' >&2"#;
    let r = run(launcher(&["-n", "1", "--", "sh", "-c", script]));
    r.exits(0);
    assert_eq!(
        r.stdout,
        b"[0] one\n[0] \xff\xfe bytes\n[0] \n[0] no newline\n"
    );
    assert_eq!(r.stderr, "[0] err partial\n");
}

#[test]
fn lines_never_mix() {
    // Four ranks each write 1500 lines of 300 copies of their rank digit to
    // both streams at once.
    let script = r#"
        line=$(printf '%0300d' 0 | tr 0 "$NVSHMEM_RUN_RANK")
        i=0
        while [ $i -lt 1500 ]; do echo "$line"; echo "$line" >&2; i=$((i+1)); done
    "#;
    let r = run(launcher(&["-n", "4", "--", "sh", "-c", script]));
    assert_eq!(r.code, Some(0));
    for text in [r.stdout(), r.stderr.clone()] {
        let mut counts = [0; 4];
        for line in text.lines() {
            let rank = (line.as_bytes()[1] - b'0') as usize;
            let expected = format!("[{rank}] {}", rank.to_string().repeat(300));
            assert_eq!(line, expected);
            counts[rank] += 1;
        }
        assert_eq!(counts, [1500; 4]);
    }
}

#[test]
fn a_failing_rank_stops_the_others() {
    let script = r#"
        if [ "$NVSHMEM_RUN_RANK" = 1 ]; then echo "rank 1 fails"; exit 3; fi
        echo $$ >> "$PIDS"
        sleep 1000 &
        echo $! >> "$PIDS"
        sleep 1000
    "#;
    // Rank 1 fails after a moment, so that ranks 0, 2 and 3 have written their pids.
    let script = format!("[ \"$NVSHMEM_RUN_RANK\" = 1 ] && sleep 0.3; {script}");
    let (r, pids) = run_sh(&["-n", "4"], &script);
    let says = "nvshmem-run: rank 1 exited with status 3; stopping the other 3 ranks";
    r.stopped(3, says, &pids);
    assert!(r.stdout().contains("[1] rank 1 fails\n"));
    r.took(..Duration::from_secs(3));
    assert_eq!(pids.len(), 6, "3 ranks and a child each");
}

#[test]
fn a_rank_killed_by_a_signal_is_named() {
    let script = r#"if [ "$NVSHMEM_RUN_RANK" = 2 ]; then sleep 0.2; kill -9 $$; fi; sleep 1000"#;
    let r = run(launcher(&["-n", "3", "--", "sh", "-c", script]));
    r.exits(128 + 9);
    r.says("nvshmem-run: rank 2 was killed by signal 9 (SIGKILL); stopping the other 2 ranks");
    r.took(..Duration::from_secs(3));
}

#[test]
fn a_timeout_stops_everything() {
    let script = r#"echo $$ >> "$PIDS"; sleep 1000"#;
    let (r, pids) = run_sh(&["-n", "2", "--timeout", "1"], script);
    r.stopped(
        124,
        "nvshmem-run: timed out after 1s; stopping 2 ranks",
        &pids,
    );
    r.took(Duration::from_secs(1)..Duration::from_secs(4));
}

#[test]
fn ranks_that_ignore_sigterm_get_sigkill() {
    // `trap '' TERM` is inherited by the loop's `sleep`s too.
    let script = r#"
        trap '' TERM
        if [ "$NVSHMEM_RUN_RANK" = 0 ]; then sleep 0.2; exit 5; fi
        echo $$ >> "$PIDS"
        while :; do sleep 0.05; done
    "#;
    let (r, pids) = run_sh(&["-n", "2", "--grace", "0.3"], script);
    r.stopped(
        5,
        "rank 0 exited with status 5; stopping the other 1 rank",
        &pids,
    );
    r.says("1 rank still running 0.3s after SIGTERM; sending SIGKILL");
    r.took(Duration::from_millis(500)..Duration::from_secs(3));
}

#[test]
fn grandchildren_do_not_survive() {
    // Each rank leaves two background processes behind and exits 0; one of
    // them ignores SIGTERM, and the rank exits only once it does (else a
    // loaded machine's SIGTERM can come first, and no SIGKILL is needed).
    let script = r#"
        sleep 1000 &
        echo $! >> "$PIDS"
        ready="$PIDS.ready$NVSHMEM_RUN_RANK"
        sh -c 'trap "" TERM; echo $$ >> "$PIDS"; : > "$1"; exec sleep 1000' sh "$ready" &
        while [ ! -e "$ready" ]; do sleep 0.01; done
        rm -f "$ready"
        echo started
    "#;
    let (r, pids) = run_sh(&["-n", "2", "--grace", "0.3"], script);
    r.stopped(
        0,
        "stopping the processes they left running (rank 0, 1)",
        &pids,
    );
    r.says("sending SIGKILL");
    assert_eq!(pids.len(), 4);
}

#[test]
fn sigterm_to_the_launcher_stops_everything() {
    let script = r#"echo $$ >> "$PIDS"; sleep 1000 & echo $! >> "$PIDS"; wait"#;
    let (child, started, pids) = start_sh(&["-n", "2"], script, 4);
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let says = "nvshmem-run: received SIGTERM; stopping 2 ranks";
    finish(child, started).stopped(128 + 15, says, &pids);
}

#[test]
fn a_second_ctrl_c_sends_sigkill_at_once() {
    let script = r#"trap '' TERM; echo $$ >> "$PIDS"; while :; do sleep 0.05; done"#;
    let (mut child, started, pids) = start_sh(&["-n", "2", "--grace", "30"], script, 2);
    let launcher_pid = child.id() as i32;
    unsafe { libc::kill(launcher_pid, libc::SIGINT) };
    // Signals of one kind do not queue: on a loaded machine the launcher may
    // not have taken the first SIGINT when the second arrives, and the two
    // merge into one. Repeat until it stops (well inside the 30 s grace).
    for _ in 0..25 {
        thread::sleep(Duration::from_millis(200));
        if child.try_wait().unwrap().is_some() {
            break;
        }
        unsafe { libc::kill(launcher_pid, libc::SIGINT) };
    }
    let r = finish(child, started);
    r.stopped(
        128 + 2,
        "nvshmem-run: received SIGINT; stopping 2 ranks",
        &pids,
    );
    r.says("received another signal; sending SIGKILL");
    r.took(..Duration::from_secs(5));
}

#[test]
fn ranks_die_with_a_killed_launcher() {
    let script = r#"echo $$ >> "$PIDS"; exec sleep 1000"#;
    let (child, started, pids) = start_sh(&["-n", "2"], script, 2);
    thread::sleep(Duration::from_millis(50)); // let `exec sleep` happen
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let r = finish(child, started);
    assert_eq!(r.code, None);
    assert_all_dead(&pids);
}

#[test]
fn bad_arguments_are_usage_errors_that_name_the_flag() {
    let cases: &[(&[&str], &str)] = &[
        (&[], "--nranks <N>"),
        (&["-n", "2", "true"], "unexpected argument 'true'"),
        (&["-n", "2", "--"], "PROGRAM"),
        (&["--", "true"], "--nranks <N>"),
        (&["-n", "0", "--", "true"], "at least 1"),
        (&["-n", "many", "--", "true"], "whole number"),
        (&["-n", "2", "--gpus", "0,,1", "--", "true"], "empty entry"),
        (
            &["-n", "2", "--gpus", "cuda0", "--", "true"],
            "`cuda0` in the GPU list",
        ),
        (
            &["-n", "2", "--gpus", "3-1", "--", "true"],
            "the range `3-1`",
        ),
        (
            &["-n", "2", "--timeout", "0", "--", "true"],
            "more than 0 seconds",
        ),
        (
            &["-n", "2", "--timeout", "soon", "--", "true"],
            "number of seconds",
        ),
        (&["-n", "2", "--frobnicate", "--", "true"], "'--frobnicate'"),
        (
            &["-n", "2", "-n", "3", "--", "true"],
            "'--nranks <N>' cannot be used multiple times",
        ),
        (&["-n"], "a value is required for '--nranks <N>'"),
    ];
    for (args, message) in cases {
        let r = run(Command::new(BIN).args(*args));
        assert_eq!(r.code, Some(2), "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(message), "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains("try '--help'"), "{args:?}: {}", r.stderr);
        assert!(r.stdout.is_empty());
    }
}

#[test]
fn help_documents_the_environment_and_mps() {
    let r = run(Command::new(BIN).arg("--help"));
    assert_eq!(r.code, Some(0));
    let help = r.stdout();
    for needle in [
        "Usage: nvshmem-run",
        "NVSHMEM_RUN_RANK",
        "NVSHMEM_RUN_NRANKS",
        "NVSHMEM_RUN_RENDEZVOUS",
        "NVSHMEM_RUN_GPU",
        "NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=lo",
        "NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1",
        "--mps",
        "--timeout",
    ] {
        assert!(help.contains(needle), "--help lacks {needle:?}");
    }
    let v = run(Command::new(BIN).arg("--version"));
    assert_eq!(v.code, Some(0));
    assert!(v.stdout().starts_with("nvshmem-run "));
}

#[test]
fn a_missing_program_is_reported() {
    let r = run(launcher(&[
        "-n",
        "2",
        "--",
        "/nonexistent/nvshmem-run-test-program",
    ]));
    assert_eq!(r.code, Some(127));
    assert!(
        r.stderr
            .contains("nvshmem-run: cannot start rank 0: `/nonexistent/nvshmem-run-test-program`")
    );
}

/// A fake `nvidia-cuda-mps-control` on `PATH` that logs its calls and, for
/// `-d`, creates the control pipe as the real daemon does.
fn fake_mps(dir: &Path) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let script = dir.join("nvidia-cuda-mps-control");
    let log = dir.join("calls");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nif [ \"$1\" = -d ]; then echo start >> {log}; touch \"$CUDA_MPS_PIPE_DIRECTORY/control\"; \
             else read cmd; echo \"$cmd\" >> {log}; fi\n",
            log = log.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

#[test]
fn mps_is_started_around_the_job_and_stopped_even_when_a_rank_fails() {
    let dir = std::env::temp_dir().join(format!("nvshmem-run-fake-mps-{}", std::process::id()));
    let path = fake_mps(&dir);
    let script = r#"test -p "$CUDA_MPS_PIPE_DIRECTORY/control" -o -e "$CUDA_MPS_PIPE_DIRECTORY/control" && echo "pct=$NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"; exit $NVSHMEM_RUN_RANK"#;
    let r = run(launcher(&["-n", "2", "--mps", "--", "sh", "-c", script]).env("PATH", &path));
    r.exits(1);
    // Either rank's line: rank 1's failure stops rank 0, which a loaded
    // machine may not have run as far as its echo yet.
    assert!(r.stdout().contains("] pct=1"), "{}", r.stdout());
    let calls = std::fs::read_to_string(dir.join("calls")).unwrap();
    assert_eq!(calls, "start\nquit\n");
    // --mps without -n runs the command once, with MPS around it.
    std::fs::remove_file(dir.join("calls")).unwrap();
    let r = run(launcher(&[
        "--mps",
        "--",
        "sh",
        "-c",
        "echo $CUDA_MPS_LOG_DIRECTORY; exit 3",
    ])
    .env("PATH", &path));
    r.exits(3);
    let log_dir = r.stdout();
    assert!(
        log_dir.contains("nvshmem-run-mps-") && log_dir.trim_end().ends_with("/log"),
        "{log_dir}"
    );
    assert!(
        !Path::new(log_dir.trim_end()).exists(),
        "the temporary folder is removed"
    );
    let calls = std::fs::read_to_string(dir.join("calls")).unwrap();
    assert_eq!(calls, "start\nquit\n");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn mps_that_cannot_start_is_an_error_and_no_rank_starts() {
    let r = run(
        launcher(&["-n", "1", "--mps", "--", "sh", "-c", "echo started"])
            .env("PATH", "/nonexistent"),
    );
    r.exits(1);
    assert!(r.stderr.contains("nvidia-cuda-mps-control"), "{}", r.stderr);
    assert!(r.stdout.is_empty());
}

/// Where NVSHMEM can be loaded (the project cache here), the launcher also
/// makes a unique id for C/C++ PEs; elsewhere the PEs get only the store.
#[test]
fn passes_a_unique_id_where_it_can_load_nvshmem() {
    let echo_id = || {
        launcher(&[
            "-n",
            "1",
            "--",
            "sh",
            "-c",
            "echo ${NVSHMEM_RUN_UNIQUEID:-none}",
        ])
    };
    let r = run(echo_id());
    r.exits(0);
    let out = r.stdout();
    let id = out
        .trim_end()
        .strip_prefix("[0] ")
        .expect("a prefixed line");
    // The launcher finds NVSHMEM where the runtime does: python3's, or the per-user cache.
    use nvshmem_types::install::{Installation, Query};
    if Installation::find(&Query::default()).is_ok() {
        assert_eq!(id.len(), 256, "{id}");
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
    } else {
        eprintln!("SKIPPED: no NVSHMEM installed; got {id}");
    }
    let r = run(echo_id().env("NVSHMEM_HOME", "/nonexistent"));
    assert_eq!(
        r.code,
        Some(0),
        "without NVSHMEM the PEs still start: {}",
        r.stderr
    );
    assert_eq!(r.stdout(), "[0] none\n");
}
