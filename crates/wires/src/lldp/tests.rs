use super::*;

fn sample() -> Lldpdu {
    tests_sample()
}

#[test]
fn encode_then_parse_is_the_identity() {
    let du = sample();
    assert_eq!(parse(&encode(&du)).unwrap(), du);
}

/// Found by fuzzing: ids of NUL bytes read as empty text, which
/// encoded to a TLV too short to parse. They read as hex.
#[test]
fn ids_of_nul_bytes_read_as_hex_not_empty() {
    let mut bytes = vec![0x02, 0x08, 0x01, 0, 0, 0, 0, 0, 0, 0];
    bytes.extend([0x04, 0x03, 0x05, 0, 0]); // port id: ifname "\0\0"
    bytes.extend([0x06, 0x02, 0x00, 0x78, 0x00, 0x00]);
    let du = parse(&bytes).unwrap();
    assert_eq!(du.chassis_id.value, "00000000000000");
    assert_eq!(du.port_id.value, "0000");
    assert!(parse(&encode(&du)).is_ok());
}

/// The LLDPDU lldpd 1.0.16 sent (captured with tcpdump): chassis MAC,
/// port MAC, TTL 4, system name/description, capabilities, an IPv6
/// management address, port description, 802.3 aggregation, MAC/PHY
/// and a custom maximum frame size TLV.
#[test]
fn parses_what_lldpd_sends() {
    let frame: &[u8] = include_bytes!("../../tests/data/lldpd-1.0.16.bin");
    let eth = crate::ether::parse(frame).unwrap();
    assert_eq!(eth.ethertype, ETHERTYPE);
    let du = parse(eth.payload).unwrap();
    assert_eq!(du.chassis_id.subtype, "mac");
    assert_eq!(du.chassis_id.value, "12:16:45:46:c0:56");
    assert_eq!(du.port_id.value, "12:16:45:46:c0:56");
    assert_eq!(du.ttl, 4);
    assert_eq!(du.system_name.as_deref(), Some("sw1"));
    assert_eq!(du.port_description.as_deref(), Some("swp7"));
    assert_eq!(du.management_addresses, ["fe80::1016:45ff:fe46:c056"]);
    assert_eq!(du.max_frame_size, Some(1518));
    assert_eq!(
        du.aggregation,
        Some(Aggregation {
            capable: true,
            enabled: false,
            port_id: 0
        })
    );
}

#[test]
fn mandatory_tlvs_in_order() {
    let good = encode(&sample());
    // Port id first.
    let mut swapped = good.clone();
    let c_len = usize::from(good[1]) + 2;
    let p_len = usize::from(good[c_len + 1]) + 2;
    swapped[..c_len + p_len]
        .copy_from_slice(&[&good[c_len..c_len + p_len], &good[..c_len]].concat());
    let e = parse(&swapped).unwrap_err();
    assert_eq!(e.offset, 0);
    assert!(e.what.contains("chassis id"), "{e}");
    assert!(parse(&[]).is_err());
    assert!(parse(&[0, 0]).is_err());
}

#[test]
fn a_tlv_past_the_end_is_an_error_at_its_offset() {
    let good = encode(&sample());
    let e = parse(&good[..22]).unwrap_err();
    assert!(e.what.contains("are left"), "{e}");
    // Ethernet padding (zeros) after End is fine.
    let mut padded = good.clone();
    padded.extend_from_slice(&[0; 30]);
    assert!(parse(&padded).is_ok());
}

/// Seeded random bytes, random truncations and byte flips of a good
/// LLDPDU: the parser returns, never panics (cargo-fuzz targets will
/// do this at scale; this keeps the property in the test suite).
#[test]
fn random_and_mangled_input_never_panics() {
    let mut rng = fastrand::Rng::with_seed(0x11d9);
    let good = encode(&sample());
    for _ in 0..20_000 {
        let len = rng.usize(0..600);
        let bytes: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
        let _ = parse(&bytes);
        let mut m = good.clone();
        for _ in 0..rng.usize(1..6) {
            let i = rng.usize(..m.len());
            m[i] = rng.u8(..);
        }
        m.truncate(rng.usize(0..=m.len()));
        let _ = parse(&m);
    }
}
