use super::*;
use serde_json::json;

fn same(v: &J) {
    assert_eq!(
        to_string(v),
        serde_yaml::to_string(v).unwrap(),
        "differs from serde_yaml for {v}"
    );
}

/// Strings a YAML 1.1 reader would take for something else.
const YAML11: &[&str] = &[
    "<<",
    "0x_a",
    "0x_",
    "0b-1",
    "0o-17",
    "0X1F",
    "-0B11",
    "0O17",
    "-0b_1",
    "0_e9",
    ".5_0",
    "yes",
    "y",
    "Y",
    "on",
    "off",
    "NO",
    "no",
    "On",
    "OFF",
    "52:54:00:12:00:01",
    "1:20",
    "0:0",
    "1_000",
    "-1:30",
    "190:20:30.15",
    "1_0.5",
    "1:2:3:4:5:6:7",
    "+1_0",
    "1__",
    "2024-01-01",
    "2001-12-14t21:59:43.10-05:00",
    "=",
];

#[test]
fn scalars_quote_exactly_like_serde_yaml() {
    for s in [
        "52:54:00:12:00:01",
        "fe80::1",
        "2001:db8::/64",
        "192.168.10.21",
        "10.0.0.0/8",
        "1.2.3",
        "1.2e3.4",
        "1/2",
        "0x1/2",
        "190:20:30.15",
        "100",
        "1.5",
        "1e3",
        "0x10",
        "0o7",
        "0b1",
        "true",
        "True",
        "yes",
        "y",
        "on",
        "off",
        "null",
        "~",
        "",
        "a b",
        " a",
        "a ",
        "-a",
        "- a",
        "a#b",
        "#a",
        "a:b",
        "a: b",
        "a:",
        "[a]",
        "{a}",
        "*a",
        "&a",
        "!a",
        "|a",
        ">a",
        "%a",
        "@a",
        "'a",
        "a'b",
        "\"a",
        "802.3ad",
        "layer3+4",
        "0.0.0.0/0",
        "192.168.1.1",
        "1_000",
        "+1",
        ".5",
        "-1",
        "1.",
        "0.",
        "1:20",
        ".inf",
        ".nan",
        "NaN",
        "inf",
        "infinity",
        "<<",
        "a,b",
        ",a",
        "a;b",
        "a=b",
        "a=",
        "50%",
        "%",
        "$",
        "$a",
        "${BMC_PASSWORD}",
        "${a b}",
        "{a}b",
        "a{b}",
        "a}",
        "1,000",
        "1;2",
        "1=2",
        "1%",
        "0x1,2",
        "0x",
        "0xg",
        "0x1f",
        "0o8",
        "0b102",
        "-0x1",
        "true,",
        "data:text/plain;charset=utf-8;base64,aW50ZXJmYWNlczoKLSBuYW1lOiBlbnMxZjA=",
        "data:,a%20b",
        "_",
        "_a",
        "__nodenet_embedded__",
        "_1",
        "_1_000",
        "/",
        "/etc/nmstate/openshift/w-1.yml",
        "/1",
        "/1:20",
        "//",
        "a\tb",
        "é",
        "0",
        "00",
        "1e",
        "1e+3",
        "E5",
        "e3",
        "a?",
        "?a",
        "-",
        "a/b",
        "bond0.110",
        "eno1",
        "a\nb",
        "1/2",
        "10.0.0.1/24",
        "+",
        "1+1",
        "1-1",
        "-.5",
        "1e-3",
        "0:0",
        "Y",
        "NO",
        "aa:bb:cc:dd:ee:ff",
        "52:54:00:12:00:9a",
        "1:60",
        "-1a",
        "+1.5",
        "-1.5e3",
        "+0x1",
        "_1",
        "ona",
        "yess",
    ] {
        if YAML11.contains(&s) {
            continue;
        }
        same(&json!({ s: s }));
        same(&json!([s]));
        same(&json!(s));
    }
}

#[test]
fn strings_yaml11_reads_otherwise_are_quoted_and_read_back_as_strings() {
    for s in YAML11 {
        let text = to_string(&json!({ "k": s, *s: [s] }));
        assert!(text.contains(&format!("k: '{s}'")), "{text}");
        assert!(text.contains(&format!("'{s}':\n- '{s}'")), "{text}");
        let back: J = serde_yaml::from_str(&text).unwrap();
        assert_eq!(back, json!({ "k": s, *s: [s] }));
    }
}

#[test]
fn host_states_take_the_fast_path_and_match_serde_yaml() {
    let state = json!({
        "interfaces": [
            {"name": "bond0", "type": "bond", "state": "up", "mtu": 9000,
             "link-aggregation": {"mode": "802.3ad", "options": {"miimon": "100"}, "port": ["eno2", "eno3"]},
             "ipv4": {"enabled": true, "dhcp": false, "address": [{"ip": "10.0.0.5", "prefix-length": 24}]},
             "ipv6": {"enabled": false}, "empty": {}, "none": [], "nothing": null},
            {"name": "bond0.110", "type": "vlan", "vlan": {"base-iface": "bond0", "id": 110},
             "mac-address": "52:54:00:12:00:9a"}
        ],
        "routes": {"config": [{"destination": "0.0.0.0/0", "next-hop-address": "10.0.0.1", "metric": -1}]},
        "dns-resolver": {"config": {"server": ["10.0.0.1", "fe80::1"], "search": []}},
    });
    let mut fast = String::new();
    assert!(emit_top(&state, &mut fast).is_some(), "fell back");
    same(&state);
}

#[test]
fn structures_match_serde_yaml() {
    same(&json!({
        "interfaces": [
            {"name": "bond0", "type": "bond", "state": "up", "mtu": 9000,
             "link-aggregation": {"mode": "802.3ad", "options": {"miimon": "100"}, "port": ["eno2", "eno3"]},
             "ipv4": {"enabled": true, "dhcp": false, "address": [{"ip": "10.0.0.5", "prefix-length": 24}]},
             "ipv6": {"enabled": false}, "empty": {}, "none": [], "nothing": null}
        ],
        "routes": {"config": [{"destination": "0.0.0.0/0", "next-hop-address": "10.0.0.1", "metric": -1}]},
        "dns-resolver": {"config": {"server": ["10.0.0.1"], "search": []}},
        "nested": [[1, 2], []],
        "float": 1.5,
        "big": 18446744073709551615u64,
    }));
    same(&json!({}));
    same(&json!([]));
    same(&json!([{}, [], {"a": [{"b": {"c": ["d"]}}]}]));
}

/// Found by fuzzing: a string with a Unicode line separator, which
/// libyaml breaks lines at, did not read back inside a mapping.
/// A plain scalar with a quote inside that YAML 1.1 reads as a
/// timestamp: quoting it must double the quote (found by
/// yaml_out_readers.rs).
#[test]
fn quotes_inside_strings_quoted_for_yaml11_are_doubled() {
    let s = "2001-12-14t21:59:43.10-05:000b'null>!+";
    let text = to_string(&json!({ "k": s }));
    assert_eq!(text, "k: '2001-12-14t21:59:43.10-05:000b''null>!+'\n");
    let v = json!({ "k": s, s: [s] });
    let back: J = serde_yaml::from_str(&to_string(&v)).unwrap();
    assert_eq!(back, v);
}

#[test]
fn unicode_line_breaks_read_back() {
    for s in [
        "a\u{2028}b: c",
        "a\u{2029}b",
        "a\u{85}b",
        "x\u{2028}'0 \u{245}b",
    ] {
        let v = json!({ "name": s, "list": [s], s: s });
        let back: J = serde_yaml::from_str(&to_string(&v)).unwrap();
        assert_eq!(back, v);
        same(&v);
    }
}
