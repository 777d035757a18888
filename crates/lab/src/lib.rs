//! The lab: qemu VMs (TCG; no KVM here) booting Debian's kernel and a
//! debootstrapped root with NetworkManager, linked NIC-to-NIC by qemu
//! `dgram` netdevs on 127.0.0.1, driven over a serial shell and the qemu
//! monitor. Images are built once from apt packages and cached, keyed by
//! the kernel and NetworkManager versions.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error("{0}: {1}")]
    Io(String, #[source] std::io::Error),
    #[error("{0} failed: {1}")]
    Tool(String, String),
    #[error("{0}")]
    Timeout(String),
    /// What the inventory or the command line asks cannot be built.
    #[error("{0}")]
    Input(String),
    /// No lab in the directory given (a usage error, not the input's).
    #[error("no lab in {0} (start one with `nodenet lab up INVENTORY`)")]
    NoLab(String),
}

mod console;
mod console_log;
mod image;
mod vm;

pub use image::*;
pub use vm::*;

pub mod bmc;
pub mod rehearse;
pub mod report;
pub mod state;
pub mod switch;
pub mod topology;
pub mod verify;

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> LabError {
    let what = what.into();
    move |e| LabError::Io(what, e)
}

fn sh(cmd: &str) -> Result<String, LabError> {
    let out = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .output()
        .map_err(io(cmd.to_string()))?;
    if !out.status.success() {
        return Err(LabError::Tool(
            cmd.chars().take(120).collect(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// `/proc/net/bonding/<bond>` of an 802.3ad bond: every port collecting
/// and distributing in the bond's active aggregator (any number of ports).
pub fn lacp_aggregated(proc_bonding: &str) -> Result<usize, String> {
    let mut ids = proc_bonding
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("Aggregator ID:"))
        .map(str::trim);
    let Some(active) = ids.next() else {
        return Err("no active aggregator (no LACP partner)".into());
    };
    let ports: Vec<&str> = ids.collect();
    let states: Vec<u32> = proc_bonding
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("port state:"))
        .filter_map(|v| v.trim().parse().ok())
        .collect();
    if ports.is_empty() {
        return Err("no ports".into());
    }
    let apart = ports.iter().filter(|p| **p != active).count();
    let not_ready = states.iter().filter(|s| *s & 0x30 != 0x30).count();
    if apart > 0 || not_ready > 0 || states.len() != 2 * ports.len() {
        return Err(format!(
            "{apart} of {} port(s) outside the active aggregator, {not_ready} actor/partner state(s) not collecting+distributing",
            ports.len()
        ));
    }
    Ok(ports.len())
}

/// `f` on every VM at once, a thread each (the guests run in parallel; each
/// shell is driven by one thread): the results in the VMs' order.
pub fn on_each<T: Send>(vms: &mut [Vm], f: impl Fn(&mut Vm) -> T + Sync) -> Vec<T> {
    std::thread::scope(|s| {
        let f = &f;
        let handles: Vec<_> = vms.iter_mut().map(|vm| s.spawn(move || f(vm))).collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("VM thread"))
            .collect()
    })
}

/// Polls `f` every 2 s until it holds or `timeout` passes.
pub fn wait_for(
    what: &str,
    timeout: Duration,
    mut f: impl FnMut() -> bool,
) -> Result<(), LabError> {
    let deadline = Instant::now() + timeout;
    loop {
        if f() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(LabError::Timeout(format!(
                "{what}: not reached within {timeout:?}"
            )));
        }
        std::thread::sleep(Duration::from_secs(2));
    }
}

/// A free UDP port on 127.0.0.1 for one end of a link.
pub fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .map(|a| a.port())
        .unwrap_or(0)
}

/// `n` cables between two VMs: the NICs of side A (MACs `a_macs`) and of
/// side B, NIC i of A wired to NIC i of B.
pub fn cables(a_macs: &[&str], b_macs: &[&str]) -> (Vec<Nic>, Vec<Nic>) {
    let mut a = Vec::new();
    let mut b = Vec::new();
    for (ma, mb) in a_macs.iter().zip(b_macs) {
        let (pa, pb) = (free_udp_port(), free_udp_port());
        a.push(Nic {
            local: pa,
            remote: pb,
            mac: ma.to_string(),
        });
        b.push(Nic {
            local: pb,
            remote: pa,
            mac: mb.to_string(),
        });
    }
    (a, b)
}

/// The "switch" side of the lab's seed topology: a kernel 802.3ad bond of
/// eth0+eth1 (fast LACP) with VLANs 110, 120 and 130, holding
/// 192.168.<vlan>.1/24 on each, and lldpd announcing eth0 and eth1 every
/// 2 s, for `lab.role=switch` (the config disk's switch.sh).
pub const SWITCH_LACP_VLANS: &str =
    "ip link add bond0 type bond mode 802.3ad miimon 100 lacp_rate fast
for i in eth0 eth1; do ip link set $i down; ip link set $i master bond0; done
ip link set bond0 up
for v in 110 120 130; do
    ip link add link bond0 name bond0.$v type vlan id $v
    ip addr add 192.168.$v.1/24 dev bond0.$v
    ip link set bond0.$v up
done
mkdir -p /run/lldpd /etc/lldpd.d
printf 'configure system hostname switch\nconfigure lldp tx-interval 2\n' > /etc/lldpd.d/lab.conf
lldpd -I eth0,eth1
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lacp_needs_every_port_in_the_active_aggregator() {
        let port = |agg: u32, partner: u32| {
            format!("Slave Interface: eno\nAggregator ID: {agg}\ndetails actor lacp pdu:\n    port state: 63\ndetails partner lacp pdu:\n    port state: {partner}\n")
        };
        let head = "Active Aggregator Info:\n\tAggregator ID: 1\n";
        assert_eq!(
            lacp_aggregated(&format!(
                "{head}{}{}{}",
                port(1, 63),
                port(1, 63),
                port(1, 61)
            )),
            Ok(3)
        );
        assert!(lacp_aggregated(&format!("{head}{}{}", port(1, 63), port(2, 63))).is_err());
        // Partner only defaulted (no LACPDU heard): not collecting.
        assert!(lacp_aggregated(&format!("{head}{}{}", port(1, 63), port(1, 1))).is_err());
        assert!(lacp_aggregated("Bonding Mode: 802.3ad\n").is_err());
    }
}
