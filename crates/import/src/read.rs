//! Keyfiles read into one NMState document, every finding located: from
//! paths, from contents, and as the loader's [`ProfileReader`] for
//! keyfiles among `check`'s inputs.
//!
//! [`ProfileReader`]: nodenet_model::load::ProfileReader

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use nodenet_model::{Diagnostic, SourceMap};

use crate::{keyfile, keyfile_paths, to_nmstate, ImportError, Imported, Keyfile};

/// Reads keyfiles (files or directories) and converts them into one
/// NMState document. `strict` turns every warning into an error.
///
/// A file found in a directory that NetworkManager would not load (it
/// cannot be parsed, or the profile is invalid) is, as for the plugin,
/// left out with its findings as warnings, as long as something else is
/// imported (and not with `strict`).
pub fn import_paths(paths: &[impl AsRef<Path>], strict: bool) -> Result<Imported, ImportError> {
    let mut files = Vec::new();
    for p in paths {
        let listed = p.as_ref().is_dir();
        files.extend(keyfile_paths(p.as_ref())?.into_iter().map(|f| (f, listed)));
    }
    let read: Vec<(PathBuf, Vec<u8>, bool)> = files
        .into_par_iter()
        .map(|(p, listed)| {
            let bytes = std::fs::read(&p).map_err(|source| ImportError::Io {
                path: p.display().to_string(),
                source,
            })?;
            Ok((p, bytes, listed))
        })
        .collect::<Result<_, ImportError>>()?;
    Ok(import_files(read, strict))
}

/// Converts keyfile contents (name, bytes) into one NMState document;
/// every file counts (none is left out for its errors).
pub fn import_bytes(files: Vec<(PathBuf, Vec<u8>)>, strict: bool) -> Imported {
    import_files(
        files.into_iter().map(|(p, b)| (p, b, false)).collect(),
        strict,
    )
}

/// [`import_paths`] on contents: (name, bytes, found in a directory).
fn import_files(files: Vec<(PathBuf, Vec<u8>, bool)>, strict: bool) -> Imported {
    let mut sources = SourceMap::default();
    let files: Vec<(u32, PathBuf, Vec<u8>, bool)> = files
        .into_iter()
        .map(|(p, bytes, listed)| {
            let shown = if bytes.len() <= keyfile::MAX_SIZE {
                String::from_utf8_lossy(&bytes).into_owned()
            } else {
                String::new()
            };
            (
                sources.add(p.display().to_string(), shown),
                p,
                bytes,
                listed,
            )
        })
        .collect();
    let (state, diagnostics) = import_into(&files, strict, &mut sources);
    Imported {
        sources,
        state,
        diagnostics,
    }
}

/// Keyfiles already in `sources` (id, name, bytes, found in a directory)
/// into one NMState document and the findings, secrets redacted in
/// `sources`.
fn import_into(
    files: &[(u32, PathBuf, Vec<u8>, bool)],
    strict: bool,
    sources: &mut SourceMap,
) -> (serde_json::Value, Vec<Diagnostic>) {
    let listed: HashSet<u32> = files
        .iter()
        .filter(|(_, _, _, l)| *l)
        .map(|(id, ..)| *id)
        .collect();
    let parsed: Vec<Result<Keyfile, Box<Diagnostic>>> = files
        .par_iter()
        .map(|(id, p, bytes, _)| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            keyfile::parse(&name, bytes, *id)
        })
        .collect();
    let mut parse_diags = Vec::new();
    let mut keyfiles = Vec::new();
    for r in parsed {
        match r {
            Ok(k) => {
                // Secrets are imported, never shown in a finding's excerpt.
                let secrets: Vec<(usize, usize)> = k
                    .groups
                    .iter()
                    .flat_map(|g| g.entries.iter().map(move |e| (g, e)))
                    .filter(|(g, e)| keyfile::is_secret(&g.name, &e.key))
                    .map(|(_, e)| (e.span.offset as usize, e.span.len as usize))
                    .collect();
                if !secrets.is_empty() {
                    sources.redact(k.file, &secrets);
                }
                parse_diags.extend(k.warnings.iter().cloned());
                keyfiles.push(k);
            }
            Err(d) => parse_diags.push(*d),
        }
    }
    let run = |left_out: &HashSet<u32>| {
        let mut diagnostics: Vec<Diagnostic> = parse_diags
            .iter()
            .filter(|d| !d.span.is_some_and(|s| left_out.contains(&s.file)))
            .cloned()
            .collect();
        let kept: Vec<&Keyfile> = keyfiles
            .iter()
            .filter(|k| !left_out.contains(&k.file))
            .collect();
        let state = to_nmstate::convert(&kept, strict, &mut diagnostics);
        (state, diagnostics)
    };
    // The files found in a directory that have errors.
    let bad_listed = |diags: &[Diagnostic]| -> HashSet<u32> {
        diags
            .iter()
            .filter(|d| d.is_error())
            .filter_map(|d| d.span.map(|s| s.file))
            .filter(|f| listed.contains(f))
            .collect()
    };
    let (mut state, mut diagnostics) = run(&HashSet::new());
    let mut bad = bad_listed(&diagnostics);
    if !strict && !bad.is_empty() {
        // Leave them out, as the plugin does, until the rest is clean (a
        // left-out controller can make its ports fail in turn).
        let mut left_out: HashSet<u32> = HashSet::new();
        let mut findings: Vec<Diagnostic> = Vec::new();
        let mut round = None;
        while !bad.is_empty() {
            let diags = round.as_ref().map_or(&diagnostics, |(_, d)| d);
            findings.extend(
                diags
                    .iter()
                    .filter(|d| d.is_error() && d.span.is_some_and(|s| bad.contains(&s.file)))
                    .cloned(),
            );
            left_out.extend(bad);
            let next = run(&left_out);
            bad = bad_listed(&next.1);
            round = Some(next);
        }
        let (rest, rest_diags) = round.expect("at least one round");
        let usable = rest["interfaces"].as_array().is_some_and(|a| !a.is_empty());
        if usable && !rest_diags.iter().any(Diagnostic::is_error) {
            state = rest;
            diagnostics = rest_diags;
            diagnostics.extend(findings.into_iter().map(|mut d| {
                d.severity = nodenet_model::Severity::Warning;
                d.message = format!("{} (the file is not imported)", d.message);
                d
            }));
        }
    }
    nodenet_model::diag::sort(&mut diagnostics);
    (state, diagnostics)
}

/// Reads the NetworkManager keyfiles among `check`'s and `render`'s
/// inputs (told by content) as NetworkManager's keyfile plugin does,
/// into the NMState they stand for.
pub struct KeyfileReader;

impl nodenet_model::load::ProfileReader for KeyfileReader {
    fn read(
        &self,
        files: &[(u32, &str, &str)],
        sources: &mut SourceMap,
        diagnostics: &mut Vec<Diagnostic>,
    ) -> Option<serde_json::Value> {
        let files: Vec<(u32, PathBuf, Vec<u8>, bool)> = files
            .iter()
            .map(|(id, name, text)| (*id, PathBuf::from(name), text.as_bytes().to_vec(), false))
            .collect();
        let (state, diags) = import_into(&files, false, sources);
        let usable = !diags.iter().any(Diagnostic::is_error);
        diagnostics.extend(diags);
        usable.then_some(state)
    }
}
