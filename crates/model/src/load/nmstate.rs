//! A bare NMState state: one host named after its file, applied as nmstate
//! applies it (partial: interfaces it does not name are left as they are).

use crate::inventory::*;
use crate::yaml::{FileId, Node, Span};

/// Top-level sections of nmstate's `NetworkState`.
pub(crate) const SECTIONS: &[&str] = &[
    "interfaces",
    "routes",
    "route-rules",
    "dns-resolver",
    "hostname",
    "ovs-db",
    "ovn",
    "description",
];

/// A mapping with one of nmstate's sections (`description` alone says
/// nothing); other keys are nmstate's to report.
pub(crate) fn looks_like(root: &Node) -> bool {
    root.as_map().unwrap_or_default().iter().any(|(k, _)| {
        k.as_str()
            .is_some_and(|k| k != "description" && SECTIONS.contains(&k))
    })
}

pub(crate) fn load(root: &Node, file: FileId, name: String) -> Inventory {
    let span = Span {
        file,
        line: 1,
        column: 1,
        offset: 0,
        len: 1,
    };
    let mut host = Host::new(Located::new(name, span), InputKind::NmState);
    host.network = Some(root.clone());
    Inventory {
        hosts: vec![host],
        ..Inventory::default()
    }
}
