//! A small HTTP server for an image directory: GET and HEAD, single
//! byte ranges, Content-Length, one thread per connection, and nothing
//! outside the root (no `..`, no absolute paths, no symlinks out).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use sha2::{Digest, Sha256};
use tiny_http::{Header, Method, Response, Server, StatusCode};

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

fn header(k: &str, v: &str) -> Header {
    Header::from_bytes(k.as_bytes(), v.as_bytes()).expect("static header names are valid")
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

/// A reader that counts what is read from it (what went to the client).
struct Counted<R> {
    inner: R,
    count: Arc<AtomicU64>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Sends `body` (of `len` bytes) and says how much went out.
fn send<R: Read + Send>(
    req: tiny_http::Request,
    status: u16,
    headers: Vec<Header>,
    body: R,
    len: u64,
) -> (u64, bool) {
    let count = Arc::new(AtomicU64::new(0));
    let resp = Response::new(
        StatusCode(status),
        headers,
        Counted {
            inner: body,
            count: count.clone(),
        },
        Some(len as usize),
        None,
    );
    let ok = req.respond(resp).is_ok();
    let sent = count.load(Ordering::Relaxed);
    (sent, ok && sent == len)
}

fn handle(root: &Path, req: tiny_http::Request) -> Access {
    let mut access = Access {
        client: req.remote_addr().copied(),
        method: req.method().to_string(),
        path: req.url().to_string(),
        range: req
            .headers()
            .iter()
            .find(|h| h.field.equiv("Range"))
            .map(|h| h.value.as_str().to_string()),
        status: 0,
        bytes: 0,
        complete: true,
    };
    fn answer(
        access: &mut Access,
        req: tiny_http::Request,
        status: u16,
        headers: Vec<Header>,
        body: &'static str,
    ) {
        let (bytes, complete) = send(req, status, headers, body.as_bytes(), body.len() as u64);
        access.status = status;
        access.bytes = bytes;
        access.complete = complete;
    }
    let head = *req.method() == Method::Head;
    if !head && *req.method() != Method::Get {
        answer(
            &mut access,
            req,
            405,
            vec![header("Allow", "GET, HEAD")],
            "",
        );
        return access;
    }
    let Some(path) = resolve(root, req.url()) else {
        answer(&mut access, req, 404, vec![], "not found\n");
        return access;
    };
    let Ok(mut file) = File::open(&path) else {
        answer(&mut access, req, 404, vec![], "not found\n");
        return access;
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let (status, start, end) = match access.range.as_deref() {
        None => (200, 0, len.saturating_sub(1)),
        Some(r) => match parse_range(r, len) {
            Some((s, e)) => (206, s, e),
            None => {
                let h = vec![header("Content-Range", &format!("bytes */{len}"))];
                answer(&mut access, req, 416, h, "");
                return access;
            }
        },
    };
    let count = if len == 0 { 0 } else { end - start + 1 };
    let mut headers = vec![
        header("Accept-Ranges", "bytes"),
        header("Content-Type", "application/octet-stream"),
    ];
    if status == 206 {
        headers.push(header(
            "Content-Range",
            &format!("bytes {start}-{end}/{len}"),
        ));
    }
    if file.seek(SeekFrom::Start(start)).is_err() {
        answer(&mut access, req, 500, vec![], "");
        return access;
    }
    access.status = status;
    if head {
        // Content-Length says what a GET would send; no body.
        let resp = Response::new(
            StatusCode(status),
            headers,
            std::io::empty(),
            Some(count as usize),
            None,
        );
        access.complete = req.respond(resp).is_ok();
    } else {
        let (bytes, complete) = send(req, status, headers, file.take(count), count);
        access.bytes = bytes;
        access.complete = complete;
    }
    access
}

/// A bound image server: it answers from [`ImageServer::run`] on, whatever
/// else the process does meanwhile (hashing large images, say).
pub struct ImageServer {
    server: Server,
    root: PathBuf,
    pub addr: std::net::SocketAddr,
}

/// Binds `listen` (port 0 picks a free one) to serve `root`.
pub fn bind(root: &Path, listen: &str) -> Result<ImageServer, ImageError> {
    let server = Server::http(listen)
        .map_err(|e| ImageError::Io(std::io::Error::other(format!("{listen}: {e}"))))?;
    let addr = server
        .server_addr()
        .to_ip()
        .ok_or_else(|| ImageError::Io(std::io::Error::other("not an IP listener")))?;
    Ok(ImageServer {
        server,
        root: root.to_path_buf(),
        addr,
    })
}

impl ImageServer {
    /// Serves until the process ends, one thread per request; `log` gets
    /// every request once it is answered.
    pub fn run(self, log: impl Fn(&Access) + Send + Sync + 'static) {
        let root = Arc::new(self.root);
        let log = Arc::new(log);
        for req in self.server.incoming_requests() {
            let (root, log) = (root.clone(), log.clone());
            std::thread::spawn(move || log(&handle(&root, req)));
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
}
