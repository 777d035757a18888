//! GitOps ZTP sites (tests/ztp: ClusterInstances, SiteConfig v1 and v2, a
//! repository tree): read as a fleet of clusters, checked alone and
//! across, rendered as ClusterInstances with the same network.

use std::path::{Path, PathBuf};

use crate::common::*;
use serde_json::{json, Value};

fn good(rel: &str) -> PathBuf {
    repo().join("tests/ztp/good").join(rel)
}

/// Every document of a YAML file, as JSON values.
fn docs(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    serde_yaml::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect()
}

/// The `clusterName` of a site file's first document.
fn cluster_name(path: &Path) -> String {
    docs(path)[0]["spec"]["clusterName"]
        .as_str()
        .unwrap()
        .to_string()
}

fn codes(o: &std::process::Output) -> Vec<(String, String, u64)> {
    json(o)["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["severity"].as_str().unwrap().to_string(),
                d["code"].as_str().unwrap().to_string(),
                d["line"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

#[test]
fn every_site_checks_clean_alone_and_as_one_fleet() {
    for f in [
        "sno-clusterinstance.yaml",
        "siteconfig-v1-two-clusters.yaml",
        "siteconfig-v2-standard.yaml",
        "repo",
    ] {
        let o = run(nodenet().args(["check", "--format", "json"]).arg(good(f)));
        assert_eq!(o.status.code(), Some(0), "{f}: {:?}", codes(&o));
        assert!(
            codes(&o).iter().all(|(s, _, _)| s == "warning"),
            "{f}: {:?}",
            codes(&o)
        );
    }
    // All of them: 6 clusters (one ClusterInstance, a SiteConfig of two,
    // a SiteConfig v2, a repository of two), no address or MAC twice.
    let o = run(nodenet().arg("check").arg(good("")));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("ok: 6 cluster(s), 12 host(s) checked"),
        "{stderr}"
    );
    // The repository's kustomizations and extra manifests: one warning.
    assert!(
        stderr.contains("Kustomization ×2") && stderr.contains("ContainerRuntimeConfig ×1"),
        "{stderr}"
    );
}

/// The same site twice under two cluster names, and a site whose name is
/// another's: every duplicate across the fleet, at the second site's line,
/// naming the first site.
#[test]
fn fleet_duplicates_across_sites_are_found_at_the_second_site() {
    let tmp = tempfile::tempdir().unwrap();
    let site = std::fs::read_to_string(good("sno-clusterinstance.yaml")).unwrap();
    let name = cluster_name(&good("sno-clusterinstance.yaml"));
    std::fs::write(tmp.path().join("a.yaml"), &site).unwrap();
    let copy = site.replace(&format!("clusterName: {name}"), "clusterName: copy-of-a");
    assert_ne!(copy, site);
    std::fs::write(tmp.path().join("b.yaml"), &copy).unwrap();
    let o = run(nodenet()
        .args(["check", "--format", "json"])
        .arg(tmp.path()));
    assert_eq!(o.status.code(), Some(1));
    let found = codes(&o);
    for code in [
        "duplicate-boot-mac",
        "duplicate-mac",
        "duplicate-bmc-address",
        "duplicate-ip",
    ] {
        assert!(found.iter().any(|(_, c, _)| c == code), "{code}: {found:?}");
    }
    let v = json(&o);
    for d in v["diagnostics"].as_array().unwrap() {
        assert!(d["file"].as_str().unwrap().ends_with("b.yaml"), "{d}");
        assert!(
            d["message"]
                .as_str()
                .unwrap()
                .contains(&format!("of cluster `{name}`")),
            "{d}"
        );
    }
    // The same cluster name twice.
    std::fs::write(
        tmp.path().join("b.yaml"),
        site.replace("02:00:00", "02:00:01"),
    )
    .unwrap();
    let o = run(nodenet()
        .args(["check", "--format", "json"])
        .arg(tmp.path()));
    assert!(
        codes(&o)
            .iter()
            .any(|(_, c, _)| c == "duplicate-cluster-name"),
        "{:?}",
        codes(&o)
    );
}

/// Another site than the fixture's (name, MACs, addresses of its own)
/// with a mistake of its own: a VLAN id out of range.
fn site_b(site: &str, name: &str) -> String {
    site.replace(&format!("clusterName: {name}"), "clusterName: site-b")
        .replace("02:00:00", "02:00:0b")
        .replace("192.0.2.", "203.0.113.")
        .replace("198.51.100.", "198.51.101.")
        .replace("id: 110", "id: 5000")
}

/// `--only`: the touched sites' own findings, and the fleet's rules across
/// every site; an untouched site's own mistake is not said.
#[test]
fn only_the_touched_sites_and_the_fleet_rules() {
    let tmp = tempfile::tempdir().unwrap();
    let site = std::fs::read_to_string(good("sno-clusterinstance.yaml")).unwrap();
    let name = cluster_name(&good("sno-clusterinstance.yaml"));
    std::fs::write(tmp.path().join("a.yaml"), &site).unwrap();
    // b: its own mistake (a VLAN id out of range), nothing shared.
    let b = site_b(&site, &name);
    std::fs::write(tmp.path().join("b.yaml"), &b).unwrap();
    let all = run(nodenet()
        .args(["check", "--format", "json"])
        .arg(tmp.path()));
    assert!(
        codes(&all).iter().any(|(_, c, _)| c == "vlan-id-range"),
        "the fixture's VLAN must be id 110: {:?}",
        codes(&all)
    );
    let only_a = run(nodenet()
        .args(["check", "--format", "json"])
        .arg(tmp.path())
        .arg("--only")
        .arg(tmp.path().join("a.yaml")));
    assert_eq!(only_a.status.code(), Some(0), "{:?}", codes(&only_a));
    // c touches a's BMC: said with --only a, though c is not touched.
    let c = b
        .replace("clusterName: site-b", "clusterName: site-c")
        .replace("02:00:0b", "02:00:0c")
        .replace("203.0.113.", "100.64.0.")
        .replace("id: 5000", "id: 110");
    std::fs::write(tmp.path().join("c.yaml"), &c).unwrap();
    let a_bmc = docs(&good("sno-clusterinstance.yaml"))[0]["spec"]["nodes"][0]["bmcAddress"]
        .as_str()
        .unwrap()
        .to_string();
    let c_bmc = docs(&tmp.path().join("c.yaml"))[0]["spec"]["nodes"][0]["bmcAddress"]
        .as_str()
        .unwrap()
        .to_string();
    std::fs::write(tmp.path().join("c.yaml"), c.replace(&c_bmc, &a_bmc)).unwrap();
    let only_a = run(nodenet()
        .args(["check", "--format", "json"])
        .arg(tmp.path())
        .arg("--only")
        .arg(tmp.path().join("a.yaml")));
    let found = codes(&only_a);
    assert_eq!(only_a.status.code(), Some(1), "{found:?}");
    assert!(
        found.iter().any(|(_, c, _)| c == "duplicate-bmc-address")
            && !found.iter().any(|(_, c, _)| c == "vlan-id-range"),
        "{found:?}"
    );
}

/// `--changed-since REF`: the sites git says changed since REF (committed,
/// staged, unstaged, new), with the same verdict as `--only` those files.
#[test]
fn changed_since_checks_the_sites_git_says_changed() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path();
    let git = |args: &[&str]| {
        let o = run(std::process::Command::new("git")
            .arg("-C")
            .arg(repo)
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args));
        assert!(
            o.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    let site = std::fs::read_to_string(good("sno-clusterinstance.yaml")).unwrap();
    let name = cluster_name(&good("sno-clusterinstance.yaml"));
    std::fs::create_dir(repo.join("sites")).unwrap();
    std::fs::write(repo.join("sites/a.yaml"), &site).unwrap();
    // b: its own mistake (a VLAN id out of range), already committed.
    let b = site_b(&site, &name);
    std::fs::write(repo.join("sites/b.yaml"), &b).unwrap();
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-qm", "fleet"]);
    let check = |extra: &[&str]| {
        run(nodenet()
            .args(["check", "--format", "json"])
            .arg(repo.join("sites"))
            .args(extra))
    };
    // Nothing changed: nothing of b said.
    let o = check(&["--changed-since", "HEAD"]);
    assert_eq!(o.status.code(), Some(0), "{:?}", codes(&o));
    // a changed (unstaged): a's findings only, as `--only a`.
    std::fs::write(repo.join("sites/a.yaml"), format!("# edited\n{site}")).unwrap();
    let since = check(&["--changed-since", "HEAD"]);
    let only = check(&["--only", repo.join("sites/a.yaml").to_str().unwrap()]);
    assert_eq!(since.status.code(), Some(0), "{:?}", codes(&since));
    assert_eq!(codes(&since), codes(&only));
    // b changed and committed since the base: its mistake is said.
    std::fs::write(repo.join("sites/b.yaml"), format!("# edited\n{b}")).unwrap();
    git(&["commit", "-qam", "edit b"]);
    let since = check(&["--changed-since", "HEAD~1"]);
    assert_eq!(since.status.code(), Some(1));
    assert!(codes(&since).iter().any(|(_, c, _)| c == "vlan-id-range"));
    let only = check(&["--only", repo.join("sites/b.yaml").to_str().unwrap()]);
    assert_eq!(codes(&since), codes(&only));
    // A revision git does not know: a usage error, said.
    let o = check(&["--changed-since", "no-such-ref"]);
    assert_eq!(o.status.code(), Some(2));
}

/// A SiteConfig's clusters rendered as ClusterInstances: the networking and
/// identity of every cluster and node, field by field, as the SiteConfig
/// says it (site-wide defaults, singular VIPs, service networks as
/// strings).
#[test]
fn siteconfig_renders_clusterinstances_with_the_same_network() {
    let tmp = tempfile::tempdir().unwrap();
    for file in [
        "siteconfig-v1-two-clusters.yaml",
        "siteconfig-v2-standard.yaml",
    ] {
        let out = tmp.path().join(file);
        let o = run(nodenet().arg("render").arg(good(file)).arg("-o").arg(&out));
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let sc = &docs(&good(file))[0];
        let site = &sc["spec"];
        let clusters = site["clusters"].as_array().unwrap();
        for c in clusters {
            let name = c["clusterName"].as_str().unwrap();
            let ci = &docs(&out.join(format!("sites/{name}/clusterinstance.yaml")))[0];
            assert_eq!(ci["kind"], "ClusterInstance");
            assert_eq!(ci["metadata"]["name"], name);
            assert_eq!(ci["metadata"]["namespace"], name);
            let spec = &ci["spec"];
            let or_site = |k: &str| {
                if c[k].is_null() {
                    site[k].clone()
                } else {
                    c[k].clone()
                }
            };
            for k in [
                "baseDomain",
                "clusterImageSetNameRef",
                "pullSecretRef",
                "sshPublicKey",
            ] {
                assert_eq!(spec[k], or_site(k), "{name}: {k}");
            }
            for k in [
                "clusterName",
                "networkType",
                "machineNetwork",
                "clusterNetwork",
            ] {
                assert_eq!(spec[k], c[k], "{name}: {k}");
            }
            let services: Vec<Value> = c["serviceNetwork"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| json!({"cidr": s}))
                .collect();
            assert_eq!(spec["serviceNetwork"], json!(services), "{name}");
            for (list, single) in [("apiVIPs", "apiVIP"), ("ingressVIPs", "ingressVIP")] {
                let want = match (&c[list], &c[single]) {
                    (Value::Array(l), _) => json!(l),
                    (_, Value::String(s)) => json!([s]),
                    _ => Value::Null,
                };
                assert_eq!(spec[list], want, "{name}: {list}");
            }
            let nodes = c["nodes"].as_array().unwrap();
            assert_eq!(spec["nodes"].as_array().unwrap().len(), nodes.len());
            let expected_type = if nodes.len() == 1 {
                "SNO"
            } else {
                "HighlyAvailable"
            };
            assert_eq!(spec["clusterType"], expected_type, "{name}");
            for n in nodes {
                let host = n["hostName"].as_str().unwrap();
                let rendered = spec["nodes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|r| r["hostName"] == host)
                    .unwrap_or_else(|| panic!("{name}: no node {host}"));
                for k in [
                    "role",
                    "bmcAddress",
                    "bmcCredentialsName",
                    "bootMACAddress",
                    "bootMode",
                    "rootDeviceHints",
                    "nodeLabels",
                ] {
                    if !n[k].is_null() {
                        assert_eq!(rendered[k], n[k], "{host}: {k}");
                    }
                }
                // The MAC map and the state, as written.
                assert_eq!(
                    rendered["nodeNetwork"]["interfaces"], n["nodeNetwork"]["interfaces"],
                    "{host}"
                );
                assert_eq!(
                    rendered["nodeNetwork"]["config"], n["nodeNetwork"]["config"],
                    "{host}"
                );
                assert_eq!(rendered["templateRefs"][0]["name"], "ai-node-templates-v1");
            }
        }
    }
}

/// A ClusterInstance rendered is the ClusterInstance given: nothing nodenet
/// does not own is lost, nothing it owns changes; and rendered again, the
/// output is the same bytes.
#[test]
fn a_clusterinstance_renders_back_to_itself() {
    let tmp = tempfile::tempdir().unwrap();
    let input = good("sno-clusterinstance.yaml");
    let given = &docs(&input)[0];
    let out = tmp.path().join("out");
    let o = run(nodenet().arg("render").arg(&input).arg("-o").arg(&out));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let name = given["spec"]["clusterName"].as_str().unwrap();
    let rendered_file = out.join(format!("sites/{name}/clusterinstance.yaml"));
    let rendered = &docs(&rendered_file)[0];
    assert_eq!(rendered["spec"], given["spec"]);
    assert_eq!(rendered["metadata"]["name"], given["metadata"]["name"]);
    let again = tmp.path().join("again");
    let o = run(nodenet()
        .arg("render")
        .arg(&rendered_file)
        .arg("-o")
        .arg(&again));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        std::fs::read(&rendered_file).unwrap(),
        std::fs::read(again.join(format!("sites/{name}/clusterinstance.yaml"))).unwrap()
    );
    // What the hub gets per node: the state and MAC map of the site.
    let host = given["spec"]["nodes"][0]["hostName"].as_str().unwrap();
    let nsc = &docs(&out.join(format!("sites/{name}/hosts/{host}/nmstateconfig.yaml")))[0];
    assert_eq!(nsc["metadata"]["namespace"], name);
    assert_eq!(
        nsc["spec"]["config"],
        given["spec"]["nodes"][0]["nodeNetwork"]["config"]
    );
    assert_eq!(
        nsc["spec"]["interfaces"],
        given["spec"]["nodes"][0]["nodeNetwork"]["interfaces"]
    );
    let bmh = &docs(&out.join(format!("sites/{name}/hosts/{host}/baremetalhost.yaml")))[0];
    assert_eq!(
        bmh["spec"]["bootMACAddress"],
        given["spec"]["nodes"][0]["bootMACAddress"]
    );
    assert_eq!(
        bmh["spec"]["bmc"]["address"],
        given["spec"]["nodes"][0]["bmcAddress"]
    );
    assert_eq!(
        bmh["spec"]["bmc"]["credentialsName"],
        given["spec"]["nodes"][0]["bmcCredentialsName"]["name"]
    );
}

#[test]
fn hosts_lists_a_fleet_with_its_clusters_and_plan_refuses_one() {
    let o = run(nodenet()
        .args(["hosts", "--format", "csv"])
        .arg(good("repo")));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("cluster,"), "{text}");
    assert_eq!(lines.len(), 3, "{text}");
    let clusters: Vec<&str> = lines[1..]
        .iter()
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_ne!(clusters[0], clusters[1], "{text}");
    let v1 = good("siteconfig-v1-two-clusters.yaml");
    let o = run(nodenet().args(["bmc", "status"]).arg(&v1));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("2 clusters"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `plan` across a fleet: sites matched by name, one changed (a node's
/// MTU), one added, one removed, one unchanged; `diff --host` finds a
/// node in any site.
#[test]
fn plan_and_diff_take_a_fleet() {
    let tmp = tempfile::tempdir().unwrap();
    let (old, new) = (tmp.path().join("old"), tmp.path().join("new"));
    std::fs::create_dir_all(&old).unwrap();
    std::fs::create_dir_all(&new).unwrap();
    let v1 = std::fs::read_to_string(good("siteconfig-v1-two-clusters.yaml")).unwrap();
    let sno = std::fs::read_to_string(good("sno-clusterinstance.yaml")).unwrap();
    let v2 = std::fs::read_to_string(good("siteconfig-v2-standard.yaml")).unwrap();
    std::fs::write(old.join("v1.yaml"), &v1).unwrap();
    std::fs::write(old.join("sno.yaml"), &sno).unwrap();
    std::fs::write(new.join("v1.yaml"), &v1).unwrap();
    std::fs::write(new.join("v2.yaml"), &v2).unwrap();
    // The SNO site changes: its bond's MTU (a disruptive change).
    let sno_changed = sno.replacen("type: bond\n", "type: bond\n              mtu: 9000\n", 1);
    assert_ne!(sno_changed, sno, "the fixture has a bond");
    std::fs::write(new.join("sno.yaml"), &sno_changed).unwrap();
    let o = run(nodenet()
        .args(["plan", "--format", "json"])
        .arg(&old)
        .arg(&new));
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v = json(&o);
    let site = |name: &str| {
        v["sites"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["cluster"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no site {name}: {v}"))
    };
    let sno_name = cluster_name(&good("sno-clusterinstance.yaml"));
    assert_eq!(site(&sno_name)["site"], "changed");
    assert_eq!(site(&sno_name)["plan"]["changes"][0]["change"], "modified");
    let v2_cluster = docs(&good("siteconfig-v2-standard.yaml"))[0]["spec"]["clusters"][0]
        ["clusterName"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(site(&v2_cluster)["site"], "added");
    for c in docs(&good("siteconfig-v1-two-clusters.yaml"))[0]["spec"]["clusters"]
        .as_array()
        .unwrap()
    {
        assert_eq!(
            site(c["clusterName"].as_str().unwrap())["site"],
            "unchanged"
        );
    }
    // diff: a node of the fleet by --host.
    let host = docs(&good("sno-clusterinstance.yaml"))[0]["spec"]["nodes"][0]["hostName"]
        .as_str()
        .unwrap()
        .to_string();
    let o = run(nodenet()
        .arg("diff")
        .arg(new.join("sno.yaml"))
        .arg(&old)
        .args(["--host", &host]));
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("mtu"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

/// The SiteConfig v2 render writes beside each ClusterInstance says the
/// same site: rendered in turn, it gives the same ClusterInstance but for
/// what only a ClusterInstance says (`clusterType`, `extraManifestsRefs`);
/// a dual-stack site has none, said in a warning.
#[test]
fn the_siteconfig_written_is_the_same_site() {
    let tmp = tempfile::tempdir().unwrap();
    let first = tmp.path().join("first");
    let o = run(nodenet()
        .arg("render")
        .arg(good("repo"))
        .arg("-o")
        .arg(&first));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("no siteconfig.yaml for `site-b-sno`: its service network is dual-stack"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut sites = 0;
    for site in std::fs::read_dir(first.join("sites")).unwrap() {
        let site = site.unwrap().path();
        let name = site.file_name().unwrap().to_string_lossy().into_owned();
        if !site.join("siteconfig.yaml").exists() {
            assert_eq!(name, "site-b-sno");
            continue;
        }
        let again = tmp.path().join(format!("again-{name}"));
        let o = run(nodenet()
            .arg("render")
            .arg(site.join("siteconfig.yaml"))
            .arg("-o")
            .arg(&again));
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let mut before = docs(&site.join("clusterinstance.yaml"))[0].clone();
        let mut after = docs(&again.join(format!("sites/{name}/clusterinstance.yaml")))[0].clone();
        assert!(before["spec"]["extraManifestsRefs"].is_array(), "{before}");
        before["spec"]
            .as_object_mut()
            .unwrap()
            .remove("extraManifestsRefs");
        // What only a ClusterInstance says: made again from the nodes.
        assert_eq!(after["spec"]["clusterType"], "SNO");
        after["spec"].as_object_mut().unwrap().remove("clusterType");
        before["spec"]
            .as_object_mut()
            .unwrap()
            .remove("clusterType");
        assert_eq!(after, before, "{name}");
        sites += 1;
    }
    assert_eq!(sites, 1);
}

/// An inventory's `sites:` (examples/ztp/sno-fleet.yaml): 100 single-node
/// sites from one template, each a cluster of its own with its subnet,
/// address, MACs and BMC from its index, rendered as ClusterInstances
/// (valid against the CRD: tests/schemas.rs); and a pool that is not per
/// site gives every site the same address, found across the fleet.
#[test]
fn a_fleet_of_sites_from_one_template() {
    let fleet = repo().join("examples/ztp/sno-fleet.yaml");
    let o = run(nodenet().arg("check").arg(&fleet));
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("ok: 100 cluster(s), 100 host(s) checked: 0 errors, 0 warnings"),
        "{stderr}"
    );
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = run(nodenet().arg("render").arg(&fleet).arg("-o").arg(&out));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ci = &docs(&out.join("sites/sno-007/clusterinstance.yaml"))[0];
    let spec = &ci["spec"];
    assert_eq!(spec["clusterName"], "sno-007");
    assert_eq!(spec["baseDomain"], "ran.example.com");
    assert_eq!(spec["machineNetwork"], json!([{"cidr": "10.16.7.0/24"}]));
    // The inventory's clusterInstance fields, carried as written.
    assert_eq!(spec["clusterImageSetNameRef"], "openshift-4.18");
    assert_eq!(
        spec["extraManifestsRefs"],
        json!([{"name": "du-extra-manifests"}])
    );
    let node = &spec["nodes"][0];
    assert_eq!(node["hostName"], "sno.sno-007.ran.example.com");
    assert_eq!(node["role"], "master");
    assert_eq!(node["bootMACAddress"], "02:00:00:00:00:07");
    assert_eq!(
        node["bmcAddress"],
        "redfish-virtualmedia+https://10.200.0.17/redfish/v1/Systems/1"
    );
    assert_eq!(
        node["nodeNetwork"]["interfaces"],
        json!([{"name": "ens1f0", "macAddress": "02:00:00:00:00:07"}, {"name": "ens1f1", "macAddress": "02:00:01:00:00:07"}])
    );
    let vlan = &node["nodeNetwork"]["config"]["interfaces"][3];
    assert_eq!(
        vlan["ipv4"]["address"][0],
        json!({"ip": "10.16.7.10", "prefix-length": 24})
    );
    assert_eq!(
        node["nodeNetwork"]["config"]["routes"]["config"][0]["next-hop-address"],
        "10.16.7.1"
    );
    // One address for every site: each site after the first repeats it.
    let text = std::fs::read_to_string(&fleet)
        .unwrap()
        .replace("count: 100", "count: 3")
        .replace(
            r#"range: "${site.index:ip 10.16.0.10/24}-${site.index:ip 10.16.0.10/24}""#,
            "range: 10.16.0.10-10.16.0.10",
        )
        .replace(r#"["${site.index:net 10.16.0.0/24}"]"#, "[10.16.0.0/16]")
        .replace(
            r#"gateway: "${site.index:ip 10.16.0.1/24}""#,
            "gateway: 10.16.0.1",
        );
    let shared = tmp.path().join("shared.yaml");
    std::fs::write(&shared, text).unwrap();
    let o = run(nodenet().args(["check", "--format", "json"]).arg(&shared));
    let found = codes(&o);
    let dups = found.iter().filter(|(_, c, _)| c == "duplicate-ip").count();
    assert_eq!(dups, 2, "{found:?}");
    assert_eq!(found.len(), 2, "{found:?}");
    // Unless the sites say that range is private to each, behind NAT.
    let behind = std::fs::read_to_string(&shared).unwrap().replace(
        "  baseDomain: ran.example.com\n",
        "  baseDomain: ran.example.com\n  behindNat: [10.16.0.0/16]\n",
    );
    std::fs::write(&shared, behind).unwrap();
    let o = run(nodenet().args(["check", "--format", "json"]).arg(&shared));
    assert_eq!(o.status.code(), Some(0), "{:?}", codes(&o));
}
