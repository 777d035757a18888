//! The initramfs reader: concatenated cpio archives, each uncompressed,
//! gzip, xz or zstd, with padding between them, on any bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(members) = nodenet_image::initrd::read_initrd(data, &|_| true) {
        for m in &members {
            // Nothing escapes the root.
            assert!(
                !m.path.starts_with('/') && !m.path.split('/').any(|c| c == ".."),
                "{}",
                m.path
            );
        }
    }
});
