//! `render --with metal3`: Cluster API Metal3 templating. Every
//! Metal3DataTemplate and IPPool is valid against its CRD (strict), hosts
//! of one shape share one template, and the templates with their pools
//! read back (`check`, `hosts`) as the same hosts with the same network
//! as the inventory they came from. What network_data.json cannot carry
//! is an error for this output, located at the intent.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::crd::*;
use crate::common::*;
use serde_json::Value as J;

const EXAMPLES: &[&str] = &[
    "examples/lacp-vlan.yaml",
    "examples/dual-stack.yaml",
    "examples/ipv6-only.yaml",
    "examples/pxe-active-backup.yaml",
    "examples/workers-100.yaml",
];

fn render_metal3(example: &Path, out: &Path) -> std::process::Output {
    let mut cmd = nodenet();
    for (k, v) in EXAMPLE_PASSWORDS {
        cmd.env(k, v);
    }
    run(cmd
        .arg("render")
        .arg(example)
        .args(["--with", "metal3", "-o"])
        .arg(out))
}

fn documents(f: &Path) -> Vec<J> {
    let text = std::fs::read_to_string(f).unwrap();
    serde_yaml::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect()
}

/// Validators by (apiVersion, kind).
fn validators() -> BTreeMap<(&'static str, &'static str), jsonschema::Validator> {
    let mut v = BTreeMap::new();
    for (api, kind, file, version) in [
        (
            "infrastructure.cluster.x-k8s.io/v1beta1",
            "Metal3DataTemplate",
            "infrastructure.cluster.x-k8s.io_metal3datatemplates.yaml",
            "v1beta1",
        ),
        (
            "infrastructure.cluster.x-k8s.io/v1beta2",
            "Metal3DataTemplate",
            "infrastructure.cluster.x-k8s.io_metal3datatemplates.yaml",
            "v1beta2",
        ),
        (
            "ipam.metal3.io/v1alpha1",
            "IPPool",
            "ipam.metal3.io_ippools.yaml",
            "v1alpha1",
        ),
        (
            "metal3.io/v1alpha1",
            "BareMetalHost",
            "metal3.io_baremetalhosts.yaml",
            "v1alpha1",
        ),
    ] {
        v.insert((api, kind), validator(&crd_schema(file, version)));
    }
    v
}

/// Validates every document of the YAML files under `dir`; how many of
/// each kind.
fn validate(dir: &Path) -> BTreeMap<String, usize> {
    let validators = validators();
    let mut seen = BTreeMap::new();
    for f in files_under(dir) {
        if f.extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        for doc in documents(&f) {
            let api = doc["apiVersion"].as_str().unwrap().to_string();
            let kind = doc["kind"].as_str().unwrap().to_string();
            let v = validators
                .iter()
                .find(|((a, k), _)| *a == api && *k == kind)
                .unwrap_or_else(|| panic!("{f:?}: no schema for {api} {kind}"))
                .1;
            let errs = errors(v, &doc);
            assert!(errs.is_empty(), "{f:?}: {kind}:\n{}", errs.join("\n"));
            *seen.entry(format!("{api} {kind}")).or_default() += 1;
        }
    }
    seen
}

#[test]
fn every_template_and_pool_is_valid_against_the_crds() {
    let tmp = tempfile::tempdir().unwrap();
    let mut total: BTreeMap<String, usize> = BTreeMap::new();
    for ex in EXAMPLES {
        let out = tmp.path().join(ex.replace('/', "-"));
        let o = render_metal3(&repo().join(ex), &out);
        assert!(
            o.status.success(),
            "{ex}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        for (k, n) in validate(&out.join("metal3")) {
            *total.entry(k).or_default() += n;
        }
    }
    // The hand-written inputs too, both template versions.
    for dir in [
        repo().join("tests/cluster-inputs/metal3-template"),
        v1beta2_inputs(tmp.path()),
    ] {
        for (k, n) in validate(&dir) {
            *total.entry(k).or_default() += n;
        }
    }
    for kind in [
        "infrastructure.cluster.x-k8s.io/v1beta1 Metal3DataTemplate",
        "infrastructure.cluster.x-k8s.io/v1beta2 Metal3DataTemplate",
        "ipam.metal3.io/v1alpha1 IPPool",
        "metal3.io/v1alpha1 BareMetalHost",
    ] {
        assert!(
            total.get(kind).is_some_and(|n| *n > 0),
            "no {kind}: {total:?}"
        );
    }
    eprintln!("validated: {total:?}");
}

#[test]
fn templates_and_pools_read_back_as_the_same_hosts() {
    let tmp = tempfile::tempdir().unwrap();
    for ex in EXAMPLES {
        let example = repo().join(ex);
        let out = tmp.path().join(ex.replace('/', "-"));
        let o = render_metal3(&example, &out);
        assert!(
            o.status.success(),
            "{ex}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let metal3 = out.join("metal3");
        // Without MACs: a template finds NICs by name through inspection.
        let want = host_facts(&[&example], false);
        let got = host_facts(&[&metal3], false);
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            want.keys().collect::<Vec<_>>(),
            "{ex}"
        );
        for (host, facts) in &want {
            assert_eq!(&got[host], facts, "{ex} {host}");
        }
        // Beside the inventory: the same hosts, nothing to say.
        let o = run(nodenet().arg("check").arg(&example).arg(&metal3));
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{ex}: {stderr}");
        assert!(!stderr.contains("conflict"), "{ex}: {stderr}");
    }
}

/// One template per shape: the 100 workers and 3 masters of
/// workers-100 differ only in MACs and addresses; one pool per subnet
/// gives each its address by BareMetalHost name.
#[test]
fn hosts_of_one_shape_share_one_template() {
    let tmp = tempfile::tempdir().unwrap();
    let o = render_metal3(&repo().join("examples/workers-100.yaml"), tmp.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dir = tmp.path().join("metal3");
    let templates: Vec<J> = files_under(&dir)
        .iter()
        .filter(|f| !f.ends_with("ippools.yaml"))
        .flat_map(|f| documents(f))
        .collect();
    let hosts: usize = templates
        .iter()
        .map(|t| {
            t["metadata"]["annotations"]["nodenet.io/hosts"]
                .as_str()
                .unwrap()
                .split(',')
                .count()
        })
        .sum();
    assert_eq!(hosts, 103);
    assert!(templates.len() <= 2, "{} templates", templates.len());
    let pools = documents(&dir.join("ippools.yaml"));
    let claims: usize = pools
        .iter()
        .map(|p| p["spec"]["preAllocations"].as_object().unwrap().len())
        .sum();
    assert!(claims >= 103, "{claims} preallocations");
    for p in &pools {
        let name = p["metadata"]["name"].as_str().unwrap();
        for (claim, _) in p["spec"]["preAllocations"].as_object().unwrap() {
            assert!(claim.ends_with(&format!("-{name}")), "{claim} in {name}");
        }
    }
}

/// Open vSwitch (br-ex) cannot be templated: an error for this output,
/// located in the inventory, and the rest of the render written.
#[test]
fn what_a_template_cannot_carry_is_an_error_for_that_output_only() {
    let tmp = tempfile::tempdir().unwrap();
    let example = repo().join("examples/static-masters-br-ex.yaml");
    let o = run(nodenet()
        .arg("render")
        .arg(&example)
        .args(["--with", "metal3", "--format", "json", "-o"])
        .arg(tmp.path()));
    assert_eq!(o.status.code(), Some(1));
    let v = json(&o);
    let errs: Vec<&J> = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "target-unsupported")
        .collect();
    assert!(!errs.is_empty(), "{v}");
    for e in &errs {
        assert!(
            e["file"]
                .as_str()
                .unwrap()
                .ends_with("static-masters-br-ex.yaml"),
            "{e}"
        );
        assert!(e["line"].as_u64().unwrap() > 0, "{e}");
    }
    assert!(tmp.path().join("install-config.yaml").exists());
}

/// A v1beta2 template shaped like CAPM3's own end-to-end clusters: two
/// NICs found by inspection, a static network from a pool on the second
/// with the pool's gateway as default route, a provisioning network from
/// a gateway-less pool on the first, DNS given and from the pool; the
/// pools preallocate by Metal3Data name (`<template>-<index>-<pool>`).
fn v1beta2_inputs(dir: &Path) -> std::path::PathBuf {
    let dir = dir.join("v1beta2");
    std::fs::create_dir_all(&dir).unwrap();
    write(
        &dir,
        "template.yaml",
        r#"apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3DataTemplate
metadata:
  name: test1-workers-template
  namespace: metal3
spec:
  networkData:
    links:
      ethernets:
      - type: phy
        id: enp1s0
        macAddress:
          fromHostInterface: enp1s0
      - type: phy
        id: enp2s0
        macAddress:
          fromHostInterface: enp2s0
    networks:
      ipv4:
      - id: baremetalv4
        link: enp2s0
        ipAddressFromIPPool: baremetalv4-pool
        routes:
        - network: 0.0.0.0
          prefix: 0
          gateway:
            fromIPPool: baremetalv4-pool
      - id: provisioning
        link: enp1s0
        ipAddressFromIPPool: provisioning-pool
    services:
      dns:
      - 8.8.8.8
      dnsFromIPPool: baremetalv4-pool
---
apiVersion: ipam.metal3.io/v1alpha1
kind: IPPool
metadata:
  name: baremetalv4-pool
  namespace: metal3
spec:
  clusterName: test1
  namePrefix: test1-bmv4
  pools:
  - start: 192.168.111.100
    end: 192.168.111.200
  prefix: 24
  gateway: 192.168.111.1
  dnsServers:
  - 192.168.111.1
  preAllocations:
    test1-workers-template-0-baremetalv4-pool: 192.168.111.101
    test1-workers-template-1-baremetalv4-pool: 192.168.111.102
---
apiVersion: ipam.metal3.io/v1alpha1
kind: IPPool
metadata:
  name: provisioning-pool
  namespace: metal3
spec:
  clusterName: test1
  namePrefix: test1-prov
  pools:
  - start: 172.22.0.100
    end: 172.22.0.200
  prefix: 24
  preAllocations:
    test1-workers-template-0-provisioning-pool: 172.22.0.101
    test1-workers-template-1-provisioning-pool: 172.22.0.102
"#,
    );
    dir
}

/// The v1beta2 spelling reads as the machines CAPM3 would render it for:
/// named after their Metal3Data, each with its preallocated addresses
/// and the pool's gateway.
#[test]
fn a_v1beta2_template_reads_as_its_machines() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = v1beta2_inputs(tmp.path());
    let o = run(nodenet().arg("check").arg(&dir));
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = run(nodenet().args(["hosts", "--format", "json"]).arg(&dir));
    let v = json(&o);
    let hosts = v["hosts"].as_array().unwrap();
    let names: Vec<&str> = hosts.iter().map(|h| h["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["test1-workers-template-0", "test1-workers-template-1"]
    );
    for (h, (bm, prov)) in hosts.iter().zip([
        ("192.168.111.101/24", "172.22.0.101/24"),
        ("192.168.111.102/24", "172.22.0.102/24"),
    ]) {
        let iface = |n: &str| {
            h["interfaces"]
                .as_array()
                .unwrap()
                .iter()
                .find(|i| i["name"] == n)
                .unwrap_or_else(|| panic!("{n} in {h}"))
                .clone()
        };
        assert_eq!(
            iface("enp2s0")["ipv4"]["addresses"],
            serde_json::json!([bm])
        );
        assert_eq!(
            iface("enp1s0")["ipv4"]["addresses"],
            serde_json::json!([prov])
        );
        assert_eq!(
            h["gateways"],
            serde_json::json!([{"address": "192.168.111.1", "interface": "enp2s0"}])
        );
    }
}
