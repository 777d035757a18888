//! `nodenet lldp`: LLDP neighbours heard on the node's NICs (listening,
//! no IP needed) or read from a capture file.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::observation::{NicObservation, Observation};
use crate::socket::{self, LinkGuard, RawSocket};
use crate::{ether, lldp, pcap, WiresError};

pub struct ListenOptions {
    /// The NICs to listen on; empty: every physical NIC.
    pub nics: Vec<String>,
    pub timeout: Duration,
    /// The node's name in the observation (default: its host name).
    pub host: String,
    /// Bring NICs that are down up for the listening (and down again
    /// after). A probe after a change listens to the links as they are.
    pub bring_up: bool,
}

/// Decodes one frame's LLDPDU, or says why it is not one.
fn lldpdu_of(frame: &[u8]) -> Result<Option<lldp::Lldpdu>, String> {
    let f = ether::parse(frame).map_err(|e| e.to_string())?;
    if f.ethertype != lldp::ETHERTYPE {
        return Ok(None);
    }
    lldp::parse(f.payload)
        .map(Some)
        .map_err(|e| format!("LLDPDU {e}"))
}

/// Listens on every NIC until each has a neighbour or `timeout` passes.
/// NICs that are down are brought up (link only) and put down again
/// before it returns, also on an error or when `stop` is set (a signal).
pub fn listen(opts: &ListenOptions, stop: &AtomicBool) -> Result<Observation, WiresError> {
    let names = if opts.nics.is_empty() {
        socket::physical_nics().map_err(|e| WiresError::Io("/sys/class/net".into(), e))?
    } else {
        opts.nics.clone()
    };
    if names.is_empty() {
        return Err(WiresError::Usage(
            "no physical NIC found (name them with --interface)".into(),
        ));
    }
    let mut guard = LinkGuard::default();
    let mut sockets = Vec::new();
    let mut obs = Observation::new(&opts.host, "listen");
    for n in &names {
        let io = |e| WiresError::Io(n.clone(), e);
        if opts.bring_up {
            guard.up(n).map_err(io)?;
        }
        let s = RawSocket::open(n, lldp::ETHERTYPE).map_err(io)?;
        for group in std::iter::once(lldp::NEAREST_BRIDGE).chain(lldp::OTHER_GROUPS) {
            s.join(group).map_err(io)?;
        }
        sockets.push(s);
        let mut nic = NicObservation::new(n);
        nic.mac = socket::mac(n).ok();
        nic.mtu = socket::mtu(n).ok();
        obs.nics.push(nic);
    }
    let start = Instant::now();
    let deadline = start + opts.timeout;
    let refs: Vec<&RawSocket> = sockets.iter().collect();
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now >= deadline || obs.nics.iter().all(|n| n.neighbor.is_some()) {
            break;
        }
        // Short waits, so a signal is noticed quickly.
        let wait = (deadline - now).min(Duration::from_millis(200));
        let ready =
            socket::wait_readable(&refs, wait).map_err(|e| WiresError::Io("poll".into(), e))?;
        for i in ready {
            while let Some(r) = sockets[i]
                .recv()
                .map_err(|e| WiresError::Io(names[i].clone(), e))?
            {
                if r.outgoing {
                    continue;
                }
                let at = start.elapsed().as_millis() as u64;
                match lldpdu_of(&r.frame) {
                    Ok(Some(du)) => obs.nics[i].heard(du, at),
                    Ok(None) => {}
                    Err(e) => obs.warnings.push(format!("{}: {e}", names[i])),
                }
            }
        }
    }
    obs.listened_ms = start.elapsed().as_millis() as u64;
    for nic in &mut obs.nics {
        nic.carrier = Some(socket::carrier(&nic.name));
    }
    drop(sockets);
    let errors = guard.restore();
    if !errors.is_empty() {
        return Err(WiresError::Restore(errors.join("; ")));
    }
    Ok(obs)
}

/// The LLDP neighbours of a capture file (classic pcap), as if heard on
/// one NIC named `nic`: every frame that is not a readable LLDPDU is a
/// warning naming the frame; the file's own damage ends the reading with
/// a warning, the frames before it are kept.
pub fn from_pcap(
    bytes: &[u8],
    file: &str,
    host: &str,
    nic: &str,
) -> Result<Observation, WiresError> {
    let capture = pcap::parse(bytes).map_err(|e| WiresError::Input(format!("{file}: {e}")))?;
    let mut obs = Observation::new(host, &format!("pcap:{file}"));
    let mut n = NicObservation::new(nic);
    let t0 = capture.packets.first().map(|p| p.time).unwrap_or(0.0);
    for p in &capture.packets {
        let at = ((p.time - t0).max(0.0) * 1000.0) as u64;
        let frame = match capture.frame(p) {
            Ok(f) => f,
            Err(e) => {
                obs.warnings.push(format!("frame {}: {e}", p.number));
                continue;
            }
        };
        if frame.ethertype != lldp::ETHERTYPE {
            continue;
        }
        match lldp::parse(frame.payload) {
            Ok(du) => n.heard(du, at),
            Err(e) => obs.warnings.push(format!("frame {}: LLDPDU {e}", p.number)),
        }
        obs.listened_ms = at;
    }
    if let Some(why) = capture.stopped {
        obs.warnings.push(why);
    }
    obs.nics.push(n);
    Ok(obs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capture_of_good_and_malformed_frames_keeps_the_good_and_warns_per_frame() {
        let du = lldp::encode(&lldp::tests_sample());
        let good = ether::build(
            lldp::NEAREST_BRIDGE,
            [2, 0, 0, 0, 0, 1],
            0,
            lldp::ETHERTYPE,
            &du,
        );
        let cut = ether::build(
            lldp::NEAREST_BRIDGE,
            [2, 0, 0, 0, 0, 1],
            0,
            lldp::ETHERTYPE,
            &du[..9],
        );
        let arp = ether::build([0xff; 6], [2, 0, 0, 0, 0, 1], 0, 0x0806, &[0; 28]);
        let file = pcap::write(&[(1.0, &good), (2.0, &cut), (3.0, &arp), (4.0, &[1, 2, 3])]);
        let o = from_pcap(&file, "x.pcap", "node-a", "eth0").unwrap();
        assert_eq!(o.nics[0].frames, 1);
        assert_eq!(o.nics[0].neighbor.as_ref().unwrap().port_id.value, "swp3");
        assert_eq!(o.warnings.len(), 2, "{:?}", o.warnings);
        assert!(
            o.warnings[0].starts_with("frame 2: LLDPDU byte "),
            "{:?}",
            o.warnings
        );
        assert!(o.warnings[1].starts_with("frame 4: "), "{:?}", o.warnings);
        assert!(from_pcap(b"not a capture at all....", "y", "h", "n").is_err());
    }
}
