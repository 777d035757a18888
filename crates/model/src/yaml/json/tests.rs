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

/// A NodeNetworkState list as `oc get nns -o json` writes it (serde's
/// and Go's pretty form: two spaces, `": "`).
const NNS: &str = r#"{
  "apiVersion": "v1",
  "items": [
    {
      "apiVersion": "nmstate.io/v1beta1",
      "kind": "NodeNetworkState",
      "metadata": {"name": "worker-0", "labels": {}},
      "status": {
        "currentState": {
          "interfaces": [
            {"name": "bond0", "type": "bond", "state": "up", "mtu": 9000,
             "link-aggregation": {"mode": "802.3ad", "port": ["ens1f0", "ens1f1"],
                                  "options": {"miimon": "100", "lacp_rate": "fast"}},
             "ipv4": {"enabled": true, "dhcp": false,
                      "address": [{"ip": "10.1.0.1", "prefix-length": 8}]},
             "ipv6": {"enabled": false}},
            {"name": "lo", "type": "loopback", "mac-address": "00:00:00:00:00:00",
             "ipv6": {"address": [{"ip": "::1", "prefix-length": 128}]}}
          ],
          "routes": {"config": [], "running": [{"destination": "0.0.0.0/0", "metric": -1,
                     "table-id": 254, "weight": 1.5e0}]},
          "dns-resolver": {"config": {"server": ["10.0.0.2"], "search": []}}
        },
        "lastSuccessfulUpdateTime": "2026-12-07T12:00:00Z"
      }
    }
  ],
  "kind": "List",
  "metadata": {"resourceVersion": ""}
}
"#;

#[test]
fn json_is_read_as_yaml_rust2_reads_it() {
    taken_alike(NNS);
    // Compact, as `-o json` of a kubectl plugin or `jq -c` writes it.
    let compact: String = NNS
        .lines()
        .map(str::trim)
        .collect::<Vec<_>>()
        .join("")
        .replace(": ", ":")
        .replace(", ", ",");
    taken_alike(&compact);
    taken_alike("[]");
    taken_alike("{}\n\n");
    taken_alike("  [ 1 , -2 , 0.5 , 3e10 , -1E-2 , 0 , true , false , null ]  \n");
    taken_alike("[\n1,\n2\n]\n");
    taken_alike("{\"a\" : {\"b\":\n1}, \"c: d # e\": \"f, [g] {h} # i\", \"\": \"\"}");
    taken_alike("[[[]], [{}], {\"x\": [[1]]}]");
}

#[test]
fn a_duplicate_key_read_as_json_is_the_same_error_at_the_same_place() {
    let text = "{\n  \"name\": \"a\",\n  \"name\": \"b\"\n}\n";
    let err = fast(text).expect("taken").unwrap_err();
    assert_eq!(format!("{err:?}"), slow(text).unwrap_err());
}

#[test]
fn what_the_json_reader_does_not_take_goes_to_yaml_rust2() {
    let long_key = format!("{{\"{}\": 1}}", "k".repeat(1100));
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    for text in [
        long_key.as_str(),
        deep.as_str(),
        "",
        "\"a string\"",
        "1",
        "a: 1\n",
        "{\"a\": \"esc\\\"aped\"}",
        "{\"a\": \"\\u00e9\"}",
        "{\"a\": 1,}",
        "[1,]",
        "[01]",
        "[+1]",
        "[.5]",
        "[1.]",
        "[1e]",
        "[NaN]",
        "[word]",
        "{a: 1}",
        "{'a': 1}",
        "{\"a\"\n: 1}",
        "{\"a\": 1} # c",
        "{\"a\": 1}\n{\"b\": 2}",
        "{\"a\": 1}\n---\n",
        "{\"a\":\t1}",
        "{\"a\": 1}\r\n",
        "{\"é\": 1}",
        "{\"a\": \"two\nlines\"}",
        "[1 2]",
        "{\"a\" 1}",
        "{\"a\": 1 \"b\": 2}",
        "[1, [2]",
        "{\"a\": [1}",
        "[&x 1, *x]",
        "[!!str 1]",
    ] {
        compared::declined(read, text);
    }
}

/// Every text one edit away from JSON documents (a byte dropped, a byte
/// of JSON's or YAML's own put in): wherever the JSON reader takes one,
/// it gives yaml-rust2's tree or error.
#[test]
fn one_edit_from_json_the_two_readers_agree() {
    let seeds = [
        NNS,
        "{\"a\": [1, -2.5e3, true, null], \"b\": {\"c\": \"d e\"}, \"f\": []}\n",
        "[\n  {\"x\": {}},\n  [\"y\", 0]\n]",
    ];
    let inserts = [
        " ", "\n", "-", ":", "#", "'", "\"", ",", "[", "]", "{", "}", "a", "0", ".", "e",
    ];
    let (taken, checked) = agree_one_edit_away(read, &seeds, &inserts);
    // Many edits leave JSON (in a string, a space): not vacuous.
    assert!(taken > checked / 10, "{taken} of {checked}");
}

#[test]
fn numbers_are_json_numbers() {
    for n in ["0", "-0", "12", "-1.5", "1e3", "1E+3", "2.5e-10"] {
        assert!(json_number(n.as_bytes()), "{n}");
    }
    for n in [
        "", "-", "01", "+1", ".5", "1.", "1e", "1e+", "0x1", "1_000", "--1",
    ] {
        assert!(!json_number(n.as_bytes()), "{n}");
    }
}
