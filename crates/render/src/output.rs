//! Writing a set of files atomically: everything goes into a temporary
//! directory beside the target, which then replaces the target in one
//! rename. A failed or killed run leaves the old output untouched.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::RenderError;

/// One file to write, relative to the output directory.
pub struct OutFile {
    pub path: String,
    pub content: Vec<u8>,
    pub mode: u32,
}

impl OutFile {
    pub fn new(path: impl Into<String>, content: impl Into<Vec<u8>>, mode: u32) -> Self {
        OutFile {
            path: path.into(),
            content: content.into(),
            mode,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct ManifestEntry {
    pub path: String,
    pub sha256: String,
    pub mode: String,
    pub size: usize,
}

fn io_err(path: &Path, source: std::io::Error) -> RenderError {
    RenderError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Writes `files` (plus, with `manifest`, `manifest.json` listing every
/// file with its sha256) as the new content of `dir`.
pub fn write_tree(
    dir: &Path,
    mut files: Vec<OutFile>,
    manifest: bool,
) -> Result<Vec<ManifestEntry>, RenderError> {
    files.sort_by(|a, b| a.path.cmp(&b.path));
    if let Some(w) = files.windows(2).find(|w| w[0].path == w[1].path) {
        return Err(RenderError::Conflict(w[0].path.clone()));
    }
    guard_existing(dir)?;
    umask();
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&parent).map_err(|e| io_err(&parent, e))?;
    let base = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".{base}.nodenet-"))
        .tempdir_in(&parent)
        .map_err(|e| io_err(&parent, e))?;
    let root = tmp.path();

    // Directories first (sequential, shallow), then files in parallel.
    let mut dirs: Vec<&str> = files
        .iter()
        .filter_map(|f| f.path.rsplit_once('/').map(|(d, _)| d))
        .collect();
    dirs.dedup();
    for d in dirs {
        let p = root.join(d);
        fs::create_dir_all(&p).map_err(|e| io_err(&p, e))?;
    }
    let mut entries: Vec<ManifestEntry> = files
        .par_iter()
        .map(|f| {
            let p = root.join(&f.path);
            write_file(&p, &f.content, f.mode)?;
            Ok(ManifestEntry {
                path: f.path.clone(),
                sha256: nodenet_model::hex(&Sha256::digest(&f.content)),
                mode: format!("{:04o}", f.mode),
                size: f.content.len(),
            })
        })
        .collect::<Result<_, RenderError>>()?;
    entries.sort_by(|a, b| a.path.cmp(&b.path));
    if manifest {
        let mut json = serde_json::to_vec_pretty(&serde_json::json!({ "files": entries }))
            .expect("manifest serialises");
        json.push(b'\n');
        write_file(&root.join("manifest.json"), &json, 0o644)?;
    }
    fs::set_permissions(root, fs::Permissions::from_mode(0o755)).map_err(|e| io_err(root, e))?;

    let tmp_path = tmp.keep();
    let result = if dir.exists() {
        // Swap in one step, then delete what was there.
        rustix::fs::renameat_with(
            rustix::fs::CWD,
            &tmp_path,
            rustix::fs::CWD,
            dir,
            rustix::fs::RenameFlags::EXCHANGE,
        )
        .map_err(|e| io_err(dir, e.into()))
        .and_then(|_| remove_tree(&tmp_path).map_err(|e| io_err(&tmp_path, e)))
    } else {
        fs::rename(&tmp_path, dir).map_err(|e| io_err(dir, e))
    };
    if result.is_err() {
        let _ = fs::remove_dir_all(&tmp_path);
    }
    result.map(|_| entries)
}

/// `rm -r`, directories in parallel: the old tree of a 10,000-host render
/// is 50,000 files, and deleting them one by one took longer than writing
/// the new ones.
fn remove_tree(dir: &Path) -> std::io::Result<()> {
    let entries: Vec<fs::DirEntry> = fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.par_iter().try_for_each(|e| {
        // Not following symlinks: a link is removed, never its target.
        if e.file_type()?.is_dir() {
            remove_tree(&e.path())
        } else {
            fs::remove_file(e.path())
        }
    })?;
    fs::remove_dir(dir)
}

/// Refuses to replace a directory nodenet did not write (no manifest.json,
/// or for keyfile directories only .nmconnection files) unless it is empty.
fn guard_existing(dir: &Path) -> Result<(), RenderError> {
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

pub fn write_file(path: &Path, content: &[u8], mode: u32) -> Result<(), RenderError> {
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(|e| io_err(path, e))?;
    f.write_all(content).map_err(|e| io_err(path, e))?;
    // The umask may have cut bits the consumer expects.
    if mode & !umask() != mode {
        f.set_permissions(fs::Permissions::from_mode(mode))
            .map_err(|e| io_err(path, e))?;
    }
    Ok(())
}

/// The process umask, read once (reading it means setting it, so do it
/// before any thread writes files).
fn umask() -> u32 {
    static UMASK: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *UMASK.get_or_init(|| {
        let old = rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o022));
        rustix::process::umask(old);
        old.as_raw_mode()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remove_tree_deletes_links_not_their_targets() {
        let tmp = tempfile::tempdir().unwrap();
        let keep = tmp.path().join("keep");
        fs::create_dir(&keep).unwrap();
        fs::write(keep.join("precious"), "x").unwrap();
        let tree = tmp.path().join("tree");
        for d in ["hosts/a/system-connections", "hosts/b", "openshift"] {
            fs::create_dir_all(tree.join(d)).unwrap();
        }
        fs::write(
            tree.join("hosts/a/system-connections/eth0.nmconnection"),
            "k",
        )
        .unwrap();
        fs::write(tree.join("openshift/mc.yaml"), "m").unwrap();
        std::os::unix::fs::symlink(&keep, tree.join("hosts/b/link")).unwrap();
        remove_tree(&tree).unwrap();
        assert!(!tree.exists());
        assert!(keep.join("precious").is_file());
    }

    #[test]
    fn rewrite_replaces_whole_tree_and_sets_modes() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        write_tree(
            &out,
            vec![
                OutFile::new("a/x.nmconnection", "x", 0o600),
                OutFile::new("old.txt", "o", 0o644),
            ],
            true,
        )
        .unwrap();
        let m = write_tree(
            &out,
            vec![OutFile::new("a/x.nmconnection", "y", 0o600)],
            true,
        )
        .unwrap();
        assert_eq!(
            fs::read_to_string(out.join("a/x.nmconnection")).unwrap(),
            "y"
        );
        assert!(!out.join("old.txt").exists());
        let mode = fs::metadata(out.join("a/x.nmconnection"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
        // sha256("y"), computed independently with sha256sum.
        assert_eq!(
            m[0].sha256,
            "a1fce4363854ff888cff4b8e7875d600c2682390412a8cf79b37d0b11148b0fa"
        );
        // No temporary directories left beside the output.
        let left: Vec<_> = fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, vec![std::ffi::OsString::from("out")]);
    }

    #[test]
    fn refuses_foreign_non_empty_directory() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("precious"), "data").unwrap();
        let err = write_tree(tmp.path(), vec![OutFile::new("a", "b", 0o644)], true).unwrap_err();
        assert!(matches!(err, RenderError::NotOurs(_)));
        assert_eq!(
            fs::read_to_string(tmp.path().join("precious")).unwrap(),
            "data"
        );
    }
}
