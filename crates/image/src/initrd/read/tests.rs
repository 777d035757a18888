use super::*;
use crate::initrd::{cpio, xz};
use std::io::Write;

/// One newc entry, its name field padded with `extra` NULs (as
/// dracut-cpio's --data-align does).
fn entry(name: &str, mode: u32, data: &[u8], extra: usize) -> Vec<u8> {
    let namesize = name.len() + 1 + extra;
    let mut e = format!(
            "070701{:08x}{mode:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{namesize:08x}{:08x}",
            1, 0, 0, 1, 0, data.len(), 0, 0, 0, 0, 0
        )
        .into_bytes();
    e.extend_from_slice(name.as_bytes());
    e.resize(e.len() + 1 + extra, 0);
    e.resize(e.len().div_ceil(4) * 4, 0);
    e.extend_from_slice(data);
    e.resize(e.len().div_ceil(4) * 4, 0);
    e
}

fn archive(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut a: Vec<u8> = entries
        .iter()
        .flat_map(|(n, d)| entry(n, 0o100644, d, 0))
        .collect();
    a.extend(entry("TRAILER!!!", 0, b"", 0));
    a
}

fn gzip(d: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(d).unwrap();
    e.finish().unwrap()
}

fn zstd(d: &[u8]) -> Vec<u8> {
    zstd::encode_all(d, 3).unwrap()
}

fn files(data: &[u8]) -> Vec<(String, Vec<u8>)> {
    read_initrd(data, &|_| true)
        .unwrap()
        .into_iter()
        .filter(|m| m.is_file())
        .map(|m| (m.path, m.data))
        .collect()
}

fn problem(data: &[u8]) -> InitrdError {
    read_initrd(data, &|_| true).unwrap_err()
}

/// raw, gzip, xz, zstd, raw, with zero padding of odd lengths between
/// (the case: an xz member followed by a zstd one).
fn sample() -> Vec<u8> {
    let mut d = archive(&[("kernel/x86/microcode/GenuineIntel.bin", b"ucode")]);
    d.extend([0; 512]);
    d.extend(gzip(&archive(&[
        ("gz/a", b"A"),
        ("etc/coreos-live-initramfs", b""),
    ])));
    d.extend([0; 3]);
    d.extend(xz(&archive(&[("xz/b", b"BB")])));
    d.extend(zstd(&archive(&[("zst/c", b"CCC")])));
    d.extend([0; 1]);
    d.extend(archive(&[("raw/d", b"DDDD")]));
    d
}

#[test]
fn members_of_every_format_with_zero_padding_between_are_read() {
    let got = files(&sample());
    let names: Vec<&str> = got.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        names,
        [
            "etc/coreos-live-initramfs",
            "gz/a",
            "kernel/x86/microcode/GenuineIntel.bin",
            "raw/d",
            "xz/b",
            "zst/c"
        ]
    );
    assert_eq!(got[5].1, b"CCC");
    // Without `keep`, paths only.
    let listed = read_initrd(&sample(), &|_| false).unwrap();
    assert!(listed.iter().all(|m| m.data.is_empty()));
    assert_eq!(listed.len(), 6);
}

#[test]
fn a_zstd_member_may_span_frames() {
    let a = archive(&[("zst/a", &[7u8; 3000]), ("zst/b", b"b")]);
    let mut d = zstd(&a[..1000]);
    d.extend(zstd(&a[1000..]));
    d.extend(xz(&archive(&[("xz/c", b"c")])));
    let got = files(&d);
    let names: Vec<&str> = got.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(names, ["xz/c", "zst/a", "zst/b"]);
    assert!(got[1].1 == [7u8; 3000]);
}

#[test]
fn a_repeated_path_keeps_its_last_copy() {
    let mut d = archive(&[("data/file", b"first\n"), ("./data//file", b"second\n")]);
    d.extend(gzip(&archive(&[("data/./file", b"third\n")])));
    assert_eq!(files(&d), [("data/file".to_string(), b"third\n".to_vec())]);
}

#[test]
fn padded_names_align_data_and_read() {
    // dracut-cpio --data-align=4096: NULs in the name field put the
    // data of big files on a 4096-byte boundary.
    let mut a = entry("dir", 0o040755, b"", 0);
    let big = vec![b'z'; 5000];
    let start = a.len() + HEADER + "dir/hello".len() + 1;
    let extra = (4096 - start % 4096) % 4096;
    a.extend(entry("dir/hello", 0o100644, &big, extra));
    assert_eq!((a.len() - 5000 - pad4(5000) as usize) % 4096, 0);
    a.extend(entry("TRAILER!!!", 0, b"", 0));
    assert_eq!(files(&a), [("dir/hello".to_string(), big)]);
}

#[test]
fn paths_escaping_the_root_are_refused() {
    let e = problem(&xz(&archive(&[("ok", b""), ("../f", b"x")])));
    assert!(matches!(e.problem, Problem::ParentDir(_)), "{e}");
    assert_eq!(e.location.entry, Some((2, 116)));
    let e = problem(&archive(&[("/etc/adjtime", b"x")]));
    assert!(matches!(e.problem, Problem::Absolute(_)), "{e}");
    let e = problem(&archive(&[("a/../../b", b"x")]));
    assert!(matches!(e.problem, Problem::ParentDir(_)), "{e}");
    // The root directory itself is fine, a file named "." is not.
    let mut d = entry(".", 0o040755, b"", 0);
    d.extend(archive(&[]));
    assert!(files(&d).is_empty());
    let e = problem(&archive(&[(".", b"x")]));
    assert!(matches!(e.problem, Problem::Root(_)), "{e}");
}

#[test]
fn errors_name_member_format_byte_and_entry() {
    let mut d = archive(&[("a", b"a")]);
    let first = d.len();
    let mut bad = xz(&archive(&[("b", &[1u8; 4000])]));
    let n = bad.len();
    bad[n / 2] ^= 0x55;
    d.extend(gzip(&archive(&[("g", b"g")])));
    let third = d.len();
    d.extend(&bad);
    let e = problem(&d);
    assert_eq!(e.location.member, 3);
    assert_eq!(e.location.offset, third as u64);
    assert_eq!(e.location.format, Some(Format::Xz));
    assert!(matches!(e.problem, Problem::Decompress(_)), "{e}");
    assert!(
        e.to_string()
            .starts_with(&format!("member 3 (xz at byte {third}), entry ")),
        "{e}"
    );
    // A raw member's entries are located in the file.
    let mut d = archive(&[("a", b"a")]);
    d.extend(archive(&[("b", b"b"), ("c\0d", b"")]));
    let e = problem(&d);
    assert!(matches!(e.problem, Problem::NameNul), "{e}");
    assert_eq!(e.location.entry, Some((2, first as u64 + 116)));
    assert_eq!(
            e.to_string(),
            format!("member 2 (cpio at byte {first}), entry 2 at byte {}: the name has a NUL byte inside it", first + 116)
        );
}

#[test]
fn unread_formats_and_garbage_are_named() {
    let e = problem(b"BZh91AY&SY");
    assert!(matches!(e.problem, Problem::Unsupported("bzip2")), "{e}");
    assert_eq!(e.to_string(), "member 1 (at byte 0): bzip2 data, which coreos-installer does not read (only raw cpio, gzip, xz and zstd)");
    let mut d = archive(&[]);
    d.extend(b"hello");
    let e = problem(&d);
    assert_eq!(
            e.to_string(),
            "member 2 (at byte 124): neither a newc cpio archive nor gzip, xz or zstd data (it starts with 68 65 6c 6c 6f)"
        );
    let e = problem(b"070707000000000000000000");
    assert!(matches!(e.problem, Problem::Odc), "{e}");
}

#[test]
fn data_after_the_trailer_inside_a_compressed_member_is_refused() {
    let mut a = archive(&[("a", b"a")]);
    a.extend([0; 100]);
    assert_eq!(files(&gzip(&a)).len(), 1);
    a.extend(b"junk");
    let e = problem(&gzip(&a));
    assert!(
        matches!(e.problem, Problem::TrailingData(n) if n == a.len() as u64 - 4),
        "{e}"
    );
}

#[test]
fn declared_lengths_are_checked_before_any_allocation() {
    // namesize ffffffff: refused before reading the name.
    let mut h = entry("x", 0o100644, b"", 0);
    h[94..102].copy_from_slice(b"ffffffff");
    assert!(matches!(problem(&h).problem, Problem::NameTooLong(_)));
    // filesize ffffffff with 10 bytes there: truncated, contents
    // grown only as they arrive.
    let mut h = entry("x", 0o100644, &[1; 10], 0);
    h[54..62].copy_from_slice(b"ffffffff");
    assert!(matches!(problem(&h).problem, Problem::Truncated(_)));
    assert!(matches!(
        read_initrd(&h, &|_| false).unwrap_err().problem,
        Problem::Truncated(_)
    ));
    // A sign is not a hex digit.
    let mut h = entry("x", 0o100644, b"", 0);
    h[54..62].copy_from_slice(b"+0000001");
    assert!(matches!(problem(&h).problem, Problem::BadField("filesize")));
}

#[test]
fn no_cut_or_flipped_byte_panics() {
    // Every prefix and a flipped byte at every position: an error or
    // a listing, never a panic; a cut inside the last member is an
    // error.
    let d = sample();
    let last = d.len() - archive(&[("raw/d", b"DDDD")]).len();
    for n in 0..d.len() {
        let r = read_initrd(&d[..n], &|_| true);
        assert!(n <= last || r.is_err(), "cut at {n} read");
    }
    let mut f = d.clone();
    for i in 0..f.len() {
        f[i] ^= 0xa5;
        let _ = read_initrd(&f, &|_| true);
        f[i] ^= 0xa5;
    }
}

#[test]
fn the_writer_output_reads_back() {
    let p = cpio(&[crate::initrd::Member::file("f", 0o600, b"x".to_vec())]);
    assert_eq!(files(&p), [("f".to_string(), b"x".to_vec())]);
}
