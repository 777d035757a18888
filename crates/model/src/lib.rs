//! The inventory stage: one model of a cluster's hosts and their network
//! intent, loaded from a nodenet inventory, an install-config.yaml, an
//! agent-config.yaml or a bare NMState file, with every value located.

pub mod diag;
pub mod edit;
pub mod fields;
pub mod inventory;
pub mod load;
pub mod names;
pub mod nic_binding;
pub mod probe;
pub mod scratch;
pub mod starter;
pub mod template;
pub mod yaml;

pub use diag::{Code, Diagnostic, Embedding, Severity, SourceFile, SourceMap};
pub use inventory::*;
pub use load::{detect, load_files, load_texts, LoadError, Loaded};
pub use probe::Probe;
pub use yaml::{Node, Span, Value};

/// Writes `data` to `path` atomically: a temp file beside it (same
/// filesystem), synced, then renamed over the final name. A crash leaves
/// either the old file or the new one, never a partial one.
pub fn write_atomic(path: &std::path::Path, data: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut tmp = scratch::file_beside(path, scratch::Kind::File)?;
    tmp.write_all(data)?;
    tmp.as_file().sync_data()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Lower-case hex of `bytes` (sha256 digests in manifests, URLs, records).
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}
