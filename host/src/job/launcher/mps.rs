//! CUDA MPS around a job (`nvshmem-run --mps`): 3 or more PEs on one GPU,
//! and NVSHMEM's host collectives among PEs that share a GPU, need it.

use super::error::LaunchError;
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The MPS control program, found on `PATH`.
pub const CONTROL: &str = "nvidia-cuda-mps-control";

/// How long the control daemon may take to create its pipe, and to quit.
const WAIT: Duration = Duration::from_secs(10);

/// A CUDA MPS control daemon this process started, with its pipe and log
/// folders in a fresh temporary folder; stopped (`quit`) and its folder
/// removed when dropped, whatever happened to the job in between.
///
/// ```no_run
/// use nvshmem_host::launcher::{LaunchPlan, Mps, run};
/// let mps = Mps::start()?;
/// let mut plan = LaunchPlan::new(4, "./ring").with_gpus(vec![0]);
/// plan.env.extend(mps.env());
/// let outcome = run(&plan)?;
/// mps.stop()?;
/// # Ok::<(), nvshmem_host::launcher::LaunchError>(())
/// ```
#[derive(Debug)]
pub struct Mps {
    dir: PathBuf,
    stopped: bool,
}

impl Mps {
    /// Starts `nvidia-cuda-mps-control -d` with its own pipe and log folders,
    /// and waits until its control pipe exists.
    pub fn start() -> Result<Mps, LaunchError> {
        let dir = std::env::temp_dir().join(format!(
            "nvshmem-run-mps-{}-{}",
            std::process::id(),
            crate::job::rendezvous::new_job()
        ));
        let system = |what: String| move |source| LaunchError::System { what, source };
        let mut mps = Mps { dir, stopped: true };
        for sub in ["pipe", "log"] {
            std::fs::create_dir_all(mps.dir.join(sub)).map_err(system(format!(
                "cannot create {}",
                mps.dir.join(sub).display()
            )))?;
        }
        let status = mps
            .control()
            .arg("-d")
            .stdin(Stdio::null())
            .status()
            .map_err(system(format!(
                "cannot start {CONTROL} (is CUDA MPS installed?)"
            )))?;
        if !status.success() {
            return Err(LaunchError::Mps(format!(
                "{CONTROL} -d {status}; its log is in {}",
                mps.dir.join("log").display()
            )));
        }
        mps.stopped = false;
        let control = mps.dir.join("pipe/control");
        let since = Instant::now();
        while !control.exists() {
            if since.elapsed() > WAIT {
                return Err(LaunchError::Mps(format!(
                    "{CONTROL} -d started, but {} did not appear within {WAIT:?}; its log is in {}",
                    control.display(),
                    mps.dir.join("log").display()
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(mps)
    }

    /// The variables every PE needs to use it: the pipe and log folders, and
    /// `NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1` (NVSHMEM otherwise
    /// insists that the PEs' MPS thread percentages add up to at most 100).
    pub fn env(&self) -> Vec<(OsString, OsString)> {
        vec![
            (
                "CUDA_MPS_PIPE_DIRECTORY".into(),
                self.dir.join("pipe").into(),
            ),
            ("CUDA_MPS_LOG_DIRECTORY".into(), self.dir.join("log").into()),
            (
                "NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE".into(),
                "1".into(),
            ),
        ]
    }

    /// The folder holding its `pipe/` and `log/`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Stops the daemon (`echo quit | nvidia-cuda-mps-control`) and removes
    /// its folder, reporting failure (a drop does the same, silently).
    pub fn stop(mut self) -> Result<(), LaunchError> {
        self.stop_now()
    }

    fn control(&self) -> Command {
        let mut cmd = Command::new(CONTROL);
        cmd.env("CUDA_MPS_PIPE_DIRECTORY", self.dir.join("pipe"))
            .env("CUDA_MPS_LOG_DIRECTORY", self.dir.join("log"));
        cmd
    }

    fn stop_now(&mut self) -> Result<(), LaunchError> {
        if std::mem::replace(&mut self.stopped, true) {
            return Ok(());
        }
        let quit = || -> std::io::Result<bool> {
            let mut child = self
                .control()
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .spawn()?;
            if let Some(mut stdin) = child.stdin.take() {
                stdin.write_all(b"quit\n")?;
            }
            let since = Instant::now();
            loop {
                if let Some(status) = child.try_wait()? {
                    return Ok(status.success());
                }
                if since.elapsed() > WAIT {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Ok(false);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        };
        match quit() {
            Ok(true) => {
                let _ = std::fs::remove_dir_all(&self.dir);
                Ok(())
            }
            Ok(false) => Err(LaunchError::Mps(format!(
                "`echo quit | {CONTROL}` failed; the daemon may still run (pipe and log in {})",
                self.dir.display()
            ))),
            Err(source) => Err(LaunchError::System {
                what: format!("cannot run `echo quit | {CONTROL}`"),
                source,
            }),
        }
    }
}

impl Drop for Mps {
    fn drop(&mut self) {
        if let Err(e) = self.stop_now() {
            super::output::message(&e.to_string());
        }
    }
}
