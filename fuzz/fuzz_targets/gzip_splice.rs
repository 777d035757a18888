//! The gzip block indexer and splicer. Any bytes: decoded or refused,
//! never a panic. And a differential: a valid gzip stream (made from the
//! input at a level it picks, with sync flushes where it says) is edited
//! in place by the splicer; the result must gunzip (flate2, an
//! independent inflater) to the data with the same edits made directly.
#![no_main]
use std::io::{Read, Write};

use flate2::{read::MultiGzDecoder, write::GzEncoder, Compression};
use libfuzzer_sys::fuzz_target;
use nodenet_image::disk::{gzip_splice, Edit};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode & 1 == 0 {
        let f = nodenet_fuzz::memfile(rest);
        let _ = gzip_splice::decode(&f, &mut std::io::sink());
        return;
    }
    let (Some(&size), Some(&flushes)) = (rest.first(), rest.get(1)) else {
        return;
    };
    let rest = &rest[2..];
    let plain = content(rest, 1024 + usize::from(size) * 320);
    let level = u32::from(mode >> 1) % 10;
    let mut enc = GzEncoder::new(Vec::new(), Compression::new(level));
    let step = 512 + usize::from(flushes) * 256;
    for chunk in plain.chunks(step) {
        enc.write_all(chunk).unwrap();
        if flushes & 1 == 1 {
            enc.flush().unwrap();
        }
    }
    let gz = enc.finish().unwrap();
    let input = nodenet_fuzz::memfile(&gz);
    let mut decoded = Vec::new();
    let member = gzip_splice::decode(&input, &mut decoded).expect("a valid stream decodes");
    assert_eq!(decoded, plain);
    let edits = edits(rest, plain.len());
    let appended: Vec<u8> = rest
        .iter()
        .rev()
        .take(usize::from(size) % 64)
        .copied()
        .collect();
    let mut expected = plain.clone();
    for e in &edits {
        expected[e.at as usize..e.at as usize + e.bytes.len()].copy_from_slice(&e.bytes);
    }
    expected.extend_from_slice(&appended);
    let decoded = nodenet_fuzz::memfile(&decoded);
    let mut out = Vec::new();
    gzip_splice::splice(&input, &member, &decoded, &edits, &appended, &mut out)
        .expect("splice of a valid stream");
    let mut back = Vec::new();
    MultiGzDecoder::new(&out[..])
        .read_to_end(&mut back)
        .expect("the spliced stream inflates");
    assert!(back == expected, "spliced data differs");
});

/// `len` bytes mixing runs (compressible) and noise, seeded by `seed`.
fn content(seed: &[u8], len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for &b in seed.iter().take(16) {
        x = (x ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let run = (x % 200) as usize + 1;
        if x & 4 == 0 {
            out.extend(std::iter::repeat_n((x >> 8) as u8, run));
        } else {
            out.extend((0..run).map(|i| (x >> (i % 56)) as u8));
        }
    }
    out.truncate(len);
    out
}

/// Sorted, disjoint edits inside `len` bytes, from (offset, length, byte)
/// triples of the input.
fn edits(spec: &[u8], len: usize) -> Vec<Edit> {
    let mut wanted: Vec<(usize, usize, u8)> = spec
        .chunks_exact(5)
        .take(8)
        .map(|c| {
            let at = u32::from_le_bytes([c[0], c[1], c[2], 0]) as usize % len;
            let n = (usize::from(c[3]) * 7 + 1).min(len - at);
            (at, n, c[4])
        })
        .collect();
    wanted.sort();
    let mut out: Vec<Edit> = Vec::new();
    let mut end = 0;
    for (at, n, byte) in wanted {
        if at < end {
            continue;
        }
        end = at + n;
        out.push(Edit {
            at: at as u64,
            bytes: vec![byte; n],
        });
    }
    out
}
