//! sushy-tools 2.2.0 (fake driver, basic auth, fresh state dir) on
//! 127.0.0.1, as the BMC emulator for the Redfish tests and the lab.

use std::fs;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::*;

pub const PASSWORD: &str = "Em-u1ator-Pa55";

pub fn sushy() -> PathBuf {
    std::env::var_os("NODENET_SUSHY")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/nodenet-ci/sushy/bin/sushy-emulator"))
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub fn uuid(i: usize) -> String {
    format!("6f1c2a3b-0000-4000-8000-{i:012}")
}

/// A sushy-emulator with `n` fake systems (powered off), killed on drop.
pub struct Emulator {
    pub child: Child,
    pub port: u16,
}

impl Emulator {
    /// `n` systems, each with one NIC (`00:5c:52:31:3a:<i>`).
    pub fn start(dir: &Path, n: usize) -> Emulator {
        let nics: Vec<Vec<String>> = (0..n)
            .map(|i| vec![format!("00:5c:52:31:3a:{i:02x}")])
            .collect();
        Emulator::start_with_nics(dir, &nics)
    }

    /// A system per entry of `nics`, with those NIC MACs.
    pub fn start_with_nics(dir: &Path, nics: &[Vec<String>]) -> Emulator {
        let bin = sushy();
        assert!(
            bin.is_file(),
            "{bin:?} is required (.ci/run installs sushy-tools 2.2.0 there)"
        );
        let python = bin.with_file_name("python");
        // bcrypt's lowest work factor: the emulator checks the hash on
        // every request (the default factor made one test 48 s of CPU).
        let hash = run(Command::new(&python).args([
            "-c",
            &format!(
                "import bcrypt; print(bcrypt.hashpw(b'{PASSWORD}', bcrypt.gensalt(rounds=4)).decode())"
            ),
        ]));
        assert!(hash.status.success());
        let htpasswd = dir.join("htpasswd");
        fs::write(
            &htpasswd,
            format!("admin:{}", String::from_utf8_lossy(&hash.stdout)),
        )
        .unwrap();
        let systems: Vec<String> = nics
            .iter()
            .enumerate()
            .map(|(i, macs)| {
                let macs: Vec<String> = macs
                    .iter()
                    .enumerate()
                    .map(|(j, m)| {
                        format!("{{'mac': '{m}', 'ip': '172.22.{}.{}'}}", 130 + j, 10 + i)
                    })
                    .collect();
                format!(
                    "{{'uuid': '{}', 'name': 'node-{i}', 'power_state': 'Off', 'nics': [{}]}}",
                    uuid(i),
                    macs.join(", ")
                )
            })
            .collect();
        let conf = dir.join("emulator.conf");
        fs::write(
            &conf,
            format!(
                "SUSHY_EMULATOR_LISTEN_IP = '127.0.0.1'\nSUSHY_EMULATOR_FAKE_DRIVER = True\nSUSHY_EMULATOR_AUTH_FILE = '{}'\nSUSHY_EMULATOR_STATE_DIR = '{}'\nSUSHY_EMULATOR_FAKE_SYSTEMS = [{}]\n",
                htpasswd.display(),
                dir.join("state").display(),
                systems.join(", ")
            ),
        )
        .unwrap();
        // A port picked by `free_port` can be taken by someone else before
        // sushy binds it (other tests run in parallel), and a bare TCP
        // connect can succeed against the wrong listener: so the emulator is
        // ready when *it* answers a Redfish GET, and a sushy that exited is
        // started again on another port.
        for _attempt in 0..5 {
            let port = free_port();
            let child = Command::new(&bin)
                .arg("--config")
                .arg(&conf)
                .args(["--port", &port.to_string()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let mut emu = Emulator { child, port };
            let deadline = Instant::now() + Duration::from_secs(60);
            while Instant::now() < deadline {
                if matches!(emu.child.try_wait(), Ok(Some(_))) {
                    break;
                }
                if emu.answers() {
                    return emu;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        panic!("sushy-emulator did not start");
    }

    /// Whether this emulator answers a Redfish GET of its first system.
    fn answers(&self) -> bool {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
        let auth = base64(&format!("admin:{PASSWORD}"));
        let request = format!(
            "GET /redfish/v1/Systems/{} HTTP/1.0\r\nHost: 127.0.0.1\r\nAuthorization: Basic {auth}\r\n\r\n",
            uuid(0)
        );
        let mut resp = Vec::new();
        s.write_all(request.as_bytes()).is_ok()
            && s.read_to_end(&mut resp).is_ok()
            && (resp.starts_with(b"HTTP/1.0 200") || resp.starts_with(b"HTTP/1.1 200"))
    }

    pub fn system_url(&self, i: usize) -> String {
        format!(
            "redfish-virtualmedia+http://127.0.0.1:{}/redfish/v1/Systems/{}",
            self.port,
            uuid(i)
        )
    }

    /// GET a Redfish resource with basic auth (raw HTTP, our own client not involved).
    pub fn get(&self, path: &str) -> serde_json::Value {
        let auth = base64(&format!("admin:{PASSWORD}"));
        let (_, _, body) = http(
            &format!("127.0.0.1:{}", self.port),
            &format!(
                "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nAuthorization: Basic {auth}\r\n\r\n"
            ),
        );
        serde_json::from_slice(&body).unwrap()
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn base64(s: &str) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let b = s.as_bytes();
    let mut out = String::new();
    for c in b.chunks(3) {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= c.len() {
                out.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}
