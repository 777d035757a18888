//! Whose output directory this is: a render replaces only a directory
//! nodenet wrote, from the same inputs (or the built-in example's),
//! unless forced.

use std::fs;
use std::path::Path;

use super::io_err;
use crate::{Provenance, RenderError};

/// Refuses to replace a directory nodenet did not write (no manifest.json,
/// or for keyfile directories only .nmconnection files) unless it is empty.
pub(super) fn guard_existing(dir: &Path) -> Result<(), RenderError> {
    match fs::read_dir(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_err(dir, e)),
        Ok(mut entries) => {
            let ours =
                |e: &fs::DirEntry| e.file_name().to_string_lossy().ends_with(".nmconnection");
            if dir.join("manifest.json").is_file() || entries.all(|e| e.as_ref().is_ok_and(ours)) {
                Ok(())
            } else {
                Err(RenderError::NotOurs(dir.display().to_string()))
            }
        }
    }
}

/// What a render's manifest.json says it was rendered from.
#[derive(serde::Deserialize)]
struct Recorded {
    source: Option<Provenance>,
}

/// Refuses to replace a tree rendered from other inputs than `now`'s (or
/// whose manifest does not say which) unless `force`. A directory without
/// a manifest is [`guard_existing`]'s business.
pub fn guard_provenance(dir: &Path, now: &Provenance, force: bool) -> Result<(), RenderError> {
    let path = dir.join("manifest.json");
    let text = match fs::read(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_err(&path, e)),
        Ok(t) => t,
    };
    if force {
        return Ok(());
    }
    let recorded = serde_json::from_slice::<Recorded>(&text)
        .ok()
        .and_then(|r| r.source);
    match recorded {
        Some(before) if before.inputs == now.inputs => Ok(()),
        // The quick start's render never stands in the way of the user's own.
        Some(before) if is_builtin_example(&before.inputs) => Ok(()),
        Some(before) => Err(RenderError::OtherInput {
            dir: dir.display().to_string(),
            previous: before.inputs,
            now: now.inputs.clone(),
        }),
        None => Err(RenderError::UnknownInput(dir.display().to_string())),
    }
}

/// The name the built-in example's render records as its input (`nodenet
/// render` with no file, the README's first command).
pub const BUILTIN_EXAMPLE: &str = "<built-in example: examples/lacp-vlan.yaml>";

fn is_builtin_example(inputs: &[String]) -> bool {
    inputs.len() == 1 && inputs[0] == BUILTIN_EXAMPLE
}

/// Whether `dir` holds a render of the built-in example (which a render
/// of the user's own inventory replaces without --force).
pub fn holds_builtin_example(dir: &Path) -> bool {
    fs::read(dir.join("manifest.json"))
        .ok()
        .and_then(|t| serde_json::from_slice::<Recorded>(&t).ok())
        .and_then(|r| r.source)
        .is_some_and(|p| is_builtin_example(&p.inputs))
}
