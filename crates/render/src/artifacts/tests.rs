use super::*;

/// As kubernetes-nmstate scales it (its `pkg/node/nodes_test.go` has
/// the default 50 % of 5 nodes as 3): of 3 masters 2, of 1 node 1,
/// and 0 is 1.
#[test]
fn percentages_round_up_as_kubernetes_nmstate_scales_them() {
    let at_once = |v: J, n| nodes_at_once(&v, n).unwrap();
    assert_eq!(at_once(json!("50%"), 5), 3);
    assert_eq!(at_once(json!("50%"), 3), 2);
    assert_eq!(at_once(json!("50%"), 1), 1);
    assert_eq!(at_once(json!("34%"), 3), 2);
    assert_eq!(at_once(json!("33%"), 3), 1);
    assert_eq!(at_once(json!(0), 3), 1);
    assert_eq!(at_once(json!(2), 3), 2);
    assert_eq!(at_once(json!("2"), 3), 2);
    assert_eq!(nodes_at_once(&json!("half"), 3), None);
    // Masters go one at a time whatever the part; workers' rest does not.
    assert_eq!(max_unavailable("master", false), json!(1));
    assert_eq!(max_unavailable("worker", true), json!(1));
    assert_eq!(max_unavailable("worker", false), json!("50%"));
}

/// Filled in as `envsubst` does (plain text replacement), every value
/// reads back as the same string (serde_yaml's reader here; PyYAML and
/// go-yaml in the CLI tests).
#[test]
fn placeholders_take_any_one_line_value() {
    let doc = json!({
        "pullSecret": placeholder("PULL_SECRET"),
        "hosts": [{"name": "a", "bmc": {"password": placeholder("PW"), "username": "u"}}],
    });
    let text = placeholders(&yaml(&doc));
    assert!(
        text.contains("pullSecret: |2-\n  ${PULL_SECRET}\n")
            && text.contains("    password: |2-\n      ${PW}\n"),
        "{text}"
    );
    for value in [
        r#"{"auths":{"quay.io":{"auth":"dXNlcjpwYXNz","email":"o'neil@example.com"}}}"#,
        "p@ss: #word",
        " leading and trailing ",
        "- 'it''s' \"q\" \\ {a} [b] &c *d !e |f >g %h @i `j",
        "---",
        "",
    ] {
        let filled = text
            .replace("${PULL_SECRET}", value)
            .replace("${PW}", value);
        let back: J = serde_yaml::from_str(&filled).unwrap_or_else(|e| panic!("{e}: {filled}"));
        assert_eq!(back["pullSecret"], json!(value), "{filled}");
        assert_eq!(
            back["hosts"][0]["bmc"]["password"],
            json!(value),
            "{filled}"
        );
        assert_eq!(back["hosts"][0]["bmc"]["username"], json!("u"), "{filled}");
    }
}

/// Spliced YAML must parse to the same value as emitting the whole
/// document (checked with serde_yaml's parser, not our splicer).
#[test]
fn embedding_equals_full_emission() {
    let state = json!({"interfaces": [{"name": "eth0", "type": "ethernet", "ipv4": {"address": [{"ip": "10.0.0.1", "prefix-length": 24}]}}], "x": "multi\nline\n"});
    let text = yaml(&state);
    let envelope = json!({"hosts": [{"name": "a", "networkConfig": TOKEN}, {"name": "b", "networkConfig": TOKEN}], "secret": {"nmstate": TOKEN}});
    let spliced = embed_all(&yaml(&envelope), &[&text, &text], Embed::Mapping);
    let spliced = embed(&spliced, &text, Embed::Literal);
    let parsed: J = serde_yaml::from_str(&spliced).unwrap();
    assert_eq!(parsed["hosts"][0]["networkConfig"], state);
    assert_eq!(parsed["hosts"][1]["networkConfig"], state);
    assert_eq!(parsed["secret"]["nmstate"], J::String(text.clone()));
}
