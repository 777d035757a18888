//! Property: for random edits of the boot partition, the image the
//! in-place patch makes (changed qcow2 clusters, spliced deflate blocks)
//! equals, as guest bytes, the one the whole-rewrite path makes (qemu-img
//! convert, debugfs, gzip anew); and `qemu-img check`, `gzip -t`,
//! `e2fsck -fn` pass on it. Cases are seeded; `PATCH_CASES` sets how many
//! (default 200; `PATCH_SEED` another seed).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use rayon::prelude::*;

use crate::disk::{self, Method};

fn sh(cmd: &str) -> Vec<u8> {
    let o = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .env("PATH", "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{cmd}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

/// A small, seeded generator (no dependency for a loop of 200).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 11
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    /// Printable text (debugfs reads files back as text).
    fn text(&mut self, len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| {
                if i % 61 == 60 {
                    b'\n'
                } else {
                    b' ' + self.below(95) as u8
                }
            })
            .collect()
    }
}

/// A GPT disk with an ext4 `boot` partition of 12 MiB (`filler` bytes of
/// it already used) and a patterned root; returns its raw path.
fn disk(dir: &Path, name: &str, filler: usize, rng: &mut Rng) -> PathBuf {
    let staging = dir.join(format!("{name}-staging"));
    fs::create_dir_all(staging.join("grub2")).unwrap();
    fs::write(staging.join("grub2/grub.cfg"), "set timeout=1\n").unwrap();
    if filler > 0 {
        fs::write(staging.join("filler"), rng.text(filler)).unwrap();
    }
    let raw = dir.join(format!("{name}.raw"));
    let boot = dir.join(format!("{name}-boot.img"));
    let (r, b, s) = (raw.display(), boot.display(), staging.display());
    sh(&format!(
        "truncate -s 20M '{r}' && sgdisk -o -n 1:2048:+1M -c 1:bios -n 2:0:+12M -c 2:boot -n 3:0:0 -c 3:root '{r}' >/dev/null \
         && mkfs.ext4 -q -F -L boot -d '{s}' '{b}' 12M \
         && dd if='{b}' of='{r}' bs=512 seek=4096 conv=notrunc status=none \
         && yes nodenet-root | head -c 4M | dd of='{r}' bs=512 seek=28672 conv=notrunc status=none"
    ));
    raw
}

/// The raw guest bytes of an image in any of the four formats.
fn guest(path: &Path, scratch: &Path) -> Vec<u8> {
    let p = path.display();
    let name = path.to_string_lossy();
    let mut image = path.to_path_buf();
    if name.ends_with(".gz") {
        sh(&format!("gzip -t '{p}'"));
        image = scratch.join("guest-unzipped");
        sh(&format!("gzip -dc '{p}' > '{}'", image.display()));
    }
    if name.contains(".qcow2") {
        let check =
            String::from_utf8(sh(&format!("qemu-img check '{}'", image.display()))).unwrap();
        assert!(check.contains("No errors were found"), "{check}");
        let raw = scratch.join("guest.raw");
        sh(&format!(
            "qemu-img convert -O raw '{}' '{}'",
            image.display(),
            raw.display()
        ));
        image = raw;
    }
    fs::read(&image).unwrap()
}

#[test]
fn patched_images_equal_rewritten_ones_as_guest_bytes() {
    let cases: usize = std::env::var("PATCH_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let seed: u64 = std::env::var("PATCH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(17);
    // debugfs stamps what it writes with the time: both paths must run
    // at the same instant to make the same bytes. (No other test of this
    // binary reads the variable; std's own environment access is locked.)
    std::env::set_var("E2FSPROGS_FAKE_TIME", "1700000000");
    let mut rng = Rng(seed);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();

    // Bases: a roomy boot partition, a nearly full one (debugfs must find
    // blocks wherever they are left), and one that already has our files.
    let roomy = disk(dir, "roomy", 0, &mut rng);
    let full = disk(dir, "full", 8704 << 10, &mut rng);
    let has_ours = dir.join("ours.raw");
    disk::inject_by_rewriting(
        &roomy,
        &has_ours,
        &[("eno1.nmconnection".into(), rng.text(300))],
        Some(&rng.text(5000)),
    )
    .unwrap();
    // Each in every format, the .gz ones as gzip -1, gzip -9, pigz and a
    // sync-flush-heavy zlib writer make them.
    let mut inputs = Vec::new();
    for base in [&roomy, &full, &has_ours] {
        let b = base.display();
        let stem = base.file_stem().unwrap().to_string_lossy().into_owned();
        let q = dir.join(format!("{stem}.qcow2"));
        sh(&format!(
            "qemu-img convert -O qcow2 '{b}' '{}'",
            q.display()
        ));
        let q = q.display();
        for (name, cmd) in [
            (format!("{stem}.raw"), String::new()),
            (format!("{stem}.qcow2"), String::new()),
            (format!("{stem}-g1.raw.gz"), format!("gzip -1c '{b}'")),
            (format!("{stem}-g9.qcow2.gz"), format!("gzip -9c '{q}'")),
            (format!("{stem}-pigz.raw.gz"), format!("pigz -c '{b}'")),
            // Two gzip members: rewritten whole (said so, checked below).
            (
                format!("{stem}-multi.raw.gz"),
                format!("(head -c 8388608 '{b}' | gzip; tail -c +8388609 '{b}' | gzip)"),
            ),
            (
                format!("{stem}-sync.qcow2.gz"),
                format!(
                    "python3 -c 'import sys,zlib;d=open(sys.argv[1],\"rb\").read();c=zlib.compressobj(6,zlib.DEFLATED,31);o=sys.stdout.buffer;[o.write(c.compress(d[i:i+8192])+c.flush(zlib.Z_SYNC_FLUSH)) for i in range(0,len(d),8192)];o.write(c.flush())' '{q}'"
                ),
            ),
        ] {
            let path = dir.join(&name);
            if !cmd.is_empty() {
                fs::write(&path, sh(&cmd)).unwrap();
            }
            inputs.push(path);
        }
    }

    // The cases, drawn in order from the seed, then run on every core
    // (each is a few tool runs; one at a time left a core idle for 100 s).
    let cases: Vec<Case> = (0..cases)
        .map(|number| {
            let input = inputs[rng.below(inputs.len() as u64) as usize].clone();
            let n = rng.below(5) as usize;
            let keyfiles: Vec<(String, Vec<u8>)> = (0..n)
                .map(|i| {
                    // Zero-length files, and names the base already has.
                    let len =
                        [0, 1, 200, 4096, 70_000][rng.below(5) as usize] + rng.below(300) as usize;
                    (format!("eno{}.nmconnection", i + 1), rng.text(len))
                })
                .collect();
            let ignition_len = match rng.below(3) {
                0 => None,
                1 => Some(rng.below(20_000) as usize),
                _ => Some(200_000 + rng.below(900_000) as usize),
            };
            let ignition = ignition_len.map(|len| rng.text(len));
            Case {
                number,
                input,
                keyfiles,
                ignition,
            }
        })
        .collect();
    let patched = cases
        .par_iter()
        .filter(|case| run_case(case, seed, dir))
        .count();
    let cases = cases.len();
    let rewritten_anyway = cases - patched;
    eprintln!(
        "{cases} cases (seed {seed}): {patched} patched, {rewritten_anyway} rewritten (multi-member .gz), all equal to the rewrite"
    );
    assert!(patched > 0);
}

/// One seeded edit of one input image.
struct Case {
    number: usize,
    input: PathBuf,
    keyfiles: Vec<(String, Vec<u8>)>,
    ignition: Option<Vec<u8>>,
}

/// Patches and rewrites `case`'s input and compares the two as guest
/// bytes, in a scratch directory of its own; true when it was patched.
fn run_case(case: &Case, seed: u64, dir: &Path) -> bool {
    let Case {
        number,
        input,
        keyfiles,
        ignition,
    } = case;
    let scratch = dir.join(format!("case-{number}"));
    fs::create_dir_all(&scratch).unwrap();
    let name = input.file_name().unwrap().to_string_lossy().into_owned();
    let a = scratch.join(format!("patched-{name}"));
    let b = scratch.join(format!("rewritten-{name}"));
    let what = format!(
        "case {number} (seed {seed}): {name}, {} keyfiles, ignition {:?} bytes",
        keyfiles.len(),
        ignition.as_ref().map(Vec::len)
    );
    let written = disk::inject(input, &a, keyfiles, ignition.as_deref(), &|_| {})
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let patched = match &written.method {
        Method::Patched { .. } => true,
        Method::Rewritten { reason } => {
            assert!(name.contains("-multi"), "{what}: rewritten: {reason}");
            assert!(reason.contains("gzip member"), "{what}: {reason}");
            false
        }
    };
    if name.contains("-multi") {
        assert!(!patched, "{what}");
    }
    disk::inject_by_rewriting(input, &b, keyfiles, ignition.as_deref())
        .unwrap_or_else(|e| panic!("{what}: rewrite: {e}"));
    let ga = guest(&a, &scratch);
    let gb = guest(&b, &scratch);
    if ga != gb {
        let diff: Vec<usize> = (0..ga.len().min(gb.len()))
            .filter(|&i| ga[i] != gb[i])
            .collect();
        panic!(
            "{what}: guest bytes differ ({} and {} bytes, {} differ, first at {:?})",
            ga.len(),
            gb.len(),
            diff.len(),
            diff.first()
        );
    }
    // The boot filesystem is clean (it starts at sector 4096).
    let part = scratch.join("boot.part");
    fs::write(&part, &ga[4096 * 512..(4096 + 24576) * 512]).unwrap();
    let fsck = Command::new("/usr/sbin/e2fsck")
        .arg("-fn")
        .arg(&part)
        .output()
        .unwrap();
    assert!(
        fsck.status.success(),
        "{what}: e2fsck: {}{}",
        String::from_utf8_lossy(&fsck.stdout),
        String::from_utf8_lossy(&fsck.stderr)
    );
    let _ = fs::remove_dir_all(&scratch);
    patched
}
