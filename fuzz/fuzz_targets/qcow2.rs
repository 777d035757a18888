//! The qcow2 reader: header, L1/L2 tables, refcounts, and the plan of an
//! in-place change, on any bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use nodenet_image::disk::qcow2::Qcow2;

fuzz_target!(|data: &[u8]| {
    let f = nodenet_fuzz::memfile(data);
    let Ok(mut q) = Qcow2::open(&f) else {
        return;
    };
    let clusters = q.size.div_ceil(q.cluster.max(1)).min(4);
    for c in 0..clusters {
        let _ = q.backing(&f, c);
    }
    if clusters > 0 && q.cluster <= 1 << 21 {
        let change = (0, vec![0x5a; q.cluster as usize], 0..1);
        let _ = q.plan(&f, &[change]);
    }
});
