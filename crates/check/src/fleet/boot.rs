//! The host in its cluster: its boot MAC and PXE NIC, its BMC's driver
//! and address, and whether it boots over the provisioning network.

use super::*;

/// BMC drivers of the baremetal platform, and whether they boot over the
/// provisioning network (PXE) rather than virtual media / UEFI HTTP.
pub(super) const BMC_SCHEMES: &[(&str, bool)] = &[
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
pub(super) fn check_bmc_scheme(
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
    let pxe = pxe_interface(&inv.cluster, host);
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
pub fn pxe_interface(cluster: &Cluster, host: &Host) -> Option<String> {
    host.pxe_interface
        .as_ref()
        .or(cluster.provisioning.interface.as_ref())
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

/// A host's static address that is its own BMC's: the BMC (on a shared
/// LOM port or its own) and the installed OS then answer ARP for one
/// address, and the baremetal-operator's power and virtual-media calls
/// reach whichever answered last.
pub(super) fn bmc_is_host_ip(host: &Host, addresses: &[Address], out: &mut Vec<Diagnostic>) {
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
