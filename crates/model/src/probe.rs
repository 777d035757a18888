//! The connectivity checks that guard a change on a node, as written on
//! the command line (`nodenet apply --probe ...`) and in an inventory's
//! `cluster.nodeAgent.probes`. The agent runs them; this is their syntax.

use std::net::IpAddr;

/// A connectivity check, as kubernetes-nmstate runs them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Probe {
    /// Ping the default gateway(s).
    Gateway,
    /// Resolve a name (default: the first name server answers for localhost).
    Dns(String),
    Tcp(String, u16),
    Ping(IpAddr),
    /// Every port of every bond hears its LLDP neighbour (its switch
    /// port is still up and cabled): listens up to the probe timeout. The
    /// ports are those of the bonds now and those named here: the bond
    /// ports before the change, so a port the change took down or out of
    /// its bond still counts.
    Lldp(Vec<String>),
}

/// A probe that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad probe `{0}` (use gateway, dns[:NAME], tcp:HOST:PORT, ping:ADDRESS or lldp)")]
pub struct BadProbe(pub String);

impl Probe {
    /// Whether the probe waits for frames the network sends on its own
    /// schedule (an LLDP interval), so it cannot be polled.
    pub fn listens(&self) -> bool {
        matches!(self, Probe::Lldp(_))
    }
}

impl std::str::FromStr for Probe {
    type Err = BadProbe;
    fn from_str(s: &str) -> Result<Probe, BadProbe> {
        let bad = || BadProbe(s.to_string());
        Ok(match s.split_once(':') {
            None if s == "gateway" => Probe::Gateway,
            None if s == "lldp" => Probe::Lldp(Vec::new()),
            None if s == "dns" => Probe::Dns("localhost".into()),
            Some(("dns", name)) if !name.is_empty() => Probe::Dns(name.to_string()),
            Some(("ping", ip)) => Probe::Ping(ip.parse().map_err(|_| bad())?),
            Some(("tcp", rest)) => {
                let (host, port) = rest.rsplit_once(':').ok_or_else(bad)?;
                if host.is_empty() {
                    return Err(bad());
                }
                Probe::Tcp(
                    host.trim_matches(['[', ']']).to_string(),
                    port.parse().map_err(|_| bad())?,
                )
            }
            _ => return Err(bad()),
        })
    }
}

impl std::fmt::Display for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Probe::Gateway => write!(f, "gateway"),
            Probe::Dns(n) => write!(f, "dns:{n}"),
            Probe::Tcp(h, p) if h.contains(':') => write!(f, "tcp:[{h}]:{p}"),
            Probe::Tcp(h, p) => write!(f, "tcp:{h}:{p}"),
            Probe::Ping(ip) => write!(f, "ping:{ip}"),
            Probe::Lldp(_) => write!(f, "lldp"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_syntax() {
        assert_eq!("gateway".parse::<Probe>().unwrap(), Probe::Gateway);
        assert_eq!("lldp".parse::<Probe>().unwrap(), Probe::Lldp(Vec::new()));
        assert!(Probe::Lldp(Vec::new()).listens() && !Probe::Gateway.listens());
        assert_eq!(Probe::Lldp(vec!["eth1".into()]).to_string(), "lldp");
        assert_eq!(
            "tcp:api.example.com:6443".parse::<Probe>().unwrap(),
            Probe::Tcp("api.example.com".into(), 6443)
        );
        let v6 = "tcp:[fd00::1]:6443".parse::<Probe>().unwrap();
        assert_eq!(v6, Probe::Tcp("fd00::1".into(), 6443));
        assert_eq!(v6.to_string(), "tcp:[fd00::1]:6443");
        assert_eq!(
            "ping:10.0.0.1".parse::<Probe>().unwrap(),
            Probe::Ping("10.0.0.1".parse().unwrap())
        );
        assert!("tcp:nohost".parse::<Probe>().is_err());
        assert!("tcp::80".parse::<Probe>().is_err());
        assert!("dns:".parse::<Probe>().is_err());
        assert!("icmp".parse::<Probe>().is_err());
    }
}
