//! `import --into`: put an imported state into an inventory as a host's
//! `network`, adding the host when it is new.
//!
//! The inventory is rewritten through serde_yaml, so its comments and
//! formatting are not kept (the README says so); the write is atomic.

use std::path::Path;

use serde_yaml::{Mapping, Value as Y};

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

/// Returns whether an existing host was updated (else it was added).
pub fn add_host(
    inventory: &Path,
    host: &str,
    state: &serde_json::Value,
) -> Result<bool, IntoError> {
    let shown = inventory.display().to_string();
    let io = |source| IntoError::Io {
        path: shown.clone(),
        source,
    };
    let mut doc: Y = match std::fs::read_to_string(inventory) {
        Ok(text) => {
            serde_yaml::from_str(&text).map_err(|_| IntoError::NotInventory(shown.clone()))?
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut m = Mapping::new();
            m.insert("nodenet".into(), "v1".into());
            m.insert("hosts".into(), Y::Sequence(Vec::new()));
            Y::Mapping(m)
        }
        Err(e) => return Err(io(e)),
    };
    if doc.get("nodenet").is_none() {
        return Err(IntoError::NotInventory(shown));
    }
    let network: Y = serde_yaml::to_value(state).expect("JSON converts to YAML");
    let map = doc
        .as_mapping_mut()
        .ok_or_else(|| IntoError::NotInventory(shown.clone()))?;
    let hosts = map
        .entry("hosts".into())
        .or_insert_with(|| Y::Sequence(Vec::new()));
    let Some(list) = hosts.as_sequence_mut() else {
        return Err(IntoError::NotInventory(shown));
    };
    let existing = list
        .iter_mut()
        .find(|h| h.get("name").and_then(Y::as_str) == Some(host));
    let replaced = existing.is_some();
    match existing {
        Some(h) => {
            if let Some(m) = h.as_mapping_mut() {
                m.insert("network".into(), network);
            }
        }
        None => {
            let mut m = Mapping::new();
            m.insert("name".into(), host.into());
            m.insert("network".into(), network);
            list.push(Y::Mapping(m));
        }
    }
    let text = serde_yaml::to_string(&doc).expect("YAML serialises");
    nodenet_model::write_atomic(inventory, text.as_bytes()).map_err(io)?;
    Ok(replaced)
}
