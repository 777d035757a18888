//! The hand-written catalogues under tests/: bad inputs (each names the
//! code and line it must be reported at) and the gc corpus (each must give
//! nmstatectl's exact output).

mod common;

use common::*;

/// `# expect: <code> <line>` lines at the top of a bad input.
fn expectations(text: &str) -> Vec<(String, u64)> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# expect:"))
        .map(|rest| {
            let mut parts = rest.split_whitespace();
            let code = parts.next().expect("code").to_string();
            let line = parts.next().expect("line").parse().expect("line number");
            (code, line)
        })
        .collect()
}

#[test]
fn every_bad_input_is_reported_with_its_code_at_its_line() {
    let dir = repo().join("tests/bad");
    let files = files_under(&dir);
    assert!(files.len() >= 40, "only {} bad inputs", files.len());
    let mut failures = Vec::new();
    for f in &files {
        let text = String::from_utf8_lossy(&std::fs::read(f).unwrap()).into_owned();
        let expected = expectations(&text);
        assert!(!expected.is_empty(), "{f:?} has no `# expect:` line");
        let o = run(nodenet().args(["check", "--format", "json"]).arg(f));
        if o.status.code() != Some(1) {
            failures.push(format!(
                "{f:?}: exit {:?}, stderr {}",
                o.status.code(),
                String::from_utf8_lossy(&o.stderr)
            ));
            continue;
        }
        let v = json(&o);
        let diags = v["diagnostics"].as_array().unwrap();
        for (code, line) in expected {
            let found = diags
                .iter()
                .any(|d| d["code"] == code.as_str() && d["line"] == line);
            if !found {
                let got: Vec<String> = diags
                    .iter()
                    .map(|d| format!("{}@{}", d["code"], d["line"]))
                    .collect();
                failures.push(format!(
                    "{}: expected {code} at line {line}, got {got:?}",
                    f.display()
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_error_code_is_exercised_by_the_catalogue() {
    let mut seen = std::collections::BTreeSet::new();
    for f in files_under(&repo().join("tests/bad")) {
        for (code, _) in expectations(&std::fs::read_to_string(&f).unwrap_or_default()) {
            seen.insert(code);
        }
    }
    // Codes no `check` input can trigger: I/O failures, the render-time
    // warning about a password that is not available, and the keyfile
    // codes of `import` (tests/import.rs exercises those).
    let unreachable = ["io", "credentials-unresolved"];
    let missing: Vec<&str> = nodenet_codes()
        .into_iter()
        .filter(|c| !seen.contains(*c) && !unreachable.contains(c) && !c.starts_with("keyfile-"))
        .collect();
    assert!(missing.is_empty(), "codes without a bad input: {missing:?}");
}

fn nodenet_codes() -> Vec<&'static str> {
    nodenet_model::Code::ALL
        .iter()
        .map(|c| c.as_str())
        .collect()
}

#[test]
fn readme_explains_every_code() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    for code in nodenet_model::Code::ALL {
        let row = format!("| `{}` | {} |", code.as_str(), code.explain());
        assert!(readme.contains(&row), "README lacks the row: {row}");
    }
}

#[test]
fn gc_corpus_output_equals_nmstatectl_byte_for_byte() {
    let nmstatectl = tool("nmstatectl");
    let files: Vec<_> = files_under(&repo().join("tests/gc-corpus"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "yml" || e == "yaml"))
        .collect();
    assert!(files.len() >= 20, "only {} corpus files", files.len());
    let tmp = tempfile::tempdir().unwrap();
    for f in &files {
        let theirs = run(std::process::Command::new(&nmstatectl).arg("gc").arg(f));
        assert!(
            theirs.status.success(),
            "nmstatectl rejects {f:?}: {}",
            String::from_utf8_lossy(&theirs.stderr)
        );
        let ours = run(nodenet().arg("gc").arg(f));
        assert!(
            ours.status.success(),
            "{f:?}: {}",
            String::from_utf8_lossy(&ours.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&ours.stdout),
            String::from_utf8_lossy(&theirs.stdout),
            "{f:?}"
        );
        // `-o DIR` writes exactly those keyfiles, 0600, and NetworkManager
        // accepts every one.
        let dir = tmp.path().join(f.file_stem().unwrap());
        assert!(run(nodenet().arg("gc").arg(f).arg("-o").arg(&dir))
            .status
            .success());
        let parsed: serde_yaml::Value = serde_yaml::from_slice(&theirs.stdout).unwrap();
        let pairs = parsed["NetworkManager"].as_sequence().unwrap();
        assert_eq!(files_under(&dir).len(), pairs.len(), "{f:?}");
        for pair in pairs {
            let written = std::fs::read_to_string(dir.join(pair[0].as_str().unwrap())).unwrap();
            assert_eq!(written, pair[1].as_str().unwrap(), "{f:?}");
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.join(pair[0].as_str().unwrap()))
                .unwrap()
                .permissions()
                .mode()
                & 0o777;
            assert_eq!(mode, 0o600);
            let o = run(std::process::Command::new(tool("nmcli"))
                .args(["--offline", "connection", "modify", "connection.id", "x"])
                .stdin(std::fs::File::open(dir.join(pair[0].as_str().unwrap())).unwrap()));
            assert!(
                o.status.success(),
                "nmcli rejects {:?} of {f:?}: {}",
                pair[0],
                String::from_utf8_lossy(&o.stderr)
            );
        }
    }
}
