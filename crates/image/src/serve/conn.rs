//! One connection's requests, answered in turn: files whole or by range,
//! errors, and when to close.

use super::*;

/// What [`Conn::next_request`] found.
pub(super) enum Next {
    Request(Request),
    /// The client closed, idled out, or never sent a byte: nothing to say.
    Gone,
    /// Part of a head, then nothing more until the header timeout.
    TimedOut(String, String),
    /// 400 or 431.
    Bad(u16, String, String),
}

/// One client connection.
pub(super) struct Conn {
    pub(super) stream: TcpStream,
    pub(super) peer: SocketAddr,
    /// Read and not consumed yet: a head in progress, pipelined requests.
    pub(super) buf: Vec<u8>,
}

impl Conn {
    /// Reads the next request head, within the timeouts.
    pub(super) fn next_request(&mut self, limits: &Limits, first: bool) -> Next {
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
    pub(super) fn discard(&mut self, n: u64, limits: &Limits) -> bool {
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
    pub(super) fn simple(
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
    pub(super) fn answer(&mut self, root: &Path, limits: &Limits, req: Request) -> (Access, bool) {
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
    pub(super) fn send_file(&mut self, file: &mut File, count: u64) -> (u64, bool) {
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
    pub(super) fn linger(self) {
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
