//! The hand-written catalogues under tests/: bad inputs (each names the
//! code and line it must be reported at) and the gc corpus (each must give
//! nmstatectl's exact output).

use crate::common::*;

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
    // Codes no `check` input alone can trigger: I/O failures, the keyfile
    // codes of `import` (tests/import.rs exercises those), and what the
    // wires do, which needs observations or probe results beside the
    // inventory (crates/wires' unit tests, tests/wires.rs against lldpd in
    // namespaces, and the lab_wires target exercise those).
    // `target-unsupported` is `render --with`'s, not check's
    // (tests/network_data.rs exercises it); `node-unknown` is
    // `plan --running`'s (tests/plan.rs); `netbox-unmapped` is a
    // `netbox:` input's, said by the mapping (crates/netbox's unit tests,
    // tests/netbox.rs against a real NetBox).
    let unreachable = [
        "io",
        "target-unsupported",
        "node-unknown",
        "netbox-unmapped",
    ];
    let needs_observations = ["keyfile-", "lldp-", "observed-", "netverify-"];
    let missing: Vec<&str> = nodenet_codes()
        .into_iter()
        .filter(|c| {
            !seen.contains(*c)
                && !unreachable.contains(c)
                && !needs_observations.iter().any(|p| c.starts_with(p))
        })
        .collect();
    assert!(missing.is_empty(), "codes without a bad input: {missing:?}");
}

/// The `# fix: N: TEXT` lines of a bad input, in file order: line N (of
/// the file as written) becomes TEXT (one space after `N:` separates
/// them); several for one N give several lines.
fn fix_lines(text: &str) -> Vec<(usize, String)> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# fix:"))
        .map(|rest| {
            let (n, new) = rest.split_once(':').expect("`# fix: N: TEXT`");
            let n = n.trim().parse().expect("fix line number");
            (n, new.strip_prefix(' ').unwrap_or(new).to_string())
        })
        .collect()
}

/// The text with its fixes applied.
fn fixed(text: &str) -> String {
    let fixes = fix_lines(text);
    let count = text.lines().count();
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let new: Vec<&str> = fixes
            .iter()
            .filter(|(n, _)| *n == i + 1)
            .map(|(_, t)| t.as_str())
            .collect();
        if new.is_empty() {
            out.push(line);
        } else {
            out.extend(new);
        }
    }
    for (n, _) in &fixes {
        assert!((1..=count).contains(n), "a fix names line {n} of {count}");
    }
    out.join("\n") + "\n"
}

/// `(error codes, all codes)` that `check --format json` reports on a file.
fn reported(f: &std::path::Path) -> (Vec<String>, Vec<String>) {
    let o = run(nodenet().args(["check", "--format", "json"]).arg(f));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| {
        panic!(
            "{f:?}: exit {:?}, no JSON: {}",
            o.status.code(),
            String::from_utf8_lossy(&o.stderr)
        )
    });
    let diags = v["diagnostics"].as_array().cloned().unwrap_or_default();
    let code = |d: &serde_json::Value| d["code"].as_str().unwrap_or("?").to_string();
    (
        diags
            .iter()
            .filter(|d| d["severity"] == "error")
            .map(code)
            .collect(),
        diags.iter().map(code).collect(),
    )
}

#[test]
fn every_fixed_bad_input_no_longer_has_its_code() {
    let tmp = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    let mut fixed_files = 0;
    for f in files_under(&repo().join("tests/bad")) {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        if fix_lines(&text).is_empty() {
            continue;
        }
        fixed_files += 1;
        let (code, _) = expectations(&text).into_iter().next().expect("# expect:");
        // Same file name, in a directory of its own.
        let out = tmp.path().join(f.file_name().unwrap());
        std::fs::write(&out, fixed(&text)).unwrap();
        let (errors_before, _) = reported(&f);
        let (errors, all) = reported(&out);
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        if all.contains(&code) {
            failures.push(format!("{name}: fixed, still reports {code}: {all:?}"));
        }
        let new: Vec<&String> = errors
            .iter()
            .filter(|e| !errors_before.contains(e))
            .collect();
        if !new.is_empty() {
            failures.push(format!("{name}: the fix brings new errors {new:?}"));
        }
    }
    assert!(
        fixed_files >= 40,
        "only {fixed_files} bad inputs carry a fix"
    );
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn explain_gives_a_fixed_example_for_every_code_it_gives_a_failing_one_for() {
    let mut failures = Vec::new();
    let mut with_example = 0;
    for code in nodenet_codes() {
        let o = run(nodenet().args(["explain", code]));
        assert!(o.status.success(), "explain {code}: {o:?}");
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        if out.contains("(no example input") {
            continue;
        }
        with_example += 1;
        // The file explain shows: its fixed lines must be in the output.
        let file = out
            .lines()
            .find_map(|l| l.strip_prefix("An input that has it ("))
            .and_then(|l| l.strip_suffix("):"))
            .unwrap_or_else(|| panic!("explain {code}: no example file in\n{out}"));
        let bytes = std::fs::read(repo().join(file)).unwrap();
        let Ok(text) = String::from_utf8(bytes) else {
            // Not text: it cannot carry a `# fix:` comment.
            if !out.contains("(no fixed example") {
                failures.push(format!("{code}: {file} is not text, yet no note"));
            }
            continue;
        };
        let fixes = fix_lines(&text);
        if fixes.is_empty() {
            failures.push(format!("{code}: {file} has no `# fix:` line"));
            continue;
        }
        if !out.contains(&format!("Fixed ({file}, line")) {
            failures.push(format!("{code}: no `Fixed ({file}, …)` in\n{out}"));
        }
        for (_, new) in &fixes {
            if !out.lines().any(|l| {
                (l.starts_with('+') || l.starts_with(' '))
                    && l.split_once(" | ").is_some_and(|(_, t)| t == new)
            }) {
                failures.push(format!("{code}: the fixed line `{new}` is not shown"));
            }
        }
        if !out.contains(&format!("`nodenet check` no longer reports {code} on it.")) {
            failures.push(format!("{code}: explain does not say the fix clears it"));
        }
    }
    assert!(
        with_example >= 40,
        "only {with_example} codes have an example"
    );
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn nodenet_codes() -> Vec<&'static str> {
    nodenet_model::Code::ALL
        .iter()
        .map(|c| c.as_str())
        .collect()
}

#[test]
fn docs_are_explains_table_of_every_code() {
    let path = repo().join("docs/codes.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let o = run(nodenet().arg("explain"));
    assert!(o.status.success());
    let table = String::from_utf8(o.stdout).unwrap();
    assert_eq!(
        table.lines().count(),
        nodenet_model::Code::ALL.len() + 2,
        "{table}"
    );
    // The prose above the table is the file's own; the rest is generated.
    let head = &doc[..doc
        .find("| code | meaning |")
        .expect("docs/codes.md has the table")];
    let generated = format!("{head}{table}");
    if doc != generated && std::env::var_os("NODENET_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    assert!(
        doc == generated,
        "docs/codes.md differs from `nodenet explain` (NODENET_BLESS=1 writes it anew)"
    );
}

/// The NMState states of tests/gc-corpus: every one is accepted by
/// `nmstatectl gc` 2.2.62.
fn gc_corpus() -> Vec<std::path::PathBuf> {
    let files: Vec<_> = files_under(&repo().join("tests/gc-corpus"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "yml" || e == "yaml"))
        .collect();
    assert!(files.len() >= 60, "only {} corpus files", files.len());
    files
}

/// Connection types that NetworkManager 1.42 (Debian 12's, which CI
/// installs) predates: its keyfile parser answers exactly "invalid
/// connection type" for them, so nmcli cannot judge those keyfiles here.
/// Any other rejection still fails.
const NM_TYPES_NEWER_THAN_NMCLI: [&str; 3] = ["ipvlan", "hsr", "xfrm"];

#[test]
fn gc_corpus_output_equals_nmstatectl_byte_for_byte() {
    if skip_without(&["nmcli", "nmstatectl"]) {
        return;
    }
    let nmstatectl = tool("nmstatectl");
    let tmp = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for f in &gc_corpus() {
        let theirs = run(std::process::Command::new(&nmstatectl).arg("gc").arg(f));
        if !theirs.status.success() {
            failures.push(format!(
                "nmstatectl rejects {f:?}: {}",
                String::from_utf8_lossy(&theirs.stderr)
            ));
            continue;
        }
        let ours = run(nodenet().arg("gc").arg(f));
        if !ours.status.success() {
            failures.push(format!(
                "nodenet gc fails on {f:?}: {}",
                String::from_utf8_lossy(&ours.stderr)
            ));
            continue;
        }
        if ours.stdout != theirs.stdout {
            failures.push(format!(
                "{f:?}: nodenet gc differs from nmstatectl gc\n--- nodenet\n{}\n--- nmstatectl\n{}",
                String::from_utf8_lossy(&ours.stdout),
                String::from_utf8_lossy(&theirs.stdout)
            ));
            continue;
        }
        // `-o DIR` writes exactly those keyfiles, 0600, and NetworkManager
        // accepts every one.
        let dir = tmp.path().join(f.file_stem().unwrap());
        let written = run(nodenet().arg("gc").arg(f).arg("-o").arg(&dir));
        if !written.status.success() {
            failures.push(format!(
                "nodenet gc -o fails on {f:?}: {}",
                String::from_utf8_lossy(&written.stderr)
            ));
            continue;
        }
        let parsed: serde_yaml::Value = serde_yaml::from_slice(&theirs.stdout).unwrap();
        let pairs = parsed["NetworkManager"].as_sequence().unwrap();
        if files_under(&dir).len() != pairs.len() {
            failures.push(format!(
                "{f:?}: -o wrote {} files, nmstatectl printed {} keyfiles",
                files_under(&dir).len(),
                pairs.len()
            ));
        }
        for pair in pairs {
            let path = dir.join(pair[0].as_str().unwrap());
            let Ok(written) = std::fs::read_to_string(&path) else {
                failures.push(format!("{f:?}: -o did not write {:?}", pair[0]));
                continue;
            };
            let keyfile = pair[1].as_str().unwrap();
            if written != keyfile {
                failures.push(format!("{f:?}: -o wrote other bytes in {:?}", pair[0]));
            }
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            if mode != 0o600 {
                failures.push(format!("{f:?}: {:?} has mode {mode:o}", pair[0]));
            }
            let o = run(std::process::Command::new(tool("nmcli"))
                .args(["--offline", "connection", "modify", "connection.id", "x"])
                .stdin(std::fs::File::open(&path).unwrap()));
            let stderr = String::from_utf8_lossy(&o.stderr);
            let too_new = NM_TYPES_NEWER_THAN_NMCLI
                .iter()
                .any(|t| keyfile.lines().any(|l| l == format!("type={t}")))
                && stderr.contains("invalid connection type");
            if !o.status.success() && !too_new {
                failures.push(format!("nmcli rejects {:?} of {f:?}: {stderr}", pair[0]));
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

/// Every state `nmstatectl gc` accepts is one `nodenet check` accepts too
/// (warnings allowed): partial states (a VLAN whose base is not listed, a
/// bond whose ports are not, only `hostname:`, only `routes:`) included.
#[test]
fn every_gc_corpus_state_passes_check_without_an_error() {
    let mut failures = Vec::new();
    for f in &gc_corpus() {
        let o = run(nodenet().args(["check", "--format", "json"]).arg(f));
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(&o.stdout) else {
            failures.push(format!(
                "{name}: exit {:?}, no JSON: {}",
                o.status.code(),
                String::from_utf8_lossy(&o.stderr)
            ));
            continue;
        };
        let errors: Vec<String> = v["diagnostics"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|d| d["severity"] == "error")
            .map(|d| {
                format!(
                    "{}@{}:{} {}",
                    d["code"].as_str().unwrap_or("?"),
                    d["line"],
                    d["column"],
                    d["message"].as_str().unwrap_or("")
                )
            })
            .collect();
        if !errors.is_empty() || o.status.code() != Some(0) {
            failures.push(format!(
                "{name}: exit {:?}: {}",
                o.status.code(),
                errors.join(" | ")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} corpus state(s) rejected by check:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The corpus covers every interface kind and top-level section nmstate
/// 2.2 has, and the cases the issue names (absent/down states, LLDP, ECMP,
/// blackhole routes, partial states).
#[test]
fn gc_corpus_covers_every_interface_kind_and_section() {
    let mut kinds = std::collections::BTreeSet::new();
    let mut sections = std::collections::BTreeSet::new();
    let mut states = std::collections::BTreeSet::new();
    let mut route_types = std::collections::BTreeSet::new();
    let (mut lldp, mut ecmp, mut ovs_patch, mut ovs_bond) = (false, false, false, false);
    let (mut only_hostname, mut only_routes, mut only_dns) = (false, false, false);
    for f in &gc_corpus() {
        let v: serde_yaml::Value = serde_yaml::from_slice(&std::fs::read(f).unwrap()).unwrap();
        let top: Vec<&str> = v
            .as_mapping()
            .unwrap()
            .keys()
            .filter_map(|k| k.as_str())
            .collect();
        sections.extend(top.iter().map(|k| k.to_string()));
        only_hostname |= top == ["hostname"];
        only_routes |= top == ["routes"];
        only_dns |= top == ["dns-resolver"];
        for iface in v["interfaces"].as_sequence().into_iter().flatten() {
            if let Some(t) = iface["type"].as_str() {
                kinds.insert(t.to_string());
            }
            if let Some(s) = iface["state"].as_str() {
                states.insert(s.to_string());
            }
            lldp |= iface["lldp"]["enabled"].as_bool() == Some(true);
            ovs_patch |= iface["type"] == "ovs-interface" && iface["patch"]["peer"].is_string();
            ovs_bond |= iface["type"] == "ovs-bridge"
                && iface["bridge"]["port"]
                    .as_sequence()
                    .into_iter()
                    .flatten()
                    .any(|p| p["link-aggregation"].is_mapping());
        }
        let routes = v["routes"]["config"]
            .as_sequence()
            .cloned()
            .unwrap_or_default();
        for r in &routes {
            if let Some(t) = r["route-type"].as_str() {
                route_types.insert(t.to_string());
            }
        }
        ecmp |= routes.iter().enumerate().any(|(i, a)| {
            routes[i + 1..].iter().any(|b| {
                a["destination"] == b["destination"]
                    && a["table-id"] == b["table-id"]
                    && a["next-hop-address"] != b["next-hop-address"]
            })
        });
    }
    let want_kinds = [
        "ethernet",
        "bond",
        "vlan",
        "linux-bridge",
        "ovs-bridge",
        "ovs-interface",
        "veth",
        "vrf",
        "mac-vlan",
        "mac-vtap",
        "ipvlan",
        "infiniband",
        "dummy",
        "loopback",
    ];
    let missing: Vec<_> = want_kinds.iter().filter(|k| !kinds.contains(**k)).collect();
    assert!(missing.is_empty(), "no corpus state has type {missing:?}");
    let want_sections = [
        "hostname",
        "dns-resolver",
        "routes",
        "route-rules",
        "ovs-db",
        "interfaces",
    ];
    let missing: Vec<_> = want_sections
        .iter()
        .filter(|s| !sections.contains(**s))
        .collect();
    assert!(
        missing.is_empty(),
        "no corpus state has section {missing:?}"
    );
    for s in ["up", "down", "absent"] {
        assert!(states.contains(s), "no interface with state {s}");
    }
    assert!(route_types.contains("blackhole"), "no blackhole route");
    assert!(ovs_patch, "no OVS patch port");
    assert!(ovs_bond, "no OVS bond");
    assert!(lldp, "no interface with LLDP enabled");
    assert!(ecmp, "no ECMP route (one destination, several next hops)");
    assert!(only_hostname, "no state with only `hostname:`");
    assert!(only_routes, "no state with only `routes:`");
    assert!(only_dns, "no state with only `dns-resolver:`");
}
