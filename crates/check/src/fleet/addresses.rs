//! What must be one host's only (names, MACs, BMCs, addresses), VIPs
//! and machine networks.

use super::*;

/// Who used a value first, to report a second host using it.
pub(super) struct FirstUse<'a, K> {
    pub(super) seen: HashMap<K, (&'a str, Span)>,
}

impl<'a, K: std::hash::Hash + Eq> FirstUse<'a, K> {
    pub(super) fn new() -> Self {
        FirstUse {
            seen: HashMap::new(),
        }
    }

    /// The first user and place of `key` when that was another host;
    /// the first use is kept.
    pub(super) fn claim(&mut self, key: K, host: &'a str, span: Span) -> Option<(&'a str, Span)> {
        match self.seen.get(&key) {
            Some(&(first, at)) if first != host => Some((first, at)),
            Some(_) => None,
            None => {
                self.seen.insert(key, (host, span));
                None
            }
        }
    }
}

/// A host and what checking it found, as the fleet checks see them.
pub(super) struct HostAddresses<'a> {
    pub(super) host: &'a Host,
    pub(super) addresses: &'a [Address],
}

/// What must be one host's only: its name, its MACs (boot MAC among
/// them), its BMC, its addresses. The addresses' first users are given
/// back (a VIP must be none of them).
pub(super) fn check_unique<'a>(
    inv: &Inventory,
    hosts: &[HostAddresses<'a>],
    out: &mut Vec<Diagnostic>,
) -> FirstUse<'a, IpAddr> {
    let cluster = &inv.cluster;
    let mut names: HashMap<&str, Span> = HashMap::new();
    let mut boot_macs = FirstUse::new();
    let mut macs = FirstUse::new();
    let mut bmcs = FirstUse::new();
    let mut ips: FirstUse<IpAddr> = FirstUse::new();
    let required = machine_network_required(inv);
    for h in hosts {
        let host = h.host;
        let name = host.name.value.as_str();
        // Partial states (a bare NMState file, an NNCP, a MachineConfig's
        // file) are changes to hosts, named after their file or policy:
        // the host rules below are for hosts.
        let partial = host.scope() == Scope::Partial;
        let own = |a: &&Address| !crate::br_ex::shared_by_design(cluster, &a.ip);
        if partial {
            shared_static_addresses(cluster, host, h.addresses, out);
            for a in h
                .addresses
                .iter()
                .filter(own)
                .filter(|_| host.applies_to.is_none())
            {
                if let Some((other, span)) = ips.claim(a.ip, name, a.span) {
                    out.push(duplicate_ip(a, name, other, span));
                }
            }
            continue;
        }
        if !nodenet_model::names::is_dns1123(name) {
            out.push(
                Diagnostic::error(Code::HostNameInvalid, format!("host name `{name}` is not a DNS-1123 name"))
                    .at(host.name.span)
                    .host(name)
                    .help("lowercase letters, digits and '-', dot-separated labels of at most 63 characters"),
            );
        }
        if let Some(first) = names.insert(name, host.name.span) {
            out.push(
                Diagnostic::error(
                    Code::DuplicateHostName,
                    format!("host name `{name}` is used twice"),
                )
                .at(host.name.span)
                .host(name)
                .related(first, "first used here"),
            );
        }
        if let Some(mac) = &host.boot_mac {
            if let Some((other, span)) =
                boot_macs.claim(mac.value.to_ascii_lowercase(), name, mac.span)
            {
                out.push(
                    Diagnostic::error(
                        Code::DuplicateBootMac,
                        format!("boot MAC {} is also the boot MAC of `{other}`", mac.value),
                    )
                    .at(mac.span)
                    .host(name)
                    .related(span, "first used here"),
                );
            }
        }
        for nic in &host.nics {
            let Some(mac) = &nic.mac else { continue };
            if let Some((other, span)) = macs.claim(mac.value.to_ascii_lowercase(), name, mac.span)
            {
                out.push(
                    Diagnostic::error(
                        Code::DuplicateMac,
                        format!(
                            "MAC {} of `{}` is also a NIC of `{other}`",
                            mac.value, nic.name.value
                        ),
                    )
                    .at(mac.span)
                    .host(name)
                    .related(span, "first used here"),
                );
            }
        }
        if let Some(bmc) = &host.bmc {
            let key = bmc.address.value.trim_end_matches('/').to_ascii_lowercase();
            if let Some((other, span)) = bmcs.claim(key, name, bmc.address.span) {
                out.push(
                    Diagnostic::error(
                        Code::DuplicateBmcAddress,
                        format!("BMC address is also the BMC of `{other}`"),
                    )
                    .at(bmc.address.span)
                    .host(name)
                    .related(span, "first used here"),
                );
            }
        }
        for a in h.addresses.iter().filter(own) {
            if let Some((other, span)) = ips.claim(a.ip, name, a.span) {
                out.push(duplicate_ip(a, name, other, span));
            }
        }
        bmc_is_host_ip(host, h.addresses, out);
        check_in_machine_network(cluster, h, required, out);
    }
    ips
}

/// A host's node IP must be on a machine network (where one is
/// `required`).
pub(super) fn check_in_machine_network(
    cluster: &Cluster,
    h: &HostAddresses,
    required: bool,
    out: &mut Vec<Diagnostic>,
) {
    let name = h.host.name.value.as_str();
    // The node IP must be on a machine network; other VLANs (storage,
    // ...) may be elsewhere, so only a host with none inside is wrong,
    // and not one that takes an address by DHCP or autoconf (the node
    // IP may be that one: the installer and assisted-service judge the
    // address the node has, not the state's static ones).
    if !cluster.machine_networks.is_empty() && !h.addresses.is_empty() && required {
        let inside = h.addresses.iter().any(|a| {
            cluster
                .machine_networks
                .iter()
                .any(|n| n.value.contains(&a.ip))
        });
        // Read only for the rare host with none inside.
        let dynamic = || {
            h.host.network.as_ref().is_some_and(|n| {
                let net = crate::network::Network::read(n);
                net.dynamic(crate::network::Family::V4) || net.dynamic(crate::network::Family::V6)
            })
        };
        if !inside && !dynamic() {
            let a = &h.addresses[0];
            out.push(
                Diagnostic::error(
                    Code::IpOutsideMachineNetwork,
                    format!(
                        "no static address of `{name}` is inside a machine network ({}): assisted-service never starts the install (host validation `belongs-to-machine-cidr`)",
                        cluster
                            .machine_networks
                            .iter()
                            .map(|n| n.value.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
                .at(a.span)
                .host(name),
            );
        }
    }
}

/// The API and ingress VIPs: as many as the families, in the machine
/// networks' order, inside them, apart from each other and from every
/// host's address (`host_ips`).
pub(super) fn check_vips(inv: &Inventory, host_ips: &FirstUse<IpAddr>, out: &mut Vec<Diagnostic>) {
    let cluster = &inv.cluster;
    // VIPs (a single-node cluster's are the node's address, or refused:
    // `sites::check_single_node` says so).
    let none = Vec::new();
    let sno = crate::sites::single_node(inv);
    let api = if sno { &none } else { &cluster.api_vips };
    let ingress = if sno { &none } else { &cluster.ingress_vips };
    // The first machine network's family is the cluster's primary one.
    let primary_v4 = cluster
        .machine_networks
        .first()
        .map(|m| m.value.addr().is_ipv4());
    let dual_stack = cluster
        .machine_networks
        .iter()
        .any(|m| m.value.addr().is_ipv4())
        && cluster
            .machine_networks
            .iter()
            .any(|m| m.value.addr().is_ipv6());
    for (list, what) in [(api, "API"), (ingress, "ingress")] {
        if let [a, b] = &list[..] {
            if let (true, Some(v4), true) = (
                dual_stack,
                primary_v4,
                a.value.is_ipv4() != b.value.is_ipv4(),
            ) {
                if a.value.is_ipv4() != v4 {
                    let (first, second) = if v4 {
                        ("IPv4", "IPv6")
                    } else {
                        ("IPv6", "IPv4")
                    };
                    out.push(
                        Diagnostic::error(
                            Code::VipFamily,
                            format!("the {what} VIPs are not in the machine networks' order: {} comes first, but the cluster's primary family (the first machine network's) is {first}", a.value),
                        )
                        .at(a.span)
                        .help(format!("list the {first} VIP first, then the {second} one (assisted-service: \"All networks must have the same IP family first\")")),
                    );
                }
            }
            if a.value.is_ipv4() == b.value.is_ipv4() {
                out.push(
                    Diagnostic::error(
                        Code::VipFamily,
                        format!("two {what} VIPs of one family ({} and {}): one must be an IPv4 address, the other an IPv6", a.value, b.value),
                    )
                    .at(b.span)
                    .help("openshift-install refuses it: give one VIP per family of a dual-stack cluster"),
                );
            }
        }
        if let ([only], true, Some(v4)) = (&list[..], dual_stack, primary_v4) {
            if only.value.is_ipv4() != v4 {
                let family = if v4 { "IPv4" } else { "IPv6" };
                out.push(
                    Diagnostic::error(
                        Code::VipFamily,
                        format!("the {what} VIP {} is not of the cluster's primary family ({family}, the first machine network's) on a dual-stack cluster", only.value),
                    )
                    .at(only.span)
                    .help(format!("give an {family} VIP first (or one per family)")),
                );
            }
        }
        if list.len() > 2 {
            out.push(
                Diagnostic::error(
                    Code::VipCount,
                    format!("{} {what} VIPs; at most 2 (one IPv4, one IPv6)", list.len()),
                )
                .at(list[2].span),
            );
        }
        for vip in list {
            if let Some((host, span)) = host_ips.seen.get(&vip.value) {
                out.push(
                    Diagnostic::error(
                        Code::VipIsHostIp,
                        format!("{what} VIP {} is an address of host `{host}`", vip.value),
                    )
                    .at(vip.span)
                    .related(*span, "host address"),
                );
            }
            if !cluster.machine_networks.is_empty()
                && !cluster
                    .machine_networks
                    .iter()
                    .any(|n| n.value.contains(&vip.value))
            {
                out.push(
                    Diagnostic::error(
                        Code::VipOutsideMachineNetwork,
                        format!("{what} VIP {} is inside no machine network", vip.value),
                    )
                    .at(vip.span),
                );
            }
        }
    }
    for a in api {
        if let Some(i) = ingress.iter().find(|i| i.value == a.value) {
            out.push(
                Diagnostic::error(
                    Code::ApiVipEqualsIngressVip,
                    format!("API VIP and ingress VIP are both {}", a.value),
                )
                .at(i.span)
                .related(a.span, "API VIP"),
            );
        }
    }
    if !api.is_empty() && ingress.is_empty() || api.is_empty() && !ingress.is_empty() {
        let span = api.first().or(ingress.first()).map(|v| v.span);
        let mut d = Diagnostic::error(
            Code::VipCount,
            "API and ingress VIPs must be given together",
        );
        if let Some(s) = span {
            d = d.at(s);
        }
        out.push(d);
    }
}

pub(super) fn duplicate_ip(a: &Address, name: &str, other: &str, first: Span) -> Diagnostic {
    Diagnostic::error(
        Code::DuplicateIp,
        format!("{} is also an address of `{other}`", a.ip),
    )
    .at(a.span)
    .host(name)
    .related(first, "first used here")
}

/// A static address in a state that reaches several nodes (an NNCP
/// selecting by role, a MachineConfig's `cluster.yml`) is given to every
/// one of them.
pub(super) fn shared_static_addresses(
    cluster: &Cluster,
    host: &Host,
    addresses: &[Address],
    out: &mut Vec<Diagnostic>,
) {
    let Some(reach) = &host.applies_to else {
        return;
    };
    // A host route or loopback address may be meant for every node, and
    // so are link-local and OVN-Kubernetes' masquerade addresses.
    for a in addresses.iter().filter(|a| {
        !a.ip.is_loopback()
            && !crate::br_ex::shared_by_design(cluster, &a.ip)
            && a.prefix
                .is_none_or(|p| p < if a.ip.is_ipv4() { 32 } else { 128 })
    }) {
        out.push(
            Diagnostic::error(
                Code::DuplicateIp,
                format!(
                    "{} is a static address in a state applied to {reach}: every one of them gets it",
                    a.ip
                ),
            )
            .at(a.span)
            .host(host.name.value.clone())
            .help("give each node its own address (a policy per node, `<host>.yml` per host, or DHCP)"),
        );
    }
}
