use super::*;
use std::io::Read;

/// Text-like data with some repetition, so deflate makes many blocks
/// with back references.
/// Text-like lines, with a stretch of random bytes every 256 KiB that
/// deflate can only store (stored blocks pad to byte boundaries, which
/// the splice must keep).
fn sample(len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if out.len() % (256 << 10) < 40 {
            let mut r = x;
            out.extend((0..40_000).map(|_| {
                r ^= r << 13;
                r ^= r >> 7;
                r ^= r << 17;
                (r >> 24) as u8
            }));
        }
        out.extend_from_slice(format!("line {} value {}\n", x % 5000, x % 97).as_bytes());
    }
    out.truncate(len);
    out
}

fn gz(data: &[u8], level: u32) -> tempfile::NamedTempFile {
    let f = tempfile::NamedTempFile::new().unwrap();
    let mut e = flate2::write::GzEncoder::new(f.reopen().unwrap(), flate2::Compression::new(level));
    e.write_all(data).unwrap();
    e.finish().unwrap();
    f
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut d = flate2::read::GzDecoder::new(bytes);
    let mut out = Vec::new();
    d.read_to_end(&mut out).expect("the spliced member decodes");
    // Exactly one member, nothing after it.
    assert!(d.into_inner().is_empty(), "bytes after the member");
    out
}

fn run(data: &[u8], level: u32, edits: &[Edit], appended: &[u8]) -> (Vec<u8>, SpliceStats) {
    let input = gz(data, level);
    let decoded = tempfile::NamedTempFile::new().unwrap();
    let member = decode(input.as_file(), &mut decoded.reopen().unwrap())
        .unwrap_or_else(|_| panic!("decode"));
    assert_eq!(member.size, data.len() as u64);
    assert_eq!(std::fs::read(decoded.path()).unwrap(), data);
    assert!(
        member.blocks.len() > 3,
        "too few blocks to test: {member:?}"
    );
    let mut out = Vec::new();
    let stats = splice(
        input.as_file(),
        &member,
        decoded.as_file(),
        edits,
        appended,
        &mut out,
    )
    .unwrap();
    (out, stats)
}

fn expected(data: &[u8], edits: &[Edit], appended: &[u8]) -> Vec<u8> {
    let mut want = data.to_vec();
    for e in edits {
        want[e.at as usize..e.at as usize + e.bytes.len()].copy_from_slice(&e.bytes);
    }
    want.extend_from_slice(appended);
    want
}

#[test]
fn no_edits_give_a_member_with_the_same_data() {
    let data = sample(2 << 20);
    let input = gz(&data, 6);
    let (out, stats) = run(&data, 6, &[], &[]);
    assert_eq!(gunzip(&out), data);
    assert_eq!(out, std::fs::read(input.path()).unwrap());
    assert_eq!(stats.recompressed, 0);
}

#[test]
fn edits_at_start_middle_and_end_and_appended_bytes_decode_as_expected() {
    let data = sample(2 << 20);
    let len = data.len() as u64;
    let cases: Vec<(Vec<Edit>, Vec<u8>)> = vec![
        (
            vec![Edit {
                at: 0,
                bytes: b"QFI".to_vec(),
            }],
            vec![],
        ),
        (
            vec![Edit {
                at: 1_000_003,
                bytes: vec![0xab; 4097],
            }],
            vec![],
        ),
        (
            vec![
                Edit {
                    at: 17,
                    bytes: vec![1, 2, 3],
                },
                Edit {
                    at: 40_000,
                    bytes: vec![9; 10],
                },
                Edit {
                    at: 1_500_000,
                    bytes: b"nodenet".to_vec(),
                },
                Edit {
                    at: len - 5,
                    bytes: vec![0; 5],
                },
            ],
            vec![],
        ),
        (
            vec![Edit {
                at: 512 * 1024,
                bytes: vec![7; 100],
            }],
            sample(200_000),
        ),
        (vec![], b"appended only".to_vec()),
    ];
    for level in [0, 1, 6, 9] {
        for (edits, appended) in &cases {
            let (out, stats) = run(&data, level, edits, appended);
            let got = gunzip(&out);
            assert!(
                got == expected(&data, edits, appended),
                "level {level}, edits at {:?}",
                edits.iter().map(|e| e.at).collect::<Vec<_>>()
            );
            assert!(stats.recompressed < len / 2, "{stats:?}");
        }
    }
}

#[test]
fn the_crc_of_edited_data_follows_from_the_old_crc_and_the_change() {
    let data = sample(100_000);
    let mut new = data.clone();
    new[500..503].copy_from_slice(&[1, 2, 3]);
    let delta: Vec<u8> = data[500..503]
        .iter()
        .zip(&new[500..503])
        .map(|(a, b)| a ^ b)
        .collect();
    let linear = crc(&delta) ^ crc(&[0, 0, 0]);
    assert_eq!(
        crc(&data) ^ shift(linear, (data.len() - 503) as u64),
        crc(&new)
    );
}

#[test]
fn a_second_member_is_not_spliced() {
    let a = gz(b"first", 6);
    let mut both = std::fs::read(a.path()).unwrap();
    both.extend_from_slice(&std::fs::read(gz(b"second", 6).path()).unwrap());
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), &both).unwrap();
    match decode(f.as_file(), &mut std::io::sink()) {
        Err(Unpatchable::Layout(r)) => assert!(r.contains("more than one"), "{r}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_corrupt_trailer_is_an_input_error() {
    let a = gz(&sample(100_000), 6);
    let mut bytes = std::fs::read(a.path()).unwrap();
    let n = bytes.len();
    bytes[n - 8] ^= 1;
    std::fs::write(a.path(), &bytes).unwrap();
    match decode(a.as_file(), &mut std::io::sink()) {
        Err(Unpatchable::Image(ImageError::NotDiskImage(m))) => {
            assert!(m.contains("CRC"), "{m}")
        }
        other => panic!("{other:?}"),
    }
}
