//! BMC credentials as the External Secrets Operator makes them
//! (`render --bmc-secrets external-secret`): an ExternalSecret
//! (external-secrets.io/v1) per BMC Secret a BareMetalHost or a
//! ClusterInstance node names, its `username` and `password` read by the
//! operator from a SecretStore or ClusterSecretStore. No password is read
//! where render runs, and none is written: the tree can live in Git.

use super::*;

/// Where the operator reads the credentials: the store, and the key of
/// each in it (`{cluster}`, `{host}` and `{credentials}` replaced).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretStore {
    /// `ClusterSecretStore` or `SecretStore`.
    pub kind: String,
    pub name: String,
    pub key: String,
}

/// The store kinds an ExternalSecret names (its CRD's enum).
pub const STORE_KINDS: &[&str] = &["ClusterSecretStore", "SecretStore"];

/// The key when none is given: one entry per credentials of a cluster.
pub const DEFAULT_KEY: &str = "{cluster}/bmc/{credentials}";

impl SecretStore {
    /// `KIND/NAME` or `NAME` (a ClusterSecretStore), with a key template.
    pub fn parse(store: &str, key: Option<&str>) -> Result<SecretStore, String> {
        let (kind, name) = match store.split_once('/') {
            Some((k, n)) => (k, n),
            None => ("ClusterSecretStore", store),
        };
        if !STORE_KINDS.contains(&kind) {
            return Err(format!(
                "secret store `{store}`: its kind is one of {}",
                STORE_KINDS.join(", ")
            ));
        }
        if name.is_empty() {
            return Err(format!("secret store `{store}` has no name"));
        }
        Ok(SecretStore {
            kind: kind.to_string(),
            name: name.to_string(),
            key: key.unwrap_or(DEFAULT_KEY).to_string(),
        })
    }

    /// The key of one host's credentials in the store.
    fn key_of(&self, cluster: &str, host: &Host) -> String {
        let credentials = host
            .bmc
            .as_ref()
            .and_then(|b| b.credentials.as_ref())
            .map_or(host.name.value.as_str(), |c| c.value.as_str());
        self.key
            .replace("{cluster}", cluster)
            .replace("{host}", &host.name.value)
            .replace("{credentials}", credentials)
    }
}

/// The ExternalSecret that makes the Secret `secret` in `namespace`.
fn external_secret(secret: &str, namespace: &str, key: &str, store: &SecretStore) -> J {
    let field =
        |name: &str| json!({"secretKey": name, "remoteRef": {"key": key, "property": name}});
    json!({
        "apiVersion": "external-secrets.io/v1",
        "kind": "ExternalSecret",
        "metadata": {"name": secret, "namespace": namespace},
        "spec": {
            "refreshInterval": "1h",
            "secretStoreRef": {"kind": store.kind, "name": store.name},
            "target": {"name": secret, "creationPolicy": "Owner"},
            "data": [field("username"), field("password")],
        },
    })
}

/// The ExternalSecrets of every host with a BMC, in `path`: the Secret
/// each names is `secret_of(host)`, in `namespace`. `None` for hosts
/// without BMCs.
pub fn bmc_external_secrets(
    path: String,
    inv: &Inventory,
    namespace: &str,
    secret_of: impl Fn(&Host) -> String,
    store: &SecretStore,
) -> Option<OutFile> {
    let cluster = inv.cluster.name.as_ref().map_or("", |n| n.value.as_str());
    // Hosts sharing a Secret (a site's nodes naming their credentials)
    // share its ExternalSecret.
    let mut made = std::collections::BTreeSet::new();
    let docs: Vec<String> = inv
        .hosts
        .iter()
        .filter(|h| h.bmc.is_some())
        .filter_map(|h| {
            let secret = secret_of(h);
            let doc = external_secret(&secret, namespace, &store.key_of(cluster, h), store);
            made.insert(secret).then(|| yaml(&doc))
        })
        .collect();
    (!docs.is_empty()).then(|| OutFile::new(path, docs.join("---\n"), 0o644))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_is_named_with_or_without_its_kind() {
        let s = SecretStore::parse("vault", None).unwrap();
        assert_eq!(
            (s.kind.as_str(), s.name.as_str()),
            ("ClusterSecretStore", "vault")
        );
        assert_eq!(s.key, DEFAULT_KEY);
        let s = SecretStore::parse("SecretStore/site", Some("bmc/{host}")).unwrap();
        assert_eq!(
            (s.kind.as_str(), s.key.as_str()),
            ("SecretStore", "bmc/{host}")
        );
        assert!(SecretStore::parse("Vault/x", None)
            .unwrap_err()
            .contains("ClusterSecretStore"));
        assert!(SecretStore::parse("SecretStore/", None).is_err());
    }
}
