//! Boot media, judged by the real coreos-installer 0.27.0 (`iso network
//! extract`, `iso ignition show`, `dev show initrd`), cpio/xz, and raw HTTP.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::*;

fn coreos_installer(args: &[&str], path: &Path) -> String {
    let o = run(Command::new(tool("coreos-installer")).args(args).arg(path));
    assert!(
        o.status.success(),
        "coreos-installer {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// The keyfiles `nodenet render` writes for a host of the example.
fn rendered_keyfiles(dir: &Path, host: &str) -> Vec<(String, String)> {
    let out = dir.join("render");
    if !out.exists() {
        let o = run(nodenet()
            .arg("render")
            .arg(repo().join("examples/lacp-vlan.yaml"))
            .arg("-o")
            .arg(&out));
        assert!(o.status.success());
    }
    files_by_name(&out.join(format!("hosts/{host}/system-connections")))
        .into_iter()
        .collect()
}

#[test]
fn iso_embed_is_read_back_by_coreos_installer() {
    if skip_without(&["coreos-installer", "xorriso"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let iso = build_iso(tmp.path(), "live", true, true);
    let before = fs::read(&iso).unwrap();
    let out = tmp.path().join("master-0.iso");
    let o = run(nodenet()
        .args(["image", "iso"])
        .arg(repo().join("examples/lacp-vlan.yaml"))
        .args(["--host", "master-0"])
        .arg(&iso)
        .arg("-o")
        .arg(&out));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The input is untouched.
    assert_eq!(fs::read(&iso).unwrap(), before);
    // coreos-installer extracts exactly our keyfiles.
    let extract = tmp.path().join("extract");
    let o = run(Command::new(tool("coreos-installer"))
        .args(["iso", "network", "extract", "--directory"])
        .arg(&extract)
        .arg(&out));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let got: Vec<(String, String)> = files_by_name(&extract).into_iter().collect();
    assert_eq!(got, rendered_keyfiles(tmp.path(), "master-0"));
    // Only the embed area changed.
    let after = fs::read(&out).unwrap();
    assert_eq!(after.len(), before.len());
    let changed: Vec<usize> = before
        .iter()
        .zip(&after)
        .enumerate()
        .filter(|(_, (a, b))| a != b)
        .map(|(i, _)| i)
        .collect();
    let (first, last) = (changed[0], *changed.last().unwrap());
    assert!(last - first < 256 * 1024, "changes span {first}..{last}");
}

#[test]
fn iso_keeps_or_replaces_embedded_ignition() {
    if skip_without(&["coreos-installer", "xorriso"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let iso = build_iso(tmp.path(), "live", true, true);
    let theirs = tmp.path().join("theirs.ign");
    fs::write(
        &theirs,
        "{\"ignition\":{\"version\":\"3.2.0\"},\"passwd\":{}}\n",
    )
    .unwrap();
    let o = run(Command::new(tool("coreos-installer"))
        .args(["iso", "ignition", "embed", "-i"])
        .arg(&theirs)
        .arg(&iso));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let kf = tmp.path().join("eno1.nmconnection");
    fs::write(
        &kf,
        "[connection]\nid=eno1\ntype=ethernet\ninterface-name=eno1\n\n[ipv4]\nmethod=auto\n",
    )
    .unwrap();
    // In place, keeping the embedded Ignition config.
    let o = run(nodenet()
        .args(["image", "iso", "--in-place", "--keyfile"])
        .arg(&kf)
        .arg(&iso));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        coreos_installer(&["iso", "ignition", "show"], &iso).trim(),
        fs::read_to_string(&theirs).unwrap().trim()
    );
    let nets = coreos_installer(&["iso", "network", "extract"], &iso);
    assert!(nets.contains("id=eno1"), "{nets}");
    // With --ignition ours replaces it.
    let ours = tmp.path().join("ours.ign");
    fs::write(&ours, "{\"ignition\":{\"version\":\"3.4.0\"}}\n").unwrap();
    let o = run(nodenet()
        .args(["image", "iso", "--in-place", "--keyfile"])
        .arg(&kf)
        .arg("--ignition")
        .arg(&ours)
        .arg(&iso));
    assert!(o.status.success());
    assert_eq!(
        coreos_installer(&["iso", "ignition", "show"], &iso).trim(),
        fs::read_to_string(&ours).unwrap().trim()
    );
}

#[test]
fn iso_refusals_are_clear_and_leave_no_output() {
    if skip_without(&["xorriso"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let kf = tmp.path().join("eno1.nmconnection");
    fs::write(&kf, "[connection]\nid=eno1\ntype=ethernet\n").unwrap();
    let cases = [
        (
            build_iso(tmp.path(), "no-area", true, false),
            "not a CoreOS live ISO",
        ),
        (
            build_iso(tmp.path(), "no-network", false, true),
            "live-initrd-network",
        ),
    ];
    for (iso, msg) in cases {
        let out = tmp.path().join("out.iso");
        let o = run(nodenet()
            .args(["image", "iso", "--keyfile"])
            .arg(&kf)
            .arg(&iso)
            .arg("-o")
            .arg(&out));
        assert_eq!(o.status.code(), Some(1), "{iso:?}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(msg),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(!out.exists());
    }
    // A plain file is no ISO.
    let plain = tmp.path().join("plain.iso");
    fs::write(&plain, vec![7u8; 100_000]).unwrap();
    let o = run(nodenet()
        .args(["image", "iso", "--in-place", "--keyfile"])
        .arg(&kf)
        .arg(&plain));
    assert_eq!(o.status.code(), Some(1));
    // A payload larger than the area (256 KiB): a valid keyfile carrying
    // 800 KB of comments made of random characters (6 bits each), which
    // xz cannot shrink below ~600 KB.
    let iso = build_iso(tmp.path(), "small", true, true);
    let mut x: u64 = 88172645463325252;
    const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut noise = b"[connection]\nid=big\ntype=ethernet\ninterface-name=eno9\n".to_vec();
    for i in 0..800_000 {
        if i % 80 == 0 {
            noise.extend_from_slice(b"\n#");
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        noise.push(CHARS[(x % 64) as usize]);
    }
    noise.push(b'\n');
    let big = tmp.path().join("big.nmconnection");
    fs::write(&big, &noise).unwrap();
    let before = fs::read(&iso).unwrap();
    let o = run(nodenet()
        .args(["image", "iso", "--in-place", "--keyfile"])
        .arg(&big)
        .arg(&iso));
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("does not fit"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        fs::read(&iso).unwrap(),
        before,
        "a refused in-place embed must not touch the ISO"
    );
}

/// `nicBinding: pin`: the host's .link files go into the initrd where the
/// live ramdisk's udev reads them (etc/systemd/network, 0644), beside the
/// keyfiles; read back by cpio(1). A host bound by name gets none.
#[test]
fn pinned_nic_names_go_into_the_initrd_as_link_files() {
    let tmp = tempfile::tempdir().unwrap();
    let listing = |inv: &str| {
        let out = tmp.path().join("p.cpio.xz");
        let o = run(nodenet()
            .args(["image", "pxe"])
            .arg(repo().join(inv))
            .args(["--host", "master-0", "-o"])
            .arg(&out));
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let x = tmp.path().join("x");
        let _ = fs::remove_dir_all(&x);
        fs::create_dir_all(&x).unwrap();
        sh(&format!(
            "cd {} && xz -dc {} | cpio -idm --quiet",
            x.display(),
            out.display()
        ));
        x
    };
    let x = listing("examples/pxe-active-backup.yaml");
    let dir = x.join("etc/systemd/network");
    let mut names: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "10-nodenet-eno1-525400200001.link",
            "10-nodenet-eno2-525400200002.link"
        ]
    );
    let eno1 = fs::read_to_string(dir.join(&names[0])).unwrap();
    assert!(
        eno1.contains("PermanentMACAddress=52:54:00:20:00:01\n")
            && eno1.contains("[Link]\nName=eno1\n"),
        "{eno1}"
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::metadata(dir.join(&names[0]))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o644);
    assert!(x
        .join("etc/coreos-firstboot-network/bond0.nmconnection")
        .is_file());
    let x = listing("examples/lacp-vlan.yaml");
    assert!(!x.join("etc/systemd").exists());
}

#[test]
fn image_takes_the_inventory_first_and_c_still_works() {
    let tmp = tempfile::tempdir().unwrap();
    let inv = repo().join("examples/lacp-vlan.yaml");
    let (a, b) = (tmp.path().join("a.cpio.xz"), tmp.path().join("b.cpio.xz"));
    let o = run(nodenet()
        .args(["image", "pxe"])
        .arg(&inv)
        .args(["--host", "master-0", "-o"])
        .arg(&a));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = run(nodenet()
        .args(["image", "pxe", "--host", "master-0", "-c"])
        .arg(&inv)
        .arg("-o")
        .arg(&b));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(fs::read(&a).unwrap(), fs::read(&b).unwrap());
    // --host without an inventory, or the inventory twice: usage errors.
    let o = run(nodenet()
        .args(["image", "pxe", "--host", "master-0", "-o"])
        .arg(tmp.path().join("c")));
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("inventory"));
    let o = run(nodenet()
        .args(["image", "pxe"])
        .arg(&inv)
        .args(["--host", "master-0", "-c"])
        .arg(&inv)
        .arg("-o")
        .arg(tmp.path().join("c")));
    assert_eq!(o.status.code(), Some(2));
    // The help documents the positional form and -o, not -c; the command
    // list names every kind of media.
    for kind in ["iso", "pxe", "disk"] {
        let o = run(nodenet().args(["image", kind, "--help"]));
        let help = String::from_utf8_lossy(&o.stdout);
        assert!(help.contains("[INVENTORY]"), "{kind}: {help}");
        assert!(!help.contains("--inventory"), "{kind}: {help}");
        let o_line = help
            .lines()
            .find(|l| l.trim_start().starts_with("-o, --output"))
            .unwrap_or_else(|| panic!("{kind}: {help}"));
        assert!(
            o_line
                .split("<OUT>")
                .nth(1)
                .is_some_and(|t| !t.trim().is_empty()),
            "{kind}: -o has no help: {o_line}"
        );
    }
    let o = run(nodenet().arg("--help"));
    let help = String::from_utf8_lossy(&o.stdout);
    let line = help
        .lines()
        .find(|l| l.trim_start().starts_with("image"))
        .unwrap();
    assert!(line.contains("disk"), "{line}");
}

#[test]
fn pxe_initrd_and_appended_form_list_our_files_0600() {
    if skip_without(&["coreos-installer"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("master-0-network.cpio.xz");
    let o = run(nodenet()
        .args(["image", "pxe", "--host", "master-0", "-c"])
        .arg(repo().join("examples/lacp-vlan.yaml"))
        .arg("-o")
        .arg(&out));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // xz -dc | cpio -itv: every keyfile, mode -rw-------.
    let listing = Command::new("sh")
        .arg("-c")
        .arg(format!("xz -dc '{}' | cpio -itv --quiet", out.display()))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&listing.stdout);
    for (name, _) in rendered_keyfiles(tmp.path(), "master-0") {
        let line = text
            .lines()
            .find(|l| l.ends_with(&format!("etc/coreos-firstboot-network/{name}")))
            .unwrap_or_else(|| panic!("{name} missing:\n{text}"));
        assert!(line.starts_with("-rw-------"), "{line}");
    }
    // A live initramfs (gzip cpio with the live marker), appended to.
    let live_tree = tmp.path().join("live");
    fs::create_dir_all(live_tree.join("etc")).unwrap();
    fs::write(live_tree.join("etc/coreos-live-initramfs"), "").unwrap();
    fs::write(live_tree.join("init"), "#!/bin/sh\n").unwrap();
    let initramfs = tmp.path().join("initramfs.img");
    let st = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "cd '{}' && find . | cpio -o -H newc --quiet | gzip -9 > '{}'",
            live_tree.display(),
            initramfs.display()
        ))
        .status()
        .unwrap();
    assert!(st.success());
    let joined = tmp.path().join("initramfs-network.img");
    let o = run(nodenet()
        .args(["image", "pxe", "--host", "master-0", "-c"])
        .arg(repo().join("examples/lacp-vlan.yaml"))
        .arg("--append-to")
        .arg(&initramfs)
        .arg("-o")
        .arg(&joined));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let shown = coreos_installer(&["dev", "show", "initrd"], &joined);
    assert!(shown.contains("etc/coreos-live-initramfs"), "{shown}");
    assert!(
        shown.contains("etc/coreos-firstboot-network/bond0.110.nmconnection"),
        "{shown}"
    );
    // Not a live initramfs: refused.
    let o = run(nodenet()
        .args(["image", "pxe", "--host", "master-0", "-c"])
        .arg(repo().join("examples/lacp-vlan.yaml"))
        .arg("--append-to")
        .arg(&out)
        .arg("-o")
        .arg(tmp.path().join("x.img")));
    assert_eq!(o.status.code(), Some(1));
    assert!(!tmp.path().join("x.img").exists());
}

/// A directory `dir/name` holding `files` (path, contents).
fn tree(dir: &Path, name: &str, files: &[(&str, &[u8])]) -> PathBuf {
    let root = dir.join(name);
    for (path, data) in files {
        let p = root.join(path);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, data).unwrap();
    }
    root
}

/// `find . | sort | cpio -o -H FORMAT` in `tree`: an archive as GNU cpio
/// (and dracut) writes it: names without `./`, a `.` entry for the root,
/// zero padding to 512 bytes after the trailer.
fn gnu_cpio(tree: &Path, format: &str) -> Vec<u8> {
    let o = run(Command::new("sh").arg("-c").arg(format!(
        "cd '{}' && find . | LC_ALL=C sort | cpio -o -H {format} --quiet",
        tree.display()
    )));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    o.stdout
}

/// `data` through the shell filter `cmd` (a compressor).
fn filter(cmd: &str, data: &[u8]) -> Vec<u8> {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let data = data.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&data).unwrap());
    let o = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(o.status.success(), "{cmd} failed");
    o.stdout
}

fn gz(data: &[u8]) -> Vec<u8> {
    filter("gzip -9 -n -c", data)
}

/// As dracut compresses (the kernel's xz decoder wants CRC32).
fn xz(data: &[u8]) -> Vec<u8> {
    filter("xz --check=crc32 --lzma2=dict=1MiB -c", data)
}

fn zst(data: &[u8]) -> Vec<u8> {
    filter("zstd -q -19 -c", data)
}

/// One newc entry written by hand, its name field padded with `extra`
/// NULs: the shape of dracut-cpio's `--data-align` archives.
fn newc_entry(name: &str, mode: u32, data: &[u8], extra: usize) -> Vec<u8> {
    let namesize = name.len() + 1 + extra;
    let mut e = format!(
        "070701{:08X}{mode:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{namesize:08X}{:08X}",
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

/// An archive like `dracut-cpio --data-align=ALIGN`: the data of each
/// file larger than `align` starts at a multiple of `align` from the
/// archive's start, the name field padded with NULs to get there (never
/// past PATH_MAX).
fn padded_names_cpio(files: &[(&str, &[u8])], align: usize) -> Vec<u8> {
    let mut a = Vec::new();
    for (name, data) in files {
        if let Some((dir, _)) = name.rsplit_once('/') {
            a.extend(newc_entry(dir, 0o040755, b"", 0));
        }
        let mut extra = 0;
        if data.len() > align {
            let data_at = a.len() + 110 + name.len() + 1;
            extra = (align - data_at % align) % align;
            assert!(name.len() + 1 + extra <= 4096);
        }
        a.extend(newc_entry(name, 0o100644, data, extra));
        if extra > 0 {
            assert_eq!((a.len() - data.len().div_ceil(4) * 4) % align, 0);
        }
    }
    a.extend(newc_entry("TRAILER!!!", 0, b"", 0));
    a
}

/// What coreos-installer lists, and each file's contents as it extracts
/// them (`dev extract initrd`).
fn coreos_installer_files(dir: &Path, initrd: &Path) -> Vec<(String, Vec<u8>)> {
    let listed = coreos_installer(&["dev", "show", "initrd"], initrd);
    let out = dir.join(format!(
        "extracted-{}",
        initrd.file_name().unwrap().to_string_lossy()
    ));
    let o = run(Command::new(tool("coreos-installer"))
        .args(["dev", "extract", "initrd", "-C"])
        .arg(&out)
        .arg(initrd));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    listed
        .lines()
        .map(|p| (p.to_string(), fs::read(out.join(p)).unwrap()))
        .collect()
}

/// Our reader's regular files (what coreos-installer lists), by path.
fn our_files(data: &[u8]) -> Vec<(String, Vec<u8>)> {
    nodenet_image::initrd::read_initrd(data, &|_| true)
        .unwrap_or_else(|e| panic!("our reader refused it: {e}"))
        .into_iter()
        .filter(|m| m.is_file())
        .map(|m| (m.path, m.data))
        .collect()
}

const LIVE: (&str, &[u8]) = ("etc/coreos-live-initramfs", b"");

/// The live initramfs shapes dracut and coreos-installer produce and
/// read, each built with the real tools.
fn initramfs_shapes() -> Vec<(&'static str, Vec<u8>)> {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let ucode = gnu_cpio(
        &tree(
            t,
            "early",
            &[("kernel/x86/microcode/GenuineIntel.bin", b"microcode")],
        ),
        "newc",
    );
    let main = gnu_cpio(
        &tree(
            t,
            "main",
            &[
                LIVE,
                ("init", b"#!/bin/sh\n"),
                ("usr/lib/a.so", &[0x7f; 3000]),
            ],
        ),
        "newc",
    );
    let part = |name: &str, f: &[(&str, &[u8])]| gnu_cpio(&tree(t, name, f), "newc");
    let mut shapes = Vec::new();
    // dracut: early microcode raw, then the main archive compressed.
    for (name, main) in [
        ("dracut-gzip", gz(&main)),
        ("dracut-xz", xz(&main)),
        ("dracut-zstd", zst(&main)),
        ("dracut-pigz", filter("pigz -9 -n -c", &main)),
    ] {
        shapes.push((name, [ucode.clone(), main].concat()));
    }
    // Every format in one file, zero padding between (of odd length before
    // a compressed member; a raw one starts 4-byte aligned, as the kernel
    // wants); an xz member followed by a zstd one (the issue's "lzma data
    // error").
    let mut all = ucode.clone();
    all.extend(gz(&part("gz", &[("gzip/hello", b"HELLO\n")])));
    all.extend([0u8; 3]);
    all.extend(xz(&main));
    all.extend(zst(&part("zst", &[("zstd/hello", b"HELLO\n")])));
    all.resize(all.len().div_ceil(4) * 4 + 4096, 0);
    all.extend(part("raw", &[("uncompressed/hello", b"HELLO\n")]));
    shapes.push(("raw-gzip-xz-zstd-raw", all));
    // One archive across two zstd frames, then a pigz member.
    let big = part("frames", &[LIVE, ("big/file", &[b'z'; 20000])]);
    let mut frames = zst(&big[..7000]);
    frames.extend(zst(&big[7000..]));
    frames.extend(filter("pigz -c", &part("p", &[("pigz/hello", b"HELLO\n")])));
    shapes.push(("zstd-frames-pigz", frames));
    // The "crc" newc variant (magic 070702).
    shapes.push((
        "crc-xz",
        xz(&gnu_cpio(
            &tree(t, "crc", &[LIVE, ("c/d", b"crc\n")]),
            "crc",
        )),
    ));
    // dracut-cpio --data-align=4096 (padded names), raw and compressed.
    let padded = padded_names_cpio(
        &[
            LIVE,
            ("dir/hello", &[b'z'; 5000]),
            ("dir/world", &[b'q'; 4500]),
            ("small", b"s"),
        ],
        4096,
    );
    shapes.push(("padded-names", [ucode.clone(), padded.clone()].concat()));
    shapes.push(("padded-names-zstd", [ucode.clone(), zst(&padded)].concat()));
    // A path repeated across members: the last copy counts.
    let mut rep = part("r1", &[LIVE, ("data/file", b"first\n")]);
    rep.extend(gz(&part("r2", &[("data/file", b"second\n")])));
    rep.extend(zst(&part("r3", &[("data/file", b"third\n")])));
    shapes.push(("repeated-path", rep));
    shapes
}

#[test]
fn pxe_initrd_reader_lists_what_coreos_installer_lists() {
    if skip_without(&["coreos-installer"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let shapes = initramfs_shapes();
    for (name, data) in &shapes {
        let path = tmp.path().join(format!("{name}.img"));
        fs::write(&path, data).unwrap();
        let theirs = coreos_installer_files(tmp.path(), &path);
        assert!(theirs.iter().any(|(p, _)| p == LIVE.0), "{name}");
        assert_eq!(our_files(data), theirs, "{name}: listings differ");
    }
    let rep = &shapes.iter().find(|s| s.0 == "repeated-path").unwrap().1;
    let file = our_files(rep).into_iter().find(|f| f.0 == "data/file");
    assert_eq!(file.unwrap().1, b"third\n");
}

#[test]
fn pxe_append_to_every_initramfs_shape_is_read_back_by_coreos_installer() {
    if skip_without(&["coreos-installer"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let keyfile = tmp.path().join("eno1.nmconnection");
    fs::write(&keyfile, "[connection]\nid=eno1\ntype=ethernet\n").unwrap();
    let ours = "etc/coreos-firstboot-network/eno1.nmconnection";
    for (name, data) in initramfs_shapes() {
        let base = tmp.path().join(format!("{name}.img"));
        fs::write(&base, &data).unwrap();
        let out = tmp.path().join(format!("{name}-network.img"));
        let o = run(nodenet()
            .args(["image", "pxe", "--keyfile"])
            .arg(&keyfile)
            .arg("--append-to")
            .arg(&base)
            .arg("-o")
            .arg(&out));
        assert!(
            o.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let joined = fs::read(&out).unwrap();
        assert_eq!(&joined[..data.len()], &data[..], "{name}: input kept as is");
        let before = coreos_installer(&["dev", "show", "initrd"], &base);
        let after = coreos_installer(&["dev", "show", "initrd"], &out);
        let mut want: Vec<&str> = before.lines().chain([ours]).collect();
        want.sort();
        assert_eq!(after.lines().collect::<Vec<_>>(), want, "{name}");
        assert_eq!(
            our_files(&joined),
            coreos_installer_files(tmp.path(), &out),
            "{name}"
        );
    }
}

#[test]
fn pxe_append_to_refuses_unreadable_initramfs_with_located_error() {
    if skip_without(&["coreos-installer"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let keyfile = t.join("eno1.nmconnection");
    fs::write(&keyfile, "[connection]\nid=eno1\ntype=ethernet\n").unwrap();
    let live = gnu_cpio(&tree(t, "live", &[LIVE]), "newc");
    let at = live.len();
    let hello = gnu_cpio(&tree(t, "hello", &[("hello", &[b'h'; 5000])]), "newc");
    // xz data damaged in its stream header (always a decoder error), and
    // in the middle (a decoder error, or garbage the cpio parser meets
    // before the block's CRC32 is checked).
    let mut corrupt = xz(&hello);
    corrupt[8] ^= 0x55;
    let mut garbled = xz(&hello);
    let mid = garbled.len() / 2;
    garbled[mid] ^= 0x55;
    let zst_hello = zst(&hello);
    let mut junk = hello.clone();
    junk.extend(b"junk");
    let mut huge = newc_entry("x", 0o100644, b"", 0);
    huge[94..102].copy_from_slice(b"FFFFFFFF");
    // GNU cpio keeps such names as given.
    fs::write(t.join("f"), "f\n").unwrap();
    fs::create_dir_all(t.join("d")).unwrap();
    let relative = filter(
        &format!(
            "cd '{}' && echo ../f | cpio -o -H newc --quiet",
            t.join("d").display()
        ),
        b"",
    );
    let abs = t.join("f").display().to_string();
    let absolute = filter(&format!("echo '{abs}' | cpio -o -H newc --quiet"), b"");
    // The empty bzip2 stream (what `bzip2 </dev/null` writes).
    let bzip2 = b"BZh9\x17\x72\x45\x38\x50\x90\0\0\0\0".to_vec();
    let cases: Vec<(&str, Vec<u8>, Vec<String>)> = vec![
        (
            "traversal-relative",
            xz(&relative),
            vec![
                "member 1 (xz at byte 0), entry 1 at byte 0".into(),
                "\"../f\"".into(),
                "`..`".into(),
            ],
        ),
        (
            "traversal-absolute",
            [live.clone(), absolute.clone()].concat(),
            vec![
                format!("member 2 (cpio at byte {at}), entry 1 at byte {at}"),
                format!("{abs:?} is absolute"),
            ],
        ),
        (
            "corrupt-xz",
            [live.clone(), gz(&hello), corrupt].concat(),
            vec![
                format!("member 3 (xz at byte {}", at + gz(&hello).len()),
                "cannot decompress".into(),
            ],
        ),
        (
            "garbled-xz",
            [live.clone(), gz(&hello), garbled].concat(),
            vec![format!("member 3 (xz at byte {}", at + gz(&hello).len())],
        ),
        (
            "cut-zstd",
            [live.clone(), zst_hello[..zst_hello.len() / 2].to_vec()].concat(),
            vec![format!("member 2 (zstd at byte {at})")],
        ),
        (
            "junk-in-gzip",
            [live.clone(), gz(&junk)].concat(),
            vec![
                format!("member 2 (gzip at byte {at})"),
                "follows the cpio trailer".into(),
            ],
        ),
        (
            "odc",
            [
                live.clone(),
                gnu_cpio(&tree(t, "odc", &[("o", b"o")]), "odc"),
            ]
            .concat(),
            vec![format!("member 2 (at byte {at})"), "odc".into()],
        ),
        (
            "bzip2",
            [live.clone(), bzip2].concat(),
            vec![format!("member 2 (at byte {at})"), "bzip2".into()],
        ),
        (
            "huge-name-field",
            [live.clone(), huge].concat(),
            vec![
                format!("member 2 (cpio at byte {at}), entry 1 at byte {at}"),
                "PATH_MAX".into(),
            ],
        ),
        (
            "cut-raw",
            [live.clone(), hello[..hello.len() - 512].to_vec()].concat(),
            vec![
                format!("member 2 (cpio at byte {at}), entry 2 at byte {}", at + 112),
                "ends inside the cpio file contents".into(),
            ],
        ),
        (
            "no-trailer",
            [live.clone(), newc_entry("hello", 0o100644, b"h", 0)].concat(),
            vec![
                format!("member 2 (cpio at byte {at}), entry 2 at byte {}", at + 120),
                "without its cpio trailer".into(),
            ],
        ),
    ];
    for (name, data, want) in cases {
        let base = t.join(format!("{name}.img"));
        fs::write(&base, &data).unwrap();
        let out = t.join(format!("{name}-network.img"));
        let o = run(nodenet()
            .args(["image", "pxe", "--keyfile"])
            .arg(&keyfile)
            .arg("--append-to")
            .arg(&base)
            .arg("-o")
            .arg(&out));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{name}: {err}");
        assert!(!err.contains("panicked"), "{name}: {err}");
        assert!(
            err.starts_with(&format!("error: {}: ", base.display())),
            "{name}: {err}"
        );
        for w in &want {
            assert!(err.contains(w.as_str()), "{name}: {w:?} not in {err}");
        }
        assert!(!out.exists(), "{name}: output written");
    }
    // coreos-installer refuses to extract the traversing paths too.
    for (name, data) in [("relative", xz(&relative)), ("absolute", xz(&absolute))] {
        let p = t.join(format!("ci-{name}.img"));
        fs::write(&p, data).unwrap();
        let o = run(Command::new(tool("coreos-installer"))
            .args(["dev", "extract", "initrd", "-C"])
            .arg(t.join(format!("x-{name}")))
            .arg(&p));
        assert!(!o.status.success());
        assert!(String::from_utf8_lossy(&o.stderr).contains("traversal"));
    }
}

#[test]
fn serve_gets_ranges_heads_and_refuses_traversal() {
    if skip_without(&["sha256sum"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("images");
    fs::create_dir_all(&root).unwrap();
    let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    fs::write(root.join("rhcos.iso"), &data).unwrap();
    fs::write(tmp.path().join("secret.txt"), "outside").unwrap();
    std::os::unix::fs::symlink(tmp.path().join("secret.txt"), root.join("link.txt")).unwrap();
    let server = ImageServer::start(&root);
    let (addr, urls) = (server.addr.clone(), server.urls());
    // URLs carry the sha256 that sha256sum computes.
    let sum = run(Command::new(tool("sha256sum")).arg(root.join("rhcos.iso")));
    let hex = String::from_utf8_lossy(&sum.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    assert!(
        urls.iter()
            .any(|u| u == &format!("http://{addr}/rhcos.iso?sha256={hex}")),
        "{urls:?}"
    );

    let (st, head, body) = http(&addr, "GET /rhcos.iso HTTP/1.0\r\n\r\n");
    assert_eq!(st, 200);
    assert!(head.contains("Content-Length: 3000000"), "{head}");
    assert_eq!(body, data);
    let (st, head, body) = http(&addr, "HEAD /rhcos.iso HTTP/1.0\r\n\r\n");
    assert_eq!(st, 200);
    assert!(head.contains("Content-Length: 3000000"), "{head}");
    assert!(body.is_empty());
    let (st, head, body) = http(
        &addr,
        "GET /rhcos.iso HTTP/1.0\r\nRange: bytes=1000-1999\r\n\r\n",
    );
    assert_eq!(st, 206);
    assert!(
        head.contains("Content-Range: bytes 1000-1999/3000000"),
        "{head}"
    );
    assert_eq!(body, data[1000..2000]);
    let (st, _, body) = http(&addr, "GET /rhcos.iso HTTP/1.0\r\nRange: bytes=-10\r\n\r\n");
    assert_eq!((st, body.as_slice()), (206, &data[data.len() - 10..]));
    let (st, _, _) = http(
        &addr,
        "GET /rhcos.iso HTTP/1.0\r\nRange: bytes=5000000-\r\n\r\n",
    );
    assert_eq!(st, 416);
    for bad in [
        "/../secret.txt",
        "/%2e%2e/secret.txt",
        "/%2E%2E%2Fsecret.txt",
        "//etc/passwd",
        "/link.txt",
        "/images/../../secret.txt",
    ] {
        let (st, _, body) = http(&addr, &format!("GET {bad} HTTP/1.0\r\n\r\n"));
        assert_eq!(st, 404, "{bad}");
        assert!(!String::from_utf8_lossy(&body).contains("outside"), "{bad}");
    }
    // The symlink out of the root is not listed either: one URL only.
    assert_eq!(urls.len(), 1, "{urls:?}");
    // Concurrent downloads all get the whole file.
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let addr = addr.clone();
            std::thread::spawn(move || http(&addr, "GET /rhcos.iso HTTP/1.0\r\n\r\n").2)
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), data);
    }
}

/// Out of file descriptors (RLIMIT_NOFILE 16, more idle clients than
/// that), accept fails ten times a second: the server says so once, not
/// in a flood, keeps running, and answers again once clients leave.
#[test]
fn serve_out_of_descriptors_warns_once_and_recovers() {
    use std::os::unix::process::CommandExt;
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("images");
    fs::create_dir_all(&root).unwrap();
    fs::write(root.join("m0.iso"), vec![7u8; 5000]).unwrap();
    let server = ImageServer::start_with(&root, |cmd| {
        // SAFETY: setrlimit only, between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                let lim = libc::rlimit {
                    rlim_cur: 16,
                    rlim_max: 16,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    });
    let addr = server.addr.clone();
    server.urls();
    // Connections the kernel completes (backlog) while the server cannot
    // accept them: held open and silent.
    let idle: Vec<_> = (0..24)
        .map(|_| std::net::TcpStream::connect(&addr).unwrap())
        .collect();
    server.wait_for(|l| l.contains("serve: accept: Too many open files"), false);
    // 1.5 s of failing accepts (about 15) make one warning.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let warnings = server
        .stderr_lines()
        .into_iter()
        .filter(|l| l.contains("serve: accept"))
        .count();
    assert_eq!(warnings, 1, "{:?}", server.stderr_lines());
    drop(idle);
    // Once they are gone, a new client is served.
    let (st, _, body) = http(&addr, "GET /m0.iso HTTP/1.0\r\n\r\n");
    assert_eq!((st, body.len()), (200, 5000));
}

#[test]
fn serve_logs_every_request_and_lists_only_what_it_serves() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("images");
    fs::create_dir_all(&root).unwrap();
    fs::write(root.join("m0.iso"), vec![7u8; 5000]).unwrap();
    fs::write(tmp.path().join("secret.iso"), "outside").unwrap();
    std::os::unix::fs::symlink(tmp.path().join("secret.iso"), root.join("out.iso")).unwrap();
    std::os::unix::fs::symlink(root.join("m0.iso"), root.join("alias.iso")).unwrap();
    let server = ImageServer::start(&root);
    let addr = server.addr.clone();
    let names: Vec<String> = server
        .urls()
        .iter()
        .map(|u| {
            u.split('?')
                .next()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(names, ["alias.iso", "m0.iso"]);
    // Every URL it lists, it serves.
    for u in server.urls() {
        let path = u
            .trim_start_matches(&format!("http://{addr}"))
            .split('?')
            .next()
            .unwrap()
            .to_string();
        assert_eq!(
            http(&addr, &format!("GET {path} HTTP/1.0\r\n\r\n")).0,
            200,
            "{u}"
        );
    }
    let (st, _, _) = http(
        &addr,
        "GET /m0.iso HTTP/1.0\r\nRange: bytes=100-199\r\n\r\n",
    );
    assert_eq!(st, 206);
    let (st, _, _) = http(&addr, "GET /out.iso HTTP/1.0\r\n\r\n");
    assert_eq!(st, 404);
    let (st, _, _) = http(&addr, "HEAD /m0.iso HTTP/1.0\r\n\r\n");
    assert_eq!(st, 200);
    // One access-log line per request: client, method, path, range, status, bytes.
    let wanted = [
        "GET /m0.iso range=bytes=100-199 206 100 bytes",
        "GET /out.iso range=- 404 10 bytes",
        "HEAD /m0.iso range=- 200 0 bytes",
        "GET /alias.iso range=- 200 5000 bytes",
    ];
    for w in wanted {
        let line = server.wait_for(|l| l.ends_with(w), false);
        assert!(line.starts_with("127.0.0.1:"), "{line}");
    }
}

#[test]
fn serve_answers_while_a_large_image_is_still_being_hashed() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("images");
    fs::create_dir_all(&root).unwrap();
    // Hashed first (names are hashed in order): 8 GiB, sparse.
    let big = fs::File::create(root.join("a-big.raw")).unwrap();
    big.set_len(8 << 30).unwrap();
    fs::write(root.join("b-small.iso"), "small").unwrap();
    let server = ImageServer::start(&root);
    let (st, _, body) = http(&server.addr, "GET /b-small.iso HTTP/1.0\r\n\r\n");
    let answered = std::time::Instant::now();
    assert_eq!((st, body.as_slice()), (200, &b"small"[..]));
    // The big file's URL came later: it was still being hashed.
    let big_listed = server
        .stdout_lines()
        .into_iter()
        .find(|(_, l)| l.contains("/a-big.raw?sha256="));
    if let Some((at, _)) = big_listed {
        assert!(answered < at, "answered only after hashing 8 GiB");
    }
}

/// Runs `nodenet image disk` with `args`, then reads the output back with
/// standard tools (gunzip, `qemu-img check` and `convert`, debugfs,
/// e2fsck) and checks: only the `boot` partition changed, `files` are in it
/// 0600 root, the filesystem is clean. Returns nodenet's stderr.
fn disk_run_and_verify(
    dir: &Path,
    input: &Path,
    args: &[&std::ffi::OsStr],
    original_raw: &[u8],
    boot: (u64, u64),
    files: &[(String, Vec<u8>)],
) -> String {
    let before = fs::read(input).unwrap();
    let name = input.file_name().unwrap().to_string_lossy().into_owned();
    let out = dir.join(format!("out-{name}"));
    let o = run(nodenet()
        .args(["image", "disk"])
        .args(args)
        .arg(input)
        .arg("-o")
        .arg(&out)
        .args(["--url-base", "http://10.0.0.2:8080/images"]));
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{stderr}");
    assert_eq!(fs::read(input).unwrap(), before, "input changed");
    // The printed sha256 is the output's, and the URL form carries it.
    let hex = sh(&format!(
        "{} '{}'",
        tool("sha256sum").display(),
        out.display()
    ))
    .split_whitespace()
    .next()
    .unwrap()
    .to_string();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains(&format!(
            "clusterOSImage: http://10.0.0.2:8080/images/out-{name}?sha256={hex}"
        )),
        "{stdout}"
    );
    // Back to raw with standard tools.
    let mut image = out.clone();
    if name.ends_with(".gz") {
        sh(&format!("gzip -t '{}'", out.display()));
        image = dir.join(format!("back-{}", name.trim_end_matches(".gz")));
        sh(&format!(
            "gunzip -c '{}' > '{}'",
            out.display(),
            image.display()
        ));
    }
    let back = dir.join("back.raw");
    if name.contains(".qcow2") {
        let check = sh(&format!(
            "{} check '{}'",
            tool("qemu-img").display(),
            image.display()
        ));
        assert!(check.contains("No errors were found"), "{check}");
        sh(&format!(
            "{} convert -O raw '{}' '{}'",
            tool("qemu-img").display(),
            image.display(),
            back.display()
        ));
    } else {
        fs::copy(&image, &back).unwrap();
    }
    let after = fs::read(&back).unwrap();
    assert_eq!(after.len(), original_raw.len());
    let (o0, o1) = (boot.0 as usize, (boot.0 + boot.1) as usize);
    assert!(
        original_raw[..o0] == after[..o0],
        "bytes before the boot partition changed"
    );
    assert!(
        original_raw[o1..] == after[o1..],
        "bytes after the boot partition changed"
    );
    // debugfs reads our files back, 0600 root; e2fsck finds the fs clean.
    let dev = format!("{}?offset={}", back.display(), boot.0);
    for (path, content) in files {
        let o = run(Command::new(tool("debugfs"))
            .arg("-R")
            .arg(format!("cat {path}"))
            .arg(&dev));
        assert!(o.stdout == *content, "{path} differs");
        let stat = run(Command::new(tool("debugfs"))
            .arg("-R")
            .arg(format!("stat {path}"))
            .arg(&dev));
        let st = String::from_utf8_lossy(&stat.stdout);
        assert!(
            st.contains("Mode:  0600") && st.contains("User:     0") && st.contains("Group:     0"),
            "{st}"
        );
    }
    let part = dir.join("boot.part");
    fs::write(&part, &after[o0..o1]).unwrap();
    let fsck = run(Command::new(tool("e2fsck")).arg("-fn").arg(&part));
    assert!(
        fsck.status.success(),
        "e2fsck: {}{}",
        String::from_utf8_lossy(&fsck.stdout),
        String::from_utf8_lossy(&fsck.stderr)
    );
    for f in [out, image, back, part] {
        let _ = fs::remove_file(f);
    }
    stderr
}

/// `(bytes changed in place, bytes appended)` from nodenet's report.
fn patched(stderr: &str) -> (u64, u64) {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("patched: "))
        .unwrap_or_else(|| panic!("not patched: {stderr}"));
    let n: Vec<u64> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    (n[0], n[1])
}

#[test]
fn disk_images_get_keyfiles_in_boot_and_nothing_else_changes() {
    if skip_without(&[
        "debugfs",
        "e2fsck",
        "mkfs.ext4",
        "pigz",
        "qemu-img",
        "sgdisk",
        "sha256sum",
    ]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (raw, off, len) = build_disk(tmp.path(), 8);
    let original = fs::read(&raw).unwrap();
    let qcow = tmp.path().join("rhcos.qcow2");
    // gzip's and pigz's streams differ (pigz ends every 128 KiB chunk on a
    // byte boundary with an empty stored block): both are spliced.
    let pigzed = tmp.path().join("pigz.qcow2.gz");
    sh(&format!(
        "{} convert -O qcow2 '{}' '{}' && gzip -k '{}' '{}' && {} -c '{}' > '{}'",
        tool("qemu-img").display(),
        raw.display(),
        qcow.display(),
        qcow.display(),
        raw.display(),
        tool("pigz").display(),
        qcow.display(),
        pigzed.display()
    ));
    let ign = tmp.path().join("c.ign");
    fs::write(&ign, "{\"ignition\":{\"version\":\"3.2.0\"}}\n").unwrap();
    let mut files: Vec<(String, Vec<u8>)> = rendered_keyfiles(tmp.path(), "master-0")
        .into_iter()
        .map(|(n, c)| (format!("/coreos-firstboot-network/{n}"), c.into_bytes()))
        .collect();
    files.push(("/ignition/config.ign".into(), fs::read(&ign).unwrap()));
    let inventory = repo().join("examples/lacp-vlan.yaml");
    let args = [
        "--host".as_ref(),
        "master-0".as_ref(),
        "-c".as_ref(),
        inventory.as_os_str(),
        "--ignition".as_ref(),
        ign.as_os_str(),
    ];
    // A .gz is spliced (only the changed stretch compressed anew), a plain
    // image patched in a copy.
    for input in [
        tmp.path().join("rhcos.qcow2.gz"),
        pigzed,
        qcow.clone(),
        tmp.path().join("disk.raw.gz"),
        raw.clone(),
    ] {
        let stderr = disk_run_and_verify(tmp.path(), &input, &args, &original, (off, len), &files);
        let (changed, _) = patched(&stderr);
        assert!(changed > 0, "{stderr}");
    }
}

#[test]
fn disk_qcow2_grows_by_new_clusters_for_data_where_the_image_had_none() {
    if skip_without(&[
        "debugfs",
        "e2fsck",
        "mkfs.ext4",
        "qemu-img",
        "sgdisk",
        "sha256sum",
    ]) {
        return;
    }
    // 3 MiB of Ignition lands in ext4 blocks that were never written, so in
    // qcow2 clusters that do not exist yet: appended, with L2 entries and
    // refcounts (qemu-img check finds no leak).
    let tmp = tempfile::tempdir().unwrap();
    let (raw, off, len) = build_disk(tmp.path(), 8);
    let original = fs::read(&raw).unwrap();
    let qcow = tmp.path().join("grow.qcow2");
    sh(&format!(
        "{} convert -O qcow2 '{}' '{}' && gzip -k '{}'",
        tool("qemu-img").display(),
        raw.display(),
        qcow.display(),
        qcow.display()
    ));
    let ign = tmp.path().join("big.ign");
    let big: String = (0..120_000).map(|i| format!("{i:025}\n")).collect();
    fs::write(&ign, &big).unwrap();
    let kf = tmp.path().join("eno1.nmconnection");
    fs::write(&kf, "[connection]\nid=eno1\ntype=ethernet\n").unwrap();
    let files = vec![
        (
            "/coreos-firstboot-network/eno1.nmconnection".to_string(),
            fs::read(&kf).unwrap(),
        ),
        ("/ignition/config.ign".to_string(), big.into_bytes()),
    ];
    let args = [
        "--keyfile".as_ref(),
        kf.as_os_str(),
        "--ignition".as_ref(),
        ign.as_os_str(),
    ];
    for input in [qcow.clone(), tmp.path().join("grow.qcow2.gz")] {
        let stderr = disk_run_and_verify(tmp.path(), &input, &args, &original, (off, len), &files);
        let (_, appended) = patched(&stderr);
        assert!(appended >= 3 << 20, "{stderr}");
    }
}

#[test]
fn disk_layouts_the_patcher_does_not_handle_are_rewritten_whole() {
    if skip_without(&[
        "debugfs",
        "e2fsck",
        "mkfs.ext4",
        "qemu-img",
        "sgdisk",
        "sha256sum",
    ]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (raw, off, len) = build_disk(tmp.path(), 4);
    let original = fs::read(&raw).unwrap();
    let kf = tmp.path().join("eno1.nmconnection");
    fs::write(&kf, "[connection]\nid=eno1\ntype=ethernet\n").unwrap();
    let files = vec![(
        "/coreos-firstboot-network/eno1.nmconnection".to_string(),
        fs::read(&kf).unwrap(),
    )];
    // A qcow2 with compressed clusters, and a .gz of two members.
    let compressed = tmp.path().join("c.qcow2");
    sh(&format!(
        "{} convert -c -O qcow2 '{}' '{}'",
        tool("qemu-img").display(),
        raw.display(),
        compressed.display()
    ));
    let two = tmp.path().join("two.raw.gz");
    let r = raw.display();
    sh(&format!(
        "head -c 1048576 '{r}' | gzip > '{}' && tail -c +1048577 '{r}' | gzip >> '{}'",
        two.display(),
        two.display()
    ));
    for (input, reason) in [
        (compressed, "the qcow2 image has compressed clusters"),
        (two, "more than one gzip member"),
    ] {
        let stderr = disk_run_and_verify(
            tmp.path(),
            &input,
            &["--keyfile".as_ref(), kf.as_os_str()],
            &original,
            (off, len),
            &files,
        );
        assert!(
            stderr.contains(&format!("rewrote the whole image ({reason}")),
            "{stderr}"
        );
    }
}

#[test]
fn disk_raw_without_boot_partition_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let raw = tmp.path().join("nogpt.raw");
    fs::write(&raw, vec![0u8; 4 << 20]).unwrap();
    let kf = tmp.path().join("eno1.nmconnection");
    fs::write(
        &kf,
        "[connection]\nid=eno1\ntype=ethernet\ninterface-name=eno1\n",
    )
    .unwrap();
    let out = tmp.path().join("out.raw");
    let o = run(nodenet()
        .args(["image", "disk", "--keyfile"])
        .arg(&kf)
        .arg(&raw)
        .arg("-o")
        .arg(&out));
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("GUID partition table"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!out.exists());
}

#[test]
fn disk_killed_mid_write_leaves_input_and_no_output() {
    if skip_without(&["mkfs.ext4", "sgdisk"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (input, _, _) = build_disk(tmp.path(), 600);
    let before = fs::read(&input).unwrap();
    let kf = tmp.path().join("eno1.nmconnection");
    fs::write(&kf, "[connection]\nid=eno1\ntype=ethernet\n").unwrap();
    let out = tmp.path().join("out.raw");
    let mut child = nodenet()
        .args(["image", "disk", "--keyfile"])
        .arg(&kf)
        .arg(&input)
        .arg("-o")
        .arg(&out)
        .stderr(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // SIGKILL as soon as the output is being written (its temp file exists).
    let writing = |dir: &Path| {
        fs::read_dir(dir).unwrap().flatten().any(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(".nodenet-disk-")
                && e.path().join("out").exists()
        })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !writing(tmp.path()) && child.try_wait().unwrap().is_none() {
        assert!(std::time::Instant::now() < deadline, "no output started");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let still_running = child.try_wait().unwrap().is_none();
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        still_running,
        "the run finished before it could be killed; make the disk bigger"
    );
    assert!(
        !out.exists(),
        "a killed run left output under the final name"
    );
    assert_eq!(fs::read(&input).unwrap(), before);
}

/// `--keyfile` takes only what NetworkManager would load: an ELF binary
/// and a keyfile with an impossible address are refused (exit 1, located,
/// nothing written); a good keyfile beside them does not make them pass.
#[test]
fn image_refuses_keyfiles_networkmanager_would_not_load() {
    let tmp = tempfile::tempdir().unwrap();
    let good = tmp.path().join("eth0.nmconnection");
    fs::write(
        &good,
        "[connection]\nid=eth0\ntype=ethernet\ninterface-name=eth0\n\n[ipv4]\nmethod=manual\naddress1=10.1.1.3/24\n",
    )
    .unwrap();
    let bad_address = tmp.path().join("eth1.nmconnection");
    fs::write(
        &bad_address,
        "[connection]\nid=eth1\ntype=ethernet\ninterface-name=eth1\n\n[ipv4]\nmethod=manual\naddress1=10.1.1.300/24\n",
    )
    .unwrap();
    let elf = tmp.path().join("nodenet.nmconnection");
    fs::copy(env!("CARGO_BIN_EXE_nodenet"), &elf).unwrap();
    let out = tmp.path().join("net.cpio.xz");
    let pxe = |keyfiles: &[&Path]| {
        let mut c = nodenet();
        c.args(["image", "pxe"]);
        for k in keyfiles {
            c.arg("--keyfile").arg(k);
        }
        run(c.arg("-o").arg(&out))
    };
    for bad in [&bad_address, &elf] {
        let o = pxe(&[&good, bad]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{}: {stderr}", bad.display());
        assert!(
            stderr.contains(&*bad.file_name().unwrap().to_string_lossy()),
            "{stderr}"
        );
        assert!(!out.exists(), "written despite {}", bad.display());
    }
    let o = pxe(&[&bad_address]);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("address1"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = pxe(&[&good]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.exists());
}
