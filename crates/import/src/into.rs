//! `import --into`: put an imported state into an inventory as a host's
//! `network`, adding the host when it is new.
//!
//! The file is edited in place: only the host's `network` block (or the
//! new host's entry) is written, every other byte (comments, flow maps,
//! order) stays as it was. Where the layout leaves no block to edit (the
//! host written as one flow map, a flow `hosts` list with entries), the
//! file is rewritten whole, which loses its comments and layout: the
//! caller is told, and the original is kept beside it as `<file>.bak`.
//! Every write is atomic.

use std::path::{Path, PathBuf};

use serde_yaml::{Mapping, Value as Y};

use nodenet_model::edit::{block_end, dash_before, host_entry, splice};
use nodenet_model::yaml::{self, Node};

#[derive(Debug, thiserror::Error)]
pub enum IntoError {
    #[error("cannot access {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{0} is not a nodenet inventory (`nodenet: v1` with a `hosts` list)")]
    NotInventory(String),
}

/// What `add_host` did.
#[derive(Debug, PartialEq, Eq)]
pub struct Added {
    /// An existing host was updated (else it was added).
    pub replaced: bool,
    /// The file could not be edited in place and was rewritten whole;
    /// the original is at this path.
    pub rewritten: Option<PathBuf>,
}

pub fn add_host(
    inventory: &Path,
    host: &str,
    state: &serde_json::Value,
) -> Result<Added, IntoError> {
    let shown = inventory.display().to_string();
    let io = |source| IntoError::Io {
        path: shown.clone(),
        source,
    };
    let text = match std::fs::read_to_string(inventory) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let text = format!("nodenet: v1\nhosts:\n{}", new_entry(host, state, 0));
            nodenet_model::write_atomic(inventory, text.as_bytes()).map_err(io)?;
            return Ok(Added {
                replaced: false,
                rewritten: None,
            });
        }
        Err(e) => return Err(io(e)),
    };
    let root = yaml::parse(&text, 0).map_err(|_| IntoError::NotInventory(shown.clone()))?;
    if root.get("nodenet").is_none() {
        return Err(IntoError::NotInventory(shown));
    }
    let replaced = host_entry(&root, host).is_some();
    match edit_in_place(&text, &root, host, state) {
        Some(edited) => {
            nodenet_model::write_atomic(inventory, edited.as_bytes()).map_err(io)?;
            Ok(Added {
                replaced,
                rewritten: None,
            })
        }
        None => {
            let backup = PathBuf::from(format!("{}.bak", inventory.display()));
            nodenet_model::write_atomic(&backup, text.as_bytes()).map_err(io)?;
            let whole = rewrite(&text, host, state)
                .ok_or_else(|| IntoError::NotInventory(shown.clone()))?;
            nodenet_model::write_atomic(inventory, whole.as_bytes()).map_err(io)?;
            Ok(Added {
                replaced,
                rewritten: Some(backup),
            })
        }
    }
}

/// `state` as a block under `network:`, each line indented by `indent`.
fn network_block(state: &serde_json::Value, indent: usize) -> String {
    let body = serde_yaml::to_string(state).expect("JSON serialises to YAML");
    let pad = " ".repeat(indent);
    body.lines().map(|l| format!("{pad}{l}\n")).collect()
}

/// A new `hosts` entry whose dash is at `indent`.
fn new_entry(host: &str, state: &serde_json::Value, indent: usize) -> String {
    let pad = " ".repeat(indent);
    let name = serde_yaml::to_string(host).expect("a string serialises");
    format!(
        "{pad}- name: {}\n{pad}  network:\n{}",
        name.trim_end(),
        network_block(state, indent + 4)
    )
}

/// The text with the host's network written in, or `None` when the
/// layout leaves no block to edit.
fn edit_in_place(text: &str, root: &Node, host: &str, state: &serde_json::Value) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let line_of = |n: &Node| n.span.line as usize - 1;
    let col_of = |n: &Node| n.span.column as usize - 1;
    let Some((hosts_key, hosts)) = root.entry("hosts") else {
        // No host list yet: one at the end.
        let mut out = text.to_string();
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str("hosts:\n");
        out.push_str(&new_entry(host, state, 0));
        return Some(out);
    };
    let items = hosts.as_seq()?;
    let (start, end, replacement) = match host_entry(root, host) {
        Some(entry) => {
            let first_key = entry.as_map()?.first()?.0.clone();
            let key_col = col_of(&first_key);
            // A flow map (`- {name: a, …}`) has no block to edit: before
            // a block map's first key there is only its dash.
            let before = lines[line_of(&first_key)].get(..key_col)?.trim();
            if !(before.is_empty() || before == "-") {
                return None;
            }
            match entry.entry("network") {
                Some((key, _)) => {
                    if col_of(key) != key_col {
                        return None;
                    }
                    // The value's lines: a block beneath the key, or a
                    // flow value from the key's line on (continued on
                    // deeper-indented lines).
                    let first = line_of(key);
                    let last = block_end(&lines, first, key_col);
                    let prefix = lines[first].get(..key_col)?;
                    let block = format!("{prefix}network:\n{}", network_block(state, key_col + 2));
                    (first, last + 1, block)
                }
                None => {
                    let dash_col = key_col.checked_sub(2)?;
                    let last = block_end(&lines, line_of(entry), dash_col);
                    let block = format!(
                        "{}network:\n{}",
                        " ".repeat(key_col),
                        network_block(state, key_col + 2)
                    );
                    (last + 1, last + 1, block)
                }
            }
        }
        None => match items.last() {
            Some(last_item) => {
                let line = lines[line_of(last_item)];
                let dash_col = dash_before(line, col_of(last_item))?;
                let last = block_end(&lines, line_of(last_item), dash_col);
                (last + 1, last + 1, new_entry(host, state, dash_col))
            }
            None => {
                // `hosts: []` or `hosts:` with nothing: a block list.
                let at = line_of(hosts_key);
                let prefix = lines[at].get(..col_of(hosts_key))?;
                let block = format!(
                    "{prefix}hosts:\n{}",
                    new_entry(host, state, col_of(hosts_key))
                );
                (at, at + 1, block)
            }
        },
    };
    Some(splice(&lines, start, end, &replacement))
}

/// The whole file through serde_yaml (comments and layout lost).
fn rewrite(text: &str, host: &str, state: &serde_json::Value) -> Option<String> {
    let mut doc: Y = serde_yaml::from_str(text).ok()?;
    let network: Y = serde_yaml::to_value(state).expect("JSON converts to YAML");
    let map = doc.as_mapping_mut()?;
    let hosts = map
        .entry("hosts".into())
        .or_insert_with(|| Y::Sequence(Vec::new()));
    let list = hosts.as_sequence_mut()?;
    match list
        .iter_mut()
        .find(|h| h.get("name").and_then(Y::as_str) == Some(host))
    {
        Some(h) => {
            h.as_mapping_mut()?.insert("network".into(), network);
        }
        None => {
            let mut m = Mapping::new();
            m.insert("name".into(), host.into());
            m.insert("network".into(), network);
            list.push(Y::Mapping(m));
        }
    }
    Some(serde_yaml::to_string(&doc).expect("YAML serialises"))
}

#[cfg(test)]
mod tests;
