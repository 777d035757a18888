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
//! merges it with what is there. Whether a change is of this kind is
//! decided by [`quick_look`] (without nmstate's full read, the other
//! 1.6–2.4 s), else after that read by [`new_interfaces_only`].

use std::path::{Path, PathBuf};

use nmstate::NetworkState;
use serde_json::Value;

use nodenet_import::diff::route_matches;

use crate::dbus::{self, dbus};
use crate::AgentError;

/// The names of `state`'s interfaces.
fn iface_names(state: &Value) -> impl Iterator<Item = &str> {
    state["interfaces"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["name"].as_str())
}

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
    let exists = |name: &str| iface_names(&current_json).any(|n| n == name);
    for (key, value) in change_json.as_object().into_iter().flatten() {
        if key != "interfaces" && !is_empty(value) {
            let full = value.to_string();
            let mut text: String = full.chars().take(200).collect();
            if text.len() < full.len() {
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
        addable(i, exists)?;
        if exists(name) {
            return Err(format!("{name} exists"));
        }
    }
    keyfiles_for(&ifaces)
}

/// Whether `iface` is of a kind the direct way adds, is to be up, and
/// (a VLAN) has a base that exists.
fn addable(iface: &Value, exists: impl Fn(&str) -> bool) -> Result<(), String> {
    let name = iface["name"].as_str().unwrap_or_default();
    let kind = iface["type"].as_str().unwrap_or_default();
    if !NEW_KINDS.contains(&kind) {
        return Err(format!("{name} is a {kind}"));
    }
    if !matches!(iface["state"].as_str(), None | Some("up")) {
        return Err(format!("{name} is not to be up"));
    }
    match iface["vlan"]["base-iface"].as_str() {
        Some(base) if !exists(base) => Err(format!("{name}'s base {base} does not exist")),
        _ => Ok(()),
    }
}

/// The profiles nmstate's `gen_conf` makes for `ifaces` (new ones, whose
/// keyfiles must not exist yet).
fn keyfiles_for(ifaces: &[Value]) -> Result<Vec<(String, String)>, String> {
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

/// Where NetworkManager's keyfile plugin reads profiles.
const PROFILE_DIRS: &[&str] = &[
    PERSISTENT,
    IN_MEMORY,
    "/usr/lib/NetworkManager/system-connections",
];

/// What the quick look found: the new interfaces' profiles, and the
/// interfaces up now (for a restore).
pub(crate) struct QuickLook {
    pub keyfiles: Vec<(String, String)>,
    pub up: Vec<String>,
}

/// Whether `desired` only adds VLANs/dummies, decided without nmstate's
/// full read (NetworkManager's every device and profile over D-Bus plus a
/// netlink dump: 1.6–2.4 s in the lab's emulated VM). It looks at what
/// that read is made of, more cheaply: the profiles where NetworkManager
/// keeps them (/etc, /run, /usr/lib; read by nodenet's importer, and any
/// setting it does not map makes the look fail), the kernel (one nispor
/// dump) and, when `desired` names name servers, NetworkManager's global
/// DNS (one property). Every interface but the new ones must be as desired
/// both in its profile (nmstate's `gen_diff`) and in the kernel (`diff
/// --live`). Anything in doubt is an error: the caller falls back to the
/// full read.
pub(crate) fn quick_look(desired: &Value) -> Result<QuickLook, String> {
    // Without a desired interface the kernel lacks, there is nothing to
    // look for (one directory read instead of the look's ~0.8 s).
    let absent_from_kernel =
        iface_names(desired).any(|name| !Path::new("/sys/class/net").join(name).exists());
    if !absent_from_kernel {
        return Err("no new interface".into());
    }
    let mut paths = Vec::new();
    for dir in PROFILE_DIRS.iter().map(Path::new).filter(|d| d.is_dir()) {
        match nodenet_import::keyfile_paths(dir) {
            Ok(p) => paths.extend(p),
            Err(nodenet_import::ImportError::Empty(_)) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    let mut files = Vec::new();
    for path in paths {
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        if let Ok(kf) = nodenet_import::keyfile::parse("", &bytes, 0) {
            if nm_generated_elsewhere(&kf, desired).map_err(|notes| {
                format!(
                    "{} carries NetworkManager's notes ({notes})",
                    path.display()
                )
            })? {
                continue;
            }
        }
        files.push((path, bytes));
    }
    let profiles = nodenet_import::import_bytes(files, false);
    if let Some(d) = profiles.diagnostics.first() {
        return Err(format!("a profile is not fully understood ({})", d.message));
    }
    let live = nodenet_import::live::current_state().map_err(|e| e.to_string())?;
    let global_dns =
        || dbus::with_nm(async |nm| dbus::GlobalDns::read(nm).await).map_err(|e| e.to_string());
    decide(desired, &profiles.state, &live, global_dns)
}

/// NetworkManager's own notes in a profile (under /run): a profile it
/// generated for a device it found configured (loopback) is not the
/// desired state's business unless the state names its interface (true:
/// leave it out); any other note (a profile shadowing another) means the
/// profile files do not say what NetworkManager holds (the notes, as the
/// error). No notes: false.
fn nm_generated_elsewhere(kf: &nodenet_import::Keyfile, desired: &Value) -> Result<bool, String> {
    let Some(notes) = kf.group(".nmmeta") else {
        return Ok(false);
    };
    let generated = notes
        .get("nm-generated")
        .is_some_and(|e| e.value() == "true");
    let iface = kf.get("connection", "interface-name").map(|e| e.value());
    let named = iface.is_some_and(|iface| iface_names(desired).any(|n| n == iface));
    if generated && !named {
        return Ok(true);
    }
    Err(notes
        .entries
        .iter()
        .map(|e| format!("{}={}", e.key, e.value()))
        .collect::<Vec<_>>()
        .join(", "))
}

/// The quick look's verdict on `desired` given the profiles' state, the
/// kernel's, and (asked only when `desired` names name servers)
/// NetworkManager's global DNS.
fn decide(
    desired: &Value,
    profiles: &Value,
    live: &Value,
    global_dns: impl FnOnce() -> Result<dbus::GlobalDns, String>,
) -> Result<QuickLook, String> {
    let configured: Vec<&str> = iface_names(profiles).collect();
    let running: Vec<&str> = iface_names(live).collect();
    let ifaces = desired["interfaces"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let (new, known): (Vec<Value>, Vec<Value>) = ifaces.into_iter().partition(|i| {
        let name = i["name"].as_str().unwrap_or_default();
        !configured.contains(&name) && !running.contains(&name)
    });
    if new.is_empty() {
        return Err("no new interface".into());
    }
    for i in &new {
        addable(i, |base| running.contains(&base))?;
    }
    // Everything else: as desired in the profiles and in the kernel.
    let mut rest = desired.clone();
    rest["interfaces"] = Value::Array(known);
    let dns = rest
        .as_object_mut()
        .and_then(|m| m.remove("dns-resolver"))
        .unwrap_or(Value::Null);
    let rest_state: NetworkState =
        serde_json::from_value(rest.clone()).map_err(|e| e.to_string())?;
    let current: NetworkState =
        serde_json::from_value(profiles.clone()).map_err(|e| e.to_string())?;
    let change = rest_state
        .gen_diff(&current)
        .map_err(|e| e.msg().to_string())?;
    if let Some(left) = without_what_is_there(&change, &current)? {
        let left = serde_json::to_value(&left).map_err(|e| e.to_string())?;
        let sections: Vec<&str> = left
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(_, v)| !is_empty(v))
            .map(|(k, _)| k.as_str())
            .collect();
        return Err(format!(
            "the profiles differ in `{}`",
            sections.join("`, `")
        ));
    }
    let in_kernel =
        nodenet_import::diff::diff_with(&rest, live, nodenet_import::diff::Actual::Live)
            .map_err(|e| e.to_string())?;
    if !in_kernel.equal {
        return Err(format!(
            "the kernel differs: {}",
            nodenet_import::diff::render_text(&in_kernel).trim()
        ));
    }
    if !is_empty(&dns["config"]) && !dns_is(&global_dns()?, &dns["config"]) {
        return Err("the name servers differ".into());
    }
    let up = live["interfaces"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["state"] == "up")
        .filter_map(|i| i["name"].as_str().map(str::to_string))
        .collect();
    Ok(QuickLook {
        keyfiles: keyfiles_for(&new)?,
        up,
    })
}

/// Whether NetworkManager's global DNS (where nmstate puts name servers)
/// is exactly `config`'s servers and search list.
fn dns_is(global: &dbus::GlobalDns, config: &Value) -> bool {
    let list = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(str::to_string))
            .collect()
    };
    let servers = global
        .domains
        .get("*")
        .map(|d| d.servers.clone())
        .unwrap_or_default();
    servers == list(&config["server"]) && global.searches == list(&config["search"])
}

/// `change` (nmstate's `gen_diff`) without the sections `current` already
/// has; `None` when nothing is left. Sent as they are, re-listed routes
/// make nmstate re-activate the interface carrying them.
pub(crate) fn without_what_is_there(
    change: &NetworkState,
    current: &NetworkState,
) -> Result<Option<NetworkState>, String> {
    let mut json = serde_json::to_value(change).map_err(|e| e.to_string())?;
    let current = serde_json::to_value(current).map_err(|e| e.to_string())?;
    if let Some(sections) = json.as_object_mut() {
        sections.retain(|key, value| key == "interfaces" || !already_there(key, value, &current));
    }
    if is_empty(&json) {
        return Ok(None);
    }
    serde_json::from_value(json)
        .map(Some)
        .map_err(|e| e.to_string())
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
        let mut written = Vec::new();
        let result = load_and_activate(nm, dir, keyfiles, &mut written).await;
        if result.is_err() {
            log::warn!("rolling back {}", checkpoint.as_str());
            let _: std::collections::HashMap<String, u32> = nm
                .manager
                .call("CheckpointRollback", &(&checkpoint,))
                .await
                .map_err(dbus)?;
            // The rollback deletes the profiles NetworkManager loaded;
            // one it did not load is still only our file.
            for path in written.iter().filter(|p| p.exists()) {
                let _ = std::fs::remove_file(path);
            }
        }
        result
    })
}

/// Writes the keyfiles into `dir` (each one's path into `paths` once
/// written), has NetworkManager load them and activates them.
async fn load_and_activate(
    nm: &dbus::Nm,
    dir: &Path,
    keyfiles: &[(String, String)],
    paths: &mut Vec<PathBuf>,
) -> Result<(), AgentError> {
    let io =
        |path: &Path, e: std::io::Error| AgentError::Nmstate(format!("{}: {e}", path.display()));
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
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
mod tests;
