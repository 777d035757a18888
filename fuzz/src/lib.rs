//! Shared by the fuzz targets: the image readers take files, so fuzzed
//! bytes go into an anonymous in-memory file.

use std::fs::File;
use std::io::Write;

/// `data` as a file (memfd: no disk, gone when dropped).
pub fn memfile(data: &[u8]) -> File {
    let fd =
        rustix::fs::memfd_create("fuzz", rustix::fs::MemfdFlags::CLOEXEC).expect("memfd_create");
    let mut f = File::from(fd);
    f.write_all(data).expect("write to memfd");
    f
}
