use super::*;

#[test]
fn reads_what_tcpdump_wrote() {
    let file: &[u8] = include_bytes!("../../tests/data/lldpd-1.0.16.pcap");
    let c = parse(file).unwrap();
    assert_eq!(c.linktype, 1);
    assert_eq!(c.packets.len(), 3);
    assert!(c.stopped.is_none());
    for p in &c.packets {
        let f = c.frame(p).unwrap();
        assert_eq!(f.ethertype, crate::lldp::ETHERTYPE);
        assert_eq!(f.dst, crate::lldp::NEAREST_BRIDGE);
    }
    assert!(c.packets[1].time > c.packets[0].time);
}

#[test]
fn write_then_read_and_cut_short() {
    let a = [1u8; 60];
    let b = [2u8; 70];
    let file = write(&[(1.5, &a), (2.25, &b)]);
    let c = parse(&file).unwrap();
    assert_eq!(c.packets.len(), 2);
    assert_eq!(c.packets[1].data, &b);
    assert_eq!(c.packets[1].time, 2.25);
    let cut = parse(&file[..file.len() - 10]).unwrap();
    assert_eq!(cut.packets.len(), 1);
    assert!(cut.stopped.unwrap().contains("cut short"));
    assert_eq!(parse(&file[..10]).unwrap_err(), PcapError::Short(10));
    let mut ng = file.clone();
    ng[..4].copy_from_slice(&[0x0a, 0x0d, 0x0d, 0x0a]);
    assert_eq!(parse(&ng).unwrap_err(), PcapError::Pcapng);
}

#[test]
fn cooked_captures() {
    // SLL: outgoing, ARPHRD_ETHER, 6-byte address, LLDP.
    let du = crate::lldp::encode(&crate::lldp::tests_sample());
    let mut sll = vec![0, 4, 0, 1, 0, 6, 2, 0, 0, 0, 0, 9, 0, 0, 0x88, 0xcc];
    sll.extend_from_slice(&du);
    let c = Capture {
        linktype: LINKTYPE_LINUX_SLL,
        packets: Vec::new(),
        stopped: None,
    };
    let p = Packet {
        number: 1,
        offset: 24,
        time: 0.0,
        data: &sll,
        wire_len: sll.len() as u32,
    };
    let f = c.frame(&p).unwrap();
    assert_eq!(f.ethertype, 0x88cc);
    assert_eq!(f.src, [2, 0, 0, 0, 0, 9]);
    assert!(crate::lldp::parse(f.payload).is_ok());
    // SLL2 with a VLAN tag re-inserted after the header.
    let mut sll2 = vec![
        0x81, 0x00, 0, 0, 0, 0, 0, 2, 0, 1, 0, 6, 2, 0, 0, 0, 0, 9, 0, 0,
    ];
    sll2.extend_from_slice(&[0, 120, 0x88, 0xb5]);
    sll2.extend_from_slice(b"payload");
    let c2 = Capture {
        linktype: LINKTYPE_LINUX_SLL2,
        ..c
    };
    let p2 = Packet { data: &sll2, ..p };
    let f = c2.frame(&p2).unwrap();
    assert_eq!(f.vlans, [120]);
    assert_eq!(f.ethertype, 0x88b5);
    assert_eq!(f.payload, b"payload");
}

#[test]
fn random_and_mangled_files_never_panic() {
    let mut rng = fastrand::Rng::with_seed(42);
    let good: &[u8] = include_bytes!("../../tests/data/lldpd-1.0.16.pcap");
    for _ in 0..5_000 {
        let mut m = good.to_vec();
        for _ in 0..rng.usize(1..8) {
            let i = rng.usize(..m.len());
            m[i] = rng.u8(..);
        }
        m.truncate(rng.usize(0..=m.len()));
        if let Ok(c) = parse(&m) {
            for p in &c.packets {
                if let Ok(f) = c.frame(p) {
                    let _ = crate::lldp::parse(f.payload);
                }
            }
        }
        let len = rng.usize(0..200);
        let junk: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
        let _ = parse(&junk);
    }
}
