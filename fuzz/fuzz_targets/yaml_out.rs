//! Differential: the YAML writer against serde_yaml's reader. Any JSON
//! value (from the input when it is JSON, else the input as a string, a
//! key and a list item) written by `yaml_out` reads back as itself.
#![no_main]
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value as J};

fuzz_target!(|data: &[u8]| {
    let values: Vec<J> = match serde_json::from_slice::<J>(data) {
        Ok(v) => vec![v],
        Err(_) => {
            let s = String::from_utf8_lossy(data).into_owned();
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
