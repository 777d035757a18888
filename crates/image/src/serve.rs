//! A small HTTP server for an image directory: GET and HEAD, single
//! byte ranges, Content-Length, one thread per connection, and nothing
//! outside the root (no `..`, no absolute paths, no symlinks out).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
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

fn handle(root: &Path, req: tiny_http::Request) {
    let head = *req.method() == Method::Head;
    if !head && *req.method() != Method::Get {
        let _ =
            req.respond(Response::empty(StatusCode(405)).with_header(header("Allow", "GET, HEAD")));
        return;
    }
    let Some(path) = resolve(root, req.url()) else {
        let _ = req.respond(Response::from_string("not found\n").with_status_code(404));
        return;
    };
    let Ok(mut file) = File::open(&path) else {
        let _ = req.respond(Response::from_string("not found\n").with_status_code(404));
        return;
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let range = req
        .headers()
        .iter()
        .find(|h| h.field.equiv("Range"))
        .map(|h| h.value.as_str().to_string());
    let (status, start, end) = match range {
        None => (200, 0, len.saturating_sub(1)),
        Some(r) => match parse_range(&r, len) {
            Some((s, e)) => (206, s, e),
            None => {
                let resp = Response::empty(StatusCode(416))
                    .with_header(header("Content-Range", &format!("bytes */{len}")));
                let _ = req.respond(resp);
                return;
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
        let _ = req.respond(Response::empty(StatusCode(500)));
        return;
    }
    let body: Box<dyn Read + Send> = if head {
        Box::new(std::io::empty())
    } else {
        Box::new(file.take(count))
    };
    let resp = Response::new(
        StatusCode(status),
        headers,
        body,
        Some(count as usize),
        None,
    );
    let _ = req.respond(resp);
}

/// Serves `root` on `listen` until the process ends; `ready` gets the
/// bound address (port 0 picks a free one).
pub fn serve(
    root: &Path,
    listen: &str,
    ready: impl FnOnce(std::net::SocketAddr),
) -> Result<(), ImageError> {
    let server =
        Server::http(listen).map_err(|e| ImageError::Io(std::io::Error::other(e.to_string())))?;
    let addr = server
        .server_addr()
        .to_ip()
        .ok_or_else(|| ImageError::Io(std::io::Error::other("not an IP listener")))?;
    ready(addr);
    let root = Arc::new(root.to_path_buf());
    for req in server.incoming_requests() {
        let root = root.clone();
        std::thread::spawn(move || handle(&root, req));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
