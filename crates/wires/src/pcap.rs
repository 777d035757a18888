//! Classic pcap files, as tcpdump writes them (`tcpdump -w`): either byte
//! order, micro- or nanosecond timestamps, Ethernet or Linux cooked
//! (`-i any`: SLL and SLL2) link layers. Every length is checked; a
//! record that runs past the end or claims more than a capture can hold
//! ends the reading with a note, the records before it are kept.

use crate::ether::{self, EtherError, Frame};

const LINKTYPE_ETHERNET: u32 = 1;
const LINKTYPE_LINUX_SLL: u32 = 113;
const LINKTYPE_LINUX_SLL2: u32 = 276;
/// Largest record accepted (tcpdump's default snapshot length).
const MAX_RECORD: u32 = 262_144;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PcapError {
    #[error("{0} bytes: shorter than a pcap file header (24)")]
    Short(usize),
    #[error("a pcapng file: write classic pcap (`tcpdump -w` does; `editcap -F pcap` converts)")]
    Pcapng,
    #[error("not a pcap file (magic {0:08x})")]
    Magic(u32),
    #[error("pcap version {0}.{1} (2.4 is read)")]
    Version(u16, u16),
    #[error("link type {0}: only Ethernet (1) and Linux cooked captures (113, 276) are read")]
    LinkType(u32),
}

/// One captured frame.
#[derive(Debug, Clone, PartialEq)]
pub struct Packet<'a> {
    /// 1-based, as Wireshark numbers frames.
    pub number: usize,
    /// Byte offset of its record header in the file.
    pub offset: usize,
    /// Capture time, seconds since the epoch.
    pub time: f64,
    pub data: &'a [u8],
    /// The frame's length on the wire (more than `data` when truncated).
    pub wire_len: u32,
}

/// A capture: its link type and packets.
#[derive(Debug, Clone)]
pub struct Capture<'a> {
    pub linktype: u32,
    pub packets: Vec<Packet<'a>>,
    /// Why reading stopped before the end of the file, if it did.
    pub stopped: Option<String>,
}

impl Capture<'_> {
    /// The Ethernet view of a packet of this capture.
    pub fn frame<'p>(&self, p: &Packet<'p>) -> Result<Frame<'p>, EtherError> {
        let d = p.data;
        match self.linktype {
            LINKTYPE_LINUX_SLL => {
                // type(2) arphrd(2) addr len(2) addr(8) protocol(2)
                if d.len() < 16 {
                    return Err(EtherError::Short(d.len()));
                }
                let alen = usize::from(u16::from_be_bytes([d[4], d[5]]));
                ether::parse_from_type([0; 6], src(&d[6..14], alen), d, 14)
            }
            LINKTYPE_LINUX_SLL2 => {
                // protocol(2) reserved(2) ifindex(4) arphrd(2) type(1) addr len(1) addr(8)
                if d.len() < 20 {
                    return Err(EtherError::Short(d.len()));
                }
                let source = src(&d[12..20], usize::from(d[11]));
                let protocol = u16::from_be_bytes([d[0], d[1]]);
                if protocol != ether::TPID_8021Q {
                    return Ok(Frame {
                        dst: [0; 6],
                        src: source,
                        vlans: Vec::new(),
                        ethertype: protocol,
                        payload: &d[20..],
                    });
                }
                // A tag libpcap put back: TCI and the inner type after the header.
                let Some(tag) = d.get(20..24) else {
                    return Err(EtherError::Tag(20));
                };
                Ok(Frame {
                    dst: [0; 6],
                    src: source,
                    vlans: vec![u16::from_be_bytes([tag[0], tag[1]]) & 0x0fff],
                    ethertype: u16::from_be_bytes([tag[2], tag[3]]),
                    payload: &d[24..],
                })
            }
            _ => ether::parse(d),
        }
    }
}

fn src(addr: &[u8], len: usize) -> [u8; 6] {
    let mut m = [0u8; 6];
    if len == 6 {
        m.copy_from_slice(&addr[..6]);
    }
    m
}

/// Reads a classic pcap file's header and records.
pub fn parse(b: &[u8]) -> Result<Capture<'_>, PcapError> {
    let Some(head) = b.get(..24) else {
        return Err(PcapError::Short(b.len()));
    };
    let magic_le = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
    let (big, nanos) = match magic_le {
        0xa1b2_c3d4 => (false, false),
        0xa1b2_3c4d => (false, true),
        0xd4c3_b2a1 => (true, false),
        0x4d3c_b2a1 => (true, true),
        0x0a0d_0d0a => return Err(PcapError::Pcapng),
        m => return Err(PcapError::Magic(m)),
    };
    let u16_at = |i: usize| {
        let x = [b[i], b[i + 1]];
        if big {
            u16::from_be_bytes(x)
        } else {
            u16::from_le_bytes(x)
        }
    };
    let u32_at = |i: usize| {
        let x = [b[i], b[i + 1], b[i + 2], b[i + 3]];
        if big {
            u32::from_be_bytes(x)
        } else {
            u32::from_le_bytes(x)
        }
    };
    let (major, minor) = (u16_at(4), u16_at(6));
    if major != 2 {
        return Err(PcapError::Version(major, minor));
    }
    let linktype = u32_at(20) & 0xffff;
    if ![LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2].contains(&linktype) {
        return Err(PcapError::LinkType(linktype));
    }
    let mut packets = Vec::new();
    let mut at = 24usize;
    let mut stopped = None;
    while at < b.len() {
        let number = packets.len() + 1;
        if b.len() - at < 16 {
            stopped = Some(format!(
                "frame {number} at byte {at}: {} bytes left, a record header needs 16",
                b.len() - at
            ));
            break;
        }
        let (secs, frac, incl, orig) =
            (u32_at(at), u32_at(at + 4), u32_at(at + 8), u32_at(at + 12));
        if incl > MAX_RECORD {
            stopped = Some(format!(
                "frame {number} at byte {at}: captured length {incl} is over {MAX_RECORD} (a damaged file?)"
            ));
            break;
        }
        let start = at + 16;
        let Some(data) = b.get(start..start + incl as usize) else {
            stopped = Some(format!(
                "frame {number} at byte {at}: {incl} bytes captured, {} left (the file is cut short)",
                b.len() - start
            ));
            break;
        };
        let time = f64::from(secs) + f64::from(frac) / if nanos { 1e9 } else { 1e6 };
        packets.push(Packet {
            number,
            offset: at,
            time,
            data,
            wire_len: orig,
        });
        at = start + incl as usize;
    }
    Ok(Capture {
        linktype,
        packets,
        stopped,
    })
}

/// A classic pcap file (little-endian, microseconds, Ethernet) of frames
/// with their times: what `tcpdump -w` writes, for tests and fixtures.
pub fn write(frames: &[(f64, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&MAX_RECORD.to_le_bytes());
    out.extend_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
    for (t, f) in frames {
        let secs = t.trunc() as u32;
        let usecs = (t.fract() * 1e6) as u32;
        for x in [secs, usecs, f.len() as u32, f.len() as u32] {
            out.extend_from_slice(&x.to_le_bytes());
        }
        out.extend_from_slice(f);
    }
    out
}

#[cfg(test)]
mod tests;
