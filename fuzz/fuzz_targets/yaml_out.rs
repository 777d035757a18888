//! Differential: the YAML writer against serde_yaml's reader. Any JSON
//! value (from the input when it is JSON, else the input as a string, a
//! key and a list item) written by `yaml_out` reads back as itself. And a
//! string written plain (unquoted) must be a string to YAML 1.1 readers
//! too: it matches none of PyYAML's implicit resolvers (the patterns of
//! yaml/resolver.py) nor what go-yaml v2 resolves (its words, and numbers
//! as Go parses them once every `_` is dropped). The real readers are
//! run on many strings by crates/render/src/yaml_out_readers.rs.
#![no_main]
use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use regex::Regex;
use serde_json::{json, Value as J};

/// PyYAML's implicit resolvers (bool, float, int, merge, null, timestamp,
/// value), anchored.
static PYYAML: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        r"^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$",
        r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$",
        r"^(?:<<)$",
        r"^(?:~|null|Null|NULL|)$",
        r"^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$",
        r"^(?:=)$",
    ]
    .iter()
    .map(|p| Regex::new(p).unwrap())
    .collect()
});

/// go-yaml v2 (resolve.go): its words, then numbers as strconv parses
/// them with every `_` removed (ParseInt base 0, its float pattern), and
/// timestamps in the layouts it tries.
static GO_YAML2: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        r"^(?:y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF|~|null|Null|NULL|<<|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        r"^[-+]?(?:0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|[0-9]+)$",
        r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$",
        // Its layouts: 2006-1-2, 2006-1-2[Tt ]15:4:5.999999999[Z07:00].
        r"^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt ][0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(?:\.[0-9]+)?(?:Z|[-+][0-9]{2}:[0-9]{2})?)?$",
    ]
    .iter()
    .map(|p| Regex::new(p).unwrap())
    .collect()
});

/// `s`, written plain, is a string to PyYAML and go-yaml v2.
fn plain_string_in_yaml11(s: &str) {
    if let Some(r) = PYYAML.iter().find(|r| r.is_match(s)) {
        panic!("{s:?} is written plain but PyYAML resolves it by {r}");
    }
    // `_` is dropped for numbers only (GO_YAML2[1] and [2]), which go-yaml
    // tries only on scalars that begin like one (its resolve table).
    let dropped = s.replace('_', "");
    let number_like = s.starts_with(|c: char| c.is_ascii_digit() || "+-.".contains(c));
    if let Some(r) = GO_YAML2.iter().enumerate().find_map(|(i, r)| {
        let numeric = matches!(i, 1 | 2) && s.contains('_') && number_like;
        (r.is_match(s) || (numeric && r.is_match(&dropped))).then_some(r)
    }) {
        panic!("{s:?} is written plain but go-yaml v2 resolves it by {r}");
    }
}

fuzz_target!(|data: &[u8]| {
    let values: Vec<J> = match serde_json::from_slice::<J>(data) {
        Ok(v) => vec![v],
        Err(_) => {
            let s = String::from_utf8_lossy(data).into_owned();
            let alone = nodenet_render::yaml_out::to_string(&J::String(s.clone()));
            if alone.strip_suffix('\n') == Some(s.as_str()) {
                plain_string_in_yaml11(&s);
            }
            vec![
                json!({ "name": s, "list": [s, 1, true], "nested": {"k": s} }),
                J::Object(serde_json::Map::from_iter([(
                    s.clone(),
                    J::String(s.clone()),
                )])),
                J::String(s),
            ]
        }
    };
    for v in values {
        // Floats are not required to read back bit-identical in YAML.
        if has_float(&v) {
            continue;
        }
        let text = nodenet_render::yaml_out::to_string(&v);
        let back: J =
            serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("unreadable: {e}\n{text}"));
        assert_eq!(back, v, "written as:\n{text}");
    }
});

fn has_float(v: &J) -> bool {
    match v {
        J::Number(n) => n.is_f64(),
        J::Array(a) => a.iter().any(has_float),
        J::Object(m) => m.values().any(has_float),
        _ => false,
    }
}
