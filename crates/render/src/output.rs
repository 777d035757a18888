//! Writing a set of files atomically: everything goes into a temporary
//! directory beside the target, which then replaces the target in one
//! rename. A failed or killed run leaves the old output untouched.

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use rustix::fs::{Mode, OFlags};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::{Provenance, RenderError};

mod guard;
use guard::guard_existing;
pub use guard::{guard_provenance, holds_builtin_example, BUILTIN_EXAMPLE};

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

/// Writes `files` (plus, with a provenance, `manifest.json` listing it and
/// every file with its sha256) as the new content of `dir`.
pub fn write_tree(
    dir: &Path,
    files: Vec<OutFile>,
    manifest: Option<&Provenance>,
) -> Result<Vec<ManifestEntry>, RenderError> {
    let tree = Tree::begin(dir)?;
    let entries = files
        .par_iter()
        .map(|f| tree.write(f))
        .collect::<Result<Vec<_>, _>>()?;
    tree.commit(entries, manifest)
}

/// A new output tree being written: files go into a temporary directory
/// beside the target as soon as they are made (from any thread), and
/// [`Tree::commit`] swaps it in. Dropping it unfinished removes it.
pub struct Tree {
    target: PathBuf,
    tmp: nodenet_model::scratch::ScratchDir,
    /// Files are created relative to this descriptor: no walk of the
    /// temporary directory's absolute path for each of 50,000 files.
    root: std::os::fd::OwnedFd,
    /// The directories made so far: a file's directory is made before
    /// the file, once (a failed open and a `mkdir` of every parent for the
    /// first file of each of 20,000 directories, before).
    made: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl Tree {
    /// Refuses a target nodenet did not write, then makes the temporary
    /// directory.
    pub fn begin(dir: &Path) -> Result<Tree, RenderError> {
        guard_existing(dir)?;
        umask();
        let parent = match dir.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        fs::create_dir_all(&parent).map_err(|e| io_err(&parent, e))?;
        let tmp = nodenet_model::scratch::dir_beside(dir, nodenet_model::scratch::Kind::Render)
            .map_err(|e| io_err(&parent, e))?;
        let root = rustix::fs::open(
            tmp.path(),
            OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| io_err(tmp.path(), e.into()))?;
        Ok(Tree {
            target: dir.to_path_buf(),
            tmp,
            root,
            made: Default::default(),
        })
    }

    /// Writes one file (creating its directories); two files on one path
    /// are a [`RenderError::Conflict`].
    pub fn write(&self, file: &OutFile) -> Result<ManifestEntry, RenderError> {
        self.create(&file.path, &file.content, file.mode)?;
        Ok(ManifestEntry {
            path: file.path.clone(),
            sha256: nodenet_model::hex(&Sha256::digest(&file.content)),
            mode: format!("{:04o}", file.mode),
            size: file.content.len(),
        })
    }

    fn create(&self, path: &str, content: &[u8], mode: u32) -> Result<(), RenderError> {
        if let Some((parent, _)) = path.rsplit_once('/') {
            self.make_dir_once(parent)?;
        }
        let fd = rustix::fs::openat(
            &self.root,
            path,
            OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
        );
        let fd = fd.map_err(|e| match e {
            rustix::io::Errno::EXIST => RenderError::Conflict(path.to_string()),
            e => io_err(&self.tmp.path().join(path), e.into()),
        })?;
        let mut f = fs::File::from(fd);
        let fail = |e| io_err(&self.tmp.path().join(path), e);
        f.write_all(content).map_err(fail)?;
        // The umask may have cut bits the consumer expects.
        if mode & !umask() != mode {
            f.set_permissions(fs::Permissions::from_mode(mode))
                .map_err(fail)?;
        }
        Ok(())
    }

    /// `rel` made, with its parents, unless this tree made it already:
    /// each directory it has not made yet, the shallowest first. Other
    /// threads may be making the same directories.
    fn make_dir_once(&self, rel: &str) -> Result<(), RenderError> {
        let made = || self.made.lock().unwrap_or_else(|e| e.into_inner());
        if made().contains(rel) {
            return Ok(());
        }
        let ends = rel.match_indices('/').map(|(i, _)| i).chain([rel.len()]);
        for dir in ends.map(|end| &rel[..end]) {
            if made().contains(dir) {
                continue;
            }
            match rustix::fs::mkdirat(&self.root, dir, Mode::from_raw_mode(0o755)) {
                Ok(()) | Err(rustix::io::Errno::EXIST) => {
                    made().insert(dir.to_string());
                }
                Err(e) => return Err(io_err(&self.tmp.path().join(dir), e.into())),
            }
        }
        Ok(())
    }

    /// Writes `manifest.json` (when given the provenance) over `entries`
    /// and puts the tree in the target's place in one step.
    pub fn commit(
        self,
        mut entries: Vec<ManifestEntry>,
        manifest: Option<&Provenance>,
    ) -> Result<Vec<ManifestEntry>, RenderError> {
        let root = self.tmp.path();
        entries.par_sort_unstable_by(|a, b| a.path.cmp(&b.path));
        if let Some(source) = manifest {
            self.create("manifest.json", &manifest_json(source, &entries), 0o644)?;
        }
        fs::set_permissions(root, fs::Permissions::from_mode(0o755))
            .map_err(|e| io_err(root, e))?;
        let dir = self.target.as_path();
        // Locked until the swap is done: no other run's sweep takes it.
        let (tmp_path, _lock) = self.tmp.keep();
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
}

#[derive(Serialize)]
struct Manifest<'a> {
    source: &'a Provenance,
    files: &'a [ManifestEntry],
}

/// `manifest.json`: serde_json's pretty form of [`Manifest`], its entries
/// written on every core (one core took 22 ms for 60,000 of them, the last
/// thing a render does).
fn manifest_json(source: &Provenance, entries: &[ManifestEntry]) -> Vec<u8> {
    if entries.is_empty() {
        let mut json = pretty(&Manifest {
            source,
            files: entries,
        });
        json.push(b'\n');
        return json;
    }
    // The entries as they stand in the `files` list (two levels in), a
    // run of them per task, joined into one buffer sized once.
    let runs: Vec<Vec<u8>> = entries
        .par_chunks(1024)
        .map(|run| {
            let mut out = Vec::with_capacity(run.len() * 192);
            for (i, e) in run.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(b",\n");
                }
                out.extend(indented(&pretty(e), 4));
            }
            out
        })
        .collect();
    let head = indented(&pretty(source), 2);
    let mut json =
        Vec::with_capacity(head.len() + runs.iter().map(|r| r.len() + 2).sum::<usize>() + 64);
    json.extend_from_slice(b"{\n  \"source\": ");
    json.extend(head.trim_ascii_start());
    json.extend_from_slice(b",\n  \"files\": [\n");
    for (i, run) in runs.iter().enumerate() {
        if i > 0 {
            json.extend_from_slice(b",\n");
        }
        json.extend_from_slice(run);
    }
    json.extend_from_slice(b"\n  ]\n}\n");
    json
}

/// `text` with `n` spaces before each of its lines.
fn indented(text: &[u8], n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() + 8 * n);
    for (i, line) in text.split(|&b| b == b'\n').enumerate() {
        if i > 0 {
            out.push(b'\n');
        }
        out.extend(std::iter::repeat_n(b' ', n));
        out.extend_from_slice(line);
    }
    out
}

/// serde_json's pretty bytes of `v` (no newline at the end).
fn pretty<T: Serialize>(v: &T) -> Vec<u8> {
    serde_json::to_vec_pretty(v).expect("manifest serialises")
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
mod tests;
