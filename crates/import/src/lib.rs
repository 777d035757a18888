//! The import stage: NetworkManager keyfiles (as people write them, or as
//! NetworkManager and `nodenet gc` write them) back into declarative
//! NMState, and a per-interface diff between a desired and an actual state.

pub mod diff;
pub mod into;
pub mod keyfile;
pub mod live;
mod paths;
pub mod profile;
mod read;
pub mod to_nmstate;
pub mod values;

use nodenet_model::{Diagnostic, SourceMap};

pub use keyfile::Keyfile;
pub use paths::{ignored_file_name, keyfile_paths};
pub use read::{import_bytes, import_paths, KeyfileReader};

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
