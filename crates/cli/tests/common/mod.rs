//! Shared helpers for the integration tests: they drive the real
//! `nodenet` binary and the real consumers (nmcli, ignition-validate,
//! nmstatectl), which CI installs (.ci/run).
#![allow(dead_code)]

pub mod sushy;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn nodenet() -> Command {
    Command::new(env!("CARGO_BIN_EXE_nodenet"))
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

/// A consumer tool the test needs; missing tools fail loudly (CI installs
/// them) rather than skipping the proof.
pub fn tool(name: &str) -> PathBuf {
    let candidates = [
        PathBuf::from(format!("/usr/bin/{name}")),
        PathBuf::from(format!("/usr/local/bin/{name}")),
        PathBuf::from(format!("/usr/sbin/{name}")),
        PathBuf::from(format!("/sbin/{name}")),
        PathBuf::from(std::env::var("HOME").unwrap_or_default())
            .join(".cargo/bin")
            .join(name),
    ];
    candidates
        .into_iter()
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{name} is required (see .ci/run for how CI installs it)"))
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

pub fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

/// `nodenet serve DIR` on a free loopback port, killed on drop.
pub struct ImageServer {
    child: std::process::Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// The `?sha256=` URLs it printed, one per file.
    pub urls: Vec<String>,
}

impl ImageServer {
    pub fn start(dir: &Path) -> ImageServer {
        use std::io::BufRead;
        let mut child = nodenet()
            .arg("serve")
            .arg(dir)
            .args(["--listen", "127.0.0.1:0"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines.next().unwrap().unwrap();
        let addr = first
            .rsplit("http://")
            .next()
            .unwrap()
            .trim_end_matches('/')
            .to_string();
        let n = std::fs::read_dir(dir)
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path().is_file())
            .count();
        let urls = (0..n).map(|_| lines.next().unwrap().unwrap()).collect();
        // Keep draining so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        ImageServer { child, addr, urls }
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
