//! nodenet's own resource, `nodenet.io/v1alpha1` `Inventory`: how a GitOps
//! engine names an inventory (a kustomize generator's config, a KRM
//! function's config, an Argo CD application's file). The inventory is
//! inside it (`spec.inventory`, read with its own lines) or named by its
//! files (`spec.files`, read by whoever reads the resource by name).
//!
//! ```yaml
//! apiVersion: nodenet.io/v1alpha1
//! kind: Inventory
//! metadata: {name: site-a}
//! spec:
//!   files: [site-a.yaml]        # or: inventory: {nodenet: v1, ...}
//!   bmcSecrets: reference       # optional; the BMC Secrets' form
//!   externalSecrets:            # with `bmcSecrets: external-secret`
//!     storeRef: {kind: ClusterSecretStore, name: vault}
//!     key: "{cluster}/bmc/{credentials}"
//! ```

use crate::diag::{Code, Diagnostic};
use crate::fields::Decoder;
use crate::inventory::Located;
use crate::yaml::Node;

pub const API_GROUP: &str = "nodenet.io";
pub const API_VERSION: &str = "nodenet.io/v1alpha1";
pub const KIND: &str = "Inventory";

/// The forms `spec.bmcSecrets` takes (render's `--bmc-secrets`).
pub const BMC_SECRETS: &[&str] = &["placeholder", "embed", "reference", "external-secret"];

const SPEC_FIELDS: &[&str] = &["files", "inventory", "bmcSecrets", "externalSecrets"];

/// What an `Inventory` resource says.
#[derive(Debug)]
pub struct InventoryResource<'a> {
    pub name: Located<String>,
    /// The inventory's inputs as written (paths relative to the resource's
    /// directory, or `netbox:` sources).
    pub files: Vec<Located<String>>,
    /// The inventory itself.
    pub inventory: Option<&'a Node>,
    pub bmc_secrets: Option<Located<String>>,
    /// `spec.externalSecrets`: the store (`KIND/NAME`) and the key
    /// template, for `bmcSecrets: external-secret` (which it implies).
    pub external_secrets: Option<(String, Option<String>)>,
}

/// `spec.externalSecrets`: `storeRef` (`name`, `kind`) and `key`.
fn external_secrets(d: &mut Decoder, spec: &Node) -> Option<(String, Option<String>)> {
    let es = spec.get("externalSecrets").filter(|n| !n.is_null())?;
    d.check_fields(es, "`spec.externalSecrets`", &["storeRef", "key"]);
    let Some(store) = es.get("storeRef") else {
        d.push(
            Diagnostic::error(
                Code::MissingField,
                "`spec.externalSecrets` has no `storeRef`",
            )
            .at(es.span),
        );
        return None;
    };
    d.check_fields(store, "`storeRef`", &["kind", "name"]);
    let name = d.required_string(store, "name", "`storeRef`")?;
    let kind = d.string(store, "kind");
    const KINDS: &[&str] = &["ClusterSecretStore", "SecretStore"];
    if let Some(k) = kind.as_ref().filter(|k| !KINDS.contains(&k.value.as_str())) {
        d.push(
            Diagnostic::error(
                Code::InvalidValue,
                format!("`kind: {}`: one of {}", k.value, KINDS.join(", ")),
            )
            .at(k.span),
        );
        return None;
    }
    let store = match kind {
        Some(k) => format!("{}/{}", k.value, name.value),
        None => name.value,
    };
    Some((store, d.string(es, "key").map(|k| k.value)))
}

/// Whether `root` is an `Inventory` resource of nodenet's API group.
pub fn is_resource(root: &Node) -> bool {
    let api = root.get("apiVersion").and_then(Node::as_str).unwrap_or("");
    root.get("kind").and_then(Node::as_str) == Some(KIND)
        && api.split_once('/').map(|(g, _)| g) == Some(API_GROUP)
}

/// Reads an `Inventory` resource; its mistakes (each located) go to
/// `diags`, and `None` when it names no inventory it could be read for.
pub fn read<'a>(root: &'a Node, diags: &mut Vec<Diagnostic>) -> Option<InventoryResource<'a>> {
    let mut d = Decoder::new(diags);
    let api = root.get("apiVersion").and_then(Node::as_str).unwrap_or("");
    if api != API_VERSION {
        let at = root.get("apiVersion").map_or(root.span, |n| n.span);
        d.push(
            Diagnostic::error(
                Code::InvalidValue,
                format!("`apiVersion: {api}`: nodenet reads `{API_VERSION}`"),
            )
            .at(at),
        );
        return None;
    }
    let name = super::object_name(&mut d, root, "the Inventory")?;
    let Some(spec) = root.get("spec") else {
        d.push(Diagnostic::error(Code::MissingField, "the Inventory has no `spec`").at(root.span));
        return None;
    };
    if !d.check_fields(spec, "the Inventory's `spec`", SPEC_FIELDS) {
        return None;
    }
    let mut files = Vec::new();
    for f in d.seq(spec, "files") {
        match f.as_str() {
            Some(s) if !s.is_empty() => files.push(Located::new(s.to_string(), f.span)),
            _ => d.type_error(f, "files", "a file name"),
        }
    }
    let inventory = spec.get("inventory").filter(|n| !n.is_null());
    let bmc_secrets = d.string(spec, "bmcSecrets");
    if let Some(b) = bmc_secrets
        .as_ref()
        .filter(|b| !BMC_SECRETS.contains(&b.value.as_str()))
    {
        d.push(
            Diagnostic::error(
                Code::InvalidValue,
                format!(
                    "`bmcSecrets: {}`: one of {}",
                    b.value,
                    BMC_SECRETS.join(", ")
                ),
            )
            .at(b.span),
        );
        return None;
    }
    let external = external_secrets(&mut d, spec);
    let asks_external = bmc_secrets
        .as_ref()
        .is_some_and(|b| b.value == "external-secret");
    if asks_external && spec.get("externalSecrets").is_none() {
        d.push(
            Diagnostic::error(
                Code::MissingField,
                "`bmcSecrets: external-secret` needs `spec.externalSecrets` (its `storeRef`)",
            )
            .at(bmc_secrets.as_ref().map_or(spec.span, |b| b.span)),
        );
        return None;
    }
    match (files.is_empty(), inventory) {
        (true, None) => {
            d.push(
                Diagnostic::error(
                    Code::MissingField,
                    "the Inventory names no inventory: give `spec.files` (its files) or `spec.inventory` (the inventory itself)",
                )
                .at(spec.span),
            );
            return None;
        }
        (false, Some(inv)) => {
            d.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    "the Inventory gives both `spec.files` and `spec.inventory`: one of them",
                )
                .at(inv.span),
            );
            return None;
        }
        _ => {}
    }
    Some(InventoryResource {
        name,
        files,
        inventory,
        bmc_secrets,
        external_secrets: external,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::parse;

    fn read_text(text: &str) -> (bool, Vec<Diagnostic>) {
        let root = parse(text, 0).unwrap();
        let mut diags = Vec::new();
        let ok = read(&root, &mut diags).is_some();
        (ok, diags)
    }

    #[test]
    fn files_or_the_inventory_itself() {
        let (ok, diags) = read_text(
            "apiVersion: nodenet.io/v1alpha1\nkind: Inventory\nmetadata: {name: a}\nspec:\n  files: [a.yaml, 'netbox:?cluster=a']\n",
        );
        assert!(ok && diags.is_empty(), "{diags:?}");
        let (ok, diags) = read_text(
            "apiVersion: nodenet.io/v1alpha1\nkind: Inventory\nmetadata: {name: a}\nspec:\n  inventory: {nodenet: v1}\n",
        );
        assert!(ok && diags.is_empty(), "{diags:?}");
    }

    #[test]
    fn neither_both_or_a_typo_is_refused_where_it_is() {
        let base = "apiVersion: nodenet.io/v1alpha1\nkind: Inventory\nmetadata: {name: a}\nspec:\n";
        let (ok, diags) = read_text(&format!("{base}  bmcSecrets: reference\n"));
        assert!(!ok && diags[0].code == Code::MissingField);
        let (ok, diags) = read_text(&format!(
            "{base}  files: [a.yaml]\n  inventory: {{nodenet: v1}}\n"
        ));
        assert!(!ok && diags[0].code == Code::InvalidValue);
        let (ok, diags) = read_text(&format!("{base}  file: [a.yaml]\n"));
        assert!(!ok && diags[0].code == Code::UnknownField, "{diags:?}");
        let (ok, diags) = read_text(&format!("{base}  files: [a.yaml]\n  bmcSecrets: vault\n"));
        assert!(!ok && diags[0].message.contains("reference"));
        assert_eq!(diags[0].span.unwrap().line, 6);
    }

    #[test]
    fn external_secrets_name_their_store() {
        let base = "apiVersion: nodenet.io/v1alpha1\nkind: Inventory\nmetadata: {name: a}\nspec:\n  files: [a.yaml]\n";
        let root = parse(
            &format!("{base}  externalSecrets: {{storeRef: {{kind: SecretStore, name: vault}}, key: 'bmc/{{host}}'}}\n"),
            0,
        )
        .unwrap();
        let mut diags = Vec::new();
        let r = read(&root, &mut diags).unwrap();
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(
            r.external_secrets,
            Some((
                "SecretStore/vault".to_string(),
                Some("bmc/{host}".to_string())
            ))
        );
        let (ok, diags) = read_text(&format!("{base}  bmcSecrets: external-secret\n"));
        assert!(!ok && diags[0].message.contains("storeRef"), "{diags:?}");
        let (_, diags) = read_text(&format!(
            "{base}  externalSecrets: {{storeRef: {{kind: Vault, name: v}}}}\n"
        ));
        assert!(diags[0].message.contains("ClusterSecretStore"), "{diags:?}");
    }

    #[test]
    fn another_version_of_the_api_is_refused() {
        let (ok, diags) = read_text(
            "apiVersion: nodenet.io/v2\nkind: Inventory\nmetadata: {name: a}\nspec: {files: [a]}\n",
        );
        assert!(!ok && diags[0].message.contains("nodenet.io/v1alpha1"));
    }
}
