//! The upstream schemas in `../shared/schemas` as validators: a CRD's
//! openAPIV3Schema made strict (the API server prunes unknown fields
//! silently: a typo there is a setting lost).

use std::path::PathBuf;

use serde_json::Value;

use super::repo;

pub fn shared_schema(name: &str) -> PathBuf {
    let p = repo().join("../shared/schemas").join(name);
    assert!(
        p.exists(),
        "{} is missing: the schema tests read ../shared/schemas beside the checkout",
        p.display()
    );
    p
}

/// The openAPIV3Schema of `version` in a CRD file, made strict: an object
/// that lists its properties takes no others unless it says so.
pub fn crd_schema(file: &str, version: &str) -> Value {
    let text = std::fs::read_to_string(shared_schema(file)).unwrap();
    let crd: Value = serde_yaml::from_str(&text).unwrap();
    let v = crd["spec"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == version)
        .unwrap_or_else(|| panic!("{file} has no version {version}"));
    let mut schema = v["schema"]["openAPIV3Schema"].clone();
    strict(&mut schema);
    schema
}

/// The openAPIV3Schema of `version` in a CRD file as the API server holds
/// an object to it: types, enums, patterns and required fields refused,
/// unknown fields left to pruning (not refused). `None` when the CRD does
/// not serve that version.
pub fn served_schema(file: &str, version: &str) -> Option<Value> {
    let text = std::fs::read_to_string(shared_schema(file)).unwrap();
    let crd: Value = serde_yaml::from_str(&text).unwrap();
    let v = crd["spec"]["versions"]
        .as_array()?
        .iter()
        .find(|v| v["name"] == version && v["served"] != false)?;
    let mut schema = v["schema"]["openAPIV3Schema"].clone();
    nullable(&mut schema);
    Some(schema)
}

/// OpenAPI's `nullable` as a null type, everywhere in a schema.
fn nullable(s: &mut Value) {
    match s {
        Value::Object(map) => {
            if map.get("nullable") == Some(&Value::Bool(true)) {
                if let Some(Value::String(t)) = map.get("type").cloned() {
                    map.insert("type".into(), serde_json::json!([t, "null"]));
                }
            }
            map.values_mut().for_each(nullable);
        }
        Value::Array(a) => a.iter_mut().for_each(nullable),
        _ => {}
    }
}

/// OpenAPI's structural schema as JSON Schema: unknown fields refused
/// (the API server would prune them silently: a typo there is a setting
/// lost), `nullable` as a null type.
pub fn strict(s: &mut Value) {
    let Some(map) = s.as_object_mut() else {
        return;
    };
    if map.get("nullable") == Some(&Value::Bool(true)) {
        if let Some(Value::String(t)) = map.get("type").cloned() {
            map.insert("type".into(), serde_json::json!([t, "null"]));
        }
    }
    let preserves = map.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
    if map.contains_key("properties") && !map.contains_key("additionalProperties") && !preserves {
        map.insert("additionalProperties".into(), Value::Bool(false));
    }
    for (k, v) in map.iter_mut() {
        match k.as_str() {
            "properties" => {
                if let Some(props) = v.as_object_mut() {
                    props.values_mut().for_each(strict);
                }
            }
            "items" | "additionalProperties" => strict(v),
            "allOf" | "anyOf" | "oneOf" => {
                if let Some(a) = v.as_array_mut() {
                    a.iter_mut().for_each(strict);
                }
            }
            _ => {}
        }
    }
}

pub fn validator(schema: &Value) -> jsonschema::Validator {
    jsonschema::validator_for(schema).expect("the schema compiles")
}

pub fn errors(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}
