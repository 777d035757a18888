//! The boot-media stage: a node's keyfiles into the media it first boots
//! from (CoreOS live ISO embed area, PXE initrd), and an HTTP server for
//! the images that prints each one's `?sha256=` URL.

pub mod disk;
pub mod initrd;
pub mod iso;
pub mod pxe;
pub mod serve;

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// I/O on a named file (disk full, read-only, not a directory...).
    #[error("{}: {source}", path.display())]
    IoAt {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("not a CoreOS live ISO: {0}")]
    NotCoreOsIso(String),
    #[error("the payload ({payload} bytes) does not fit the embed area ({area} bytes)")]
    PayloadTooLarge { payload: u64, area: u64 },
    /// Read, but without the live marker (a network payload, or a plain
    /// distribution initramfs).
    #[error("{}: not a CoreOS live initramfs (it has no {})", .0.display(), initrd::LIVE_MARKER)]
    NotLiveInitramfs(PathBuf),
    /// An initramfs file that cannot be read; the error locates the byte.
    #[error("{}: {source}", path.display())]
    Initramfs {
        path: PathBuf,
        source: initrd::InitrdError,
    },
    #[error("cannot read the initrd: {0}")]
    BadInitrd(#[from] initrd::InitrdError),
    #[error("not a usable CoreOS disk image: {0}")]
    NotDiskImage(String),
    #[error("verification failed: {0}")]
    Verify(String),
}

impl ImageError {
    /// Problems with the input (exit 1) versus I/O (exit 2).
    pub fn is_input_problem(&self) -> bool {
        !matches!(self, ImageError::Io(_) | ImageError::IoAt { .. })
    }

    /// Names the file an I/O error happened on.
    pub fn at(path: &Path) -> impl FnOnce(std::io::Error) -> ImageError + '_ {
        move |source| ImageError::IoAt {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Writes `data` to `path` atomically (temp file beside it, then rename).
pub fn write_atomic(path: &Path, data: &[u8]) -> Result<(), ImageError> {
    nodenet_model::write_atomic(path, data).map_err(ImageError::at(path))
}

#[cfg(test)]
mod tests;
