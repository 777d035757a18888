//! LLDP frames and pcap captures: parsed or refused, never a panic; what
//! parses encodes to bytes that parse again.
#![no_main]
use libfuzzer_sys::fuzz_target;
use nodenet_wires::{ether, lldp, pcap};

fuzz_target!(|data: &[u8]| {
    if let Ok(du) = lldp::parse(data) {
        lldp::parse(&lldp::encode(&du)).expect("our own encoding parses");
    }
    if let Ok(frame) = ether::parse(data) {
        let _ = lldp::parse(frame.payload);
    }
    if let Ok(capture) = pcap::parse(data) {
        for p in &capture.packets {
            if let Ok(frame) = capture.frame(p) {
                let _ = lldp::parse(frame.payload);
            }
        }
    }
});
