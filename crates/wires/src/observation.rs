//! What `nodenet lldp` heard on a node, as the file `--format json`
//! writes and `check --observed` reads: per NIC, its MAC and MTU and the
//! LLDP neighbour on its cable.

use serde::{Deserialize, Serialize};

use crate::lldp::Lldpdu;

/// The `kind` of an observation file.
pub const KIND: &str = "nodenet-lldp";
pub const VERSION: u32 = 1;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    pub kind: String,
    pub version: u32,
    /// The node's host name (matched with the inventory's host names, else
    /// by NIC MACs).
    pub host: String,
    /// Where the frames came from: `listen` or `pcap:<file>`.
    pub source: String,
    /// How long it listened, in milliseconds.
    pub listened_ms: u64,
    pub nics: Vec<NicObservation>,
    /// Frames that were not LLDPDUs it could read, one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NicObservation {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    /// Whether the link had carrier when listening ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carrier: Option<bool>,
    /// The last LLDPDU heard (the neighbour now).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub neighbor: Option<Lldpdu>,
    /// Milliseconds from the start to the first LLDPDU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_ms: Option<u64>,
    /// LLDPDUs heard.
    pub frames: u32,
    /// Other neighbours heard on the same NIC (a hub, or a switch and a
    /// server's own agent): each distinct chassis and port once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub others: Vec<Lldpdu>,
}

impl NicObservation {
    pub fn new(name: &str) -> NicObservation {
        NicObservation {
            name: name.to_string(),
            mac: None,
            mtu: None,
            carrier: None,
            neighbor: None,
            first_ms: None,
            frames: 0,
            others: Vec::new(),
        }
    }

    /// Records one LLDPDU heard `at_ms` after the start. A TTL of 0 is a
    /// neighbour saying goodbye: it is forgotten.
    pub fn heard(&mut self, du: Lldpdu, at_ms: u64) {
        self.frames += 1;
        self.first_ms.get_or_insert(at_ms);
        let same = |a: &Lldpdu, b: &Lldpdu| a.chassis_id == b.chassis_id && a.port_id == b.port_id;
        if du.ttl == 0 {
            if self.neighbor.as_ref().is_some_and(|n| same(n, &du)) {
                self.neighbor = None;
            }
            self.others.retain(|o| !same(o, &du));
            return;
        }
        match &self.neighbor {
            Some(n) if !same(n, &du) => {
                let old = self.neighbor.take().expect("matched Some");
                self.others.retain(|o| !same(o, &du));
                if !self.others.iter().any(|o| same(o, &old)) {
                    self.others.push(old);
                }
                self.neighbor = Some(du);
            }
            _ => self.neighbor = Some(du),
        }
    }
}

impl Observation {
    pub fn new(host: &str, source: &str) -> Observation {
        Observation {
            kind: KIND.into(),
            version: VERSION,
            host: host.into(),
            source: source.into(),
            listened_ms: 0,
            nics: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// Reads an observation file, refusing anything else.
    pub fn from_json(text: &str) -> Result<Observation, String> {
        crate::read_kind(text, KIND, "an LLDP observation")
    }

    /// A human-readable table: per NIC, its neighbour's switch and port,
    /// VLANs, frame size and aggregation.
    pub fn table(&self) -> String {
        let mut out = format!(
            "{} ({}, {:.1} s)\n",
            self.host,
            self.source,
            self.listened_ms as f64 / 1000.0
        );
        for nic in &self.nics {
            let mac = nic.mac.as_deref().unwrap_or("-");
            match &nic.neighbor {
                None => {
                    let why = match nic.carrier {
                        Some(false) => "no carrier",
                        _ => "no LLDP neighbour",
                    };
                    out.push_str(&format!("  {} {mac}: {why}\n", nic.name));
                }
                Some(n) => {
                    out.push_str(&format!(
                        "  {} {mac}: {} port {}",
                        nic.name,
                        n.switch_name(),
                        n.port_id
                    ));
                    if let Some(d) = n
                        .port_description
                        .as_deref()
                        .filter(|d| *d != n.port_id.value)
                    {
                        out.push_str(&format!(" ({d})"));
                    }
                    out.push('\n');
                    let mut facts = Vec::new();
                    if let Some(p) = n.port_vlan_id {
                        facts.push(format!("native VLAN {p}"));
                    }
                    if !n.vlans.is_empty() {
                        let ids: Vec<String> = n.vlans.iter().map(|v| v.id.to_string()).collect();
                        facts.push(format!("VLANs {}", ids.join(",")));
                    }
                    if let Some(m) = n.max_frame_size {
                        facts.push(format!("max frame {m} (MTU {})", m.saturating_sub(18)));
                    }
                    if let Some(a) = n.aggregation {
                        facts.push(if a.enabled {
                            format!("aggregated (id {})", a.port_id)
                        } else if a.capable {
                            "aggregation off".into()
                        } else {
                            "cannot aggregate".into()
                        });
                    }
                    if !facts.is_empty() {
                        out.push_str(&format!("    {}\n", facts.join("; ")));
                    }
                    for o in &nic.others {
                        out.push_str(&format!(
                            "    also heard: {} port {}\n",
                            o.switch_name(),
                            o.port_id
                        ));
                    }
                }
            }
        }
        for w in &self.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
        out
    }
}

#[cfg(test)]
mod tests;
