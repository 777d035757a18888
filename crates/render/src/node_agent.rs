//! Shipping the node agent to OpenShift nodes by the mechanisms OpenShift
//! supports: the unit `nodenet-apply.service` in a MachineConfig, the
//! `nodenet` binary by RHCOS image layering (a 29 MB binary cannot travel
//! in a MachineConfig, and the MCO never fetches remote file sources on a
//! running node), and the node disruption policy that restarts the unit
//! instead of rebooting, written only together with the unit.

use serde_json::{json, Map, Value as J};

use nodenet_check::br_ex::NODENET_DIR;
use nodenet_model::{Inventory, Layering, NodeAgent};

use crate::artifacts::yaml;
use crate::openshift::{machine_config, Pool};
use crate::output::OutFile;

pub const UNIT: &str = "nodenet-apply.service";
/// Where image layering puts the binary (RHCOS's `/usr/local` is
/// `/var/usrlocal`, which a layered image cannot fill).
pub const LAYERED_BIN: &str = "/usr/bin/nodenet";

/// How a change is guarded on the node. The defaults are
/// kubernetes-nmstate's: its handler applies with `nmstatectl apply
/// --no-commit --timeout 480` and gives each probe up to 120 s, enough
/// for what converges slowly on real switches: LACP at the slow rate
/// (a partner is timed out after 90 s), STP's forwarding delay (2 × 15 s)
/// and a slow DHCP server; a healthy change commits as soon as its probes
/// pass, so the long bound costs only when a change is rolled back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Guard {
    pub checkpoint_timeout: u64,
    pub probe_timeout: u64,
    pub probes: Vec<String>,
}

pub const DEFAULT_CHECKPOINT_TIMEOUT: u64 = 480;
pub const DEFAULT_PROBE_TIMEOUT: u64 = 120;

impl Default for Guard {
    fn default() -> Self {
        Guard {
            checkpoint_timeout: DEFAULT_CHECKPOINT_TIMEOUT,
            probe_timeout: DEFAULT_PROBE_TIMEOUT,
            probes: Vec::new(),
        }
    }
}

impl Guard {
    pub fn of(agent: &NodeAgent) -> Guard {
        Guard {
            checkpoint_timeout: agent
                .checkpoint_timeout
                .as_ref()
                .map_or(DEFAULT_CHECKPOINT_TIMEOUT, |t| t.value),
            probe_timeout: agent
                .probe_timeout
                .as_ref()
                .map_or(DEFAULT_PROBE_TIMEOUT, |t| t.value),
            probes: agent.probes.iter().map(|p| p.value.clone()).collect(),
        }
    }
}

/// The unit, running `bin`. `dist/systemd/nodenet-apply.service` is this
/// with `/usr/local/bin/nodenet` and the default guard (a test keeps them
/// equal).
pub fn unit(bin: &str, guard: &Guard) -> String {
    let mut exec = format!(
        "{bin} service --dir {NODENET_DIR} --timeout {} --probe-timeout {}",
        guard.checkpoint_timeout, guard.probe_timeout
    );
    if !guard.probes.is_empty() {
        exec.push_str(&format!(" --probe {}", guard.probes.join(",")));
    }
    // nm-online, the checkpoint's bound, a restore, and a listening
    // probe's time before the change.
    let start_timeout = 60 + guard.checkpoint_timeout + 2 * guard.probe_timeout + 60;
    format!(
        r#"# Applies this node's network state from {NODENET_DIR}:
# <short hostname>.yml (`hostname -s`), else cluster.yml, the files
# `nodenet render` puts in openshift/10-nodenet-nmstate-<pool>.yaml. It is
# nodenet's own directory: RHCOS's nmstate-configuration.service and
# nmstate.service apply /etc/nmstate/openshift (OpenShift's br-ex by NMState)
# and never read it, so every file has one applier.
#
# At boot, after nmstate.service and ovs-configuration.service (br-ex is in
# place, made by NMState or by configure-ovs.sh), before the kubelet; and
# each time the Machine Config Operator restarts it after writing new files
# there (render's openshift/machineconfiguration-cluster.yaml: the node
# disruption policy for {NODENET_DIR} is "Restart this unit", not a
# reboot). The sha256 of what was applied is recorded in
# /var/lib/nodenet/status.json with how the last run ended (`nodenet
# status`): an unchanged file is not applied again.
#
# A change that cuts the node off is rolled back (NetworkManager checkpoint
# of {checkpoint} s; probes of up to {probe} s each: the default gateway
# and the API server) and the unit fails: the MCO marks the node degraded
# and stops the pool's rollout. A run stopped mid-apply leaves no open
# checkpoint: ExecStopPost rolls back what it left open.
[Unit]
Description=Apply the host network state from {NODENET_DIR} (nodenet)
Wants=NetworkManager.service
After=NetworkManager.service nmstate.service ovs-configuration.service
Before=kubelet-dependencies.target kubelet.service
ConditionPathExistsGlob={NODENET_DIR}/*.yml
# The binary comes with the node image (image layering): until the node
# runs that image, the unit does nothing, and a restart does not fail.
ConditionPathExists={bin}

[Service]
Type=oneshot
RemainAfterExit=yes
# Waits until NetworkManager has finished starting up, not for connectivity.
ExecStartPre=/usr/bin/nm-online -s -q -t 60
ExecStart={exec}
ExecStopPost={bin} rollback --if-pending
TimeoutStartSec={start_timeout}
TimeoutStopSec=90
StateDirectory=nodenet

[Install]
WantedBy=multi-user.target
"#,
        checkpoint = guard.checkpoint_timeout,
        probe = guard.probe_timeout,
    )
}

/// The MachineConfig that installs the unit on every node of `role`
/// (custom pools take the worker role's MachineConfigs too).
pub fn unit_machine_config(role: &str, guard: &Guard) -> OutFile {
    let config = json!({
        "ignition": {"version": "3.2.0"},
        "systemd": {"units": [{
            "name": UNIT,
            "enabled": true,
            "contents": unit(LAYERED_BIN, guard),
        }]},
    });
    let name = format!("10-nodenet-agent-{role}");
    OutFile::new(
        format!("openshift/{name}.yaml"),
        yaml(&machine_config(&name, role, config, None)),
        0o644,
    )
}

/// The operator's MachineConfiguration `cluster`: a change to the files
/// under nodenet's directory restarts `nodenet-apply.service` instead of
/// draining and rebooting the pool (node disruption policies, GA in 4.17,
/// where a directory path covers every file beneath it). Written only
/// beside the MachineConfig that installs the unit it restarts.
pub fn machine_configuration() -> OutFile {
    let mc = json!({
        "apiVersion": "operator.openshift.io/v1",
        "kind": "MachineConfiguration",
        "metadata": {"name": "cluster"},
        "spec": {
            "managementState": "Managed",
            "nodeDisruptionPolicy": {
                "files": [{
                    "path": NODENET_DIR,
                    "actions": [{
                        "type": "Restart",
                        "restart": {"serviceName": UNIT},
                    }],
                }],
            },
        },
    });
    OutFile::new(
        "openshift/machineconfiguration-cluster.yaml",
        yaml(&mc),
        0o644,
    )
}

/// The Containerfile a MachineOSConfig builds from: the nodenet image's
/// binary copied onto the pool's node image (`FROM configs AS final` is
/// the MCO's base, and must be the last stage).
pub fn on_cluster_containerfile(image: &str) -> String {
    format!(
        "FROM {image} AS nodenet\nFROM configs AS final\nCOPY --from=nodenet {LAYERED_BIN} {LAYERED_BIN}\n"
    )
}

/// The Containerfile for out-of-cluster layering (OpenShift 4.13+): the
/// release's RHCOS image with the binary, built and pushed by the user
/// and set as the pools' `osImageURL`.
pub fn out_of_cluster_containerfile(image: &str) -> String {
    format!(
        "# The node image with nodenet, for out-of-cluster image layering (OpenShift 4.13+).\n\
         # Build it on the release's RHCOS image, push it, and set its digest as\n\
         # cluster.nodeAgent.osImageURL (render then writes the MachineConfigs that use it):\n\
         #   podman build --build-arg RHCOS_IMAGE=$(oc adm release info --image-for rhel-coreos) \\\n\
         #     -t registry.example.com/ocp/node-image:nodenet -f nodenet-layer.Containerfile .\n\
         ARG RHCOS_IMAGE\n\
         FROM {image} AS nodenet\n\
         FROM ${{RHCOS_IMAGE}}\n\
         COPY --from=nodenet {LAYERED_BIN} {LAYERED_BIN}\n\
         RUN ostree container commit\n"
    )
}

/// Everything that puts the agent on the nodes of `pools`: the unit per
/// role, the node disruption policy, and the binary by image layering
/// (one MachineOSConfig per pool, or the out-of-cluster Containerfile and
/// the pools' `osImageURL`). Nothing without `cluster.nodeAgent`.
pub fn files(inv: &Inventory, pools: &[Pool]) -> Vec<OutFile> {
    let Some(agent) = &inv.cluster.node_agent else {
        return Vec::new();
    };
    let guard = Guard::of(agent);
    let mut out = Vec::new();
    let mut roles: Vec<&str> = pools.iter().map(|p| p.role).collect();
    roles.dedup();
    for role in &roles {
        out.push(unit_machine_config(role, &guard));
    }
    out.push(machine_configuration());
    let image = agent
        .image
        .as_ref()
        .map(|i| i.value.as_str())
        .unwrap_or("NODENET_IMAGE");
    match agent.layering {
        Layering::OnCluster => {
            for pool in pools {
                out.push(machine_os_config(agent, &pool.name, image));
            }
        }
        Layering::OutOfCluster => {
            out.push(OutFile::new(
                "openshift/nodenet-layer.Containerfile",
                out_of_cluster_containerfile(image),
                0o644,
            ));
            if let Some(url) = &agent.os_image_url {
                for pool in pools {
                    let name = format!("99-nodenet-os-image-{}", pool.name);
                    let mc = machine_config(
                        &name,
                        &pool.name,
                        json!({"ignition": {"version": "3.2.0"}}),
                        Some(&url.value),
                    );
                    out.push(OutFile::new(
                        format!("openshift/{name}.yaml"),
                        yaml(&mc),
                        0o644,
                    ));
                }
            }
        }
    }
    out
}

/// On-cluster layering for one pool (`machineconfiguration.openshift.io/
/// v1`; its name is the pool's, as the CRD requires).
fn machine_os_config(agent: &NodeAgent, pool: &str, image: &str) -> OutFile {
    let mut spec = Map::new();
    spec.insert("machineConfigPool".into(), json!({"name": pool}));
    spec.insert("imageBuilder".into(), json!({"imageBuilderType": "Job"}));
    spec.insert(
        "containerFile".into(),
        json!([{"containerfileArch": "NoArch", "content": on_cluster_containerfile(image)}]),
    );
    if let Some(s) = &agent.base_image_pull_secret {
        spec.insert("baseImagePullSecret".into(), json!({"name": s.value}));
    }
    spec.insert(
        "renderedImagePushSecret".into(),
        json!({"name": agent.rendered_image_push_secret.as_ref().map(|s| s.value.as_str()).unwrap_or("")}),
    );
    spec.insert(
        "renderedImagePushSpec".into(),
        json!(agent
            .rendered_image_push_spec
            .as_ref()
            .map(|s| s.value.as_str())
            .unwrap_or("")),
    );
    let mosc = json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineOSConfig",
        "metadata": {"name": pool},
        "spec": J::Object(spec),
    });
    OutFile::new(
        format!("openshift/machineosconfig-{pool}.yaml"),
        yaml(&mosc),
        0o644,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The unit shipped for hand installs is the rendered one with the
    /// default guard: one text, two places.
    #[test]
    fn dist_unit_is_the_rendered_unit() {
        let dist = include_str!("../../../dist/systemd/nodenet-apply.service");
        assert_eq!(dist, unit("/usr/local/bin/nodenet", &Guard::default()));
    }

    #[test]
    fn the_unit_runs_after_rhcos_makes_br_ex_and_is_bounded_by_its_guard() {
        let u = unit(
            LAYERED_BIN,
            &Guard {
                checkpoint_timeout: 300,
                probe_timeout: 60,
                probes: vec!["gateway".into(), "tcp:api-int.c.example.com:6443".into()],
            },
        );
        assert!(
            u.contains("After=NetworkManager.service nmstate.service ovs-configuration.service\n")
        );
        assert!(u.contains("ConditionPathExists=/usr/bin/nodenet\n"));
        assert!(u.contains(
            "ExecStart=/usr/bin/nodenet service --dir /etc/nodenet/nmstate --timeout 300 --probe-timeout 60 --probe gateway,tcp:api-int.c.example.com:6443\n"
        ));
        // 60 (nm-online) + 300 + 2 x 60 + 60.
        assert!(u.contains("TimeoutStartSec=540\n"));
        assert!(
            !u.contains("network-online.target"),
            "ordering before network-online.target would cycle with the MCO's firstboot units"
        );
    }
}
