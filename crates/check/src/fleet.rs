//! Checks that need the cluster or more than one host: PXE and boot MAC
//! rules, BMCs, duplicates across the fleet, VIPs and machine networks.

use std::collections::HashMap;
use std::net::IpAddr;

use nodenet_model::{
    Cluster, Code, Diagnostic, Host, InputKind, Inventory, PasswordSource, ProvisioningNetwork,
    Role, Scope, Span,
};

use crate::network::{Address, Network};

/// BMC drivers of the baremetal platform, and whether they boot over the
/// provisioning network (PXE) rather than virtual media / UEFI HTTP.
const BMC_SCHEMES: &[(&str, bool)] = &[
    ("ipmi", true),
    ("redfish", true),
    ("redfish-virtualmedia", false),
    ("redfish-uefihttp", false),
    ("idrac", true),
    ("idrac-redfish", true),
    ("idrac-virtualmedia", false),
    ("ilo4", true),
    ("ilo5", true),
    ("ilo5-redfish", true),
    ("ilo4-virtualmedia", false),
    ("ilo5-virtualmedia", false),
    ("irmc", true),
    ("ibmc", true),
];

/// A BMC address's driver as the baremetal-operator reads it
/// (metal3-io/baremetal-operator@02aa5059 `pkg/hardwareutils/bmc/access.go`
/// L91-157): `driver[+http|+https]://`, no scheme meaning `ipmi`; `http`
/// and `https` name no driver (`Unknown BMC type 'http'`), yet the agent
/// installer parses the scheme only with the provisioning network
/// Disabled (openshift/installer `validateBMCConfig`; its test
/// `baremetal_host_bmc_config.txt` builds an image with `http://`
/// addresses): there it is a warning that the operator will not drive
/// the BMC, elsewhere the error the installer gives.
fn check_bmc_scheme(
    inv: &Inventory,
    bmc: &nodenet_model::Bmc,
    mode: ProvisioningNetwork,
    push: &mut impl FnMut(Diagnostic),
) {
    let addr = &bmc.address.value;
    let scheme = addr.split_once("://").map(|(s, _)| s).unwrap_or("ipmi");
    let driver = scheme.trim_end_matches("+https").trim_end_matches("+http");
    match BMC_SCHEMES.iter().find(|(s, _)| *s == driver) {
        None if matches!(scheme, "http" | "https")
            && for_agent_installer(inv)
            && mode != ProvisioningNetwork::Disabled =>
        {
            push(
                Diagnostic::warning(
                    Code::BmcSchemeUnknown,
                    format!("BMC address `{addr}` names no driver: the agent installer takes it and the host installs, but the baremetal-operator refuses the BareMetalHost afterwards (\"Unknown BMC type '{scheme}'\") and cannot drive this BMC"),
                )
                .at(bmc.address.span)
                .help("name the driver, with the transport after it: `redfish+http://`, `redfish-virtualmedia+https://`, `idrac-virtualmedia+https://`"),
            );
        }
        None => {
            let known: Vec<&str> = BMC_SCHEMES.iter().map(|(s, _)| *s).collect();
            let mut d = Diagnostic::error(
                Code::BmcSchemeUnknown,
                format!("unknown BMC scheme `{scheme}` in `{addr}`: the baremetal-operator refuses it (\"Unknown BMC type '{scheme}'\")"),
            )
            .at(bmc.address.span);
            if let Some(s) = nodenet_model::fields::suggest(driver, &known) {
                d = d.help(format!("did you mean `{s}`?"));
            } else if matches!(scheme, "http" | "https") {
                d = d.help(format!("name the driver, with the transport after it: `redfish+{scheme}://`, `redfish-virtualmedia+{scheme}://`"));
            }
            push(d);
        }
        Some((_, true)) if mode == ProvisioningNetwork::Disabled => push(
            Diagnostic::error(
                Code::BmcNeedsProvisioningNetwork,
                format!("BMC driver `{driver}` boots over the provisioning network, which is Disabled"),
            )
            .at(bmc.address.span)
            .help("use `redfish-virtualmedia`, `idrac-virtualmedia`, `ilo5-virtualmedia` or `redfish-uefihttp`, or enable the provisioning network"),
        ),
        Some(_) => {}
    }
}

/// Per-host rules that read the cluster: PXE NIC, boot MAC, BMC.
pub fn check_host_in_cluster(
    inv: &Inventory,
    host: &Host,
    net: &Network,
    out: &mut Vec<Diagnostic>,
) {
    let name = &host.name.value;
    let mut push = |d: Diagnostic| out.push(d.host(name.clone()));
    let prov = &inv.cluster.provisioning;
    let prov_mode = provisioning_mode(inv);

    // Boot MAC must be one of the host's NICs (when NICs are known).
    let boot_nic = host
        .boot_mac
        .as_ref()
        .and_then(|m| host.nic_with_mac(&m.value));
    if let Some(mac) = &host.boot_mac {
        if boot_nic.is_none() && !host.nics.is_empty() {
            push(
                Diagnostic::error(
                    Code::BootMacNotOnHost,
                    format!(
                        "boot MAC {} is not the MAC of any NIC of this host",
                        mac.value
                    ),
                )
                .at(mac.span)
                .help(format!(
                    "NICs: {}",
                    host.nics
                        .iter()
                        .map(|n| format!(
                            "{} {}",
                            n.name.value,
                            n.mac.as_ref().map(|m| m.value.as_str()).unwrap_or("?")
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            );
        }
    }
    let pxe = pxe_interface(inv, host);
    if let Some(pxe) = &pxe {
        if let Some((bond, pos)) = net.controller_of(pxe).filter(|(c, _)| c.is("bond")) {
            let lacp = bond.bond_mode().as_deref() == Some("802.3ad");
            let pxe_boots = prov_mode.is_some_and(|m| m != ProvisioningNetwork::Disabled);
            if lacp && pxe_boots && !prov.allow_lacp {
                push(
                    Diagnostic::error(
                        Code::PxeNicInLacpBond,
                        format!(
                            "PXE NIC `{pxe}` is a port of 802.3ad bond `{}` while the provisioning network is {}",
                            bond.name,
                            prov_mode.unwrap_or_default().as_str()
                        ),
                    )
                    .at(bond.ports[pos].node.span)
                    .help("PXE cannot negotiate LACP: use active-backup for the PXE bond, keep the PXE NIC out of it, or set `provisioning.allowLacp: true` if the switch ports do LACP fallback"),
                );
            }
            // Fuel's rule: a bonded PXE interface boots from its first port.
            if let (Some(mac), Some(first)) = (&host.boot_mac, bond.ports.first()) {
                let first_mac = host.mac_of(&first.name);
                if let Some(first_mac) = first_mac {
                    if !first_mac.value.eq_ignore_ascii_case(&mac.value) {
                        push(
                            Diagnostic::error(
                                Code::BootMacNotFirstPort,
                                format!(
                                    "boot MAC {} is not the MAC of `{}` ({}), the first port of bond `{}` that carries the PXE NIC",
                                    mac.value, first.name, first_mac.value, bond.name
                                ),
                            )
                            .at(mac.span)
                            .related(first.node.span, "first port"),
                        );
                    }
                }
            }
        }
    }

    crate::identity::check_host(host, net, &mut push);

    if let Some(bmc) = &host.bmc {
        check_bmc_scheme(inv, bmc, prov.mode(), &mut push);
        if let Some(cred) = &bmc.credentials {
            if !inv.credentials.contains_key(&cred.value) && host.kind == InputKind::Inventory {
                push(
                    Diagnostic::error(
                        Code::CredentialsUnknown,
                        format!("no credentials named `{}`", cred.value),
                    )
                    .at(cred.span),
                );
            }
        }
    }
}

/// The host's PXE/provisioning NIC: named by the host or the cluster,
/// else the NIC with the boot MAC.
pub fn pxe_interface(inv: &Inventory, host: &Host) -> Option<String> {
    host.pxe_interface
        .as_ref()
        .or(inv.cluster.provisioning.interface.as_ref())
        .map(|l| l.value.clone())
        .or_else(|| {
            let mac = host.boot_mac.as_ref()?;
            Some(host.nic_with_mac(&mac.value)?.name.value.clone())
        })
}

/// Whether the host boots over the provisioning network (PXE): its BMC
/// driver is one that does, and the network is not Disabled.
pub fn boots_over_pxe(inv: &Inventory, host: &Host) -> bool {
    let Some(bmc) = &host.bmc else {
        return false;
    };
    let scheme = bmc.address.value.split_once("://").map(|(s, _)| s);
    let driver = scheme
        .unwrap_or("")
        .trim_end_matches("+https")
        .trim_end_matches("+http");
    let pxe_driver = BMC_SCHEMES.iter().any(|&(s, pxe)| s == driver && pxe);
    pxe_driver && provisioning_mode(inv).is_some_and(|m| m != ProvisioningNetwork::Disabled)
}

/// The provisioning network's mode as written, else the installer's
/// default (Managed) when an input is for the installer (an inventory,
/// an install-config); unknown for manifests alone (a BareMetalHost, an
/// agent install, which boots from its ISO).
pub fn provisioning_mode(inv: &Inventory) -> Option<ProvisioningNetwork> {
    if let Some(mode) = &inv.cluster.provisioning.network {
        return Some(mode.value);
    }
    let for_installer = |k: InputKind| matches!(k, InputKind::Inventory | InputKind::InstallConfig);
    let kinds = || inv.kind.into_iter().chain(inv.hosts.iter().map(|h| h.kind));
    // A ZTP site installs through assisted-service by virtual media: no
    // provisioning network, whatever the inventory it came from.
    (kinds().any(for_installer) && !for_agent_installer(inv) && !inv.is_site())
        .then_some(ProvisioningNetwork::Managed)
}

/// Whether the inputs are the agent installer's (an agent-config, an
/// NMStateConfig, an AgentClusterInstall among them).
pub fn for_agent_installer(inv: &Inventory) -> bool {
    let agent = |k: InputKind| {
        matches!(
            k,
            InputKind::AgentConfig | InputKind::NmStateConfig | InputKind::AgentClusterInstall
        )
    };
    inv.kind
        .into_iter()
        .chain(inv.kinds.iter().copied())
        .chain(inv.hosts.iter().map(|h| h.kind))
        .any(agent)
}

/// What the inputs pass on to the installers and operators that would
/// reject it later: a cluster without hosts, a host the installer cannot
/// reach without a BMC, an agent-config without a rendezvous IP, a BMC
/// Secret without its password. Warnings here; `render` refuses those its
/// output's consumer refuses ([`crate::Report::refuse_for_render`]).
fn check_outputs(inv: &Inventory, hosts: &[HostAddresses], out: &mut Vec<Diagnostic>) {
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
fn no_hosts(inv: &Inventory, out: &mut Vec<Diagnostic>) {
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
fn hosts_left_out(whole: &[&HostAddresses], agent: bool, out: &mut Vec<Diagnostic>) {
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
fn rendezvous_ip_missing(
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
fn credentials_unresolved(inv: &Inventory, out: &mut Vec<Diagnostic>) {
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

/// Who used a value first, to report a second host using it.
struct FirstUse<'a, K> {
    seen: HashMap<K, (&'a str, Span)>,
}

impl<'a, K: std::hash::Hash + Eq> FirstUse<'a, K> {
    fn new() -> Self {
        FirstUse {
            seen: HashMap::new(),
        }
    }

    /// The first user and place of `key` when that was another host;
    /// the first use is kept.
    fn claim(&mut self, key: K, host: &'a str, span: Span) -> Option<(&'a str, Span)> {
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
struct HostAddresses<'a> {
    host: &'a Host,
    addresses: &'a [Address],
}

/// What must be one host's only: its name, its MACs (boot MAC among
/// them), its BMC, its addresses. The addresses' first users are given
/// back (a VIP must be none of them).
fn check_unique<'a>(
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
fn check_in_machine_network(
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
fn check_vips(inv: &Inventory, host_ips: &FirstUse<IpAddr>, out: &mut Vec<Diagnostic>) {
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

pub fn check_fleet(inv: &Inventory, reports: &[crate::HostReport], out: &mut Vec<Diagnostic>) {
    let hosts: Vec<HostAddresses> = inv
        .hosts
        .iter()
        .zip(reports)
        .map(|(host, r)| HostAddresses {
            host,
            addresses: &r.addresses,
        })
        .collect();
    let cluster = &inv.cluster;
    let ips = check_unique(inv, &hosts, out);
    check_vips(inv, &ips, out);

    if let Some(img) = &cluster.cluster_os_image {
        if !os_image_ok(&img.value) {
            out.push(
                Diagnostic::error(Code::OsImageChecksum, "clusterOSImage must be an http(s) URL ending in `?sha256=<64 hex digits>`")
                    .at(img.span)
                    .help("`nodenet image disk` prints this URL form with the checksum of the image it wrote"),
            );
        }
    }

    let with_addresses: Vec<(&Host, &[crate::network::Address])> =
        hosts.iter().map(|h| (h.host, h.addresses)).collect();
    crate::dual_stack::check(inv, &with_addresses, out);
    check_policies(inv, out);
    if let Some(domain) = &cluster.failure_domain {
        for h in hosts.iter().filter(|h| h.host.scope() == Scope::FirstBoot) {
            if !h.host.labels.contains_key(&domain.value) {
                out.push(
                    Diagnostic::warning(
                        Code::MissingField,
                        format!(
                            "`{}` has no `{}` label (cluster.failureDomain): its role's policies cannot go one failure domain at a time",
                            h.host.name.value, domain.value
                        ),
                    )
                    .at(h.host.span)
                    .host(h.host.name.value.clone()),
                );
            }
        }
    }
    check_outputs(inv, &hosts, out);

    if let Some(rv) = &inv.rendezvous_ip {
        for h in hosts.iter().filter(|h| h.host.role.value == Role::Worker) {
            if let Some(a) = h.addresses.iter().find(|a| a.ip == rv.value) {
                out.push(
                    Diagnostic::error(
                        Code::RendezvousIpIsWorker,
                        format!(
                            "rendezvousIP {} is the address of worker `{}`",
                            rv.value, h.host.name.value
                        ),
                    )
                    .at(rv.span)
                    .related(a.span, "worker address")
                    .help("the rendezvous host runs the bootstrap: pick a master's address"),
                );
            }
        }
    }
}

/// Policies that can select one node must not both name an interface:
/// kubernetes-nmstate would apply both, each undoing the other. Where the
/// inputs describe hosts, "can select" is tested against their labels;
/// else two selectors without a contradicting label may meet.
/// A policy that kubernetes-nmstate would enact on more than one
/// control-plane node at once, counted over the inventory's hosts it
/// selects (its `maxUnavailable` scaled to them, as kubernetes-nmstate
/// does): two masters changing together can cost etcd its quorum. A
/// warning: the policy is valid, its pace is the risk (`plan` writes
/// every policy on masters with `maxUnavailable: 1`).
fn check_control_plane_at_once(inv: &Inventory, out: &mut Vec<Diagnostic>) {
    let nodes: Vec<(&Host, std::collections::BTreeMap<String, String>)> = inv
        .hosts
        .iter()
        .filter(|h| h.scope() == Scope::FirstBoot)
        .map(|h| (h, h.node_labels(&inv.cluster)))
        .collect();
    for h in &inv.hosts {
        let Some(p) = &h.policy else { continue };
        let selected: Vec<&Host> = nodes
            .iter()
            .filter(|(_, labels)| p.selector.iter().all(|(k, v)| labels.get(k) == Some(v)))
            .map(|(h, _)| *h)
            .collect();
        let masters = selected
            .iter()
            .filter(|h| crate::traffic::is_control_plane(h.role.value.pool()))
            .count();
        let default = serde_json::json!("50%");
        let value = p
            .max_unavailable
            .as_ref()
            .map(|m| &m.value)
            .unwrap_or(&default);
        let Some(at_once) = crate::traffic::nodes_at_once(value, selected.len()) else {
            continue;
        };
        if masters < 2 || at_once < 2 {
            continue;
        }
        let written = match value {
            serde_json::Value::String(s) => s.clone(),
            v => v.to_string(),
        };
        out.push(
            Diagnostic::warning(
                Code::ControlPlaneAtOnce,
                format!(
                    "policy `{}` selects {masters} control-plane node(s) among {} node(s), and kubernetes-nmstate changes {at_once} of them at once (maxUnavailable {written}{}, a percentage rounded up): two masters changing together can cost etcd its quorum",
                    p.name,
                    selected.len(),
                    if p.max_unavailable.is_none() { ", its default" } else { "" }
                ),
            )
            .at(p.max_unavailable.as_ref().map(|m| m.span).unwrap_or(p.span))
            .host(h.name.value.clone())
            .help("set `maxUnavailable: 1` on a policy that selects masters (or give the masters a policy of their own with it)"),
        );
    }
}

fn check_policies(inv: &Inventory, out: &mut Vec<Diagnostic>) {
    check_control_plane_at_once(inv, out);
    let policies: Vec<&Host> = inv.hosts.iter().filter(|h| h.policy.is_some()).collect();
    if policies.len() < 2 {
        return;
    }
    let nodes: Vec<std::collections::BTreeMap<String, String>> = inv
        .hosts
        .iter()
        .filter(|h| h.scope() == Scope::FirstBoot)
        .map(|h| h.node_labels(&inv.cluster))
        .collect();
    let selects = |sel: &std::collections::BTreeMap<String, String>,
                   node: &std::collections::BTreeMap<String, String>| {
        sel.iter().all(|(k, v)| node.get(k) == Some(v))
    };
    let may_meet = |a: &Host, b: &Host| {
        let (sa, sb) = (
            &a.policy.as_ref().expect("a policy").selector,
            &b.policy.as_ref().expect("a policy").selector,
        );
        if nodes.is_empty() {
            sa.iter().all(|(k, v)| sb.get(k).is_none_or(|w| w == v))
        } else {
            nodes.iter().any(|n| selects(sa, n) && selects(sb, n))
        }
    };
    // Policies for one node by name meet only each other and the wide ones.
    let hostname = |h: &Host| {
        h.policy
            .as_ref()
            .and_then(|p| p.selector.get("kubernetes.io/hostname").cloned())
    };
    let mut by_node: HashMap<Option<String>, Vec<&Host>> = HashMap::new();
    for p in &policies {
        by_node.entry(hostname(p)).or_default().push(p);
    }
    let wide = by_node.get(&None).cloned().unwrap_or_default();
    let mut groups: Vec<Vec<&Host>> = by_node
        .iter()
        .filter(|(k, _)| k.is_some())
        .map(|(_, v)| v.iter().chain(&wide).copied().collect())
        .collect();
    groups.push(wide.clone());
    let mut reported = std::collections::HashSet::new();
    for group in groups {
        for (i, a) in group.iter().enumerate() {
            for b in &group[i + 1..] {
                let (pa, pb) = (
                    a.policy.as_ref().expect("a policy"),
                    b.policy.as_ref().expect("a policy"),
                );
                // One object given twice (a copy in another directory).
                if pa.name == pb.name || !reported.insert((a.span, b.span)) || !may_meet(a, b) {
                    continue;
                }
                let named = |h: &Host| -> Vec<(String, Span)> {
                    Network::read(h.network.as_ref().expect("a policy has a state"))
                        .ifaces
                        .iter()
                        .filter_map(|i| i.name_node.map(|n| (i.name.clone(), n.span)))
                        .collect()
                };
                let theirs = named(a);
                for (name, span) in named(b) {
                    if let Some((_, first)) = theirs.iter().find(|(n, _)| *n == name) {
                        out.push(
                            Diagnostic::error(
                                Code::PolicyOverlap,
                                format!(
                                    "`{name}` is named by this policy and by `{}`, which can select the same node",
                                    pa.name
                                ),
                            )
                            .at(span)
                            .host(b.name.value.clone())
                            .related(*first, "also named here")
                            .help("give each interface to one policy (split the states, or make the node selectors exclude each other)"),
                        );
                    }
                }
            }
        }
    }
}

/// What the agent installer refuses of a single-node install-config
/// (openshift/installer@782c0705 `pkg/asset/agent/installconfig.go`,
/// its tests `sno_invalid_workers.txt`, `sno_invalid_network_type.txt`):
/// compute replicas on platform none or external, a network type other
/// than OVN-Kubernetes.
fn agent_single_node(inv: &Inventory, out: &mut Vec<Diagnostic>) {
    let Some(ic) = inv.cluster.install_config.as_ref() else {
        return;
    };
    if inv.cluster.control_plane_replicas != Some(1) {
        return;
    }
    let platform = install_platform(inv);
    let workers = ic
        .get("compute")
        .and_then(|c| c.as_seq())
        .and_then(|c| c.first())
        .and_then(|w| w.get("replicas"));
    if let Some(w) = workers.filter(|w| w.as_i64().is_some_and(|n| n > 0)) {
        if matches!(platform.as_deref(), Some("none" | "external")) {
            out.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("{} compute replicas beside one control-plane replica on platform {}: the agent installer refuses it (\"Total number of compute replicas must be 0 when controlPlane.replicas is 1 for platform none or external\")", w.as_i64().unwrap_or_default(), platform.as_deref().unwrap_or_default()),
                )
                .at(w.span)
                .help("a single-node cluster has no workers at install; add them afterwards (nodes-config.yaml, `oc adm node-image create`)"),
            );
        }
    }
    if let Some(t) = ic.get("networking").and_then(|n| n.get("networkType")) {
        if t.as_str().is_some_and(|t| t != "OVNKubernetes") {
            out.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("networkType `{}` on a single-node cluster: the agent installer refuses it (\"Only OVNKubernetes network type is allowed for Single Node OpenShift (SNO) cluster\")", t.as_str().unwrap_or_default()),
                )
                .at(t.span),
            );
        }
    }
}

/// Whether hosts must be in the machine network: not under user-managed
/// networking (install-config platform `none` or `external`), unless the
/// cluster is a single node (assisted-service@063b2579
/// internal/network/utils.go L169-171, `IsMachineNetworkRequired`).
fn machine_network_required(inv: &Inventory) -> bool {
    let user_managed = matches!(install_platform(inv).as_deref(), Some("none" | "external"));
    !user_managed || inv.cluster.control_plane_replicas == Some(1)
}

/// install-config's platform (`baremetal`, `none`, `external`, ...): the
/// one key under `platform:`.
fn install_platform(inv: &Inventory) -> Option<String> {
    let ic = inv.cluster.install_config.as_ref()?;
    let (key, _) = ic.get("platform")?.as_map()?.first()?;
    key.as_str().map(str::to_string)
}

/// A host's static address that is its own BMC's: the BMC (on a shared
/// LOM port or its own) and the installed OS then answer ARP for one
/// address, and the baremetal-operator's power and virtual-media calls
/// reach whichever answered last.
fn bmc_is_host_ip(host: &Host, addresses: &[Address], out: &mut Vec<Diagnostic>) {
    let Some(bmc) = &host.bmc else {
        return;
    };
    let Some(ip) = crate::sites::bmc_ip(&bmc.address.value) else {
        return;
    };
    if let Some(a) = addresses.iter().find(|a| a.ip == ip) {
        out.push(
            Diagnostic::error(
                Code::BmcIsHostIp,
                format!(
                    "`{}` is both the host's static address (on `{}`) and its BMC's address: two devices answer for it, and the baremetal-operator's calls to the BMC reach the OS or the BMC by chance",
                    a.ip, a.iface
                ),
            )
            .at(a.span)
            .host(host.name.value.clone())
            .related(bmc.address.span, "the BMC's address"),
        );
    }
}

fn duplicate_ip(a: &Address, name: &str, other: &str, first: Span) -> Diagnostic {
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
fn shared_static_addresses(
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

fn os_image_ok(url: &str) -> bool {
    let Some(rest) = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
    else {
        return false;
    };
    let Some((_, query)) = rest.split_once('?') else {
        return false;
    };
    query.split('&').any(|kv| {
        kv.strip_prefix("sha256=")
            .is_some_and(|h| h.len() == 64 && h.chars().all(|c| c.is_ascii_hexdigit()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A static storage address beside a DHCP machine network is an
    /// ordinary day-2 edit: the node IP is the DHCP one. Without DHCP, a
    /// host whose static addresses all lie outside is refused.
    #[test]
    fn static_addresses_outside_the_machine_network_beside_dhcp_are_fine() {
        let text = |dhcp: bool| {
            format!(
                "nodenet: v1
cluster: {{name: c, baseDomain: example.com, machineNetworks: [192.168.110.0/24]}}
hosts:
- name: w0
  role: worker
  network:
    interfaces:
    - {{name: eno1, type: ethernet, state: up, ipv4: {{enabled: true, dhcp: {dhcp}}}}}
    - name: eno1.120
      type: vlan
      vlan: {{base-iface: eno1, id: 120}}
      ipv4: {{enabled: true, address: [{{ip: 192.168.120.10, prefix-length: 24}}]}}
"
            )
        };
        let codes = |dhcp: bool| -> Vec<Code> {
            let l = nodenet_model::load_texts(vec![("c.yaml".into(), text(dhcp))]);
            crate::check(&l.inventory, l.diagnostics)
                .diagnostics
                .iter()
                .map(|d| d.code)
                .collect()
        };
        assert!(!codes(true).contains(&Code::IpOutsideMachineNetwork));
        assert!(codes(false).contains(&Code::IpOutsideMachineNetwork));
    }

    #[test]
    fn os_image_urls() {
        let h = "a".repeat(64);
        assert!(os_image_ok(&format!(
            "http://10.0.0.2:8080/rhcos.qcow2.gz?sha256={h}"
        )));
        assert!(!os_image_ok("http://10.0.0.2:8080/rhcos.qcow2.gz"));
        assert!(!os_image_ok(&format!("ftp://x/y?sha256={h}")));
        assert!(!os_image_ok(&format!("http://x/y?sha256={}", &h[1..])));
    }
}
