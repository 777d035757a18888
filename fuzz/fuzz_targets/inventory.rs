//! Any text through the loader (every input kind nodenet reads) and the
//! checker: diagnostics, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The first line names the file (agent-config is recognised by name).
    let (name, body) = match text.split_once('\n') {
        Some((n, b)) if n.len() < 64 && !n.contains('/') && n.ends_with(".yaml") => (n, b),
        _ => ("inventory.yaml", text),
    };
    // `count: 27777` is a legitimate fleet (the limit is 100,000), checked
    // in seconds, and a timeout under the fuzzer's instrumentation; fleet
    // size is the bench's business (nodenet-bench), bugs are the fuzzer's.
    if large_count(body) {
        return;
    }
    let loaded = nodenet_model::load_texts(vec![(name.to_string(), body.to_string())]);
    let report = nodenet_check::check(&loaded.inventory, loaded.diagnostics);
    // Every diagnostic is located inside a file that exists.
    for d in &report.diagnostics {
        if let Some(span) = d.span {
            assert!(loaded.sources.get(span.file).is_some(), "{d:?}");
        }
    }
});

/// Whether a host entry asks for more than 200 copies (`count: N`).
fn large_count(text: &str) -> bool {
    text.match_indices("count").any(|(at, _)| {
        let rest = text[at + 5..].trim_start_matches([' ', '"', '\'', ':', '\t']);
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.len() > 3 || digits.parse::<u32>().is_ok_and(|n| n > 200)
    })
}
