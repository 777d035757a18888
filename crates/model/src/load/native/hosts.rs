//! The inventory's `hosts:`: each entry expanded (templates, `count`,
//! pools; in parallel for large fleets) and built into a host.

use super::*;

pub(super) fn expand_host_entry(
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
        if d.diags.len() == findings
            && expand_in_parallel(
                entry,
                &field,
                name_node,
                &index,
                1..count,
                &drawn,
                alloc,
                out,
            )
        {
            built = count;
        }
    }
    for i in built..count {
        out.push(expand_one(d, entry, &field, name_node, index(i), alloc));
    }
    d.host = None;
}

/// `count` entries this large are expanded in parallel.
pub(super) const PARALLEL_COUNT: usize = 64;

/// Hosts `range` of an entry, built in parallel straight into `out`
/// (10,000 hosts gathered and copied on one core took 30 ms); `drawn` are
/// the pools the first host drew from, in order. `false` (with `out` and
/// the allocator as they were) when a pool runs out or any host has a
/// finding or draws otherwise.
#[allow(clippy::too_many_arguments)]
pub(super) fn expand_in_parallel<'n>(
    entry: &Node,
    field: &(dyn Fn(&str) -> Option<&'n Node> + Sync),
    name_node: &Node,
    index: &(dyn Fn(usize) -> Option<i64> + Sync),
    range: std::ops::Range<usize>,
    drawn: &[String],
    alloc: &mut PoolAllocator,
    out: &mut Vec<Host>,
) -> bool {
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
                    return false;
                }
            }
        }
    }
    let pools: &PoolAllocator = alloc;
    let per_host = drawn.len();
    let unclean = std::sync::atomic::AtomicBool::new(false);
    let kept = out.len();
    out.par_extend(range.clone().into_par_iter().map(|i| {
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
        if !(findings.is_empty() && !predrawn.diverged && predrawn.next == per_host) {
            unclean.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        host
    }));
    if unclean.into_inner() {
        out.truncate(kept);
        *alloc = before;
        return false;
    }
    true
}

/// One host of an entry: its variables, name, explicit addresses, and
/// the host built from its fields.
pub(super) fn expand_one<'n>(
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
            let host = name_node.scalar_text().unwrap_or_default();
            let v = Expander {
                pools: alloc,
                diags: d.diags,
                host,
            }
            .expanded(v, &mut vars);
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
            let v = ex.expanded(v, &mut vars);
            if let Some(ip) = d.ip(&v) {
                let pool = k.scalar_text().unwrap_or_default();
                vars.pinned.insert(pool.clone(), ip.span);
                vars.pool_ips.insert(pool, ip.value);
            }
        }
    }
    build_host(d, entry, field, name, &mut vars, alloc)
}

pub(super) fn build_host<'n>(
    d: &mut Decoder,
    entry: &Node,
    field: &dyn Fn(&str) -> Option<&'n Node>,
    name: Located<String>,
    vars: &mut Vars,
    alloc: &mut dyn Draw,
) -> Host {
    let host_name = name.value.clone();
    let mut expand = |d: &mut Decoder, n: &Node, vars: &mut Vars| {
        Expander {
            pools: alloc,
            diags: d.diags,
            host: host_name.clone(),
        }
        .expanded(n, vars)
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
                    let mac = if unknown { None } else { expanded_mac(d, v) };
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
                        .and_then(|m| expanded_mac(d, m));
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
            expanded_mac(d, &m)
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
        given => super::super::role(d, given, entry.span),
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

/// A MAC from a host's expanded fields: none, and no second error, where
/// the expansion left a placeholder it has already reported.
fn expanded_mac(d: &mut Decoder, v: &Node) -> Option<Located<String>> {
    if v.as_str().is_some_and(crate::template::left_unexpanded) {
        return None;
    }
    d.mac(v)
}

/// A NIC's `switch`, `port`, `vlans`, `native` and `mtu`, each located.
pub(super) fn nic_wiring(d: &mut Decoder, item: &Node) -> Wiring {
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
pub(super) fn labels(d: &mut Decoder, n: &Node) -> std::collections::BTreeMap<String, String> {
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
