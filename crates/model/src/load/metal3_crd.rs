//! What a Metal3DataTemplate's consumers refuse or drop: the CRD (served
//! versions, enums, required fields, pruned keys) and cloud-init's
//! conversion of what CAPM3 renders (links that name no link, a
//! multicast MAC on a NIC).

use crate::diag::{Code, Diagnostic};
use crate::fields::Decoder;
use crate::yaml::Node;

use super::metal3_data_template::{s, seq};

/// What the CRD (cluster-api-provider-metal3@2f6d76b8
/// `config/crd/bases/infrastructure.cluster.x-k8s.io_metal3datatemplates.yaml`)
/// and cloud-init's `convert_net_json` (canonical/cloud-init@04eacd06
/// `cloudinit/sources/helpers/openstack.py` L530-807) refuse or drop in a
/// template's `networkData`: versions not served, values outside the
/// enums, required fields, keys the API server prunes, references to
/// links the template does not define, a multicast MAC on a NIC.
pub(super) fn check(root: &Node, diags: &mut Vec<Diagnostic>) {
    let api = root.get("apiVersion");
    let version = api
        .and_then(Node::as_str)
        .and_then(|a| a.split_once('/'))
        .map(|(_, v)| v)
        .unwrap_or("");
    if !matches!(version, "v1beta1" | "v1beta2") {
        diags.push(
            Diagnostic::error(
                Code::InvalidValue,
                format!("the Metal3DataTemplate CRD serves v1beta1 and v1beta2, not `{version}` (v1alpha5 was removed): the API server refuses the object"),
            )
            .at(api.map_or(root.span, |a| a.span)),
        );
    }
    let Some(nd) = root.get("spec").and_then(|s| s.get("networkData")) else {
        return;
    };
    let mut d = Decoder::new(diags);
    let links = nd.get("links");
    let ids = link_ids(&mut d, links);
    link_values(&mut d, links, &ids);
    networks(&mut d, nd.get("networks"), version == "v1beta1");
}

/// What the API server prunes.
const PRUNED: &str = "the API server prunes it (the Metal3DataTemplate CRD has no such field)";

/// Each link's fields (pruned, required); the links' ids.
fn link_ids(d: &mut Decoder, links: Option<&Node>) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for (kind, known, required) in [
        (
            "ethernets",
            &["id", "type", "mtu", "macAddress", "name"][..],
            &["id", "macAddress", "type"][..],
        ),
        (
            "bonds",
            &[
                "id",
                "bondMode",
                "bondXmitHashPolicy",
                "bondLinks",
                "mtu",
                "macAddress",
                "name",
                "parameters",
            ][..],
            &["bondMode", "id", "macAddress"][..],
        ),
        (
            "vlans",
            &["id", "vlanID", "vlanLink", "mtu", "macAddress", "name"][..],
            &["id", "macAddress", "vlanID", "vlanLink"][..],
        ),
    ] {
        for l in seq(links, kind) {
            if !d.dropped_fields(l, &format!("a link of `{kind}`"), known, PRUNED) {
                continue;
            }
            for key in required.iter().filter(|k| l.get(k).is_none()) {
                d.push(
                    Diagnostic::error(
                        Code::MissingField,
                        format!("a link of `{kind}` without `{key}`: the CRD requires it"),
                    )
                    .at(l.span),
                );
            }
            ids.extend(s(l, "id"));
        }
    }
    ids
}

/// The links' values: the CRD's enums, a NIC's MAC, the ids they name.
fn link_values(d: &mut Decoder, links: Option<&Node>, ids: &[String]) {
    let enum_value = |d: &mut Decoder, n: Option<&Node>, what: &str, allowed: &[&str]| {
        let Some(n) = n else { return };
        let v = n.scalar_text().unwrap_or_default();
        if !allowed.contains(&v.as_str()) {
            let mut e = Diagnostic::error(
                Code::InvalidValue,
                format!(
                    "{what} `{v}` is none the CRD takes ({}): the API server refuses the object",
                    allowed.join(", ")
                ),
            )
            .at(n.span);
            if let Some(s) = crate::fields::suggest(&v, allowed) {
                e = e.help(format!("did you mean `{s}`?"));
            }
            d.push(e);
        }
    };
    for e in seq(links, "ethernets") {
        enum_value(
            d,
            e.get("type"),
            "ethernet link type",
            &[
                "bridge",
                "dvs",
                "hw_veb",
                "hyperv",
                "ovs",
                "tap",
                "vhostuser",
                "vif",
                "phy",
            ],
        );
        let mac = e.get("macAddress").and_then(|m| m.get("string"));
        if let Some(m) = mac {
            let first = m
                .as_str()
                .and_then(|t| u8::from_str_radix(t.get(..2)?, 16).ok());
            if first.is_some_and(|b| b & 1 == 1) {
                d.push(
                    Diagnostic::error(
                        Code::MacInvalid,
                        format!("`{}` is a multicast MAC: no NIC has one, so cloud-init finds no NIC for this link (\"Unable to find a system nic\")", m.as_str().unwrap_or_default()),
                    )
                    .at(m.span),
                );
            }
        }
    }
    for b in seq(links, "bonds") {
        enum_value(
            d,
            b.get("bondMode"),
            "bond mode",
            &[
                "balance-rr",
                "active-backup",
                "balance-xor",
                "broadcast",
                "balance-tlb",
                "balance-alb",
                "802.3ad",
            ],
        );
        enum_value(
            d,
            b.get("bondXmitHashPolicy"),
            "bond transmit hash policy",
            &["layer2", "layer3+4", "layer2+3"],
        );
        for port in seq(Some(b), "bondLinks") {
            undefined_link(
                d,
                port,
                ids,
                "a port of this bond",
                "cloud-init's conversion fails (KeyError) and the node's network is not configured",
            );
        }
    }
    for v in seq(links, "vlans") {
        if let Some(base) = v.get("vlanLink") {
            undefined_link(
                d,
                base,
                ids,
                "this VLAN's link",
                "cloud-init's conversion fails (KeyError) and the node's network is not configured",
            );
        }
    }
}

/// The networks' fields: pruned, `link` required, a v1beta1 pool reference.
fn networks(d: &mut Decoder, networks: Option<&Node>, v1beta1: bool) {
    for kind in ["ipv4", "ipv6", "ipv4DHCP", "ipv6DHCP", "ipv6SLAAC"] {
        let known: &[&str] = if kind.len() == 4 {
            &[
                "id",
                "link",
                "ipAddressFromIPPool",
                "fromPoolRef",
                "fromPoolAnnotation",
                "routes",
            ]
        } else {
            &["id", "link", "routes"]
        };
        for n in seq(networks, kind) {
            if !d.dropped_fields(n, &format!("a network of `{kind}`"), known, PRUNED) {
                continue;
            }
            // A link no link defines is the network_data reader's finding.
            if n.get("link").is_none() {
                d.push(
                    Diagnostic::error(
                        Code::MissingField,
                        format!("a network of `{kind}` without `link`: the CRD requires it"),
                    )
                    .at(n.span),
                );
            }
            // v1beta1's fromPoolRef is a TypedLocalObjectReference.
            if let Some(r) = n.get("fromPoolRef").filter(|_| v1beta1) {
                for key in ["kind", "name"].iter().filter(|k| r.get(k).is_none()) {
                    d.push(
                        Diagnostic::error(Code::MissingField, format!("`fromPoolRef` without `{key}`: v1beta1 requires `kind` and `name` (v1beta2 defaults `kind: IPPool`, `apiGroup: ipam.metal3.io`)"))
                            .at(r.span)
                            .help("add `apiGroup: ipam.metal3.io` and `kind: IPPool`"),
                    );
                }
            }
        }
    }
}

/// A reference to a link `id` the template does not define.
fn undefined_link(d: &mut Decoder, n: &Node, ids: &[String], what: &str, then: &str) {
    let Some(id) = n.scalar_text() else {
        return;
    };
    if !ids.contains(&id) {
        let known: Vec<&str> = ids.iter().map(String::as_str).collect();
        let mut e = Diagnostic::error(
            Code::InvalidValue,
            format!("{what} is `{id}`, which no link of the template has as its `id`: {then}"),
        )
        .at(n.span);
        if let Some(s) = crate::fields::suggest(&id, &known) {
            e = e.help(format!("did you mean `{s}`?"));
        }
        d.push(e);
    }
}
