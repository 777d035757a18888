use super::*;

#[test]
fn an_empty_or_comment_only_file_is_said_to_be_one() {
    for (text, said) in [
        ("", "the file is empty"),
        ("\n  \n", "the file is empty"),
        ("# nothing here\n", "the file has only comments"),
    ] {
        let d = parse("x", text.as_bytes(), 0).unwrap_err();
        assert_eq!(d.code, Code::KeyfileSyntax);
        assert!(d.message.starts_with(said), "{text:?}: {}", d.message);
    }
}

#[test]
fn groups_keys_aliases_escapes_and_lists() {
    let text = "# made by hand\n[connection]\nid=bond0\\sslave\nmaster=bond0\nslave-type=bond\n\n[802-3-ethernet]\nmtu=9000\n[ipv4]\ndns=10.0.0.1;10.0.0.2;\ndns-search=a\\;b;c\n";
    let k = parse("x", text.as_bytes(), 0).unwrap();
    assert_eq!(k.value("connection", "id").as_deref(), Some("bond0 slave"));
    assert_eq!(
        k.value("connection", "controller").as_deref(),
        Some("bond0")
    );
    assert_eq!(k.value("connection", "port-type").as_deref(), Some("bond"));
    assert_eq!(k.value("ethernet", "mtu").as_deref(), Some("9000"));
    assert_eq!(
        k.get("ipv4", "dns").unwrap().list(),
        vec!["10.0.0.1", "10.0.0.2"]
    );
    assert_eq!(
        k.get("ipv4", "dns-search").unwrap().list(),
        vec!["a;b", "c"]
    );
    let mtu = k.get("ethernet", "mtu").unwrap();
    assert_eq!((mtu.span.line, mtu.span.column), (8, 5));
}

#[test]
fn gkeyfile_rules_repeats_translations_and_whitespace() {
    let text = "  [connection]  \n\tid = a b  \r\nid[de]=x\ntype=ethernet\n[ipv4]\nmethod=auto\n[connection]\nid=last\n[ipv4]\nmethod=manual\n";
    let k = parse("x", text.as_bytes(), 0).unwrap();
    assert_eq!(k.groups.len(), 2, "repeated groups are one group");
    assert_eq!(k.value("connection", "id").as_deref(), Some("last"));
    assert_eq!(k.value("ipv4", "method").as_deref(), Some("manual"));
    assert_eq!(k.group("connection").unwrap().entries.len(), 2);
    // Trailing whitespace of a value is kept, leading is not.
    let k = parse("x", b"[connection]\nid =  a b  \n", 0).unwrap();
    assert_eq!(k.value("connection", "id").as_deref(), Some("a b  "));
}

#[test]
fn both_spellings_of_a_setting_read_the_long_one() {
    let text = "[connection]\ntype=ethernet\n[ethernet]\nmtu=1400\n[802-3-ethernet]\nmtu=9000\n";
    let k = parse("x", text.as_bytes(), 0).unwrap();
    assert_eq!(k.value("ethernet", "mtu").as_deref(), Some("9000"));
    assert_eq!(k.warnings.len(), 1);
    assert_eq!(k.warnings[0].span.unwrap().line, 3);
}

#[test]
fn an_invalid_escape_drops_the_key_with_a_warning() {
    let k = parse("x", b"[connection]\nid=a\\qb\ntype=ethernet\n", 0).unwrap();
    assert!(k.get("connection", "id").is_none());
    assert_eq!(k.warnings[0].code, Code::KeyfileInvalid);
    assert_eq!(k.warnings[0].span.unwrap().line, 2);
}

#[test]
fn located_errors() {
    let e = parse("x", b"id=foo\n[connection]\n", 0).unwrap_err();
    assert_eq!((e.code, e.span.unwrap().line), (Code::KeyfileSyntax, 1));
    let e = parse("x", b"[connection]\nid=a\njunk line\n", 0).unwrap_err();
    assert_eq!(e.span.unwrap().line, 3);
    let e = parse("x", b"[connection\n", 0).unwrap_err();
    assert_eq!(e.span.unwrap().line, 1);
    let e = parse("x", b"[connection] x\n", 0).unwrap_err();
    assert_eq!(e.span.unwrap().line, 1);
    let e = parse("x", b"[connection]\n=a\n", 0).unwrap_err();
    assert_eq!(e.span.unwrap().line, 2);
    let e = parse("x", b"[connection]\na]b=c\n", 0).unwrap_err();
    assert_eq!(e.span.unwrap().line, 2);
    let e = parse("x", b"[]\n", 0).unwrap_err();
    assert_eq!(e.span.unwrap().line, 1);
    let e = parse("x", b"[connection]\nid=\x00\xff\n", 0).unwrap_err();
    assert_eq!(e.span.unwrap().line, 2);
    let big = vec![b'#'; MAX_SIZE + 1];
    assert!(parse("x", &big, 0).is_err());
}
