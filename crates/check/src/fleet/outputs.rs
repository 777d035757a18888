//! What the inputs pass on to the installers and operators that would
//! reject it later (warnings here; render refuses what its consumer does).

use super::*;

/// What the inputs pass on to the installers and operators that would
/// reject it later: a cluster without hosts, a host the installer cannot
/// reach without a BMC, an agent-config without a rendezvous IP, a BMC
/// Secret without its password. Warnings here; `render` refuses those its
/// output's consumer refuses ([`crate::Report::refuse_for_render`]).
pub(super) fn check_outputs(inv: &Inventory, hosts: &[HostAddresses], out: &mut Vec<Diagnostic>) {
    // Hosts to add to a running cluster (nodes-config.yaml alone) make no
    // install-config or agent-config: nothing here is theirs.
    if !inv.hosts.is_empty() && inv.hosts.iter().all(|h| h.kind == InputKind::NodesConfig) {
        return;
    }
    if for_agent_installer(inv) {
        agent_single_node(inv, out);
    }
    if inv.hosts.is_empty() {
        no_hosts(inv, out);
        return;
    }
    let whole: Vec<&HostAddresses> = hosts
        .iter()
        .filter(|h| h.host.scope() == Scope::FirstBoot)
        .collect();
    let agent = for_agent_installer(inv);
    hosts_left_out(&whole, agent, out);
    rendezvous_ip_missing(inv, &whole, agent, out);
    credentials_unresolved(inv, out);
}

/// A cluster without hosts: what the installer it is for makes of it.
pub(super) fn no_hosts(inv: &Inventory, out: &mut Vec<Diagnostic>) {
    if let Some(span) = inv.cluster.hosts_span {
        out.push(if for_agent_installer(inv) {
            Diagnostic::warning(
                Code::NoHosts,
                "no host: the agent installer takes every machine that boots its ISO, giving each a role, with DHCP networking (agent-config.yaml is written with its rendezvousIP and no host)",
            )
            .at(span)
            .help("list the hosts (with their interfaces) to give them names, roles, static networking or root disks")
        } else {
            Diagnostic::warning(
                Code::NoHosts,
                "no host: install-config.yaml would list none (and 0 control-plane replicas), which openshift-install refuses for an installer-provisioned cluster",
            )
            .at(span)
            .help("add the cluster's hosts; `render` refuses a cluster without any")
        });
    }
}

/// Hosts agent-config.yaml leaves out (no MAC), and hosts whose
/// BareMetalHost is never provisioned (no BMC, installer-provisioned).
pub(super) fn hosts_left_out(whole: &[&HostAddresses], agent: bool, out: &mut Vec<Diagnostic>) {
    // agent-config.yaml lists a host by a MAC (without one nothing ties
    // its entry to a machine): one with none is left out of it. A
    // Metal3DataTemplate's hosts take their MACs from inspection.
    for h in whole.iter().filter(|h| {
        h.host.boot_mac.is_none()
            && !h.host.nics.iter().any(|n| n.mac.is_some())
            && h.host.kind != nodenet_model::InputKind::Metal3DataTemplate
    }) {
        let name = &h.host.name.value;
        out.push(
            Diagnostic::warning(
                Code::InterfaceWithoutMac,
                format!("host `{name}` has no NIC with a MAC: agent-config.yaml leaves it out (without a MAC nothing ties its entry to a machine); it joins as any machine that boots the ISO, its role and name by DHCP and the installer"),
            )
            .at(h.host.name.span)
            .host(name.clone())
            .help("give it `nics` (or a `bootMACAddress`) to list it with its role and network"),
        );
    }
    if !agent {
        for h in whole.iter().filter(|h| {
            h.host.bmc.is_none()
                && matches!(h.host.kind, InputKind::Inventory | InputKind::InstallConfig)
        }) {
            let name = &h.host.name.value;
            out.push(
                Diagnostic::warning(
                    Code::BmcMissing,
                    format!("host `{name}` has no `bmc`: its BareMetalHost (scale-out/{name}.yaml) is never provisioned, and an installer-provisioned install rejects the host"),
                )
                .at(h.host.name.span)
                .host(name.clone())
                .help("add `bmc: {address: redfish-virtualmedia://…, credentials: …}` (the agent-based install, with an agent-config.yaml, needs none)"),
            );
        }
    }
}

/// No rendezvousIP and no master with a static address for the agent
/// installer to take one from.
pub(super) fn rendezvous_ip_missing(
    inv: &Inventory,
    whole: &[&HostAddresses],
    agent: bool,
    out: &mut Vec<Diagnostic>,
) {
    // The agent installer takes a host's static address when no
    // rendezvousIP is given (a master's, or one whose role it assigns).
    let may_rendezvous =
        |h: &&HostAddresses| matches!(h.host.role.value, Role::Master | Role::Unset);
    let has_static_master = whole
        .iter()
        .any(|h| may_rendezvous(h) && !h.addresses.is_empty());
    // A master whose state has an error (an address that is none, a
    // placeholder left unexpanded) may well have a static address: that
    // error is the finding.
    let faulty: std::collections::HashSet<&str> = out
        .iter()
        .filter(|d| d.is_error())
        .filter_map(|d| d.host.as_deref())
        .collect();
    let master_faulty = whole.iter().any(|h| {
        may_rendezvous(h)
            && (faulty.contains(h.host.name.value.as_str()) || !h.host.unresolved.is_empty())
    });
    // A ZTP site installs through assisted-service, which needs no
    // rendezvous host: render writes it no agent-config.yaml.
    if inv.rendezvous_ip.is_none()
        && !inv.is_site()
        && !whole.is_empty()
        && !has_static_master
        && !master_faulty
    {
        let first = whole
            .iter()
            .find(|h| h.host.role.value == Role::Master)
            .unwrap_or(&whole[0]);
        out.push(
            Diagnostic::warning(
                Code::RendezvousIpMissing,
                "no rendezvousIP: no master has a static address, so agent-config.yaml is written without one (the agent installer then needs it from a host's static networkConfig)",
            )
            .at(first.host.name.span)
            .help(if agent {
                "set `rendezvousIP` in agent-config.yaml to a master's address, or give a master a static address"
            } else {
                "set `cluster.rendezvousIP` to a master's address (its DHCP reservation), or give a master a static address"
            }),
        );
    }
}

/// BMC credentials in use whose password is not there to render.
pub(super) fn credentials_unresolved(inv: &Inventory, out: &mut Vec<Diagnostic>) {
    let used_credentials = inv.used_credentials();
    for (name, cred) in &inv.credentials {
        let used = used_credentials.contains(name.as_str());
        let found = cred.value.resolve_password();
        if !used || found.as_ref().is_some_and(|p| !p.expose().is_empty()) {
            continue;
        }
        let missing = if found.is_some() {
            "is empty"
        } else {
            "is not set"
        };
        let (why, fix) = match &cred.value.password {
            PasswordSource::Env(v) => (
                format!("environment variable {v} {missing}"),
                format!("set {v} where `render` runs"),
            ),
            PasswordSource::File(f) if found.is_some() => {
                (format!("{f} is empty"), format!("put the password in {f}"))
            }
            PasswordSource::File(f) => (
                format!("{f} cannot be read"),
                format!("put the password in {f}"),
            ),
            PasswordSource::Inline(_) => ("it is empty".to_string(), "write it".to_string()),
        };
        out.push(
            Diagnostic::warning(
                Code::CredentialsUnresolved,
                format!(
                    "password of credentials `{name}` is not available ({why}): the BMC Secrets of scale-out/ carry the placeholder ${{{var}}} instead",
                    var = nodenet_model::password_var(name, Some(&cred.value))
                ),
            )
            .at(cred.span)
            .help(format!("{fix}, or fill the placeholder before applying them (`envsubst < scale-out/<host>.yaml | oc apply -f -`): the baremetal-operator rejects a BMC Secret without a password")),
        );
    }
}
