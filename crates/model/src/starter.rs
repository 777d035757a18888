//! A starter inventory (`nodenet init`): a cluster's masters and workers
//! from one template, their NICs bonded or not, a VLAN or not, addresses
//! by DHCP or from a pool, written as a person would write it, with
//! comments on what to replace (MACs, BMC addresses) before a render is
//! worth deploying.

use std::fmt::Write as _;
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

/// What the starter describes.
#[derive(Debug, Clone)]
pub struct Starter {
    pub name: String,
    pub base_domain: String,
    pub masters: usize,
    pub workers: usize,
    /// The NICs every host has, in order; the first boots.
    pub nics: Vec<String>,
    /// The bond's mode (`802.3ad`, `active-backup`, ...) over every NIC;
    /// `None`: the first NIC carries the network alone.
    pub bond: Option<String>,
    pub vlan: Option<u16>,
    pub machine_network: Ipv4Net,
    /// Static addresses from this one on, else DHCP.
    pub first_address: Option<Ipv4Addr>,
    pub mtu: Option<u32>,
}

/// Why a starter cannot be written as asked.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum StarterError {
    #[error("`{0}` is not a DNS label (lower-case letters, digits and `-`, at most 63)")]
    Name(String),
    #[error("a cluster has one master (single node) or three or more, not {0}")]
    Masters(usize),
    #[error("give at least one NIC")]
    NoNic,
    #[error("`{0}` is not a NIC name the kernel takes (1-15 characters, no `/`, `:` or space)")]
    Nic(String),
    #[error("a bond needs two NICs at least (--nics a,b)")]
    BondNeedsTwo,
    #[error("VLAN {0} is outside 1-4094")]
    Vlan(u16),
    #[error("{needed} addresses from {first} do not fit in {network} (its VIPs are .4 and .5, its gateway .1)")]
    Addresses {
        needed: usize,
        first: Ipv4Addr,
        network: Ipv4Net,
    },
}

impl Starter {
    fn check(&self) -> Result<(), StarterError> {
        if !crate::names::is_dns1123(&self.name) || self.name.contains('.') {
            return Err(StarterError::Name(self.name.clone()));
        }
        if self.masters == 0 || self.masters == 2 {
            return Err(StarterError::Masters(self.masters));
        }
        if self.nics.is_empty() {
            return Err(StarterError::NoNic);
        }
        if let Some(bad) = self
            .nics
            .iter()
            .find(|n| n.is_empty() || n.len() > 15 || n.contains(['/', ':', ' ']) || !n.is_ascii())
        {
            return Err(StarterError::Nic(bad.clone()));
        }
        if self.bond.is_some() && self.nics.len() < 2 {
            return Err(StarterError::BondNeedsTwo);
        }
        if let Some(v) = self.vlan.filter(|v| !(1..=4094).contains(v)) {
            return Err(StarterError::Vlan(v));
        }
        if let Some(first) = self.first_address {
            let needed = self.masters + self.workers;
            let last = u32::from(first).checked_add(needed as u32 - 1);
            let fits = last.is_some_and(|l| {
                self.machine_network.contains(&first)
                    && self.machine_network.contains(&Ipv4Addr::from(l))
                    && l < u32::from(self.machine_network.broadcast())
                    && u32::from(first) > u32::from(self.machine_network.network()) + 5
            });
            if !fits {
                return Err(StarterError::Addresses {
                    needed,
                    first,
                    network: self.machine_network,
                });
            }
        }
        Ok(())
    }

    /// The network's nth address (`.1` the gateway, `.4`/`.5` the VIPs).
    fn nth(&self, n: u32) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.machine_network.network()) + n)
    }

    /// The interface that holds the address: the VLAN over the bond or
    /// the first NIC.
    fn carrier(&self) -> (String, String) {
        let under = if self.bond.is_some() {
            "bond0".to_string()
        } else {
            self.nics[0].clone()
        };
        match self.vlan {
            Some(v) => (format!("{under}.{v}"), under),
            None => (under.clone(), under),
        }
    }
}

/// The starter inventory's text.
pub fn inventory(s: &Starter) -> Result<String, StarterError> {
    s.check()?;
    let mut out = String::new();
    let single = s.masters == 1 && s.workers == 0;
    let _ = writeln!(
        out,
        "# Starter inventory written by `nodenet init`. Replace every MAC and BMC\n\
         # address marked REPLACE with the real ones (`nodenet discover` reads the\n\
         # MACs from the BMCs), then `nodenet check` and `nodenet render`.\n\
         nodenet: v1\ncluster:\n  name: {}\n  baseDomain: {}\n  machineNetworks: [{}]",
        s.name,
        s.base_domain,
        s.machine_network.trunc()
    );
    if !single {
        let _ = writeln!(
            out,
            "  apiVIPs: [{}]\n  ingressVIPs: [{}]",
            s.nth(5),
            s.nth(4)
        );
    }
    match s.first_address {
        Some(first) => {
            let _ = writeln!(out, "  rendezvousIP: {first}   # master-0's address");
        }
        None => {
            let _ = writeln!(
                out,
                "  rendezvousIP: {}   # REPLACE: master-0's DHCP reservation",
                s.nth(10)
            );
        }
    }
    out.push_str(
        "  provisioning:\n    network: Disabled   # BMCs boot the nodes by virtual media\n\
         credentials:\n  bmc-admin:\n    username: admin\n    passwordEnv: BMC_PASSWORD   # set where nodenet render runs\n",
    );
    if let Some(first) = s.first_address {
        let last = Ipv4Addr::from(u32::from(first) + (s.masters + s.workers) as u32 - 1);
        let _ = writeln!(
            out,
            "pools:\n  machine:\n    range: {first}-{last}\n    prefix: {}\n    gateway: {}\n    dns: [{}]",
            s.machine_network.prefix_len(),
            s.nth(1),
            s.nth(1)
        );
    }
    out.push_str(&template(s));
    out.push_str("hosts:\n");
    let roles = (0..s.masters)
        .map(|i| ("master", i))
        .chain((0..s.workers).map(|i| ("worker", i)));
    for (n, (role, i)) in roles.enumerate() {
        let macs: Vec<String> = (0..s.nics.len())
            .map(|k| {
                format!(
                    "{}: \"52:54:00:{:02x}:{:02x}:{:02x}\"",
                    s.nics[k],
                    (n >> 8) & 0xff,
                    n & 0xff,
                    k + 1
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "- name: {role}-{i}\n  role: {role}\n  template: node\n  vars: {{bmc: 192.0.2.{}}}   # REPLACE: its BMC's address\n  nics: {{{}}}   # REPLACE: its MACs",
            n + 10,
            macs.join(", ")
        );
    }
    Ok(out)
}

/// The one template every host uses.
fn template(s: &Starter) -> String {
    let mut t = format!(
        "templates:\n  node:\n    bootMode: UEFI\n    bootInterface: {}\n    bmc:\n      address: redfish-virtualmedia://${{bmc}}/redfish/v1/Systems/1\n      credentials: bmc-admin\n    rootDeviceHints:\n      deviceName: /dev/sda\n    network:\n      interfaces:\n",
        s.nics[0]
    );
    let mtu = s
        .mtu
        .map(|m| format!("\n        mtu: {m}"))
        .unwrap_or_default();
    let off = "\n        ipv4: {enabled: false}\n        ipv6: {enabled: false}";
    let (carrier, under) = s.carrier();
    let carried = |name: &str| name == carrier;
    let ip = match s.first_address {
        Some(_) => "\n        ipv4:\n          enabled: true\n          dhcp: false\n          address:\n          - ip: ${ip.machine}\n            prefix-length: ${prefix.machine}\n        ipv6: {enabled: false}".to_string(),
        None => "\n        ipv4: {enabled: true, dhcp: true}\n        ipv6: {enabled: false}".to_string(),
    };
    for nic in &s.nics {
        // Bond ports carry nothing of their own; NICs left out are off.
        let addr = if carried(nic) {
            ip.as_str()
        } else if s.bond.is_some() {
            ""
        } else {
            off
        };
        let _ = write!(
            t,
            "      - name: {nic}\n        type: ethernet\n        state: up{mtu}{addr}\n"
        );
    }
    if let Some(mode) = &s.bond {
        let addr = if carried("bond0") { ip.as_str() } else { off };
        let _ = write!(
            t,
            "      - name: bond0\n        type: bond\n        state: up{mtu}{addr}\n        link-aggregation:\n          mode: {mode}\n          options: {{miimon: \"100\"}}\n          port: [{}]\n",
            s.nics.join(", ")
        );
    }
    if let Some(v) = s.vlan {
        let _ = write!(
            t,
            "      - name: {carrier}\n        type: vlan\n        state: up{mtu}\n        vlan: {{base-iface: {under}, id: {v}}}{ip}\n"
        );
    }
    if s.first_address.is_some() {
        let _ = write!(
            t,
            "      dns-resolver:\n        config:\n          server: [\"${{dns.machine}}\"]\n      routes:\n        config:\n        - destination: 0.0.0.0/0\n          next-hop-address: ${{gateway.machine}}\n          next-hop-interface: {carrier}\n"
        );
    }
    t
}

#[cfg(test)]
mod tests;
