//! `serve` over loopback with raw TCP clients: stalled and idle clients,
//! trickled heads, keep-alive, error answers and the access log.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::serve::{bind, Access, Limits};

type Log = Arc<Mutex<Vec<Access>>>;

/// A file of `len` bytes that no two offsets share by accident.
fn pattern(len: usize) -> Vec<u8> {
    (0..len as u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect()
}

/// A server of a fresh directory with `x.iso` (`data`), on a port of its
/// own, for the rest of the test process.
fn start(dir: &Path, data: &[u8], limits: Limits) -> (SocketAddr, Log) {
    let root = dir.join("images");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("x.iso"), data).unwrap();
    std::fs::write(dir.join("secret"), "outside").unwrap();
    let server = bind(&root, "127.0.0.1:0").unwrap().with_limits(limits);
    let addr = server.addr;
    let log: Log = Default::default();
    let sink = log.clone();
    std::thread::spawn(move || server.run(move |a| sink.lock().unwrap().push(a.clone())));
    (addr, log)
}

fn short() -> Limits {
    Limits {
        header_timeout: Duration::from_secs(1),
        idle_timeout: Duration::from_secs(1),
        write_timeout: Duration::from_secs(2),
        ..Limits::default()
    }
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// One answer: status, head, body (none after a HEAD).
fn response(s: &mut TcpStream, head_request: bool) -> (u16, String, Vec<u8>) {
    let mut head = Vec::new();
    let mut byte = [0u8];
    while !head.ends_with(b"\r\n\r\n") {
        assert!(head.len() < 16 << 10, "no end of head");
        assert_eq!(s.read(&mut byte).unwrap(), 1, "closed mid-head: {head:?}");
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let len: usize = header(&head, "Content-Length").unwrap().parse().unwrap();
    let mut body = vec![0u8; if head_request { 0 } else { len }];
    s.read_exact(&mut body).unwrap();
    (status, head, body)
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// Whether the server closed `s` (EOF or reset) within `within`; what it
/// sent before is skipped.
fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    let end = Instant::now() + within;
    let mut buf = [0u8; 4096];
    loop {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        s.set_read_timeout(Some(left)).unwrap();
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return false
            }
            Err(_) => return true,
        }
    }
}

/// Whether `s` is still open with nothing to read.
fn still_open(s: &TcpStream) -> bool {
    s.set_nonblocking(true).unwrap();
    let open =
        matches!(s.peek(&mut [0u8; 1]), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
    s.set_nonblocking(false).unwrap();
    open
}

/// 50 clients that stop mid-head and 50 idle kept-alive ones.
fn stall(addr: SocketAddr) -> Vec<TcpStream> {
    let mut out = Vec::new();
    for _ in 0..50 {
        let mut s = connect(addr);
        s.write_all(b"GET /x.iso HTTP/1.1\r\nHost: a\r\n").unwrap();
        out.push(s);
    }
    for _ in 0..50 {
        let mut s = connect(addr);
        s.write_all(b"GET /x.iso HTTP/1.1\r\nHost: a\r\nRange: bytes=0-9\r\n\r\n")
            .unwrap();
        let (st, _, body) = response(&mut s, false);
        assert_eq!((st, body.len()), (206, 10));
        out.push(s);
    }
    out
}

#[test]
fn a_fresh_client_is_served_beside_100_stalled_connections() {
    let tmp = tempfile::tempdir().unwrap();
    let data = pattern(1 << 20);
    let (addr, _) = start(tmp.path(), &data, Limits::default());
    let mut took = Vec::new();
    for round in 0..5 {
        let stalled = stall(addr);
        let t = Instant::now();
        let mut s = connect(addr);
        s.write_all(b"GET /x.iso HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
            .unwrap();
        let (st, _, body) = response(&mut s, false);
        let elapsed = t.elapsed();
        assert_eq!(st, 200);
        assert!(body == data, "round {round}: body differs");
        assert!(
            elapsed < Duration::from_secs(2),
            "round {round}: {elapsed:?}"
        );
        assert!(
            stalled.iter().all(still_open),
            "round {round}: a stalled client was closed"
        );
        took.push(elapsed);
    }
    eprintln!("fresh 1 MiB GET beside 50 mid-head and 50 idle connections, 5 rounds: {took:?}");
}

#[test]
fn stalled_connections_are_closed_at_the_timeouts() {
    let tmp = tempfile::tempdir().unwrap();
    let (addr, log) = start(tmp.path(), &pattern(4096), short());
    let t = Instant::now();
    let mut stalled = stall(addr);
    // Every one closed by the server by ~2 s (header 1 s, idle 1 s).
    for (i, s) in stalled.iter_mut().enumerate() {
        let left = Duration::from_millis(2500).saturating_sub(t.elapsed());
        assert!(
            closed_within(s, left),
            "connection {i} still open at {:?}",
            t.elapsed()
        );
    }
    eprintln!(
        "100 stalled connections all closed {:?} after the first opened",
        t.elapsed()
    );
    // The ones cut mid-head got a 408 in the log.
    let deadline = Instant::now() + Duration::from_secs(5);
    while log
        .lock()
        .unwrap()
        .iter()
        .filter(|a| a.status == 408)
        .count()
        < 50
    {
        assert!(Instant::now() < deadline, "408s: {:?}", log.lock().unwrap());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_trickled_head_is_cut_at_the_header_timeout() {
    let tmp = tempfile::tempdir().unwrap();
    let (addr, _) = start(tmp.path(), &pattern(4096), short());
    let mut s = connect(addr);
    let mut writer = s.try_clone().unwrap();
    let t = Instant::now();
    // One byte every 200 ms: the whole head would take 8 s.
    let trickle = std::thread::spawn(move || {
        for b in b"GET /x.iso HTTP/1.1\r\nHost: a\r\nX-Pad: aaaaaaaaaa\r\n\r\n"
            .iter()
            .take(40)
        {
            if writer.write_all(&[*b]).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    });
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    let cut = t.elapsed();
    let text = String::from_utf8_lossy(&got);
    assert!(
        got.is_empty() || text.starts_with("HTTP/1.1 408 "),
        "{text}"
    );
    assert!(
        cut >= Duration::from_millis(900) && cut < Duration::from_millis(1800),
        "cut after {cut:?}"
    );
    eprintln!("trickled head cut after {cut:?}");
    trickle.join().unwrap();
}

#[test]
fn keep_alive_serves_several_requests_and_honours_connection_close() {
    let tmp = tempfile::tempdir().unwrap();
    let data = pattern(300_000);
    let (addr, log) = start(tmp.path(), &data, short());
    let mut s = connect(addr);
    s.write_all(b"GET /x.iso HTTP/1.1\r\nHost: a\r\nRange: bytes=1000-1999\r\n\r\n")
        .unwrap();
    let (st, head, body) = response(&mut s, false);
    assert_eq!(st, 206);
    assert_eq!(
        header(&head, "Content-Range"),
        Some("bytes 1000-1999/300000")
    );
    assert_eq!(header(&head, "Accept-Ranges"), Some("bytes"));
    assert_eq!(
        header(&head, "Content-Type"),
        Some("application/octet-stream")
    );
    assert!(
        header(&head, "Date").is_some_and(|d| d.ends_with(" GMT")),
        "{head}"
    );
    assert_eq!(header(&head, "Connection"), None);
    assert!(body == data[1000..2000]);
    s.write_all(b"GET /x.iso HTTP/1.1\r\nHost: a\r\n\r\n")
        .unwrap();
    let (st, head, body) = response(&mut s, false);
    assert_eq!((st, header(&head, "Content-Length")), (200, Some("300000")));
    assert!(body == data);
    // Two pipelined, the first with a small body to drop.
    s.write_all(
        b"GET /x.iso HTTP/1.1\r\nRange: bytes=-5\r\nContent-Length: 5\r\n\r\nhelloHEAD /x.iso HTTP/1.1\r\n\r\n",
    )
    .unwrap();
    let (st, _, body) = response(&mut s, false);
    assert_eq!((st, body.as_slice()), (206, &data[data.len() - 5..]));
    let (st, head, body) = response(&mut s, true);
    assert_eq!(
        (st, header(&head, "Content-Length"), body.len()),
        (200, Some("300000"), 0)
    );
    // Then close: the answer, then the end.
    s.write_all(b"GET /x.iso HTTP/1.1\r\nRange: bytes=0-0\r\nConnection: close\r\n\r\n")
        .unwrap();
    let (st, head, body) = response(&mut s, false);
    assert_eq!(
        (st, header(&head, "Connection"), body),
        (206, Some("close"), vec![data[0]])
    );
    assert!(closed_within(&mut s, Duration::from_millis(500)));

    // HTTP/1.0 closes unless asked to keep alive.
    let mut s = connect(addr);
    s.write_all(b"GET /x.iso HTTP/1.0\r\nRange: bytes=0-1\r\n\r\n")
        .unwrap();
    assert_eq!(response(&mut s, false).0, 206);
    assert!(closed_within(&mut s, Duration::from_millis(500)));
    let mut s = connect(addr);
    for _ in 0..2 {
        s.write_all(b"GET /x.iso HTTP/1.0\r\nConnection: keep-alive\r\nRange: bytes=0-1\r\n\r\n")
            .unwrap();
        let (st, head, _) = response(&mut s, false);
        assert_eq!((st, header(&head, "Connection")), (206, Some("keep-alive")));
    }

    // Every request logged, whole.
    let log = log.lock().unwrap();
    let line = |a: &Access| {
        format!(
            "{} {} {:?} {} {} {}",
            a.method, a.path, a.range, a.status, a.bytes, a.complete
        )
    };
    let lines: Vec<String> = log.iter().map(line).collect();
    assert_eq!(
        lines[..5],
        [
            "GET /x.iso Some(\"bytes=1000-1999\") 206 1000 true",
            "GET /x.iso None 200 300000 true",
            "GET /x.iso Some(\"bytes=-5\") 206 5 true",
            "HEAD /x.iso None 200 0 true",
            "GET /x.iso Some(\"bytes=0-0\") 206 1 true",
        ]
    );
    assert!(log
        .iter()
        .all(|a| a.client.is_some_and(|c| c.ip().is_loopback())));
}

#[test]
fn errors_are_answered() {
    let tmp = tempfile::tempdir().unwrap();
    let data = pattern(5000);
    let (addr, _) = start(tmp.path(), &data, short());
    // On one kept-alive connection: 405, 404s, 416, HEAD, and still a GET.
    let mut s = connect(addr);
    let mut ask = |req: &str, head: bool| {
        s.write_all(req.as_bytes()).unwrap();
        response(&mut s, head)
    };
    let (st, head, _) = ask("DELETE /x.iso HTTP/1.1\r\n\r\n", false);
    assert_eq!((st, header(&head, "Allow")), (405, Some("GET, HEAD")));
    for bad in [
        "/../secret",
        "/%2e%2e/secret",
        "/%2E%2E%2Fsecret",
        "/images/../../secret",
        "/nope.iso",
    ] {
        let (st, _, body) = ask(&format!("GET {bad} HTTP/1.1\r\n\r\n"), false);
        assert_eq!((st, body.as_slice()), (404, &b"not found\n"[..]), "{bad}");
    }
    let (st, head, body) = ask("GET /x.iso HTTP/1.1\r\nRange: bytes=5000-\r\n\r\n", false);
    assert_eq!(
        (st, header(&head, "Content-Range"), body.len()),
        (416, Some("bytes */5000"), 0)
    );
    let (st, head, _) = ask("HEAD /x.iso HTTP/1.1\r\n\r\n", true);
    assert_eq!((st, header(&head, "Content-Length")), (200, Some("5000")));
    let (st, head, _) = ask("HEAD /x.iso HTTP/1.1\r\nRange: bytes=10-19\r\n\r\n", true);
    assert_eq!((st, header(&head, "Content-Length")), (206, Some("10")));
    // No body came after the HEADs: the next answer starts right there.
    let (st, _, body) = ask(
        "GET http://a/x.iso HTTP/1.1\r\nRange: bytes=1-3\r\n\r\n",
        false,
    );
    assert_eq!((st, body.as_slice()), (206, &data[1..4]));

    // Each of these is answered, then the connection is closed.
    let big = format!(
        "GET /x.iso HTTP/1.1\r\nX-Big: {}\r\n\r\n",
        "a".repeat(20 << 10)
    );
    let many = format!("GET /x.iso HTTP/1.1\r\n{}\r\n", "X: y\r\n".repeat(100));
    for (req, want) in [
        ("GARBAGE\r\n\r\n", 400),
        ("GET /x.iso HTTP/9.9\r\n\r\n", 400),
        ("GET /x.iso HTTP/1.1\r\nno colon here\r\n\r\n", 400),
        ("GET x.iso HTTP/1.1\r\n\r\n", 400),
        ("GET /x.iso HTTP/1.1\r\nContent-Length: abc\r\n\r\n", 400),
        (
            "GET /x.iso HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            400,
        ),
        (
            "GET /x.iso HTTP/1.1\r\nContent-Length: 1000000\r\n\r\n",
            413,
        ),
        ("POST /x.iso HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", 405),
        (big.as_str(), 431),
        (many.as_str(), 431),
    ] {
        let mut s = connect(addr);
        s.write_all(req.as_bytes()).unwrap();
        let (st, head, _) = response(&mut s, false);
        assert_eq!(st, want, "{:.60}", req);
        assert_eq!(header(&head, "Connection"), Some("close"), "{:.60}", req);
        assert!(closed_within(&mut s, Duration::from_secs(3)), "{:.60}", req);
    }
}

#[test]
fn a_client_gone_mid_body_is_logged_incomplete() {
    let tmp = tempfile::tempdir().unwrap();
    let len = 32 << 20;
    let (addr, log) = start(tmp.path(), &pattern(len), short());
    let mut s = connect(addr);
    s.write_all(b"GET /x.iso HTTP/1.1\r\n\r\n").unwrap();
    let mut some = [0u8; 64 << 10];
    s.read_exact(&mut some).unwrap();
    drop(s);
    let deadline = Instant::now() + Duration::from_secs(10);
    let entry = loop {
        if let Some(a) = log.lock().unwrap().first() {
            break a.clone();
        }
        assert!(Instant::now() < deadline, "no log entry");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!((entry.status, entry.complete), (200, false), "{entry}");
    assert!(entry.bytes > 0 && entry.bytes < len as u64, "{entry}");
    assert!(
        entry.to_string().ends_with(" bytes (client closed early)"),
        "{entry}"
    );
}

#[test]
fn connections_beyond_the_bound_get_503() {
    let tmp = tempfile::tempdir().unwrap();
    let limits = Limits {
        max_connections: 2,
        ..short()
    };
    let (addr, _) = start(tmp.path(), &pattern(100), limits);
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut s = connect(addr);
        s.write_all(b"GET /x.iso HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!(response(&mut s, false).0, 200);
        held.push(s);
    }
    let mut s = connect(addr);
    let (st, head, _) = response(&mut s, false);
    assert_eq!((st, header(&head, "Connection")), (503, Some("close")));
    // One gone, a new client is served again (once the server saw it go).
    drop(held.pop());
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let mut s = connect(addr);
        s.write_all(b"GET /x.iso HTTP/1.1\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut got = Vec::new();
        let _ = s.read_to_end(&mut got);
        if got.starts_with(b"HTTP/1.1 200 ") {
            break;
        }
        assert!(Instant::now() < deadline, "still refused");
    }
}
