//! Boot media, judged by the real coreos-installer 0.27.0 (`iso network
//! extract`, `iso ignition show`, `dev show initrd`), cpio/xz, and raw HTTP.

mod common;

use std::fs;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::*;

/// A minimal CoreOS-like live ISO (DESIGN.md's recipe): a 256 KiB zero
/// embed area and, unless `network` is false, the feature flag.
fn build_iso(dir: &Path, name: &str, network: bool, area: bool) -> PathBuf {
    let tree = dir.join(format!("{name}-tree"));
    fs::create_dir_all(tree.join("images")).unwrap();
    fs::create_dir_all(tree.join("coreos")).unwrap();
    if area {
        fs::write(tree.join("images/ignition.img"), vec![0u8; 256 * 1024]).unwrap();
    }
    fs::write(tree.join("images/other.bin"), vec![0x5au8; 64 * 1024]).unwrap();
    if network {
        fs::write(
            tree.join("coreos/features.json"),
            "{\"live-initrd-network\": true}\n",
        )
        .unwrap();
    }
    let iso = dir.join(format!("{name}.iso"));
    let o = run(Command::new(tool("xorriso"))
        .args([
            "-as",
            "mkisofs",
            "-V",
            "COREOS",
            "-rational-rock",
            "-J",
            "-joliet-long",
            "-o",
        ])
        .arg(&iso)
        .arg(&tree));
    assert!(
        o.status.success(),
        "xorriso: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    iso
}

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
    let tmp = tempfile::tempdir().unwrap();
    let iso = build_iso(tmp.path(), "live", true, true);
    let before = fs::read(&iso).unwrap();
    let out = tmp.path().join("master-0.iso");
    let o = run(nodenet()
        .args(["image", "iso", "--host", "master-0", "-c"])
        .arg(repo().join("examples/lacp-vlan.yaml"))
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
    // A payload larger than the area: 400 KB that xz cannot shrink.
    let iso = build_iso(tmp.path(), "small", true, true);
    let mut x: u64 = 88172645463325252;
    let noise: Vec<u8> = (0..400_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
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

#[test]
fn pxe_initrd_and_appended_form_list_our_files_0600() {
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

/// A raw HTTP/1.0 exchange (no client library normalising the path).
fn http(addr: &str, request: &str) -> (u16, String, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut resp = Vec::new();
    s.read_to_end(&mut resp).unwrap();
    let split = resp.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&resp[..split]).into_owned();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, head, resp[split + 4..].to_vec())
}

#[test]
fn serve_gets_ranges_heads_and_refuses_traversal() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("images");
    fs::create_dir_all(&root).unwrap();
    let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    fs::write(root.join("rhcos.iso"), &data).unwrap();
    fs::write(tmp.path().join("secret.txt"), "outside").unwrap();
    std::os::unix::fs::symlink(tmp.path().join("secret.txt"), root.join("link.txt")).unwrap();
    let server = ImageServer::start(&root);
    let (addr, urls) = (server.addr.clone(), server.urls.clone());
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

/// A small CoreOS-like disk: GPT with `bios`, `boot` (ext4, label boot)
/// and `root` (filled with a pattern), as raw; returns (raw, boot offset,
/// boot length).
fn build_disk(dir: &Path, root_mib: u64) -> (PathBuf, u64, u64) {
    let raw = dir.join("disk.raw");
    let sh = |cmd: String| {
        let o = run(Command::new("sh").arg("-c").arg(&cmd));
        assert!(
            o.status.success(),
            "{cmd}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let staging = dir.join("staging");
    fs::create_dir_all(staging.join("grub2")).unwrap();
    fs::write(staging.join("grub2/grub.cfg"), "set timeout=1\n").unwrap();
    let total = 16 + root_mib + 2;
    sh(format!("truncate -s {total}M '{}'", raw.display()));
    sh(format!(
        "{} -o -n 1:2048:+1M -c 1:bios -n 2:0:+12M -c 2:boot -n 3:0:0 -c 3:root '{}' >/dev/null",
        tool("sgdisk").display(),
        raw.display()
    ));
    let info = sh(format!(
        "{} -i 2 '{}'",
        tool("sgdisk").display(),
        raw.display()
    ));
    let sector = |label: &str| -> u64 {
        info.lines()
            .find(|l| l.starts_with(label))
            .unwrap()
            .split_whitespace()
            .nth(2)
            .unwrap()
            .parse()
            .unwrap()
    };
    let (first, last) = (sector("First sector:"), sector("Last sector:"));
    let boot = dir.join("boot.img");
    sh(format!(
        "{} -q -F -L boot -d '{}' '{}' 12M",
        tool("mkfs.ext4").display(),
        staging.display(),
        boot.display()
    ));
    sh(format!(
        "dd if='{}' of='{}' bs=512 seek={first} conv=notrunc status=none",
        boot.display(),
        raw.display()
    ));
    let info3 = sh(format!(
        "{} -i 3 '{}'",
        tool("sgdisk").display(),
        raw.display()
    ));
    let root_first: u64 = info3
        .lines()
        .find(|l| l.starts_with("First sector:"))
        .unwrap()
        .split_whitespace()
        .nth(2)
        .unwrap()
        .parse()
        .unwrap();
    // A recognisable root partition.
    sh(format!("yes nodenet-root-pattern | head -c {}M | dd of='{}' bs=512 seek={root_first} conv=notrunc status=none", root_mib, raw.display()));
    (raw, first * 512, (last - first + 1) * 512)
}

#[test]
fn disk_qcow2_gz_gets_keyfiles_in_boot_and_nothing_else_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let (raw, off, len) = build_disk(tmp.path(), 8);
    let original = fs::read(&raw).unwrap();
    let qcow = tmp.path().join("rhcos.qcow2");
    let o = run(Command::new(tool("qemu-img"))
        .args(["convert", "-O", "qcow2"])
        .arg(&raw)
        .arg(&qcow));
    assert!(o.status.success());
    let st = Command::new("sh")
        .arg("-c")
        .arg(format!("gzip -k '{}'", qcow.display()))
        .status()
        .unwrap();
    assert!(st.success());
    let input = tmp.path().join("rhcos.qcow2.gz");
    let input_bytes = fs::read(&input).unwrap();
    let out = tmp.path().join("rhcos-master-0.qcow2.gz");
    let ign = tmp.path().join("c.ign");
    fs::write(&ign, "{\"ignition\":{\"version\":\"3.2.0\"}}\n").unwrap();
    let o = run(nodenet()
        .args(["image", "disk", "--host", "master-0", "-c"])
        .arg(repo().join("examples/lacp-vlan.yaml"))
        .arg("--ignition")
        .arg(&ign)
        .arg(&input)
        .arg("-o")
        .arg(&out)
        .args(["--url-base", "http://10.0.0.2:8080/images"]));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(fs::read(&input).unwrap(), input_bytes, "input changed");
    // The printed sha256 is the output's, and the URL form carries it.
    let sum = run(Command::new(tool("sha256sum")).arg(&out));
    let hex = String::from_utf8_lossy(&sum.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains(&format!(
            "clusterOSImage: http://10.0.0.2:8080/images/rhcos-master-0.qcow2.gz?sha256={hex}"
        )),
        "{stdout}"
    );
    // Back to raw with standard tools.
    let back = tmp.path().join("back.raw");
    let st = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "gunzip -c '{}' > '{}.qcow2' && {} convert -O raw '{}.qcow2' '{}'",
            out.display(),
            back.display(),
            tool("qemu-img").display(),
            back.display(),
            back.display()
        ))
        .status()
        .unwrap();
    assert!(st.success());
    let after = fs::read(&back).unwrap();
    assert_eq!(after.len(), original.len());
    let (o0, o1) = (off as usize, (off + len) as usize);
    assert!(
        original[..o0] == after[..o0],
        "bytes before the boot partition changed"
    );
    assert!(
        original[o1..] == after[o1..],
        "bytes after the boot partition changed"
    );
    // debugfs reads our files back, 0600 root; e2fsck finds the fs clean.
    let dev = format!("{}?offset={off}", back.display());
    for (name, content) in rendered_keyfiles(tmp.path(), "master-0") {
        let o = run(Command::new(tool("debugfs"))
            .arg("-R")
            .arg(format!("cat /coreos-firstboot-network/{name}"))
            .arg(&dev));
        assert_eq!(String::from_utf8_lossy(&o.stdout), content, "{name}");
        let stat = run(Command::new(tool("debugfs"))
            .arg("-R")
            .arg(format!("stat /coreos-firstboot-network/{name}"))
            .arg(&dev));
        let s = String::from_utf8_lossy(&stat.stdout);
        assert!(
            s.contains("Mode:  0600") && s.contains("User:     0") && s.contains("Group:     0"),
            "{s}"
        );
    }
    let o = run(Command::new(tool("debugfs"))
        .arg("-R")
        .arg("cat /ignition/config.ign")
        .arg(&dev));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        fs::read_to_string(&ign).unwrap()
    );
    let part = tmp.path().join("boot.part");
    fs::write(&part, &after[o0..o1]).unwrap();
    let fsck = run(Command::new(tool("e2fsck")).arg("-fn").arg(&part));
    assert!(
        fsck.status.success(),
        "e2fsck: {}{}",
        String::from_utf8_lossy(&fsck.stdout),
        String::from_utf8_lossy(&fsck.stderr)
    );
}

#[test]
fn disk_raw_without_boot_partition_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let raw = tmp.path().join("nogpt.raw");
    fs::write(&raw, vec![0u8; 4 << 20]).unwrap();
    let kf = tmp.path().join("eno1.nmconnection");
    fs::write(&kf, "[connection]\nid=eno1\n").unwrap();
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
    let tmp = tempfile::tempdir().unwrap();
    let (raw, _, _) = build_disk(tmp.path(), 400);
    let st = Command::new("sh")
        .arg("-c")
        .arg(format!("gzip -1 -k '{}'", raw.display()))
        .status()
        .unwrap();
    assert!(st.success());
    let input = tmp.path().join("disk.raw.gz");
    let before = fs::read(&input).unwrap();
    let kf = tmp.path().join("eno1.nmconnection");
    fs::write(&kf, "[connection]\nid=eno1\ntype=ethernet\n").unwrap();
    let out = tmp.path().join("out.raw.gz");
    let mut child = nodenet()
        .args(["image", "disk", "--keyfile"])
        .arg(&kf)
        .arg(&input)
        .arg("-o")
        .arg(&out)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(700));
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
