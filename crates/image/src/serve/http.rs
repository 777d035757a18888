//! HTTP/1.1 as the image server speaks it: a request head parsed (or
//! refused), the response head, keep-alive.

use super::*;

/// What a request head says, once parsed.
#[derive(Debug)]
pub(super) struct Request {
    pub(super) method: String,
    pub(super) target: String,
    pub(super) http10: bool,
    pub(super) range: Option<String>,
    pub(super) keep_alive: bool,
    pub(super) body: Body,
}

/// The body a request announces.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Body {
    None,
    Length(u64),
    /// `Transfer-Encoding`: not read here.
    Encoded,
    /// Unparsable or conflicting `Content-Length`.
    Invalid,
}

#[derive(Debug)]
pub(super) enum Parsed {
    Complete(Request, usize),
    /// More bytes needed; the method and target if already known.
    Partial(String, String),
    /// 400 (not HTTP) or 431 (too many headers).
    Bad(u16, String, String),
}

pub(super) fn parse_head(buf: &[u8]) -> Parsed {
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
pub(super) fn origin_path(target: &str) -> Option<&str> {
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

pub(super) fn reason(status: u16) -> &'static str {
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
pub(super) enum Persist {
    /// HTTP/1.1 keep-alive: nothing to say.
    Keep,
    /// HTTP/1.0 that asked for keep-alive: `Connection: keep-alive`.
    Keep10,
    /// `Connection: close`.
    Close,
}

pub(super) fn persist(keep: bool, http10: bool) -> Persist {
    match (keep, http10) {
        (false, _) => Persist::Close,
        (true, false) => Persist::Keep,
        (true, true) => Persist::Keep10,
    }
}

/// Status line and headers of an answer with `length` body bytes.
pub(super) fn response_head(
    status: u16,
    fields: &[(&str, &str)],
    length: u64,
    persist: Persist,
) -> String {
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
pub(super) fn write_counted(w: &mut impl Write, data: &[u8]) -> (usize, bool) {
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
