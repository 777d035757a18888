//! The inventory's `cluster:` (networks, VIPs, provisioning, br-ex, the node
//! agent), its `credentials:` and its address `pools:`.

use super::*;

pub(super) fn native_cluster(d: &mut Decoder, c: &Node) -> Cluster {
    let mut cluster = Cluster {
        span: Some(c.span),
        ..Cluster::default()
    };
    if !d.check_fields(c, "cluster", CLUSTER_FIELDS) {
        return cluster;
    }
    cluster.name = d.string(c, "name");
    cluster.base_domain = d.string(c, "baseDomain");
    for n in d.seq(c, "machineNetworks") {
        let n = n.get("cidr").unwrap_or(n);
        cluster.machine_networks.extend(d.network(n));
    }
    if let Some(v) = c.get("apiVIPs") {
        cluster.api_vips = d.ips(v);
    }
    if let Some(v) = c.get("ingressVIPs") {
        cluster.ingress_vips = d.ips(v);
    }
    if let Some(p) = c.get("provisioning") {
        if d.check_fields(p, "cluster.provisioning", PROVISIONING_FIELDS) {
            cluster.provisioning.network = p
                .get("network")
                .and_then(|v| super::super::provisioning_mode(d, v));
            cluster.provisioning.cidr = p.get("cidr").and_then(|v| d.network(v));
            cluster.provisioning.interface = d.string(p, "interface");
            cluster.provisioning.allow_lacp = d.bool(p, "allowLacp").unwrap_or(false);
        }
    }
    cluster.cluster_os_image = d.string(c, "clusterOSImage");
    cluster.failure_domain = d.string(c, "failureDomain");
    cluster.nic_binding = c.get("nicBinding").and_then(|v| nic_binding(d, v));
    if let Some(v) = c.get("noDefaultRoute") {
        for f in v.as_seq().unwrap_or_default() {
            match f.as_str() {
                Some(fam @ ("ipv4" | "ipv6")) => cluster
                    .no_default_route
                    .push(Located::new(fam.to_string(), f.span)),
                _ => d.push(
                    Diagnostic::error(
                        Code::InvalidValue,
                        format!("noDefaultRoute lists `{f}`, which is not `ipv4` or `ipv6`"),
                    )
                    .at(f.span),
                ),
            }
        }
        if v.as_seq().is_none() {
            d.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    "noDefaultRoute must be a list of IP families (`[ipv6]`)",
                )
                .at(v.span),
            );
        }
    }
    if let Some(v) = c.get("nodeNames") {
        match v.as_str() {
            Some("short") => cluster.node_names = NodeNames::Short,
            Some("fqdn") => cluster.node_names = NodeNames::Fqdn,
            _ => d.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("nodeNames `{v}` is not `short` or `fqdn`"),
                )
                .at(v.span)
                .help(
                    "how nodes are named in Kubernetes: `kubernetes.io/hostname` selectors use it",
                ),
            ),
        }
    }
    cluster.ssh_key = d.string(c, "sshKey").map(|s| s.value);
    if let Some(v) = c.get("brEx") {
        match v.as_str() {
            Some("configure-ovs") => {
                cluster.br_ex = Some(Located::new(BrExSource::ConfigureOvs, v.span))
            }
            Some("derive") => cluster.br_ex = Some(Located::new(BrExSource::Derive, v.span)),
            Some("none") => cluster.br_ex = Some(Located::new(BrExSource::None, v.span)),
            _ => d.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("brEx `{v}` is not `configure-ovs`, `derive` or `none`"),
                )
                .at(v.span)
                .help("who defines br-ex: `configure-ovs` (RHCOS, at boot), `derive` (nodenet, from the intent, written under /etc/nmstate/openshift) or `none` (no OVN-Kubernetes on these nodes)"),
            ),
        }
    }
    for n in d.seq(c, "ovnMasquerade") {
        cluster.ovn_masquerade.extend(d.cidr(n));
    }
    if let Some(a) = c.get("nodeAgent") {
        cluster.node_agent = node_agent(d, a);
    }
    if let Some(ic) = c.get("installConfig") {
        cluster.install_config = super::super::install_config::base(d, ic, &mut cluster);
    }
    if let Some(ac) = c.get("agentConfig") {
        cluster.agent_config = super::super::agent_config::base(d, ac);
    }
    if let Some(ci) = c.get("clusterInstance") {
        cluster.ztp = super::super::ztp::base(d, ci);
    }
    for n in d.seq(c, "behindNat") {
        cluster.behind_nat.extend(d.network(n));
    }
    cluster
}

/// `cluster.nodeAgent`.
pub(super) fn node_agent(d: &mut Decoder, a: &Node) -> Option<NodeAgent> {
    if !d.check_fields(a, "cluster.nodeAgent", NODE_AGENT_FIELDS) {
        return None;
    }
    let mut agent = NodeAgent {
        image: d.string(a, "image"),
        rendered_image_push_spec: d.string(a, "renderedImagePushSpec"),
        rendered_image_push_secret: d.string(a, "renderedImagePushSecret"),
        base_image_pull_secret: d.string(a, "baseImagePullSecret"),
        os_image_url: d.string(a, "osImageURL"),
        span: a.span,
        ..NodeAgent::default()
    };
    if let Some(v) = a.get("layering") {
        match v.as_str() {
            Some("on-cluster") => agent.layering = Layering::OnCluster,
            Some("out-of-cluster") => agent.layering = Layering::OutOfCluster,
            _ => d.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("layering `{v}` is not `on-cluster` or `out-of-cluster`"),
                )
                .at(v.span),
            ),
        }
    }
    let seconds = |d: &mut Decoder, key: &str| -> Option<Located<u64>> {
        let v = a.get(key)?;
        match v.as_i64() {
            Some(n) if (1..=86_400).contains(&n) => Some(Located::new(n as u64, v.span)),
            _ => {
                d.push(
                    Diagnostic::error(
                        Code::InvalidValue,
                        format!("`{key}` must be a number of seconds (1-86400), found `{v}`"),
                    )
                    .at(v.span),
                );
                None
            }
        }
    };
    agent.checkpoint_timeout = seconds(d, "checkpointTimeout");
    agent.probe_timeout = seconds(d, "probeTimeout");
    for p in d.seq(a, "probes") {
        if let Some(text) = p.scalar_text() {
            agent.probes.push(Located::new(text, p.span));
        }
    }
    Some(agent)
}

/// `cluster.rendezvousIP`: the agent installer's rendezvous host, for
/// agent-config.yaml when no master has a static address (DHCP).
pub(super) fn native_rendezvous(d: &mut Decoder, root: &Node) -> Option<Located<IpAddr>> {
    root.get("cluster")?
        .get("rendezvousIP")
        .and_then(|v| d.ip(v))
}

pub(super) fn native_credentials(
    d: &mut Decoder,
    k: &Node,
    v: &Node,
    name: &str,
) -> Option<Credentials> {
    let what = format!("credentials `{name}`");
    if !d.check_fields(v, &what, CREDENTIAL_FIELDS) {
        return None;
    }
    let username = d.required_string(v, "username", &what)?.value;
    let password = if let Some(env) = d.string(v, "passwordEnv") {
        PasswordSource::Env(env.value)
    } else if let Some(file) = d.string(v, "passwordFile") {
        PasswordSource::File(file.value)
    } else {
        d.push(
            Diagnostic::error(Code::MissingField, format!("{what} has neither `passwordEnv` nor `passwordFile`"))
                .at(k.span)
                .help("passwords are never written in the inventory; name an environment variable or a file"),
        );
        return None;
    };
    Some(Credentials { username, password })
}

pub(super) fn native_pool(d: &mut Decoder, k: &Node, v: &Node) -> Option<Pool> {
    let name = k.scalar_text().unwrap_or_default();
    let what = format!("pool `{name}`");
    if v.is_null() {
        d.push(
            Diagnostic::error(Code::MissingField, format!("{what} has no `range`"))
                .at(k.span)
                .help("a pool is `{range: FIRST-LAST, prefix: N}`, with `gateway` and `dns` if its hosts use them"),
        );
        return None;
    }
    if !d.check_fields(v, &what, POOL_FIELDS) {
        return None;
    }
    let range = d.required_string(v, "range", &what)?;
    let span = v.get("range").map(|r| r.span).unwrap_or(v.span);
    let parsed = range.value.split_once('-').and_then(|(a, b)| {
        Some((
            a.trim().parse::<IpAddr>().ok()?,
            b.trim().parse::<IpAddr>().ok()?,
        ))
    });
    let Some((first, last)) = parsed.filter(|(a, b)| a.is_ipv4() == b.is_ipv4() && a <= b) else {
        d.push(
            Diagnostic::error(
                Code::IpInvalid,
                format!(
                    "pool range `{}` is not `FIRST-LAST` of one IP family, ascending",
                    range.value
                ),
            )
            .at(span),
        );
        return None;
    };
    let max = if first.is_ipv4() { 32 } else { 128 };
    let prefix = match v.get("prefix") {
        Some(p) => match p.as_i64() {
            Some(x) if (0..=max).contains(&x) => x as u8,
            _ => {
                d.push(
                    Diagnostic::error(
                        Code::IpPrefixRange,
                        format!("pool prefix `{p}` is not 0-{max}"),
                    )
                    .at(p.span),
                );
                return None;
            }
        },
        None => {
            d.push(
                Diagnostic::error(Code::MissingField, format!("{what} has no `prefix`")).at(v.span),
            );
            return None;
        }
    };
    let gateway = v.get("gateway").and_then(|g| d.ip(g)).map(|g| g.value);
    let dns = match v.get("dns") {
        Some(n) => d.ips(n).into_iter().map(|l| l.value).collect(),
        None => Vec::new(),
    };
    Some(Pool {
        name,
        span,
        first,
        last,
        prefix,
        gateway,
        dns,
    })
}

/// One `hosts:` entry (with `count`, many hosts) onto its template.
/// An entry's `count` (1-100000, default 1) and `start` (default 0).
pub(in crate::load) fn count_and_start(d: &mut Decoder, entry: &Node) -> Option<(i64, i64)> {
    let Some(c) = entry.get("count") else {
        return Some((1, 0));
    };
    match c.as_i64() {
        Some(n) if (1..=100_000).contains(&n) => {
            Some((n, entry.get("start").and_then(Node::as_i64).unwrap_or(0)))
        }
        _ => {
            d.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("`count` must be 1-100000, found `{c}`"),
                )
                .at(c.span),
            );
            None
        }
    }
}
