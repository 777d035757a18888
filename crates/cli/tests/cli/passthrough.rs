//! Nothing the user gave is lost: every install-config and agent-config
//! field nodenet does not own comes out of `render` as it went in (value
//! and order), from an input file or from the inventory's
//! `cluster.installConfig` / `cluster.agentConfig`; secrets among them
//! come out as placeholders only.

use std::fs;
use std::path::Path;

use serde_yaml::Value as Y;

use crate::common::*;

/// An install-config that uses every top-level field of openshift-install's
/// `InstallConfig` (pkg/types/installconfig.go) and the baremetal platform
/// fields nodenet does not own.
const EVERY_FIELD: &str = r#"apiVersion: v1
metadata:
  name: ocp4
  annotations:
    owner: platform-team
additionalTrustBundle: |
  -----BEGIN CERTIFICATE-----
  MIIBszCCAVmgAwIBAgIUQ2FmZWJhYmUwDQYJKoZIhvcNAQELBQAwEjEQMA4GA1UE
  -----END CERTIFICATE-----
additionalTrustBundlePolicy: Always
sshKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTests core@example
baseDomain: example.com
networking:
  networkType: OVNKubernetes
  clusterNetwork:
  - cidr: 10.128.0.0/14
    hostPrefix: 23
  serviceNetwork:
  - 172.30.0.0/16
  machineNetwork:
  - cidr: 192.168.111.0/24
  clusterNetworkMTU: 1400
  ovnKubernetesConfig:
    ipv4:
      internalJoinSubnet: 100.65.0.0/16
controlPlane:
  name: master
  replicas: 3
  hyperthreading: Enabled
  architecture: amd64
  platform:
    baremetal: {}
arbiter:
  name: arbiter
  replicas: 0
compute:
- name: worker
  replicas: 2
  hyperthreading: Disabled
  architecture: amd64
  platform:
    baremetal: {}
platform:
  baremetal:
    apiVIPs:
    - 192.168.111.5
    ingressVIPs:
    - 192.168.111.4
    provisioningNetwork: Disabled
    externalBridge: baremetal
    bootstrapExternalStaticIP: 192.168.111.9
    bootstrapExternalStaticGateway: 192.168.111.1
    bootstrapExternalStaticDNS: 192.168.111.1
    additionalNTPServers:
    - ntp.example.com
    loadBalancer:
      type: OpenShiftManagedDefault
    hosts:
    - name: master-0
      role: master
      hardwareProfile: default
      bootMACAddress: 52:54:00:aa:00:00
      bmc:
        address: redfish-virtualmedia://10.10.0.20/redfish/v1/Systems/1
        username: admin
        password: bmc-password-not-to-be-rendered
    - name: master-1
      role: master
      bootMACAddress: 52:54:00:aa:01:00
    - name: master-2
      role: master
      bootMACAddress: 52:54:00:aa:02:00
    - name: worker-0
      role: worker
      bootMACAddress: 52:54:00:aa:03:00
    - name: worker-1
      role: worker
      bootMACAddress: 52:54:00:aa:04:00
pullSecret: '{"auths":{"quay.io":{"auth":"cHVsbC1zZWNyZXQtbm90LXRvLWJlLXJlbmRlcmVk"}}}'
proxy:
  httpProxy: http://proxy.example.com:3128
  httpsProxy: http://squid:proxy-password-not-to-be-rendered@proxy.example.com:3128
  noProxy: .example.com,192.168.111.0/24
imageContentSources:
- source: quay.io/openshift-release-dev/ocp-release
  mirrors:
  - mirror.example.com/ocp/release
imageDigestSources:
- source: quay.io/openshift-release-dev/ocp-v4.0-art-dev
  mirrors:
  - mirror.example.com/ocp/art
publish: External
operatorPublishingStrategy:
  ingress: External
  apiserver: External
fips: true
cpuPartitioningMode: AllNodes
credentialsMode: Manual
bootstrapInPlace:
  installationDisk: /dev/nvme0n1
capabilities:
  baselineCapabilitySet: v4.16
  additionalEnabledCapabilities:
  - baremetal
  - MachineAPI
featureSet: CustomNoUpgrade
featureGates:
- SomeGate=true
"#;

const AGENT_CONFIG: &str = r#"apiVersion: v1beta1
kind: AgentConfig
metadata:
  name: ocp4
rendezvousIP: 192.168.111.20
additionalNTPSources:
- ntp.example.com
bootArtifactsBaseURL: http://images.example.com/boot
minimalISO: true
hosts:
- hostname: master-0
  role: master
  interfaces:
  - name: eno1
    macAddress: 52:54:00:aa:00:00
"#;

/// The secrets in the inputs above: none may appear in any output file.
const SECRETS: [&str; 3] = [
    "bmc-password-not-to-be-rendered",
    "cHVsbC1zZWNyZXQtbm90LXRvLWJlLXJlbmRlcmVk",
    "proxy-password-not-to-be-rendered",
];

fn yaml(path: &Path) -> Y {
    serde_yaml::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

/// Every leaf of `v` by path (`a.b[0].c`).
fn leaves(prefix: &str, v: &Y, out: &mut Vec<(String, Y)>) {
    match v {
        Y::Mapping(m) if !m.is_empty() => {
            for (k, v) in m {
                let k = k.as_str().unwrap();
                let p = if prefix.is_empty() {
                    k.to_string()
                } else {
                    format!("{prefix}.{k}")
                };
                leaves(&p, v, out);
            }
        }
        Y::Sequence(s) if !s.is_empty() => {
            for (i, v) in s.iter().enumerate() {
                leaves(&format!("{prefix}[{i}]"), v, out);
            }
        }
        _ => out.push((prefix.to_string(), v.clone())),
    }
}

fn at<'a>(v: &'a Y, path: &str) -> Option<&'a Y> {
    let mut v = v;
    for part in path.split('.') {
        let (key, index) = match part.split_once('[') {
            Some((k, rest)) => (k, Some(rest)),
            None => (part, None),
        };
        v = v.get(key)?;
        if let Some(rest) = index {
            for i in rest.split('[') {
                v = v.get(i.trim_end_matches(']').parse::<usize>().ok()?)?;
            }
        }
    }
    Some(v)
}

/// `nodenet render INPUTS… -o OUT`, which must succeed.
fn render(inputs: &[&Path], out: &Path) {
    let o = run(nodenet().arg("render").args(inputs).arg("-o").arg(out));
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn keys(v: &Y) -> Vec<String> {
    v.as_mapping()
        .unwrap()
        .keys()
        .map(|k| k.as_str().unwrap().to_string())
        .collect()
}

fn no_secret_in(dir: &Path) {
    for f in files_under(dir) {
        let bytes = fs::read(&f).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        for s in SECRETS {
            assert!(!text.contains(s), "{f:?} holds a secret");
        }
    }
}

#[test]
fn every_install_config_field_comes_out_as_it_went_in() {
    let tmp = tempfile::tempdir().unwrap();
    let ic = write(tmp.path(), "install-config.yaml", EVERY_FIELD);
    let ac = write(tmp.path(), "agent-config.yaml", AGENT_CONFIG);
    let out = tmp.path().join("out");
    render(&[&ic, &ac], &out);
    let given: Y = serde_yaml::from_str(EVERY_FIELD).unwrap();
    let rendered = yaml(&out.join("install-config.yaml"));
    // The top-level fields in the order given.
    assert_eq!(keys(&rendered), keys(&given));
    let mut all = Vec::new();
    leaves("", &given, &mut all);
    let mut checked = 0;
    for (path, value) in &all {
        match path.as_str() {
            "pullSecret" => assert_eq!(
                rendered["pullSecret"],
                Y::from("${PULL_SECRET}"),
                "a secret is a placeholder"
            ),
            "proxy.httpsProxy" => assert_eq!(
                rendered["proxy"]["httpsProxy"],
                Y::from("${HTTPS_PROXY}"),
                "a proxy URL with a password is a placeholder"
            ),
            p if p.contains(".bmc.password") => {
                assert!(at(&rendered, p)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .starts_with("${"))
            }
            p => {
                assert_eq!(at(&rendered, p), Some(value), "{p} lost or changed");
                checked += 1;
            }
        }
    }
    assert!(checked > 60, "{checked}");
    let agent = yaml(&out.join("agent-config.yaml"));
    assert_eq!(agent["additionalNTPSources"][0], Y::from("ntp.example.com"));
    assert_eq!(
        agent["bootArtifactsBaseURL"],
        Y::from("http://images.example.com/boot")
    );
    assert_eq!(agent["minimalISO"], Y::from(true));
    assert_eq!(
        keys(&agent)[..6],
        [
            "apiVersion",
            "kind",
            "metadata",
            "rendezvousIP",
            "additionalNTPSources",
            "bootArtifactsBaseURL"
        ]
    );
    no_secret_in(&out);
    // Read back, the render is the same cluster: nothing to plan.
    let o = run(nodenet().arg("plan").arg(&ic).arg(&out));
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

/// A cluster of one master in the inventory, `extra` under `cluster:`.
fn inventory(extra: &str) -> String {
    format!(
        "nodenet: v1
cluster:
  name: ocp4
  baseDomain: example.com
  machineNetworks: [192.168.111.0/24]
  apiVIPs: [192.168.111.5]
  ingressVIPs: [192.168.111.4]
{extra}hosts:
- name: master-0
  role: master
  bootMACAddress: 52:54:00:aa:00:00
  nics: {{eno1: 52:54:00:aa:00:00}}
  network:
    interfaces:
    - name: eno1
      type: ethernet
      state: up
      ipv4:
        enabled: true
        address: [{{ip: 192.168.111.20, prefix-length: 24}}]
    routes:
      config:
      - {{destination: 0.0.0.0/0, next-hop-address: 192.168.111.1, next-hop-interface: eno1}}
"
    )
}

#[test]
fn the_inventory_carries_install_config_and_agent_config_fields() {
    let tmp = tempfile::tempdir().unwrap();
    let inv = write(
        tmp.path(),
        "cluster.yaml",
        inventory(
            "  installConfig:
    fips: true
    networking:
      clusterNetwork: [{cidr: 10.128.0.0/14, hostPrefix: 23}]
      serviceNetwork: [172.30.0.0/16]
    proxy:
      httpProxy: http://proxy.example.com:3128
    platform:
      baremetal:
        bootstrapExternalStaticIP: 192.168.111.9
        bootstrapExternalStaticGateway: 192.168.111.1
  agentConfig:
    additionalNTPSources: [ntp.example.com]
",
        ),
    );
    let out = tmp.path().join("out");
    render(&[&inv], &out);
    let ic = yaml(&out.join("install-config.yaml"));
    assert_eq!(ic["fips"], Y::from(true));
    assert_eq!(
        ic["networking"]["clusterNetwork"][0]["hostPrefix"],
        Y::from(23)
    );
    assert_eq!(
        ic["networking"]["serviceNetwork"][0],
        Y::from("172.30.0.0/16")
    );
    // nodenet's own fields beside the carried ones.
    assert_eq!(
        ic["networking"]["machineNetwork"][0]["cidr"],
        Y::from("192.168.111.0/24")
    );
    assert_eq!(ic["networking"]["networkType"], Y::from("OVNKubernetes"));
    assert_eq!(
        ic["proxy"]["httpProxy"],
        Y::from("http://proxy.example.com:3128")
    );
    let bm = &ic["platform"]["baremetal"];
    assert_eq!(bm["bootstrapExternalStaticIP"], Y::from("192.168.111.9"));
    assert_eq!(bm["apiVIPs"][0], Y::from("192.168.111.5"));
    assert_eq!(bm["hosts"][0]["name"], Y::from("master-0"));
    let ac = yaml(&out.join("agent-config.yaml"));
    assert_eq!(ac["additionalNTPSources"][0], Y::from("ntp.example.com"));

    // A change of a carried field is a plan entry, exit 1.
    let new = write(
        tmp.path(),
        "new.yaml",
        fs::read_to_string(&inv)
            .unwrap()
            .replace("fips: true", "fips: false"),
    );
    let o = run(nodenet()
        .args(["plan", "--format", "json"])
        .arg(&inv)
        .arg(&new));
    assert_eq!(o.status.code(), Some(1));
    let j = json(&o);
    assert_eq!(j["cluster"][0]["field"], "install-config fips", "{j}");
    assert_eq!(j["cluster"][0]["risk"], "disruptive", "{j}");
}

#[test]
fn a_field_nodenet_owns_in_install_config_is_an_error_naming_its_place() {
    let tmp = tempfile::tempdir().unwrap();
    let inv = write(
        tmp.path(),
        "cluster.yaml",
        inventory(
            "  installConfig:
    platform:
      baremetal:
        apiVIPs: [192.168.111.7]
    fipz: true
",
        ),
    );
    let o = run(nodenet().args(["check", "--format", "json"]).arg(&inv));
    assert_eq!(o.status.code(), Some(1));
    let j = json(&o);
    let diags: Vec<(String, u64, String)> = j["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["severity"] == "error")
        .map(|d| {
            (
                d["code"].as_str().unwrap().to_string(),
                d["line"].as_u64().unwrap(),
                d["message"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(diags.len(), 2, "{diags:?}");
    assert_eq!(diags[0].0, "invalid-value");
    assert_eq!(diags[0].1, 11);
    assert!(
        diags[0].2.contains("`platform.baremetal.apiVIPs`")
            && diags[0].2.contains("cluster.apiVIPs"),
        "{diags:?}"
    );
    assert_eq!((diags[1].0.as_str(), diags[1].1), ("unknown-field", 12));
}

/// An agent-config host's `BMC` is the host's BMC: it reaches the
/// rendered install-config (password as a placeholder) and the scale-out
/// BareMetalHost, and the password is in neither.
#[test]
fn an_agent_config_bmc_is_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let ic = write(
        tmp.path(),
        "install-config.yaml",
        "apiVersion: v1\nbaseDomain: example.com\nmetadata: {name: ocp4}\nnetworking:\n  machineNetwork: [{cidr: 192.168.111.0/24}]\nplatform:\n  baremetal:\n    apiVIPs: [192.168.111.5]\n    ingressVIPs: [192.168.111.4]\n",
    );
    let ac = write(
        tmp.path(),
        "agent-config.yaml",
        AGENT_CONFIG.replace(
            "  interfaces:\n",
            "  BMC:\n    address: redfish-virtualmedia://10.10.0.20/redfish/v1/Systems/1\n    username: admin\n    password: bmc-password-not-to-be-rendered\n  interfaces:\n",
        ),
    );
    let out = tmp.path().join("out");
    render(&[&ic, &ac], &out);
    let rendered = yaml(&out.join("install-config.yaml"));
    let host = &rendered["platform"]["baremetal"]["hosts"][0];
    assert_eq!(
        host["bmc"]["address"],
        Y::from("redfish-virtualmedia://10.10.0.20/redfish/v1/Systems/1")
    );
    assert_eq!(host["bmc"]["username"], Y::from("admin"));
    let scale_out = fs::read_to_string(out.join("scale-out/master-0.yaml")).unwrap();
    assert!(
        scale_out.contains("credentialsName: master-0-bmc-secret"),
        "{scale_out}"
    );
    no_secret_in(&out);
}
