//! What the BMCs say the machines' NICs are, held against the inventory:
//! MACs the inventory has that the hardware lacks, boot MACs that are no
//! NIC of the machine, and NICs listed without a MAC that the hardware
//! fills in without a guess. `nodenet discover -o` saves the discovery
//! as a file `check --observed` reads back.

use serde::{Deserialize, Serialize};

use nodenet_model::{Code, Diagnostic, Host, Inventory, Scope, Span};

use crate::Discovery;

/// The `kind` of a saved discovery.
pub const KIND: &str = "nodenet-discovery";
pub const VERSION: u32 = 1;

#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
pub struct DiscoveryFile {
    pub kind: String,
    pub version: u32,
    pub hosts: Vec<Discovery>,
}

impl DiscoveryFile {
    pub fn new(hosts: Vec<Discovery>) -> DiscoveryFile {
        DiscoveryFile {
            kind: KIND.into(),
            version: VERSION,
            hosts,
        }
    }

    /// A saved discovery, or `None` when `text` is another kind of file.
    pub fn from_json(text: &str) -> Option<Result<DiscoveryFile, String>> {
        let v: serde_json::Value = serde_json::from_str(text).ok()?;
        if v.get("kind").and_then(|k| k.as_str()) != Some(KIND) {
            return None;
        }
        Some(serde_json::from_value(v).map_err(|e| format!("not a discovery nodenet wrote: {e}")))
    }
}

/// A MAC the hardware gives a NIC the inventory lists without one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fill {
    pub host: String,
    pub nic: String,
    pub mac: String,
}

/// The discovery held against the inventory.
#[derive(Debug, Default)]
pub struct Findings {
    pub diagnostics: Vec<Diagnostic>,
    pub fills: Vec<Fill>,
}

fn same(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

/// Every discovered host compared with its inventory host (by name);
/// `at` locates findings about the discovery itself.
pub fn compare(inv: &Inventory, found: &[Discovery], at: Option<Span>) -> Findings {
    let mut out = Findings::default();
    for d in found {
        let Some(host) = inv
            .hosts
            .iter()
            .filter(|h| h.scope() == Scope::FirstBoot)
            .find(|h| h.name.value == d.host)
        else {
            let mut diag = Diagnostic::warning(
                Code::ObservedUnmatched,
                format!("discovery of `{}`: the inventory has no such host", d.host),
            );
            if let Some(span) = at {
                diag = diag.at(span);
            }
            out.diagnostics.push(diag);
            continue;
        };
        compare_host(host, d, &mut out);
    }
    out
}

fn compare_host(host: &Host, d: &Discovery, out: &mut Findings) {
    let name = &host.name.value;
    let on_hardware = |mac: &str| d.nics.iter().any(|n| same(&n.mac, mac));
    let listed: Vec<String> = d.nics.iter().map(|n| n.mac.clone()).collect();
    let listed = if listed.is_empty() {
        "none".to_string()
    } else {
        listed.join(", ")
    };
    for nic in &host.nics {
        if let Some(mac) = &nic.mac {
            if !on_hardware(&mac.value) {
                out.diagnostics.push(
                    Diagnostic::error(
                        Code::ObservedMacNotOnHardware,
                        format!(
                            "NIC `{}` has MAC {}, which the BMC of `{name}` does not list (its NICs: {listed})",
                            nic.name.value, mac.value
                        ),
                    )
                    .at(mac.span)
                    .host(name.clone()),
                );
            }
        }
    }
    if let Some(boot) = &host.boot_mac {
        if !on_hardware(&boot.value) {
            out.diagnostics.push(
                Diagnostic::error(
                    Code::ObservedBootMacNotOnHardware,
                    format!(
                        "boot MAC {} is none of the NICs the BMC of `{name}` lists ({listed})",
                        boot.value
                    ),
                )
                .at(boot.span)
                .host(name.clone())
                .help("the boot MAC is the MAC of the NIC the host PXE boots from, as its BMC lists it"),
            );
        }
    }
    // NICs without a MAC: the hardware's MACs no NIC of the inventory has
    // are theirs. By the BMC's id when it is the NIC's name, else only
    // when one NIC and one MAC are left: anything else would be a guess.
    let known = |mac: &str| {
        host.nics
            .iter()
            .any(|n| n.mac.as_ref().is_some_and(|m| same(&m.value, mac)))
    };
    let mut free: Vec<&crate::HardwareNic> = d.nics.iter().filter(|n| !known(&n.mac)).collect();
    let mut empty: Vec<&nodenet_model::Nic> =
        host.nics.iter().filter(|n| n.mac.is_none()).collect();
    let mut fills = Vec::new();
    empty.retain(
        |nic| match free.iter().position(|h| h.id == nic.name.value) {
            Some(i) => {
                fills.push((*nic, free.remove(i).mac.clone()));
                false
            }
            None => true,
        },
    );
    if let ([nic], [hw]) = (empty.as_slice(), free.as_slice()) {
        fills.push((*nic, hw.mac.clone()));
        empty.clear();
    }
    for (nic, mac) in fills {
        out.diagnostics.push(
            Diagnostic::warning(
                Code::ObservedMacMissing,
                format!(
                    "NIC `{}` of `{name}` has no MAC; its BMC gives {mac}",
                    nic.name.value
                ),
            )
            .at(nic.name.span)
            .host(name.clone())
            .help("`nodenet discover --write` writes it into the inventory file; `--write-netbox`, into NetBox for a host read from it"),
        );
        out.fills.push(Fill {
            host: name.clone(),
            nic: nic.name.value.clone(),
            mac,
        });
    }
    for nic in empty {
        let candidates: Vec<&str> = free.iter().map(|h| h.mac.as_str()).collect();
        out.diagnostics.push(
            Diagnostic::warning(
                Code::ObservedMacMissing,
                format!(
                    "NIC `{}` of `{name}` has no MAC, and its BMC leaves more than one to choose from ({}): write the one whose port is this NIC's",
                    nic.name.value,
                    if candidates.is_empty() { "none".to_string() } else { candidates.join(", ") }
                ),
            )
            .at(nic.name.span)
            .host(name.clone()),
        );
    }
}

#[cfg(test)]
mod tests;
