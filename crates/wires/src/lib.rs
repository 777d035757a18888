//! Wire verification: what the cables and switch ports really do, against
//! the inventory, before deploy. LLDP neighbours heard on each NIC
//! (`nodenet lldp`, `check --observed`) and tagged probe frames sent
//! between nodes on every planned VLAN (`nodenet netverify`). Frames are
//! raw Ethernet on the node's own NICs: no IP configuration is needed.

pub mod compare;
pub mod ether;
pub mod listen;
pub mod lldp;
pub mod netverify;
pub mod observation;
pub mod pcap;
pub mod socket;

/// Why a wire verification command could not run.
#[derive(Debug, thiserror::Error)]
pub enum WiresError {
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Input(String),
    #[error("could not put the NICs back as they were: {0}")]
    Restore(String),
}

/// A host or switch name without its domain, lower-cased: how names are
/// compared (a node's `hostname` may be short or fully qualified).
pub(crate) fn short_name(s: &str) -> String {
    s.split('.').next().unwrap_or(s).to_ascii_lowercase()
}

/// Reads one of the JSON files the wire commands write, by its `kind`:
/// anything else (another kind, no kind, not JSON) is refused with a
/// message that says what the file is not.
pub(crate) fn read_kind<T: serde::de::DeserializeOwned>(
    text: &str,
    kind: &str,
    what: &str,
) -> Result<T, String> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    match v.get("kind").and_then(|k| k.as_str()) {
        Some(k) if k == kind => {}
        Some(k) => return Err(format!("`kind: {k}`, not {what} ({kind})")),
        None => return Err(format!("no `kind` ({what} has `kind: {kind}`)")),
    }
    serde_json::from_value(v).map_err(|e| format!("{what}, but {e}"))
}

/// An inventory from text for the unit tests, refusing one with errors.
#[cfg(test)]
pub(crate) fn test_inventory(text: &str) -> nodenet_model::Inventory {
    let l = nodenet_model::load_texts(vec![("i.yaml".into(), text.into())]);
    assert!(
        l.diagnostics.iter().all(|d| !d.is_error()),
        "{:?}",
        l.diagnostics
    );
    l.inventory
}
