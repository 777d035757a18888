use super::*;

#[test]
fn net_and_ip_formats_step_by_whole_networks() {
    assert_eq!(format_int(3, "net 10.0.0.0/24").unwrap(), "10.0.3.0/24");
    assert_eq!(format_int(300, "ip 10.0.0.10/24").unwrap(), "10.1.44.10");
    assert_eq!(
        format_int(2, "net 2001:db8::/64").unwrap(),
        "2001:db8:0:2::/64"
    );
    assert_eq!(
        format_int(1, "ip 2001:db8::5/64").unwrap(),
        "2001:db8:0:1::5"
    );
    // Past the address space, or not a network: no value, and why.
    assert_eq!(
        format_int(1, "net 255.255.255.0/24"),
        Err(FormatError::Past(
            "the end of the address space from 255.255.255.0/24".into()
        ))
    );
    assert_eq!(format_int(1, "net ten/8"), Err(FormatError::Bad));
}

fn pool(first: &str, last: &str) -> Pool {
    Pool {
        name: "bm".into(),
        span: Span::default(),
        first: first.parse().unwrap(),
        last: last.parse().unwrap(),
        prefix: 24,
        gateway: Some("10.0.0.1".parse().unwrap()),
        dns: vec![],
    }
}

#[test]
fn allocation_skips_reserved_and_reports_exhaustion_once() {
    let mut a = PoolAllocator::new(vec![pool("10.0.0.1", "10.0.0.3")]);
    a.reserve("10.0.0.2".parse().unwrap());
    let mut d = Vec::new();
    assert_eq!(a.allocate("bm", &mut d), Some("10.0.0.3".parse().unwrap()));
    assert_eq!(a.allocate("bm", &mut d), None);
    assert_eq!(a.allocate("bm", &mut d), None);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].code, Code::PoolExhausted);
}

#[test]
fn whole_placeholder_keeps_type_and_partial_is_text() {
    let mut a = PoolAllocator::new(vec![pool("10.0.0.10", "10.0.0.20")]);
    let mut diags = Vec::new();
    let mut e = Expander {
        pools: &mut a,
        diags: &mut diags,
        host: "h".into(),
    };
    let mut vars = Vars::default();
    vars.set("index", Value::Int(10));
    let mut n = crate::yaml::parse(
            "p: ${prefix.bm}\nip: ${ip.bm}\nip2: ${ip.bm}\nname: w-${index:03}\nmac: 52:54:00:00:00:${index:02x}\n",
            0,
        )
        .unwrap();
    n = e.expanded(&n, &mut vars);
    assert_eq!(n.get("p").unwrap().value, Value::Int(24));
    assert_eq!(n.get("ip").unwrap().as_str(), Some("10.0.0.10"));
    assert_eq!(n.get("ip2").unwrap().as_str(), Some("10.0.0.10"));
    assert_eq!(n.get("name").unwrap().as_str(), Some("w-010"));
    assert_eq!(n.get("mac").unwrap().as_str(), Some("52:54:00:00:00:0a"));
    assert_eq!(
        format_int(0x1ff, "mac 52:54:00:00:ff:01").as_deref(),
        Ok("52:54:00:01:01:00")
    );
    assert_eq!(
        format_int(1, "mac ff:ff:ff:ff:ff:ff"),
        Err(FormatError::Past(
            "the last MAC address (ff:ff:ff:ff:ff:ff)".into()
        ))
    );
    assert_eq!(format_int(1, "mac ff:ff:ff:ff:ff"), Err(FormatError::Bad));
    // Found by the inventory fuzz target: a width past u16 panicked
    // in the formatter.
    assert_eq!(format_int(7, "032").as_deref(), Ok(&*format!("{:032}", 7)));
    assert_eq!(format_int(7, "033"), Err(FormatError::Bad));
    assert_eq!(format_int(7, "99999999x"), Err(FormatError::Bad));
    assert_eq!(format_int(7, "18446744073709551616"), Err(FormatError::Bad));
    assert!(diags.is_empty(), "{diags:?}");
}

#[test]
fn dns_is_the_pools_list_spliced_into_lists_or_one_server_by_index() {
    let mut p = pool("10.0.0.10", "10.0.0.20");
    p.dns = vec!["10.0.0.2".parse().unwrap(), "10.0.0.3".parse().unwrap()];
    let mut a = PoolAllocator::new(vec![p]);
    let mut diags = Vec::new();
    let mut e = Expander {
        pools: &mut a,
        diags: &mut diags,
        host: "h".into(),
    };
    let mut n = crate::yaml::parse(
            "all: ${dns.bm}\nflat: [\"${dns.bm}\", 9.9.9.9]\nsecond: ${dns.bm[1]}\nline: nameserver ${dns.bm[0]}\n",
            0,
        )
        .unwrap();
    n = e.expanded(&n, &mut Vars::default());
    assert!(e.diags.is_empty(), "{:?}", e.diags);
    let texts = |k: &str| -> Vec<String> {
        n.get(k)
            .unwrap()
            .as_seq()
            .unwrap()
            .iter()
            .map(|i| i.as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(texts("all"), ["10.0.0.2", "10.0.0.3"]);
    assert_eq!(texts("flat"), ["10.0.0.2", "10.0.0.3", "9.9.9.9"]);
    assert_eq!(n.get("second").unwrap().as_str(), Some("10.0.0.3"));
    assert_eq!(n.get("line").unwrap().as_str(), Some("nameserver 10.0.0.2"));
    // Past the end, and a list of two inside a longer string: errors.
    let n = crate::yaml::parse("a: ${dns.bm[2]}\nb: x ${dns.bm}\n", 0).unwrap();
    e.expanded(&n, &mut Vars::default());
    assert_eq!(diags.len(), 2, "{diags:?}");
    assert!(diags.iter().all(|d| d.code == Code::TemplateVariable));
}

#[test]
fn unknown_placeholder_is_located() {
    let mut a = PoolAllocator::default();
    let mut diags = Vec::new();
    let mut e = Expander {
        pools: &mut a,
        diags: &mut diags,
        host: "h".into(),
    };
    let n = crate::yaml::parse("a: x\nb: ${nope}\n", 0).unwrap();
    e.expanded(&n, &mut Vars::default());
    assert_eq!(diags.len(), 1);
    assert_eq!(diags[0].code, Code::TemplateVariable);
    assert_eq!(diags[0].span.unwrap().line, 2);
}

/// A number past the last MAC or network is said as that, not as a bad
/// format (it used to be).
#[test]
fn an_index_past_the_last_mac_says_so() {
    let f = "mac ff:ff:ff:ff:ff:fe";
    let e = format_int(2, f).unwrap_err();
    assert_eq!(
        e.message(2, f, "index:mac ff:ff:ff:ff:ff:fe"),
        "`${index:mac ff:ff:ff:ff:ff:fe}` runs past the last MAC address (ff:ff:ff:ff:ff:ff) at index 2"
    );
    let e = format_int(1, "mac 52:54").unwrap_err();
    assert!(e
        .message(1, "mac 52:54", "index:mac 52:54")
        .starts_with("bad format `mac 52:54` in `${index:mac 52:54}`"));
}
