//! Cables LLDP heard that NetBox lacks (`lldp --write-netbox`): a cable
//! between the host's port and the switch's, each a device's interface
//! NetBox holds already. A port that NetBox cables elsewhere is never
//! re-cabled: that disagreement is `check --observed`'s to say.

use std::collections::BTreeMap;

use reqwest::Method;
use serde::Deserialize;
use serde_json::{json, Value as J};

use super::{capped, refused, ChangeSet, Refused, BATCH};
use crate::map::page;
use crate::objects::{by_ids, Fields, Interface};
use crate::{Client, Error};

/// A cable heard over LLDP: the host's port, and the switch (its system
/// name) and port (its port id) at the other end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CableFill {
    pub host: String,
    pub nic: String,
    pub switch: String,
    pub port: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CableChange {
    pub fill: CableFill,
    pub a: u64,
    pub b: u64,
    /// The two interfaces' web pages.
    pub pages: (String, String),
}

/// What recording the cables would change in NetBox.
pub type CableChangeSet = ChangeSet<CableChange, CableFill>;

#[derive(Deserialize)]
struct DeviceNow {
    id: u64,
    name: Option<String>,
}

impl Fields for DeviceNow {
    const FIELDS: &'static str = "id,name";
}

/// The change set for `fills`, from the devices and interfaces NetBox
/// holds now (reads only).
pub fn plan_cables(client: &Client, fills: &[CableFill]) -> Result<CableChangeSet, Error> {
    // A switch's LLDP system name may be its FQDN and NetBox's its short
    // name: both are asked for.
    let mut names: Vec<&str> = fills
        .iter()
        .flat_map(|f| [f.host.as_str(), f.switch.as_str(), short(&f.switch)])
        .collect();
    names.sort_unstable();
    names.dedup();
    let mut devices: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for d in by_ids::<DeviceNow, _>(client, "dcim/devices", "name", &names)? {
        devices
            .entry(d.name.unwrap_or_default())
            .or_default()
            .push(d.id);
    }
    let ids: Vec<u64> = devices.values().flatten().copied().collect();
    let interfaces: BTreeMap<(u64, String), Interface> =
        by_ids::<Interface, _>(client, "dcim/interfaces", "device_id", &ids)?
            .into_iter()
            .map(|i| ((i.device.id, i.name.clone()), i))
            .collect();
    let mut set = CableChangeSet::default();
    for fill in fills {
        match decide(fill, &devices, &interfaces) {
            Ok(Some(c)) => set.changes.push(c),
            Ok(None) => set.present.push(fill.clone()),
            Err(why) => set.refused.push(Refused {
                fill: fill.clone(),
                why,
            }),
        }
    }
    Ok(set)
}

/// The cable to make (`None`: NetBox has it), or why none is made.
fn decide(
    fill: &CableFill,
    devices: &BTreeMap<String, Vec<u64>>,
    interfaces: &BTreeMap<(u64, String), Interface>,
) -> Result<Option<CableChange>, String> {
    let one = |name: &str, what: &str| match devices
        .get(name)
        .or_else(|| devices.get(short(name)))
        .map(Vec::as_slice)
    {
        Some([id]) => Ok(*id),
        Some(more) if more.len() > 1 => Err(format!(
            "NetBox has {} devices named `{name}` (the {what}); name it uniquely",
            more.len()
        )),
        _ => Err(format!("NetBox has no device named `{name}` (the {what})")),
    };
    let port = |device: u64, device_name: &str, name: &str| {
        interfaces
            .get(&(device, name.to_string()))
            .ok_or_else(|| format!("`{device_name}` has no interface `{name}` in NetBox"))
    };
    let a = port(one(&fill.host, "host")?, &fill.host, &fill.nic)?;
    let b = port(
        one(&fill.switch, "switch LLDP names")?,
        &fill.switch,
        &fill.port,
    )?;
    let heard = (fill.switch.clone(), fill.port.clone());
    if let Some(end) = a.cabled_to() {
        return if end == heard {
            Ok(None)
        } else {
            Err(format!(
                "NetBox cables it to {} {}; nodenet does not re-cable a port (`check --observed` says which is right)",
                end.0, end.1
            ))
        };
    }
    if !a.link_peers.is_empty() {
        return Err("NetBox cables it to something other than an interface".into());
    }
    if !b.link_peers.is_empty() {
        let to = b
            .cabled_to()
            .map_or("another object".to_string(), |(d, p)| format!("{d} {p}"));
        return Err(format!(
            "NetBox cables {} {} to {to} already",
            fill.switch, fill.port
        ));
    }
    Ok(Some(CableChange {
        fill: fill.clone(),
        a: a.id,
        b: b.id,
        pages: (
            page(&a.url, a.display_url.as_ref()),
            page(&b.url, b.display_url.as_ref()),
        ),
    }))
}

/// `leaf1` of `leaf1.example.com`.
fn short(name: &str) -> &str {
    name.split('.').next().unwrap_or(name)
}

fn message(fill: &CableFill) -> String {
    capped(format!(
        "nodenet lldp: {} of {} hears {} {} over LLDP",
        fill.nic, fill.host, fill.switch, fill.port
    ))
}

/// Writes the change set: the cables, a hundred a request (each request
/// one transaction), status connected. How many were made.
pub fn apply_cables(client: &Client, set: &CableChangeSet) -> Result<usize, Error> {
    let mut done = 0;
    for chunk in set.changes.chunks(BATCH) {
        let body: Vec<J> = chunk
            .iter()
            .map(|c| {
                json!({"a_terminations": [{"object_type": "dcim.interface", "object_id": c.a}],
                       "b_terminations": [{"object_type": "dcim.interface", "object_id": c.b}],
                       "status": "connected",
                       "changelog_message": message(&c.fill)})
            })
            .collect();
        client
            .write::<J>(Method::POST, "dcim/cables", &J::from(body))
            .map_err(|e| refused(e, done, "add cables"))?;
        done += chunk.len();
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interface(id: u64, device: u64, name: &str, peer: Option<(&str, &str)>) -> Interface {
        let peers = peer.map_or(
            json!([]),
            |(d, p)| json!([{"name": p, "device": {"id": 1, "name": d}}]),
        );
        serde_json::from_value(json!({
            "id": id, "url": format!("https://nb/api/dcim/interfaces/{id}/"),
            "device": {"id": device}, "name": name, "type": {"value": "25gbase-x-sfp28"},
            "link_peers": peers, "link_peers_type": peer.map(|_| "dcim.interface"),
        }))
        .unwrap()
    }

    #[test]
    fn a_heard_cable_is_made_between_ports_netbox_leaves_uncabled_and_never_moves_one() {
        let devices: BTreeMap<String, Vec<u64>> = [
            ("w0".to_string(), vec![1]),
            ("leaf1".to_string(), vec![2]),
            ("twin".to_string(), vec![3, 4]),
        ]
        .into_iter()
        .collect();
        let interfaces: BTreeMap<(u64, String), Interface> = [
            interface(11, 1, "eno1", None),
            interface(12, 1, "eno2", Some(("leaf1", "swp2"))),
            interface(21, 2, "swp1", None),
            interface(22, 2, "swp2", Some(("w0", "eno2"))),
            interface(23, 2, "swp3", Some(("w9", "eno1"))),
        ]
        .into_iter()
        .map(|i| ((i.device.id, i.name.clone()), i))
        .collect();
        let fill = |nic: &str, switch: &str, port: &str| CableFill {
            host: "w0".into(),
            nic: nic.into(),
            switch: switch.into(),
            port: port.into(),
        };
        let made = decide(&fill("eno1", "leaf1", "swp1"), &devices, &interfaces)
            .unwrap()
            .unwrap();
        assert_eq!((made.a, made.b), (11, 21));
        assert_eq!(made.pages.1, "https://nb/dcim/interfaces/21/");
        // NetBox has it: nothing to do.
        assert_eq!(
            decide(&fill("eno2", "leaf1", "swp2"), &devices, &interfaces),
            Ok(None)
        );
        let why = |f: CableFill| decide(&f, &devices, &interfaces).unwrap_err();
        assert!(why(fill("eno2", "leaf1", "swp1")).contains("does not re-cable"));
        assert!(why(fill("eno1", "leaf1", "swp3")).contains("to w9 eno1 already"));
        assert!(why(fill("eno1", "leaf9", "swp1")).contains("no device named `leaf9`"));
        // LLDP's FQDN, NetBox's short name.
        assert!(decide(
            &fill("eno1", "leaf1.example.com", "swp1"),
            &devices,
            &interfaces
        )
        .is_ok());
        assert!(why(fill("eno1", "twin", "swp1")).contains("2 devices named `twin`"));
        assert!(why(fill("eno1", "leaf1", "swp9")).contains("no interface `swp9`"));
    }
}
