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

/// What a request head says, once parsed.
#[derive(Debug)]
struct Request {
    method: String,
    target: String,
    http10: bool,
    range: Option<String>,
    keep_alive: bool,
    body: Body,
}

/// The body a request announces.
#[derive(Debug, PartialEq, Eq)]
enum Body {
    None,
    Length(u64),
    /// `Transfer-Encoding`: not read here.
    Encoded,
    /// Unparsable or conflicting `Content-Length`.
    Invalid,
}

#[derive(Debug)]
enum Parsed {
    Complete(Request, usize),
    /// More bytes needed; the method and target if already known.
    Partial(String, String),
    /// 400 (not HTTP) or 431 (too many headers).
    Bad(u16, String, String),
}

fn parse_head(buf: &[u8]) -> Parsed {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let res = req.parse(buf);
    let method = req.method.unwrap_or("-").to_string();
    let target = req.path.unwrap_or("-").to_string();
    let n = match res {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Parsed::Partial(method, target),
        Err(httparse::Error::TooManyHeaders) => return Parsed::Bad(431, method, target),
        Err(_) => return Parsed::Bad(400, method, target),
    };
    let http10 = req.version == Some(0);
    let (mut range, mut close, mut keep) = (None, false, false);
    let (mut lengths, mut encoded, mut invalid) = (Vec::new(), false, false);
    for h in req.headers.iter() {
        let value = h.value.trim_ascii();
        if h.name.eq_ignore_ascii_case("range") {
            range.get_or_insert_with(|| String::from_utf8_lossy(value).into_owned());
        } else if h.name.eq_ignore_ascii_case("connection") {
            for token in String::from_utf8_lossy(value).split(',') {
                let token = token.trim();
                close |= token.eq_ignore_ascii_case("close");
                keep |= token.eq_ignore_ascii_case("keep-alive");
            }
        } else if h.name.eq_ignore_ascii_case("content-length") {
            let n = std::str::from_utf8(value)
                .ok()
                .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|v| v.parse::<u64>().ok());
            match n {
                Some(n) => lengths.push(n),
                None => invalid = true,
            }
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            encoded = true;
        }
    }
    let body = if encoded {
        Body::Encoded
    } else if invalid || lengths.windows(2).any(|w| w[0] != w[1]) {
        Body::Invalid
    } else {
        lengths.first().map_or(Body::None, |&n| Body::Length(n))
    };
    let request = Request {
        method,
        target,
        http10,
        range,
        keep_alive: !close && (!http10 || keep),
        body,
    };
    Parsed::Complete(request, n)
}

/// The path of a request target: origin form (`/a.iso`) as is, absolute
/// form (`http://host/a.iso`) without scheme and authority.
fn origin_path(target: &str) -> Option<&str> {
    if target.starts_with('/') {
        return Some(target);
    }
    let b = target.as_bytes();
    let skip = if b.len() >= 7 && b[..7].eq_ignore_ascii_case(b"http://") {
        7
    } else if b.len() >= 8 && b[..8].eq_ignore_ascii_case(b"https://") {
        8
    } else {
        return None;
    };
    // The prefix is ASCII: `skip` is a character boundary.
    let rest = &target[skip..];
    Some(rest.find('/').map_or("/", |i| &rest[i..]))
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        206 => "Partial Content",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Content Too Large",
        416 => "Range Not Satisfiable",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Internal Server Error",
    }
}

/// How the answer ends the exchange.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Persist {
    /// HTTP/1.1 keep-alive: nothing to say.
    Keep,
    /// HTTP/1.0 that asked for keep-alive: `Connection: keep-alive`.
    Keep10,
    /// `Connection: close`.
    Close,
}

fn persist(keep: bool, http10: bool) -> Persist {
    match (keep, http10) {
        (false, _) => Persist::Close,
        (true, false) => Persist::Keep,
        (true, true) => Persist::Keep10,
    }
}

/// Status line and headers of an answer with `length` body bytes.
fn response_head(status: u16, fields: &[(&str, &str)], length: u64, persist: Persist) -> String {
    use std::fmt::Write as _;
    let mut h = format!(
        "HTTP/1.1 {status} {}\r\nDate: {}\r\nServer: nodenet\r\nContent-Length: {length}\r\n",
        reason(status),
        httpdate::fmt_http_date(SystemTime::now())
    );
    for (k, v) in fields {
        let _ = write!(h, "{k}: {v}\r\n");
    }
    match persist {
        Persist::Keep => {}
        Persist::Keep10 => h.push_str("Connection: keep-alive\r\n"),
        Persist::Close => h.push_str("Connection: close\r\n"),
    }
    h.push_str("\r\n");
    h
}

/// Writes `data`, saying how much went out and whether all of it did (a
/// write that fails or times out ends it).
fn write_counted(w: &mut impl Write, data: &[u8]) -> (usize, bool) {
    let mut off = 0;
    while off < data.len() {
        match w.write(&data[off..]) {
            Ok(0) => return (off, false),
            Ok(n) => off += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return (off, false),
        }
    }
    (off, true)
}

/// What [`Conn::next_request`] found.
enum Next {
    Request(Request),
    /// The client closed, idled out, or never sent a byte: nothing to say.
    Gone,
    /// Part of a head, then nothing more until the header timeout.
    TimedOut(String, String),
    /// 400 or 431.
    Bad(u16, String, String),
}

/// One client connection.
struct Conn {
    stream: TcpStream,
    peer: SocketAddr,
    /// Read and not consumed yet: a head in progress, pipelined requests.
    buf: Vec<u8>,
}

impl Conn {
    /// Reads the next request head, within the timeouts.
    fn next_request(&mut self, limits: &Limits, first: bool) -> Next {
        let now = Instant::now();
        // The first head is due within the header timeout of the accept;
        // later ones may idle first, then get the header timeout from
        // their first byte.
        let mut head_deadline =
            (first || !self.buf.is_empty()).then(|| now + limits.header_timeout);
        let idle_deadline = now + limits.idle_timeout;
        let mut chunk = [0u8; 4096];
        loop {
            let mut partial = None;
            if !self.buf.is_empty() {
                match parse_head(&self.buf) {
                    Parsed::Complete(req, n) => {
                        self.buf.drain(..n);
                        return Next::Request(req);
                    }
                    Parsed::Bad(status, m, t) => return Next::Bad(status, m, t),
                    Parsed::Partial(m, t) => {
                        if self.buf.len() >= limits.max_header_bytes {
                            return Next::Bad(431, m, t);
                        }
                        partial = Some((m, t));
                    }
                }
                head_deadline.get_or_insert_with(|| Instant::now() + limits.header_timeout);
            }
            let left = head_deadline
                .unwrap_or(idle_deadline)
                .saturating_duration_since(Instant::now());
            if left.is_zero() || self.stream.set_read_timeout(Some(left)).is_err() {
                return match partial {
                    Some((m, t)) => Next::TimedOut(m, t),
                    None => Next::Gone,
                };
            }
            let room = limits
                .max_header_bytes
                .saturating_sub(self.buf.len())
                .clamp(1, chunk.len());
            match self.stream.read(&mut chunk[..room]) {
                Ok(0) => return Next::Gone,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted
                            | io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => return Next::Gone,
            }
        }
    }

    /// Reads and drops a request body of `n` bytes within the header
    /// timeout; false if it does not come.
    fn discard(&mut self, n: u64, limits: &Limits) -> bool {
        let from_buf = (n as usize).min(self.buf.len());
        self.buf.drain(..from_buf);
        let mut left = n - from_buf as u64;
        let deadline = Instant::now() + limits.header_timeout;
        let mut sink = [0u8; 4096];
        while left > 0 {
            let time = deadline.saturating_duration_since(Instant::now());
            if time.is_zero() || self.stream.set_read_timeout(Some(time)).is_err() {
                return false;
            }
            let want = left.min(sink.len() as u64) as usize;
            match self.stream.read(&mut sink[..want]) {
                Ok(0) => return false,
                Ok(k) => left -= k as u64,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
        true
    }

    /// Answers with a short text body (none for HEAD).
    fn simple(
        &mut self,
        access: &mut Access,
        status: u16,
        fields: &[(&str, &str)],
        body: &str,
        persist: Persist,
    ) {
        let head = access.method == "HEAD";
        let mut out = response_head(status, fields, body.len() as u64, persist).into_bytes();
        let head_len = out.len();
        if !head {
            out.extend_from_slice(body.as_bytes());
        }
        let (n, complete) = write_counted(&mut self.stream, &out);
        access.status = status;
        access.bytes = n.saturating_sub(head_len) as u64;
        access.complete = complete;
    }

    /// Answers one request; says whether the connection goes on.
    fn answer(&mut self, root: &Path, limits: &Limits, req: Request) -> (Access, bool) {
        let mut access = Access {
            client: Some(self.peer),
            method: req.method.clone(),
            path: req.target.clone(),
            range: req.range.clone(),
            status: 0,
            bytes: 0,
            complete: true,
        };
        let mut keep = req.keep_alive;
        let head = req.method == "HEAD";
        if !head && req.method != "GET" {
            // Its body, if any, is not read: the connection ends after.
            keep &= matches!(req.body, Body::None | Body::Length(0));
            let p = persist(keep, req.http10);
            self.simple(&mut access, 405, &[("Allow", "GET, HEAD")], "", p);
            return (access, keep);
        }
        match req.body {
            Body::None | Body::Length(0) => {}
            Body::Length(n) if n <= DISCARD_MAX => {
                if !self.discard(n, limits) {
                    let body = "request body timed out\n";
                    self.simple(&mut access, 408, &[], body, Persist::Close);
                    return (access, false);
                }
            }
            Body::Length(_) => {
                let body = "request body too large\n";
                self.simple(&mut access, 413, &[], body, Persist::Close);
                return (access, false);
            }
            Body::Encoded | Body::Invalid => {
                let body = "request bodies are not accepted\n";
                self.simple(&mut access, 400, &[], body, Persist::Close);
                return (access, false);
            }
        }
        let Some(path) = origin_path(&req.target) else {
            self.simple(&mut access, 400, &[], "bad request\n", Persist::Close);
            return (access, false);
        };
        let p = persist(keep, req.http10);
        let Some(mut file) = resolve(root, path).and_then(|f| File::open(f).ok()) else {
            self.simple(&mut access, 404, &[], "not found\n", p);
            return (access, keep);
        };
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        let (status, start, end) = match access.range.as_deref() {
            None => (200, 0, len.saturating_sub(1)),
            Some(r) => match parse_range(r, len) {
                Some((s, e)) => (206, s, e),
                None => {
                    let cr = format!("bytes */{len}");
                    self.simple(&mut access, 416, &[("Content-Range", &cr)], "", p);
                    return (access, keep);
                }
            },
        };
        let count = if len == 0 { 0 } else { end - start + 1 };
        if file.seek(SeekFrom::Start(start)).is_err() {
            self.simple(&mut access, 500, &[], "", Persist::Close);
            return (access, false);
        }
        let content_range = format!("bytes {start}-{end}/{len}");
        let mut fields = vec![
            ("Accept-Ranges", "bytes"),
            ("Content-Type", "application/octet-stream"),
        ];
        if status == 206 {
            fields.push(("Content-Range", &content_range));
        }
        access.status = status;
        // Content-Length says what a GET sends, a HEAD too (with no body).
        let out = response_head(status, &fields, count, p);
        let (_, sent_head) = write_counted(&mut self.stream, out.as_bytes());
        if !sent_head || head {
            access.complete = sent_head;
            return (access, keep && sent_head);
        }
        let (bytes, complete) = self.send_file(&mut file, count);
        access.bytes = bytes;
        access.complete = complete;
        (access, keep && complete)
    }

    /// Streams `count` bytes of `file` from where it is; says how many
    /// went out and whether all did. (Not `io::copy`: into a socket it is
    /// `sendfile`, which raises SIGPIPE when the client is gone, and the
    /// CLI keeps SIGPIPE's default action.)
    fn send_file(&mut self, file: &mut File, count: u64) -> (u64, bool) {
        let mut chunk = [0u8; BODY_CHUNK];
        let mut sent = 0u64;
        while sent < count {
            let want = (count - sent).min(BODY_CHUNK as u64) as usize;
            let n = match file.read(&mut chunk[..want]) {
                // The file shrank: the promised length cannot be kept.
                Ok(0) => return (sent, false),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return (sent, false),
            };
            let (w, ok) = write_counted(&mut self.stream, &chunk[..n]);
            sent += w as u64;
            if !ok {
                return (sent, false);
            }
        }
        (sent, true)
    }

    /// Closes after the answer went out: no more writes, then what the
    /// client still sends is read (briefly) so that the close does not
    /// reset the connection before the client read the answer.
    fn linger(self) {
        let mut stream = self.stream;
        let _ = stream.shutdown(Shutdown::Write);
        let end = Instant::now() + LINGER;
        let (mut sink, mut total) = ([0u8; 4096], 0);
        while total < LINGER_BYTES {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
                break;
            }
            match stream.read(&mut sink) {
                Ok(0) | Err(_) => break,
                Ok(n) => total += n,
            }
        }
    }
}

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
mod tests {
    use super::*;

    #[test]
    fn lists_only_what_it_serves() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(root.join("b.iso"), "b").unwrap();
        std::fs::write(tmp.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(tmp.path().join("secret"), root.join("out.iso")).unwrap();
        std::os::unix::fs::symlink(root.join("b.iso"), root.join("a.iso")).unwrap();
        std::fs::create_dir(root.join("dir")).unwrap();
        let names: Vec<String> = servable(&root).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["a.iso", "b.iso"]);
    }

    #[test]
    fn ranges() {
        assert_eq!(parse_range("bytes=0-9", 100), Some((0, 9)));
        assert_eq!(parse_range("bytes=90-", 100), Some((90, 99)));
        assert_eq!(parse_range("bytes=-10", 100), Some((90, 99)));
        assert_eq!(parse_range("bytes=50-200", 100), Some((50, 99)));
        assert_eq!(parse_range("bytes=100-", 100), None);
        assert_eq!(parse_range("bytes=5-1", 100), None);
        assert_eq!(parse_range("bytes=0-1,5-6", 100), None);
    }

    #[test]
    fn heads() {
        let complete = |s: &str| match parse_head(s.as_bytes()) {
            Parsed::Complete(r, n) => {
                assert_eq!(n, s.len());
                r
            }
            other => panic!("{s:?}: {other:?}"),
        };
        let r = complete("GET /a.iso HTTP/1.1\r\nRange: bytes=1-2\r\n\r\n");
        assert_eq!((r.method.as_str(), r.target.as_str()), ("GET", "/a.iso"));
        assert_eq!(
            (r.range.as_deref(), r.keep_alive),
            (Some("bytes=1-2"), true)
        );
        assert_eq!(r.body, Body::None);
        let r = complete("GET / HTTP/1.1\r\nConnection: Keep-Alive, close\r\n\r\n");
        assert!(!r.keep_alive);
        let r = complete("GET / HTTP/1.0\r\n\r\n");
        assert!(r.http10 && !r.keep_alive);
        let r = complete("GET / HTTP/1.0\r\nconnection: keep-alive\r\n\r\n");
        assert!(r.keep_alive);
        let body = |h: &str| complete(&format!("GET / HTTP/1.1\r\n{h}\r\n\r\n")).body;
        assert_eq!(body("Content-Length: 5"), Body::Length(5));
        assert_eq!(body("Content-Length: +5"), Body::Invalid);
        assert_eq!(
            body("Content-Length: 5\r\nContent-Length: 6"),
            Body::Invalid
        );
        assert_eq!(body("Transfer-Encoding: chunked"), Body::Encoded);
        assert!(matches!(
            parse_head(b"GET /a HTTP/1.1\r\nHost"),
            Parsed::Partial(..)
        ));
        assert!(matches!(
            parse_head(b"GET /a HTTP/9.1\r\n\r\n"),
            Parsed::Bad(400, ..)
        ));
        assert!(matches!(
            parse_head(b"GET /a HTTP/1.1\r\nno colon\r\n\r\n"),
            Parsed::Bad(400, ..)
        ));
        let many = format!(
            "GET / HTTP/1.1\r\n{}\r\n",
            "X: y\r\n".repeat(MAX_HEADERS + 1)
        );
        assert!(matches!(parse_head(many.as_bytes()), Parsed::Bad(431, ..)));
    }

    #[test]
    fn targets() {
        assert_eq!(origin_path("/a.iso?x"), Some("/a.iso?x"));
        assert_eq!(origin_path("HTTP://h:80/a.iso"), Some("/a.iso"));
        assert_eq!(origin_path("https://h"), Some("/"));
        assert_eq!(origin_path("a.iso"), None);
        assert_eq!(origin_path("*"), None);
        assert_eq!(origin_path("ht\u{e9}"), None);
    }
}
