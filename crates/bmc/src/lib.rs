//! The BMC stage: Redfish virtual media for every host of an inventory —
//! power, boot override, insert/eject — and `provision`, which boots each
//! host from its own network-customised ISO, in parallel with a bound.
//!
//! The Redfish resources, the hosts' targets and errors need no network;
//! the client and the actions (feature `client`, on by default) bring
//! HTTP, TLS and tokio, which the fuzz targets leave out.

#[cfg(feature = "client")]
mod actions;
pub mod discovery;
mod error;
pub mod redfish;
mod target;

#[cfg(feature = "client")]
pub use actions::{discover, eject, power, provision, run_all, status};
pub use error::{BmcError, Failure};
pub use target::{parse_address, targets, Select, Target};

use serde::{Deserialize, Serialize};

/// What a BMC reports about a host.
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct Status {
    pub host: String,
    pub system: String,
    pub power: String,
    pub boot_target: String,
    pub boot_enabled: String,
    pub media_image: String,
    pub media_inserted: bool,
}

/// A NIC as the host's BMC reports it.
#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
pub struct HardwareNic {
    /// The BMC's id for it (`NIC.Integrated.1-1-1`, a MAC, …).
    pub id: String,
    /// Lower case, colon-separated.
    pub mac: String,
    /// `LinkUp`, `LinkDown`, `NoLink`, when the BMC says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_mbps: Option<u64>,
}

/// What `discover` read from one host's BMC.
#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
pub struct Discovery {
    pub host: String,
    pub system: String,
    pub nics: Vec<HardwareNic>,
}

/// Power action names of the CLI.
#[derive(Clone, Copy, Debug)]
pub enum Power {
    On,
    Off,
    Restart,
}

impl Power {
    /// What [`power`] does, for dry runs.
    pub fn plan(self) -> &'static str {
        match self {
            Power::On => "power on (Reset On), wait until the BMC reports On",
            Power::Off => "power off (Reset ForceOff), wait until the BMC reports Off",
            Power::Restart => "restart (Reset ForceRestart)",
        }
    }
}

/// What [`eject`] does, for dry runs.
pub const EJECT_PLAN: &str = "eject the virtual CD/DVD if one is inserted";

/// What [`provision`] does with `image`, for dry runs.
pub fn provision_plan(image: &str) -> String {
    format!(
        "power off (Reset ForceOff) unless Off, wait for Off; eject the virtual CD/DVD; \
         insert {image}; boot once from Cd; power on; wait for On with the media inserted"
    )
}

/// Where a host is while a command works on it: `(host, step)`.
pub type Progress = dyn Fn(&str, &str) + Send + Sync;

#[cfg(test)]
mod tests;
