//! The nodenet inventory (`nodenet: v1`): cluster, credentials, pools,
//! templates and hosts, expanded into one host each (`count` entries in
//! parallel, on addresses drawn in host order).

use std::net::IpAddr;

use crate::diag::{Code, Diagnostic};
use crate::fields::Decoder;
use crate::inventory::*;
use crate::nic_binding::NicBinding;
use crate::template::{Draw, Expander, Pool, PoolAllocator, Predrawn, Recording, Vars};
use crate::yaml::{Node, Value};

const TOP_FIELDS: &[&str] = &[
    "nodenet",
    "cluster",
    "credentials",
    "pools",
    "templates",
    "hosts",
    "sites",
];
const CLUSTER_FIELDS: &[&str] = &[
    "nodeNames",
    "failureDomain",
    "noDefaultRoute",
    "nicBinding",
    "name",
    "baseDomain",
    "machineNetworks",
    "apiVIPs",
    "ingressVIPs",
    "provisioning",
    "clusterOSImage",
    "sshKey",
    "rendezvousIP",
    "brEx",
    "ovnMasquerade",
    "nodeAgent",
    "installConfig",
    "agentConfig",
    "clusterInstance",
    "behindNat",
];
const NODE_AGENT_FIELDS: &[&str] = &[
    "image",
    "layering",
    "renderedImagePushSpec",
    "renderedImagePushSecret",
    "baseImagePullSecret",
    "osImageURL",
    "checkpointTimeout",
    "probeTimeout",
    "probes",
];
const PROVISIONING_FIELDS: &[&str] = &["network", "cidr", "interface", "allowLacp"];
const CREDENTIAL_FIELDS: &[&str] = &["username", "passwordEnv", "passwordFile"];
const POOL_FIELDS: &[&str] = &["range", "prefix", "gateway", "dns"];
/// Fields a host and a template share.
const HOST_FIELDS: &[&str] = &[
    "labels",
    "name",
    "template",
    "count",
    "start",
    "role",
    "bmc",
    "bootMACAddress",
    "bootInterface",
    "bootMode",
    "rootDeviceHints",
    "nics",
    "network",
    "ips",
    "vars",
    "pxeInterface",
    "brExUplink",
    "nicBinding",
];
const BMC_FIELDS: &[&str] = &["address", "credentials", "disableCertificateVerification"];
/// A NIC of the `nics:` list form: its name and MAC, and its expected
/// cabling (docs/wires.md).
const NIC_FIELDS: &[&str] = &[
    "name",
    "mac",
    "macAddress",
    "switch",
    "port",
    "vlans",
    "native",
    "mtu",
];

pub(crate) fn load(root: &Node, diags: &mut Vec<Diagnostic>) -> Inventory {
    let mut d = Decoder::new(diags);
    d.check_fields(root, "the inventory", TOP_FIELDS);
    if let Some(v) = root.get("nodenet") {
        if v.scalar_text().as_deref() != Some("v1") {
            d.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    "unsupported inventory version (this nodenet reads `nodenet: v1`)",
                )
                .at(v.span),
            );
        }
    }
    let mut inv = Inventory::default();
    if let Some(c) = root.get("cluster") {
        inv.cluster = native_cluster(&mut d, c);
        inv.rendezvous_ip = native_rendezvous(&mut d, root);
    }
    if let Some(creds) = root.get("credentials") {
        if creds.as_map().is_none() && !creds.is_null() {
            d.type_error(creds, "credentials", "a mapping of credential names");
        }
        let (creds, _) = misindented(&mut d, creds, "credentials", CREDENTIAL_FIELDS);
        for (k, v) in creds {
            let name = k.scalar_text().unwrap_or_default();
            if let Some(c) = native_credentials(&mut d, k, v, &name) {
                inv.credentials.insert(name, Located::new(c, k.span));
            }
        }
    }
    // Every address written literally is reserved before pools hand any out.
    let mut pools = Vec::new();
    // Pools that are written but unusable: their own finding is the one
    // to fix, not every placeholder that names them.
    let mut broken = Vec::new();
    if let Some(p) = root.get("pools") {
        if p.as_map().is_none() && !p.is_null() {
            d.type_error(p, "pools", "a mapping of pool names");
        }
        let (entries, misplaced) = misindented(&mut d, p, "pool", POOL_FIELDS);
        broken.extend(misplaced);
        for (k, v) in entries {
            match native_pool(&mut d, k, v) {
                Some(pool) => pools.push(pool),
                None => broken.push(k.scalar_text().unwrap_or_default()),
            }
        }
    }
    let mut alloc = PoolAllocator::new(pools);
    for name in broken {
        alloc.mark_broken(name);
    }
    for vip in inv.cluster.api_vips.iter().chain(&inv.cluster.ingress_vips) {
        alloc.reserve(vip.value);
    }
    let templates = root.get("templates");
    let mut broken_templates = Vec::new();
    if let Some(t) = templates {
        if t.as_map().is_none() && !t.is_null() {
            d.type_error(t, "templates", "a mapping of template names");
        }
        let (entries, misplaced) = misindented(&mut d, t, "template", HOST_FIELDS);
        broken_templates = misplaced;
        for (k, v) in entries {
            d.check_fields(v, &format!("template `{}`", k), HOST_FIELDS);
        }
    }
    inv.cluster.hosts_span = Some(root.get("hosts").map(|h| h.span).unwrap_or(root.span));
    let entries = d.seq(root, "hosts");
    for entry in entries {
        for (_, ip) in entry.get("ips").and_then(Node::as_map).unwrap_or_default() {
            if let Some(ip) = ip.scalar_text().and_then(|s| s.parse::<IpAddr>().ok()) {
                alloc.reserve(ip);
            }
        }
        reserve_literal_ips(entry.get("network"), &mut alloc);
    }
    if let Some(t) = templates {
        for (_, v) in t.as_map().unwrap_or_default() {
            reserve_literal_ips(v.get("network"), &mut alloc);
        }
    }
    for entry in entries {
        // A host of a template whose fields were mis-indented out of it
        // is not built: the template's finding says what to fix.
        let of_broken = entry
            .get("template")
            .and_then(Node::scalar_text)
            .is_some_and(|t| broken_templates.contains(&t));
        if !of_broken {
            expand_host_entry(&mut d, entry, templates, &mut alloc, &mut inv.hosts);
        }
    }
    for h in &mut inv.hosts {
        if h.binding(&inv.cluster) == NicBinding::Mac {
            h.network = h
                .network
                .as_ref()
                .map(|n| crate::nic_binding::bind_by_mac(n, &h.nics));
        }
    }
    inv
}

/// `nicBinding: name | mac | pin`.
fn nic_binding(d: &mut Decoder, v: &Node) -> Option<Located<NicBinding>> {
    match v.as_str().and_then(NicBinding::parse) {
        Some(b) => Some(Located::new(b, v.span)),
        None => {
            d.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("nicBinding `{v}` is not `name`, `mac` or `pin`"),
                )
                .at(v.span)
                .help("`mac`: profiles match the NIC table's MACs (identifier: mac-address), whatever the NICs are called; `pin`: systemd .link files give each NIC of the table its name by MAC, profiles stay bound by name; `name` (the default): the names as written"),
            );
            None
        }
    }
}

/// The entries of a mapping of named things (pools, credentials,
/// templates), less the fields of one of them that were indented at its
/// level: `pools: {bm: ~, range: …, prefix: …}` is pool `bm` with its
/// fields written one level too far left. That is said once, at the
/// emptied entry; the names of such entries are returned beside the rest.
fn misindented<'n>(
    d: &mut Decoder,
    map: &'n Node,
    what: &str,
    fields: &[&str],
) -> (Vec<&'n (Node, Node)>, Vec<String>) {
    let entries = map.as_map().unwrap_or_default();
    let mut kept = Vec::with_capacity(entries.len());
    let mut emptied = Vec::new();
    let mut i = 0;
    while i < entries.len() {
        let (k, v) = &entries[i];
        let stray: Vec<&str> = entries[i + 1..]
            .iter()
            .map_while(|(k, _)| k.as_str().filter(|k| fields.contains(k)))
            .collect();
        if v.is_null() && !stray.is_empty() {
            let name = k.scalar_text().unwrap_or_default();
            let listed: Vec<String> = stray.iter().map(|f| format!("`{f}`")).collect();
            d.push(
                Diagnostic::error(
                    Code::MissingField,
                    format!(
                        "{what} `{name}` is empty: {} below it {} at the level of `{name}`, not inside it",
                        listed.join(", "),
                        if stray.len() == 1 { "is" } else { "are" }
                    ),
                )
                .at(k.span)
                .help(format!("indent {} under `{name}:`", listed.join(", "))),
            );
            emptied.push(name);
            i += 1 + stray.len();
            continue;
        }
        kept.push(&entries[i]);
        i += 1;
    }
    (kept, emptied)
}

/// Static addresses written in a network block (not placeholders).
fn reserve_literal_ips(network: Option<&Node>, alloc: &mut PoolAllocator) {
    let Some(n) = network else { return };
    let mut f = |node: &Node| {
        if let Some(ip) = node
            .get("ip")
            .and_then(Node::as_str)
            .and_then(|s| s.parse::<IpAddr>().ok())
        {
            alloc.reserve(ip);
        }
        false
    };
    n.find(&mut f);
}

fn native_cluster(d: &mut Decoder, c: &Node) -> Cluster {
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
                .and_then(|v| super::provisioning_mode(d, v));
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
        cluster.install_config = super::install_config::base(d, ic, &mut cluster);
    }
    if let Some(ac) = c.get("agentConfig") {
        cluster.agent_config = super::agent_config::base(d, ac);
    }
    if let Some(ci) = c.get("clusterInstance") {
        cluster.ztp = super::ztp::base(d, ci);
    }
    for n in d.seq(c, "behindNat") {
        cluster.behind_nat.extend(d.network(n));
    }
    cluster
}

/// `cluster.nodeAgent`.
fn node_agent(d: &mut Decoder, a: &Node) -> Option<NodeAgent> {
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
fn native_rendezvous(d: &mut Decoder, root: &Node) -> Option<Located<IpAddr>> {
    root.get("cluster")?
        .get("rendezvousIP")
        .and_then(|v| d.ip(v))
}

fn native_credentials(d: &mut Decoder, k: &Node, v: &Node, name: &str) -> Option<Credentials> {
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

fn native_pool(d: &mut Decoder, k: &Node, v: &Node) -> Option<Pool> {
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
pub(super) fn count_and_start(d: &mut Decoder, entry: &Node) -> Option<(i64, i64)> {
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

fn expand_host_entry(
    d: &mut Decoder,
    entry: &Node,
    templates: Option<&Node>,
    alloc: &mut PoolAllocator,
    out: &mut Vec<Host>,
) {
    if !d.check_fields(entry, "a host", HOST_FIELDS) {
        return;
    }
    let template = match entry.get("template") {
        None => None,
        Some(t) => {
            let name = t.scalar_text().unwrap_or_default();
            match templates.and_then(|ts| ts.get(&name)) {
                Some(tpl) => Some(tpl),
                None => {
                    let known: Vec<&str> = templates
                        .and_then(Node::as_map)
                        .unwrap_or_default()
                        .iter()
                        .filter_map(|(k, _)| k.as_str())
                        .collect();
                    let mut diag = Diagnostic::error(
                        Code::TemplateUnknown,
                        format!("no template named `{name}`"),
                    )
                    .at(t.span);
                    if let Some(s) = crate::fields::suggest(&name, &known) {
                        diag = diag.help(format!("did you mean `{s}`?"));
                    }
                    d.push(diag);
                    return;
                }
            }
        }
    };
    // The host's own fields win over its template's, key by key.
    let field = |k: &str| entry.get(k).or_else(|| template.and_then(|t| t.get(k)));
    let Some((count, start)) = count_and_start(d, entry) else {
        return;
    };
    let start = entry.get("count").map(|_| start);
    let Some(name_node) = entry.get("name") else {
        d.push(Diagnostic::error(Code::MissingField, "host has no `name`").at(entry.span));
        return;
    };
    let index = |i: usize| start.map(|s| s + i as i64);
    let count = count as usize;
    let mut built = 0;
    if count >= PARALLEL_COUNT {
        // The first host draws live, noting which pools it draws from;
        // the others are built in parallel on addresses drawn for them in
        // advance, in host order — what drawing one host after another
        // gives. A finding, or a host that draws otherwise, sends the rest
        // back to one at a time.
        let findings = d.diags.len();
        let mut recording = Recording {
            inner: alloc,
            drawn: Vec::new(),
        };
        out.push(expand_one(
            d,
            entry,
            &field,
            name_node,
            index(0),
            &mut recording,
        ));
        let drawn = recording.drawn;
        built = 1;
        if d.diags.len() == findings {
            if let Some(hosts) =
                expand_in_parallel(entry, &field, name_node, &index, 1..count, &drawn, alloc)
            {
                out.extend(hosts);
                built = count;
            }
        }
    }
    for i in built..count {
        out.push(expand_one(d, entry, &field, name_node, index(i), alloc));
    }
    d.host = None;
}

/// `count` entries this large are expanded in parallel.
const PARALLEL_COUNT: usize = 64;

/// Hosts `range` of an entry, built in parallel; `drawn` are the pools the
/// first host drew from, in order. `None` (and the allocator as it was)
/// when a pool runs out or any host has a finding or draws otherwise.
fn expand_in_parallel<'n>(
    entry: &Node,
    field: &(dyn Fn(&str) -> Option<&'n Node> + Sync),
    name_node: &Node,
    index: &(dyn Fn(usize) -> Option<i64> + Sync),
    range: std::ops::Range<usize>,
    drawn: &[String],
    alloc: &mut PoolAllocator,
) -> Option<Vec<Host>> {
    use rayon::prelude::*;
    let before = alloc.clone();
    let mut exhausted = Vec::new();
    let mut queue = Vec::with_capacity(range.len() * drawn.len());
    for _ in range.clone() {
        for pool in drawn {
            match alloc.allocate(pool, &mut exhausted) {
                Some(ip) => queue.push((pool.clone(), ip)),
                None => {
                    *alloc = before;
                    return None;
                }
            }
        }
    }
    let pools: &PoolAllocator = alloc;
    let per_host = drawn.len();
    let hosts: Option<Vec<Host>> = range
        .clone()
        .into_par_iter()
        .map(|i| {
            let k = i - range.start;
            let mut findings = Vec::new();
            let mut d = Decoder::new(&mut findings);
            let mut predrawn = Predrawn {
                pools,
                queue: &queue[k * per_host..(k + 1) * per_host],
                next: 0,
                diverged: false,
            };
            let host = expand_one(&mut d, entry, field, name_node, index(i), &mut predrawn);
            let clean = findings.is_empty() && !predrawn.diverged && predrawn.next == per_host;
            clean.then_some(host)
        })
        .collect();
    if hosts.is_none() {
        *alloc = before;
    }
    hosts
}

/// One host of an entry: its variables, name, explicit addresses, and
/// the host built from its fields.
fn expand_one<'n>(
    d: &mut Decoder,
    entry: &Node,
    field: &dyn Fn(&str) -> Option<&'n Node>,
    name_node: &Node,
    index: Option<i64>,
    alloc: &mut dyn Draw,
) -> Host {
    let mut vars = Vars::default();
    if let Some(index) = index {
        vars.set("index", Value::Int(index));
    }
    // Vars may use `${index}` (a per-host BMC id, say).
    for (k, v) in field("vars").and_then(Node::as_map).unwrap_or_default() {
        if let Some(key) = k.scalar_text() {
            let mut v = v.clone();
            let host = name_node.scalar_text().unwrap_or_default();
            Expander {
                pools: alloc,
                diags: d.diags,
                host,
            }
            .expand(&mut v, &mut vars);
            vars.set(key, v.value);
        }
    }
    let raw_name = Located::new(name_node.scalar_text().unwrap_or_default(), name_node.span);
    let name = Expander {
        pools: alloc,
        diags: d.diags,
        host: raw_name.value.clone(),
    }
    .expand_string(&raw_name, &mut vars);
    vars.set("name", Value::Str(name.value.clone()));
    d.host = Some(name.value.clone());
    // Explicit per-host pool addresses.
    if let Some(ips) = entry.get("ips") {
        for (k, v) in ips.as_map().unwrap_or_default() {
            let mut ex = Expander {
                pools: alloc,
                diags: d.diags,
                host: name.value.clone(),
            };
            let mut v = v.clone();
            ex.expand(&mut v, &mut vars);
            if let Some(ip) = d.ip(&v) {
                let pool = k.scalar_text().unwrap_or_default();
                vars.pinned.insert(pool.clone(), ip.span);
                vars.pool_ips.insert(pool, ip.value);
            }
        }
    }
    build_host(d, entry, field, name, &mut vars, alloc)
}

fn build_host<'n>(
    d: &mut Decoder,
    entry: &Node,
    field: &dyn Fn(&str) -> Option<&'n Node>,
    name: Located<String>,
    vars: &mut Vars,
    alloc: &mut dyn Draw,
) -> Host {
    let host_name = name.value.clone();
    let mut expand = |d: &mut Decoder, n: &Node, vars: &mut Vars| {
        let mut n = n.clone();
        Expander {
            pools: alloc,
            diags: d.diags,
            host: host_name.clone(),
        }
        .expand(&mut n, vars);
        n
    };
    // NICs: `{eno1: MAC}` or `[{name, mac}]`; their MACs are placeholders too.
    let mut nics = Vec::new();
    if let Some(n) = field("nics") {
        let n = expand(d, n, vars);
        match &n.value {
            Value::Map(entries) => {
                for (k, v) in entries {
                    // A NIC whose MAC is not known yet: null or "".
                    let unknown = v.is_null() || v.as_str() == Some("");
                    let mac = if unknown { None } else { d.mac(v) };
                    nics.push(Nic::new(
                        Located::new(k.scalar_text().unwrap_or_default(), k.span),
                        mac,
                    ));
                }
            }
            Value::Seq(items) => {
                for item in items {
                    if !d.check_fields(item, "a NIC", NIC_FIELDS) {
                        continue;
                    }
                    let Some(nic_name) = d.required_string(item, "name", "a NIC") else {
                        continue;
                    };
                    let mac = item
                        .get("mac")
                        .or(item.get("macAddress"))
                        .filter(|m| !(m.is_null() || m.as_str() == Some("")))
                        .and_then(|m| d.mac(m));
                    let wiring = nic_wiring(d, item);
                    nics.push(Nic {
                        name: nic_name,
                        mac,
                        wiring,
                    });
                }
            }
            Value::Null => {}
            _ => d.type_error(&n, "nics", "a mapping of NIC name to MAC, or a list"),
        }
    }
    for nic in &nics {
        if let Some(mac) = &nic.mac {
            vars.set(
                format!("mac.{}", nic.name.value),
                Value::Str(mac.value.clone()),
            );
        }
    }
    let network = field("network").map(|n| expand(d, n, vars));
    let bmc = field("bmc").and_then(|b| {
        let b = expand(d, b, vars);
        if !d.check_fields(&b, "bmc", BMC_FIELDS) {
            return None;
        }
        let address = d.required_string(&b, "address", "bmc")?;
        Some(Bmc {
            address,
            credentials: d.string(&b, "credentials"),
            disable_certificate_verification: d
                .bool(&b, "disableCertificateVerification")
                .unwrap_or(false),
        })
    });
    let boot_mac = match field("bootMACAddress") {
        Some(m) => {
            let m = expand(d, m, vars);
            d.mac(&m)
        }
        None => field("bootInterface").and_then(|b| {
            let b = b.scalar_text().unwrap_or_default();
            let nic = nics.iter().find(|n| n.name.value == b);
            match nic.and_then(|n| n.mac.clone()) {
                Some(mac) => Some(mac),
                None => {
                    d.push(
                        Diagnostic::error(
                            Code::BootMacNotOnHost,
                            format!("bootInterface `{b}` is not a NIC with a MAC on this host"),
                        )
                        .at(field("bootInterface").map(|n| n.span).unwrap_or(entry.span)),
                    );
                    None
                }
            }
        }),
    };
    // A host without a role is a worker: what its MachineConfig pool and
    // policies already were, now also what install-config and its
    // BareMetalHost say.
    let role = match field("role") {
        None => Located::new(Role::Worker, entry.span),
        given => super::role(d, given, entry.span),
    };
    Host {
        span: entry.span,
        kind: InputKind::Inventory,
        applies_to: None,
        written_to: None,
        nics_listed: field("nics").is_some(),
        role,
        bmc,
        boot_mac,
        boot_mode: field("bootMode").and_then(|m| m.scalar_text().map(|s| Located::new(s, m.span))),
        root_device_hints: field("rootDeviceHints").map(|n| expand(d, n, vars)),
        install_config_extra: None,
        ztp: None,
        nics,
        network,
        projected_network: false,
        nic_binding: field("nicBinding").and_then(|v| nic_binding(d, v)),
        pxe_interface: field("pxeInterface")
            .and_then(|m| m.scalar_text().map(|s| Located::new(s, m.span))),
        br_ex_uplink: field("brExUplink").and_then(|m| {
            let m = expand(d, m, vars);
            m.scalar_text().map(|s| Located::new(s, m.span))
        }),
        pool_ips: vars.pool_ips.clone(),
        policy: None,
        labels: field("labels")
            .map(|n| {
                let n = expand(d, n, vars);
                labels(d, &n)
            })
            .unwrap_or_default(),
        unresolved: std::mem::take(&mut vars.unresolved),
        name,
    }
}

/// A NIC's `switch`, `port`, `vlans`, `native` and `mtu`, each located.
fn nic_wiring(d: &mut Decoder, item: &Node) -> Wiring {
    let mut w = Wiring {
        switch: d.string(item, "switch"),
        port: d.string(item, "port"),
        ..Wiring::default()
    };
    let vlan = |d: &mut Decoder, v: &Node| -> Option<Located<u16>> {
        match v.as_i64() {
            Some(id) if (1..=4094).contains(&id) => Some(Located::new(id as u16, v.span)),
            Some(id) => {
                d.push(
                    Diagnostic::error(
                        Code::VlanIdRange,
                        format!("VLAN id `{id}` is outside 1-4094"),
                    )
                    .at(v.span),
                );
                None
            }
            None => {
                d.type_error(v, "vlans", "VLAN ids (1-4094)");
                None
            }
        }
    };
    if let Some(v) = item.get("vlans") {
        match &v.value {
            Value::Seq(ids) => w.vlans = ids.iter().filter_map(|i| vlan(d, i)).collect(),
            Value::Null => {}
            _ => d.type_error(v, "vlans", "a list of VLAN ids"),
        }
    }
    w.native = item
        .get("native")
        .filter(|n| !n.is_null())
        .and_then(|n| vlan(d, n));
    if let Some(m) = item.get("mtu").filter(|n| !n.is_null()) {
        match m.as_i64() {
            Some(mtu) if (68..=65535).contains(&mtu) => {
                w.mtu = Some(Located::new(mtu as u32, m.span))
            }
            _ => d.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("`mtu` must be an MTU of 68-65535, found `{m}`"),
                )
                .at(m.span),
            ),
        }
    }
    w
}

/// `labels: {rack: r1}`: Kubernetes label keys and values.
fn labels(d: &mut Decoder, n: &Node) -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::new();
    let Some(entries) = n.as_map() else {
        if !n.is_null() {
            d.type_error(n, "labels", "a mapping of label to value");
        }
        return out;
    };
    for (k, v) in entries {
        let (Some(key), value) = (k.scalar_text(), v.scalar_text().unwrap_or_default()) else {
            continue;
        };
        out.insert(key, value);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Diagnostic, Loaded};

    /// A `count` entry of `n` hosts after a 3-host entry; pool
    /// 10.0.0.1-`last` with gateway .1 and DNS .2, VIP .5, and .7 written
    /// literally on the small entry's hosts.
    fn inventory(n: usize, last: &str, extra_vars: &str) -> String {
        format!(
            r#"nodenet: v1
cluster: {{name: c, baseDomain: example.com, machineNetworks: [10.0.0.0/16], apiVIPs: [10.0.0.5], ingressVIPs: [10.0.0.6]}}
pools:
  bm: {{range: 10.0.0.1-{last}, prefix: 16, gateway: 10.0.0.1, dns: [10.0.0.2]}}
templates:
  w:
    role: worker
    vars: {{rack: "r${{index}}"{extra_vars}}}
    nics: {{eno1: "${{index:mac 52:54:00:00:00:00}}"}}
    network:
      interfaces:
      - {{name: eno1, type: ethernet, state: up, ipv4: {{enabled: true, address: [{{ip: "${{ip.bm}}", prefix-length: 16}}]}}}}
hosts:
- name: m-${{index}}
  count: 3
  network:
    interfaces:
    - {{name: eno1, type: ethernet, state: up, ipv4: {{enabled: true, address: [{{ip: 10.0.0.7, prefix-length: 16}}]}}}}
- name: w-${{index:04}}
  template: w
  count: {n}
"#
        )
    }

    fn load(text: String) -> Loaded {
        super::super::load_texts(vec![("c.yaml".into(), text)])
    }

    fn address(h: &Host) -> String {
        h.network
            .as_ref()
            .unwrap()
            .get("interfaces")
            .unwrap()
            .as_seq()
            .unwrap()[0]
            .get("ipv4")
            .and_then(|v| v.get("address"))
            .and_then(Node::as_seq)
            .map(|a| a[0].get("ip").unwrap().scalar_text().unwrap())
            .unwrap_or_default()
    }

    /// Large entries are built in parallel on addresses drawn in advance:
    /// host i still gets the i-th free address in ascending order, every
    /// literal and reserved address skipped, and its own name, MAC and
    /// variables.
    #[test]
    fn a_large_entry_draws_addresses_in_host_order() {
        let loaded = load(inventory(300, "10.0.3.255", ""));
        assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
        let reserved = ["10.0.0.1", "10.0.0.2", "10.0.0.5", "10.0.0.6", "10.0.0.7"];
        let expected: Vec<String> = (1u32..)
            .map(|n| std::net::Ipv4Addr::from(0x0a00_0000 + n).to_string())
            .filter(|ip| !reserved.contains(&ip.as_str()))
            .take(300)
            .collect();
        let workers: Vec<&Host> = loaded.inventory.hosts.iter().skip(3).collect();
        assert_eq!(workers.len(), 300);
        for (i, h) in workers.iter().enumerate() {
            assert_eq!(h.name.value, format!("w-{i:04}"));
            assert_eq!(address(h), expected[i], "{}", h.name.value);
            assert_eq!(
                h.nics[0].mac.as_ref().unwrap().value,
                format!("52:54:00:00:{:02x}:{:02x}", i / 256, i % 256)
            );
        }
    }

    /// A pool that runs out part way is reported once, at the pool, as
    /// when hosts are expanded one at a time; the hosts before it have
    /// their addresses.
    #[test]
    fn a_large_entry_that_exhausts_its_pool_is_reported_once() {
        let loaded = load(inventory(100, "10.0.0.80", ""));
        let exhausted: Vec<&Diagnostic> = loaded
            .diagnostics
            .iter()
            .filter(|d| d.code == Code::PoolExhausted)
            .collect();
        assert_eq!(exhausted.len(), 1, "{:?}", loaded.diagnostics);
        let workers: Vec<&Host> = loaded.inventory.hosts.iter().skip(3).collect();
        assert_eq!(workers.len(), 100);
        // .1 .2 .5 .6 .7 are taken: 75 of .1-.80 are left.
        assert_eq!(address(workers[0]), "10.0.0.3");
        assert_eq!(address(workers[74]), "10.0.0.80");
        // The rest keep the placeholder (the finding is at the pool).
        assert_eq!(address(workers[75]), "${ip.bm}");
    }

    /// A mistake that shows on every host is found on every host.
    #[test]
    fn a_large_entry_reports_each_hosts_own_finding() {
        let loaded = load(inventory(80, "10.0.3.255", ", bad: \"${nope}\""));
        let unknown = loaded
            .diagnostics
            .iter()
            .filter(|d| d.code == Code::TemplateVariable)
            .count();
        assert_eq!(unknown, 80, "{:?}", loaded.diagnostics.first());
        assert_eq!(loaded.inventory.hosts.len(), 83);
    }
}
