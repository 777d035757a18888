//! `nodenet netverify`: Fuel's "Verify Networks", rebuilt. A plan lists,
//! per host and NIC, the VLANs its switch port must carry; every node runs
//! the same plan at roughly the same time, sending small tagged probe
//! frames on each planned VLAN of each NIC (and untagged) and recording
//! which (host, NIC, VLAN) it hears on which of its own NICs; the report
//! merges the results into a matrix and located findings.

pub mod probe;
pub mod report;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use nodenet_check::wiring;
use nodenet_model::{Inventory, Scope};

pub const PLAN_KIND: &str = "nodenet-netverify-plan";
pub const RESULT_KIND: &str = "nodenet-netverify-result";
pub const VERSION: u32 = 1;

/// Frames per second per NIC a run may send, at most (README: Wire
/// verification); the default is well below.
pub const MAX_RATE: u32 = 100;
pub const DEFAULT_RATE: u32 = 20;
/// The longest window a run may last, in seconds.
pub const MAX_WINDOW_S: u32 = 600;
pub const DEFAULT_WINDOW_S: u32 = 30;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub kind: String,
    pub version: u32,
    /// The run's id: a digest of the plan, carried in every probe frame
    /// so frames of another run (or another plan) are told apart.
    pub run: String,
    /// How long each node sends and listens, in seconds.
    pub window_s: u32,
    /// Probe frames per second per NIC.
    pub rate: u32,
    /// Whether full-size frames (each NIC's planned MTU) are sent too.
    pub mtu: bool,
    pub hosts: Vec<PlanHost>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanHost {
    pub name: String,
    pub nics: Vec<PlanNic>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanNic {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
    /// VLANs to test tagged.
    pub vlans: Vec<u16>,
    /// The native VLAN of its switch port when the inventory says it;
    /// NICs whose untagged segments are expected to meet have the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native: Option<u16>,
    /// Whether the NIC's untagged segment is expected to reach the other
    /// NICs with the same `native` (it carries untagged traffic).
    pub untagged: bool,
    /// The MTU to test with full-size frames (`mtu: true` plans).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
}

pub struct PlanOptions {
    /// Every VLAN named anywhere in the fleet, on every NIC.
    pub all_vlans: bool,
    pub window_s: u32,
    pub rate: u32,
    pub mtu: bool,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            all_vlans: false,
            window_s: DEFAULT_WINDOW_S,
            rate: DEFAULT_RATE,
            mtu: false,
        }
    }
}

/// The plan for every first-boot host of the inventory: its NICs (listed,
/// or named by its intent) with the VLANs expected on their switch ports.
pub fn plan(inv: &Inventory, opts: &PlanOptions) -> Result<Plan, String> {
    if opts.rate == 0 || opts.rate > MAX_RATE {
        return Err(format!(
            "--rate must be 1-{MAX_RATE} frames per second per NIC"
        ));
    }
    if opts.window_s == 0 || opts.window_s > MAX_WINDOW_S {
        return Err(format!("--window must be 1-{MAX_WINDOW_S} seconds"));
    }
    let mut hosts: Vec<PlanHost> = inv
        .hosts
        .iter()
        .filter(|h| h.scope() == Scope::FirstBoot)
        .map(|h| PlanHost {
            name: h.name.value.clone(),
            nics: wiring::expected(h)
                .into_iter()
                .map(|e| {
                    let mut vlans: Vec<u16> = e.vlans.iter().map(|v| v.id).collect();
                    vlans.sort_unstable();
                    vlans.dedup();
                    PlanNic {
                        untagged: e.native.is_some() || e.carries_untagged,
                        name: e.nic,
                        mac: e.mac,
                        vlans,
                        native: e.native.map(|n| n.value),
                        mtu: if opts.mtu { e.mtu.map(|m| m.mtu) } else { None },
                    }
                })
                .collect(),
        })
        .collect();
    if opts.all_vlans {
        let mut all: Vec<u16> = hosts
            .iter()
            .flat_map(|h| h.nics.iter().flat_map(|n| n.vlans.iter().copied()))
            .collect();
        all.sort_unstable();
        all.dedup();
        for n in hosts.iter_mut().flat_map(|h| h.nics.iter_mut()) {
            n.vlans = all
                .iter()
                .copied()
                .filter(|v| Some(*v) != n.native)
                .collect();
        }
    }
    hosts.retain(|h| !h.nics.is_empty());
    if hosts.is_empty() {
        return Err("no host with a NIC to test (a NIC is listed under `nics:` or named by the network intent)".into());
    }
    let mut p = Plan {
        kind: PLAN_KIND.into(),
        version: VERSION,
        run: String::new(),
        window_s: opts.window_s,
        rate: opts.rate,
        mtu: opts.mtu,
        hosts,
    };
    p.run = run_id(&p);
    Ok(p)
}

/// 16 hex digits of the plan's digest (its `run` left out).
fn run_id(p: &Plan) -> String {
    let mut copy = p.clone();
    copy.run.clear();
    let bytes = serde_json::to_vec(&copy).expect("a plan serialises");
    let d = Sha256::digest(&bytes);
    d[..8].iter().map(|b| format!("{b:02x}")).collect()
}

impl Plan {
    pub fn from_json(text: &str) -> Result<Plan, String> {
        let p: Plan = crate::read_kind(text, PLAN_KIND, "a netverify plan")?;
        if p.rate == 0 || p.rate > MAX_RATE {
            return Err(format!("`rate: {}` is outside 1-{MAX_RATE}", p.rate));
        }
        if p.window_s == 0 || p.window_s > MAX_WINDOW_S {
            return Err(format!(
                "`window_s: {}` is outside 1-{MAX_WINDOW_S}",
                p.window_s
            ));
        }
        if p.run.len() != 16 || !p.run.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("`run: {}` is not 16 hex digits", p.run));
        }
        Ok(p)
    }

    pub fn host(&self, name: &str) -> Option<&PlanHost> {
        self.hosts
            .iter()
            .find(|h| crate::short_name(&h.name) == crate::short_name(name))
    }
}

#[cfg(test)]
mod tests;
