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
