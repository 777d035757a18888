//! The short way for the commonest day-2 change: new virtual interfaces
//! (a VLAN, a dummy) and nothing else.
//!
//! nmstate's apply reads the whole state again and queries every
//! NetworkManager profile before it changes anything (2–3 s in the lab's
//! emulated VM). A new VLAN needs none of that: its profile is exactly
//! what nmstate's `gen_conf` writes for it, nothing existing changes, and
//! NetworkManager's own checkpoint (nmstate's flags) deletes the new
//! profile and device again on rollback or timeout. So: checkpoint, write
//! the keyfiles, `LoadConnections`, `ActivateConnection`. Anything else (a
//! changed interface, routes, DNS, ports) goes through nmstate, which
//! merges it with what is there.

use std::path::{Path, PathBuf};

use nmstate::NetworkState;
use serde_json::Value;

use nodenet_import::diff::route_matches;

use crate::dbus::{self, dbus};
use crate::AgentError;

/// Types a change may add this way: virtual, no ports.
const NEW_KINDS: &[&str] = &["vlan", "dummy"];

/// nmstate's flags (NetworkManager 1.42): on rollback, delete the
/// connections and disconnect the devices that are new since the
/// checkpoint.
const CHECKPOINT_FLAGS: u32 = 0x02 | 0x04;

const PERSISTENT: &str = "/etc/NetworkManager/system-connections";
/// NetworkManager keeps profiles found here in memory only.
const IN_MEMORY: &str = "/run/NetworkManager/system-connections";

/// The keyfiles (file name, content) for `change` when all it does is add
/// VLANs/dummies that do not exist yet, on interfaces that do; else why
/// it needs nmstate.
pub(crate) fn new_interfaces_only(
    change: &NetworkState,
    current: &NetworkState,
) -> Result<Vec<(String, String)>, String> {
    let change_json = serde_json::to_value(change).map_err(|e| e.to_string())?;
    let current_json = serde_json::to_value(current).map_err(|e| e.to_string())?;
    let exists = |name: &str| {
        current_json["interfaces"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|i| i["name"] == name)
    };
    for (key, value) in change_json.as_object().into_iter().flatten() {
        if key != "interfaces" && !is_empty(value) && !already_there(key, value, &current_json) {
            let mut text: String = value.to_string().chars().take(200).collect();
            if text.len() < value.to_string().len() {
                text.push('…');
            }
            return Err(format!("the change has `{key}`: {text}"));
        }
    }
    let ifaces = change_json["interfaces"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if ifaces.is_empty() {
        return Err("no interface to add".into());
    }
    for i in &ifaces {
        let name = i["name"].as_str().unwrap_or_default();
        let kind = i["type"].as_str().unwrap_or_default();
        if !NEW_KINDS.contains(&kind) {
            return Err(format!("{name} is a {kind}"));
        }
        if exists(name) {
            return Err(format!("{name} exists"));
        }
        if !matches!(i["state"].as_str(), None | Some("up")) {
            return Err(format!("{name} is not to be up"));
        }
        if let Some(base) = i["vlan"]["base-iface"].as_str() {
            if !exists(base) {
                return Err(format!("{name}'s base {base} does not exist yet"));
            }
        }
    }
    // The new interfaces alone: the rest of the change is already there.
    let new_only: NetworkState =
        serde_json::from_value(serde_json::json!({ "interfaces": ifaces }))
            .map_err(|e| e.to_string())?;
    let mut confs = new_only.gen_conf().map_err(|e| e.msg().to_string())?;
    let keyfiles = confs.remove("NetworkManager").unwrap_or_default();
    // A profile file of that name already there (inactive, or another
    // tool's) would be overwritten, and a checkpoint cannot bring a file's
    // old text back: let nmstate deal with it.
    for (file, _) in &keyfiles {
        for dir in [PERSISTENT, IN_MEMORY] {
            if Path::new(dir).join(file).exists() {
                return Err(format!("{dir}/{file} exists"));
            }
        }
    }
    Ok(keyfiles)
}

/// Sections nmstate's `gen_diff` reports although the current state has
/// them: routes that differ only in fields the desired state leaves out
/// (metric, table), the same name servers.
fn already_there(key: &str, value: &Value, current: &Value) -> bool {
    let Some(section) = value.as_object() else {
        return false;
    };
    let only_config = section.iter().all(|(k, v)| k == "config" || is_empty(v));
    let have = &current[key]["config"];
    only_config
        && match key {
            "routes" => value["config"].as_array().is_some_and(|routes| {
                routes.iter().all(|r| {
                    r["state"] != "absent"
                        && have
                            .as_array()
                            .is_some_and(|h| h.iter().any(|c| route_matches(r, c)))
                })
            }),
            "dns-resolver" => value["config"].as_object().is_some_and(|wanted| {
                wanted
                    .iter()
                    .all(|(k, v)| have[k] == *v || (is_empty(v) && is_empty(&have[k])))
            }),
            _ => false,
        }
}

/// Null, or containers of nothing but empty values.
pub(crate) fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.iter().all(is_empty),
        Value::Object(m) => m.values().all(is_empty),
        _ => false,
    }
}

fn uuid_of(keyfile: &str) -> Option<&str> {
    keyfile.lines().find_map(|l| l.strip_prefix("uuid="))
}

/// Checkpoint (rolled back by NetworkManager after `timeout` s unless
/// committed), profiles written and loaded, activated. On an error after
/// the checkpoint exists, rolls it back before returning.
pub(crate) fn apply(
    keyfiles: &[(String, String)],
    timeout: u32,
    ephemeral: bool,
) -> Result<(), AgentError> {
    let dir = Path::new(if ephemeral { IN_MEMORY } else { PERSISTENT });
    dbus::with_nm(async |nm| {
        let all_devices: Vec<zvariant::ObjectPath> = Vec::new();
        let checkpoint: zvariant::OwnedObjectPath = nm
            .manager
            .call(
                "CheckpointCreate",
                &(all_devices, timeout, CHECKPOINT_FLAGS),
            )
            .await
            .map_err(dbus)?;
        log::info!("created checkpoint {}", checkpoint.as_str());
        let result = load_and_activate(nm, dir, keyfiles).await;
        if result.is_err() {
            log::warn!("rolling back {}", checkpoint.as_str());
            let _: std::collections::HashMap<String, u32> = nm
                .manager
                .call("CheckpointRollback", &(&checkpoint,))
                .await
                .map_err(dbus)?;
        }
        result
    })
}

async fn load_and_activate(
    nm: &dbus::Nm,
    dir: &Path,
    keyfiles: &[(String, String)],
) -> Result<(), AgentError> {
    let io =
        |path: &Path, e: std::io::Error| AgentError::Nmstate(format!("{}: {e}", path.display()));
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let mut paths: Vec<PathBuf> = Vec::new();
    for (name, content) in keyfiles {
        let path = dir.join(name);
        nodenet_model::write_atomic(&path, content.as_bytes()).map_err(|e| io(&path, e))?;
        paths.push(path);
    }
    let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let (_, failures): (bool, Vec<String>) = nm
        .settings
        .call("LoadConnections", &(names,))
        .await
        .map_err(dbus)?;
    if !failures.is_empty() {
        return Err(AgentError::Nmstate(format!(
            "NetworkManager did not load {}",
            failures.join(", ")
        )));
    }
    for (name, content) in keyfiles {
        let uuid =
            uuid_of(content).ok_or_else(|| AgentError::Nmstate(format!("{name} has no uuid")))?;
        let conn: zvariant::OwnedObjectPath = nm
            .settings
            .call("GetConnectionByUuid", &(uuid,))
            .await
            .map_err(dbus)?;
        log::info!("activating {name} ({uuid})");
        dbus::activate(nm, &conn).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(yaml: &str) -> NetworkState {
        serde_yaml::from_str(yaml).unwrap()
    }

    const CURRENT: &str = "interfaces:
- {name: eth0, type: ethernet, state: up}
- {name: bond0, type: bond, state: up, link-aggregation: {mode: active-backup, port: [eth0]}}
";

    #[test]
    fn a_new_vlan_on_an_existing_bond_is_added_directly() {
        let change = state(
            "interfaces:
- {name: bond0.130, type: vlan, state: up, vlan: {base-iface: bond0, id: 130}, ipv4: {enabled: true, address: [{ip: 192.0.2.1, prefix-length: 24}]}}
",
        );
        let files = new_interfaces_only(&change, &state(CURRENT)).unwrap();
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].0, "bond0.130.nmconnection");
        assert!(files[0].1.contains("[vlan]") && files[0].1.contains("id=130"));
        assert!(uuid_of(&files[0].1).is_some());
    }

    #[test]
    fn routes_and_name_servers_already_in_place_are_no_change() {
        let current = state(&format!(
            "{CURRENT}routes: {{config: [{{destination: 0.0.0.0/0, next-hop-address: 192.0.2.254, next-hop-interface: bond0, metric: 425, table-id: 254}}]}}
dns-resolver: {{config: {{server: [192.0.2.53], search: []}}}}
"
        ));
        let change = state(
            "interfaces:
- {name: d0, type: dummy}
routes: {config: [{destination: 0.0.0.0/0, next-hop-address: 192.0.2.254, next-hop-interface: bond0}]}
dns-resolver: {config: {server: [192.0.2.53]}}
",
        );
        if let Err(e) = new_interfaces_only(&change, &current) {
            panic!("{e}");
        }
        let other_gateway = state(
            "interfaces:
- {name: d0, type: dummy}
routes: {config: [{destination: 0.0.0.0/0, next-hop-address: 192.0.2.1, next-hop-interface: bond0}]}
",
        );
        let err = new_interfaces_only(&other_gateway, &current).unwrap_err();
        assert!(err.contains("the change has `routes`"), "{err}");
        let other_server = state(
            "interfaces:
- {name: d0, type: dummy}
dns-resolver: {config: {server: [192.0.2.54]}}
",
        );
        let err = new_interfaces_only(&other_server, &current).unwrap_err();
        assert!(err.contains("the change has `dns-resolver`"), "{err}");
    }

    #[test]
    fn anything_else_goes_through_nmstate() {
        let current = state(CURRENT);
        for (change, why) in [
            ("interfaces:\n- {name: bond0.9, type: vlan, vlan: {base-iface: bond1, id: 9}}\n", "base bond1 does not exist"),
            ("interfaces:\n- {name: eth0, type: ethernet, mtu: 9000}\n", "eth0 is a ethernet"),
            ("interfaces:\n- {name: bond0, type: vlan, vlan: {base-iface: eth0, id: 9}}\n", "bond0 exists"),
            ("interfaces:\n- {name: d0, type: dummy, state: absent}\n", "d0 is not to be up"),
            ("interfaces:\n- {name: d0, type: dummy}\ndns-resolver: {config: {server: [192.0.2.53]}}\n", "the change has `dns-resolver`"),
            ("routes: {config: [{destination: 0.0.0.0/0, next-hop-address: 192.0.2.254, next-hop-interface: bond0}]}\n", "the change has `routes`"),
        ] {
            let err = new_interfaces_only(&state(change), &current).unwrap_err();
            assert!(err.contains(why), "{change}: {err}");
        }
    }
}
