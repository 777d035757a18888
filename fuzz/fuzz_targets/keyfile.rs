//! NetworkManager keyfiles through the parser and the importer (to an
//! NMState state): findings, never a panic. Input: one or more files
//! separated by a line `--- next ---`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;

fuzz_target!(|data: &[u8]| {
    let mut files = Vec::new();
    let mut rest = data;
    let sep = b"\n--- next ---\n";
    while let Some(i) = rest.windows(sep.len()).position(|w| w == sep) {
        files.push(rest[..i].to_vec());
        rest = &rest[i + sep.len()..];
        if files.len() == 8 {
            break;
        }
    }
    files.push(rest.to_vec());
    let named: Vec<(PathBuf, Vec<u8>)> = files
        .into_iter()
        .enumerate()
        .map(|(i, b)| (PathBuf::from(format!("p{i}.nmconnection")), b))
        .collect();
    for (i, (_, bytes)) in named.iter().enumerate() {
        let _ = nodenet_import::keyfile::parse("f.nmconnection", bytes, i as u32);
    }
    let imported = nodenet_import::import_bytes(named, false);
    // What is imported is an NMState document (an object).
    assert!(imported.state.is_object() || imported.state.is_null());
});
