//! `nodenet init`: a starter inventory from a few flags, for the first
//! hour (the quick start's next step).

use std::path::PathBuf;

use nodenet_model::starter::{self, Starter};

use super::{CliError, Exit, Outcome};
use crate::ui::info;

#[derive(clap::Args)]
pub struct Args {
    /// Where to write it (never over an existing file without --force).
    #[arg(short, long, default_value = "cluster.yaml")]
    output: PathBuf,
    #[arg(long)]
    force: bool,
    /// The cluster's name (a DNS label).
    #[arg(long, default_value = "ocp")]
    name: String,
    #[arg(long, default_value = "example.com")]
    base_domain: String,
    /// 1 (single node) or 3 and more.
    #[arg(long, default_value_t = 3)]
    masters: usize,
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// Every host's NICs, in order; the first boots.
    #[arg(long, value_delimiter = ',', default_value = "eno1,eno2")]
    nics: Vec<String>,
    /// Bond every NIC in this mode (`802.3ad`, `active-backup`, ...), or
    /// `none`: the first NIC alone.
    #[arg(long, default_value = "802.3ad")]
    bond: String,
    /// The machine network on this VLAN (over the bond or the NIC).
    #[arg(long)]
    vlan: Option<u16>,
    #[arg(long, default_value = "192.168.111.0/24")]
    machine_network: ipnet::Ipv4Net,
    /// Static addresses from this one on (gateway and DNS the network's
    /// `.1`); without it, DHCP.
    #[arg(long)]
    first_address: Option<std::net::Ipv4Addr>,
    #[arg(long)]
    mtu: Option<u32>,
}

pub fn run(args: Args) -> Outcome {
    let s = Starter {
        name: args.name,
        base_domain: args.base_domain,
        masters: args.masters,
        workers: args.workers,
        nics: args.nics,
        bond: (args.bond != "none").then_some(args.bond),
        vlan: args.vlan,
        machine_network: args.machine_network,
        first_address: args.first_address,
        mtu: args.mtu,
    };
    let text = starter::inventory(&s).map_err(CliError::usage)?;
    if args.output.exists() && !args.force {
        return Err(CliError::io(
            args.output.display().to_string(),
            format!(
                "{} exists: nodenet init writes a new file (--force replaces it)",
                args.output.display()
            ),
        ));
    }
    nodenet_model::write_atomic(&args.output, text.as_bytes())
        .map_err(|e| CliError::io(args.output.display().to_string(), e))?;
    info!(
        "wrote {} ({} host(s)); next: put in the real MACs and BMC addresses (lines marked REPLACE), then `nodenet check {}`",
        args.output.display(),
        s.masters + s.workers,
        args.output.display()
    );
    Ok(Exit::Success)
}
