//! The scale-out manifests: a BareMetalHost per host and the Secret of
//! its BMC credentials (a placeholder, the password, or a reference).

use super::*;
pub use nodenet_model::names::dns_label;

/// A BMC login as the BMC Secrets carry it.
pub struct BmcLogin {
    pub username: String,
    /// The clear password, when its source is available.
    pub password: Option<Secret>,
    /// The `${VAR}` written in its place when it is not (as in
    /// install-config.yaml), to fill with `envsubst`.
    pub var: String,
}

/// The BMC login per credentials name.
pub type Passwords = BTreeMap<String, BmcLogin>;

/// Reads every password once (not once per host), only when asked to
/// embed them. One not read, not available (check warns of it) or empty
/// is written as its `${VAR}` placeholder.
pub fn resolve_passwords(inv: &Inventory, how: crate::BmcSecrets) -> Passwords {
    if matches!(
        how,
        crate::BmcSecrets::Reference | crate::BmcSecrets::ExternalSecret
    ) {
        // Secrets made elsewhere (by the operator, from its
        // ExternalSecrets): none written, none read.
        return Passwords::new();
    }
    inv.credentials
        .iter()
        .map(|(name, cred)| {
            let login = BmcLogin {
                username: cred.value.username.clone(),
                password: (how == crate::BmcSecrets::Embed)
                    .then(|| cred.value.resolve_password())
                    .flatten()
                    .filter(|p| !p.expose().is_empty()),
                var: password_var(name, Some(&cred.value)),
            };
            (name.clone(), login)
        })
        .collect()
}

/// Scale-out, one file per host to `oc apply`: the network Secret
/// `<host>-network-config-secret` (key `nmstate`), the BMC Secret
/// `<host>-bmc-secret` and the BareMetalHost. The file is 0600 when it
/// holds the BMC password, the only place a password is ever written;
/// a password that is not available is a `${VAR}` placeholder.
pub fn scale_out(
    host: &Host,
    text: Option<&String>,
    passwords: &Passwords,
    out: &mut Vec<OutFile>,
) {
    let name = &host.name.value;
    let mut docs = Vec::new();
    let net_secret = format!("{name}-network-config-secret");
    if let Some(state) = text {
        let mut data = Map::new();
        data.insert("nmstate".into(), json!(TOKEN));
        let envelope = kube::secret(&net_secret, Some(NAMESPACE), data).to_yaml();
        docs.push(embed(&envelope, state, Embed::Literal));
    }
    let mut spec = baremetal_host_spec(host);
    let mut mode = 0o644;
    if let Some(bmc) = &host.bmc {
        let secret = bmc_secret_name(host);
        if let Some(login) = bmc
            .credentials
            .as_ref()
            .and_then(|c| passwords.get(&c.value))
        {
            let mut data = Map::new();
            data.insert("username".into(), json!(login.username));
            match &login.password {
                Some(p) => {
                    data.insert("password".into(), json!(p.expose()));
                    mode = 0o600;
                }
                None => {
                    data.insert("password".into(), placeholder(&login.var));
                }
            }
            docs.push(placeholders(
                &kube::secret(&secret, Some(NAMESPACE), data).to_yaml(),
            ));
        }
    }
    if text.is_some() {
        spec.preprovisioning_network_data_name = Some(&net_secret);
    }
    docs.push(kube::bare_metal_host(name, Some(NAMESPACE), spec).to_yaml());
    out.push(OutFile::new(
        format!("scale-out/{name}.yaml"),
        docs.join("---\n"),
        mode,
    ));
}

/// The BMC Secret a host's BareMetalHost names (`credentialsName`).
pub fn bmc_secret_name(host: &Host) -> String {
    format!("{}-bmc-secret", host.name.value)
}

/// A BareMetalHost's `spec` for a host, less its network: online, boot
/// MAC and mode, BMC (credentials in [`bmc_secret_name`]), root device.
pub fn baremetal_host_spec(host: &Host) -> kube::BareMetalHostSpec<'_> {
    kube::BareMetalHostSpec {
        online: true,
        boot_mac_address: host.boot_mac.as_ref().map(|m| m.value.as_str()),
        boot_mode: host.boot_mode.as_ref().map(|m| m.value.as_str()),
        bmc: host.bmc.as_ref().map(|bmc| kube::BmcDetails {
            address: &bmc.address.value,
            credentials_name: bmc_secret_name(host),
            disable_certificate_verification: bmc.disable_certificate_verification,
        }),
        root_device_hints: host.root_device_hints.as_ref().map(|h| h.to_json()),
        network_data: None,
        preprovisioning_network_data_name: None,
    }
}
