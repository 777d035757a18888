//! The import stage: NetworkManager keyfiles (as people write them, or as
//! NetworkManager and `nodenet gc` write them) back into declarative
//! NMState, and a per-interface diff between a desired and an actual state.

pub mod diff;
pub mod into;
pub mod keyfile;
pub mod live;
pub mod to_nmstate;

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use nodenet_model::{Diagnostic, SourceMap};

pub use keyfile::Keyfile;

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("no keyfiles found in {0}")]
    Empty(String),
}

/// Keyfiles read and converted, with every finding located.
pub struct Imported {
    pub sources: SourceMap,
    pub state: serde_json::Value,
    pub diagnostics: Vec<Diagnostic>,
}

impl Imported {
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// The files a path stands for: itself, or the keyfiles in a directory
/// (what NetworkManager's keyfile plugin reads: not hidden, not backups).
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
        // As NetworkManager's keyfile plugin: `.nmconnection` always,
        // else not hidden files, backups, package leftovers or its own
        // metadata files.
        let skip = !name.ends_with(".nmconnection")
            && (name.starts_with('.')
                || name.ends_with('~')
                || [".swp", ".tmp", ".nmmeta", ".rpmnew", ".rpmsave", ".rpmorig"]
                    .iter()
                    .any(|ext| name.ends_with(ext))
                || name.contains(".dpkg-"));
        if !skip && entry.file_type().map_err(io)?.is_file() {
            files.push(entry.path());
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(ImportError::Empty(path.display().to_string()));
    }
    Ok(files)
}

/// Reads keyfiles (files or directories) and converts them into one
/// NMState document. `strict` turns "not imported" warnings into errors.
pub fn import_paths(paths: &[impl AsRef<Path>], strict: bool) -> Result<Imported, ImportError> {
    let mut files = Vec::new();
    for p in paths {
        files.extend(keyfile_paths(p.as_ref())?);
    }
    let read: Vec<(PathBuf, Vec<u8>)> = files
        .into_par_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).map_err(|source| ImportError::Io {
                path: p.display().to_string(),
                source,
            })?;
            Ok((p, bytes))
        })
        .collect::<Result<_, ImportError>>()?;
    Ok(import_bytes(read, strict))
}

/// Converts keyfile contents (name, bytes) into one NMState document.
pub fn import_bytes(files: Vec<(PathBuf, Vec<u8>)>, strict: bool) -> Imported {
    let mut sources = SourceMap::default();
    let ids: Vec<u32> = files
        .iter()
        .map(|(p, bytes)| {
            let shown = if bytes.len() <= keyfile::MAX_SIZE {
                String::from_utf8_lossy(bytes).into_owned()
            } else {
                String::new()
            };
            sources.add(p.display().to_string(), shown)
        })
        .collect();
    let parsed: Vec<Result<Keyfile, Box<Diagnostic>>> = files
        .par_iter()
        .zip(&ids)
        .map(|((p, bytes), id)| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            keyfile::parse(&name, bytes, *id)
        })
        .collect();
    let mut diagnostics = Vec::new();
    let mut keyfiles = Vec::new();
    for r in parsed {
        match r {
            Ok(k) => keyfiles.push(k),
            Err(d) => diagnostics.push(*d),
        }
    }
    let state = to_nmstate::convert(&keyfiles, strict, &mut diagnostics);
    nodenet_model::diag::sort(&mut diagnostics);
    Imported {
        sources,
        state,
        diagnostics,
    }
}
