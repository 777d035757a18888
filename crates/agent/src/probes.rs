//! Running the connectivity checks that guard a change (their syntax is
//! the inventory's: `nodenet_model::Probe`), as kubernetes-nmstate runs
//! its own: retried until they pass or their time is up.

use std::net::{TcpStream, ToSocketAddrs};
use std::process::Command;
use std::time::{Duration, Instant};

pub use nodenet_model::Probe;

/// The probe as it runs after the change: an LLDP probe also checks the
/// bond ports there are now, before it.
pub fn pinned(p: &Probe) -> Probe {
    match p {
        Probe::Lldp(ports) => {
            let mut all = ports.clone();
            all.extend(bond_ports());
            all.sort();
            all.dedup();
            Probe::Lldp(all)
        }
        p => p.clone(),
    }
}

/// Default gateways of the main routing table.
fn gateways() -> Vec<String> {
    let out = Command::new("ip")
        .args(["route", "show", "default"])
        .output();
    out.map(|o| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter_map(|l| {
                l.split_whitespace()
                    .skip_while(|w| *w != "via")
                    .nth(1)
                    .map(str::to_string)
            })
            .collect()
    })
    .unwrap_or_default()
}

fn ping(addr: &str) -> bool {
    Command::new("ping")
        .args(["-c", "1", "-W", "2", addr])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The kernel's bond ports: `/sys/class/net/<bond>/bonding/slaves`.
pub(crate) fn bond_ports() -> Vec<String> {
    let mut ports = Vec::new();
    for e in std::fs::read_dir("/sys/class/net")
        .into_iter()
        .flatten()
        .flatten()
    {
        if let Ok(s) = std::fs::read_to_string(e.path().join("bonding/slaves")) {
            ports.extend(s.split_whitespace().map(str::to_string));
        }
    }
    ports.sort();
    ports
}

/// Every bond port (and every one of `also`) hears an LLDP neighbour
/// within `within` (no bond: ok).
fn lldp_neighbours_on_bond_ports(also: &[String], within: Duration) -> Result<(), String> {
    let mut ports = bond_ports();
    ports.extend(also.iter().cloned());
    ports.sort();
    ports.dedup();
    if ports.is_empty() {
        return Ok(());
    }
    static NEVER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let opts = nodenet_wires::listen::ListenOptions {
        nics: ports,
        timeout: within,
        host: String::new(),
        bring_up: false,
    };
    let obs = nodenet_wires::listen::listen(&opts, &NEVER).map_err(|e| e.to_string())?;
    let silent: Vec<&str> = obs
        .nics
        .iter()
        .filter(|n| n.neighbor.is_none())
        .map(|n| n.name.as_str())
        .collect();
    if silent.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "no LLDP neighbour within {:.0} s on bond port(s) {}",
            within.as_secs_f64(),
            silent.join(", ")
        ))
    }
}

/// Runs one probe, retrying until `within` (links need a moment).
pub fn run_probe(p: &Probe, within: Duration) -> Result<(), String> {
    let deadline = Instant::now() + within;
    loop {
        let result = match p {
            Probe::Gateway => {
                let gws = gateways();
                if gws.is_empty() {
                    Err("no default gateway".to_string())
                } else if gws.iter().all(|g| ping(g)) {
                    Ok(())
                } else {
                    Err(format!("no answer from {}", gws.join(", ")))
                }
            }
            Probe::Ping(ip) => ping(&ip.to_string())
                .then_some(())
                .ok_or(format!("no answer from {ip}")),
            // It listens for the whole time itself: no retry loop.
            Probe::Lldp(ports) => return lldp_neighbours_on_bond_ports(ports, within),
            Probe::Dns(name) => (name.as_str(), 0)
                .to_socket_addrs()
                .map(|_| ())
                .map_err(|e| e.to_string()),
            Probe::Tcp(host, port) => (host.as_str(), *port)
                .to_socket_addrs()
                .map_err(|e| e.to_string())
                .and_then(|mut a| a.next().ok_or_else(|| "no address".to_string()))
                .and_then(|a| {
                    TcpStream::connect_timeout(&a, Duration::from_secs(2))
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                }),
        };
        if result.is_ok() || Instant::now() >= deadline {
            return result;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Whether every non-listening probe passes now.
pub(crate) fn all_pass_now(probes: &[Probe]) -> bool {
    probes
        .iter()
        .filter(|p| !p.listens())
        .all(|p| run_probe(p, Duration::ZERO).is_ok())
}
