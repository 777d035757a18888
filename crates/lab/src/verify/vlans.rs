//! Every planned VLAN between every pair of nodes, by netverify's probe
//! frames, each failure named by the switch ports on the way.

use super::*;

/// netverify on every node at once: probe frames on every VLAN of the lab
/// (all of them on every trunk NIC), judged per node and VLAN.
pub(super) fn vlans(vms: &mut [Vm], inv: &Inventory, ports: &[SwitchPort]) -> Vec<Check> {
    let opts = PlanOptions {
        window_s: 10,
        ..PlanOptions::default()
    };
    let mut plan = match netverify::plan(inv, &opts) {
        Ok(p) => p,
        Err(e) => return vec![check("", "vlans", "netverify plan", false, e)],
    };
    // Every VLAN of the lab on every trunk (a NIC that carries some VLAN
    // tagged): a VLAN one node's intent lacks then fails between it and
    // the others. Access NICs (a provisioning NIC) keep their own plan.
    let mut all: Vec<u16> = plan
        .hosts
        .iter()
        .flat_map(|h| h.nics.iter().flat_map(|n| n.vlans.iter().copied()))
        .collect();
    all.sort_unstable();
    all.dedup();
    for n in plan.hosts.iter_mut().flat_map(|h| h.nics.iter_mut()) {
        if !n.vlans.is_empty() {
            n.vlans = all.clone();
        }
    }
    let text = serde_json::to_string(&plan).expect("plan serialises");
    let cmd = format!(
        "cat > /tmp/plan.json <<'NODENET_EOF'\n{text}\nNODENET_EOF\nnodenet netverify run /tmp/plan.json -o /tmp/result.json >/tmp/netverify.log 2>&1; cat /tmp/result.json"
    );
    let results: Vec<Result<RunResult, String>> = on_each(vms, |vm| {
        let (st, out) = vm.shell(&cmd, Duration::from_secs(120));
        if st != 0 {
            return Err(format!("{}: netverify run failed: {out}", vm.name));
        }
        RunResult::from_json(&out).map_err(|e| format!("{}: {e}", vm.name))
    });
    let mut out = Vec::new();
    let mut ok_results = Vec::new();
    for r in results {
        match r {
            Ok(r) => ok_results.push(r),
            Err(e) => out.push(check("", "vlans", "netverify run", false, e)),
        }
    }
    match netverify::report::report(&ok_results, inv) {
        Ok(rep) => {
            for (seg, res) in &rep.matrix {
                out.extend(segment_checks(&seg.to_string(), res, ports));
            }
            // Probe frames between NICs of one LACP bond are findings of
            // netverify's own (it knows no switch-side bonds): the matrix
            // above judges those with the bond as one link.
            // A NIC of an LACP bond that heard nothing, likewise, when its
            // bond is the segment's only link (one node).
            let one_link = rep
                .matrix
                .iter()
                .all(|(_, res)| links(res, ports).len() < 2);
            let lone_bond_nic = |d: &nodenet_model::Diagnostic| {
                one_link
                    && d.code.as_str() == "netverify-silent-nic"
                    && ports.iter().any(|p| {
                        Some(p.host.as_str()) == d.host.as_deref()
                            && p.lacp.is_some()
                            && d.message.contains(&format!("NIC {} ", p.nic))
                    })
            };
            for d in rep.diagnostics.iter().filter(|d| {
                d.is_error() && d.code.as_str() != "netverify-vlan-not-carried" && !lone_bond_nic(d)
            }) {
                out.push(check(
                    d.host.as_deref().unwrap_or_default(),
                    "vlans",
                    d.code.as_str(),
                    false,
                    d.message.clone(),
                ));
            }
        }
        Err(e) => out.push(check("", "vlans", "netverify report", false, e)),
    }
    out
}

/// A segment's distinct links ([`link_of`]).
pub(super) fn links(
    res: &netverify::report::SegmentResult,
    ports: &[SwitchPort],
) -> Vec<(String, String)> {
    let mut links: Vec<(String, String)> =
        res.nics.iter().map(|(h, n)| link_of(ports, h, n)).collect();
    links.sort_unstable();
    links.dedup();
    links
}

/// One link of a segment: a host's NIC, or the NICs of one of its LACP
/// bonds (the switch forwards to one port of the bond, by hash).
pub(super) fn link_of(ports: &[SwitchPort], host: &str, nic: &str) -> (String, String) {
    let group = ports
        .iter()
        .find(|p| p.host == host && p.nic == nic)
        .and_then(|p| p.lacp.clone());
    match group {
        Some(g) => {
            let nics: Vec<&str> = ports
                .iter()
                .filter(|p| p.host == host && p.lacp.as_deref() == Some(&g))
                .map(|p| p.nic.as_str())
                .collect();
            (host.to_string(), format!("LACP {}", nics.join("+")))
        }
        None => (host.to_string(), nic.to_string()),
    }
}

/// A segment's result per node: every NIC of it heard on some NIC of
/// every other link of the segment. One check per node (the failures
/// named), so a VLAN missing on one node fails that node.
pub(super) fn segment_checks(
    segment: &str,
    res: &netverify::report::SegmentResult,
    ports: &[SwitchPort],
) -> Vec<Check> {
    let links: Vec<((String, String), (String, String))> = res
        .nics
        .iter()
        .map(|(h, n)| ((h.clone(), n.clone()), link_of(ports, h, n)))
        .collect();
    let mut hosts: Vec<&str> = links.iter().map(|((h, _), _)| h.as_str()).collect();
    hosts.dedup();
    let mut out = Vec::new();
    for host in hosts {
        let mut missing: Vec<String> = Vec::new();
        let mut total = 0;
        for (from, from_link) in links.iter().filter(|((h, _), _)| h == host) {
            let mut others: Vec<&(String, String)> = links
                .iter()
                .map(|(_, l)| l)
                .filter(|l| *l != from_link)
                .collect();
            others.sort_unstable();
            others.dedup();
            for to_link in others {
                total += 1;
                let heard = links.iter().filter(|(_, l)| l == to_link).any(|(to, _)| {
                    res.heard
                        .get(&(from.clone(), to.clone()))
                        .is_some_and(|h| h.0)
                });
                if !heard {
                    missing.push(format!(
                        "{} {} -> {} {}",
                        from.0, from.1, to_link.0, to_link.1
                    ));
                }
            }
        }
        if total == 0 {
            // One link on the segment (a single node's bond): nothing to
            // probe between, nothing passed.
            continue;
        }
        out.push(check(
            host,
            "vlans",
            segment,
            missing.is_empty(),
            if missing.is_empty() {
                format!("probe frames from each NIC reach every other link ({total})")
            } else {
                format!("not heard: {}", missing.join(", "))
            },
        ));
    }
    out
}
