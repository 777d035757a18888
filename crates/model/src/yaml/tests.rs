use super::*;

#[test]
fn positions_are_one_based_and_point_at_values() {
    let text = "interfaces:\n- name: bond0.110\n  vlan:\n    id: 5000\n";
    let root = parse(text, 0).unwrap();
    let iface = &root.get("interfaces").unwrap().as_seq().unwrap()[0];
    let id = iface.get("vlan").unwrap().get("id").unwrap();
    assert_eq!(id.as_i64(), Some(5000));
    assert_eq!((id.span.line, id.span.column), (4, 9));
    assert_eq!(&text[id.span.offset as usize..][..4], "5000");
}

#[test]
fn quoted_numbers_stay_strings_and_macs_are_strings() {
    let root = parse("a: '110'\nmac: 52:54:00:aa:bb:01\nb: 0x10\n", 0).unwrap();
    assert_eq!(root.get("a").unwrap().value, Value::Str("110".into()));
    assert_eq!(root.get("mac").unwrap().as_str(), Some("52:54:00:aa:bb:01"));
    assert_eq!(root.get("b").unwrap().as_i64(), Some(16));
}

#[test]
fn syntax_error_is_located() {
    let err = parse("a: [1, 2\nb: 3\n", 0).unwrap_err();
    assert!(err.span.line >= 1, "{err:?}");
    assert!(!err.message.is_empty());
}

#[test]
fn byte_offsets_survive_non_ascii_text() {
    let text = "# é\nkey: value\n";
    let root = parse(text, 0).unwrap();
    let v = root.get("key").unwrap();
    assert_eq!(&text[v.span.offset as usize..][..5], "value");
}

#[test]
fn duplicate_keys_are_errors_at_the_second_key() {
    let err = parse("name: a\nmtu: 1\nname: b\n", 0).unwrap_err();
    assert_eq!(err.span.line, 3);
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let text = "[".repeat(100_000);
    assert!(parse(&text, 0).is_err());
    let text = format!(
        "{}1{}",
        "[".repeat(MAX_DEPTH + 5),
        "]".repeat(MAX_DEPTH + 5)
    );
    let err = parse(&text, 0).unwrap_err();
    assert!(err.message.contains("nesting"), "{err:?}");
}

#[test]
fn binary_garbage_does_not_panic() {
    let bytes: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let text = String::from_utf8_lossy(&bytes);
    // Either a syntax error or some scalar: never a panic.
    let _ = parse(&text, 0);
}

#[test]
fn every_document_of_a_stream_is_read_with_its_own_lines() {
    let text = "---\nkind: A\n---\n# nothing\n---\nkind: B\nx: [1]\n...\n";
    let docs = parse_all(text, 0).unwrap();
    assert_eq!(docs.len(), 2);
    assert_eq!(docs[1].get("kind").unwrap().as_str(), Some("B"));
    assert_eq!(docs[1].get("x").unwrap().span.line, 7);
    assert!(parse(text, 0).is_err());
    assert!(parse_all("", 0).unwrap().is_empty());
}

#[test]
fn merge_keys_and_aliases_expand() {
    let text = "base: &b {mtu: 9000, state: up}\niface:\n  <<: *b\n  mtu: 1500\n";
    let root = parse(text, 0).unwrap();
    let iface = root.get("iface").unwrap();
    assert_eq!(iface.get("mtu").unwrap().as_i64(), Some(1500));
    assert_eq!(iface.get("state").unwrap().as_str(), Some("up"));
}

#[test]
fn same_value_ignores_where_a_document_stands_but_not_its_keys_order() {
    let a = parse("interfaces:\n- name: bond0\n  mtu: 9000\n", 0).unwrap();
    // The same document lower in another file, in flow style.
    let b = parse("\n\n# moved\n{interfaces: [{name: bond0, mtu: 9000}]}\n", 1).unwrap();
    assert_ne!(a, b, "the spans differ");
    assert!(a.same_value(&b));
    let other_mtu = parse("interfaces:\n- name: bond0\n  mtu: 1500\n", 0).unwrap();
    assert!(!a.same_value(&other_mtu));
    let quoted = parse("interfaces:\n- name: bond0\n  mtu: '9000'\n", 0).unwrap();
    assert!(!a.same_value(&quoted), "a string is not the number");
    // The same JSON, written in another order: not the same document
    // (the plan then compares their JSON).
    let reordered = parse("interfaces:\n- mtu: 9000\n  name: bond0\n", 0).unwrap();
    assert!(!a.same_value(&reordered));
    assert_eq!(a.to_json(), reordered.to_json());
}

#[test]
fn get_all_finds_what_get_finds() {
    let root = parse("name: bond0\ntype: bond\n? [a]\n: list key\nmtu: 9000\n", 0).unwrap();
    let [mtu, name, missing, kind] = root.get_all(["mtu", "name", "absent", "type"]);
    assert_eq!(mtu, root.get("mtu"));
    assert_eq!(mtu.and_then(Node::as_i64), Some(9000));
    assert_eq!(name.and_then(Node::as_str), Some("bond0"));
    assert_eq!(kind, root.get("type"));
    assert!(missing.is_none());
    let scalar = parse("just text\n", 0).unwrap();
    assert_eq!(scalar.get_all(["name"]), [None]);
}
