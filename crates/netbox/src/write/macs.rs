//! MAC addresses the hardware gave ports NetBox holds without one
//! (`discover --write-netbox`): a MAC address object on the interface,
//! made its primary.

use std::collections::BTreeMap;

use reqwest::Method;
use serde::Deserialize;
use serde_json::{json, Value as J};

use super::{capped, refused, ChangeSet, Refused, BATCH};
use crate::map::page;
use crate::objects::{by_ids, Fields};
use crate::{Client, Error};

/// A MAC address the hardware gave a NIC that NetBox holds without one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MacFill {
    pub host: String,
    /// The NetBox device (the host's `netbox/device-id` label).
    pub device: u64,
    /// The interface's name (the NIC's name in the inventory).
    pub nic: String,
    pub mac: String,
    /// Where the MAC was read, for the change-log message.
    pub why: String,
}

/// How a MAC gets to its interface.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MacAction {
    /// A new MAC address object on the interface, made its primary.
    Create,
    /// An unassigned MAC address object (its id) assigned to the
    /// interface and made its primary.
    Assign(u64),
    /// The interface's own MAC address object (its id) made its primary.
    MakePrimary(u64),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MacChange {
    pub fill: MacFill,
    pub interface: u64,
    /// The interface's web page.
    pub page: String,
    pub action: MacAction,
}

/// What writing the fills would change in NetBox.
pub type MacChangeSet = ChangeSet<MacChange, MacFill>;

#[derive(Deserialize)]
struct InterfaceNow {
    id: u64,
    #[serde(default)]
    url: String,
    #[serde(default)]
    display_url: Option<String>,
    device: crate::objects::Ref,
    name: String,
    primary_mac_address: Option<MacNow>,
}

#[derive(Clone, Deserialize)]
struct MacNow {
    id: u64,
    mac_address: String,
    #[serde(default)]
    assigned_object_type: Option<String>,
    #[serde(default)]
    assigned_object_id: Option<u64>,
    #[serde(default)]
    url: String,
    #[serde(default)]
    display_url: Option<String>,
}

impl Fields for InterfaceNow {
    const FIELDS: &'static str = "id,url,display_url,device,name,primary_mac_address";
}

impl Fields for MacNow {
    const FIELDS: &'static str =
        "id,url,display_url,mac_address,assigned_object_type,assigned_object_id";
}

fn same_mac(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

/// The change set for `fills`, from the interfaces and MAC address
/// objects NetBox holds now (reads only).
pub fn plan_macs(client: &Client, fills: &[MacFill]) -> Result<MacChangeSet, Error> {
    let mut devices: Vec<u64> = fills.iter().map(|f| f.device).collect();
    devices.sort_unstable();
    devices.dedup();
    let interfaces: BTreeMap<(u64, String), InterfaceNow> =
        by_ids::<InterfaceNow, _>(client, "dcim/interfaces", "device_id", &devices)?
            .into_iter()
            .map(|i| ((i.device.id, i.name.clone()), i))
            .collect();
    let mut macs: Vec<String> = fills.iter().map(|f| f.mac.to_ascii_uppercase()).collect();
    macs.sort();
    macs.dedup();
    let known: Vec<MacNow> = by_ids(client, "dcim/mac-addresses", "mac_address", &macs)?;
    let mut set = MacChangeSet::default();
    for fill in fills {
        match decide(fill, &interfaces, &known) {
            Decision::Change(c) => set.changes.push(c),
            Decision::Present => set.present.push(fill.clone()),
            Decision::Refused(why) => set.refused.push(Refused {
                fill: fill.clone(),
                why,
            }),
        }
    }
    Ok(set)
}

enum Decision {
    Change(MacChange),
    Present,
    Refused(String),
}

fn decide(
    fill: &MacFill,
    interfaces: &BTreeMap<(u64, String), InterfaceNow>,
    known: &[MacNow],
) -> Decision {
    let Some(i) = interfaces.get(&(fill.device, fill.nic.clone())) else {
        return Decision::Refused(format!(
            "device {} has no interface `{}` in NetBox",
            fill.device, fill.nic
        ));
    };
    let on = |m: &MacNow, id: u64| {
        m.assigned_object_type.as_deref() == Some("dcim.interface")
            && m.assigned_object_id == Some(id)
    };
    if let Some(primary) = &i.primary_mac_address {
        return if same_mac(&primary.mac_address, &fill.mac) {
            Decision::Present
        } else {
            Decision::Refused(format!(
                "NetBox gives the interface {} already; nodenet does not replace a MAC address",
                primary.mac_address
            ))
        };
    }
    let same: Vec<&MacNow> = known
        .iter()
        .filter(|m| same_mac(&m.mac_address, &fill.mac))
        .collect();
    let action = if let Some(m) = same.iter().find(|m| on(m, i.id)) {
        MacAction::MakePrimary(m.id)
    } else if let Some(m) = same.iter().find(|m| m.assigned_object_id.is_some()) {
        return Decision::Refused(format!(
            "the MAC address is assigned to another object in NetBox ({})",
            page(&m.url, m.display_url.as_ref())
        ));
    } else if let Some(m) = same.first() {
        MacAction::Assign(m.id)
    } else {
        MacAction::Create
    };
    Decision::Change(MacChange {
        fill: fill.clone(),
        interface: i.id,
        page: page(&i.url, i.display_url.as_ref()),
        action,
    })
}

/// The change-log message of a fill's writes.
fn message(fill: &MacFill) -> String {
    capped(format!(
        "nodenet discover: {} of {} as {}",
        fill.nic, fill.host, fill.why
    ))
}

/// Writes the change set, NetBox's bulk endpoints a hundred objects a
/// request (each request one database transaction): new MAC address
/// objects, then assignments, then the interfaces' primary MAC address.
/// How many interfaces were given their MAC.
pub fn apply_macs(client: &Client, set: &MacChangeSet) -> Result<usize, Error> {
    let mut done = 0;
    let result = apply(client, set, &mut done);
    result
        .map(|()| done)
        .map_err(|e| refused(e, done, "add MAC addresses and change interfaces"))
}

fn apply(client: &Client, set: &MacChangeSet, done: &mut usize) -> Result<(), Error> {
    let mut primary: Vec<(u64, u64, String)> = Vec::new();
    let creates: Vec<&MacChange> = set
        .changes
        .iter()
        .filter(|c| c.action == MacAction::Create)
        .collect();
    for chunk in creates.chunks(BATCH) {
        let body: Vec<J> = chunk
            .iter()
            .map(|c| {
                json!({"mac_address": c.fill.mac.to_ascii_uppercase(),
                       "assigned_object_type": "dcim.interface",
                       "assigned_object_id": c.interface,
                       "changelog_message": message(&c.fill)})
            })
            .collect();
        let made: Vec<MacNow> = client.write(Method::POST, "dcim/mac-addresses", &J::from(body))?;
        for (c, m) in chunk.iter().zip(made) {
            primary.push((c.interface, m.id, message(&c.fill)));
        }
    }
    let assigns: Vec<(&MacChange, u64)> = set
        .changes
        .iter()
        .filter_map(|c| match c.action {
            MacAction::Assign(id) => Some((c, id)),
            _ => None,
        })
        .collect();
    for chunk in assigns.chunks(BATCH) {
        let body: Vec<J> = chunk
            .iter()
            .map(|(c, id)| {
                json!({"id": id, "assigned_object_type": "dcim.interface",
                       "assigned_object_id": c.interface,
                       "changelog_message": message(&c.fill)})
            })
            .collect();
        client.write::<J>(Method::PATCH, "dcim/mac-addresses", &J::from(body))?;
        primary.extend(
            chunk
                .iter()
                .map(|(c, id)| (c.interface, *id, message(&c.fill))),
        );
    }
    primary.extend(set.changes.iter().filter_map(|c| match c.action {
        MacAction::MakePrimary(id) => Some((c.interface, id, message(&c.fill))),
        _ => None,
    }));
    for chunk in primary.chunks(BATCH) {
        let body: Vec<J> = chunk
            .iter()
            .map(|(interface, mac, why)| {
                json!({"id": interface, "primary_mac_address": mac, "changelog_message": why})
            })
            .collect();
        client.write::<J>(Method::PATCH, "dcim/interfaces", &J::from(body))?;
        *done += chunk.len();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fill(nic: &str, mac: &str) -> MacFill {
        MacFill {
            host: "w0".into(),
            device: 7,
            nic: nic.into(),
            mac: mac.into(),
            why: "its BMC lists it".into(),
        }
    }

    fn interface(id: u64, name: &str, primary: Option<&str>) -> ((u64, String), InterfaceNow) {
        let i = InterfaceNow {
            id,
            url: format!("https://nb/api/dcim/interfaces/{id}/"),
            display_url: None,
            device: serde_json::from_value(json!({"id": 7})).unwrap(),
            name: name.into(),
            primary_mac_address: primary.map(|m| mac(1, m, None)),
        };
        ((7, name.to_string()), i)
    }

    fn mac(id: u64, address: &str, on: Option<u64>) -> MacNow {
        MacNow {
            id,
            mac_address: address.into(),
            assigned_object_type: on.map(|_| "dcim.interface".into()),
            assigned_object_id: on,
            url: format!("https://nb/api/dcim/mac-addresses/{id}/"),
            display_url: None,
        }
    }

    #[test]
    fn a_mac_is_created_assigned_or_made_primary_and_never_replaces_one() {
        let interfaces: BTreeMap<_, _> = [
            interface(11, "eno1", Some("52:54:00:00:00:01")),
            interface(12, "eno2", None),
        ]
        .into_iter()
        .collect();
        let action = |f: &MacFill, known: &[MacNow]| match decide(f, &interfaces, known) {
            Decision::Change(c) => Ok(c.action),
            Decision::Present => Err("present".to_string()),
            Decision::Refused(why) => Err(why),
        };
        let new = fill("eno2", "52:54:00:00:00:02");
        assert_eq!(action(&new, &[]), Ok(MacAction::Create));
        assert_eq!(
            action(&new, &[mac(5, "52:54:00:00:00:02", Some(12))]),
            Ok(MacAction::MakePrimary(5))
        );
        assert_eq!(
            action(&new, &[mac(6, "52:54:00:00:00:02", None)]),
            Ok(MacAction::Assign(6))
        );
        let elsewhere = action(&new, &[mac(7, "52:54:00:00:00:02", Some(99))]).unwrap_err();
        assert!(
            elsewhere.contains("https://nb/dcim/mac-addresses/7/"),
            "{elsewhere}"
        );
        // NetBox already holds it (any case), or holds another: no write.
        assert_eq!(
            action(&fill("eno1", "52:54:00:00:00:01"), &[]),
            Err("present".into())
        );
        let other = action(&fill("eno1", "52:54:00:00:00:09"), &[]).unwrap_err();
        assert!(other.contains("does not replace"), "{other}");
        let missing = action(&fill("eno3", "52:54:00:00:00:03"), &[]).unwrap_err();
        assert!(missing.contains("no interface `eno3`"), "{missing}");
    }

    #[test]
    fn a_change_log_message_names_nodenet_and_fits_netbox() {
        let mut f = fill("eno2", "52:54:00:00:00:02");
        assert_eq!(
            message(&f),
            "nodenet discover: eno2 of w0 as its BMC lists it"
        );
        f.host = "h".repeat(300);
        assert_eq!(message(&f).chars().count(), super::super::MESSAGE_MAX);
    }
}
