//! nodenet inside the GitOps engines, each run for real: kustomize
//! (kubectl's, v5.5) builds examples/gitops's sites through the generator
//! laid out by `plugin-home` (and through the one in the image
//! dist/Containerfile builds), kpt runs the KRM function, and Argo CD's
//! plugin command runs as its CMP server runs it. What each gives is held
//! against the files `render` writes of the same inventory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::*;

/// A password no stream may carry, given to every run.
const PASSWORD: &str = "gitops-test-bmc-password-93f1";

/// The objects of a YAML stream, by kind/namespace/name.
fn objects(stream: &str) -> BTreeMap<String, Value> {
    let mut by_id = BTreeMap::new();
    for doc in serde_yaml::Deserializer::from_str(stream) {
        let v: Value = serde::Deserialize::deserialize(doc).unwrap();
        if v.is_null() {
            continue;
        }
        let id = format!(
            "{}/{}/{}",
            v["kind"].as_str().unwrap(),
            v["metadata"]["namespace"].as_str().unwrap_or(""),
            v["metadata"]["name"].as_str().unwrap()
        );
        assert!(by_id.insert(id.clone(), v).is_none(), "{id} twice");
    }
    by_id
}

const REFERENCE: &[&str] = &["--bmc-secrets", "reference"];
/// site-b's Inventory says it: ExternalSecrets from Vault.
const SITE_B: &[&str] = &[
    "--bmc-secrets",
    "external-secret",
    "--secret-store",
    "ClusterSecretStore/vault",
    "--secret-key",
    "edge/{cluster}/bmc",
];

/// The objects of `render` of `inputs` (`bmc`: its BMC Secrets' flags,
/// `--bmc-secrets reference` when empty): the documents of the files a
/// cluster is given (NNCPs, openshift/ manifests, scale-out/,
/// ExternalSecrets, a site's ClusterInstance).
fn rendered(inputs: &[&Path], bmc: &[&str]) -> BTreeMap<String, Value> {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = run(nodenet()
        .arg("render")
        .args(inputs)
        .args(if bmc.is_empty() { REFERENCE } else { bmc })
        .arg("-o")
        .arg(&out));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut stream = String::new();
    for f in files_under(&out) {
        let rel = f.strip_prefix(&out).unwrap().to_string_lossy().into_owned();
        let applied = (rel.starts_with("nncp/")
            || rel.starts_with("scale-out/")
            || rel.starts_with("openshift/")
            || rel.starts_with("external-secrets/"))
            && rel.ends_with(".yaml")
            || rel.starts_with("sites/")
                && (rel.ends_with("/clusterinstance.yaml") || rel.ends_with("/bmc-secrets.yaml"));
        if applied {
            stream.push_str("---\n");
            stream.push_str(&std::fs::read_to_string(&f).unwrap());
        }
    }
    objects(&stream)
}

fn gitops() -> PathBuf {
    repo().join("examples/gitops")
}

/// A copy of an example site in `dir`.
fn copy_site(site: &str, dir: &Path) -> PathBuf {
    let to = dir.join(site);
    std::fs::create_dir_all(&to).unwrap();
    for f in std::fs::read_dir(gitops().join(site)).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, to.join(f.file_name().unwrap())).unwrap();
    }
    to
}

fn kustomize(plugin_home: &Path, dir: &Path) -> Output {
    run(Command::new(tool("kubectl"))
        .args(["kustomize", "--enable-alpha-plugins"])
        .arg(dir)
        .env("KUSTOMIZE_PLUGIN_HOME", plugin_home)
        .env("SITE_A_BMC_PASSWORD", PASSWORD)
        .env("SITE_B_BMC_PASSWORD", PASSWORD))
}

fn plugin_home(dir: &Path) -> PathBuf {
    let home = dir.join("plugins");
    let o = run(nodenet().arg("plugin-home").arg(&home));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    home
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

#[test]
fn kustomize_builds_each_site_through_the_generator_as_render_writes_it() {
    if skip_without(&["kubectl"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let home = plugin_home(tmp.path());
    assert!(home
        .join("nodenet.io/v1alpha1/inventory/Inventory")
        .is_file());
    let site_a = gitops().join("site-a");
    let built = kustomize(&home, &site_a);
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let a = stdout(&built);
    assert!(!a.contains(PASSWORD), "a password in the stream");
    let objs = objects(&a);
    assert_eq!(objs, rendered(&[&site_a.join("cluster.yaml")], &[]));
    let kinds: Vec<&str> = objs.values().map(|v| v["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "BareMetalHost").count(), 3);
    assert!(kinds.contains(&"NodeNetworkConfigurationPolicy"));
    // The BareMetalHosts name BMC Secrets made elsewhere: none written.
    assert_eq!(
        objs["BareMetalHost/openshift-machine-api/ctl-0"]["spec"]["bmc"]["credentialsName"],
        "ctl-0-bmc-secret"
    );
    assert!(!objs.contains_key("Secret/openshift-machine-api/ctl-0-bmc-secret"));
    // Deterministic: the same bytes again.
    assert_eq!(stdout(&kustomize(&home, &site_a)), a);

    // The inventory inside the generator's config: ZTP sites.
    let site_b = gitops().join("site-b");
    let built = kustomize(&home, &site_b);
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let b = stdout(&built);
    assert!(!b.contains(PASSWORD), "a password in the stream");
    // No password is read for ExternalSecrets: none is said missing (on
    // stderr, which kustomize shows only when the build fails).
    let unset = run(nodenet()
        .arg("manifests")
        .arg(site_b.join("nodenet.yaml"))
        .env_remove("SITE_B_BMC_PASSWORD"));
    assert_eq!(objects(&stdout(&unset)), objects(&b));
    let said = String::from_utf8_lossy(&unset.stderr);
    assert!(!said.contains("credentials-unresolved"), "{said}");
    let objs = objects(&b);
    assert_eq!(objs, rendered(&[&site_b.join("nodenet.yaml")], SITE_B));
    assert_eq!(
        objs.keys().collect::<Vec<_>>(),
        [
            "ClusterInstance/edge-00/edge-00",
            "ClusterInstance/edge-01/edge-01",
            "ExternalSecret/edge-00/edge-bmc",
            "ExternalSecret/edge-01/edge-bmc"
        ]
    );
    // Each makes the Secret its site's node names.
    assert_eq!(
        objs["ClusterInstance/edge-01/edge-01"]["spec"]["nodes"][0]["bmcCredentialsName"]["name"],
        objs["ExternalSecret/edge-01/edge-bmc"]["spec"]["target"]["name"]
    );
    assert_eq!(
        objs["ExternalSecret/edge-01/edge-bmc"]["spec"]["data"][0]["remoteRef"]["key"],
        "edge/edge-01/bmc"
    );
}

#[test]
fn a_broken_inventory_fails_the_kustomize_build_at_its_own_line() {
    if skip_without(&["kubectl"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let home = plugin_home(tmp.path());
    // Named by the generator: the finding is in that file, at its line.
    let site_a = copy_site("site-a", tmp.path());
    let cluster = site_a.join("cluster.yaml");
    let text = std::fs::read_to_string(&cluster).unwrap();
    std::fs::write(&cluster, text.replace("mode: 802.3ad", "mode: 802.3adx")).unwrap();
    let line = text.lines().position(|l| l.contains("802.3ad")).unwrap() + 1;
    let o = kustomize(&home, &site_a);
    assert!(!o.status.success());
    assert!(o.stdout.is_empty(), "partial output: {}", stdout(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("cluster.yaml:{line}:")), "{err}");
    assert!(err.contains("802.3adx"), "{err}");
    // Inside the generator's config (which kustomize writes again, its
    // keys sorted): the finding is at the line of the kustomization's file.
    let site_b = copy_site("site-b", tmp.path());
    let config = site_b.join("nodenet.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, text.replace("active-backup", "active-backupx")).unwrap();
    let line = text
        .lines()
        .position(|l| l.contains("active-backup"))
        .unwrap()
        + 1;
    let o = kustomize(&home, &site_b);
    assert!(!o.status.success());
    assert!(o.stdout.is_empty());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("nodenet.yaml:{line}:")), "{err}");
}

fn kpt(dir: &Path, args: &[&str]) -> Output {
    let bin = nodenet_path();
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    run(Command::new(tool("kpt"))
        .args(args)
        .current_dir(dir)
        .env("PATH", path)
        .env("SITE_B_BMC_PASSWORD", PASSWORD))
}

#[test]
fn kpt_runs_the_krm_function_and_gives_the_package_back_as_written() {
    if skip_without(&["kpt"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let site_b = copy_site("site-b", tmp.path());
    let before = std::fs::read_to_string(site_b.join("nodenet.yaml")).unwrap();
    // The Kptfile's pipeline.
    let o = kpt(&site_b, &["fn", "render", "--allow-exec", "."]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let made = site_b.join("rendered/site-b/sites/edge-00/clusterinstance.yaml");
    let text = std::fs::read_to_string(&made).unwrap();
    let expected = rendered(&[&gitops().join("site-b/nodenet.yaml")], SITE_B);
    assert_eq!(
        objects(&text)["ClusterInstance/edge-00/edge-00"],
        expected["ClusterInstance/edge-00/edge-00"]
    );
    let made_all: String = files_under(&site_b.join("rendered"))
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect();
    assert!(made_all.contains("kind: ExternalSecret"));
    assert!(!made_all.contains(PASSWORD), "a password in the package");
    // The inventory comes back byte for byte, comments and all.
    assert_eq!(
        std::fs::read_to_string(site_b.join("nodenet.yaml")).unwrap(),
        before
    );
    // Again: the objects made again, not added twice.
    let files = files_under(&site_b).len();
    let o = kpt(&site_b, &["fn", "render", "--allow-exec", "."]);
    assert!(o.status.success());
    assert_eq!(files_under(&site_b).len(), files);
    assert_eq!(std::fs::read_to_string(&made).unwrap(), text);

    // An error: results at the inventory's line, the package unchanged.
    let config = site_b.join("nodenet.yaml");
    std::fs::write(&config, before.replace("active-backup", "active-backupx")).unwrap();
    let line = before
        .lines()
        .position(|l| l.contains("active-backup"))
        .unwrap()
        + 1;
    let exec = format!("{} krm-function", nodenet_path().display());
    let o = kpt(&site_b, &["fn", "eval", ".", "--exec", &exec]);
    let all = format!("{}{}", stdout(&o), String::from_utf8_lossy(&o.stderr));
    assert!(all.contains("[FAIL]"), "{all}");
    assert!(
        all.contains(&format!(
            "[error] nodenet.io/v1alpha1/Inventory/site-b: nodenet.yaml:{line}:"
        )),
        "{all}"
    );
    assert_eq!(std::fs::read_to_string(&made).unwrap(), text);
}

#[test]
fn the_krm_function_reads_a_resource_list_as_kustomize_passes_one() {
    // No file behind the item (kustomize's function runner, a pipe): the
    // inventory is read as passed; the items come back as written.
    let list = std::fs::read_to_string(gitops().join("site-b/nodenet.yaml"))
        .unwrap()
        .lines()
        .map(|l| format!("  {l}\n"))
        .collect::<String>();
    let input = format!(
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- apiVersion: v1 # kept\n  kind: ConfigMap\n  metadata: {{name: other}}\nfunctionConfig:\n{list}"
    );
    let mut child = nodenet()
        .arg("krm-function")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = stdout(&o);
    assert!(
        out.contains("- apiVersion: v1 # kept\n  kind: ConfigMap\n"),
        "{out}"
    );
    let list: Value = serde_yaml::from_str(&out).unwrap();
    let items = list["items"].as_array().unwrap();
    assert_eq!(
        items.len(),
        5,
        "the ConfigMap, two sites' ClusterInstance and ExternalSecret"
    );
    let ci = items
        .iter()
        .find(|i| i["kind"] == "ClusterInstance")
        .unwrap();
    assert_eq!(
        ci["metadata"]["annotations"]["config.kubernetes.io/path"],
        "rendered/site-b/sites/edge-00/clusterinstance.yaml"
    );
}

#[test]
fn argo_cd_runs_the_plugin_as_its_cmp_server_does() {
    let plugin: Value = serde_yaml::from_str(
        &std::fs::read_to_string(repo().join("dist/argocd/plugin.yaml")).unwrap(),
    )
    .unwrap();
    assert_eq!(plugin["kind"], "ConfigManagementPlugin");
    let tmp = tempfile::tempdir().unwrap();
    let app = copy_site("site-a", tmp.path());
    // Discovery: the file the plugin looks for is in the application.
    let discover = plugin["spec"]["discover"]["fileName"].as_str().unwrap();
    assert!(app.join(discover).is_file(), "{discover}");
    // The CMP server runs `generate` in the application's directory with
    // the ARGOCD_APP_* variables and the app's env as ARGOCD_ENV_*.
    let argv: Vec<&str> = plugin["spec"]["generate"]["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(argv[0], "nodenet");
    let o = run(Command::new(nodenet_path())
        .args(&argv[1..])
        .current_dir(&app)
        .env_clear()
        .env("ARGOCD_APP_NAME", "site-a")
        .env("ARGOCD_APP_NAMESPACE", "openshift-gitops")
        .env("ARGOCD_APP_SOURCE_PATH", "examples/gitops/site-a")
        .env("ARGOCD_ENV_NODENET_BMC_SECRETS", "reference")
        .env("SITE_A_BMC_PASSWORD", PASSWORD));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stream = stdout(&o);
    assert!(!stream.contains(PASSWORD));
    assert_eq!(
        objects(&stream),
        rendered(&[&app.join("cluster.yaml")], &[])
    );
    // The app's env chooses the form: `placeholder` writes the BMC
    // Secrets, their passwords as `${VAR}`.
    let o = run(Command::new(nodenet_path())
        .args(&argv[1..])
        .current_dir(&app)
        .env_clear()
        .env("ARGOCD_ENV_NODENET_BMC_SECRETS", "placeholder")
        .env("SITE_A_BMC_PASSWORD", PASSWORD));
    assert!(o.status.success());
    let objs = objects(&stdout(&o));
    assert_eq!(
        objs["Secret/openshift-machine-api/ctl-0-bmc-secret"]["stringData"]["password"],
        "${SITE_A_BMC_PASSWORD}"
    );
    // ExternalSecrets, the store from the app's env.
    let o = run(Command::new(nodenet_path())
        .args(&argv[1..])
        .current_dir(&app)
        .env_clear()
        .env("ARGOCD_ENV_NODENET_BMC_SECRETS", "external-secret")
        .env("ARGOCD_ENV_NODENET_SECRET_STORE", "vault")
        .env("SITE_A_BMC_PASSWORD", PASSWORD));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stream = stdout(&o);
    assert!(!stream.contains(PASSWORD));
    let objs = objects(&stream);
    let es = &objs["ExternalSecret/openshift-machine-api/ctl-2-bmc-secret"];
    assert_eq!(es["spec"]["secretStoreRef"]["name"], "vault");
    assert_eq!(es["spec"]["data"][1]["remoteRef"]["key"], "site-a/bmc/bmc");
    assert_eq!(
        objs["BareMetalHost/openshift-machine-api/ctl-2"]["spec"]["bmc"]["credentialsName"],
        "ctl-2-bmc-secret"
    );
}

#[test]
fn the_image_holds_the_generator_at_its_plugin_path() {
    if skip_without(&["kubectl", "buildah", "strip"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (root, _) = layering::agent_image(tmp.path(), "localhost/nodenet-gitops:test");
    let home = root.join("kustomize/plugin");
    assert!(root.join("usr/bin/nodenet").is_file());
    let site_a = gitops().join("site-a");
    let from_image = kustomize(&home, &site_a);
    assert!(
        from_image.status.success(),
        "{}",
        String::from_utf8_lossy(&from_image.stderr)
    );
    let laid_out = kustomize(&plugin_home(tmp.path()), &site_a);
    assert_eq!(stdout(&from_image), stdout(&laid_out));
}

/// A ZTP repository as people have them (tests/ztp/good/repo: a root
/// kustomization over site directories, a site's ClusterInstance beside
/// kustomize's own ConfigMap generator for its extra manifests), moved to
/// nodenet by one line: the site's `resources: [site-a.yaml]` becomes
/// `generators: [nodenet.yaml]`, an Inventory naming that file. The build
/// keeps kustomize's ConfigMap and gives nodenet's ClusterInstance of it,
/// as render writes it; the other site, still a plain resource, is
/// untouched.
#[test]
fn a_ztp_repository_moves_to_the_generator_site_by_site() {
    if skip_without(&["kubectl"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let home = plugin_home(tmp.path());
    let from = repo().join("tests/ztp/good/repo");
    let to = tmp.path().join("repo");
    for f in files_under(&from) {
        let dest = to.join(f.strip_prefix(&from).unwrap());
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(&f, dest).unwrap();
    }
    let before = kustomize(&home, &to);
    assert!(
        before.status.success(),
        "{}",
        String::from_utf8_lossy(&before.stderr)
    );
    let kustomization = to.join("site-a/kustomization.yaml");
    let text = std::fs::read_to_string(&kustomization).unwrap();
    assert!(text.contains("resources:\n  - site-a.yaml"), "{text}");
    std::fs::write(
        &kustomization,
        text.replace(
            "resources:\n  - site-a.yaml",
            "generators:\n  - nodenet.yaml",
        ),
    )
    .unwrap();
    std::fs::write(
        to.join("site-a/nodenet.yaml"),
        "apiVersion: nodenet.io/v1alpha1\nkind: Inventory\nmetadata:\n  name: site-a\nspec:\n  files: [site-a.yaml]\n",
    )
    .unwrap();
    let after = kustomize(&home, &to);
    assert!(
        after.status.success(),
        "{}",
        String::from_utf8_lossy(&after.stderr)
    );
    let (before, after) = (objects(&stdout(&before)), objects(&stdout(&after)));
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>(),
        "the same objects, kustomize's ConfigMap among them"
    );
    assert!(after.contains_key("ConfigMap/site-a-sno/site-a-extra-manifests"));
    let ci = "ClusterInstance/site-a-sno/site-a-sno";
    assert_eq!(
        after[ci],
        rendered(&[&to.join("site-a/site-a.yaml")], &[])[ci]
    );
    for (id, v) in &before {
        if id != ci {
            assert_eq!(&after[id], v, "{id}");
        }
    }
}
