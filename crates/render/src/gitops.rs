//! What a GitOps engine applies of a render (a kustomize generator's
//! output, a KRM function's items, an Argo CD plugin's stream): the
//! Kubernetes objects among render's files, in its order, each as render
//! wrote it.
//!
//! Left out: what is no object for a cluster (keyfiles, `nmstate.yml`,
//! netplan, `network_data.json`, install-config.yaml, agent-config.yaml
//! and nodes-config.yaml, which the installer reads), what the hub makes
//! itself of a ClusterInstance (a site's `hosts/`), and a site's
//! `siteconfig.yaml` (the same site for the older ZTP plugin: a hub
//! applies one of the two).

use std::path::Path;

use crate::output::ManifestEntry;

/// One object of the stream: where render wrote it, and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    /// Render's path for it (relative to the output directory).
    pub path: String,
    /// Its place among the documents of that file (0 for the first).
    pub index: usize,
    /// The document as render wrote it, ending in a newline.
    pub text: String,
}

/// Whether render's file at `path` holds objects a cluster is given.
pub fn is_applied(path: &str) -> bool {
    let yaml = path.ends_with(".yaml");
    let parts: Vec<&str> = path.split('/').collect();
    match parts.as_slice() {
        ["nncp" | "openshift" | "scale-out" | "network-data" | "metal3" | "external-secrets", _] => {
            yaml
        }
        ["sites", _, "clusterinstance.yaml" | "bmc-secrets.yaml"] => true,
        _ => false,
    }
}

/// The objects of the render in `dir` whose files `manifest` lists.
pub fn objects(dir: &Path, manifest: &[ManifestEntry]) -> std::io::Result<Vec<Object>> {
    let mut objects = Vec::new();
    for entry in manifest.iter().filter(|e| is_applied(&e.path)) {
        let text = std::fs::read_to_string(dir.join(&entry.path))?;
        for (index, doc) in documents(&text).into_iter().enumerate() {
            objects.push(Object {
                path: entry.path.clone(),
                index,
                text: doc.to_string(),
            });
        }
    }
    Ok(objects)
}

/// The documents of a file render wrote (separated by `---` lines).
fn documents(text: &str) -> Vec<&str> {
    let mut docs = Vec::new();
    let mut start = 0;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_end() == "---" {
            docs.push(&text[start..at]);
            start = at + line.len();
        }
        at += line.len();
    }
    docs.push(&text[start..]);
    docs.into_iter().filter(|d| !d.trim().is_empty()).collect()
}

/// The objects as one YAML stream (`---` between documents), as
/// `kustomize build` and Argo CD read a generator's output.
pub fn stream(objects: &[Object]) -> String {
    let mut out = String::new();
    for (i, o) in objects.iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        out.push_str(&o.text);
        if !o.text.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_for_a_cluster_and_not_the_installers_files() {
        for applied in [
            "nncp/nodenet-worker.yaml",
            "openshift/10-nodenet-br-ex-master.yaml",
            "scale-out/worker-0.yaml",
            "sites/sno-000/clusterinstance.yaml",
            "metal3/ippools.yaml",
            "external-secrets/bmc.yaml",
            "sites/sno-000/bmc-secrets.yaml",
        ] {
            assert!(is_applied(applied), "{applied}");
        }
        for not in [
            "install-config.yaml",
            "agent-config.yaml",
            "nodes-config.yaml",
            "hosts/master-0/nmstate.yml",
            "hosts/master-0/system-connections/bond0.nmconnection",
            "openshift/nodenet-layer.Containerfile",
            "sites/sno-000/siteconfig.yaml",
            "sites/sno-000/hosts/sno/baremetalhost.yaml",
            "network-data/worker-0/network_data.json",
            "netplan/worker-0.yaml",
            "topology.html",
        ] {
            assert!(!is_applied(not), "{not}");
        }
    }

    #[test]
    fn every_bmc_secrets_form_an_inventory_names_is_one_render_writes() {
        for name in nodenet_model::load::inventory_resource::BMC_SECRETS {
            assert!(crate::BmcSecrets::parse(name).is_some(), "{name}");
        }
        assert_eq!(crate::BmcSecrets::parse("vault"), None);
    }

    #[test]
    fn a_file_of_several_documents_is_split_at_its_separators() {
        let docs = documents("kind: Secret\n---\nkind: BareMetalHost\nspec:\n  x: '---'\n");
        assert_eq!(
            docs,
            ["kind: Secret\n", "kind: BareMetalHost\nspec:\n  x: '---'\n"]
        );
        let o = |t: &str| Object {
            path: "p".into(),
            index: 0,
            text: t.into(),
        };
        assert_eq!(stream(&[o("a: 1\n"), o("b: 2")]), "a: 1\n---\nb: 2\n");
    }
}
