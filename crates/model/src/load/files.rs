//! Reading the inputs from disk: files of bounded size, directories
//! walked as `kubectl apply -R -f` walks them, profile directories as
//! NetworkManager's keyfile plugin reads them, and text told from what
//! is not text before anything parses it.

use std::path::Path;

use super::looks_like_keyfile;
use crate::diag::Code;

/// Fatal problems: nothing can be checked.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is {} MiB; nodenet reads inputs of up to {} MiB (set {MAX_INPUT_ENV} to read larger ones)", .size.div_ceil(MIB), .limit / MIB)]
    TooLarge { path: String, size: u64, limit: u64 },
    #[error("{MAX_INPUT_ENV}={value} is not a size in MiB (a whole number, at least 1)")]
    BadLimit { value: String },
}

/// The environment variable that sets the largest input read, in MiB.
pub const MAX_INPUT_ENV: &str = "NODENET_MAX_INPUT_MIB";
/// Inputs larger than this are refused unless [`MAX_INPUT_ENV`] says
/// otherwise: a 10,000-host install-config is 15 MiB, and a file is held
/// some twenty times over once parsed.
pub const DEFAULT_MAX_INPUT_MIB: u64 = 64;
const MIB: u64 = 1024 * 1024;

/// The largest input file read, in bytes.
pub fn max_input_bytes() -> Result<u64, LoadError> {
    match std::env::var(MAX_INPUT_ENV) {
        Err(_) => Ok(DEFAULT_MAX_INPUT_MIB * MIB),
        Ok(v) => match v.trim().parse::<u64>() {
            Ok(n) if n >= 1 => Ok(n.saturating_mul(MIB)),
            _ => Err(LoadError::BadLimit { value: v }),
        },
    }
}

/// One text to load.
pub(super) struct Input {
    pub(super) name: String,
    pub(super) text: String,
    /// Found by walking a directory: documents nodenet does not read are
    /// skipped there, not reported.
    pub(super) in_dir: bool,
    /// Why the text is not YAML at all (binary, not UTF-8): reported at
    /// that place instead of parsing it.
    pub(super) not_text: Option<NotText>,
}

/// A file that is no text: what it is and where that shows (byte offset).
pub(super) struct NotText {
    pub(super) what: String,
    pub(super) code: Code,
    pub(super) at: usize,
}

/// Directories are walked this deep at most (a symlink loop ends here).
const MAX_DIR_DEPTH: usize = 16;

/// Reads one file of at most `limit` bytes (checked before reading, and
/// while reading: a pipe or a device has no size), and tells binary or
/// non-UTF-8 content before anything parses it.
pub(super) fn read_input(p: &Path, limit: u64, in_dir: bool) -> Result<Input, LoadError> {
    use std::io::Read;
    let path = p.display().to_string();
    let io = |source| LoadError::Io {
        path: path.clone(),
        source,
    };
    let file = std::fs::File::open(p).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    let size = meta.len();
    if size > limit {
        return Err(LoadError::TooLarge { path, size, limit });
    }
    let bytes = match meta.is_file() && size >= PARALLEL_READ_BYTES {
        true => read_in_parts(&file, size),
        false => None,
    };
    let bytes = match bytes {
        Some(bytes) => bytes,
        None => {
            let mut bytes = Vec::with_capacity(size as usize);
            file.take(limit + 1).read_to_end(&mut bytes).map_err(io)?;
            bytes
        }
    };
    if bytes.len() as u64 > limit {
        return Err(LoadError::TooLarge {
            path,
            size: bytes.len() as u64,
            limit,
        });
    }
    let (text, not_text) = classify(bytes);
    Ok(Input {
        name: path,
        text,
        in_dir,
        not_text,
    })
}

/// Files this large are read in parts on every core: reading 15 MB into
/// new pages took 10-20 ms of one core before anything could parse it.
const PARALLEL_READ_BYTES: u64 = 4 * MIB;

/// A regular file of `size` bytes read in parts side by side; `None` when
/// a part fails or the file has grown meanwhile (it is then read again
/// as one stream, from its start: these reads do not move its offset).
fn read_in_parts(file: &std::fs::File, size: u64) -> Option<Vec<u8>> {
    use rayon::prelude::*;
    use std::os::unix::fs::FileExt;
    let mut bytes = vec![0u8; usize::try_from(size).ok()?];
    let part = bytes
        .len()
        .div_ceil(2 * rayon::current_num_threads())
        .max(MIB as usize);
    bytes
        .par_chunks_mut(part)
        .enumerate()
        .try_for_each(|(k, chunk)| file.read_exact_at(chunk, (k * part) as u64))
        .ok()?;
    let mut past = [0u8; 1];
    (file.read_at(&mut past, size).ok()? == 0).then_some(bytes)
}

/// The file's text, and why it is no YAML text when it is not: a NUL
/// byte (binary, or UTF-16/32 text) or bytes that are not UTF-8. YAML is
/// Unicode text; nothing else is worth a parser's time or a snippet.
fn classify(bytes: Vec<u8>) -> (String, Option<NotText>) {
    let utf16 = bytes.starts_with(&[0xff, 0xfe]) || bytes.starts_with(&[0xfe, 0xff]);
    if let Some(at) = memchr::memchr(0, &bytes) {
        let what = if utf16 {
            "the file is UTF-16 text: nodenet reads UTF-8 (convert it, e.g. `iconv -f UTF-16 -t UTF-8`)".to_string()
        } else {
            "the file is binary (a NUL byte here), not YAML".to_string()
        };
        // Only the text before the NUL is kept: the finding is at its end.
        let text = String::from_utf8_lossy(&bytes[..at]).into_owned();
        let at = text.len();
        return (
            text,
            Some(NotText {
                what,
                code: Code::UnknownFormat,
                at,
            }),
        );
    }
    match String::from_utf8(bytes) {
        Ok(s) => (s, None),
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let byte = e.as_bytes()[at];
            let text = String::from_utf8_lossy(e.as_bytes()).into_owned();
            (
                text,
                Some(NotText {
                    what: format!("the file is not UTF-8 text: byte 0x{byte:02x} here is no UTF-8 character (YAML is Unicode; save the file as UTF-8)"),
                    code: Code::YamlSyntax,
                    at,
                }),
            )
        }
    }
}

/// The entries of a directory, in name order.
fn sorted_entries(dir: &Path) -> Result<Vec<std::path::PathBuf>, LoadError> {
    let io = |source| LoadError::Io {
        path: dir.display().to_string(),
        source,
    };
    let mut entries: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .map_err(io)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(io)?;
    entries.sort();
    Ok(entries)
}

/// Manifest files under `dir`, in name order, as `kubectl apply -R -f`
/// takes them: `.yaml`, `.yml` and `.json`, hidden files and directories
/// left out. Entries are read on every core (a fleet repository holds
/// 10,000 site files or config drives), the first error in name order is
/// the one said.
pub(super) fn walk(
    dir: &Path,
    depth: usize,
    limit: u64,
    out: &mut Vec<Input>,
) -> Result<(), LoadError> {
    use rayon::prelude::*;
    let io = |source| LoadError::Io {
        path: dir.display().to_string(),
        source,
    };
    if depth > MAX_DIR_DEPTH {
        return Err(io(std::io::Error::other(format!(
            "directories nested deeper than {MAX_DIR_DEPTH} levels (a symlink loop?)"
        ))));
    }
    let found: Vec<Result<Vec<Input>, LoadError>> = sorted_entries(dir)?
        .par_iter()
        .map(|path| {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            if name.as_deref().is_none_or(|n| n.starts_with('.')) {
                return Ok(Vec::new());
            }
            if path.is_dir() {
                let mut inner = Vec::new();
                walk(path, depth + 1, limit, &mut inner)?;
                Ok(inner)
            } else if path
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
            {
                Ok(vec![read_input(path, limit, true)?])
            } else {
                Ok(Vec::new())
            }
        })
        .collect();
    for inputs in found {
        out.extend(inputs?);
    }
    Ok(())
}

/// The keyfiles of a directory with no manifest in it, as NetworkManager's
/// keyfile plugin reads its profile directory: every regular file but
/// hidden ones, told by content.
pub(super) fn profile_dir(dir: &Path, limit: u64, out: &mut Vec<Input>) -> Result<(), LoadError> {
    for path in sorted_entries(dir)? {
        let hidden = path
            .file_name()
            .is_none_or(|n| n.to_string_lossy().starts_with('.'));
        if hidden || !path.is_file() {
            continue;
        }
        let input = read_input(&path, limit, true)?;
        if input.not_text.is_none() && looks_like_keyfile(&input.text) {
            out.push(input);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file past the size read in parts reads as one stream does (its
    /// parts are bytes: the text, multi-byte characters and all, is
    /// checked as UTF-8 whole, after).
    #[test]
    fn a_large_file_read_in_parts_is_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("large.yaml");
        let line = "- name: wörker-00000\n";
        let text: String = line.repeat((PARALLEL_READ_BYTES as usize) / line.len() + 7919);
        std::fs::write(&path, &text).unwrap();
        assert!(text.len() as u64 > PARALLEL_READ_BYTES);
        let input = read_input(&path, 64 * MIB, false).unwrap();
        assert!(input.not_text.is_none());
        assert!(input.text == text, "the text read differs from the file's");
        let file = std::fs::File::open(&path).unwrap();
        assert_eq!(
            read_in_parts(&file, text.len() as u64 - 1),
            None,
            "a file longer than its size said"
        );
    }
}
