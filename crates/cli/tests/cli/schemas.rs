//! Every manifest nodenet writes (render, plan -o) validated against the
//! upstream schema its consumer enforces: the CRDs' openAPIV3Schema (with
//! unknown fields refused, as `kubectl apply --validate=strict` does), the
//! Ignition 3.2 schema for the MachineConfigs' payload, and the CEL rules
//! of the node disruption policy. The schemas are read from
//! ../shared/schemas (see its README); a missing one fails the test.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::crd::*;
use crate::common::*;
use serde_json::{json, Value};

struct Schemas {
    by_kind: BTreeMap<&'static str, jsonschema::Validator>,
    ignition: jsonschema::Validator,
}

impl Schemas {
    fn load() -> Schemas {
        let mut by_kind = BTreeMap::new();
        for (kind, file, version) in [
            (
                "MachineConfig",
                "0000_80_machine-config_01_machineconfigs.crd.yaml",
                "v1",
            ),
            (
                "MachineConfiguration",
                "operator.openshift.io_machineconfigurations.yaml",
                "v1",
            ),
            (
                "NodeNetworkConfigurationPolicy",
                "nmstate.io_nodenetworkconfigurationpolicies.yaml",
                "v1",
            ),
            ("BareMetalHost", "metal3.io_baremetalhosts.yaml", "v1alpha1"),
            (
                "NMStateConfig",
                "agent-install.openshift.io_nmstateconfigs.yaml",
                "v1beta1",
            ),
            (
                "MachineOSConfig",
                "0000_80_machine-config_01_machineosconfigs.crd.yaml",
                "v1",
            ),
            (
                "MachineConfigPool",
                "0000_80_machine-config_01_machineconfigpools.crd.yaml",
                "v1",
            ),
            (
                "ClusterInstance",
                "siteconfig.open-cluster-management.io_clusterinstances.yaml",
                "v1alpha1",
            ),
            ("SiteConfig", "ran.openshift.io_siteconfigs.yaml", "v2"),
            (
                "ExternalSecret",
                "external-secrets.io_externalsecrets.yaml",
                "v1",
            ),
        ] {
            by_kind.insert(kind, validator(&crd_schema(file, version)));
        }
        let ign: Value = serde_json::from_slice(
            &std::fs::read(shared_schema("ignition-v3_2.schema.json")).unwrap(),
        )
        .unwrap();
        Schemas {
            by_kind,
            ignition: validator(&ign),
        }
    }

    /// Validates every document of every YAML file under `dir`; the kinds
    /// seen, with how many documents of each.
    fn validate_dir(&self, dir: &Path) -> BTreeMap<String, usize> {
        let mut seen = BTreeMap::new();
        for f in files_under(dir) {
            let name = f.to_string_lossy();
            if !(name.ends_with(".yaml") || name.ends_with(".yml")) {
                continue;
            }
            let text = std::fs::read_to_string(&f).unwrap();
            for doc in serde_yaml::Deserializer::from_str(&text) {
                let doc: Value = serde::Deserialize::deserialize(doc).unwrap();
                let Some(kind) = doc["kind"].as_str() else {
                    continue; // nmstate states, install-config, agent-config
                };
                *seen.entry(kind.to_string()).or_default() += 1;
                let Some(v) = self.by_kind.get(kind) else {
                    assert!(
                        ["Secret", "InstallConfig", "AgentConfig"].contains(&kind),
                        "{}: no schema for {kind}",
                        f.display()
                    );
                    continue;
                };
                // The SiteConfig CRD's schema names `spec` only at the top.
                let errs = match kind {
                    "SiteConfig" => errors(v, &json!({"spec": doc["spec"]})),
                    _ => errors(v, &doc),
                };
                assert!(
                    errs.is_empty(),
                    "{}: {kind}:\n{}",
                    f.display(),
                    errs.join("\n")
                );
                match kind {
                    "MachineConfig" => {
                        let errs = errors(&self.ignition, &doc["spec"]["config"]);
                        assert!(
                            errs.is_empty(),
                            "{}: the Ignition payload:\n{}",
                            f.display(),
                            errs.join("\n")
                        );
                    }
                    "MachineConfiguration" => node_disruption_rules(&f, &doc),
                    "MachineOSConfig" => machine_os_config_rules(&f, &doc),
                    _ => {}
                }
            }
        }
        seen
    }
}

/// The MachineOSConfig CRD's CEL rules, which a JSON Schema validator
/// does not run, taken from the CRD itself: the object is named after its
/// pool, and `renderedImagePushSpec` matches one of the CRD's patterns
/// (the CEL `matches` regexes are RE2, which `pattern` runs as they are).
fn machine_os_config_rules(f: &Path, doc: &Value) {
    assert_eq!(
        doc["metadata"]["name"],
        doc["spec"]["machineConfigPool"]["name"],
        "{}: a MachineOSConfig is named after its pool",
        f.display()
    );
    let text = std::fs::read_to_string(shared_schema(
        "0000_80_machine-config_01_machineosconfigs.crd.yaml",
    ))
    .unwrap();
    let crd: Value = serde_yaml::from_str(&text).unwrap();
    let rule = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        ["properties"]["renderedImagePushSpec"]["x-kubernetes-validations"][0]["rule"]
        .as_str()
        .unwrap()
        .to_string();
    // `self.matches('A') || self.matches('B')`.
    let patterns: Vec<String> = rule
        .split("self.matches('")
        .skip(1)
        .map(|p| p.split("')").next().unwrap().replace("\\\\", "\\"))
        .collect();
    assert_eq!(patterns.len(), 2, "{rule}");
    let spec = &doc["spec"]["renderedImagePushSpec"];
    let any: Vec<Value> = patterns
        .iter()
        .map(|p| serde_json::json!({"type": "string", "pattern": p}))
        .collect();
    let v = validator(&serde_json::json!({"anyOf": any}));
    assert!(
        errors(&v, spec).is_empty(),
        "{}: renderedImagePushSpec {spec} matches neither of {patterns:?}",
        f.display()
    );
}

/// The CRD's CEL rules (x-kubernetes-validations) on the node disruption
/// policy, which a JSON Schema validator does not run.
fn node_disruption_rules(f: &Path, doc: &Value) {
    let files = doc["spec"]["nodeDisruptionPolicy"]["files"]
        .as_array()
        .unwrap_or_else(|| panic!("{}: no nodeDisruptionPolicy.files", f.display()));
    assert!(files.len() <= 50);
    for file in files {
        let actions = file["actions"].as_array().unwrap();
        for a in actions {
            let t = a["type"].as_str().unwrap();
            assert_eq!(t == "Restart", a.get("restart").is_some(), "{a}");
            assert_eq!(t == "Reload", a.get("reload").is_some(), "{a}");
            if let Some(name) = a["restart"]["serviceName"].as_str() {
                let (stem, unit_type) = name.rsplit_once('.').unwrap();
                assert!(
                    [
                        "service",
                        "socket",
                        "device",
                        "mount",
                        "automount",
                        "swap",
                        "target",
                        "path",
                        "timer",
                        "snapshot",
                        "slice",
                        "scope"
                    ]
                    .contains(&unit_type),
                    "{name}"
                );
                assert!(
                    !stem.is_empty()
                        && stem
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || ":._\\-".contains(c)),
                    "{name}"
                );
                // The unit it restarts is the one nodenet ships.
                assert!(
                    repo().join("dist/systemd").join(name).exists(),
                    "{name} is not in dist/systemd"
                );
            }
        }
        for standalone in ["Reboot", "None"] {
            if actions.iter().any(|a| a["type"] == standalone) {
                assert_eq!(actions.len(), 1, "{standalone} must stand alone");
            }
        }
    }
}

#[test]
fn rendered_manifests_match_their_consumers_schemas() {
    let schemas = Schemas::load();
    let tmp = tempfile::tempdir().unwrap();
    let mut total: BTreeMap<String, usize> = BTreeMap::new();
    for ex in examples() {
        let out = tmp.path().join(ex.file_stem().unwrap());
        let o = run(nodenet().arg("render").arg(&ex).arg("-o").arg(&out));
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        for (k, n) in schemas.validate_dir(&out) {
            *total.entry(k).or_default() += n;
        }
    }
    for kind in [
        "MachineConfig",
        "MachineConfiguration",
        "MachineOSConfig",
        "NodeNetworkConfigurationPolicy",
        "BareMetalHost",
    ] {
        assert!(
            total.get(kind).is_some_and(|n| *n > 0),
            "no {kind} rendered: {total:?}"
        );
    }
    eprintln!("validated: {total:?}");
}

/// `--bmc-secrets external-secret`: an ExternalSecret per BMC Secret, valid
/// by the External Secrets Operator's CRD (v1), making the Secret each
/// BareMetalHost (or ClusterInstance node) names, in its namespace, with
/// no password read or written.
#[test]
fn external_secrets_make_the_secrets_the_hosts_name() {
    let schemas = Schemas::load();
    let tmp = tempfile::tempdir().unwrap();
    let secret_store = |ex: &str, out: &Path| {
        let o = run(nodenet()
            .arg("render")
            .arg(repo().join(ex))
            .args(["--bmc-secrets", "external-secret"])
            .args([
                "--secret-store",
                "SecretStore/vault",
                "--secret-key",
                "bmc/{cluster}/{host}",
            ])
            .arg("-o")
            .arg(out));
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(!String::from_utf8_lossy(&o.stderr).contains("credentials-unresolved"));
    };
    let out = tmp.path().join("cluster");
    secret_store("examples/lacp-vlan.yaml", &out);
    let seen = schemas.validate_dir(&out);
    assert_eq!(seen.get("ExternalSecret"), Some(&4), "{seen:?}");
    let docs = |f: &Path| -> Vec<Value> {
        serde_yaml::Deserializer::from_str(&std::fs::read_to_string(f).unwrap())
            .map(|d| serde::Deserialize::deserialize(d).unwrap())
            .collect()
    };
    let es = docs(&out.join("external-secrets/bmc.yaml"));
    let bmh = docs(&out.join("scale-out/master-1.yaml"));
    assert!(bmh.iter().all(|d| d["kind"] != "Secret"
        || !d["metadata"]["name"]
            .as_str()
            .unwrap()
            .ends_with("-bmc-secret")));
    let host = bmh.iter().find(|d| d["kind"] == "BareMetalHost").unwrap();
    let named = &host["spec"]["bmc"]["credentialsName"];
    let made = es
        .iter()
        .find(|e| e["spec"]["target"]["name"] == *named)
        .unwrap();
    assert_eq!(made["metadata"]["namespace"], host["metadata"]["namespace"]);
    assert_eq!(
        made["spec"]["secretStoreRef"],
        json!({"kind": "SecretStore", "name": "vault"})
    );
    assert_eq!(
        made["spec"]["data"][1]["remoteRef"],
        json!({"key": "bmc/lacp/master-1", "property": "password"})
    );
    for f in files_under(&out) {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        for (_, password) in EXAMPLE_PASSWORDS {
            assert!(!text.contains(password), "{}", f.display());
        }
    }
    // Sites: beside each ClusterInstance, in its namespace.
    let out = tmp.path().join("sites");
    secret_store("examples/ztp/sno-fleet.yaml", &out);
    let seen = schemas.validate_dir(&out);
    assert_eq!(seen.get("ExternalSecret"), Some(&100), "{seen:?}");
    let ci = &docs(&out.join("sites/sno-007/clusterinstance.yaml"))[0];
    let es = &docs(&out.join("sites/sno-007/bmc-secrets.yaml"))[0];
    assert_eq!(es["metadata"]["namespace"], ci["metadata"]["namespace"]);
    assert_eq!(
        es["spec"]["target"]["name"],
        ci["spec"]["nodes"][0]["bmcCredentialsName"]["name"]
    );
}

/// GitOps ZTP sites (tests/ztp: ClusterInstances, SiteConfig v1 and v2,
/// a repository tree) rendered: every ClusterInstance, NMStateConfig and
/// BareMetalHost against its CRD, strict; and the inputs themselves.
#[test]
fn rendered_sites_match_their_crds() {
    let schemas = Schemas::load();
    let good = repo().join("tests/ztp/good");
    // The test inputs are what the CRDs accept (SiteConfig by its own CRD).
    let site_config = [
        (
            "ran.openshift.io/v1",
            validator(&crd_schema("ran.openshift.io_siteconfigs.yaml", "v1")),
        ),
        (
            "ran.openshift.io/v2",
            validator(&crd_schema("ran.openshift.io_siteconfigs.yaml", "v2")),
        ),
    ];
    for f in files_under(&good) {
        let text = std::fs::read_to_string(&f).unwrap();
        for doc in serde_yaml::Deserializer::from_str(&text) {
            let doc: Value = serde::Deserialize::deserialize(doc).unwrap();
            let errs = match doc["kind"].as_str() {
                Some("ClusterInstance") => errors(&schemas.by_kind["ClusterInstance"], &doc),
                Some("SiteConfig") => {
                    let (_, v) = site_config
                        .iter()
                        .find(|(api, _)| doc["apiVersion"] == *api)
                        .expect("a SiteConfig version");
                    // Its CRD's schema names `spec` only at the top.
                    errors(v, &json!({"spec": doc["spec"]}))
                }
                _ => continue,
            };
            assert!(errs.is_empty(), "{}:\n{}", f.display(), errs.join("\n"));
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = run(nodenet().arg("render").arg(&good).arg("-o").arg(&out));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let seen = schemas.validate_dir(&out);
    // An inventory's sites too.
    let fleet = tmp.path().join("fleet");
    let o = run(nodenet()
        .arg("render")
        .arg(repo().join("examples/ztp/sno-fleet.yaml"))
        .arg("-o")
        .arg(&fleet));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let from_inventory = schemas.validate_dir(&fleet);
    assert_eq!(
        from_inventory.get("ClusterInstance"),
        Some(&100),
        "{from_inventory:?}"
    );
    assert_eq!(
        from_inventory.get("SiteConfig"),
        Some(&100),
        "{from_inventory:?}"
    );
    // 6 clusters, 12 nodes (each with a network and a BMC).
    assert_eq!(seen.get("ClusterInstance"), Some(&6), "{seen:?}");
    // A SiteConfig per site but the dual-stack one (no SiteConfig form).
    assert_eq!(seen.get("SiteConfig"), Some(&5), "{seen:?}");
    assert_eq!(seen.get("NMStateConfig"), Some(&12), "{seen:?}");
    assert_eq!(seen.get("BareMetalHost"), Some(&12), "{seen:?}");
}

/// A fleet past one pool's limit: the custom MachineConfigPools, their
/// MachineConfigs and MachineOSConfigs against the upstream CRDs.
#[test]
fn custom_pools_match_their_consumers_schemas() {
    let schemas = Schemas::load();
    let tmp = tempfile::tempdir().unwrap();
    let pool = |rack: u32, start: u32| {
        format!("- {{name: \"w-${{index:04}}\", template: w, count: 700, start: {start}, labels: {{topology.kubernetes.io/zone: zone-{rack}}}}}\n")
    };
    let inv = tmp.path().join("fleet.yaml");
    std::fs::write(
        &inv,
        format!(
            r#"nodenet: v1
cluster: {{name: big, baseDomain: example.com, machineNetworks: [10.0.0.0/8], apiVIPs: [10.0.0.5], ingressVIPs: [10.0.0.4], provisioning: {{network: Disabled}}, brEx: derive, failureDomain: topology.kubernetes.io/zone, nodeAgent: {{image: "quay.io/example/nodenet:0.1.0", renderedImagePushSpec: "image-registry.openshift-image-registry.svc:5000/openshift-machine-config-operator/os-image:latest", renderedImagePushSecret: builder-dockercfg-x7k2p}}}}
pools:
  m: {{range: 10.1.0.1-10.9.255.254, prefix: 8, gateway: 10.0.0.1}}
templates:
  w:
    role: worker
    nics: {{eno1: "${{index:mac 52:54:00:00:00:00}}"}}
    network:
      interfaces:
      - {{name: eno1, type: ethernet, state: up, ipv4: {{enabled: true, address: [{{ip: "${{ip.m}}", prefix-length: "${{prefix.m}}"}}]}}}}
      routes:
        config: [{{destination: 0.0.0.0/0, next-hop-address: "${{gateway.m}}", next-hop-interface: eno1}}]
hosts:
{}{}"#,
            pool(1, 0),
            pool(2, 700)
        ),
    )
    .unwrap();
    let out = tmp.path().join("out");
    let o = run(nodenet().arg("render").arg(&inv).arg("-o").arg(&out));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let seen = schemas.validate_dir(&out.join("openshift"));
    assert!(
        seen.get("MachineConfigPool").is_some_and(|n| *n >= 2)
            && seen.get("MachineOSConfig").is_some_and(|n| *n >= 2),
        "{seen:?}"
    );
}

#[test]
fn plan_manifests_match_their_consumers_schemas() {
    let schemas = Schemas::load();
    let tmp = tempfile::tempdir().unwrap();
    let old = repo().join("examples/workers-100.yaml");
    let text = std::fs::read_to_string(&old).unwrap();
    // A new MTU everywhere: modifying and disruptive changes on every host.
    let new = tmp.path().join("new.yaml");
    assert!(text.contains("mtu: 9000"), "the example changed");
    std::fs::write(&new, text.replace("mtu: 9000", "mtu: 8000")).unwrap();
    let out = tmp.path().join("plan");
    let o = run(nodenet()
        .arg("plan")
        .arg(&old)
        .arg(&new)
        .arg("-o")
        .arg(&out));
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let seen = schemas.validate_dir(&out);
    assert!(
        seen.get("NodeNetworkConfigurationPolicy")
            .is_some_and(|n| *n > 0)
            && seen.get("MachineConfig").is_some_and(|n| *n > 0),
        "{seen:?}"
    );
}

/// The strict transform is what makes a typo fail: without it an unknown
/// field would pass as the API server prunes it.
#[test]
fn a_misspelt_field_fails_validation() {
    let schema = crd_schema("nmstate.io_nodenetworkconfigurationpolicies.yaml", "v1");
    let v = validator(&schema);
    let good: Value = serde_yaml::from_str(
        "{apiVersion: nmstate.io/v1, kind: NodeNetworkConfigurationPolicy, metadata: {name: x}, spec: {maxUnavailable: 1, desiredState: {interfaces: []}}}",
    )
    .unwrap();
    assert!(errors(&v, &good).is_empty(), "{:?}", errors(&v, &good));
    let typo: Value = serde_yaml::from_str(
        "{apiVersion: nmstate.io/v1, kind: NodeNetworkConfigurationPolicy, metadata: {name: x}, spec: {maxUnavailabe: 1, desiredState: {interfaces: []}}}",
    )
    .unwrap();
    assert!(!errors(&v, &typo).is_empty());
}

/// `check --format sarif` is SARIF 2.1.0 as its schema says, every
/// finding a result at its file and line, its rule the code.
#[test]
fn check_sarif_is_valid_sarif_at_the_findings_lines() {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(shared_schema("sarif-schema-2.1.0.json")).unwrap(),
    )
    .unwrap();
    let v = validator(&schema);
    let bad = repo().join("tests/bad/host-root-device-hints.yaml");
    let o = run(nodenet()
        .args(["check", "--format", "sarif"])
        .arg(&bad)
        .current_dir(repo()));
    assert_eq!(o.status.code(), Some(1));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let problems = errors(&v, &doc);
    assert!(problems.is_empty(), "{problems:?}");
    let run0 = &doc["runs"][0];
    let rules = run0["tool"]["driver"]["rules"].as_array().unwrap();
    let results = run0["results"].as_array().unwrap();
    let at: Vec<(&str, &str, u64, &str)> = results
        .iter()
        .filter(|r| r["level"] == "error")
        .map(|r| {
            let loc = &r["locations"][0]["physicalLocation"];
            let rule = &rules[r["ruleIndex"].as_u64().unwrap() as usize];
            assert_eq!(rule["id"], r["ruleId"]);
            (
                r["ruleId"].as_str().unwrap(),
                loc["artifactLocation"]["uri"].as_str().unwrap(),
                loc["region"]["startLine"].as_u64().unwrap(),
                r["level"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        at,
        [
            (
                "unknown-field",
                "tests/bad/host-root-device-hints.yaml",
                11,
                "error"
            ),
            (
                "invalid-value",
                "tests/bad/host-root-device-hints.yaml",
                12,
                "error"
            ),
        ]
    );
    // A clean input: valid, no result.
    let o = run(nodenet()
        .args(["check", "--format", "sarif"])
        .arg(repo().join("examples/lacp-vlan.yaml")));
    assert_eq!(o.status.code(), Some(0));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(errors(&v, &doc).is_empty());
    assert!(doc["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["level"] != "error"));
}
