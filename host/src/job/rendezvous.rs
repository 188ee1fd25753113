//! Handing NVSHMEM's unique id from rank 0 to the other PEs over TCP, for the
//! UID bootstrap under launchers that know nothing of NVSHMEM.
//!
//! A [`Store`] holds one id for one job. Rank 0 generates the id (so the
//! bootstrap's root lives in rank 0, as in nvshmem4py and PyTorch) and puts it
//! into the store; every other rank gets it from there, retrying until the
//! store is up. `nvshmem-run` serves the store itself (it needs no NVSHMEM
//! for that); under torchrun, rank 0 serves it at `MASTER_ADDR:MASTER_PORT+1`.
//!
//! The protocol is one line each way: `PUT <hex> <job>` → `OK`, or
//! `GET - <job>` → `<hex>` (once rank 0 has put it); `ERR <reason>` on a
//! mistake. The job string (random under nvshmem-run, torchrun's run id and
//! restart count) keeps a late PE of another job from taking this one's id.

use crate::error::{Error, Result};
use crate::job::uniqueid::UniqueId;
use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a PE waits for the store and for rank 0's id.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(300);
/// The protocol's name, first on every request.
const MAGIC: &str = "NVSHMEM-RS-UID/1";

/// `host:port`, with brackets around an IPv6 address.
pub(crate) fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

struct Shared {
    job: String,
    id: Mutex<Option<String>>,
    put: Condvar,
    stop: AtomicBool,
}

/// A store that serves one job's unique id until it is dropped.
pub(crate) struct Store {
    addr: SocketAddr,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Store {
    /// Listens on `bind` (`127.0.0.1:0` picks a free port) for job `job`.
    pub(crate) fn serve(bind: &str, job: &str) -> std::io::Result<Store> {
        let listener = TcpListener::bind(bind)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            job: job.to_string(),
            id: Mutex::new(None),
            put: Condvar::new(),
            stop: AtomicBool::new(false),
        });
        let serving = shared.clone();
        let thread = std::thread::Builder::new()
            .name("nvshmem-uid-store".into())
            .spawn(move || accept_loop(&listener, &serving))?;
        Ok(Store {
            addr,
            shared,
            thread: Some(thread),
        })
    }

    /// The address it listens on.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Puts the id, as rank 0 does over the network.
    pub(crate) fn set(&self, id: &UniqueId) {
        *lock(&self.shared.id) = Some(id.to_hex());
        self.shared.put.notify_all();
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.put.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    while !shared.stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((stream, _)) => {
                let shared = shared.clone();
                let _ = std::thread::Builder::new()
                    .name("nvshmem-uid-client".into())
                    .spawn(move || {
                        let _ = answer(stream, &shared);
                    });
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(10))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// Reads one request and answers it.
fn answer(stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut line = String::new();
    BufReader::new(&stream).take_line(&mut line)?;
    let mut out = &stream;
    let mut parts = line.splitn(4, ' ');
    let (magic, verb, hex, job) = (parts.next(), parts.next(), parts.next(), parts.next());
    if magic != Some(MAGIC) || job.unwrap_or_default() != shared.job {
        return writeln!(out, "ERR this store serves another job or protocol");
    }
    match (verb, hex) {
        (Some("PUT"), Some(hex)) if UniqueId::from_hex(hex).is_ok() => {
            *lock(&shared.id) = Some(hex.to_string());
            shared.put.notify_all();
            writeln!(out, "OK")
        }
        (Some("GET"), _) => {
            let deadline = Instant::now() + TIMEOUT;
            let mut id = lock(&shared.id);
            while id.is_none() && !shared.stop.load(Ordering::SeqCst) {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return writeln!(out, "ERR rank 0 never put the unique id");
                }
                id = shared
                    .put
                    .wait_timeout(id, left.min(Duration::from_millis(100)))
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
            match id.clone() {
                Some(hex) => writeln!(out, "{hex}"),
                None => writeln!(out, "ERR the store is shutting down"),
            }
        }
        _ => writeln!(out, "ERR malformed request"),
    }
}

trait TakeLine {
    fn take_line(self, line: &mut String) -> std::io::Result<()>;
}

impl<R: BufRead> TakeLine for R {
    /// One line, without its newline; at most 1 KiB.
    fn take_line(self, line: &mut String) -> std::io::Result<()> {
        self.take(1024).read_line(line)?;
        let trimmed = line.trim_end_matches(['\r', '\n']).len();
        line.truncate(trimmed);
        Ok(())
    }
}

/// Sends one request to the store at `addr`, connecting until `TIMEOUT`
/// passes (the store may not be up yet), and returns the answer line.
fn request(addr: &str, line: &str) -> Result<String> {
    let fail = |reason: String| Error::Rendezvous {
        addr: addr.to_string(),
        reason,
    };
    let deadline = Instant::now() + TIMEOUT;
    let stream = loop {
        let last = match addr.to_socket_addrs() {
            Ok(addrs) => {
                let mut last = format!("{addr} resolves to no address");
                let mut connected = None;
                for a in addrs {
                    match TcpStream::connect_timeout(&a, Duration::from_secs(5)) {
                        Ok(s) => {
                            connected = Some(s);
                            break;
                        }
                        Err(e) => last = e.to_string(),
                    }
                }
                match connected {
                    Some(s) => break s,
                    None => last,
                }
            }
            Err(e) => e.to_string(),
        };
        if Instant::now() >= deadline {
            return Err(fail(format!(
                "no store answered within {TIMEOUT:?}: {last}"
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let io = |e: std::io::Error| fail(e.to_string());
    stream
        .set_read_timeout(Some(
            deadline
                .saturating_duration_since(Instant::now())
                .max(Duration::from_secs(1)),
        ))
        .map_err(io)?;
    (&stream)
        .write_all(format!("{line}\n").as_bytes())
        .map_err(io)?;
    let mut answer = String::new();
    BufReader::new(&stream).take_line(&mut answer).map_err(io)?;
    match answer.strip_prefix("ERR ") {
        Some(reason) => Err(fail(reason.to_string())),
        None if answer.is_empty() => Err(fail("the store closed the connection".into())),
        None => Ok(answer),
    }
}

/// Rank 0: puts `id` into the store of job `job` at `addr`.
pub(crate) fn put(addr: &str, job: &str, id: &UniqueId) -> Result<()> {
    request(addr, &format!("{MAGIC} PUT {} {job}", id.to_hex())).map(drop)
}

/// Every other rank: the id rank 0 put into the store of job `job` at `addr`.
pub(crate) fn get(addr: &str, job: &str) -> Result<UniqueId> {
    let hex = request(addr, &format!("{MAGIC} GET - {job}"))?;
    UniqueId::from_hex(&hex).map_err(|e| Error::Rendezvous {
        addr: addr.to_string(),
        reason: format!("the store's answer is not a unique id: {e}"),
    })
}

/// A job string that no other job on this machine has.
pub(crate) fn new_job() -> String {
    let mut bytes = [0u8; 8];
    let random = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes));
    if random.is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos() as u64;
        bytes = (nanos ^ ((std::process::id() as u64) << 32)).to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_get_the_id_rank_0_puts_even_when_they_ask_first() {
        let store = Store::serve("127.0.0.1:0", "job1").unwrap();
        let addr = store.addr().to_string();
        let id = UniqueId::from_bytes([42; 128]);
        let getters: Vec<_> = (0..3)
            .map(|_| {
                let addr = addr.clone();
                std::thread::spawn(move || get(&addr, "job1"))
            })
            .collect();
        std::thread::sleep(Duration::from_millis(50));
        put(&addr, "job1", &id).unwrap();
        for g in getters {
            assert_eq!(g.join().unwrap().unwrap(), id);
        }
        // A local set works as well as a put over the network.
        let local = Store::serve("127.0.0.1:0", "").unwrap();
        local.set(&id);
        assert_eq!(get(&local.addr().to_string(), "").unwrap(), id);
    }

    #[test]
    fn another_jobs_request_is_refused() {
        let store = Store::serve("127.0.0.1:0", "mine").unwrap();
        let err = get(&store.addr().to_string(), "theirs").unwrap_err();
        assert!(matches!(err, Error::Rendezvous { .. }), "{err:?}");
        assert!(err.to_string().contains("another job"), "{err}");
    }

    #[test]
    fn addresses_and_jobs() {
        assert_eq!(join_host_port("node0", 29501), "node0:29501");
        assert_eq!(join_host_port("::1", 5), "[::1]:5");
        let (a, b) = (new_job(), new_job());
        assert_eq!(a.len(), 16);
        assert_ne!(a, b);
    }
}
