//! `nodenet netverify run`: on one node, for the plan's window, send probe
//! frames on each planned VLAN of each NIC (and untagged), at most the
//! plan's rate per NIC, and record every probe frame heard.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::{Plan, PlanNic, RESULT_KIND, VERSION};
use crate::socket::{self, LinkGuard, RawSocket};
use crate::{ether, WiresError};

/// IEEE 802 Local Experimental EtherType 1: never a production protocol.
pub const ETHERTYPE: u16 = 0x88b5;
const MAGIC: &[u8; 4] = b"NNV1";
const BROADCAST: [u8; 6] = [0xff; 6];
/// A probe's payload is padded to this (a minimum Ethernet frame).
const SMALL_PAYLOAD: usize = 46;

/// What one probe frame says about itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Probe {
    pub run: [u8; 8],
    pub host: String,
    pub nic: String,
    pub mac: [u8; 6],
    /// The VLAN it was sent on (0: untagged).
    pub vlan: u16,
    /// A full-size frame (the NIC's planned MTU).
    pub full: bool,
    pub seq: u32,
}

/// The probe's payload, padded to `size` bytes (at least its content).
pub fn encode(p: &Probe, size: usize) -> Vec<u8> {
    let mut b = Vec::with_capacity(size.max(64));
    b.extend_from_slice(MAGIC);
    b.extend_from_slice(&p.run);
    b.extend_from_slice(&p.vlan.to_be_bytes());
    b.push(u8::from(p.full));
    b.extend_from_slice(&p.seq.to_be_bytes());
    b.extend_from_slice(&p.mac);
    for s in [&p.host, &p.nic] {
        let s = &s.as_bytes()[..s.len().min(255)];
        b.push(s.len() as u8);
        b.extend_from_slice(s);
    }
    if b.len() < size {
        b.resize(size, 0);
    }
    b
}

/// Reads a probe payload; `None` for anything that is not one.
pub fn decode(b: &[u8]) -> Option<Probe> {
    if b.get(..4)? != MAGIC {
        return None;
    }
    let mut run = [0u8; 8];
    run.copy_from_slice(b.get(4..12)?);
    let vlan = u16::from_be_bytes([*b.get(12)?, *b.get(13)?]);
    let full = *b.get(14)? != 0;
    let seq = u32::from_be_bytes(b.get(15..19)?.try_into().ok()?);
    let mut mac = [0u8; 6];
    mac.copy_from_slice(b.get(19..25)?);
    let mut at = 25;
    let mut text = || -> Option<String> {
        let n = usize::from(*b.get(at)?);
        let s = b.get(at + 1..at + 1 + n)?;
        at += 1 + n;
        Some(String::from_utf8_lossy(s).into_owned())
    };
    let host = text()?;
    let nic = text()?;
    Some(Probe {
        run,
        host,
        nic,
        mac,
        vlan,
        full,
        seq,
    })
}

/// A probe frame ready to send: its VLAN, and where its sequence number
/// goes (set anew for each send).
struct Outgoing {
    bytes: Vec<u8>,
    vlan: u16,
    seq_at: usize,
}

impl Outgoing {
    fn new(mac: [u8; 6], vlan: u16, payload: &[u8]) -> Outgoing {
        let header = if vlan == 0 { 14 } else { 18 };
        Outgoing {
            bytes: ether::build(BROADCAST, mac, vlan, ETHERTYPE, payload),
            vlan,
            // After the magic, run id, VLAN and full-size flag.
            seq_at: header + 15,
        }
    }
}

fn run_bytes(run: &str) -> [u8; 8] {
    let mut out = [0u8; 8];
    for (i, o) in out.iter_mut().enumerate() {
        *o = run
            .get(2 * i..2 * i + 2)
            .and_then(|h| u8::from_str_radix(h, 16).ok())
            .unwrap_or(0);
    }
    out
}

/// (sender host, sender NIC, sender MAC, VLAN sent, tag seen).
type HeardKey = (String, String, String, u16, u16);

/// Frames a NIC heard from one sender NIC on one VLAN.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Heard {
    pub host: String,
    pub nic: String,
    pub mac: String,
    /// The VLAN the sender tagged it with (0: untagged).
    pub sent_vlan: u16,
    /// The tag it arrived with (0: untagged).
    pub seen_vlan: u16,
    pub frames: u32,
    /// Of those, full-size frames.
    pub full_frames: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NicResult {
    /// The plan's NIC name.
    pub name: String,
    /// The node's interface it ran on (found by MAC, else by name);
    /// `None` when the node has no such NIC.
    pub interface: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
    /// Frames sent, per VLAN (0: untagged).
    pub sent: BTreeMap<u16, u32>,
    /// Full-size frames that could not be sent (the NIC's MTU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_error: Option<String>,
    pub heard: Vec<Heard>,
}

/// What one node's run sent and heard, with the plan it ran.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub kind: String,
    pub version: u32,
    pub host: String,
    pub plan: Plan,
    pub window_ms: u64,
    pub nics: Vec<NicResult>,
    /// What it changed on the NICs (and put back).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<String>,
    /// Probe frames of another run heard (another plan, an earlier run).
    #[serde(default)]
    pub foreign_frames: u32,
}

impl RunResult {
    pub fn from_json(text: &str) -> Result<RunResult, String> {
        crate::read_kind(text, RESULT_KIND, "a netverify result")
    }
}

pub struct RunOptions {
    pub host: String,
    /// Overrides the plan's window (tests, a quick re-run).
    pub window: Option<Duration>,
}

/// Runs the plan's part for `opts.host`. Links brought up and MTUs raised
/// are put back before it returns, also on an error or when `stop` is set.
pub fn run(plan: &Plan, opts: &RunOptions, stop: &AtomicBool) -> Result<RunResult, WiresError> {
    let me = plan.host(&opts.host).ok_or_else(|| {
        let names: Vec<&str> = plan.hosts.iter().map(|h| h.name.as_str()).collect();
        WiresError::Usage(format!(
            "host `{}` is not in the plan (it has {})",
            opts.host,
            names.join(", ")
        ))
    })?;
    let run = run_bytes(&plan.run);
    let local = local_interfaces()?;
    let mut guard = LinkGuard::default();
    let mut nics: Vec<NicResult> = Vec::new();
    // Per NIC that exists here: (its result's index, socket), and apart
    // from the sockets (polled while a frame's sequence number is
    // rewritten) the frames it cycles through.
    let mut senders: Vec<(usize, RawSocket)> = Vec::new();
    let mut outgoing: Vec<Vec<Outgoing>> = Vec::new();
    for pn in &me.nics {
        let (r, opened) = open_nic(pn, &me.name, run, &local, &mut guard)?;
        if let Some((sock, frames)) = opened {
            senders.push((nics.len(), sock));
            outgoing.push(frames);
        }
        nics.push(r);
    }
    let changed = guard.changed();
    let window = opts
        .window
        .unwrap_or(Duration::from_secs(u64::from(plan.window_s)));
    let start = Instant::now();
    let mut exchange = Exchange {
        run,
        senders: &senders,
        outgoing: &mut outgoing,
        nics: &mut nics,
        heard: vec![BTreeMap::new(); me.nics.len()],
        foreign: 0,
    };
    exchange.until(start + window, plan.rate, stop)?;
    let Exchange { heard, foreign, .. } = exchange;
    let window_ms = start.elapsed().as_millis() as u64;
    drop(senders);
    for (n, h) in nics.iter_mut().zip(heard) {
        n.heard = heard_list(h);
    }
    let errors = guard.restore();
    if !errors.is_empty() {
        return Err(WiresError::Restore(errors.join("; ")));
    }
    Ok(RunResult {
        kind: RESULT_KIND.into(),
        version: VERSION,
        host: me.name.clone(),
        plan: plan.clone(),
        window_ms,
        nics,
        changed,
        foreign_frames: foreign,
    })
}

/// The node's interfaces by MAC, for NICs renamed on this boot:
/// (MAC, name).
fn local_interfaces() -> Result<Vec<(String, String)>, WiresError> {
    Ok(std::fs::read_dir("/sys/class/net")
        .map_err(|e| WiresError::Io("/sys/class/net".into(), e))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter_map(|n| Some((socket::mac(&n).ok()?, n)))
        .collect())
}

/// A NIC's open socket and the frames it cycles through.
type Opened = (RawSocket, Vec<Outgoing>);

/// A planned NIC found here (by MAC, else by name), brought up with its
/// MTU and a socket open, with the frames it sends; only its result
/// when the node has no such NIC.
fn open_nic(
    pn: &PlanNic,
    host: &str,
    run: [u8; 8],
    local: &[(String, String)],
    guard: &mut LinkGuard,
) -> Result<(NicResult, Option<Opened>), WiresError> {
    let by_mac = pn.mac.as_ref().and_then(|m| {
        local
            .iter()
            .find(|(lm, _)| lm.eq_ignore_ascii_case(m))
            .map(|(_, n)| n.clone())
    });
    let iface = by_mac.or_else(|| {
        local
            .iter()
            .any(|(_, n)| *n == pn.name)
            .then(|| pn.name.clone())
    });
    let mut r = NicResult {
        name: pn.name.clone(),
        interface: iface.clone(),
        mac: None,
        sent: BTreeMap::new(),
        send_error: None,
        heard: Vec::new(),
    };
    let Some(iface) = iface else {
        return Ok((r, None));
    };
    let io = |e| WiresError::Io(iface.clone(), e);
    let mac_text = socket::mac(&iface).map_err(io)?;
    let mac = ether::parse_mac(&mac_text).unwrap_or([0; 6]);
    r.mac = Some(mac_text);
    guard.up(&iface).map_err(io)?;
    let mut full_error = None;
    if let Some(mtu) = pn.mtu {
        if let Err(e) = guard.mtu_at_least(&iface, mtu) {
            full_error = Some(format!("raising the MTU to {mtu}: {e}"));
        }
    }
    let sock = RawSocket::open(&iface, ETHERTYPE).map_err(io)?;
    sock.promiscuous().map_err(io)?;
    let mut frames = Vec::new();
    for vlan in std::iter::once(0).chain(pn.vlans.iter().copied()) {
        let probe = |full| Probe {
            run,
            host: host.to_string(),
            nic: pn.name.clone(),
            mac,
            vlan,
            full,
            seq: 0,
        };
        frames.push(Outgoing::new(
            mac,
            vlan,
            &encode(&probe(false), SMALL_PAYLOAD),
        ));
        if let (Some(mtu), None) = (pn.mtu, &full_error) {
            // The payload fills the MTU: header and tag come on top,
            // as they do for a full IP packet on a VLAN.
            frames.push(Outgoing::new(
                mac,
                vlan,
                &encode(&probe(true), mtu as usize),
            ));
        }
    }
    r.send_error = full_error;
    Ok((r, Some((sock, frames))))
}

/// The window's sending and listening, over the NICs that exist here.
struct Exchange<'a> {
    run: [u8; 8],
    senders: &'a [(usize, RawSocket)],
    outgoing: &'a mut [Vec<Outgoing>],
    nics: &'a mut [NicResult],
    /// Per NIC: frames heard and full-size frames heard.
    heard: Vec<BTreeMap<HeardKey, (u32, u32)>>,
    /// Probe frames of another run.
    foreign: u32,
}

impl Exchange<'_> {
    /// Sends at `rate` frames a second per NIC and records what arrives,
    /// until `end` or `stop`.
    fn until(&mut self, end: Instant, rate: u32, stop: &AtomicBool) -> Result<(), WiresError> {
        let interval = Duration::from_secs_f64(1.0 / f64::from(rate.max(1)));
        let mut next_send = Instant::now();
        let mut cursor = 0usize;
        let mut seq = 0u32;
        let refs: Vec<&RawSocket> = self.senders.iter().map(|(_, s)| s).collect();
        while !stop.load(Ordering::Relaxed) && Instant::now() < end {
            let now = Instant::now();
            if now >= next_send {
                self.send_one_each(cursor, seq);
                cursor += 1;
                seq = seq.wrapping_add(1);
                next_send += interval;
                if next_send < now {
                    next_send = now + interval;
                }
            }
            let wait = next_send
                .saturating_duration_since(Instant::now())
                .min(end.saturating_duration_since(Instant::now()));
            let ready =
                socket::wait_readable(&refs, wait).map_err(|e| WiresError::Io("poll".into(), e))?;
            for i in ready {
                self.receive(i)?;
            }
        }
        Ok(())
    }

    /// One frame per NIC per tick: the rate holds per NIC.
    fn send_one_each(&mut self, cursor: usize, seq: u32) {
        for ((ni, sock), frames) in self.senders.iter().zip(self.outgoing.iter_mut()) {
            if frames.is_empty() {
                continue;
            }
            let at = cursor % frames.len();
            let f = &mut frames[at];
            f.bytes[f.seq_at..f.seq_at + 4].copy_from_slice(&seq.to_be_bytes());
            match sock.send(&f.bytes) {
                Ok(()) => *self.nics[*ni].sent.entry(f.vlan).or_default() += 1,
                Err(e) => {
                    self.nics[*ni]
                        .send_error
                        .get_or_insert(format!("sending on VLAN {}: {e}", f.vlan));
                }
            }
        }
    }

    /// Everything waiting on sender `i`'s socket.
    fn receive(&mut self, i: usize) -> Result<(), WiresError> {
        let (ni, sock) = &self.senders[i];
        while let Some(r) = sock
            .recv()
            .map_err(|e| WiresError::Io(self.nics[*ni].name.clone(), e))?
        {
            if r.outgoing {
                continue;
            }
            let Ok(f) = ether::parse(&r.frame) else {
                continue;
            };
            if f.ethertype != ETHERTYPE {
                continue;
            }
            let Some(p) = decode(f.payload) else { continue };
            if p.run != self.run {
                self.foreign += 1;
                continue;
            }
            let seen = f.vlans.first().copied().unwrap_or(0);
            let key = (p.host, p.nic, ether::mac_text(&p.mac), p.vlan, seen);
            let e = self.heard[*ni].entry(key).or_default();
            e.0 += 1;
            if p.full {
                e.1 += 1;
            }
        }
        Ok(())
    }
}

fn heard_list(h: BTreeMap<HeardKey, (u32, u32)>) -> Vec<Heard> {
    h.into_iter()
        .map(
            |((host, nic, mac, sent_vlan, seen_vlan), (frames, full_frames))| Heard {
                host,
                nic,
                mac,
                sent_vlan,
                seen_vlan,
                frames,
                full_frames,
            },
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_reads_back_and_pads_to_size() {
        let p = Probe {
            run: [1, 2, 3, 4, 5, 6, 7, 8],
            host: "node-a".into(),
            nic: "eth1".into(),
            mac: [0x52, 0x54, 0, 0, 0, 1],
            vlan: 120,
            full: true,
            seq: 77,
        };
        let b = encode(&p, 9000);
        assert_eq!(b.len(), 9000);
        assert_eq!(decode(&b), Some(p.clone()));
        assert_eq!(encode(&p, 10).len(), 25 + 7 + 5);
        assert_eq!(decode(&b[..30]), None);
        assert_eq!(decode(b"NNV0xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"), None);
        assert_eq!(run_bytes("0102030405060708"), [1, 2, 3, 4, 5, 6, 7, 8]);
    }

    #[test]
    fn random_payloads_never_panic() {
        let mut rng = fastrand::Rng::with_seed(5);
        for _ in 0..20_000 {
            let mut b: Vec<u8> = (0..rng.usize(0..80)).map(|_| rng.u8(..)).collect();
            if b.len() >= 4 && rng.bool() {
                b[..4].copy_from_slice(MAGIC);
            }
            let _ = decode(&b);
        }
    }
}
