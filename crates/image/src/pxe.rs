//! PXE: the network payload as an extra initrd, or appended to a CoreOS
//! live initramfs (the kernel unpacks concatenated archives in order).

use crate::initrd::{self, LIVE_MARKER};
use crate::ImageError;

/// `initramfs` + padding to 4 bytes + the payload, after checking that
/// `initramfs` is a CoreOS live initramfs.
pub fn append(initramfs: &[u8], payload: &[u8]) -> Result<Vec<u8>, ImageError> {
    let members =
        initrd::read_members(initramfs).map_err(|e| ImageError::NotLiveInitramfs(e.to_string()))?;
    if !members.iter().any(|m| m.path == LIVE_MARKER) {
        return Err(ImageError::NotLiveInitramfs(format!(
            "it has no {LIVE_MARKER}"
        )));
    }
    let mut out = initramfs.to_vec();
    out.resize(initramfs.len().div_ceil(4) * 4, 0);
    out.extend_from_slice(payload);
    Ok(out)
}
