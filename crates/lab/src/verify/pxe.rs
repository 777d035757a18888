//! Whether each node's PXE NIC would get its lease at boot (a bond's port
//! alone, before LACP), and what provisioning left on the node.

use super::*;

/// A node's PXE NIC, as the check finds it (`fleet::pxe_interface`), when
/// the cluster PXE-boots (its provisioning network is not Disabled).
#[derive(Clone, Debug)]
pub(super) struct Pxe {
    pub(super) nic: String,
    /// The 802.3ad bond it is a port of, if any, and its port count.
    pub(super) lacp_bond: Option<(String, usize)>,
    /// The untagged VLAN of its switch port, and whether the lab serves
    /// DHCP there.
    pub(super) native: u16,
    pub(super) served: bool,
}

pub(super) fn pxe_of(inv: &Inventory, host: &nodenet_model::Host, state: &LabState) -> Option<Pxe> {
    use nodenet_check::fleet::{provisioning_mode, pxe_interface};
    if provisioning_mode(inv)? == nodenet_model::ProvisioningNetwork::Disabled {
        return None;
    }
    let nic = pxe_interface(&inv.cluster, host)?;
    let port = state
        .topology
        .ports
        .iter()
        .find(|p| p.host == host.name.value && p.nic == nic)?;
    let net = host.network.as_ref().map(Network::read).unwrap_or_default();
    let lacp_bond = net
        .controller_of(&nic)
        .filter(|(c, _)| c.bond_mode().as_deref() == Some("802.3ad"))
        .map(|(c, _)| (c.name.clone(), c.ports.len()));
    let served = state
        .topology
        .segments
        .iter()
        .any(|s| s.vlan == port.native && s.dhcp.is_some() && s.network.addr().is_ipv4());
    Some(Pxe {
        nic,
        lacp_bond,
        native: port.native,
        served,
    })
}

/// A PXE ROM's DHCP request from the PXE NIC alone, as at power-on: the
/// NIC taken from NetworkManager (and out of its bond), a while for the
/// switch to stop seeing LACP from it, then busybox udhcpc; afterwards
/// NetworkManager takes it back with the profile it had (into its bond;
/// `nmcli dev connect` may pick or make a DHCP profile instead, leaving
/// the node other than its intent) and the bond must aggregate again.
pub(super) fn pxe_check(vm: &mut Vm, pxe: &Pxe, allow_lacp: bool) -> Vec<Check> {
    let name = vm.name.clone();
    let nic = &pxe.nic;
    if !pxe.served {
        return vec![check(
            &name,
            "pxe",
            nic,
            false,
            format!(
                "no DHCP on the untagged VLAN {} of {nic}'s switch port: the lab has no network there for PXE (give the cluster a provisioning network, or the NIC a native VLAN that has one)",
                pxe.native
            ),
        )];
    }
    if pxe.lacp_bond.is_some() && allow_lacp {
        return vec![check(
            &name,
            "pxe",
            nic,
            true,
            "not tried: the inventory says the switch ports do LACP fallback (provisioning.allowLacp), which the lab's switch (Linux 802.3ad) cannot",
        )];
    }
    let (_, out) = vm.shell(
        &format!(
            "c=$(nmcli -g GENERAL.CONNECTION dev show {nic} 2>/dev/null); nmcli dev set {nic} managed no; ip link set {nic} nomaster 2>/dev/null; ip link set {nic} up; sleep 5; busybox udhcpc -i {nic} -n -q -f -t 4 -T 2 -s /bin/true 2>&1 | grep -i 'lease of' ; ip link set {nic} down; nmcli dev set {nic} managed yes; sleep 1; if [ -n \"$c\" ]; then nmcli con up \"$c\" ifname {nic} >/dev/null 2>&1; else nmcli dev connect {nic} >/dev/null 2>&1; fi"
        ),
        Duration::from_secs(120),
    );
    let lease = out
        .lines()
        .find(|l| l.to_ascii_lowercase().contains("lease of"))
        .map(|l| l.trim().to_string());
    let mut out_checks = vec![match (&lease, &pxe.lacp_bond) {
        (Some(l), _) => check(&name, "pxe", nic, true, format!("DHCP through the lab switch: {l}")),
        (None, Some((bond, _))) => check(
            &name,
            "pxe",
            nic,
            false,
            format!(
                "no DHCP lease: {nic} is a port of 802.3ad bond {bond} and its switch port has no LACP fallback, so a PXE ROM (which speaks no LACP) is not heard until LACP is up (check: pxe-nic-in-lacp-bond)"
            ),
        ),
        (None, None) => check(&name, "pxe", nic, false, format!("no DHCP lease on {nic} through the lab switch")),
    }];
    if let Some((bond, ports)) = &pxe.lacp_bond {
        let back = bond_back(vm, bond, *ports);
        if let Err(e) = back {
            out_checks.push(check(
                &name,
                "pxe",
                format!("{nic} back in {bond}"),
                false,
                format!("after the PXE try, {bond} did not aggregate again: {e}"),
            ));
        }
    }
    out_checks
}

/// Waits (up to 90 s) until `bond` has all its `ports` collecting and
/// distributing in its active aggregator.
pub(super) fn bond_back(vm: &mut Vm, bond: &str, ports: usize) -> Result<usize, String> {
    let mut result = Err(String::new());
    let deadline = Instant::now() + Duration::from_secs(90);
    while Instant::now() < deadline {
        let (_, text) = vm.shell(
            &format!("cat /proc/net/bonding/{bond}"),
            Duration::from_secs(30),
        );
        result = lacp_aggregated(&text).and_then(|n| {
            if n == ports {
                Ok(n)
            } else {
                Err(format!("{n} of its {ports} ports in the bond"))
            }
        });
        if result.is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_secs(2));
    }
    result
}

/// A node its BMC booted from a CD (`provision --lab`): NetworkManager
/// must run with the rendered keyfiles that came on the CD, each one
/// (stage 1 says which it copied; the config disk had none).
pub(super) fn provisioned(dir: &Path, node: &str) -> Option<Check> {
    if !dir.join(format!("{node}-cd.iso")).is_file() {
        return None;
    }
    let console = std::fs::read_to_string(crate::console_log::path(dir, node)).unwrap_or_default();
    let mut rendered: Vec<String> = std::fs::read_dir(dir.join(format!("{node}-cfg/keyfiles")))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    rendered.sort();
    let missing: Vec<&String> = rendered
        .iter()
        .filter(|k| !console.contains(&format!("lab: firstboot network {k}")))
        .collect();
    Some(check(
        node,
        "boot",
        "provisioned",
        missing.is_empty() && !rendered.is_empty(),
        if missing.is_empty() {
            format!(
                "booted its CD from its BMC; its {} keyfile(s) came from the CD",
                rendered.len()
            )
        } else {
            format!(
                "booted its CD from its BMC, but not with {} from it",
                missing
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        },
    ))
}
