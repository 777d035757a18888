//! Differential: nodenet's qcow2 reader and in-place planner against QEMU.
//!
//! Each seeded case makes a qcow2 image with `qemu-img create` (cluster
//! size 512 B to 64 KiB, sometimes metadata-preallocated) and lays data on
//! it with `qemu-io` (pattern writes, zero writes, discards, sometimes a
//! compressed cluster), so the L1/L2 tables, zero flags and refcounts are
//! QEMU's own. Then:
//!
//! - every guest cluster read through `Qcow2::backing` (zeros, or the data
//!   at the host offset it names) equals the guest bytes `qemu-img convert
//!   -O raw` gives; an image with a compressed cluster may only be refused;
//! - random byte ranges planned with `Qcow2::plan` and written as planned
//!   (edits in place, the appended clusters after the end) give an image
//!   that `qemu-img compare` finds equal, as guest data, to the raw image
//!   with the same bytes written, and that `qemu-img check` finds clean
//!   (no corruption, no leaked cluster).
//!
//!   QCOW2_CASES=N QCOW2_SEED=S   more or other cases

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::Command;

use crate::disk::qcow2::{Backing, Qcow2};

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn run(cmd: &mut Command) -> std::process::Output {
    let o = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e} (CI installs qemu-utils)"));
    assert!(
        o.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// The guest bytes as QEMU reads them.
fn guest_raw(img: &Path, raw: &Path) -> Vec<u8> {
    run(Command::new("qemu-img")
        .args(["convert", "-f", "qcow2", "-O", "raw"])
        .arg(img)
        .arg(raw));
    std::fs::read(raw).unwrap()
}

#[derive(Default, Debug)]
struct Tally {
    cases: u64,
    clusters_read: u64,
    refused_compressed: u64,
    planned: u64,
    plan_refused: u64,
    clusters_changed: u64,
    appended_bytes: u64,
}

fn one_case(dir: &Path, rng: &mut fastrand::Rng, tally: &mut Tally) {
    let cluster: u64 = [512, 1024, 4096, 4096, 65536][rng.u64(0..5) as usize];
    let size = cluster * (8 + rng.u64(0..400));
    let img = dir.join("a.qcow2");
    let _ = std::fs::remove_file(&img);
    let mut opts = format!("cluster_size={cluster}");
    let preallocated = rng.u64(0..4) == 0;
    if preallocated {
        opts += ",preallocation=metadata";
    }
    run(Command::new("qemu-img")
        .args(["create", "-q", "-f", "qcow2", "-o", &opts])
        .arg(&img)
        .arg(size.to_string()));

    // QEMU lays out the data: one qemu-io process, many commands.
    let mut io = Command::new("qemu-io");
    io.args(["-f", "qcow2"]);
    // A compressed write only goes to a cluster not yet allocated: first.
    let compressed = !preallocated && rng.u64(0..5) == 0;
    if compressed {
        let c = rng.u64(0..size / cluster) * cluster;
        io.args([
            "-c",
            &format!("write -c -P {} {c} {cluster}", 1 + rng.u64(0..255)),
        ]);
    }
    for _ in 0..1 + rng.u64(0..12) {
        let off = rng.u64(0..size);
        let len = (1 + rng.u64(0..cluster * 3)).min(size - off);
        let cmd = match rng.u64(0..9) {
            0..=5 => format!("write -P {} {off} {len}", 1 + rng.u64(0..255)),
            6 | 7 => format!("write -z {off} {len}"),
            _ => format!("discard {off} {len}"),
        };
        io.args(["-c", &cmd]);
    }
    io.arg(&img);
    run(&mut io);
    let raw = guest_raw(&img, &dir.join("a.raw"));
    assert_eq!(raw.len() as u64, size);

    // The reader against QEMU's guest view.
    let file = File::open(&img).unwrap();
    let mut q = Qcow2::open(&file).unwrap_or_else(|e| panic!("{opts}: {e}"));
    assert_eq!((q.cluster, q.size), (cluster, size));
    let mut refused = false;
    let mut buf = vec![0u8; cluster as usize];
    for c in 0..size / cluster {
        let want = &raw[(c * cluster) as usize..((c + 1) * cluster) as usize];
        match q.backing(&file, c) {
            Ok(Backing::Zeros) => assert!(
                want.iter().all(|&b| b == 0),
                "cluster {c} read as zeros, QEMU has data ({opts})"
            ),
            Ok(Backing::Host(at)) => {
                file.read_exact_at(&mut buf, at).unwrap();
                assert!(
                    buf == want,
                    "cluster {c} at {at} differs from QEMU ({opts})"
                );
            }
            Err(e) => {
                assert!(compressed, "cluster {c}: {e} ({opts})");
                refused = true;
            }
        }
        tally.clusters_read += 1;
    }
    tally.refused_compressed += refused as u64;

    // The planner: random ranges in random clusters, written as planned.
    let mut changes = Vec::new();
    let mut expected = raw.clone();
    let mut picked = std::collections::BTreeSet::new();
    for _ in 0..1 + rng.u64(0..8) {
        let c = rng.u64(0..size / cluster);
        if !picked.insert(c) {
            continue;
        }
        let start = rng.u64(0..cluster) as usize;
        let end = start + 1 + rng.u64(0..cluster - start as u64) as usize;
        let base = (c * cluster) as usize;
        for b in &mut expected[base + start..base + end] {
            *b = rng.u8(..);
        }
        let data = expected[base..base + cluster as usize].to_vec();
        changes.push((c, data, start..end));
    }
    let (edits, appended) = match q.plan(&file, &changes) {
        Ok(p) => p,
        Err(e) => {
            // Compressed clusters in the way are the reason to refuse here.
            assert!(compressed, "plan refused: {e} ({opts})");
            tally.plan_refused += 1;
            tally.cases += 1;
            return;
        }
    };
    drop(file);
    let end = std::fs::metadata(&img).unwrap().len();
    let out = std::fs::OpenOptions::new().write(true).open(&img).unwrap();
    for e in &edits {
        assert!(e.at + e.bytes.len() as u64 <= end, "edit past the end");
        out.write_all_at(&e.bytes, e.at).unwrap();
    }
    out.write_all_at(&appended, end).unwrap();
    drop(out);
    let want = dir.join("want.raw");
    std::fs::write(&want, &expected).unwrap();
    let cmp = Command::new("qemu-img")
        .args(["compare", "-f", "qcow2", "-F", "raw"])
        .arg(&img)
        .arg(&want)
        .output()
        .unwrap();
    assert!(
        cmp.status.success(),
        "{opts}, changes {:?}: {}",
        changes.iter().map(|(c, _, r)| (c, r)).collect::<Vec<_>>(),
        String::from_utf8_lossy(&cmp.stdout)
    );
    run(Command::new("qemu-img").args(["check", "-q"]).arg(&img));
    tally.planned += 1;
    tally.clusters_changed += changes.len() as u64;
    tally.appended_bytes += appended.len() as u64;
    tally.cases += 1;
}

#[test]
fn qcow2_reader_and_planner_agree_with_qemu() {
    let cases = env_num("QCOW2_CASES", 60);
    let seed = env_num("QCOW2_SEED", 17);
    let mut rng = fastrand::Rng::with_seed(seed);
    let tmp = tempfile::tempdir().unwrap();
    let mut tally = Tally::default();
    for _ in 0..cases {
        one_case(tmp.path(), &mut rng, &mut tally);
    }
    eprintln!("seed {seed}: {tally:?}");
    assert_eq!(tally.cases, cases);
    // The cases reach both paths of the planner and the refusal.
    assert!(tally.planned > cases / 2, "{tally:?}");
    assert!(tally.appended_bytes > 0, "{tally:?}");
}
