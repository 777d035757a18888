//! The ISO 9660 reader: finding the live ISO's embed area and reading
//! what is embedded in it, on any bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use nodenet_image::iso;

fuzz_target!(|data: &[u8]| {
    let mut f = nodenet_fuzz::memfile(data);
    if let Ok((area, _)) = iso::embed_area(&mut f) {
        assert!(area.offset + area.length <= data.len() as u64, "{area:?}");
        let _ = iso::embedded(&mut f, area);
    }
});
