//! Scratch files and directories beside an output: made on the output's
//! filesystem so the final rename is one step, and found again when a run
//! was killed before it could remove them (a decompressed disk image in a
//! stale scratch directory can be as large as the image).
//!
//! Each scratch holds an advisory lock (`flock`) for as long as its maker
//! runs; the kernel drops it when the process dies, however it dies. A
//! new scratch first removes, in the same directory, every scratch whose
//! lock nobody holds. A lock, not a process id in the name, so that runs
//! in other PID namespaces (containers sharing a directory) are safe.
//! Between creating a scratch and locking it, its maker holds a shared
//! lock on the directory, and a sweep needs it exclusively: a scratch is
//! never taken for a dead run's in that instant.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use rustix::fs::{flock, FlockOperation};

/// What a scratch is for; part of its name, and the only names
/// [`sweep`] ever removes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A file written whole, then renamed over its final name.
    File,
    /// A rendered tree, swapped in for the previous one.
    Render,
    /// Working copies of a disk image.
    Disk,
    /// A copy of an ISO being embedded into.
    Iso,
}

impl Kind {
    const ALL: [Kind; 4] = [Kind::File, Kind::Render, Kind::Disk, Kind::Iso];

    fn tag(self) -> &'static str {
        match self {
            Kind::File => "file",
            Kind::Render => "render",
            Kind::Disk => "disk",
            Kind::Iso => "iso",
        }
    }
}

/// tempfile's random suffix length.
const RANDOM: usize = 6;

/// `.nodenet-<kind>-`, after `.<output name>` for renders so that people
/// see which output a leftover belongs to.
fn prefix(output: &Path, kind: Kind) -> String {
    match (kind, output.file_name()) {
        (Kind::Render, Some(base)) => {
            format!(".{}.nodenet-{}-", base.to_string_lossy(), kind.tag())
        }
        _ => format!(".nodenet-{}-", kind.tag()),
    }
}

/// Whether `name` is a scratch name some run of ours made.
fn is_scratch(name: &str) -> bool {
    Kind::ALL.iter().any(|k| {
        let marker = format!(".nodenet-{}-", k.tag());
        name.starts_with('.')
            && name.rfind(&marker).is_some_and(|at| {
                let random = &name[at + marker.len()..];
                random.len() == RANDOM && random.bytes().all(|b| b.is_ascii_alphanumeric())
            })
    })
}

/// The directory `output` is (to be) in.
pub fn dir_of(output: &Path) -> &Path {
    output
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

fn lock(file: &File) -> io::Result<()> {
    flock(file, FlockOperation::NonBlockingLockExclusive).map_err(io::Error::from)
}

/// Removes the scratch in `dir` that no running process holds. Best
/// effort: what cannot be removed stays for a later run. The caller holds
/// the directory's lock exclusively.
fn sweep(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_str().is_some_and(is_scratch) {
            continue;
        }
        // Never through a symlink.
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if !(kind.is_dir() || kind.is_file()) {
            continue;
        }
        let Ok(handle) = File::open(&path) else {
            continue;
        };
        if lock(&handle).is_err() {
            continue; // its maker still runs
        }
        let _ = if kind.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
    }
}

/// A scratch directory beside `output`, locked while this value lives;
/// removed on drop unless [`ScratchDir::keep`] took it.
pub struct ScratchDir {
    tmp: tempfile::TempDir,
    lock: File,
}

impl ScratchDir {
    pub fn path(&self) -> &Path {
        self.tmp.path()
    }

    /// Keeps the directory (the caller renames it away); the returned
    /// handle holds the lock until it is dropped.
    pub fn keep(self) -> (PathBuf, File) {
        (self.tmp.keep(), self.lock)
    }
}

/// Held while a scratch is made and locked (see the module's doc): the
/// directory locked shared, after a sweep if it could be had exclusively.
/// Where directories cannot be locked, nothing is swept.
fn making_in(dir: &Path) -> Option<File> {
    let handle = File::open(dir).ok()?;
    if flock(&handle, FlockOperation::NonBlockingLockExclusive).is_ok() {
        sweep(dir);
    }
    flock(&handle, FlockOperation::LockShared).ok()?;
    Some(handle)
}

/// Names as [`is_scratch`] knows them.
fn builder(prefix: &str) -> tempfile::Builder<'_, 'static> {
    let mut b = tempfile::Builder::new();
    b.prefix(prefix).rand_bytes(RANDOM);
    b
}

/// Sweeps `output`'s directory, then makes a locked scratch directory in it.
pub fn dir_beside(output: &Path, kind: Kind) -> io::Result<ScratchDir> {
    let _making = making_in(dir_of(output));
    let tmp = builder(&prefix(output, kind)).tempdir_in(dir_of(output))?;
    let handle = File::open(tmp.path())?;
    lock(&handle)?;
    Ok(ScratchDir { tmp, lock: handle })
}

/// Sweeps `output`'s directory, then makes a locked scratch file in it
/// (the lock lives with the file's handle, through `persist` too).
pub fn file_beside(output: &Path, kind: Kind) -> io::Result<tempfile::NamedTempFile> {
    let _making = making_in(dir_of(output));
    let tmp = builder(&prefix(output, kind)).tempfile_in(dir_of(output))?;
    lock(tmp.as_file())?;
    Ok(tmp)
}

#[cfg(test)]
mod tests;
