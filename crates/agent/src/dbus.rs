//! The few NetworkManager D-Bus calls nodenet makes itself, where a full
//! nmstate round (read everything, checkpoint, verify) costs seconds of a
//! slow node's time for nothing.

use std::collections::{BTreeMap, HashMap};

use crate::AgentError;

pub(crate) const NM: &str = "org.freedesktop.NetworkManager";

/// NetworkManager's manager and settings objects on the system bus.
pub(crate) struct Nm {
    pub bus: zbus::Connection,
    pub manager: zbus::Proxy<'static>,
    pub settings: zbus::Proxy<'static>,
}

impl Nm {
    pub async fn proxy(
        &self,
        path: String,
        iface: &'static str,
    ) -> Result<zbus::Proxy<'static>, AgentError> {
        zbus::Proxy::new(&self.bus, NM, path, iface)
            .await
            .map_err(dbus)
    }
}

/// NetworkManager's open checkpoints.
pub(crate) async fn checkpoints(nm: &Nm) -> Result<Vec<String>, AgentError> {
    let paths: Vec<zvariant::OwnedObjectPath> =
        nm.manager.get_property("Checkpoints").await.map_err(dbus)?;
    Ok(paths.into_iter().map(|p| p.as_str().to_string()).collect())
}

/// Rolls back the checkpoint at `path`.
pub(crate) async fn rollback_checkpoint(nm: &Nm, path: &str) -> Result<(), AgentError> {
    let path = zvariant::ObjectPath::try_from(path)
        .map_err(|e| AgentError::Nmstate(format!("checkpoint {path}: {e}")))?;
    let _: HashMap<String, u32> = nm
        .manager
        .call("CheckpointRollback", &(&path,))
        .await
        .map_err(dbus)?;
    Ok(())
}

pub(crate) fn dbus(e: zbus::Error) -> AgentError {
    AgentError::Nmstate(format!("D-Bus: {e}"))
}

/// Whether NetworkManager answers on the system bus: the bus is there and
/// NetworkManager owns its name. `Err` says why not, for
/// [`AgentError::NoNetworkManager`].
pub(crate) fn reachable() -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(async {
        let bus = zbus::Connection::system()
            .await
            .map_err(|e| format!("no system bus ({e})"))?;
        let reply = bus
            .call_method(
                Some("org.freedesktop.DBus"),
                "/org/freedesktop/DBus",
                Some("org.freedesktop.DBus"),
                "NameHasOwner",
                &(NM,),
            )
            .await
            .map_err(|e| format!("the system bus does not answer ({e})"))?;
        match reply.body().deserialize::<bool>() {
            Ok(true) => Ok(()),
            Ok(false) => Err(format!("{NM} is not on the system bus")),
            Err(e) => Err(format!("the system bus does not answer ({e})")),
        }
    })
}

/// Runs `work` against NetworkManager on a one-thread runtime.
pub(crate) fn with_nm<T>(
    work: impl AsyncFnOnce(&Nm) -> Result<T, AgentError>,
) -> Result<T, AgentError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| AgentError::Nmstate(e.to_string()))?;
    rt.block_on(async {
        let bus = zbus::Connection::system().await.map_err(dbus)?;
        let manager = zbus::Proxy::new(&bus, NM, "/org/freedesktop/NetworkManager", NM)
            .await
            .map_err(dbus)?;
        let settings = zbus::Proxy::new(
            &bus,
            NM,
            "/org/freedesktop/NetworkManager/Settings",
            "org.freedesktop.NetworkManager.Settings",
        )
        .await
        .map_err(dbus)?;
        work(&Nm {
            bus,
            manager,
            settings,
        })
        .await
    })
}

/// Activates the profile at `path` on whatever device it names.
pub(crate) async fn activate(nm: &Nm, path: &zvariant::ObjectPath<'_>) -> Result<(), AgentError> {
    let root = zvariant::ObjectPath::try_from("/").expect("valid object path");
    let _active: zvariant::OwnedObjectPath = nm
        .manager
        .call("ActivateConnection", &(path, &root, &root))
        .await
        .map_err(dbus)?;
    Ok(())
}

/// NetworkManager's global DNS configuration (`GlobalDnsConfiguration`),
/// where nmstate 2.2 puts name servers. NetworkManager 1.42's checkpoints
/// do not cover it (1.48 added a flag for that), so an apply that changes
/// DNS saves it and a rollback writes it back.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GlobalDns {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub searches: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
    /// Per domain (`*` for all): servers and options.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub domains: BTreeMap<String, DomainDns>,
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DomainDns {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
}

type Dict = HashMap<String, zvariant::OwnedValue>;

fn strings(dict: &Dict, key: &str) -> Vec<String> {
    dict.get(key)
        .and_then(|v| v.try_clone().ok())
        .and_then(|v| Vec::<String>::try_from(v).ok())
        .unwrap_or_default()
}

/// An `a{sv}` of the non-empty string lists among `fields`.
fn string_lists(
    fields: &[(&str, &Vec<String>)],
) -> Result<zvariant::Dict<'static, 'static>, AgentError> {
    let mut dict = zvariant::Dict::new(&zvariant::Signature::Str, &zvariant::Signature::Variant);
    for (key, list) in fields.iter().filter(|(_, l)| !l.is_empty()) {
        dict.append(
            zvariant::Value::new(key.to_string()),
            zvariant::Value::new(zvariant::Value::new((*list).clone())),
        )
        .map_err(|e| AgentError::Nmstate(format!("D-Bus: {e}")))?;
    }
    Ok(dict)
}

impl GlobalDns {
    pub async fn read(nm: &Nm) -> Result<GlobalDns, AgentError> {
        let dict: Dict = nm
            .manager
            .get_property("GlobalDnsConfiguration")
            .await
            .map_err(dbus)?;
        Ok(GlobalDns::from_dict(&dict))
    }

    pub async fn write(&self, nm: &Nm) -> Result<(), AgentError> {
        nm.manager
            .set_property(
                "GlobalDnsConfiguration",
                zvariant::Value::Dict(self.to_dict()?),
            )
            .await
            .map_err(|e| AgentError::Nmstate(format!("D-Bus: setting GlobalDnsConfiguration: {e}")))
    }

    fn from_dict(dict: &Dict) -> GlobalDns {
        let domains: HashMap<String, Dict> = dict
            .get("domains")
            .and_then(|v| v.try_clone().ok())
            .and_then(|v| HashMap::try_from(v).ok())
            .unwrap_or_default();
        GlobalDns {
            searches: strings(dict, "searches"),
            options: strings(dict, "options"),
            domains: domains
                .into_iter()
                .map(|(domain, d)| {
                    let conf = DomainDns {
                        servers: strings(&d, "servers"),
                        options: strings(&d, "options"),
                    };
                    (domain, conf)
                })
                .collect(),
        }
    }

    /// The `a{sv}` NetworkManager takes (as nmstate builds it).
    fn to_dict(&self) -> Result<zvariant::Dict<'static, 'static>, AgentError> {
        let mut dict = string_lists(&[("searches", &self.searches), ("options", &self.options)])?;
        if !self.domains.is_empty() {
            let mut domains =
                zvariant::Dict::new(&zvariant::Signature::Str, &zvariant::Signature::Variant);
            for (domain, conf) in &self.domains {
                let inner =
                    string_lists(&[("servers", &conf.servers), ("options", &conf.options)])?;
                domains
                    .append(
                        zvariant::Value::new(domain.clone()),
                        zvariant::Value::new(zvariant::Value::Dict(inner)),
                    )
                    .map_err(|e| AgentError::Nmstate(format!("D-Bus: {e}")))?;
            }
            dict.append(
                zvariant::Value::new("domains".to_string()),
                zvariant::Value::new(zvariant::Value::Dict(domains)),
            )
            .map_err(|e| AgentError::Nmstate(format!("D-Bus: {e}")))?;
        }
        Ok(dict)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What goes to NetworkManager reads back the same (as the property
    /// does after a write): the restore compares and writes this way.
    #[test]
    fn global_dns_survives_the_dbus_encoding() {
        let mut domains = BTreeMap::new();
        domains.insert(
            "*".to_string(),
            DomainDns {
                servers: vec!["192.0.2.53".into(), "2001:db8::53".into()],
                options: vec![],
            },
        );
        domains.insert(
            "lab.example".to_string(),
            DomainDns {
                servers: vec!["192.0.2.54".into()],
                options: vec!["rotate".into()],
            },
        );
        for dns in [
            GlobalDns::default(),
            GlobalDns {
                searches: vec!["example.com".into()],
                options: vec!["timeout:2".into()],
                domains,
            },
        ] {
            let value = zvariant::Value::Dict(dns.to_dict().unwrap());
            assert_eq!(value.value_signature().to_string(), "a{sv}");
            let owned = zvariant::OwnedValue::try_from(value).unwrap();
            let dict = Dict::try_from(owned).unwrap();
            assert_eq!(GlobalDns::from_dict(&dict), dns);
        }
    }
}
