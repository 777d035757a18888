use super::super::compared::{self, agree_one_edit_away, slow};
use super::super::{Node, YamlError};
use super::*;

fn fast(text: &str) -> Option<Result<Vec<Node>, YamlError>> {
    compared::fast(read, text)
}

#[track_caller]
fn taken_alike(text: &str) {
    compared::taken_alike(read, text)
}

/// An NMState host as people write it (and as install-config carries it).
const STATE: &str = "\
interfaces:
- name: ens1f0
  type: ethernet
  state: up
  mac-address: \"b8:ce:f6:00:00:00\"
  mtu: 9000
- name: bond0
  type: bond
  link-aggregation:
    mode: 802.3ad
    options:
      miimon: '100'
      lacp_rate: fast   # LACPDUs every second
    port:
    - ens1f0
    - ens1f1
  ipv6:
    enabled: true
    address:
      - ip: 2001:db8::10
        prefix-length: 64
      - ip: fe80::1
        prefix-length: 64

# routes
routes:
  config:
  - destination: 0.0.0.0/0
    next-hop-address: 10.0.0.1
    metric: 100
dns-resolver:
  config:
    server:
    -   10.0.0.2
    search: []
";

#[test]
fn plain_block_yaml_is_read_as_yaml_rust2_reads_it() {
    taken_alike(STATE);
    let plain = STATE.replace("    search: []\n", "");
    // Items of a sequence at a deeper column, as a piece of an
    // install-config's hosts starts.
    let indented: String = plain.lines().map(|l| format!("        {l}\n")).collect();
    taken_alike(&format!(
        "    - name: host-0\n      networkConfig:\n{indented}    - name: host-1\n"
    ));
    taken_alike("- a\n- 'it''s'\n- \"x: y # not a comment\"   # a comment\n- ~\n- 12\n- true\n");
    taken_alike("a: 1\nb:\n  c: x\n  d:\n  - p\n  - q: 1\n    r: 2\ne: f\n");
    taken_alike(
        "bmc:\n  address: redfish-virtualmedia+https://bmc-0/redfish/v1/Systems/1\n  url: a#b\n",
    );
    taken_alike("no-newline-at-the-end: value");
    // Lists of scalars and empty mappings on one line.
    taken_alike("a: [x, \"y\", 'z']\nb: []\nc: [ p ,q ]\nd: [r,]\ne: {}\nf:\n- [s, t]\n- []\n- { }\ng: [10.0.0.1, fe80::1, a:b]   # c\nh: [o - p, o -p]\n");
    // Documents of a stream, the first marked as NMState's examples are.
    taken_alike("---\na: 1\n---  # the second\n- b\n---\n---\nc: d\n");
}

#[test]
fn what_the_fast_reader_does_not_take_goes_to_yaml_rust2() {
    let long_key = format!("{}: 1\n", "k".repeat(1100));
    for text in [
        long_key.as_str(),
        "",
        "# only a comment\n",
        "scalar\n",
        "a: [1, [2]]\n",
        "a: [a: b]\n",
        "a: [1,\n  2]\n",
        "a: [1, 2] x\n",
        "a: [1, 2]#c\n",
        "a: [1,,2]\n",
        "a: [,]\n",
        "a: [-1]\n",
        "a: [1 # c\n",
        "a: [o -]\n",
        "a: [o   -, p]\n",
        "a: {b: 1}\n",
        "a: |\n  text\n",
        "a: >\n  text\n",
        "a: &x 1\nb: *x\n",
        "a: !!str 1\n",
        "a: plain\n  continued\n",
        "a:\nb: 1\n",
        "a:\n",
        "- \n- x\n",
        "- - x\n",
        "a: \"esc\\\"aped\"\n",
        "a: \"two\n  lines\"\n",
        "\"quoted key\": 1\n",
        "? complex\n: key\n",
        "<<: {a: 1}\n",
        "a: -1\n",
        "a:\tb\n",
        "a: b\r\n",
        "a: é\n",
        "a: b\0c\n",
        "- x\0\n",
        "a: \u{1}\n",
        "a: b\u{7f}\n",
        "--- a: 1\n",
        "a: 1\n...\n",
        "a: 1\n  b: 2\n",
        "a:\n    b: 1\n  c: 2\n",
        "a: b: c\n",
        "a: b:\n",
        "- a\nb: 1\n",
        "a: 1\n- b\n",
        "a: \"x\" y\n",
        "a: 'x'#c\n",
        "key:value\n",
    ] {
        compared::declined(read, text);
    }
}

#[test]
fn a_duplicate_key_read_fast_is_the_same_error_at_the_same_place() {
    let text = "name: a\nmtu: 1\nname: b\n";
    let err = fast(text).expect("taken").unwrap_err();
    assert_eq!(format!("{err:?}"), slow(text).unwrap_err());
}

/// Every text one edit away from plain documents (a byte dropped, a
/// byte of YAML's own put in, a line indented or not): wherever the
/// fast reader takes one, it gives yaml-rust2's tree or error.
#[test]
fn one_edit_from_plain_yaml_the_two_readers_agree() {
    let plain = STATE.replace("    search: []\n", "");
    let seeds = [
        plain.as_str(),
        "a: 1\nb:\n  c: x\n  d:\n  - p\n  - q: 1\n    r: 2\n  - s\ne: 'f'\n",
        "- name: w\n  role: worker\n  list:\n    - a\n    - b: \"1\"\n      c: 2\n- x\n",
        "---\nkind: A\nspec:\n  x: 1\n---\n- y\n",
        "dns:\n  server: [10.0.0.2, 'b', \"c\"]\n  search: []\n  opts: {}\nlist:\n- [x, y]\n",
    ];
    let inserts = [
        " ", "-", ":", "#", "'", "\"", "\n", "- ", ": ", "a", "---\n", "[", "]", ",", "{", "}",
    ];
    let (taken, checked) = agree_one_edit_away(read, &seeds, &inserts);
    // Most edits leave plain YAML: the comparison is not vacuous.
    assert!(taken > checked / 4, "{taken} of {checked}");
}
