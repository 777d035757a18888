use super::*;
use std::io::Write;

const CLUSTER: u64 = 4096;

/// A 4-cluster qcow2 v3 image: header, L1 table (1 entry), refcount
/// table (1 entry: the block in cluster 3). `l1_entry` and `l1_size`
/// are what the fuzzer found ways to make wrong.
fn image(l1_size: u32, l1_entry: u64) -> tempfile::NamedTempFile {
    let mut b = vec![0u8; 4 * CLUSTER as usize];
    b[..4].copy_from_slice(b"QFI\xfb");
    b[4..8].copy_from_slice(&3u32.to_be_bytes());
    b[20..24].copy_from_slice(&12u32.to_be_bytes());
    b[24..32].copy_from_slice(&(64 * 1024u64).to_be_bytes());
    b[36..40].copy_from_slice(&l1_size.to_be_bytes());
    b[40..48].copy_from_slice(&CLUSTER.to_be_bytes());
    b[48..56].copy_from_slice(&(2 * CLUSTER).to_be_bytes());
    b[56..60].copy_from_slice(&1u32.to_be_bytes());
    b[96..100].copy_from_slice(&4u32.to_be_bytes());
    b[100..104].copy_from_slice(&104u32.to_be_bytes());
    let l1 = CLUSTER as usize;
    b[l1..l1 + 8].copy_from_slice(&l1_entry.to_be_bytes());
    let rt = 2 * CLUSTER as usize;
    b[rt..rt + 8].copy_from_slice(&(3 * CLUSTER).to_be_bytes());
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(&b).unwrap();
    f
}

fn change() -> (u64, Vec<u8>, std::ops::Range<usize>) {
    (0, vec![0x5a; CLUSTER as usize], 0..1)
}

#[test]
fn a_sound_image_is_planned() {
    let f = image(1, 0);
    let mut q = Qcow2::open(f.as_file()).unwrap();
    assert_eq!(q.backing(f.as_file(), 0).unwrap(), Backing::Zeros);
    let (edits, appended) = q.plan(f.as_file(), &[change()]).unwrap();
    // A data cluster and an L2 table appended; L1 and refcounts edited.
    assert_eq!(appended.len(), 2 * CLUSTER as usize);
    assert!(edits.iter().any(|e| e.at == CLUSTER), "{edits:?}");
}

#[test]
fn a_table_said_to_be_larger_than_the_file_is_refused_before_allocating() {
    // Found by fuzzing: 2^28 L1 entries (2 GiB) in a 16 KiB file.
    let f = image(1 << 28, 0);
    let e = Qcow2::open(f.as_file()).unwrap_err();
    assert!(e.contains("beyond the end of the file"), "{e}");
}

#[test]
fn metadata_pointing_outside_the_file_is_a_damaged_image_not_a_panic() {
    // Found by fuzzing: an L2 table far past the end of the file.
    let f = image(1, (1 << 40) | COPIED);
    let mut q = Qcow2::open(f.as_file()).unwrap();
    let e = q.backing(f.as_file(), 0).unwrap_err();
    assert!(e.contains("damaged"), "{e}");
    let e = q.plan(f.as_file(), &[change()]).unwrap_err();
    assert!(e.contains("damaged"), "{e}");
    // A refcount block past the end (found by fuzzing, after the
    // first fix: an existing block is checked like any other).
    let f = image(1, 0);
    let mut b = std::fs::read(f.path()).unwrap();
    b[2 * CLUSTER as usize..][..8].copy_from_slice(&(1u64 << 50).to_be_bytes());
    std::fs::write(f.path(), &b).unwrap();
    let mut q = Qcow2::open(f.as_file()).unwrap();
    let e = q.plan(f.as_file(), &[change()]).unwrap_err();
    assert!(e.contains("refcount block"), "{e}");
    // Or inside the header's cluster, or not on a cluster boundary.
    for bad in [(CLUSTER / 2) | COPIED, (CLUSTER + 512) | COPIED] {
        let f = image(1, bad);
        let mut q = Qcow2::open(f.as_file()).unwrap();
        let e = q.plan(f.as_file(), &[change()]).unwrap_err();
        assert!(e.contains("damaged"), "{bad:#x}: {e}");
    }
}
