//! Boot media, judged by the real coreos-installer 0.27.0 (`iso network
//! extract`, `iso ignition show`, `dev show initrd`), cpio/xz, and raw HTTP.

mod common;

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

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
    let mut v: Vec<(String, String)> =
        files_under(&out.join(format!("hosts/{host}/system-connections")))
            .into_iter()
            .map(|p| {
                (
                    p.file_name().unwrap().to_string_lossy().into_owned(),
                    fs::read_to_string(&p).unwrap(),
                )
            })
            .collect();
    v.sort();
    v
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
    let got: Vec<(String, String)> = {
        let mut v: Vec<_> = files_under(&extract)
            .into_iter()
            .map(|p| {
                (
                    p.file_name().unwrap().to_string_lossy().into_owned(),
                    fs::read_to_string(&p).unwrap(),
                )
            })
            .collect();
        v.sort();
        v
    };
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

struct Server(Child, String);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_server(dir: &Path) -> (Server, Vec<String>) {
    let mut child = nodenet()
        .arg("serve")
        .arg(dir)
        .args(["--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let addr = first
        .rsplit("http://")
        .next()
        .unwrap()
        .trim_end_matches('/')
        .to_string();
    let n = fs::read_dir(dir)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().is_file())
        .count();
    let urls: Vec<String> = (0..n).map(|_| lines.next().unwrap().unwrap()).collect();
    (Server(child, addr.clone()), urls)
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
    let (server, urls) = start_server(&root);
    let addr = server.1.clone();
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
