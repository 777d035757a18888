use super::*;

fn serial(text: &str) -> Result<Vec<Node>, String> {
    parse_at(text, 0, Base::default()).map_err(|e| format!("{e:?}"))
}

/// An install-config-like document: `n` hosts in a block sequence at
/// `indent` under `hosts:` (at `key_indent`), each with an item written
/// in one of several styles.
fn document(n: usize, key_indent: usize, indent: usize) -> String {
    let k = " ".repeat(key_indent);
    let i = " ".repeat(indent);
    let mut s = format!(
        "apiVersion: v1\n# comment\nplatform:\n  baremetal:\n{k}apiVIPs: [10.0.0.5]\n{k}hosts:\n"
    );
    for h in 0..n {
        match h % 5 {
                0 => s.push_str(&format!(
                    "{i}- name: host-{h}\n{i}  role: worker\n{i}  networkConfig:\n{i}    interfaces:\n{i}    - name: eth0\n{i}      ipv4: {{enabled: true, address: [{{ip: 10.0.{}.{}, prefix-length: 24}}]}}\n",
                    h / 250,
                    h % 250 + 1
                )),
                1 => s.push_str(&format!(
                    "{i}-   name: 'host-{h}'\n{i}    # inside\n\n{i}    description: |\n{i}      line one\n{i}      - not an item\n{i}    password: \"p*ss: #{h}\"\n"
                )),
                2 => s.push_str(&format!("{i}- {{name: host-{h}, role: master, bootMACAddress: \"52:54:00:00:00:{:02x}\"}}\n", h % 256)),
                3 => s.push_str(&format!("{i}- name: hôst-{h}\n{i}  plain: a value\n{i}    continued here\n")),
                _ => s.push_str(&format!("{i}-\n{i}  name: host-{h}\n{i}  list:\n{i}  - a\n{i}  - b\n")),
            }
    }
    s.push_str(&format!(
        "{k}provisioningNetwork: Disabled\n{k}description: café — après\nsshKey: ssh-ed25519 AAAA\n"
    ));
    s
}

/// The split parse gives the serial parse's tree, spans included, for
/// items at the key's indentation and deeper, in every style above.
#[test]
fn the_split_parse_is_the_serial_parse() {
    for (key_indent, indent) in [(4, 4), (4, 6), (0, 0), (2, 4)] {
        let text = document(12000, key_indent, indent);
        assert!(text.len() > MIN_BYTES, "{}", text.len());
        let split = parse_in_parallel(&text, 0).expect("split");
        assert_eq!(Ok(split), serial(&text), "indent {key_indent}/{indent}");
    }
}

/// What a piece cannot parse alone sends the text to the serial parse.
#[test]
fn what_cannot_be_split_is_parsed_serially() {
    let text = document(12000, 4, 4);
    // An alias in one piece to an anchor in another.
    let aliased = text
        .replacen("role: worker", "role: &r worker", 1)
        .replace("role: master", "role: *r");
    assert!(parse_in_parallel(&aliased, 0).is_none());
    assert!(serial(&aliased).is_ok());
    // A quoted scalar over several lines, one looking like an item.
    let at = text.len() / 2;
    let cut = text[at..].find("\n    - ").unwrap() + at;
    let quoted = format!(
        "{}\n    - name: \"a\n    - b\"{}",
        &text[..cut],
        &text[cut..]
    );
    assert!(parse_in_parallel(&quoted, 0).is_none());
    // Errors are the serial parse's.
    let broken = text.replacen("role: master", "role: [master", 1);
    assert!(parse_in_parallel(&broken, 0).is_none());
    assert!(serial(&broken).is_err());
    // Several documents, tabs and small texts are not split.
    assert!(parse_in_parallel(&format!("{text}---\na: 1\n"), 0).is_none());
    assert!(parse_in_parallel(&text.replacen("# comment", "#\tcomment", 1), 0).is_none());
    assert!(parse_in_parallel(&document(10, 4, 4), 0).is_none());
}
