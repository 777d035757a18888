//! Ethernet II frames: addresses, up to two VLAN tags, EtherType, payload.

/// 802.1Q and 802.1ad tag protocol identifiers.
pub const TPID_8021Q: u16 = 0x8100;
const TPIDS: [u16; 3] = [0x8100, 0x88a8, 0x9100];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EtherError {
    #[error("{0} bytes: shorter than an Ethernet header (14)")]
    Short(usize),
    #[error("VLAN tag at byte {0} runs past the end")]
    Tag(usize),
    #[error("more than two VLAN tags")]
    TooManyTags,
}

/// A parsed frame, borrowing its payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame<'a> {
    pub dst: [u8; 6],
    pub src: [u8; 6],
    /// VLAN ids of the tags in the frame, outermost first.
    pub vlans: Vec<u16>,
    pub ethertype: u16,
    pub payload: &'a [u8],
}

pub fn parse(b: &[u8]) -> Result<Frame<'_>, EtherError> {
    if b.len() < 14 {
        return Err(EtherError::Short(b.len()));
    }
    let mut dst = [0u8; 6];
    let mut src = [0u8; 6];
    dst.copy_from_slice(&b[0..6]);
    src.copy_from_slice(&b[6..12]);
    parse_from_type(dst, src, b, 12)
}

/// The rest of a frame whose EtherType (or first tag) is at byte `at` of
/// `b` (a cooked capture header puts it elsewhere than 12).
pub fn parse_from_type(
    dst: [u8; 6],
    src: [u8; 6],
    b: &[u8],
    mut at: usize,
) -> Result<Frame<'_>, EtherError> {
    let mut vlans = Vec::new();
    loop {
        let Some(t) = b.get(at..at + 2) else {
            return Err(EtherError::Short(b.len()));
        };
        let ethertype = u16::from_be_bytes([t[0], t[1]]);
        if !TPIDS.contains(&ethertype) {
            return Ok(Frame {
                dst,
                src,
                vlans,
                ethertype,
                payload: &b[at + 2..],
            });
        }
        if vlans.len() == 2 {
            return Err(EtherError::TooManyTags);
        }
        let Some(tag) = b.get(at + 2..at + 6) else {
            return Err(EtherError::Tag(at));
        };
        vlans.push(u16::from_be_bytes([tag[0], tag[1]]) & 0x0fff);
        at += 4;
    }
}

/// `aa:bb:cc:dd:ee:ff` (any number of octets).
pub fn mac_text(m: &[u8]) -> String {
    m.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// Reads `aa:bb:cc:dd:ee:ff` (any case).
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut out = [0u8; 6];
    let mut parts = s.split(':');
    for o in &mut out {
        let p = parts.next()?;
        if p.len() != 2 {
            return None;
        }
        *o = u8::from_str_radix(p, 16).ok()?;
    }
    parts.next().is_none().then_some(out)
}

/// A frame: header, an 802.1Q tag when `vlan` is not 0, EtherType, payload.
pub fn build(dst: [u8; 6], src: [u8; 6], vlan: u16, ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(18 + payload.len());
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    if vlan != 0 {
        f.extend_from_slice(&TPID_8021Q.to_be_bytes());
        f.extend_from_slice(&(vlan & 0x0fff).to_be_bytes());
    }
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tagged_and_untagged() {
        let f = build([0xff; 6], [2, 0, 0, 0, 0, 1], 120, 0x88b5, b"hello");
        let p = parse(&f).unwrap();
        assert_eq!(p.vlans, [120]);
        assert_eq!(p.ethertype, 0x88b5);
        assert_eq!(p.payload, b"hello");
        let u = build([0xff; 6], [2, 0, 0, 0, 0, 1], 0, 0x88cc, b"x");
        assert!(parse(&u).unwrap().vlans.is_empty());
        assert_eq!(parse(&f[..13]), Err(EtherError::Short(13)));
        assert_eq!(parse(&f[..15]), Err(EtherError::Tag(12)));
        assert_eq!(
            parse_mac("52:54:00:AB:cd:01"),
            Some([0x52, 0x54, 0, 0xab, 0xcd, 1])
        );
        assert_eq!(parse_mac("52:54:00:ab:cd"), None);
        assert_eq!(parse_mac("52:54:00:ab:cd:01:02"), None);
    }

    #[test]
    fn random_input_never_panics() {
        let mut rng = fastrand::Rng::with_seed(7);
        for _ in 0..20_000 {
            let len = rng.usize(0..40);
            let mut b: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
            if len > 13 && rng.bool() {
                b[12] = 0x81;
                b[13] = 0;
            }
            let _ = parse(&b);
        }
    }
}
