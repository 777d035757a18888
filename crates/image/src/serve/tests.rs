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
