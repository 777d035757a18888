//! `--gitops 250,500,1000`: a fleet repository of N single-node sites,
//! one kustomization each (nodenet's Inventory as its generator) and a
//! top kustomization listing them all, built by `kubectl kustomize
//! --enable-alpha-plugins` through the generator laid out by `nodenet
//! plugin-home`, beside `nodenet render` of the same inventories (one
//! process per site, as the generator runs, and one process for all);
//! and the KRM function's cost per call under `kpt fn eval --exec`
//! beside `nodenet manifests` of the same site.

use std::path::Path;
use std::process::Command;

use anyhow::{bail, Result};

use super::{best, nodenet_cmd, timed};

/// One site's inventory: a single-node cluster drawn from its index.
fn site(i: usize) -> String {
    let (a, b) = (i / 250, i % 250);
    format!(
        r#"apiVersion: nodenet.io/v1alpha1
kind: Inventory
metadata:
  name: edge-{i:04}
spec:
  inventory:
    nodenet: v1
    cluster:
      baseDomain: edge.example.com
      clusterInstance:
        clusterImageSetNameRef: openshift-4.18
        pullSecretRef: {{name: pull-secret}}
    sites:
    - name: edge-{i:04}
      cluster:
        machineNetworks: [10.{a}.{b}.0/24]
      hosts:
      - name: sno.edge-{i:04}.edge.example.com
        role: master
        bootMode: UEFI
        bootInterface: ens1f0
        bmc: {{address: "redfish-virtualmedia+https://10.200.{a}.{b}/redfish/v1/Systems/1"}}
        nics: {{ens1f0: "02:00:00:00:{a:02x}:{b:02x}", ens1f1: "02:00:01:00:{a:02x}:{b:02x}"}}
        network:
          interfaces:
          - {{name: ens1f0, type: ethernet, state: up}}
          - {{name: ens1f1, type: ethernet, state: up}}
          - name: bond0
            type: bond
            state: up
            link-aggregation: {{mode: active-backup, port: [ens1f0, ens1f1]}}
            ipv4:
              enabled: true
              address: [{{ip: 10.{a}.{b}.10, prefix-length: 24}}]
          routes:
            config:
            - {{destination: 0.0.0.0/0, next-hop-address: 10.{a}.{b}.1, next-hop-interface: bond0}}
"#
    )
}

/// The fleet repository of `n` sites under `dir`.
fn fleet(dir: &Path, n: usize) -> Result<()> {
    let mut top = String::from("resources:\n");
    for i in 0..n {
        let s = dir.join(format!("edge-{i:04}"));
        std::fs::create_dir_all(&s)?;
        std::fs::write(s.join("nodenet.yaml"), site(i))?;
        std::fs::write(
            s.join("kustomization.yaml"),
            "generators:\n- nodenet.yaml\n",
        )?;
        top.push_str(&format!("- edge-{i:04}\n"));
    }
    std::fs::write(dir.join("kustomization.yaml"), top)?;
    Ok(())
}

pub fn run(nodenet: &Path, sizes: &[usize], runs: usize, dir: &Path) -> Result<()> {
    let home = dir.join("plugins");
    if !nodenet_cmd(nodenet)
        .arg("plugin-home")
        .arg(&home)
        .status()?
        .success()
    {
        bail!("nodenet plugin-home failed");
    }
    println!("\nfleet repository through the kustomize generator (kubectl kustomize --enable-alpha-plugins):");
    println!(
        "{:>7} {:>13} {:>13} {:>14} {:>13} {:>10}",
        "sites", "kustomize s", "ms/site", "render×N s", "render 1× s", "×render×N"
    );
    for &n in sizes {
        let repo = dir.join(format!("fleet-{n}"));
        if !repo.join("kustomization.yaml").is_file() {
            fleet(&repo, n)?;
        }
        let kustomize = best(runs, || {
            timed(
                Command::new("kubectl")
                    .args(["kustomize", "--enable-alpha-plugins"])
                    .arg(&repo)
                    .env("KUSTOMIZE_PLUGIN_HOME", &home),
            )
        })?;
        // What the generator does, one process per site, without kustomize.
        let out = dir.join("out");
        let per_site = best(runs, || {
            let start = std::time::Instant::now();
            for i in 0..n {
                let _ = std::fs::remove_dir_all(&out);
                let ok = nodenet_cmd(nodenet)
                    .args(["render", "-q", "--bmc-secrets", "reference", "-o"])
                    .arg(&out)
                    .arg(repo.join(format!("edge-{i:04}/nodenet.yaml")))
                    .status()?
                    .success();
                if !ok {
                    bail!("render of site {i} failed");
                }
            }
            Ok(start.elapsed().as_secs_f64())
        })?;
        let all: Vec<_> = (0..n)
            .map(|i| repo.join(format!("edge-{i:04}/nodenet.yaml")))
            .collect();
        let at_once = best(runs, || {
            let _ = std::fs::remove_dir_all(&out);
            timed(
                nodenet_cmd(nodenet)
                    .args(["render", "-q", "--bmc-secrets", "reference", "-o"])
                    .arg(&out)
                    .args(&all),
            )
        })?;
        println!(
            "{n:>7} {kustomize:>13.2} {:>13.2} {per_site:>14.2} {at_once:>13.2} {:>10.2}",
            kustomize * 1000.0 / n as f64,
            kustomize / per_site
        );
    }
    krm(nodenet, runs, dir)
}

/// One site as a kpt package: `kpt fn eval --exec nodenet krm-function`
/// against `nodenet manifests` of the same Inventory.
fn krm(nodenet: &Path, runs: usize, dir: &Path) -> Result<()> {
    let pkg = dir.join("krm-site");
    std::fs::create_dir_all(&pkg)?;
    std::fs::write(pkg.join("nodenet.yaml"), site(0))?;
    // kpt runs it in the package: the binary by its absolute path.
    let exec = format!("{} krm-function", std::path::absolute(nodenet)?.display());
    let kpt = best(runs.max(3), || {
        let _ = std::fs::remove_dir_all(pkg.join("rendered"));
        timed(
            Command::new("kpt")
                .args(["fn", "eval", ".", "--exec", &exec])
                .current_dir(&pkg),
        )
    })?;
    let manifests = best(runs.max(3), || {
        timed(
            nodenet_cmd(nodenet)
                .arg("manifests")
                .arg(pkg.join("nodenet.yaml")),
        )
    })?;
    println!(
        "KRM function, one site: kpt fn eval --exec {kpt:.3} s, nodenet manifests {manifests:.3} s (kpt's share {:.3} s)",
        kpt - manifests
    );
    Ok(())
}
