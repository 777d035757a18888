//! Kubernetes objects as render writes them: the envelope (`apiVersion`,
//! `kind`, `metadata`) and the fixed bodies (a Secret's, a BareMetalHost's
//! spec, a NodeNetworkConfigurationPolicy's and a MachineConfig's spec,
//! an install-config host entry) as types, fields in the order the files
//! have always had; what varies by input (a host's state, root device
//! hints, a Secret's keys, fields passed through as written) stays JSON.
//! install-config.yaml and agent-config.yaml themselves are the user's
//! documents with nodenet's fields set in place (their order kept), so
//! they stay maps.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value as J};

/// One Kubernetes object: its envelope, then its kind's own fields.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Object<'a, B> {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub metadata: Metadata<'a>,
    #[serde(flatten)]
    pub body: B,
}

impl<B: Serialize> Object<'_, B> {
    pub fn to_json(&self) -> J {
        serde_json::to_value(self).expect("an object of strings, maps and JSON serialises")
    }

    pub fn to_yaml(&self) -> String {
        super::yaml(&self.to_json())
    }
}

#[derive(Serialize)]
pub struct Metadata<'a> {
    pub name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<&'a BTreeMap<String, String>>,
}

impl<'a> Metadata<'a> {
    pub fn named(name: &'a str, namespace: Option<&'a str>) -> Self {
        Metadata {
            name,
            namespace,
            labels: None,
        }
    }
}

/// An `Opaque` Secret's fields: its keys in the order given.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SecretBody {
    #[serde(rename = "type")]
    pub secret_type: &'static str,
    pub string_data: Map<String, J>,
}

/// A Secret of `string_data`, in `namespace` when given.
pub fn secret<'a>(
    name: &'a str,
    namespace: Option<&'a str>,
    string_data: Map<String, J>,
) -> Object<'a, SecretBody> {
    Object {
        api_version: "v1",
        kind: "Secret",
        metadata: Metadata::named(name, namespace),
        body: SecretBody {
            secret_type: "Opaque",
            string_data,
        },
    }
}

/// `spec.bmc` of a BareMetalHost.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BmcDetails<'a> {
    pub address: &'a str,
    pub credentials_name: String,
    pub disable_certificate_verification: bool,
}

/// A Secret named by a BareMetalHost (`spec.networkData`).
#[derive(Serialize)]
pub struct SecretRef<'a> {
    pub name: &'a str,
}

/// The BareMetalHost fields nodenet writes (metal3.io/v1alpha1).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BareMetalHostSpec<'a> {
    pub online: bool,
    #[serde(rename = "bootMACAddress", skip_serializing_if = "Option::is_none")]
    pub boot_mac_address: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boot_mode: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bmc: Option<BmcDetails<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root_device_hints: Option<J>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_data: Option<SecretRef<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preprovisioning_network_data_name: Option<&'a str>,
}

#[derive(Serialize)]
pub struct SpecBody<S> {
    pub spec: S,
}

/// A BareMetalHost of `spec`, in `namespace` when given.
pub fn bare_metal_host<'a>(
    name: &'a str,
    namespace: Option<&'a str>,
    spec: BareMetalHostSpec<'a>,
) -> Object<'a, SpecBody<BareMetalHostSpec<'a>>> {
    Object {
        api_version: "metal3.io/v1alpha1",
        kind: "BareMetalHost",
        metadata: Metadata::named(name, namespace),
        body: SpecBody { spec },
    }
}

/// A NodeNetworkConfigurationPolicy's spec (nmstate.io/v1).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NncpSpec<'a> {
    pub node_selector: &'a BTreeMap<String, String>,
    /// An integer or a percentage.
    pub max_unavailable: &'a J,
    pub desired_state: J,
}

/// A MachineConfig's spec (machineconfiguration.openshift.io/v1): an
/// Ignition config, and the OS image that carries what it needs.
#[derive(Serialize)]
pub struct MachineConfigSpec<'a> {
    #[serde(rename = "osImageURL", skip_serializing_if = "Option::is_none")]
    pub os_image_url: Option<&'a str>,
    pub config: J,
}

/// `platform.baremetal.hosts[].bmc` of install-config.yaml.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InstallConfigBmc<'a> {
    pub address: &'a str,
    pub username: &'a str,
    /// A placeholder: filled in with `envsubst`, never written.
    pub password: J,
    pub disable_certificate_verification: bool,
}

/// One entry of install-config.yaml's `platform.baremetal.hosts`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InstallConfigHost<'a> {
    pub name: &'a str,
    pub role: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bmc: Option<InstallConfigBmc<'a>>,
    #[serde(rename = "bootMACAddress", skip_serializing_if = "Option::is_none")]
    pub boot_mac_address: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boot_mode: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root_device_hints: Option<J>,
    /// The host's own install-config fields, as written.
    #[serde(flatten)]
    pub extra: Map<String, J>,
    /// The embedding token of the host's state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_config: Option<&'a str>,
}
