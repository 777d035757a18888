//! PXE: the network payload as an extra initrd, or appended to a CoreOS
//! live initramfs (the kernel unpacks concatenated archives in order).

use std::path::Path;

use crate::initrd::{self, LIVE_MARKER};
use crate::ImageError;

/// `initramfs` (read from `path`, named in errors) + padding to 4 bytes +
/// the payload, after checking that every member of `initramfs` reads and
/// that it is a CoreOS live initramfs.
pub fn append(path: &Path, initramfs: &[u8], payload: &[u8]) -> Result<Vec<u8>, ImageError> {
    // Paths only: the contents of a live initramfs are not needed here.
    let members =
        initrd::read_initrd(initramfs, &|_| false).map_err(|source| ImageError::Initramfs {
            path: path.to_path_buf(),
            source,
        })?;
    if !members.iter().any(|m| m.path == LIVE_MARKER) {
        return Err(ImageError::NotLiveInitramfs(path.to_path_buf()));
    }
    let mut out = initramfs.to_vec();
    out.resize(initramfs.len().div_ceil(4) * 4, 0);
    out.extend_from_slice(payload);
    Ok(out)
}
