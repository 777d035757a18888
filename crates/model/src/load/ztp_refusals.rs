//! What the consumers of a ZTP site refuse, transcribed where they cannot
//! run here: the SiteConfig generator (openshift-kni/cnf-features-deploy
//! @ac7d09f7, `ztp/siteconfig-generator/siteConfig/`), which refuses the
//! whole file, and the ClusterInstance admission webhook
//! (stolostron/siteconfig@ecff291f,
//! `api/v1alpha1/clusterinstance_validation.go`), which refuses the object.

use crate::diag::{Code, Diagnostic};
use crate::fields::Decoder;
use crate::inventory::*;
use crate::yaml::Node;

/// The generator's own checks of a SiteConfig's spec
/// (siteConfigBuilder.go L56-69).
pub(super) fn site_config(d: &mut Decoder, root: &Node) {
    let api = root.get("apiVersion");
    let version = api.and_then(Node::as_str).unwrap_or("");
    if !matches!(version, "ran.openshift.io/v1" | "ran.openshift.io/v2") {
        d.push(
            Diagnostic::error(
                Code::InvalidValue,
                format!("`{version}` is no SiteConfig version the ZTP generator reads (ran.openshift.io/v1 or v2): it refuses the file (\"Not valid siteConfig ApiVersion\")"),
            )
            .at(api.map_or(root.span, |a| a.span)),
        );
    }
}

/// A SiteConfig cluster as the generator judges it (`c`, with the site's
/// `spec` for the defaults), once its nodes are read.
pub(super) fn site_config_cluster(d: &mut Decoder, c: &Node, site: Option<&Node>, hosts: &[Host]) {
    let masters = hosts
        .iter()
        .filter(|h| h.role.value == Role::Master)
        .count();
    if masters == 0 {
        d.push(
            Diagnostic::error(
                Code::InvalidValue,
                "a cluster without a master (a node with `role: master` or none): the ZTP generator refuses the file (\"Number of masters (counted 0) must be 1 or more\", siteConfig.go L289-291)",
            )
            .at(c.get("nodes").map_or(c.span, |n| n.span)),
        );
    }
    let image_set = |n: Option<&Node>| {
        n.and_then(|n| n.get("clusterImageSetNameRef"))
            .and_then(Node::scalar_text)
            .is_some_and(|s| !s.is_empty())
    };
    if !image_set(Some(c)) && !image_set(site) {
        d.push(
            Diagnostic::error(
                Code::MissingField,
                "no `clusterImageSetNameRef` on the cluster or the site: the ZTP generator refuses the file (\"Site and cluster clusterImageSetNameRef cannot be empty\", siteConfigBuilder.go L106-108)",
            )
            .at(c.span),
        );
    }
    json_object(d, c.get("installConfigOverrides"), "installConfigOverrides", "the ZTP generator refuses the file (\"Invalid json parameter set at installConfigOverride\")");
    if let Some(mode) = c.get("cpuPartitioningMode") {
        let v = mode.scalar_text().unwrap_or_default();
        if !matches!(v.as_str(), "" | "None" | "AllNodes") {
            d.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("cpuPartitioningMode `{v}` is neither None nor AllNodes: the ZTP generator refuses the file (siteConfig.go L251-253)"),
                )
                .at(mode.span),
            );
        }
    }
}

/// A SiteConfig node's fields the generator judges.
pub(super) fn site_config_node(d: &mut Decoder, n: &Node) {
    if let Some(v) = n.get("ironicInspect") {
        let s = v.scalar_text().unwrap_or_default();
        if !matches!(s.as_str(), "enabled" | "disabled") {
            d.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("ironicInspect `{s}` is neither enabled nor disabled: the ZTP generator refuses the file (siteConfigBuilder.go L115-119)"),
                )
                .at(v.span),
            );
        }
    }
}

/// The generator's role: `master` or none is a master, anything else a
/// worker, without a word (siteConfig.go L278-288); said as a warning
/// when it is not `worker`.
pub(super) fn site_config_role(d: &mut Decoder, n: &Node) -> Located<Role> {
    let Some(v) = n.get("role") else {
        return Located::new(Role::Master, n.span);
    };
    let s = v.scalar_text().unwrap_or_default();
    match s.as_str() {
        "" | "master" => Located::new(Role::Master, v.span),
        "worker" => Located::new(Role::Worker, v.span),
        other => {
            d.push(
                Diagnostic::warning(
                    Code::InvalidValue,
                    format!("role `{other}`: the ZTP generator knows `master` only and counts every other role as a worker"),
                )
                .at(v.span),
            );
            Located::new(Role::Worker, v.span)
        }
    }
}

/// The ClusterInstance webhook's `ValidateClusterInstance` (L176-200,
/// L823-884) on a spec and its nodes.
pub(super) fn cluster_instance(d: &mut Decoder, spec: &Node, hosts: &[Host]) {
    let refs = |n: &Node| {
        n.get("templateRefs")
            .and_then(Node::as_seq)
            .is_some_and(|s| !s.is_empty())
    };
    if !refs(spec) {
        d.push(
            Diagnostic::error(
                Code::MissingField,
                "no `templateRefs`: the ClusterInstance webhook refuses it (\"missing cluster-level template reference\")",
            )
            .at(spec.get("templateRefs").map_or(spec.span, |t| t.span)),
        );
    }
    const REFUSES: &str = "the ClusterInstance webhook refuses it";
    json_text(
        d,
        spec.get("installConfigOverrides"),
        "installConfigOverrides",
        REFUSES,
    );
    json_text(
        d,
        spec.get("ignitionConfigOverride"),
        "ignitionConfigOverride",
        REFUSES,
    );
    for n in spec.get("nodes").and_then(Node::as_seq).unwrap_or_default() {
        if !refs(n) {
            let name = n
                .get("hostName")
                .and_then(Node::scalar_text)
                .unwrap_or_default();
            d.push(
                Diagnostic::error(
                    Code::MissingField,
                    format!("node `{name}` has no `templateRefs`: the ClusterInstance webhook refuses it (\"missing node-level template reference\")"),
                )
                .at(n.get("templateRefs").map_or(n.span, |t| t.span)),
            );
        }
        json_text(d, n.get("installerArgs"), "installerArgs", REFUSES);
        json_text(
            d,
            n.get("ignitionConfigOverride"),
            "ignitionConfigOverride",
            REFUSES,
        );
    }
    control_plane(d, spec, hosts);
}

/// The control-plane agents each `clusterType` needs (L848-884).
fn control_plane(d: &mut Decoder, spec: &Node, hosts: &[Host]) {
    let count = |r: Role| hosts.iter().filter(|h| h.role.value == r).count();
    let (masters, arbiters) = (count(Role::Master), count(Role::Arbiter));
    let declared = spec.get("clusterType");
    let kind = declared.and_then(Node::as_str).unwrap_or("");
    let wrong = match kind {
        "HostedControlPlane" if masters > 0 => {
            Some("hosted control plane clusters must not have control-plane agents")
        }
        "HostedControlPlane" => None,
        _ if masters == 0 => Some("at least 1 control-plane agent is required"),
        "SNO" if masters != 1 => {
            Some("single node OpenShift cluster-type must have exactly 1 control-plane agent")
        }
        "HighlyAvailableArbiter" if arbiters < 1 || masters < 2 => Some(
            "highly available arbiter cluster-type must have at least 1 arbiter agent and 2 control-plane agents",
        ),
        "HighlyAvailableArbiter" => None,
        _ if arbiters > 0 => {
            Some("arbiter agents can only be used with HighlyAvailableArbiter cluster-type")
        }
        _ => None,
    };
    if let Some(why) = wrong {
        d.push(
            Diagnostic::error(
                Code::InvalidValue,
                format!("{masters} master(s) and {arbiters} arbiter(s) with clusterType `{kind}`: the ClusterInstance webhook refuses it (\"control-plane agent validation failed: {why}\")"),
            )
            .at(declared.or(spec.get("nodes")).map_or(spec.span, |n| n.span)),
        );
    }
}

/// A field that must hold JSON text when it is not empty.
fn json_text(d: &mut Decoder, n: Option<&Node>, field: &str, refused: &str) {
    let Some(n) = n else { return };
    let text = n.scalar_text().unwrap_or_default();
    if !text.trim().is_empty() && serde_json::from_str::<serde_json::Value>(&text).is_err() {
        d.push(
            Diagnostic::error(
                Code::InvalidValue,
                format!("`{field}` is not JSON text: {refused} (\"{field} is not a valid JSON-formatted string\")"),
            )
            .at(n.span),
        );
    }
}

/// A field that must hold a JSON object when it is not empty.
fn json_object(d: &mut Decoder, n: Option<&Node>, field: &str, refused: &str) {
    let Some(n) = n else { return };
    let text = n.scalar_text().unwrap_or_default();
    if !text.trim().is_empty()
        && !matches!(
            serde_json::from_str::<serde_json::Value>(&text),
            Ok(serde_json::Value::Object(_))
        )
    {
        d.push(
            Diagnostic::error(
                Code::InvalidValue,
                format!("`{field}` is not a JSON object: {refused}"),
            )
            .at(n.span),
        );
    }
}
