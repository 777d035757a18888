//! What `nodenet-apply.service` does on a node: it runs at boot and again
//! whenever the Machine Config Operator restarts it after writing new
//! files under /etc/nmstate/openshift (the node disruption policy that
//! `nodenet render` writes). It applies the node's own file (else
//! `cluster.yml`) only when its content differs from what was applied,
//! and keeps a status record the MCO-side operator can read with
//! `nodenet status`.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::Probe;

/// Where the record lives (StateDirectory=nodenet).
pub const STATUS: &str = "/var/lib/nodenet/status.json";

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Applied, probes passed, committed.
    Applied,
    /// The content is what was applied already: nothing done.
    Unchanged,
    /// No `<hostname>.yml` nor `cluster.yml`.
    NoFile,
    /// `nodenet check` rejects the state: nothing was applied.
    Refused,
    /// Applied, then a probe failed or the kernel did not show it: the
    /// previous state was restored.
    RolledBack,
    /// NetworkManager or nmstate failed.
    Failed,
}

impl Outcome {
    /// The service fails (the MCO degrades the node and stops the pool)
    /// unless the node has the desired state.
    pub fn ok(self) -> bool {
        matches!(
            self,
            Outcome::Applied | Outcome::Unchanged | Outcome::NoFile
        )
    }
}

/// The state in place.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InPlace {
    pub sha256: String,
    pub file: String,
    pub at: String,
}

/// One run of the service.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Run {
    pub outcome: Outcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// The probe that failed, when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_probe: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub started: String,
    pub finished: String,
    /// The kernel's boot id: a run of this boot or of an earlier one.
    pub boot_id: String,
}

/// `/var/lib/nodenet/status.json`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Status {
    /// The last state applied and committed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub applied: Option<InPlace>,
    /// The last run, whatever its outcome.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last: Option<Run>,
}

impl Status {
    /// The record at `path` (empty when there is none; what the service
    /// applied before status.json is read from its old record beside it).
    pub fn read(path: &Path) -> std::io::Result<Status> {
        match std::fs::read(path) {
            Ok(data) => serde_json::from_slice(&data)
                .map_err(|e| std::io::Error::other(format!("{}: {e}", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // The record before status.json: `<sha256>  <path>`.
                let legacy = path.with_file_name("applied");
                let applied = std::fs::read_to_string(legacy).ok().and_then(|r| {
                    let mut parts = r.split_whitespace();
                    Some(InPlace {
                        sha256: parts.next()?.to_string(),
                        file: parts.next().unwrap_or_default().to_string(),
                        at: String::new(),
                    })
                });
                Ok(Status {
                    applied,
                    last: None,
                })
            }
            Err(e) => Err(e),
        }
    }

    /// Written whole or not at all.
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        nodenet_model::write_atomic(path, format!("{text}\n").as_bytes())
    }

    /// Whether `sha256` is the state in place.
    pub fn is_applied(&self, sha256: &str) -> bool {
        self.applied.as_ref().is_some_and(|a| a.sha256 == sha256)
    }
}

/// What identifies a state file's content in the record.
pub fn content_sha256(data: &[u8]) -> String {
    use sha2::Digest;
    nodenet_model::hex(&sha2::Sha256::digest(data))
}

/// Now, as RFC 3339 UTC.
pub fn now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

pub fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Where the service looks, as OpenShift's MachineConfig path lays it
/// out: `<dir>/<hostname>.yml`, else `<dir>/cluster.yml`.
pub fn file_for(dir: &Path, hostname: &str) -> Option<PathBuf> {
    [format!("{hostname}.yml"), "cluster.yml".to_string()]
        .into_iter()
        .map(|f| dir.join(f))
        .find(|p| p.is_file())
}

/// The probes the service runs when none are given, as kubernetes-nmstate
/// does: the default gateway answers, and the API server the kubelet
/// talks to (read from its kubeconfig) answers on TCP, its name resolving.
/// Probes that already fail before a change are skipped by the apply.
pub fn default_probes(kubeconfigs: &[&Path]) -> Vec<Probe> {
    let mut probes = vec![Probe::Gateway];
    if let Some((host, port)) = kubeconfigs.iter().find_map(|k| api_server(k)) {
        if host.parse::<std::net::IpAddr>().is_err() {
            probes.push(Probe::Dns(host.clone()));
        }
        probes.push(Probe::Tcp(host, port));
    }
    probes
}

/// Where the kubelet's kubeconfigs are on an OpenShift node.
pub const KUBECONFIGS: [&str; 2] = ["/var/lib/kubelet/kubeconfig", "/etc/kubernetes/kubeconfig"];

/// `server: https://HOST:PORT` of a kubeconfig.
fn api_server(kubeconfig: &Path) -> Option<(String, u16)> {
    let text = std::fs::read_to_string(kubeconfig).ok()?;
    let url = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("server:"))?
        .trim()
        .trim_matches(['"', '\'']);
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))?;
    let authority = rest.split('/').next()?;
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => {
            (h.trim_matches(['[', ']']).to_string(), p.parse().ok()?)
        }
        _ => (authority.to_string(), 443),
    };
    Some((host, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_reads_back_and_takes_over_the_old_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("status.json");
        std::fs::write(
            dir.path().join("applied"),
            "abc123  /etc/nmstate/openshift/n.yml\n",
        )
        .unwrap();
        let old = Status::read(&path).unwrap();
        assert!(old.is_applied("abc123"));
        let s = Status {
            applied: Some(InPlace {
                sha256: "def".into(),
                file: "/etc/nmstate/openshift/n.yml".into(),
                at: now(),
            }),
            last: Some(Run {
                outcome: Outcome::RolledBack,
                file: None,
                sha256: Some("0ff".into()),
                failed_probe: Some("gateway".into()),
                message: Some("no answer".into()),
                started: now(),
                finished: now(),
                boot_id: boot_id(),
            }),
        };
        s.write(&path).unwrap();
        assert_eq!(Status::read(&path).unwrap(), s);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"outcome\": \"rolled-back\""), "{text}");
    }

    #[test]
    fn default_probes_take_the_api_server_from_the_kubeconfig() {
        let dir = tempfile::tempdir().unwrap();
        let k = dir.path().join("kubeconfig");
        std::fs::write(
            &k,
            "clusters:\n- cluster:\n    server: https://api-int.ocp4.example.com:6443\n  name: c\n",
        )
        .unwrap();
        assert_eq!(
            default_probes(&[&k]),
            [
                Probe::Gateway,
                Probe::Dns("api-int.ocp4.example.com".into()),
                Probe::Tcp("api-int.ocp4.example.com".into(), 6443)
            ]
        );
        assert_eq!(
            default_probes(&[&dir.path().join("none")]),
            [Probe::Gateway]
        );
    }
}
