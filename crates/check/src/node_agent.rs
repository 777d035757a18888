//! The node agent as OpenShift runs it: `cluster.nodeAgent` (what image
//! layering needs to put the binary on the nodes, and the guard of every
//! change), and node disruption policies that restart a unit: the unit
//! must come with them, or the MCO restarts a unit that does not exist
//! and the node goes Degraded.

use nodenet_model::{Code, Diagnostic, Inventory, Layering, Located, Probe};

/// Units RHCOS itself ships that node disruption policies restart or
/// reload (the MCO's own default policies name these).
const RHCOS_UNITS: &[&str] = &[
    "crio.service",
    "kubelet.service",
    "coreos-update-ca-trust.service",
    "NetworkManager.service",
    "nmstate.service",
    "ovs-configuration.service",
    "openvswitch.service",
    "ovs-vswitchd.service",
    "ovsdb-server.service",
    "chronyd.service",
    "sshd.service",
    "systemd-journald.service",
];

pub fn check(inv: &Inventory, out: &mut Vec<Diagnostic>) {
    for unit in &inv.disruption_units {
        let provided = inv.provided_units.iter().any(|p| p.value == unit.value);
        if provided || RHCOS_UNITS.contains(&unit.value.as_str()) {
            continue;
        }
        out.push(
            Diagnostic::error(
                Code::RestartUnitMissing,
                format!(
                    "the node disruption policy restarts `{}`, which no MachineConfig among the inputs provides: the MCO restarts a unit that does not exist and the node goes Degraded",
                    unit.value
                ),
            )
            .at(unit.span)
            .help(if unit.value == "nodenet-apply.service" {
                "give the MachineConfig that installs it beside this file (`nodenet render` writes openshift/10-nodenet-agent-<role>.yaml with cluster.nodeAgent), or leave this policy out"
            } else {
                "give the MachineConfig that installs the unit beside this file, or leave the action out"
            }),
        );
    }
    if let Some(agent) = &inv.cluster.node_agent {
        let missing = |what: &str, why: &str| {
            Diagnostic::error(
                Code::MissingField,
                format!("cluster.nodeAgent has no `{what}`: {why}"),
            )
            .at(agent.span)
        };
        match &agent.image {
            None => out.push(missing(
                "image",
                "the image built from dist/Containerfile, which holds /usr/bin/nodenet for image layering",
            )),
            Some(i) if !image_reference(&i.value) => out.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("`{}` is not an image reference (registry/name:tag or @sha256:digest)", i.value),
                )
                .at(i.span),
            ),
            Some(_) => {}
        }
        if agent.layering == Layering::OnCluster {
            match &agent.rendered_image_push_spec {
                None => out.push(missing(
                    "renderedImagePushSpec",
                    "where the Machine Config Operator pushes the node image it builds (MachineOSConfig)",
                )),
                Some(s) if !push_spec(&s.value) => out.push(
                    Diagnostic::error(
                        Code::InvalidValue,
                        format!("renderedImagePushSpec `{}` is not as the MachineOSConfig CRD requires", s.value),
                    )
                    .at(s.span)
                    .help("host[:port][/namespace]/name:tag, or <service>.<namespace>.svc:<port>/<namespace>/<name>:tag"),
                ),
                Some(_) => {}
            }
            if agent.rendered_image_push_secret.is_none() {
                out.push(missing(
                    "renderedImagePushSecret",
                    "the Secret in openshift-machine-config-operator that may push the node image",
                ));
            }
            for s in [
                &agent.rendered_image_push_secret,
                &agent.base_image_pull_secret,
            ]
            .into_iter()
            .flatten()
            {
                secret_name(s, out);
            }
        }
        for p in &agent.probes {
            if let Err(e) = p.value.parse::<Probe>() {
                out.push(Diagnostic::error(Code::InvalidValue, e.to_string()).at(p.span));
            }
        }
    }
}

fn secret_name(s: &Located<String>, out: &mut Vec<Diagnostic>) {
    let ok = !s.value.is_empty()
        && s.value.len() <= 253
        && s.value.split('.').all(|l| {
            !l.is_empty()
                && l.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        });
    if !ok {
        out.push(
            Diagnostic::error(
                Code::InvalidValue,
                format!(
                    "`{}` is not a Secret name (a lowercase RFC 1123 subdomain)",
                    s.value
                ),
            )
            .at(s.span),
        );
    }
}

/// An image reference a container engine pulls: a name with a tag or a
/// digest, no spaces.
fn image_reference(s: &str) -> bool {
    let last = s.rsplit('/').next().unwrap_or(s);
    !s.is_empty()
        && !s.contains(char::is_whitespace)
        && (last.contains(':') || s.contains("@sha256:"))
}

/// The MachineOSConfig CRD's rule for `renderedImagePushSpec`:
/// `^([a-zA-Z0-9-]+\.)+[a-zA-Z0-9-]+(:[0-9]{2,5})?(/[a-zA-Z0-9-_]{1,61})*/[a-zA-Z0-9-_.]+:[a-zA-Z0-9._-]+$`
/// or `^[^.]+\.[^.]+\.svc:\d+\/[^\/]+\/[^\/]+:[^\/]+$`.
pub fn push_spec(s: &str) -> bool {
    registry_form(s) || service_form(s)
}

fn registry_form(s: &str) -> bool {
    let Some((host_port, path)) = s.split_once('/') else {
        return false;
    };
    let (host, port) = match host_port.split_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (host_port, None),
    };
    let label = |l: &str| !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    let labels: Vec<&str> = host.split('.').collect();
    if labels.len() < 2 || !labels.iter().all(|l| label(l)) {
        return false;
    }
    if let Some(p) = port {
        if !(2..=5).contains(&p.len()) || !p.chars().all(|c| c.is_ascii_digit()) {
            return false;
        }
    }
    let parts: Vec<&str> = path.split('/').collect();
    let (last, middle) = parts.split_last().expect("split gives one part");
    let segment = |x: &str| {
        (1..=61).contains(&x.len())
            && x.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    };
    if !middle.iter().all(|m| segment(m)) {
        return false;
    }
    let Some((name, tag)) = last.split_once(':') else {
        return false;
    };
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && !tag.is_empty()
        && tag
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
}

fn service_form(s: &str) -> bool {
    let Some((host_port, rest)) = s.split_once('/') else {
        return false;
    };
    let Some((host, port)) = host_port.split_once(':') else {
        return false;
    };
    let labels: Vec<&str> = host.split('.').collect();
    let parts: Vec<&str> = rest.split('/').collect();
    labels.len() == 3
        && labels[2] == "svc"
        && labels.iter().all(|l| !l.is_empty())
        && !port.is_empty()
        && port.chars().all(|c| c.is_ascii_digit())
        && parts.len() == 2
        && !parts[0].is_empty()
        && parts[1]
            .split_once(':')
            .is_some_and(|(n, t)| !n.is_empty() && !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_specs_as_the_crd_takes_them() {
        for ok in [
            "image-registry.openshift-image-registry.svc:5000/openshift-machine-config-operator/os-image:latest",
            "quay.io/acme/os-image:nodenet",
            "registry.example.com:5000/ocp/nodes/os-image:v1",
        ] {
            assert!(push_spec(ok), "{ok}");
        }
        for bad in [
            "os-image:latest",
            "quay.io/acme/os-image",
            "quay.io/acme/os-image@sha256:abc",
            "https://quay.io/acme/os-image:latest",
            "quay.io:1/acme/x:y",
        ] {
            assert!(!push_spec(bad), "{bad}");
        }
    }

    #[test]
    fn image_references_need_a_tag_or_digest() {
        assert!(image_reference("quay.io/acme/nodenet:0.1.0"));
        assert!(image_reference("localhost:5000/nodenet@sha256:0123"));
        assert!(!image_reference("quay.io/acme/nodenet"));
        assert!(!image_reference("quay.io/acme/node net:1"));
    }
}
