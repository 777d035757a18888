//! Differential: the fast readers (plain block YAML, JSON) against
//! yaml-rust2. Wherever a fast reader takes a text, it gives yaml-rust2's
//! tree, every span included, or yaml-rust2's error.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Some((fast, yaml_rust2)) = nodenet_model::yaml::both_readers(text) {
        assert_eq!(
            format!("{fast:?}"),
            format!("{yaml_rust2:?}"),
            "the fast reader and yaml-rust2 differ on {text:?}"
        );
    }
});
