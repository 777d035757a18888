//! Faults of the machine, not of the input: a disk that fills up, a
//! read-only filesystem, a file where a directory is expected, a symlink
//! loop, an input that is a pipe. Each gives a clear error naming the path
//! and exit 2, and leaves nothing half-written: the previous output stays
//! as it was, or there is none.
//!
//! Real filesystems (tmpfs mounted with a size, or read-only), so the
//! kernel gives the errors; CI runs as root (.ci/run).

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{build_iso, files_under, http, nodenet, repo, run, skip_without};

/// A tmpfs mounted on a temp directory, unmounted on drop.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(options: &str) -> Tmpfs {
        let dir = tempfile::tempdir().unwrap();
        let o = run(Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "tmpfs"])
            .arg(dir.path()));
        assert!(
            o.status.success(),
            "mount tmpfs (the fault tests run as root, as CI does): {}",
            String::from_utf8_lossy(&o.stderr)
        );
        Tmpfs { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn remount(&self, options: &str) {
        let o = run(Command::new("mount")
            .args(["-o", &format!("remount,{options}")])
            .arg(self.path()));
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }

    /// Leaves about `free` bytes free, with a file that fills the rest.
    fn fill_leaving(&self, free: u64) {
        let o = run(Command::new("df")
            .args(["--output=avail", "-B1"])
            .arg(self.path()));
        let avail: u64 = String::from_utf8_lossy(&o.stdout)
            .lines()
            .nth(1)
            .and_then(|l| l.trim().parse().ok())
            .expect("df --output=avail");
        fs::write(
            self.path().join("filler"),
            vec![0u8; avail.saturating_sub(free) as usize],
        )
        .unwrap();
    }

    /// What is in the mount, apart from `except`.
    fn entries(&self, except: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(self.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| !except.contains(&n.as_str()))
            .collect();
        v.sort();
        v
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

fn example() -> PathBuf {
    repo().join("examples/lacp-vlan.yaml")
}

/// Every file under `dir`, by path, with its bytes.
fn snapshot(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    files_under(dir)
        .into_iter()
        .map(|p| (p.clone(), fs::read(&p).unwrap()))
        .collect()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn assert_io_failure(o: &Output, path_part: &str, reason: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(path_part), "names `{path_part}`: {err}");
    assert!(err.contains(reason), "says `{reason}`: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn render_on_a_full_disk_fails_and_keeps_the_previous_output() {
    let fs_ = Tmpfs::mount("size=2m");
    let out = fs_.path().join("out");
    let tmp = tempfile::tempdir().unwrap();
    let inventory = tmp.path().join("inventory.yaml");
    let text = fs::read_to_string(example()).unwrap();
    fs::write(&inventory, &text).unwrap();
    let o = run(nodenet().arg("render").arg(&inventory).arg("-o").arg(&out));
    assert!(o.status.success(), "{}", stderr(&o));
    let before = snapshot(&out);
    assert!(before.len() > 10);

    // The inventory changed, rendered again when the disk has little room.
    fs::write(&inventory, text.replace("miimon: \"1\"", "miimon: \"100\"")).unwrap();
    fs_.fill_leaving(16 * 1024);
    let o = run(nodenet().arg("render").arg(&inventory).arg("-o").arg(&out));
    assert_io_failure(
        &o,
        &fs_.path().display().to_string(),
        "No space left on device",
    );

    // The previous render, whole; no temp directory left beside it.
    assert_eq!(snapshot(&out), before);
    assert_eq!(fs_.entries(&["filler"]), ["out"]);
}

#[test]
fn render_to_a_read_only_filesystem_writes_nothing() {
    let fs_ = Tmpfs::mount("size=1m");
    fs_.remount("ro");
    let o = run(nodenet()
        .arg("render")
        .arg(example())
        .arg("-o")
        .arg(fs_.path().join("out")));
    assert_io_failure(
        &o,
        &fs_.path().display().to_string(),
        "Read-only file system",
    );
    assert!(fs_.entries(&[]).is_empty());
}

#[test]
fn render_to_a_file_where_the_output_directory_goes_leaves_it_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    fs::write(&out, "not a directory\n").unwrap();
    let o = run(nodenet().arg("render").arg(example()).arg("-o").arg(&out));
    assert_io_failure(&o, "out", "Not a directory");
    assert_eq!(fs::read_to_string(&out).unwrap(), "not a directory\n");
    let left: Vec<_> = fs::read_dir(tmp.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "no temp directory left: {left:?}");
}

#[test]
fn a_symlink_loop_is_named_alone_or_inside_a_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let lp = tmp.path().join("loop.yaml");
    std::os::unix::fs::symlink("loop.yaml", &lp).unwrap();
    let o = run(nodenet().arg("check").arg(&lp));
    assert_io_failure(&o, "loop.yaml", "Too many levels of symbolic links");

    let dir = tmp.path().join("manifests");
    fs::create_dir(&dir).unwrap();
    fs::copy(example(), dir.join("inventory.yaml")).unwrap();
    std::os::unix::fs::symlink("self.yaml", dir.join("self.yaml")).unwrap();
    let o = run(nodenet().arg("check").arg(&dir));
    assert_io_failure(&o, "self.yaml", "Too many levels of symbolic links");
}

#[test]
fn an_inventory_read_from_a_pipe_checks_as_the_file_does() {
    // As `nodenet check <(envsubst < install-config.yaml)` gives it: a FIFO.
    // An out-of-range VLAN id, so there is a located error to compare.
    let text = fs::read_to_string(example())
        .unwrap()
        .replace("id: 110", "id: 5000");
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let fifo = a.path().join("inventory.yaml");
    assert!(run(Command::new("mkfifo").arg(&fifo)).status.success());
    let writer = {
        let (fifo, text) = (fifo.clone(), text.clone());
        std::thread::spawn(move || fs::write(fifo, text).unwrap())
    };
    let piped = run(nodenet().args(["check", "--format", "json"]).arg(&fifo));
    writer.join().unwrap();
    let file = b.path().join("inventory.yaml");
    fs::write(&file, &text).unwrap();
    let plain = run(nodenet().args(["check", "--format", "json"]).arg(&file));
    assert_eq!(piped.status.code(), Some(1), "{}", stderr(&piped));
    assert_eq!(plain.status.code(), Some(1), "{}", stderr(&plain));
    let located = |o: &Output| -> Vec<(String, u64, u64)> {
        common::json(o)["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                (
                    d["code"].as_str().unwrap().to_string(),
                    d["line"].as_u64().unwrap(),
                    d["column"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let found = located(&piped);
    assert!(
        found.contains(&("vlan-id-range".into(), 62, 15)),
        "{found:?}"
    );
    assert_eq!(found, located(&plain));
}

#[test]
fn iso_copy_on_a_full_disk_leaves_no_output() {
    if skip_without(&["xorriso"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let iso = build_iso(tmp.path(), "live", true, true);
    let size = fs::metadata(&iso).unwrap().len();
    let fs_ = Tmpfs::mount(&format!("size={}k", size / 1024 / 2));
    let out = fs_.path().join("master-0.iso");
    let o = run(nodenet()
        .args(["image", "iso"])
        .arg(example())
        .args(["--host", "master-0"])
        .arg(&iso)
        .arg("-o")
        .arg(&out));
    assert_io_failure(&o, "master-0.iso", "No space left on device");
    assert!(fs_.entries(&[]).is_empty(), "{:?}", fs_.entries(&[]));
}

#[test]
fn iso_in_place_on_a_read_only_filesystem_is_untouched() {
    if skip_without(&["xorriso"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let iso = build_iso(tmp.path(), "live", true, true);
    let fs_ = Tmpfs::mount("size=4m");
    let target = fs_.path().join("live.iso");
    fs::copy(&iso, &target).unwrap();
    fs_.remount("ro");
    let o = run(nodenet()
        .args(["image", "iso"])
        .arg(example())
        .args(["--host", "master-0"])
        .arg(&target)
        .arg("--in-place"));
    assert_io_failure(&o, "live.iso", "Read-only file system");
    assert_eq!(fs::read(&target).unwrap(), fs::read(&iso).unwrap());
}

/// The example's cluster with `n` hosts of its template, bonds with
/// `miimon` as given: two versions of one inventory.
fn fleet(n: usize, miimon: &str) -> String {
    let text = fs::read_to_string(example()).unwrap();
    let head = &text[..text.find("\nhosts:\n").unwrap()];
    let mut out = head.replace("miimon: \"1\"", &format!("miimon: \"{miimon}\""));
    out.push_str("\nhosts:\n");
    for i in 0..n {
        let (hi, lo) = (i / 256, i % 256);
        out.push_str(&format!(
            "- name: worker-{i}\n  template: node\n  role: worker\n  vars: {{uuid: 9b3e0a56-6f0c-4c8e-9d1b-{i:012}}}\n  nics: {{eno1: \"52:54:01:{hi:02x}:{lo:02x}:01\", eno2: \"52:54:01:{hi:02x}:{lo:02x}:02\", eno3: \"52:54:01:{hi:02x}:{lo:02x}:03\"}}\n"
        ));
    }
    out
}

/// Every file under `dir` by its path inside `dir`.
fn tree(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    snapshot(dir)
        .into_iter()
        .map(|(p, b)| (p.strip_prefix(dir).unwrap().to_path_buf(), b))
        .collect()
}

#[test]
fn render_killed_at_any_point_leaves_the_old_tree_or_the_new_one_never_a_mix() {
    let tmp = tempfile::tempdir().unwrap();
    let inventory = tmp.path().join("inventory.yaml");
    let versions = [fleet(600, "1"), fleet(600, "100")];
    // The two complete renders, from the same input path (the manifest
    // names it).
    let mut complete = Vec::new();
    let mut took = std::time::Duration::ZERO;
    for (i, v) in versions.iter().enumerate() {
        fs::write(&inventory, v).unwrap();
        let dir = tmp.path().join(format!("complete-{i}"));
        let t = std::time::Instant::now();
        let o = run(nodenet().arg("render").arg(&inventory).arg("-o").arg(&dir));
        took = took.max(t.elapsed());
        assert!(o.status.success(), "{}", stderr(&o));
        complete.push(tree(&dir));
    }
    assert_ne!(complete[0], complete[1]);
    let out = tmp.path().join("out");
    fs::write(&inventory, &versions[0]).unwrap();
    assert!(
        run(nodenet().arg("render").arg(&inventory).arg("-o").arg(&out))
            .status
            .success()
    );

    // 20 renders killed (SIGKILL) at points spread over a whole render,
    // alternating the version being written.
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut outcomes = [0usize; 2];
    for round in 0..20 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let at = took.mul_f64((seed >> 11) as f64 / (1u64 << 53) as f64 * 1.1);
        fs::write(&inventory, &versions[(round + 1) % 2]).unwrap();
        let mut child = nodenet()
            .args(["-q", "render"])
            .arg(&inventory)
            .arg("-o")
            .arg(&out)
            .spawn()
            .unwrap();
        std::thread::sleep(at);
        let _ = child.kill();
        child.wait().unwrap();
        let now = tree(&out);
        let which = complete
            .iter()
            .position(|c| *c == now)
            .unwrap_or_else(|| panic!("round {round}, killed after {at:?}: a mix"));
        outcomes[which] += 1;
    }
    // A later render still works whatever the killed ones left.
    fs::write(&inventory, &versions[1]).unwrap();
    let o = run(nodenet().arg("render").arg(&inventory).arg("-o").arg(&out));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(tree(&out), complete[1]);
    // and leaves none of the hidden trees the killed ones left.
    assert_eq!(scratch_in(tmp.path()), Vec::<String>::new());
    eprintln!(
        "killed renders left version 0 {} times, version 1 {} times",
        outcomes[0], outcomes[1]
    );
}

fn fds(pid: u32) -> usize {
    fs::read_dir(format!("/proc/{pid}/fd")).unwrap().count()
}

/// Peak resident memory (VmHWM) of `pid`, in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn serve_under_load_keeps_answering_with_flat_memory_and_no_fd_leak() {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::time::Duration;

    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("images");
    fs::create_dir(&root).unwrap();
    let image: Vec<u8> = (0..32u32 << 20)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    fs::write(root.join("rhcos.raw"), &image).unwrap();
    let server = common::ImageServer::start(&root);
    server.urls();
    let pid = server.pid();
    let (fds_before, rss_before) = (fds(pid), peak_rss_kib(pid));
    let connect = || {
        let s = TcpStream::connect(&server.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        s
    };

    // Clients that stall mid-download (read the headers, then nothing,
    // their window full) and clients that hang up. (Clients that stall
    // mid-request, or idle on a kept-alive connection, are in the image
    // crate's tests/serve.rs, with short timeouts.)
    let mut stalled = Vec::new();
    for _ in 0..10 {
        let mut head = [0u8; 512];
        let mut s = connect();
        s.write_all(b"GET /rhcos.raw HTTP/1.0\r\n\r\n").unwrap();
        let _ = s.read(&mut head).unwrap();
        stalled.push(s);
        let mut s = connect();
        s.write_all(b"GET /rhcos.raw HTTP/1.0\r\n\r\n").unwrap();
        let _ = s.read(&mut head).unwrap();
        drop(s);
    }

    // 200 concurrent range requests, each checked against the file.
    let image = std::sync::Arc::new(image);
    let threads: Vec<_> = (0..200u64)
        .map(|i| {
            let (addr, image) = (server.addr.clone(), image.clone());
            std::thread::spawn(move || {
                let start = (i * 7_919_777) % ((32 << 20) - (64 << 10));
                let end = start + (64 << 10) - 1;
                let (status, head, body) = http(
                    &addr,
                    &format!("GET /rhcos.raw HTTP/1.0\r\nRange: bytes={start}-{end}\r\n\r\n"),
                );
                assert_eq!(status, 206, "{head}");
                assert!(
                    body == image[start as usize..=end as usize],
                    "range {start}-{end}"
                );
            })
        })
        .collect();
    let t = std::time::Instant::now();
    for th in threads {
        th.join().unwrap();
    }
    let took = t.elapsed();
    let rss_after = peak_rss_kib(pid);

    // Gone clients leave nothing behind.
    drop(stalled);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while fds(pid) > fds_before && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        fds(pid) <= fds_before,
        "fds: {} before, {} after",
        fds_before,
        fds(pid)
    );
    // Memory grows with connections (a thread each), not with what they
    // read: 210 copies of the 32 MiB image would be 6.6 GiB.
    assert!(
        rss_after < rss_before + 256 * 1024,
        "peak RSS {rss_before} → {rss_after} KiB"
    );
    eprintln!(
        "200 concurrent ranges beside 10 stalled and 10 vanished clients: {took:?}; peak RSS {rss_before} → {rss_after} KiB; fds {fds_before} → {}",
        fds(pid)
    );
}

/// A seeded point in `[0, 1.1 × took)`: kills spread over a whole run and
/// a little past it.
fn kill_points(took: std::time::Duration, n: usize, mut seed: u64) -> Vec<std::time::Duration> {
    (0..n)
        .map(|_| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            took.mul_f64((seed >> 11) as f64 / (1u64 << 53) as f64 * 1.1)
        })
        .collect()
}

/// Runs `cmd` and SIGKILLs it after `at` (if it still runs).
fn kill_after(cmd: &mut Command, at: std::time::Duration) {
    let mut child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(at);
    let _ = child.kill();
    child.wait().unwrap();
}

/// Scratch that runs of ours leave beside their outputs.
fn scratch_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".nodenet-"))
        .collect();
    v.sort();
    v
}

fn keyfile(dir: &Path) -> PathBuf {
    let kf = dir.join("eno1.nmconnection");
    fs::write(
        &kf,
        "[connection]\nid=eno1\ntype=ethernet\ninterface-name=eno1\n\n[ipv4]\nmethod=auto\n",
    )
    .unwrap();
    kf
}

/// `image disk` with debugfs's clock fixed, so that two complete runs
/// give the same bytes.
fn image_disk(kf: &Path, input: &Path, out: &Path) -> Command {
    let mut c = nodenet();
    c.env("E2FSPROGS_FAKE_TIME", "1700000000")
        .args(["-q", "image", "disk", "--keyfile"])
        .arg(kf)
        .arg(input)
        .arg("-o")
        .arg(out);
    c
}

/// `image disk` SIGKILLed at 20 seeded points, in place and with `-o`
/// over an earlier output, for raw, qcow2 and gzip images: the file under
/// the final name is always the old image or the complete new one, never
/// a mix; the next run removes the scratch the killed ones left (a
/// decompressed copy is as large as the image) and writes the same image.
#[test]
fn disk_image_killed_at_any_point_is_the_old_image_or_the_new_one_never_a_mix() {
    if skip_without(&["mkfs.ext4", "qemu-img", "sgdisk"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (raw, _, _) = common::build_disk(tmp.path(), 96);
    let qcow2 = tmp.path().join("disk.qcow2");
    common::sh(&format!(
        "qemu-img convert -O qcow2 '{}' '{}'",
        raw.display(),
        qcow2.display()
    ));
    let gz = tmp.path().join("disk.raw.gz");
    common::sh(&format!(
        "gzip -1 -c '{}' > '{}'",
        raw.display(),
        gz.display()
    ));
    let kf = keyfile(tmp.path());
    // The old and the new bytes of each image, and the longest run.
    let mut took = std::time::Duration::ZERO;
    let variants: Vec<(PathBuf, Vec<u8>, Vec<u8>)> = [raw, qcow2, gz]
        .into_iter()
        .map(|input| {
            let name = input.file_name().unwrap().to_string_lossy().into_owned();
            let reference = tmp.path().join(format!("new-{name}"));
            let t = std::time::Instant::now();
            let o = run(&mut image_disk(&kf, &input, &reference));
            took = took.max(t.elapsed());
            assert!(o.status.success(), "{}", stderr(&o));
            let (old, new) = (fs::read(&input).unwrap(), fs::read(&reference).unwrap());
            assert_ne!(old, new);
            (input, old, new)
        })
        .collect();

    let work = tmp.path().join("work");
    fs::create_dir(&work).unwrap();
    let mut outcomes = [0usize; 2];
    let mut scratch_left = 0;
    for (round, at) in kill_points(took, 20, 0x2545_f491_4f6c_dd1d)
        .into_iter()
        .enumerate()
    {
        let (input, old, new) = &variants[round % variants.len()];
        let in_place = round % 2 == 0;
        let name = input.file_name().unwrap().to_string_lossy().into_owned();
        let source = work.join(&name);
        fs::write(&source, old).unwrap();
        let target = if in_place {
            source.clone()
        } else {
            // An earlier output of the same name, to be replaced.
            let out = work.join(format!("out-{name}"));
            fs::write(&out, old).unwrap();
            out
        };
        kill_after(&mut image_disk(&kf, &source, &target), at);
        let now = fs::read(&target).unwrap();
        let which = [old, new]
            .iter()
            .position(|v| **v == now)
            .unwrap_or_else(|| {
                panic!(
                    "round {round} ({name}, {}), killed after {at:?}: a mix",
                    if in_place { "in place" } else { "-o" }
                )
            });
        outcomes[which] += 1;
        if !in_place {
            assert_eq!(&fs::read(&source).unwrap(), old, "the input is untouched");
        }
        scratch_left = scratch_left.max(scratch_in(&work).len());
    }
    // A later run sweeps what the killed ones left and writes the same.
    let (input, old, new) = &variants[2];
    let source = work.join("again.raw.gz");
    fs::write(&source, old).unwrap();
    let o = run(&mut image_disk(&kf, &source, &source));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(&fs::read(&source).unwrap(), new, "{}", input.display());
    assert_eq!(scratch_in(&work), Vec::<String>::new());
    eprintln!(
        "killed `image disk` runs left the old image {} times, the new one {} times; \
         at most {scratch_left} scratch entries at once, none after the next run",
        outcomes[0], outcomes[1]
    );
}

/// An inventory of `n` hosts, each with its own network, for `import
/// --into` to read and write back whole.
fn inventory_of(n: usize) -> String {
    let mut s = String::from("nodenet: v1\nhosts:\n");
    for i in 0..n {
        s.push_str(&format!(
            "- name: host-{i}\n  network:\n    interfaces:\n    - name: eno1\n      type: ethernet\n      state: up\n      ipv4:\n        enabled: true\n        dhcp: false\n        address:\n        - ip: 10.{}.{}.{}\n          prefix-length: 16\n",
            i / 65536,
            (i / 256) % 256,
            i % 256
        ));
    }
    s
}

/// `import --into` SIGKILLed at 20 seeded points: the inventory is the old
/// file or the new one, never a mix, and no scratch file stays after the
/// next run.
#[test]
fn import_into_killed_at_any_point_leaves_the_old_inventory_or_the_new_one() {
    let tmp = tempfile::tempdir().unwrap();
    let kf = keyfile(tmp.path());
    let inventory = tmp.path().join("inventory.yaml");
    let old = inventory_of(3000);
    let import = |inv: &Path| {
        let mut c = nodenet();
        c.args(["-q", "import"])
            .arg(&kf)
            .arg("--into")
            .arg(inv)
            .args(["--host", "new-host"]);
        c
    };
    let reference = tmp.path().join("reference.yaml");
    fs::write(&reference, &old).unwrap();
    let t = std::time::Instant::now();
    let o = run(&mut import(&reference));
    let took = t.elapsed();
    assert!(o.status.success(), "{}", stderr(&o));
    let new = fs::read_to_string(&reference).unwrap();
    assert!(new.contains("new-host"), "{new}");
    let mut outcomes = [0usize; 2];
    for (round, at) in kill_points(took, 20, 0x0bad_5eed).into_iter().enumerate() {
        fs::write(&inventory, &old).unwrap();
        kill_after(&mut import(&inventory), at);
        let now = fs::read_to_string(&inventory).unwrap();
        let which = [&old, &new]
            .iter()
            .position(|v| **v == now)
            .unwrap_or_else(|| panic!("round {round}, killed after {at:?}: a mix"));
        outcomes[which] += 1;
    }
    fs::write(&inventory, &old).unwrap();
    assert!(run(&mut import(&inventory)).status.success());
    assert_eq!(fs::read_to_string(&inventory).unwrap(), new);
    assert_eq!(scratch_in(tmp.path()), Vec::<String>::new());
    eprintln!(
        "killed imports (a run takes {took:?}) left the old inventory {} times, the new one {} times",
        outcomes[0], outcomes[1]
    );
}

/// `image disk` on a disk that fills up, with `-o` and in place: exit 2,
/// the error names the output and the cause, the input is untouched,
/// nothing is left but it.
#[test]
fn disk_image_on_a_full_disk_fails_cleanly_and_keeps_the_input() {
    if skip_without(&["mkfs.ext4", "sgdisk"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (raw, _, _) = common::build_disk(tmp.path(), 16);
    let kf = keyfile(tmp.path());
    let fs_ = Tmpfs::mount("size=64m");
    let input = fs_.path().join("disk.raw");
    fs::copy(&raw, &input).unwrap();
    let before = fs::read(&input).unwrap();
    fs_.fill_leaving(2 << 20);
    for out in [fs_.path().join("out.raw"), input.clone()] {
        let o = run(&mut image_disk(&kf, &input, &out));
        assert_io_failure(&o, &out.display().to_string(), "No space left on device");
        assert_eq!(fs::read(&input).unwrap(), before, "the input is untouched");
        assert_eq!(fs_.entries(&[]), ["disk.raw", "filler"]);
    }
}

/// The agent's status record on a full disk: exit 2 naming the record,
/// the previous record intact, no temp file left.
#[test]
fn status_record_on_a_full_disk_keeps_the_previous_record() {
    let tmp = tempfile::tempdir().unwrap();
    let fs_ = Tmpfs::mount("size=1m");
    let record = fs_.path().join("status.json");
    // No state file for this host: a run records `no-file`.
    let service = || {
        run(nodenet()
            .arg("service")
            .arg("--dir")
            .arg(tmp.path())
            .arg("--status")
            .arg(&record))
    };
    let o = service();
    assert!(o.status.success(), "{}", stderr(&o));
    let before = fs::read(&record).unwrap();
    assert!(
        String::from_utf8_lossy(&before).contains("no-file"),
        "{}",
        String::from_utf8_lossy(&before)
    );
    fs_.fill_leaving(0);
    let o = service();
    assert_io_failure(&o, "status.json", "No space left on device");
    assert_eq!(fs::read(&record).unwrap(), before);
    assert_eq!(fs_.entries(&[]), ["filler", "status.json"]);
}
