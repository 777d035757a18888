//! The mapping of each concern, on keyfiles as people and NetworkManager
//! write them (nmstate's own are covered by the gc corpus round trip).

use serde_json::{json, Value as J};

use nodenet_model::{Code, Diagnostic};

use crate::keyfile;

/// Converts keyfiles (name, text); returns the state and the findings.
fn import(files: &[(&str, &str)]) -> (J, Vec<Diagnostic>) {
    let parsed: Vec<keyfile::Keyfile> = files
        .iter()
        .enumerate()
        .map(|(i, (name, text))| keyfile::parse(name, text.as_bytes(), i as u32).unwrap())
        .collect();
    let refs: Vec<&keyfile::Keyfile> = parsed.iter().collect();
    let mut diags = Vec::new();
    let state = super::convert(&refs, false, &mut diags);
    (state, diags)
}

fn iface<'a>(state: &'a J, name: &str) -> &'a J {
    state["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == name)
        .unwrap_or_else(|| panic!("{name} missing: {state}"))
}

/// The (line, code) of each finding, in order.
fn at(diags: &[Diagnostic]) -> Vec<(u32, Code)> {
    let mut found: Vec<(u32, Code)> = diags
        .iter()
        .map(|d| (d.span.expect("located").line, d.code))
        .collect();
    found.sort_by_key(|(line, code)| (*line, code.as_str()));
    found
}

const ETH: &str = "[connection]\nid=eth0\ntype=ethernet\ninterface-name=eth0\n";

#[test]
fn ipv6_disabled_without_addr_gen_mode_is_no_ipv6_block() {
    let (s, d) = import(&[(
        "a",
        &format!("{ETH}[ipv4]\nmethod=auto\n[ipv6]\nmethod=disabled\n"),
    )]);
    assert!(d.is_empty(), "{d:?}");
    assert_eq!(iface(&s, "eth0").get("ipv6"), None);
    let (s, _) = import(&[(
        "a",
        &format!("{ETH}[ipv4]\nmethod=auto\n[ipv6]\nmethod=disabled\naddr-gen-mode=0\n"),
    )]);
    assert_eq!(iface(&s, "eth0")["ipv6"], json!({"enabled": false}));
    // No [ipv6] at all: NetworkManager's auto, with its default
    // address generation (stable privacy).
    let (s, _) = import(&[("a", ETH)]);
    assert_eq!(iface(&s, "eth0")["ipv6"]["addr-gen-mode"], "stable-privacy");
}

#[test]
fn connection_settings_of_the_interface() {
    let text = format!(
        "{ETH}lldp=1\nmptcp-flags=0x38\n[ethernet]\naccept-all-mac-addresses=0\n\
         [user]\nnmstate.interface.description=rack 3\nother=x\n"
    );
    let (s, d) = import(&[("a", &text)]);
    let i = iface(&s, "eth0");
    assert_eq!(i["lldp"], json!({"enabled": true}));
    assert_eq!(i["mptcp"], json!({"address-flags": ["signal", "subflow"]}));
    assert_eq!(i["accept-all-mac-addresses"], false);
    assert_eq!(i["description"], "rack 3");
    assert_eq!(at(&d), vec![(11, Code::KeyfileUnmapped)], "{d:?}");
    // MPTCP flags NMState cannot say, an LLDP mode that is none.
    let (_, d) = import(&[("a", &format!("{ETH}mptcp-flags=0x12\nlldp=7\n"))]);
    assert_eq!(
        at(&d),
        vec![(5, Code::KeyfileUnmapped), (6, Code::KeyfileInvalid)]
    );
    let (s, _) = import(&[("a", &format!("{ETH}mptcp-flags=1\nlldp=0\n"))]);
    assert_eq!(iface(&s, "eth0")["mptcp"], json!({"address-flags": []}));
    assert_eq!(iface(&s, "eth0")["lldp"], json!({"enabled": false}));
}

#[test]
fn ethtool_features_rings_coalescing_and_pause() {
    let text = format!(
        "{ETH}[ethtool]\nfeature-rx=false\nfeature-tx-udp_tnl-segmentation=on\n\
         feature-bogus=true\nring-tx=512\ncoalesce-adaptive-rx=1\ncoalesce-rx-usecs=x\n\
         pause-rx=true\nchannels-rx=2\n"
    );
    let (s, d) = import(&[("a", &text)]);
    assert_eq!(
        iface(&s, "eth0")["ethtool"],
        json!({
            "feature": {"rx-checksum": false, "tx-udp_tnl-segmentation": true},
            "ring": {"tx": 512},
            "coalesce": {"adaptive-rx": true},
        })
    );
    assert_eq!(
        at(&d),
        vec![
            (8, Code::KeyfileInvalid),
            (11, Code::KeyfileInvalid),
            // pause rx/tx only with pause-autoneg=false
            (12, Code::KeyfileUnmapped),
            (13, Code::KeyfileUnmapped),
        ]
    );
}

#[test]
fn sriov_vfs() {
    let text = format!(
        "{ETH}[sriov]\ntotal-vfs=8\nautoprobe-drivers=0\n\
         vf.1=mac=00:11:22:33:44:55 spoof-check=false vlans=100.2.ad\nvf.0=trust=true\n\
         vf.2=mac=nope\n"
    );
    let (s, d) = import(&[("a", &text)]);
    assert_eq!(
        iface(&s, "eth0")["ethernet"]["sr-iov"],
        json!({
            "total-vfs": 8,
            "drivers-autoprobe": false,
            "vfs": [
                {"id": 0, "trust": true},
                {"id": 1, "mac-address": "00:11:22:33:44:55", "spoof-check": false,
                 "vlan-id": 100, "qos": 2, "vlan-proto": "802.1ad"},
            ],
        })
    );
    assert_eq!(at(&d), vec![(10, Code::KeyfileInvalid)]);
}

#[test]
fn wired_8021x_paths_and_secrets() {
    let text = format!(
        "{ETH}[802-1x]\neap=tls;\nidentity=host\nca-cert=file:///etc/ca.pem\n\
         client-cert=data:;base64,AAAA\nprivate-key-password=hunter2\npin=1234\n"
    );
    let (s, d) = import(&[("a", &text)]);
    assert_eq!(
        iface(&s, "eth0")["802.1x"],
        json!({"eap-methods": ["tls"], "identity": "host", "ca-cert": "/etc/ca.pem",
               "private-key-password": "hunter2"})
    );
    assert_eq!(
        at(&d),
        vec![(9, Code::KeyfileUnmapped), (11, Code::KeyfileUnmapped)]
    );
    // A secret's value is never in a message.
    assert!(d.iter().all(|d| !d.message.contains("1234")), "{d:?}");
}

#[test]
fn wait_ip_from_may_fail() {
    let ip = |v4: &str, v6: &str| {
        let text =
            format!("{ETH}[ipv4]\nmethod=auto\n{v4}[ipv6]\nmethod=auto\naddr-gen-mode=0\n{v6}");
        let (s, d) = import(&[("a", &text)]);
        (iface(&s, "eth0").get("wait-ip").cloned(), at(&d))
    };
    let no = "may-fail=false\n";
    let yes = "may-fail=true\n";
    assert_eq!(ip(no, no).0, Some(json!("ipv4+ipv6")));
    assert_eq!(ip(no, "").0, Some(json!("ipv4")));
    assert_eq!(ip(yes, no).0, Some(json!("ipv6")));
    assert_eq!(ip(yes, yes).0, Some(json!("any")));
    assert_eq!(ip("", "").0, None);
    // Waiting for a disabled family is not imported.
    let text = format!("{ETH}[ipv4]\nmethod=auto\nmay-fail=false\n[ipv6]\nmethod=disabled\n{no}");
    let (s, d) = import(&[("a", &text)]);
    assert_eq!(iface(&s, "eth0")["wait-ip"], "ipv4");
    assert_eq!(at(&d), vec![(10, Code::KeyfileUnmapped)]);
}

#[test]
fn dhcp_names_ids_and_token() {
    let text = format!(
        "{ETH}[ipv4]\nmethod=auto\ndhcp-fqdn=node.example.com\ndhcp-client-id=duid\n\
         [ipv6]\nmethod=auto\naddr-gen-mode=0\ndhcp-duid=llt\ntoken=::5\ndhcp-send-hostname=false\n\
         dhcp-hostname=n6\n"
    );
    let (s, d) = import(&[("a", &text)]);
    let i = iface(&s, "eth0");
    assert_eq!(i["ipv4"]["dhcp-custom-hostname"], "node.example.com");
    assert_eq!(i["ipv4"]["dhcp-client-id"], "iaid+duid");
    assert_eq!(i["ipv6"]["dhcp-duid"], "llt");
    assert_eq!(i["ipv6"]["token"], "::5");
    assert_eq!(i["ipv6"]["dhcp-send-hostname"], false);
    // No host name is sent, so none is imported.
    assert_eq!(at(&d), vec![(15, Code::KeyfileUnmapped)]);
    // nmstate writes a dotted IPv4 name as the FQDN option.
    let (_, d) = import(&[(
        "a",
        &format!("{ETH}[ipv4]\nmethod=auto\ndhcp-hostname=a.b\n"),
    )]);
    assert_eq!(at(&d), vec![(7, Code::KeyfileUnmapped)]);
}

#[test]
fn routing_rules_and_dns_options() {
    let text = format!(
        "{ETH}[ipv4]\nmethod=manual\naddress1=10.0.0.2/24\ndns-options=rotate;ndots:2;\n\
         routing-rule1=priority 5 from 10.0.0.0/24 table 100\n\
         routing-rule2=priority 6 from 0.0.0.0/0 fwmark 0x10/0xff type blackhole\n\
         routing-rule3=priority 7 oif eth0 table 5\nrouting-rule4=priority x table 5\n\
         [ipv6]\nmethod=auto\naddr-gen-mode=0\nrouting-rule1=priority 8 to 2001:db8::/32 iif eth0 table 9\n"
    );
    let (s, d) = import(&[("a", &text)]);
    assert_eq!(
        s["route-rules"]["config"],
        json!([
            {"priority": 5, "ip-from": "10.0.0.0/24", "route-table": 100, "family": "ipv4"},
            {"priority": 6, "fwmark": "0x10", "fwmask": "0xff", "action": "blackhole", "family": "ipv4"},
            {"priority": 8, "ip-to": "2001:db8::/32", "iif": "eth0", "route-table": 9, "family": "ipv6"},
        ])
    );
    assert_eq!(
        s["dns-resolver"]["config"]["options"],
        json!(["rotate", "ndots:2"])
    );
    assert_eq!(
        at(&d),
        vec![(11, Code::KeyfileUnmapped), (12, Code::KeyfileInvalid)]
    );
}

#[test]
fn vlan_flags_and_priority_maps() {
    let text = "[connection]\nid=v\ntype=vlan\ninterface-name=eth0.5\n[vlan]\nparent=eth0\nid=5\n\
                flags=6\negress-priority-map=1:2;3:4;\n[ipv4]\nmethod=disabled\n[ipv6]\nmethod=disabled\n";
    let (s, d) = import(&[("v", text)]);
    assert!(d.is_empty(), "{d:?}");
    assert_eq!(
        iface(&s, "eth0.5")["vlan"],
        json!({"base-iface": "eth0", "id": 5, "reorder-headers": false, "loose-binding": true,
               "registration-protocol": "gvrp",
               "egress-qos-map": [{"from": 1, "to": 2}, {"from": 3, "to": 4}]})
    );
}

#[test]
fn stacked_interfaces() {
    let no_ip = "[ipv4]\nmethod=disabled\n[ipv6]\nmethod=disabled\n";
    let files = [
        (
            "vx",
            format!("[connection]\nid=vx\ntype=vxlan\ninterface-name=vx0\n[vxlan]\nid=7\nremote=192.0.2.1\nlearning=false\nttl=3\n{no_ip}"),
        ),
        (
            "mt",
            format!("[connection]\nid=mt\ntype=macvlan\ninterface-name=mt0\n[macvlan]\nparent=eth0\nmode=4\ntap=true\n{no_ip}"),
        ),
        (
            "ve",
            format!("[connection]\nid=ve\ntype=veth\ninterface-name=ve0\n[veth]\npeer=ve1\n{no_ip}"),
        ),
        (
            "ms",
            format!("[connection]\nid=ms\ntype=macsec\ninterface-name=ms0\n[macsec]\nparent=eth0\nmode=0\nmka-cak=00\nmka-ckn=11\nvalidation=1\n{no_ip}"),
        ),
        (
            "vr",
            format!("[connection]\nid=vr\ntype=vrf\ninterface-name=vrf0\n[vrf]\ntable=9\n{no_ip}"),
        ),
        (
            "p",
            "[connection]\nid=p\ntype=ethernet\ninterface-name=eth3\nmaster=vrf0\nport-type=vrf\n[ipv4]\nmethod=manual\naddress1=192.0.2.3/24\n".to_string(),
        ),
    ];
    let refs: Vec<(&str, &str)> = files.iter().map(|(n, t)| (*n, t.as_str())).collect();
    let (s, d) = import(&refs);
    assert_eq!(
        iface(&s, "vx0")["vxlan"],
        json!({"id": 7, "remote": "192.0.2.1", "learning": false})
    );
    assert_eq!(iface(&s, "mt0")["type"], "mac-vtap");
    assert_eq!(
        iface(&s, "mt0")["mac-vtap"],
        json!({"base-iface": "eth0", "mode": "passthru"})
    );
    assert_eq!(iface(&s, "ve0")["veth"], json!({"peer": "ve1"}));
    assert_eq!(iface(&s, "ms0")["macsec"]["validation"], "check");
    assert_eq!(iface(&s, "ms0")["macsec"]["send-sci"], true);
    assert_eq!(
        iface(&s, "vrf0")["vrf"],
        json!({"port": ["eth3"], "route-table-id": 9})
    );
    // A VRF port keeps its IP settings.
    assert_eq!(iface(&s, "eth3")["ipv4"]["address"][0]["ip"], "192.0.2.3");
    assert_eq!(at(&d), vec![(9, Code::KeyfileUnmapped)], "{d:?}");
}

#[test]
fn libreswan_is_ipsec_other_vpns_are_not_imported() {
    let ipsec = "[connection]\nid=tun1\ntype=vpn\ninterface-name=ipsec9\n[vpn]\nservice-type=org.freedesktop.NetworkManager.libreswan\n\
                 right=192.0.2.9\nleftmodecfgclient=no\ndpddelay=10\ntype=tunnel\nmystery=1\n\
                 [vpn-secrets]\npskvalue=s3cret\nxauthpassword=pa55w0rd\n[ipv4]\nmethod=auto\n";
    let openvpn = "[connection]\nid=o\ntype=vpn\n[vpn]\nservice-type=org.freedesktop.NetworkManager.openvpn\n";
    let (s, d) = import(&[("i", ipsec), ("o", openvpn)]);
    let i = iface(&s, "tun1");
    assert_eq!(i["type"], "ipsec");
    assert_eq!(
        i["libreswan"],
        json!({"right": "192.0.2.9", "leftmodecfgclient": false, "dpddelay": 10,
               "type": "tunnel", "psk": "s3cret"})
    );
    assert_eq!(s["interfaces"].as_array().unwrap().len(), 1);
    assert_eq!(
        at(&d),
        vec![
            (3, Code::KeyfileUnmapped),
            (4, Code::KeyfileUnmapped),
            (11, Code::KeyfileUnmapped),
            (14, Code::KeyfileUnmapped)
        ]
    );
    assert!(d.iter().all(|d| !d.message.contains("pa55w0rd")), "{d:?}");
}

#[test]
fn bond_ports_config() {
    let bond = "[connection]\nid=b\ntype=bond\ninterface-name=bond0\n[bond]\nmode=active-backup\n\
                [ipv4]\nmethod=disabled\n[ipv6]\nmethod=disabled\n";
    let port = |n: &str, extra: &str| {
        format!("[connection]\nid={n}\ntype=ethernet\ninterface-name={n}\nmaster=bond0\nport-type=bond\n[bond-port]\n{extra}")
    };
    let (a, b) = (port("eth1", "prio=7\n"), port("eth2", "queue-id=0\n"));
    let (s, d) = import(&[("b", bond), ("1", &a), ("2", &b)]);
    assert!(d.is_empty(), "{d:?}");
    assert_eq!(
        iface(&s, "bond0")["link-aggregation"]["ports-config"],
        json!([{"name": "eth1", "priority": 7}, {"name": "eth2"}])
    );
    // All zero: nmstate writes no [bond-port], nodenet no ports-config.
    let a = port("eth1", "prio=0\n");
    let (s, _) = import(&[("b", bond), ("1", &a)]);
    assert_eq!(
        iface(&s, "bond0")["link-aggregation"].get("ports-config"),
        None
    );
}

#[test]
fn ovs_names_patches_dpdk_and_port_vlans() {
    let files = [
        ("br", "[connection]\nid=br\ntype=ovs-bridge\ninterface-name=br-with-a-long-name\n[ovs-bridge]\nfail-mode=secure\n"),
        ("pp", "[connection]\nid=pp\ntype=ovs-port\ninterface-name=patch-to-the-other\nmaster=br-with-a-long-name\nport-type=ovs-bridge\n[ovs-port]\nvlan-mode=trunk\ntrunks=10,20-29\n"),
        ("pi", "[connection]\nid=pi\ntype=ovs-interface\ninterface-name=patch-to-the-other\nmaster=pp\nport-type=ovs-port\n[ovs-interface]\ntype=patch\n[ovs-patch]\npeer=other\n[ipv4]\nmethod=auto\n"),
        ("dp", "[connection]\nid=dp\ntype=ovs-port\ninterface-name=dpdk0\nmaster=br-with-a-long-name\nport-type=ovs-bridge\n[ovs-port]\ntag=5\nvlan-mode=access\n[ovs-other-config]\ndata.x=1\n"),
        ("di", "[connection]\nid=di\ntype=ovs-interface\ninterface-name=dpdk0\nmaster=dp\nport-type=ovs-port\n[ovs-interface]\ntype=dpdk\n[ovs-dpdk]\ndevargs=0000:01:00.0\nn-rxq=2\n[ovs-external-ids]\ndata.owner=me\n[ipv4]\nmethod=disabled\n[ipv6]\nmethod=disabled\n"),
    ];
    let (s, d) = import(&files);
    let br = iface(&s, "br-with-a-long-name");
    assert_eq!(br["bridge"]["options"], json!({"fail-mode": "secure"}));
    assert_eq!(
        br["bridge"]["port"],
        json!([
            {"name": "dpdk0", "vlan": {"mode": "access", "tag": 5}},
            {"name": "patch-to-the-other", "vlan": {"mode": "trunk", "trunk-tags": [
                {"id": 10}, {"id-range": {"min": 20, "max": 29}}]}},
        ])
    );
    let patch = iface(&s, "patch-to-the-other");
    assert_eq!(patch["patch"], json!({"peer": "other"}));
    // A patch has no kernel device: no IP.
    assert_eq!(patch.get("ipv4"), None);
    let dpdk = iface(&s, "dpdk0");
    assert_eq!(
        dpdk["dpdk"],
        json!({"devargs": "0000:01:00.0", "rx-queue": 2})
    );
    assert_eq!(dpdk["ovs-db"], json!({"external_ids": {"owner": "me"}}));
    let mut names: Vec<(u32, Code)> = d.iter().map(|d| (d.span.unwrap().file, d.code)).collect();
    names.sort_by_key(|(file, _)| *file);
    assert_eq!(
        names,
        vec![(2, Code::KeyfileInvalid), (3, Code::KeyfileUnmapped)],
        "{d:?}"
    );
    // An OVS internal interface is a kernel one: 15 bytes at most.
    let (_, d) = import(&[("i", "[connection]\nid=i\ntype=ovs-interface\ninterface-name=an-internal-port\nmaster=p\nport-type=ovs-port\n")]);
    assert!(
        d.iter().any(|d| d.is_error() && d.span.unwrap().line == 4),
        "{d:?}"
    );
}

#[test]
fn a_uuid_nmstate_derived_from_a_name_not_kept_is_warned() {
    // nmstate's UUID for `ethernet://uplink0`, on a profile matched by MAC
    // that does not keep that name.
    let text = "[connection]\nid=up\nuuid=038f6b08-9f06-5229-aafb-aab62158f725\ntype=ethernet\n\
                [ethernet]\nmac-address=52:54:00:7A:10:02\n";
    let (_, d) = import(&[("a", text)]);
    assert_eq!(at(&d), vec![(3, Code::KeyfileUnmapped)]);
    // A random (version 4) UUID is no sign of nmstate: nothing to say.
    let text = text.replace("5229", "4229");
    let (_, d) = import(&[("a", &text)]);
    assert!(d.is_empty(), "{d:?}");
}

#[test]
fn parents_named_by_uuid_and_disabled_families_with_settings() {
    let eth = "[connection]\nid=up\nuuid=9b4a1c2e-0d0e-4f7a-9d8c-1b2a3c4d5e6f\ntype=ethernet\n\
               interface-name=eth0\n[ipv4]\nmethod=disabled\ndns=192.0.2.53;\nmay-fail=false\n\
               [ipv6]\nmethod=disabled\n";
    let mv = "[connection]\nid=mv\ntype=macvlan\ninterface-name=mv0\n[macvlan]\n\
              parent=9B4A1C2E-0D0E-4F7A-9D8C-1B2A3C4D5E6F\nmode=2\n";
    let (s, d) = import(&[("e", eth), ("m", mv)]);
    assert_eq!(iface(&s, "mv0")["mac-vlan"]["base-iface"], "eth0");
    // Disabled families that say more are read (the DNS server is kept;
    // waiting for a disabled family is not imported).
    assert_eq!(iface(&s, "eth0")["ipv4"], json!({"enabled": false}));
    assert_eq!(s["dns-resolver"]["config"]["server"], json!(["192.0.2.53"]));
    assert_eq!(at(&d), vec![(9, Code::KeyfileUnmapped)], "{d:?}");
}
