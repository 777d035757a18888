//! Shared helpers for the integration tests: they drive the real
//! `nodenet` binary and the real consumers (nmcli, ignition-validate,
//! nmstatectl), which CI installs (.ci/run).
#![allow(dead_code)]

pub mod crd;
pub mod layering;
pub mod netbox;
pub mod sushy;

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The BMC passwords the shipped examples name, as a user sets them where
/// `render` runs (it refuses to write a BMC Secret without one).
pub const EXAMPLE_PASSWORDS: [(&str, &str); 3] = [
    ("BMC_PASSWORD", "example-bmc-password"),
    ("IDRAC_PASSWORD", "example-idrac-password"),
    ("IPMI_PASSWORD", "example-ipmi-password"),
];

/// Where the binary under test is; `NODENET_TEST_BIN` runs the tests
/// against another one (an older build, to see a test fail without its fix).
pub fn nodenet_path() -> PathBuf {
    std::env::var_os("NODENET_TEST_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_nodenet").into())
}

/// The binary under test, with the examples' BMC passwords set.
pub fn nodenet() -> Command {
    let mut c = Command::new(nodenet_path());
    c.envs(EXAMPLE_PASSWORDS);
    c
}

/// Writes `bytes` to `dir/name`; its path.
pub fn write(dir: &Path, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
    let p = dir.join(name);
    fs::write(&p, bytes).unwrap();
    p
}

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

pub fn run(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

/// Where a tool is installed, if it is: the places Debian's packages,
/// `cargo install` and `.ci/install-bmc.sh` put it.
pub fn find_tool(name: &str) -> Option<PathBuf> {
    if name == "sushy-emulator" {
        return Some(sushy::sushy()).filter(|p| p.is_file());
    }
    let home = PathBuf::from(std::env::var("HOME").unwrap_or_default());
    ["/usr/bin", "/usr/local/bin", "/usr/sbin", "/sbin"]
        .iter()
        .map(|d| Path::new(d).join(name))
        .chain([home.join(".cargo/bin").join(name)])
        .find(|p| p.is_file())
}

/// A consumer tool the test needs (declared first with [`skip_without`]).
pub fn tool(name: &str) -> PathBuf {
    find_tool(name).unwrap_or_else(|| panic!("{name} is required: `make test-tools` installs it"))
}

/// Whether the test stops here for want of a tool. Under `CI=true` a
/// missing tool fails the test (CI installs every one); elsewhere the
/// test is reported skipped, with the tools' names, on the terminal (past
/// the harness's output capture), and passes without proving anything.
pub fn skip_without(tools: &[&str]) -> bool {
    let missing: Vec<&str> = tools
        .iter()
        .copied()
        .filter(|t| find_tool(t).is_none())
        .collect();
    if missing.is_empty() {
        return false;
    }
    let list = missing.join(", ");
    if std::env::var_os("CI").is_some_and(|v| v == "true") {
        panic!("{list}: required under CI=true (`make test-tools` installs every tool)");
    }
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: needs {list} (`make test-tools` installs it)"
    );
    true
}

pub fn examples() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(repo().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    v.sort();
    assert!(v.len() >= 4, "examples missing");
    v
}

pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The files under `dir` by file name, with their text (keyfile sets).
pub fn files_by_name(dir: &Path) -> std::collections::BTreeMap<String, String> {
    files_under(dir)
        .into_iter()
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect()
}

/// The diagnostics of a `--format json` object that `keep` keeps.
pub fn diagnostics_where(
    v: &serde_json::Value,
    keep: impl Fn(&serde_json::Value) -> bool,
) -> Vec<&serde_json::Value> {
    v["diagnostics"]
        .as_array()
        .expect("a diagnostics list")
        .iter()
        .filter(|d| keep(d))
        .collect()
}

pub fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

/// `nodenet serve DIR` on a free loopback port, killed on drop. Its
/// stdout (the URL lines) and stderr (access log, notes) are collected as
/// they come, with the time each line arrived.
pub struct ImageServer {
    child: std::process::Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    stdout: Lines,
    stderr: Lines,
}

type Lines = std::sync::Arc<std::sync::Mutex<Vec<(std::time::Instant, String)>>>;

fn collect(r: impl std::io::Read + Send + 'static) -> Lines {
    use std::io::BufRead;
    let lines: Lines = Default::default();
    let sink = lines.clone();
    std::thread::spawn(move || {
        for l in std::io::BufReader::new(r).lines() {
            let Ok(l) = l else { break };
            sink.lock().unwrap().push((std::time::Instant::now(), l));
        }
    });
    lines
}

impl ImageServer {
    pub fn start(dir: &Path) -> ImageServer {
        Self::start_with(dir, |_| {})
    }

    /// Started with `configure` applied to its command first.
    pub fn start_with(dir: &Path, configure: impl FnOnce(&mut Command)) -> ImageServer {
        let mut cmd = nodenet();
        configure(&mut cmd);
        let mut child = cmd
            .arg("serve")
            .arg(dir)
            .args(["--listen", "127.0.0.1:0"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = collect(child.stdout.take().unwrap());
        let stderr = collect(child.stderr.take().unwrap());
        let mut server = ImageServer {
            child,
            addr: String::new(),
            stdout,
            stderr,
        };
        let first = server.wait_for(|l| l.starts_with("serving "), true);
        server.addr = first
            .rsplit("http://")
            .next()
            .unwrap()
            .trim_end_matches('/')
            .to_string();
        server
    }

    /// The first line of stdout (or stderr) that `pred` accepts, waiting
    /// up to 60 s for it.
    pub fn wait_for(&self, pred: impl Fn(&str) -> bool, stdout: bool) -> String {
        let lines = if stdout { &self.stdout } else { &self.stderr };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            if let Some((_, l)) = lines.lock().unwrap().iter().find(|(_, l)| pred(l)) {
                return l.clone();
            }
            assert!(
                std::time::Instant::now() < deadline,
                "nodenet serve: no such line; stdout {:?}, stderr {:?}",
                self.stdout.lock().unwrap(),
                self.stderr.lock().unwrap()
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// The `?sha256=` URLs, once every file is hashed (the server says so).
    pub fn urls(&self) -> Vec<String> {
        self.wait_for(|l| l.starts_with("listed "), false);
        self.stdout_lines()
            .into_iter()
            .filter(|(_, l)| l.starts_with("http://"))
            .map(|(_, l)| l)
            .collect()
    }

    pub fn stdout_lines(&self) -> Vec<(std::time::Instant, String)> {
        self.stdout.lock().unwrap().clone()
    }

    pub fn stderr_lines(&self) -> Vec<String> {
        self.stderr
            .lock()
            .unwrap()
            .iter()
            .map(|(_, l)| l.clone())
            .collect()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for ImageServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `cmd` with stdin, stdout and stderr on a new pseudo-terminal (as
/// a person at a terminal would), typing `input`; returns the exit status
/// and everything the terminal showed.
pub fn run_in_pty(cmd: &mut Command, input: &str) -> (std::process::ExitStatus, String) {
    use std::io::{Read, Write};
    use std::os::fd::{FromRawFd, OwnedFd};
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: openpty writes two descriptors into the given ints.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty");
    // SAFETY: both descriptors were just opened and are owned here.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let mut child = cmd
        .stdin(slave.try_clone().unwrap())
        .stdout(slave.try_clone().unwrap())
        .stderr(slave)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    // The parent's copies of the slave are gone with `cmd`'s stdio.
    let mut m = std::fs::File::from(master);
    let mut reader = m.try_clone().unwrap();
    let out = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        // EIO once the child (the last holder of the slave) is gone.
        while let Ok(n) = reader.read(&mut chunk) {
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        String::from_utf8_lossy(&buf).into_owned()
    });
    m.write_all(input.as_bytes()).unwrap();
    let status = child.wait().unwrap();
    cmd_stdio_guard(cmd);
    (status, out.join().unwrap())
}

/// Drops the descriptors `Command` keeps for its stdio (so the pty's
/// slave side closes once the child exits).
fn cmd_stdio_guard(cmd: &mut Command) -> &mut Command {
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
}

/// A network namespace that is deleted when the test ends (with every
/// link and process in it).
pub struct Netns(pub String);

impl Netns {
    /// `nodenet-<what>-<pid>`: unique per test process and purpose.
    pub fn new(what: &str) -> Netns {
        let ns = Netns(format!("nodenet-{what}-{}", std::process::id()));
        let _ = Command::new("ip")
            .args(["netns", "del", &ns.0])
            .stderr(std::process::Stdio::null())
            .status();
        ns.ip(&["netns", "add", &ns.0]);
        ns.exec(&["link", "set", "lo", "up"]);
        ns
    }

    pub fn ip(&self, args: &[&str]) {
        let o = run(Command::new(tool("ip")).args(args));
        assert!(
            o.status.success(),
            "ip {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }

    /// `ip -n NS ARGS...`
    pub fn exec(&self, args: &[&str]) {
        let mut full = vec!["-n", self.0.as_str()];
        full.extend_from_slice(args);
        self.ip(&full);
    }

    /// A command run inside the namespace.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new(tool("ip"));
        c.args(["netns", "exec", &self.0]).arg(program);
        c
    }

    /// `ip -o link show DEV` in the namespace.
    pub fn link(&self, dev: &str) -> String {
        let o = run(Command::new(tool("ip")).args(["-n", &self.0, "-o", "link", "show", dev]));
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// A veth cable: `a` in this namespace, `b` in `other`.
    pub fn cable(&self, a: &str, other: &Netns, b: &str) {
        self.ip(&[
            "link", "add", a, "netns", &self.0, "type", "veth", "peer", "name", b, "netns",
            &other.0,
        ]);
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

/// A raw HTTP/1.0 exchange (no client library normalising the path), with
/// its status, head and body; a 30 s read timeout.
pub fn http(addr: &str, request: &str) -> (u16, String, Vec<u8>) {
    http_within(addr, request, std::time::Duration::from_secs(30))
}

/// [`http`], given up on after `timeout` without a byte.
pub fn http_within(
    addr: &str,
    request: &str,
    timeout: std::time::Duration,
) -> (u16, String, Vec<u8>) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(timeout)).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut resp = Vec::new();
    s.read_to_end(&mut resp).unwrap();
    let split = resp.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&resp[..split]).into_owned();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, head, resp[split + 4..].to_vec())
}

/// A minimal CoreOS-like live ISO (DESIGN.md's recipe): a 256 KiB zero
/// embed area and, unless `network` is false, the feature flag.
pub fn build_iso(dir: &Path, name: &str, network: bool, area: bool) -> PathBuf {
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

/// A small CoreOS-like disk: GPT with `bios`, `boot` (ext4, label boot)
/// and `root` (filled with a pattern), as raw; returns (raw, boot offset,
/// boot length).
pub fn build_disk(dir: &Path, root_mib: u64) -> (PathBuf, u64, u64) {
    let raw = dir.join("disk.raw");
    let staging = dir.join("staging");
    fs::create_dir_all(staging.join("grub2")).unwrap();
    fs::write(staging.join("grub2/grub.cfg"), "set timeout=1\n").unwrap();
    let total = 16 + root_mib + 2;
    sh(&format!("truncate -s {total}M '{}'", raw.display()));
    sh(&format!(
        "{} -o -n 1:2048:+1M -c 1:bios -n 2:0:+12M -c 2:boot -n 3:0:0 -c 3:root '{}' >/dev/null",
        tool("sgdisk").display(),
        raw.display()
    ));
    let info = sh(&format!(
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
    sh(&format!(
        "{} -q -F -L boot -d '{}' '{}' 12M",
        tool("mkfs.ext4").display(),
        staging.display(),
        boot.display()
    ));
    sh(&format!(
        "dd if='{}' of='{}' bs=512 seek={first} conv=notrunc status=none",
        boot.display(),
        raw.display()
    ));
    let info3 = sh(&format!(
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
    sh(&format!("yes nodenet-root-pattern | head -c {}M | dd of='{}' bs=512 seek={root_first} conv=notrunc status=none", root_mib, raw.display()));
    (raw, first * 512, (last - first + 1) * 512)
}

pub fn sh(cmd: &str) -> String {
    let o = run(Command::new("sh").arg("-c").arg(cmd));
    assert!(
        o.status.success(),
        "{cmd}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// One line per fact a network is made of, NICs by their inventory names
/// (cloud-init's profiles find them by MAC): interfaces that are up and
/// their types, bond ports, VLAN parents and ids, static addresses,
/// routes.
pub fn facts(
    state: &serde_json::Value,
    names: &std::collections::BTreeMap<String, String>,
) -> std::collections::BTreeSet<String> {
    let name = |i: &serde_json::Value| -> String {
        let n = i["name"].as_str().unwrap_or("").to_string();
        match i["mac-address"].as_str() {
            Some(m) if i["identifier"] == "mac-address" => {
                names.get(&m.to_ascii_lowercase()).cloned().unwrap_or(n)
            }
            _ => n,
        }
    };
    let by_old: std::collections::BTreeMap<String, String> = state["interfaces"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|i| {
            // Routes name a MAC-bound interface by its profile (nmstate
            // resolves it).
            let profile = i["profile-name"].as_str().map(|p| (p.to_string(), name(i)));
            std::iter::once((i["name"].as_str().unwrap_or("").to_string(), name(i))).chain(profile)
        })
        .collect();
    let renamed = |n: &str| by_old.get(n).cloned().unwrap_or_else(|| n.to_string());
    let mut out = std::collections::BTreeSet::new();
    for i in state["interfaces"].as_array().into_iter().flatten() {
        if i["state"] != "up" {
            continue;
        }
        let n = name(i);
        out.insert(format!("iface {n} {}", i["type"].as_str().unwrap_or("")));
        for p in i["link-aggregation"]["port"]
            .as_array()
            .into_iter()
            .flatten()
        {
            out.insert(format!("port {n} {}", renamed(p.as_str().unwrap())));
        }
        if i["type"] == "vlan" {
            out.insert(format!(
                "vlan {n} {} {}",
                renamed(i["vlan"]["base-iface"].as_str().unwrap()),
                i["vlan"]["id"]
            ));
        }
        for fam in ["ipv4", "ipv6"] {
            for a in i[fam]["address"].as_array().into_iter().flatten() {
                out.insert(format!(
                    "addr {n} {}/{}",
                    a["ip"].as_str().unwrap(),
                    a["prefix-length"]
                ));
            }
        }
    }
    for r in state["routes"]["config"].as_array().into_iter().flatten() {
        out.insert(format!(
            "route {} via {} dev {}",
            r["destination"].as_str().unwrap(),
            r["next-hop-address"].as_str().unwrap_or("-"),
            renamed(r["next-hop-interface"].as_str().unwrap_or("-"))
        ));
    }
    out
}

/// `nodenet import` of keyfiles, as NMState.
pub fn import(dir: &Path) -> serde_json::Value {
    let o = run(nodenet().args(["import", "-q"]).arg(dir));
    assert!(
        o.status.success(),
        "import {dir:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_yaml::from_slice(&o.stdout).unwrap()
}

/// Each host's network as `hosts --format json` shows it, reduced to what
/// every format says: per interface its type, bond (mode, ports), VLAN,
/// and per family DHCP, autoconf and static addresses, with the NICs'
/// MACs (lower case) when `macs`; the gateways. By host name, sorted.
pub fn host_facts(args: &[&Path], macs: bool) -> std::collections::BTreeMap<String, Vec<String>> {
    let o = run(nodenet().args(["hosts", "--format", "json"]).args(args));
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v = json(&o);
    let mut out = std::collections::BTreeMap::new();
    for h in v["hosts"].as_array().unwrap() {
        let mut facts: Vec<String> = Vec::new();
        for i in h["interfaces"].as_array().unwrap() {
            let fam = |x: &serde_json::Value| {
                format!("{}/{}/{}", x["dhcp"], x["autoconf"], x["addresses"])
            };
            let mac = match (macs, i["type"].as_str(), i["mac"].as_str()) {
                (true, Some("ethernet"), Some(m)) => format!(" mac={}", m.to_lowercase()),
                _ => String::new(),
            };
            facts.push(format!(
                "{} {} bond={} vlan={} v4={} v6={}{mac}",
                i["name"].as_str().unwrap(),
                i["type"].as_str().unwrap(),
                i["bond"],
                i["vlan"],
                fam(&i["ipv4"]),
                fam(&i["ipv6"]),
            ));
        }
        for g in h["gateways"].as_array().unwrap() {
            facts.push(format!("gateway {} via {}", g["address"], g["interface"]));
        }
        facts.sort();
        out.insert(h["name"].as_str().unwrap().to_string(), facts);
    }
    out
}

/// lldpd in the switch namespace, announcing on its `swp*` ports every
/// second as `sw1` (unless `extra_config` names it otherwise), port ids
/// as interface names; killed when dropped.
pub struct Lldpd(std::process::Child);

impl Lldpd {
    pub fn start(sw: &Netns, dir: &std::path::Path, extra_config: &str) -> Lldpd {
        let conf = dir.join("lldpd.conf");
        fs::write(
            &conf,
            format!(
                "configure system hostname sw1\nconfigure lldp tx-interval 1\nconfigure lldp portidsubtype ifname\n{extra_config}"
            ),
        )
        .unwrap();
        let child = sw
            .command(tool("lldpd"))
            .args(["-d", "-u"])
            .arg(dir.join("lldpd.sock"))
            .args(["-I", "swp*", "-S", "nodenet test switch", "-O"])
            .arg(&conf)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("lldpd (Debian package lldpd; .ci/run installs it)");
        Lldpd(child)
    }
}

impl Drop for Lldpd {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
