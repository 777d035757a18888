use super::*;

fn entry(raw: &str) -> Entry {
    Entry {
        key: "mac-address".into(),
        raw: raw.into(),
        span: Default::default(),
    }
}

#[test]
fn list_keys_as_networkmanager_matches_them() {
    assert_eq!(list_key("address", "address"), Some((-1, 0)));
    assert_eq!(list_key("addresses", "address"), Some((-1, 1)));
    assert_eq!(list_key("address0", "address"), Some((0, 0)));
    assert_eq!(list_key("addresses12", "address"), Some((12, 1)));
    assert_eq!(list_key("routes3", "route"), Some((3, 1)));
    assert_eq!(list_key("address01", "address"), None);
    assert_eq!(list_key("route1_options", "route"), None);
    assert_eq!(list_key("addr-gen-mode", "address"), None);
}

#[test]
fn legacy_address_forms() {
    let a = read_ip_item("192.168.0.5;24;192.168.0.1;", false, false).unwrap();
    assert_eq!(
        (a.addr.to_string(), a.prefix, a.gateway.as_deref()),
        ("192.168.0.5".into(), 24, Some("192.168.0.1"))
    );
    assert!(a.notes.is_empty());
    let a = read_ip_item("2.3.4.5/24,2.3.4.6", false, false).unwrap();
    assert_eq!(a.gateway.as_deref(), Some("2.3.4.6"));
    // No prefix: /24 for IPv4, /64 for IPv6, with a note.
    let a = read_ip_item("5.6.7.8", false, false).unwrap();
    assert_eq!((a.prefix, a.notes.len()), (24, 1));
    let a = read_ip_item("3:4::14", true, false).unwrap();
    assert_eq!(a.prefix, 64);
    // A gateway where the prefix goes: the prefix defaults.
    let a = read_ip_item("4.5.6.7/1.2.3.4", false, false).unwrap();
    assert_eq!((a.prefix, a.gateway.as_deref()), (24, Some("1.2.3.4")));
    let a = read_ip_item("3:4::16,66", true, false).unwrap();
    assert_eq!((a.prefix, a.gateway), (66, None));
    assert!(read_ip_item("10.0.0.300/24", false, false).is_err());
    assert!(read_ip_item("10.0.0.3/24/1.1.1.1/9", false, false).is_err());
    assert!(read_ip_item("10.0.0.x/24", false, false).is_err());
    assert!(read_ip_item("fd00::1/64", false, false).is_err());
}

#[test]
fn legacy_route_forms() {
    let r = read_ip_item("1.2.3.0/24,2.3.4.8,99", false, true).unwrap();
    assert_eq!(
        (r.gateway.as_deref(), r.metric),
        (Some("2.3.4.8"), Some(99))
    );
    let r = read_ip_item("a:b:c:d::/64;f:e:d:c:1:2:3:4;99;", true, true).unwrap();
    assert_eq!((r.prefix, r.metric), (64, Some(99)));
    let r = read_ip_item("1.1.1.3/13,,", false, true).unwrap();
    assert_eq!((r.gateway, r.metric), (None, None));
    let r = read_ip_item("1.1.1.7/17,0.0.0.0", false, true).unwrap();
    assert_eq!(r.gateway, None);
    let r = read_ip_item("1.1.1.10/21,,0", false, true).unwrap();
    assert_eq!(r.metric, Some(0));
    // IPv6: a metric where the next hop goes.
    let r = read_ip_item("8:9::5/124,6", true, true).unwrap();
    assert_eq!((r.gateway, r.metric), (None, Some(6)));
    let r = read_ip_item("7:8::4/125/::,5", true, true).unwrap();
    assert_eq!((r.gateway, r.metric), (None, Some(5)));
    // Routes default to /24 (IPv4) and /128 (IPv6).
    assert_eq!(read_ip_item("5.6.7.8", false, true).unwrap().prefix, 24);
    assert_eq!(read_ip_item("8:7::1", true, true).unwrap().prefix, 128);
    assert!(read_ip_item("1.2.3.0/24,gw", false, true).is_err());
}

#[test]
fn macs_in_hex_and_decimal() {
    for raw in [
        "00:11:aa:BB:CC:55",
        "0:11:aa:bb:cc:55",
        "00-11-AA-BB-CC-55",
        "0;17;170;187;204;85;",
        "0;17;170;187;204;85",
    ] {
        assert_eq!(
            read_mac(&entry(raw), 6).as_deref(),
            Some("00:11:AA:BB:CC:55"),
            "{raw}"
        );
    }
    for raw in [
        "001122334455",
        "00:11:22:33:44",
        "00:11-22:33:44:55",
        "0;17;300;1;2;3",
        "00:11:22:33:44:55:66",
    ] {
        assert_eq!(read_mac(&entry(raw), 6), None, "{raw}");
    }
}
