//! Which files are keyfiles: a directory's files as NetworkManager's
//! keyfile plugin picks them, and the paths given.

use std::path::{Path, PathBuf};

use crate::ImportError;

/// Whether NetworkManager's keyfile plugin skips a file of its profile
/// directory in /etc (`nm_keyfile_utils_ignore_filename`): hidden files,
/// `~` backups, temporary files ending in `.` and six letters or digits
/// (`g_file_set_contents`'s, `.rpmnew`, its own `.nmmeta`), and 802.1X
/// certificates and keys (`.pem`, `.der`). Other names are read, with or
/// without `.nmconnection`.
pub fn ignored_file_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let temporary = name
        .rsplit_once('.')
        .is_some_and(|(_, ext)| ext.len() == 6 && ext.bytes().all(|b| b.is_ascii_alphanumeric()));
    name.is_empty()
        || name.starts_with('.')
        || name.ends_with('~')
        || temporary
        || [".pem", ".der"]
            .iter()
            .any(|ext| lower.len() > ext.len() && lower.ends_with(ext))
}

/// The files a path stands for: itself, or the regular files of a
/// directory NetworkManager's keyfile plugin would read
/// ([`ignored_file_name`]), sorted by name.
pub fn keyfile_paths(path: &Path) -> Result<Vec<PathBuf>, ImportError> {
    let io = |source| ImportError::Io {
        path: path.display().to_string(),
        source,
    };
    if !path.is_dir() {
        std::fs::metadata(path).map_err(io)?;
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(path).map_err(io)? {
        let entry = entry.map_err(io)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        // stat(), as the plugin: a symlink to a regular file is read.
        if !ignored_file_name(&name) && entry.path().metadata().is_ok_and(|m| m.is_file()) {
            files.push(entry.path());
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(ImportError::Empty(path.display().to_string()));
    }
    Ok(files)
}
