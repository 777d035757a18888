//! OpenShift's install-config.yaml: the cluster (machine networks, VIPs,
//! provisioning network, OS image) and `platform.baremetal.hosts`, each
//! with its BMC (password inline, kept as a secret) and `networkConfig`.

use crate::diag::{Code, Diagnostic};
use crate::fields::Decoder;
use crate::inventory::*;
use crate::yaml::Node;

pub(crate) fn load(root: &mut Node, diags: &mut Vec<Diagnostic>) -> Inventory {
    // Each host's state is moved out of the tree, not copied: a real
    // install-config writes one out for every host.
    let mut networks: Vec<Option<Node>> = root
        .seq_at_mut(&["platform", "baremetal", "hosts"])
        .map(|hosts| hosts.iter_mut().map(|h| h.take("networkConfig")).collect())
        .unwrap_or_default();
    let root = &*root;
    let mut d = Decoder::new(diags);
    let mut inv = Inventory::default();
    let c = &mut inv.cluster;
    c.span = Some(root.span);
    c.name = root.get("metadata").and_then(|m| d.string(m, "name"));
    c.base_domain = d.string(root, "baseDomain");
    if let Some(net) = root.get("networking") {
        for n in d.seq(net, "machineNetwork") {
            if let Some(cidr) = n.get("cidr") {
                c.machine_networks.extend(d.cidr(cidr));
            }
        }
    }
    c.ssh_key = d.string(root, "sshKey").map(|s| s.value);
    let Some(bm) = root.get("platform").and_then(|p| p.get("baremetal")) else {
        return inv;
    };
    // The list wins over the older single field it replaced.
    for key in ["apiVIPs", "apiVIP"] {
        if let Some(v) = bm.get(key) {
            c.api_vips.extend(d.ips(v));
            break;
        }
    }
    for key in ["ingressVIPs", "ingressVIP"] {
        if let Some(v) = bm.get(key) {
            c.ingress_vips.extend(d.ips(v));
            break;
        }
    }
    c.provisioning.network = bm
        .get("provisioningNetwork")
        .and_then(|v| super::provisioning_mode(&mut d, v));
    c.provisioning.cidr = bm.get("provisioningNetworkCIDR").and_then(|v| d.cidr(v));
    c.provisioning.interface = d.string(bm, "provisioningNetworkInterface");
    c.cluster_os_image = d.string(bm, "clusterOSImage");
    c.hosts_span = Some(bm.get("hosts").map(|h| h.span).unwrap_or(bm.span));
    for (i, h) in d.seq(bm, "hosts").iter().enumerate() {
        if h.as_map().is_none() {
            d.type_error(h, "hosts[]", "a mapping");
            continue;
        }
        let name = d.string(h, "name").unwrap_or_else(|| {
            d.push(Diagnostic::error(Code::MissingField, "host has no `name`").at(h.span));
            Located::new(format!("hosts[{i}]"), h.span)
        });
        d.host = Some(name.value.clone());
        let bmc = h.get("bmc").and_then(|b| {
            let address = d.required_string(b, "address", "bmc")?;
            let cred_name = format!("{}-bmc", name.value);
            if let (Some(user), Some(pw)) = (d.string(b, "username"), d.string(b, "password")) {
                inv.credentials.insert(
                    cred_name.clone(),
                    Located::new(
                        Credentials {
                            username: user.value,
                            password: PasswordSource::Inline(Secret::new(pw.value)),
                        },
                        b.span,
                    ),
                );
            }
            Some(Bmc {
                address,
                credentials: Some(Located::new(cred_name, b.span)),
                disable_certificate_verification: d
                    .bool(b, "disableCertificateVerification")
                    .unwrap_or(false),
            })
        });
        let mut host = Host::new(name, InputKind::InstallConfig);
        host.span = h.span;
        host.role = super::role(&mut d, h.get("role"), h.span);
        host.bmc = bmc;
        host.boot_mac = h.get("bootMACAddress").and_then(|m| d.mac(m));
        host.boot_mode = d.string(h, "bootMode");
        host.root_device_hints = h.get("rootDeviceHints").cloned();
        host.network = networks
            .get_mut(i)
            .and_then(Option::take)
            .filter(|n| !n.is_null());
        inv.hosts.push(host);
        d.host = None;
    }
    inv
}
