//! NetBox as the source of truth: the devices a query selects, with their
//! interfaces, LAGs, VLANs, MAC and IP addresses, out-of-band addresses
//! and config contexts, read over NetBox's REST API into a nodenet
//! inventory (docs/netbox.md has the mapping).
//!
//! The inventory is text: the one `nodenet import --from netbox:…`
//! writes, and the one `check` and `render` load for a `netbox:` input.
//! Each value carries its source (the NetBox object's page, or the config
//! context) as a comment on its line, so a finding located in it shows
//! where to fix it. What cannot be mapped is said as a finding at a
//! comment naming the object, never skipped in silence.
//!
//! Writing back (`discover --write-netbox`, `lldp --write-netbox`) is
//! `write/`: a change set shown first, journalled changes, nothing
//! deleted.

mod client;
mod emit;
mod map;
mod map_network;
mod objects;
mod query;
mod write;

use nodenet_model::{Code, Severity};

pub use client::{Client, TOKEN_ENV, TOKEN_FILE_ENV, URL_ENV};
pub use map::DEVICE_LABEL;
pub use query::Query;
pub use write::cables::{apply_cables, plan_cables, CableChange, CableChangeSet, CableFill};
pub use write::macs::{apply_macs, plan_macs, MacAction, MacChange, MacChangeSet, MacFill};
pub use write::{ChangeSet, Refused};

/// What stops a NetBox read: nothing was mapped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Query(String),
    #[error("{0}")]
    Setup(String),
    #[error("NetBox at {url}: {message}")]
    Request { url: String, message: String },
    #[error("NetBox at {url} answered {status}: {body}")]
    Status {
        url: String,
        status: u16,
        body: String,
    },
}

impl Error {
    /// A failure that a second try may not meet: the server or a proxy
    /// in front of it restarting, a connection dropped or timed out.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Status { status, .. } => matches!(status, 502..=504),
            Error::Request { message, .. } => !message.starts_with("not the NetBox answer"),
            _ => false,
        }
    }

    /// Stable code (`--format json`).
    pub fn code(&self) -> &'static str {
        match self {
            Error::Query(_) => "netbox-query",
            Error::Setup(_) => "netbox-setup",
            Error::Request { .. } | Error::Status { .. } => "netbox-request",
        }
    }
}

/// A finding of the mapping, at a byte range of the generated text.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    pub severity: Severity,
    pub code: Code,
    pub message: String,
    pub help: Option<String>,
    /// Byte offset and length in [`Generated::text`].
    pub at: (usize, usize),
    /// The host (device) it is about.
    pub host: Option<String>,
}

/// The inventory a NetBox query maps to.
#[derive(Clone, Debug)]
pub struct Generated {
    /// The input's name (`netbox:?cluster=ocp-prod`).
    pub name: String,
    /// A nodenet inventory (YAML).
    pub text: String,
    pub findings: Vec<Finding>,
    /// Devices read, and the API requests the read took.
    pub devices: usize,
    pub requests: usize,
}

/// Whether a command-line input names NetBox rather than a file.
pub fn is_source(arg: &str) -> bool {
    arg.starts_with(query::SCHEME)
}

/// Reads what `source` (`netbox:?site=dc1&cluster=ocp-prod`) selects
/// from the NetBox that `NETBOX_URL` and `NETBOX_TOKEN` (or
/// `NETBOX_TOKEN_FILE`) name, into an inventory.
pub fn read(source: &str) -> Result<Generated, Error> {
    let query = Query::parse(source)?;
    let client = Client::from_env()?;
    let snapshot = objects::Snapshot::fetch(&client, &query)?;
    let mut generated = map::inventory(source, client.base(), &snapshot);
    generated.devices = snapshot.devices.len();
    generated.requests = client.requests();
    Ok(generated)
}
