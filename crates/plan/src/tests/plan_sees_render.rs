//! The plan's promise, as a property over generated pairs: `plan OLD NEW`
//! finds nothing to do if and only if every file `render` writes for OLD
//! and for NEW is the same (keyfiles, install-config, agent-config,
//! MachineConfigs, policies, BareMetalHosts, network_data.json, netplan,
//! Metal3 templates). NEW is each example inventory (and the lab's) with
//! one leaf of its hosts, templates or cluster removed, changed or added.
//!
//! `render` and `plan` are called as the CLI calls them (load, check,
//! render into a directory; load, check NEW, plan). The comparison is of
//! the files on disk, not of anything the plan computes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_yaml::Value;

const NAME: &str = "cluster.yaml";

fn examples() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files: Vec<PathBuf> = [
        "examples/lacp-vlan.yaml",
        "examples/pxe-active-backup.yaml",
        "examples/static-masters-br-ex.yaml",
        "examples/dual-stack.yaml",
        "examples/ipv6-only.yaml",
        "examples/lab/three-nodes.yaml",
        "examples/workers-100.yaml",
        "crates/cli/tests/lab-data/lab.yaml",
        "crates/cli/tests/lab-data/openshift.yaml",
        "crates/cli/tests/lab-data/rehearsal.yaml",
    ]
    .iter()
    .map(|f| root.join(f))
    .collect();
    files.retain(|f| f.is_file());
    assert_eq!(files.len(), 10, "the example and lab inventories moved");
    files
}

/// Every file of a render of `text`, by path (the manifest, which records
/// the inputs' hashes, and topology.html, a view of check's findings with
/// their lines, left out); `None` when check or render refuses it.
fn render(text: &str, dir: &Path) -> Option<BTreeMap<String, Vec<u8>>> {
    let loaded = nodenet_model::load_texts(vec![(NAME.into(), text.into())]);
    let mut report = nodenet_check::check(&loaded.inventory, loaded.diagnostics);
    report.refuse_for_render(&loaded.inventory);
    if report.has_errors() {
        return None;
    }
    let provenance = nodenet_render::Provenance::new(vec![NAME.into()], &loaded.sources);
    let replace = nodenet_render::Replace {
        force: true,
        also: nodenet_render::Also {
            network_data: true,
            netplan: true,
            metal3: true,
        },
        ..Default::default()
    };
    nodenet_render::render(&loaded.inventory, &report, dir, &provenance, replace).ok()?;
    let mut files = BTreeMap::new();
    read_tree(dir, dir, &mut files);
    files.remove("manifest.json");
    files.remove("topology.html");
    Some(files)
}

fn read_tree(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            read_tree(root, &path, out);
        } else {
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            out.insert(rel, std::fs::read(&path).unwrap());
        }
    }
}

/// Whether `plan OLD NEW` finds nothing to do, and the errors `check`
/// finds in the policies its rollout writes (kubernetes-nmstate applies
/// them as they are, and `nodenet apply` refuses a state check refuses);
/// `None` when NEW does not check clean (plan refuses it).
fn plan_is_empty(old: &str, new: &str) -> Option<(bool, Vec<String>)> {
    let old = nodenet_model::load_texts(vec![(NAME.into(), old.into())]);
    let new = nodenet_model::load_texts(vec![(NAME.into(), new.into())]);
    let report = nodenet_check::check(&new.inventory, new.diagnostics);
    if report.has_errors() {
        return None;
    }
    let plan = crate::plan(&old.inventory, &new.inventory).ok()?;
    let policies: Vec<(String, String)> = crate::rollout::rollout(&plan, &new.inventory)
        .files(&new.inventory)
        .into_iter()
        .filter(|f| f.path.starts_with("nncp/"))
        .map(|f| {
            (
                f.path.clone(),
                String::from_utf8_lossy(&f.content).into_owned(),
            )
        })
        .collect();
    let mut refused = Vec::new();
    for (path, text) in policies {
        let loaded = nodenet_model::load_texts(vec![(path.clone(), text)]);
        let report = nodenet_check::check(&loaded.inventory, loaded.diagnostics);
        refused.extend(
            report
                .diagnostics
                .iter()
                .filter(|d| d.is_error())
                .map(|d| format!("{path}: {}: {}", d.code.as_str(), d.message)),
        );
    }
    Some((plan.is_empty(), refused))
}

/// A value of the same kind that means something else.
fn changed(v: &Value) -> Option<Value> {
    Some(match v {
        Value::Bool(b) => Value::Bool(!b),
        Value::Number(n) => match n.as_u64() {
            Some(0) => Value::from(1),
            Some(1500) => Value::from(9000),
            Some(n) => Value::from(n + 1),
            None => return None,
        },
        Value::String(s) => Value::String(changed_text(s)),
        _ => return None,
    })
}

fn changed_text(s: &str) -> String {
    let swaps = [
        ("fast", "slow"),
        ("slow", "fast"),
        ("up", "down"),
        ("layer3+4", "layer2"),
        ("layer2", "layer2+3"),
        ("802.3ad", "active-backup"),
        ("active-backup", "balance-xor"),
        ("master", "worker"),
        ("worker", "master"),
        ("Managed", "Disabled"),
        ("Disabled", "Unmanaged"),
        ("UEFI", "legacy"),
    ];
    if let Some((_, to)) = swaps.iter().find(|(from, _)| *from == s) {
        return to.to_string();
    }
    if let Ok(ip) = s.parse::<std::net::IpAddr>() {
        return match ip {
            std::net::IpAddr::V4(v4) => {
                let mut o = v4.octets();
                o[3] = o[3].wrapping_add(1);
                std::net::Ipv4Addr::from(o).to_string()
            }
            std::net::IpAddr::V6(v6) => {
                let mut o = v6.octets();
                o[15] = o[15].wrapping_add(1);
                std::net::Ipv6Addr::from(o).to_string()
            }
        };
    }
    if let Ok(n) = s.parse::<u64>() {
        return (n + 1).to_string();
    }
    // A MAC: its last byte.
    if s.len() == 17 && s.matches(':').count() == 5 {
        let (head, last) = s.split_at(15);
        let b = u8::from_str_radix(last, 16).unwrap_or(0).wrapping_add(1);
        return format!("{head}{b:02x}");
    }
    format!("{s}x")
}

/// Keys an experienced operator adds to an interface or a bond's options.
const ADDED: &[(&str, &str)] = &[
    ("mtu", "9000"),
    ("state", "down"),
    ("lldp", "{enabled: true}"),
    ("ipv6", "{enabled: true, autoconf: true, dhcp: true}"),
];
const ADDED_OPTIONS: &[(&str, &str)] = &[
    ("lacp_rate", "fast"),
    ("xmit_hash_policy", "layer3+4"),
    ("miimon", "100"),
    ("updelay", "200"),
];

enum Edit {
    Remove,
    Change(Value),
    Add(Value, Value),
}

/// Every one-leaf edit of the document's hosts, templates and cluster:
/// (where, edit).
fn edits(doc: &Value) -> Vec<(Vec<Value>, Edit)> {
    let mut out = Vec::new();
    let Value::Mapping(top) = doc else {
        return out;
    };
    for section in ["hosts", "templates", "cluster"] {
        if let Some(v) = top.get(section) {
            walk(v, vec![Value::from(section)], &mut out);
        }
    }
    out
}

fn walk(v: &Value, at: Vec<Value>, out: &mut Vec<(Vec<Value>, Edit)>) {
    match v {
        Value::Mapping(m) => {
            let is_iface = m.contains_key("name") && m.contains_key("type");
            let is_options = at.last().and_then(Value::as_str) == Some("options");
            let adds: &[(&str, &str)] = match (is_iface, is_options) {
                (true, _) => ADDED,
                (_, true) => ADDED_OPTIONS,
                _ => &[],
            };
            for (k, text) in adds {
                if !m.contains_key(*k) {
                    out.push((
                        at.clone(),
                        Edit::Add(Value::from(*k), serde_yaml::from_str(text).unwrap()),
                    ));
                }
            }
            for (k, child) in m {
                let mut here = at.clone();
                here.push(k.clone());
                walk(child, here, out);
            }
        }
        Value::Sequence(items) => {
            for (i, child) in items.iter().enumerate() {
                let mut here = at.clone();
                here.push(Value::from(i as u64));
                walk(child, here, out);
            }
        }
        leaf => {
            // A host's name is who it is: renaming one is a host removed
            // and another added, which plan says of itself.
            out.push((at.clone(), Edit::Remove));
            if let Some(c) = changed(leaf) {
                out.push((at, Edit::Change(c)));
            }
        }
    }
}

fn apply(doc: &Value, at: &[Value], edit: &Edit) -> Value {
    let mut doc = doc.clone();
    let (last, parents) = at.split_last().unwrap();
    let mut v = &mut doc;
    for k in parents {
        v = match (v, k) {
            (Value::Mapping(m), k) => m.get_mut(k).unwrap(),
            (Value::Sequence(s), Value::Number(i)) => &mut s[i.as_u64().unwrap() as usize],
            _ => unreachable!(),
        };
    }
    match (v, edit) {
        (Value::Mapping(m), Edit::Remove) => {
            m.remove(last);
        }
        (Value::Sequence(s), Edit::Remove) => {
            s.remove(last.as_u64().unwrap() as usize);
        }
        (Value::Mapping(m), Edit::Change(c)) => {
            m.insert(last.clone(), c.clone());
        }
        (Value::Sequence(s), Edit::Change(c)) => s[last.as_u64().unwrap() as usize] = c.clone(),
        (v, Edit::Add(k, val)) => {
            let target = match (v, last) {
                (Value::Mapping(m), k) => m.get_mut(k).unwrap(),
                (Value::Sequence(s), Value::Number(i)) => &mut s[i.as_u64().unwrap() as usize],
                _ => unreachable!(),
            };
            if let Value::Mapping(m) = target {
                m.insert(k.clone(), val.clone());
            }
        }
        _ => unreachable!("edits are made of mappings and sequences"),
    }
    doc
}

fn describe(at: &[Value], edit: &Edit) -> String {
    let path: Vec<String> = at
        .iter()
        .map(|k| match k {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            _ => "?".into(),
        })
        .collect();
    let what = match edit {
        Edit::Remove => "removed".to_string(),
        Edit::Change(v) => format!("changed to {}", serde_yaml::to_string(v).unwrap().trim()),
        Edit::Add(k, v) => format!(
            "added {}: {}",
            k.as_str().unwrap_or("?"),
            serde_json::to_string(v).unwrap()
        ),
    };
    format!("{} {what}", path.join("."))
}

/// What one edit came to.
enum Outcome {
    /// check (NEW must be clean) or render refused it.
    Refused,
    /// plan and render agree; `same`: nothing changes.
    Agreed {
        same: bool,
    },
    Wrong(String),
}

#[test]
fn plan_finds_nothing_exactly_when_render_writes_the_same_files() {
    let scratch = tempfile::tempdir().unwrap();
    let mut pairs = 0;
    let mut unchanged_pairs = 0;
    let mut refused = 0;
    let mut wrong = Vec::new();
    for file in examples() {
        let original: Value =
            serde_yaml::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        // OLD is spelled as NEW is (both written by serde_yaml): the
        // edit is the only difference.
        let old = serde_yaml::to_string(&original).unwrap();
        let old_files = render(&old, &scratch.path().join("old"))
            .unwrap_or_else(|| panic!("{} renders", file.display()));
        // Each edit on its own (both cores; a directory each).
        use rayon::prelude::*;
        let outcomes: Vec<Outcome> = edits(&original)
            .into_par_iter()
            .enumerate()
            .map(|(i, (at, edit))| {
                let new = serde_yaml::to_string(&apply(&original, &at, &edit)).unwrap();
                let Some((empty, policy_errors)) = plan_is_empty(&old, &new) else {
                    return Outcome::Refused;
                };
                if let Some(e) = policy_errors.first() {
                    return Outcome::Wrong(format!(
                        "{}: {}: check refuses a policy the plan writes: {e}",
                        file.file_name().unwrap().to_string_lossy(),
                        describe(&at, &edit)
                    ));
                }
                let dir = scratch.path().join(format!("new-{i}"));
                let Some(new_files) = render(&new, &dir) else {
                    return Outcome::Refused;
                };
                let _ = std::fs::remove_dir_all(&dir);
                let differ: Vec<&String> = old_files
                    .keys()
                    .chain(new_files.keys())
                    .filter(|k| old_files.get(*k) != new_files.get(*k))
                    .collect();
                if empty == differ.is_empty() {
                    return Outcome::Agreed { same: empty };
                }
                Outcome::Wrong(format!(
                    "{}: {}: plan {} but render {}",
                    file.file_name().unwrap().to_string_lossy(),
                    describe(&at, &edit),
                    if empty {
                        "finds nothing"
                    } else {
                        "finds changes"
                    },
                    match differ.first() {
                        Some(f) => format!("changes {f} and {} more", differ.len() - 1),
                        None => "writes the same files".into(),
                    }
                ))
            })
            .collect();
        for o in outcomes {
            match o {
                Outcome::Refused => refused += 1,
                Outcome::Agreed { same } => {
                    pairs += 1;
                    unchanged_pairs += usize::from(same);
                }
                Outcome::Wrong(w) => {
                    pairs += 1;
                    wrong.push(w);
                }
            }
        }
    }
    eprintln!(
        "plan vs render: {pairs} pairs ({unchanged_pairs} rendering the same), {refused} edits refused by check or render, {} wrong",
        wrong.len()
    );
    // Enough pairs, of both kinds, for the property to mean something.
    assert!(pairs >= 300, "only {pairs} pairs");
    assert!(unchanged_pairs >= 1, "no edit rendered the same");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
