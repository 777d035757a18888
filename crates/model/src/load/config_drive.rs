//! A config drive's files (`openstack/<version>/...`): which host they are
//! of, by the drive's `meta_data.json` or its folder.

use super::*;

/// Whether a path is a config drive's `openstack/<version>/` file.
pub(super) fn in_config_drive(path: &str) -> bool {
    matches!(drive_dirs(path, 2).as_slice(), [v, os] if drive_version(v) && os == "openstack")
}

/// The names of the `n` directories above a file, nearest first.
pub(super) fn drive_dirs(path: &str, n: usize) -> Vec<String> {
    Path::new(path)
        .ancestors()
        .skip(1)
        .take(n)
        .map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect::<Option<_>>()
        .unwrap_or_default()
}

/// A config drive's `openstack/<version>` directory: `latest` or a date.
pub(super) fn drive_version(v: &str) -> bool {
    v == "latest" || v.len() == 10 && v.as_bytes()[4] == b'-'
}

/// The host name a config drive gives beside its `network_data.json`:
/// `meta_data.json`'s `hostname`, which cloud-init sets.
pub(super) fn meta_data_hostname(path: &str) -> Option<String> {
    if !in_config_drive(path) {
        return None;
    }
    let meta = Path::new(path).parent()?.join("meta_data.json");
    let text = std::fs::read_to_string(meta).ok()?;
    let json: serde_json::Value = serde_json::from_str(&text).ok()?;
    let name = json.get("hostname")?.as_str()?;
    (!name.is_empty()).then(|| name.to_string())
}

/// The host a `network_data.json` is named after: its directory, or the
/// directory holding a config drive's `openstack/<version>/` tree.
pub(super) fn config_drive_host(path: &str) -> Option<String> {
    match drive_dirs(path, 3).as_slice() {
        [v, os, host] if drive_version(v) && os == "openstack" => Some(host.clone()),
        _ => parent_dir_name(path),
    }
}

pub(super) fn parent_dir_name(path: &str) -> Option<String> {
    let parent = Path::new(path).parent()?.file_name()?;
    Some(parent.to_string_lossy().into_owned())
}
