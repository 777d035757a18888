//! A small HTTP/1.1 server for an image directory: GET and HEAD, single
//! byte ranges, Content-Length, keep-alive, one thread per connection,
//! and nothing outside the root (no `..`, no absolute paths, no symlinks
//! out).
//!
//! Every wait is bounded ([`Limits`]): a request head must arrive whole
//! within the header timeout (a client trickling a byte at a time is cut
//! too), a kept-alive connection with no new request is closed after the
//! idle timeout, and a write that makes no progress for the write timeout
//! ends its connection. A stalled client holds its own thread for a
//! bounded time and never delays another: there is no pool to queue in.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use sha2::{Digest, Sha256};

use crate::ImageError;

mod conn;
mod http;

use conn::*;
use http::*;

/// sha256 of a file, streamed.
pub fn sha256_file(path: &Path) -> Result<String, ImageError> {
    let mut f = File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(nodenet_model::hex(&h.finalize()))
}

/// The file a request path names, if it is inside `root`.
pub fn resolve(root: &Path, url_path: &str) -> Option<PathBuf> {
    let path = url_path.split(['?', '#']).next().unwrap_or("");
    let decoded = percent_encoding::percent_decode_str(path)
        .decode_utf8()
        .ok()?;
    let mut out = root.to_path_buf();
    for comp in decoded.split('/') {
        match comp {
            "" | "." => {}
            ".." => return None,
            c if c.contains('\\') || c.contains('\0') => return None,
            c => out.push(c),
        }
    }
    // Symlinks may point anywhere: the real path must stay in the root.
    let real = out.canonicalize().ok()?;

    let real_root = root.canonicalize().ok()?;
    (real.starts_with(&real_root) && real.is_file()).then_some(real)
}

/// `bytes=A-B`, `bytes=A-`, `bytes=-N` for a file of `len` bytes.
pub fn parse_range(h: &str, len: u64) -> Option<(u64, u64)> {
    let spec = h.trim().strip_prefix("bytes=")?;
    if spec.contains(',') {
        return None;
    }
    let (a, b) = spec.split_once('-')?;
    let (start, end) = match (a.trim(), b.trim()) {
        ("", n) => {
            let n: u64 = n.parse().ok()?;
            (len.saturating_sub(n), len.checked_sub(1)?)
        }
        (a, "") => (a.parse().ok()?, len.checked_sub(1)?),
        (a, b) => (
            a.parse().ok()?,
            b.parse::<u64>().ok()?.min(len.checked_sub(1)?),
        ),
    };
    (start <= end && end < len).then_some((start, end))
}

/// The files a server of `root` serves at its top level, by name, sorted:
/// regular files and symlinks that [`resolve`] accepts (a link out of the
/// root is not served, so it is not listed either).
pub fn servable(root: &Path) -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(root)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| {
                    let name = e.file_name().into_string().ok()?;
                    let path = resolve(root, &format!("/{name}"))?;
                    Some((name, path))
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// One request as the access log shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Access {
    pub client: Option<std::net::SocketAddr>,
    pub method: String,
    pub path: String,
    /// The `Range` header as sent.
    pub range: Option<String>,
    pub status: u16,
    /// Body bytes written to the client.
    pub bytes: u64,
    /// Whether the whole answer went out (the client may hang up first).
    pub complete: bool,
}

/// `127.0.0.1:40312 GET /m0.iso range=bytes=0-99 206 100 bytes`, plus
/// `(client closed early)` when it did.
impl std::fmt::Display for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.client {
            Some(c) => write!(f, "{c} ")?,
            None => write!(f, "- ")?,
        }
        write!(
            f,
            "{} {} range={} {} {} bytes",
            self.method,
            self.path,
            self.range.as_deref().unwrap_or("-"),
            self.status,
            self.bytes
        )?;
        if !self.complete {
            write!(f, " (client closed early)")?;
        }
        Ok(())
    }
}

/// How long and how much a connection may take; [`Limits::default`] is
/// what `nodenet serve` uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// A request head (request line and headers) must arrive whole within
    /// this, counted from the connection's accept for its first request
    /// and from the first byte for the later ones. Then 408 and close.
    pub header_timeout: Duration,
    /// A kept-alive connection with no new request for this long is closed.
    pub idle_timeout: Duration,
    /// A write that makes no progress for this long ends the connection
    /// (the answer is logged incomplete).
    pub write_timeout: Duration,
    /// Connections served at once; the next ones get 503 and are closed.
    pub max_connections: usize,
    /// Largest request head, in bytes; larger is 431 and close.
    pub max_header_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(15),
            write_timeout: Duration::from_secs(60),
            max_connections: 1024,
            max_header_bytes: 16 << 10,
        }
    }
}

/// Headers a request may have; more is 431.
const MAX_HEADERS: usize = 64;
/// A GET or HEAD with a body up to this size has it read and dropped;
/// larger is 413 and close.
const DISCARD_MAX: u64 = 8 << 10;
/// File bodies go out through a buffer of this size, on the stack of the
/// connection's thread (no heap: with a per-thread allocator, a heap
/// buffer per connection costs several times its size).
const BODY_CHUNK: usize = 64 << 10;
/// Before closing, what the client still sends is read (so that the close
/// does not reset the connection under the answer) for at most this long...
const LINGER: Duration = Duration::from_secs(2);
/// ...and this many bytes.
const LINGER_BYTES: usize = 64 << 10;
/// Connection threads do little: parse a head, copy through a 64 KiB
/// stack buffer, call the log.
const STACK: usize = 512 << 10;

type Log = dyn Fn(&Access) + Send + Sync;

/// What every connection thread shares.
struct Shared {
    root: PathBuf,
    limits: Limits,
    log: Box<Log>,
}

/// Serves one connection until it closes, errs or times out.
fn serve_connection(shared: &Shared, stream: TcpStream, peer: SocketAddr) {
    // Heads and bodies go out as soon as written (no Nagle delay between
    // an answer's head and its body).
    let _ = stream.set_nodelay(true);
    if stream
        .set_write_timeout(Some(shared.limits.write_timeout))
        .is_err()
    {
        return;
    }
    let mut conn = Conn {
        stream,
        peer,
        buf: Vec::new(),
    };
    let mut first = true;
    loop {
        let next = conn.next_request(&shared.limits, first);
        first = false;
        let (status, method, target, text) = match next {
            Next::Request(req) => {
                let (access, keep) = conn.answer(&shared.root, &shared.limits, req);
                (shared.log)(&access);
                if !access.complete {
                    // Gone or stuck: nothing more to say.
                    return;
                }
                if !keep {
                    conn.linger();
                    return;
                }
                continue;
            }
            Next::Gone => return,
            Next::TimedOut(m, t) => (408, m, t, "request timeout\n"),
            Next::Bad(431, m, t) => (431, m, t, "request header too large\n"),
            Next::Bad(status, m, t) => (status, m, t, "bad request\n"),
        };
        let mut access = Access {
            client: Some(peer),
            method,
            path: target,
            range: None,
            status,
            bytes: 0,
            complete: true,
        };
        conn.simple(&mut access, status, &[], text, Persist::Close);
        (shared.log)(&access);
        conn.linger();
        return;
    }
}

/// Over the connection bound: 503 from the accept thread, which must not
/// wait on the client (non-blocking, one write into an empty buffer).
fn refuse(shared: &Shared, mut stream: TcpStream, peer: SocketAddr) {
    let body = "too many connections\n";
    let mut out = response_head(
        503,
        &[("Retry-After", "1")],
        body.len() as u64,
        Persist::Close,
    )
    .into_bytes();
    let head_len = out.len();
    out.extend_from_slice(body.as_bytes());
    let (n, complete) = if stream.set_nonblocking(true).is_ok() {
        write_counted(&mut stream, &out)
    } else {
        (0, false)
    };
    // What the client sent already is read, so the close is not a reset.
    let mut sink = [0u8; 4096];
    for _ in 0..4 {
        if !matches!(stream.read(&mut sink), Ok(k) if k > 0) {
            break;
        }
    }
    let _ = stream.shutdown(Shutdown::Write);
    (shared.log)(&Access {
        client: Some(peer),
        method: "-".into(),
        path: "-".into(),
        range: None,
        status: 503,
        bytes: n.saturating_sub(head_len) as u64,
        complete,
    });
}

/// Counts a live connection until dropped.
struct LiveGuard(Arc<AtomicUsize>);

impl Drop for LiveGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A failed accept ends nothing: it is logged (once per
/// [`ACCEPT_WARN_EVERY`] at most: out of descriptors, it fails ten times a
/// second), and after a lack of descriptors or memory the loop pauses
/// before trying again.
#[derive(Default)]
struct AcceptFailures {
    last_warned: Option<Instant>,
    unsaid: u64,
}

const ACCEPT_WARN_EVERY: Duration = Duration::from_secs(10);

impl AcceptFailures {
    fn failed(&mut self, e: &io::Error) {
        use rustix::io::Errno;
        if self
            .last_warned
            .is_none_or(|t| t.elapsed() >= ACCEPT_WARN_EVERY)
        {
            let more = match self.unsaid {
                0 => String::new(),
                n => format!(" ({n} more failed accepts since the last warning)"),
            };
            tracing::warn!("serve: accept: {e}{more}");
            self.last_warned = Some(Instant::now());
            self.unsaid = 0;
        } else {
            self.unsaid += 1;
        }
        let scarce = matches!(
            Errno::from_io_error(e),
            Some(Errno::MFILE | Errno::NFILE | Errno::NOBUFS | Errno::NOMEM)
        );
        let pause = if scarce { 100 } else { 5 };
        std::thread::sleep(Duration::from_millis(pause));
    }
}

/// A bound image server: it answers from [`ImageServer::run`] on, whatever
/// else the process does meanwhile (hashing large images, say).
pub struct ImageServer {
    listener: TcpListener,
    root: PathBuf,
    limits: Limits,
    pub addr: SocketAddr,
}

/// Binds `listen` (port 0 picks a free one) to serve `root`.
pub fn bind(root: &Path, listen: &str) -> Result<ImageServer, ImageError> {
    let listener = TcpListener::bind(listen)
        .map_err(|e| ImageError::Io(io::Error::new(e.kind(), format!("{listen}: {e}"))))?;
    let addr = listener.local_addr()?;
    Ok(ImageServer {
        listener,
        root: root.to_path_buf(),
        limits: Limits::default(),
        addr,
    })
}

impl ImageServer {
    /// The same server with other limits (tests use short timeouts).
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Serves until the process ends, one thread per connection; `log`
    /// gets every request once it is answered.
    pub fn run(self, log: impl Fn(&Access) + Send + Sync + 'static) {
        let shared = Arc::new(Shared {
            root: self.root,
            limits: self.limits,
            log: Box::new(log),
        });
        let live = Arc::new(AtomicUsize::new(0));
        let mut accept_failures = AcceptFailures::default();
        loop {
            let (stream, peer) = match self.listener.accept() {
                Ok(c) => c,
                Err(e) => {
                    accept_failures.failed(&e);
                    continue;
                }
            };
            // Only this thread adds: the bound holds.
            if live.load(Ordering::Acquire) >= shared.limits.max_connections {
                refuse(&shared, stream, peer);
                continue;
            }
            live.fetch_add(1, Ordering::AcqRel);
            let guard = LiveGuard(live.clone());
            let shared = shared.clone();
            let spawned = std::thread::Builder::new()
                .name("serve-conn".into())
                .stack_size(STACK)
                .spawn(move || {
                    let _guard = guard;
                    serve_connection(&shared, stream, peer);
                });
            if let Err(e) = spawned {
                // The closure, stream and guard are dropped with it.
                tracing::warn!("serve: no thread for {peer}: {e}");
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

#[cfg(test)]
mod tests;
