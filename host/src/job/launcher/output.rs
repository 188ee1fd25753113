//! Forwarding each PE's stdout and stderr, line by line, with a `[rank] ` prefix.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Longest piece forwarded as one line: a longer line is cut into pieces of
/// this size, each printed as its own prefixed line, so that a PE printing
/// without newlines cannot make the launcher buffer without bound.
pub(crate) const MAX_LINE: usize = 64 * 1024;

/// Which of the launcher's streams a PE's stream goes to.
#[derive(Clone, Copy)]
pub(crate) enum Dest {
    Stdout,
    Stderr,
}

/// Writes bytes to the launcher's stdout or stderr in one locked write, so
/// that lines from different threads never mix. Errors (a closed pipe) are
/// ignored: the PE's output is then dropped, but the PE keeps running.
pub(crate) fn write_locked(dest: Dest, bytes: &[u8]) {
    let _ = match dest {
        Dest::Stdout => {
            let mut out = io::stdout().lock();
            out.write_all(bytes).and_then(|()| out.flush())
        }
        Dest::Stderr => io::stderr().lock().write_all(bytes),
    };
}

/// Prints a launcher message, `nvshmem-run: ...`, on stderr.
pub(crate) fn message(text: &str) {
    write_locked(Dest::Stderr, format!("nvshmem-run: {text}\n").as_bytes());
}

/// Which forwarded streams are still open, per rank.
pub(crate) struct OpenStreams {
    open: Mutex<Vec<u8>>,
    changed: Condvar,
}

impl OpenStreams {
    pub(crate) fn new(nranks: usize) -> Arc<OpenStreams> {
        Arc::new(OpenStreams {
            open: Mutex::new(vec![0; nranks]),
            changed: Condvar::new(),
        })
    }

    fn add(&self, rank: usize) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open[rank] += 1;
    }

    fn close(&self, rank: usize) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open[rank] = open[rank].saturating_sub(1);
        self.changed.notify_all();
    }

    /// Waits until `done(open counts)` holds or `deadline` passes; returns whether it holds.
    fn wait_until(&self, deadline: Instant, done: impl Fn(&[u8]) -> bool) -> bool {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if done(&open) {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            open = self
                .changed
                .wait_timeout(open, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Waits (at most `timeout`) until rank `rank`'s streams are at end of file.
    pub(crate) fn wait_rank(&self, rank: usize, timeout: Duration) -> bool {
        self.wait_until(Instant::now() + timeout, |open| open[rank] == 0)
    }

    /// Waits (at most `timeout`) until every stream is at end of file; returns
    /// the ranks whose output is still open.
    pub(crate) fn wait_all(&self, timeout: Duration) -> Vec<usize> {
        self.wait_until(Instant::now() + timeout, |open| {
            open.iter().all(|&n| n == 0)
        });
        let open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(r, _)| r)
            .collect()
    }
}

/// Starts a thread that copies `stream` to `dest`, a prefixed line at a time.
pub(crate) fn forward(
    rank: usize,
    stream: impl Read + Send + 'static,
    dest: Dest,
    streams: &Arc<OpenStreams>,
) -> io::Result<()> {
    streams.add(rank);
    let streams2 = Arc::clone(streams);
    let name = format!(
        "nvshmem-run rank {rank} {}",
        if matches!(dest, Dest::Stdout) {
            "stdout"
        } else {
            "stderr"
        }
    );
    let spawned = std::thread::Builder::new()
        .name(name)
        .stack_size(128 * 1024)
        .spawn(move || {
            copy_lines(rank, stream, |line| write_locked(dest, line));
            streams2.close(rank);
        });
    spawned.map(drop).inspect_err(|_| streams.close(rank))
}

/// Copies `stream` to `sink`, one prefixed, newline-terminated line per call
/// (the last line gets a newline if it had none). Bytes are passed through as
/// they are, UTF-8 or not.
pub(crate) fn copy_lines(rank: usize, stream: impl Read, mut sink: impl FnMut(&[u8])) {
    let prefix = format!("[{rank}] ");
    let mut reader = BufReader::with_capacity(MAX_LINE, stream);
    let mut line = Vec::with_capacity(256);
    loop {
        line.clear();
        line.extend_from_slice(prefix.as_bytes());
        // An error ends the stream like end of file, after what was read.
        let complete = read_line(&mut reader, &mut line, MAX_LINE).unwrap_or_default();
        if line.len() == prefix.len() {
            return; // end of file (or an error) with nothing pending
        }
        if !complete {
            line.push(b'\n');
        }
        sink(&line);
    }
}

/// Appends bytes up to and including the next newline, or at most `max`
/// bytes, to `line`. Returns `Ok(true)` when it stopped at a newline.
fn read_line(reader: &mut impl BufRead, line: &mut Vec<u8>, max: usize) -> io::Result<bool> {
    let mut taken = 0;
    loop {
        let buf = match reader.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok(false);
        }
        let room = max - taken;
        let avail = &buf[..buf.len().min(room)];
        let (n, found) = match avail.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (avail.len(), false),
        };
        line.extend_from_slice(&avail[..n]);
        reader.consume(n);
        taken += n;
        if found {
            return Ok(true);
        }
        if taken >= max {
            return Ok(false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(rank: usize, input: &[u8]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        copy_lines(rank, input, |l| out.push(l.to_vec()));
        out
    }

    #[test]
    fn prefixes_every_line() {
        assert_eq!(
            lines(3, b"a\nbc\n"),
            vec![b"[3] a\n".to_vec(), b"[3] bc\n".to_vec()]
        );
    }

    #[test]
    fn empty_lines_and_partial_last_line() {
        assert_eq!(
            lines(0, b"\nlast"),
            vec![b"[0] \n".to_vec(), b"[0] last\n".to_vec()]
        );
        assert!(lines(0, b"").is_empty());
    }

    #[test]
    fn passes_non_utf8_through() {
        assert_eq!(
            lines(1, b"\xff\xfe\x00x\n"),
            vec![b"[1] \xff\xfe\x00x\n".to_vec()]
        );
    }

    #[test]
    fn cuts_long_lines() {
        let input = vec![b'x'; MAX_LINE * 2 + 10];
        let out = lines(0, &input);
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].len(), 4 + MAX_LINE + 1);
        assert_eq!(out[2], b"[0] xxxxxxxxxx\n".to_vec());
        let total: usize = out.iter().map(|l| l.len() - 5).sum();
        assert_eq!(total, input.len());
    }
}
