//! LLDP (IEEE 802.1AB) LLDPDUs: a parser of our own that takes any bytes
//! and never panics (every length is checked against what is left; text
//! is read lossily), and an encoder for tests and fixtures.
//!
//! Read: chassis id, port id, TTL, port description, system name and
//! description, management addresses, the 802.1 port VLAN id and VLAN
//! names, 802.3 maximum frame size and link aggregation (and the 802.1
//! link aggregation TLV that replaced it in 802.1AX). Other TLVs are
//! skipped.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

use serde::{Deserialize, Serialize};

use crate::ether::{mac_text, parse_mac};

/// The LLDP EtherType.
pub const ETHERTYPE: u16 = 0x88cc;
/// Nearest-bridge group address, where switches send LLDP.
pub const NEAREST_BRIDGE: [u8; 6] = [0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e];
/// The other two LLDP group addresses (nearest non-TPMR, nearest customer bridge).
pub const OTHER_GROUPS: [[u8; 6]; 2] = [
    [0x01, 0x80, 0xc2, 0x00, 0x00, 0x03],
    [0x01, 0x80, 0xc2, 0x00, 0x00, 0x00],
];

const OUI_8021: [u8; 3] = [0x00, 0x80, 0xc2];
const OUI_8023: [u8; 3] = [0x00, 0x12, 0x0f];

/// Why bytes are not an LLDPDU; `offset` is from the LLDPDU's start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("byte {offset}: {what}")]
pub struct LldpError {
    pub offset: usize,
    pub what: String,
}

fn err(offset: usize, what: impl Into<String>) -> LldpError {
    LldpError {
        offset,
        what: what.into(),
    }
}

/// A chassis or port id: its subtype and value, shown as the subtype
/// says (a MAC as a MAC, a name as text, an address as an address).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Id {
    /// What the value is (`mac`, `ifname`, `ifalias`, `local`, ...).
    pub subtype: String,
    /// The value as text.
    pub value: String,
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.value)
    }
}

/// Link aggregation as the neighbour announces it for its port.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Aggregation {
    /// The port can be aggregated.
    pub capable: bool,
    /// The port is in an aggregation now.
    pub enabled: bool,
    /// The aggregation's id (0 when not aggregated).
    pub port_id: u32,
}

/// A VLAN a neighbour's port carries (802.1 VLAN name TLV).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vlan {
    pub id: u16,
    pub name: String,
}

/// What one LLDPDU says about its sender's port.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lldpdu {
    pub chassis_id: Id,
    pub port_id: Id,
    /// Seconds the information stays valid (0: the port is shutting down).
    pub ttl: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port_description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_description: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub management_addresses: Vec<String>,
    /// 802.1 port VLAN id (the untagged VLAN).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port_vlan_id: Option<u16>,
    /// 802.1 VLAN names: the VLANs the port carries.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vlans: Vec<Vlan>,
    /// 802.3 maximum frame size (header and FCS included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_frame_size: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregation: Option<Aggregation>,
}

impl Lldpdu {
    /// The switch's name for itself: its system name, else its chassis id.
    pub fn switch_name(&self) -> &str {
        self.system_name
            .as_deref()
            .filter(|s| !s.is_empty())
            .unwrap_or(&self.chassis_id.value)
    }

    /// The neighbour's name for its port: the port id when it is a name
    /// (ifname, ifalias, local), else the port description, else the id.
    pub fn port_name(&self) -> &str {
        match self.port_id.subtype.as_str() {
            "ifname" | "ifalias" | "local" => &self.port_id.value,
            _ => self
                .port_description
                .as_deref()
                .filter(|d| !d.is_empty())
                .unwrap_or(&self.port_id.value),
        }
    }

    /// Whether the neighbour announces any VLAN information.
    pub fn announces_vlans(&self) -> bool {
        self.port_vlan_id.is_some() || !self.vlans.is_empty()
    }
}

/// Longest text kept from a TLV (a TLV holds at most 511 bytes anyway).
const MAX_TEXT: usize = 511;

fn text(b: &[u8]) -> String {
    let b = &b[..b.len().min(MAX_TEXT)];
    let s = String::from_utf8_lossy(b);
    s.trim_end_matches('\0')
        .chars()
        .map(|c| if c.is_control() { '\u{fffd}' } else { c })
        .collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// An IANA address-family-numbered address: IPv4 and IPv6 as such,
/// IEEE 802 as a MAC, anything else as hex.
fn address(b: &[u8]) -> String {
    match b.split_first() {
        Some((1, a)) if a.len() == 4 => Ipv4Addr::new(a[0], a[1], a[2], a[3]).to_string(),
        Some((2, a)) if a.len() == 16 => {
            let mut o = [0u8; 16];
            o.copy_from_slice(a);
            Ipv6Addr::from(o).to_string()
        }
        Some((6, a)) if a.len() == 6 => mac_text(a),
        _ => hex(b),
    }
}

/// An id as text; as hex when it has none (all NUL bytes), so that no
/// id reads as empty (802.1AB: 1 to 255 octets).
fn id_text(v: &[u8]) -> String {
    let t = text(v);
    if t.is_empty() {
        hex(v)
    } else {
        t
    }
}

fn chassis_id(subtype: u8, v: &[u8]) -> Id {
    let (name, value) = match subtype {
        1 => ("chassis-component", id_text(v)),
        2 => ("ifalias", id_text(v)),
        3 => ("port-component", id_text(v)),
        4 if v.len() == 6 => ("mac", mac_text(v)),
        5 => ("address", address(v)),
        6 => ("ifname", id_text(v)),
        7 => ("local", id_text(v)),
        4 => ("mac", hex(v)),
        _ => ("reserved", hex(v)),
    };
    Id {
        subtype: name.into(),
        value,
    }
}

fn port_id(subtype: u8, v: &[u8]) -> Id {
    let (name, value) = match subtype {
        1 => ("ifalias", id_text(v)),
        2 => ("port-component", id_text(v)),
        3 if v.len() == 6 => ("mac", mac_text(v)),
        4 => ("address", address(v)),
        5 => ("ifname", id_text(v)),
        6 => ("agent-circuit-id", hex(v)),
        7 => ("local", id_text(v)),
        3 => ("mac", hex(v)),
        _ => ("reserved", hex(v)),
    };
    Id {
        subtype: name.into(),
        value,
    }
}

/// Parses one LLDPDU (the bytes after the EtherType). The first three
/// TLVs must be chassis id, port id and TTL, as 802.1AB says; a TLV that
/// runs past the end is an error; the End TLV (or the end of the data,
/// which Ethernet padding makes an End) stops the parse.
pub fn parse(data: &[u8]) -> Result<Lldpdu, LldpError> {
    let mut chassis = None;
    let mut port = None;
    let mut ttl = None;
    let mut du = Lldpdu {
        chassis_id: Id {
            subtype: String::new(),
            value: String::new(),
        },
        port_id: Id {
            subtype: String::new(),
            value: String::new(),
        },
        ttl: 0,
        port_description: None,
        system_name: None,
        system_description: None,
        management_addresses: Vec::new(),
        port_vlan_id: None,
        vlans: Vec::new(),
        max_frame_size: None,
        aggregation: None,
    };
    let mut at = 0usize;
    let mut index = 0usize;
    while at < data.len() {
        let Some(head) = data.get(at..at + 2) else {
            return Err(err(at, "a TLV header needs 2 bytes, 1 is left"));
        };
        let kind = head[0] >> 1;
        let len = (usize::from(head[0] & 1) << 8) | usize::from(head[1]);
        let start = at + 2;
        let Some(v) = data.get(start..start + len) else {
            return Err(err(
                at,
                format!(
                    "TLV type {kind} says {len} bytes, {} are left",
                    data.len() - start
                ),
            ));
        };
        let expected_first = [1u8, 2, 3];
        if index < 3 && kind != expected_first[index] {
            let names = ["chassis id", "port id", "TTL"];
            return Err(err(
                at,
                format!(
                    "TLV {} must be the {} TLV (type {}), found type {kind}",
                    index + 1,
                    names[index],
                    expected_first[index]
                ),
            ));
        }
        match kind {
            0 => break,
            1 | 2 => {
                let Some((&sub, rest)) = v.split_first().filter(|(_, r)| !r.is_empty()) else {
                    return Err(err(
                        at,
                        format!(
                            "{} TLV of {len} bytes (at least 2)",
                            if kind == 1 { "chassis id" } else { "port id" }
                        ),
                    ));
                };
                if kind == 1 {
                    if chassis.is_some() {
                        return Err(err(at, "a second chassis id TLV"));
                    }
                    chassis = Some(chassis_id(sub, rest));
                } else {
                    if port.is_some() {
                        return Err(err(at, "a second port id TLV"));
                    }
                    port = Some(port_id(sub, rest));
                }
            }
            3 => {
                let [a, b] = v else {
                    return Err(err(at, format!("TTL TLV of {len} bytes (2 expected)")));
                };
                if ttl.is_some() {
                    return Err(err(at, "a second TTL TLV"));
                }
                ttl = Some(u16::from_be_bytes([*a, *b]));
            }
            4 => du.port_description = Some(text(v)),
            5 => du.system_name = Some(text(v)),
            6 => du.system_description = Some(text(v)),
            8 => {
                // Address string length (subtype + address), subtype, address, ...
                if let Some((&alen, rest)) = v.split_first() {
                    let alen = usize::from(alen);
                    if (2..=32).contains(&alen) && rest.len() >= alen {
                        du.management_addresses.push(address(&rest[..alen]));
                    } else {
                        return Err(err(
                            at,
                            format!("management address of length {alen} in a TLV of {len} bytes"),
                        ));
                    }
                }
            }
            127 => organizational(&mut du, v).map_err(|what| err(at, what))?,
            _ => {}
        }
        at = start + len;
        index += 1;
    }
    match (chassis, port, ttl) {
        (Some(c), Some(p), Some(t)) => {
            du.chassis_id = c;
            du.port_id = p;
            du.ttl = t;
            Ok(du)
        }
        _ => Err(err(at, "ends before the chassis id, port id and TTL TLVs")),
    }
}

/// Organizationally specific TLVs of IEEE 802.1 and 802.3.
fn organizational(du: &mut Lldpdu, v: &[u8]) -> Result<(), String> {
    let (Some(oui), Some(&sub)) = (v.get(0..3), v.get(3)) else {
        return Err(format!(
            "organizational TLV of {} bytes (at least 4)",
            v.len()
        ));
    };
    let body = &v[4..];
    let u16_at = |i: usize| body.get(i..i + 2).map(|b| u16::from_be_bytes([b[0], b[1]]));
    let aggregation = |body: &[u8]| -> Result<Aggregation, String> {
        match body {
            [status, a, b, c, d] => Ok(Aggregation {
                capable: status & 1 != 0,
                enabled: status & 2 != 0,
                port_id: u32::from_be_bytes([*a, *b, *c, *d]),
            }),
            _ => Err(format!(
                "link aggregation TLV with {} bytes of data (5 expected)",
                body.len()
            )),
        }
    };
    match (oui, sub) {
        (o, 1) if o == OUI_8021 => {
            let id = u16_at(0).ok_or("port VLAN id TLV too short")?;
            if body.len() != 2 {
                return Err(format!(
                    "port VLAN id TLV with {} bytes of data (2 expected)",
                    body.len()
                ));
            }
            // 0: the port does not support port-based VLANs.
            if id != 0 {
                du.port_vlan_id = Some(id);
            }
        }
        (o, 3) if o == OUI_8021 => {
            let id = u16_at(0).ok_or("VLAN name TLV too short")?;
            let n = usize::from(*body.get(2).ok_or("VLAN name TLV too short")?);
            let name = body
                .get(3..3 + n)
                .ok_or_else(|| format!("VLAN name of {n} bytes in {} bytes of data", body.len()))?;
            // A port carries at most 4094 VLANs; a frame cannot hold more names.
            if !du.vlans.iter().any(|x| x.id == id) {
                du.vlans.push(Vlan {
                    id,
                    name: text(name),
                });
            }
        }
        (o, 7) if o == OUI_8021 => du.aggregation = Some(aggregation(body)?),
        // The 802.1 TLV (802.1AX) wins when both are sent.
        (o, 3) if o == OUI_8023 && du.aggregation.is_none() => {
            du.aggregation = Some(aggregation(body)?);
        }
        (o, 4) if o == OUI_8023 => {
            if body.len() != 2 {
                return Err(format!(
                    "maximum frame size TLV with {} bytes of data (2 expected)",
                    body.len()
                ));
            }
            du.max_frame_size = u16_at(0);
        }
        _ => {}
    }
    Ok(())
}

/// An LLDPDU's bytes (the frame's payload), for tests and fixtures:
/// chassis id as MAC when it reads as one (else local), port id as
/// interface name (its subtype, else local), the optional TLVs present.
pub fn encode(du: &Lldpdu) -> Vec<u8> {
    fn tlv(out: &mut Vec<u8>, kind: u8, v: &[u8]) {
        let len = v.len().min(511);
        out.push((kind << 1) | (len >> 8) as u8);
        out.push((len & 0xff) as u8);
        out.extend_from_slice(&v[..len]);
    }
    fn id_bytes(id: &Id, mac_subtype: u8, name_subtype: u8) -> Vec<u8> {
        match parse_mac(&id.value).filter(|_| id.subtype == "mac") {
            Some(m) => [&[mac_subtype][..], &m].concat(),
            None if id.subtype == "ifname" => {
                [vec![name_subtype], id.value.as_bytes().to_vec()].concat()
            }
            None => [vec![7], id.value.as_bytes().to_vec()].concat(),
        }
    }
    let mut out = Vec::new();
    tlv(&mut out, 1, &id_bytes(&du.chassis_id, 4, 6));
    tlv(&mut out, 2, &id_bytes(&du.port_id, 3, 5));
    tlv(&mut out, 3, &du.ttl.to_be_bytes());
    if let Some(d) = &du.port_description {
        tlv(&mut out, 4, d.as_bytes());
    }
    if let Some(n) = &du.system_name {
        tlv(&mut out, 5, n.as_bytes());
    }
    if let Some(d) = &du.system_description {
        tlv(&mut out, 6, d.as_bytes());
    }
    for a in &du.management_addresses {
        let addr: Vec<u8> = match a.parse::<std::net::IpAddr>() {
            Ok(std::net::IpAddr::V4(v4)) => [vec![1], v4.octets().to_vec()].concat(),
            Ok(std::net::IpAddr::V6(v6)) => [vec![2], v6.octets().to_vec()].concat(),
            Err(_) => continue,
        };
        let mut v = vec![addr.len() as u8];
        v.extend_from_slice(&addr);
        v.extend_from_slice(&[1, 0, 0, 0, 0, 0]);
        tlv(&mut out, 8, &v);
    }
    if let Some(p) = du.port_vlan_id {
        tlv(
            &mut out,
            127,
            &[&OUI_8021[..], &[1], &p.to_be_bytes()].concat(),
        );
    }
    for v in &du.vlans {
        let name = &v.name.as_bytes()[..v.name.len().min(32)];
        tlv(
            &mut out,
            127,
            &[
                &OUI_8021[..],
                &[3],
                &v.id.to_be_bytes(),
                &[name.len() as u8],
                name,
            ]
            .concat(),
        );
    }
    if let Some(a) = du.aggregation {
        let status = u8::from(a.capable) | (u8::from(a.enabled) << 1);
        tlv(
            &mut out,
            127,
            &[&OUI_8023[..], &[3, status], &a.port_id.to_be_bytes()].concat(),
        );
    }
    if let Some(m) = du.max_frame_size {
        tlv(
            &mut out,
            127,
            &[&OUI_8023[..], &[4], &m.to_be_bytes()].concat(),
        );
    }
    tlv(&mut out, 0, &[]);
    out
}

/// An LLDPDU with every field this module reads (for tests).
#[cfg(test)]
pub(crate) fn tests_sample() -> Lldpdu {
    Lldpdu {
        chassis_id: Id {
            subtype: "mac".into(),
            value: "52:54:00:aa:bb:cc".into(),
        },
        port_id: Id {
            subtype: "ifname".into(),
            value: "swp3".into(),
        },
        ttl: 120,
        port_description: Some("node-b eth0".into()),
        system_name: Some("lab-switch".into()),
        system_description: Some("Debian".into()),
        management_addresses: vec!["192.168.0.1".into(), "fe80::1".into()],
        port_vlan_id: Some(1),
        vlans: vec![
            Vlan {
                id: 110,
                name: "vlan110".into(),
            },
            Vlan {
                id: 120,
                name: "vlan120".into(),
            },
        ],
        max_frame_size: Some(9018),
        aggregation: Some(Aggregation {
            capable: true,
            enabled: true,
            port_id: 7,
        }),
    }
}

#[cfg(test)]
mod tests;
