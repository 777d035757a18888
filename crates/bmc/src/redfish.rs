//! Typed Redfish resources (the fields nodenet reads) and, with the
//! `client` feature, a client that follows links, retries what is worth
//! retrying, and never shows the password.

use std::time::Duration;

use serde::Deserialize;

#[cfg(feature = "client")]
mod client;
#[cfg(feature = "client")]
pub use client::{Answer, Client};

/// Sends of one Redfish call at most (the first and the retries).
pub const ATTEMPTS: u32 = 5;
/// The longest one attempt may take (connect, send, read the whole
/// answer), when the deadline is further away.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);

#[derive(Deserialize, Debug, Clone)]
pub struct Link {
    #[serde(rename = "@odata.id")]
    pub id: String,
}

#[derive(Deserialize, Debug)]
pub struct Collection {
    #[serde(rename = "Members", default)]
    pub members: Vec<Link>,
}

#[derive(Deserialize, Debug, Default, Clone)]
pub struct Boot {
    #[serde(rename = "BootSourceOverrideTarget")]
    pub target: Option<String>,
    #[serde(rename = "BootSourceOverrideEnabled")]
    pub enabled: Option<String>,
}

#[derive(Deserialize, Debug, Default)]
pub struct SystemLinks {
    #[serde(rename = "ManagedBy", default)]
    pub managed_by: Vec<Link>,
}

#[derive(Deserialize, Debug)]
pub struct ActionTarget {
    pub target: String,
}

#[derive(Deserialize, Debug, Default)]
pub struct SystemActions {
    #[serde(rename = "#ComputerSystem.Reset")]
    pub reset: Option<ActionTarget>,
}

#[derive(Deserialize, Debug)]
pub struct System {
    #[serde(rename = "Id")]
    pub id: String,
    #[serde(rename = "PowerState")]
    pub power_state: Option<String>,
    #[serde(rename = "Boot", default)]
    pub boot: Boot,
    #[serde(rename = "Links", default)]
    pub links: SystemLinks,
    #[serde(rename = "VirtualMedia")]
    pub virtual_media: Option<Link>,
    #[serde(rename = "EthernetInterfaces")]
    pub ethernet_interfaces: Option<Link>,
    #[serde(rename = "Actions", default)]
    pub actions: SystemActions,
}

/// A system's NIC (`EthernetInterface`): the fields discovery reads.
#[derive(Deserialize, Debug)]
pub struct EthernetInterface {
    #[serde(rename = "Id")]
    pub id: String,
    #[serde(rename = "MACAddress")]
    pub mac: Option<String>,
    #[serde(rename = "PermanentMACAddress")]
    pub permanent_mac: Option<String>,
    #[serde(rename = "LinkStatus")]
    pub link_status: Option<String>,
    #[serde(rename = "SpeedMbps")]
    pub speed_mbps: Option<u64>,
    #[serde(rename = "InterfaceEnabled")]
    pub enabled: Option<bool>,
}

#[derive(Deserialize, Debug)]
pub struct Manager {
    #[serde(rename = "VirtualMedia")]
    pub virtual_media: Option<Link>,
}

#[derive(Deserialize, Debug, Default)]
pub struct MediaActions {
    #[serde(rename = "#VirtualMedia.InsertMedia")]
    pub insert: Option<ActionTarget>,
    #[serde(rename = "#VirtualMedia.EjectMedia")]
    pub eject: Option<ActionTarget>,
}

#[derive(Deserialize, Debug)]
pub struct VirtualMedia {
    #[serde(rename = "Id")]
    pub id: String,
    #[serde(rename = "MediaTypes", default)]
    pub media_types: Vec<String>,
    #[serde(rename = "Image")]
    pub image: Option<String>,
    #[serde(rename = "Inserted")]
    pub inserted: Option<bool>,
    #[serde(rename = "Actions", default)]
    pub actions: MediaActions,
}

/// What an action POST changes, as a GET reads it back (see
/// [`Client::act`]).
#[derive(Clone, Copy, Debug)]
pub enum Effect<'a> {
    /// The system at `system` reports one of the power states `reached`.
    Power {
        system: &'a str,
        reached: &'a [&'a str],
    },
    /// The virtual media at `media` holds `image` (`None`: is empty).
    Media {
        media: &'a str,
        image: Option<&'a str>,
    },
    /// Leaves nothing to read (a restart: the power is On before and
    /// after); names the action for the message.
    Unreadable(&'static str),
}

/// At most `max` characters of `s` on one line (control characters and
/// runs of white space as one space), `…` when cut.
pub fn one_line(s: &str, max: usize) -> String {
    let words: Vec<&str> = s
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
        .collect();
    let joined = words.join(" ");
    if joined.chars().count() > max {
        let mut cut: String = joined.chars().take(max).collect();
        cut.push('…');
        cut
    } else {
        joined
    }
}
