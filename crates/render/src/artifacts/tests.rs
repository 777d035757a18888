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

/// install-config.yaml made of hosts' items made one by one (on every
/// core) is the document made whole: placeholders, states (one with an
/// empty line in a block scalar), hosts without a state, fields passed
/// through, for every subset of hosts kept, and for a cluster given only
/// as hosts.
#[test]
fn install_config_in_pieces_is_the_document_made_whole() {
    // Items of `platform.baremetal.hosts`, at 4 spaces.
    let item = |i: usize| {
        let role = if i < 3 { "master" } else { "worker" };
        let mut s = format!(
            "    - name: host-{i}
      role: {role}
      bootMACAddress: 52:54:00:00:00:0{i}
      bmc:
        address: redfish-virtualmedia://10.1.0.{i}/redfish/v1/Systems/{i}
        username: admin
        password: secret-{i}
      rootDeviceHints:
        deviceName: /dev/sda
"
        );
        if i != 4 {
            s.push_str(&format!(
                "      networkConfig:
        interfaces:
        - name: eno1
          type: ethernet
          state: up
          description: |
            line one

            line three
          ipv4:
            enabled: true
            address:
            - ip: 10.0.0.{i}
              prefix-length: 24
"
            ));
        }
        s
    };
    let hosts: String = (0..6).map(item).collect();
    let whole = format!(
        "apiVersion: v1
baseDomain: example.com
metadata:
  name: c
proxy:
  httpProxy: http://u:pw@proxy:3128
networking:
  machineNetwork:
  - cidr: 10.0.0.0/24
platform:
  baremetal:
    apiVIPs: [10.0.0.100]
    ingressVIPs: [10.0.0.101]
    hosts:
{hosts}pullSecret: '{{}}'
sshKey: ssh-ed25519 AAAA
"
    );
    let only_hosts = format!("platform:\n  baremetal:\n    hosts:\n{hosts}");
    for text in [whole, only_hosts] {
        let loaded = nodenet_model::load_texts(vec![("install-config.yaml".into(), text.clone())]);
        let inv = &loaded.inventory;
        assert_eq!(inv.hosts.len(), 6, "{text}");
        let texts = intent_texts(inv);
        assert_eq!(texts.iter().filter(|t| t.is_some()).count(), 5);
        for keep in [vec![0, 1, 2, 3, 4, 5], vec![1, 4], vec![5], vec![]] {
            // Made in pieces whenever there are hosts (else whole).
            assert_eq!(hosts_envelope(inv, &keep).is_some(), !keep.is_empty());
            let made = install_config_of(inv, &texts, &keep);
            assert_eq!(
                made,
                install_config_serially(inv, &texts, &keep),
                "hosts {keep:?}"
            );
            assert_eq!(made.matches("- name: host-").count(), keep.len(), "{made}");
        }
    }
}

/// A document made around one marked item, each item emitted alone and
/// indented into its place, is the document emitted whole (states
/// embedded, placeholders written), at the top and deeper in.
#[test]
fn an_envelope_with_its_items_is_the_document_made_whole() {
    let state = yaml(&json!({"interfaces": [{"name": "eth0", "description": "one\n\nthree\n"}]}));
    let items = [
        json!({"name": "a", "networkConfig": TOKEN, "bmc": {"password": placeholder("PW_A")}}),
        json!({"name": "b", "list": [1, 2], "empty": {}}),
        json!({"name": "c", "networkConfig": TOKEN, "text": "multi\nline\n"}),
    ];
    let states = [Some(state.as_str()), None, Some(state.as_str())];
    let around = |list: J| json!({"apiVersion": "v1", "spec": {"deep": {"hosts": list.clone()}}, "top": list, "pullSecret": placeholder("PULL")});
    // The mark in one list, the other list whole: both ways.
    let doc = |marked: J| {
        let mut d = around(J::Array(items.to_vec()));
        d["spec"]["deep"]["hosts"] = marked;
        d
    };
    let envelope = Envelope::of(&doc(J::Array(vec![Envelope::mark()]))).expect("marked");
    let made: Vec<String> = items
        .iter()
        .zip(states)
        .map(|(i, s)| envelope.item(i.clone(), s))
        .collect();
    // The top list's states come after the deep list's in the file.
    let whole_states: Vec<&str> = states.iter().chain(&states).flatten().copied().collect();
    let whole = embed_all(
        &placeholders(&yaml(&doc(J::Array(items.to_vec())))),
        &whole_states,
        Embed::Mapping,
    );
    let top_states: Vec<&str> = states.iter().flatten().copied().collect();
    let top_whole = embed_all(
        &envelope.with(made.iter().map(String::as_str)),
        &top_states,
        Embed::Mapping,
    );
    assert_eq!(top_whole, whole);
    assert!(Envelope::of(&json!({"hosts": []})).is_none());
}
