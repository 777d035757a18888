//! Redfish against BMCs that misbehave: silent, trickling, malformed JSON
//! or HTML with 200, 500 on every request, connections closed before or
//! in the middle of the answer. A tiny HTTP/1.1 server in this file plays
//! each bad BMC (loopback, its own thread, bounded lifetime, every request
//! counted); a healthy host on sushy-tools runs beside them. Each bad host
//! must end with one clear line (host, BMC address, what went wrong) in
//! bounded retries and time, and the healthy host must not notice.

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::common::sushy::*;
use crate::common::*;

/// `ATTEMPTS` of crates/bmc/src/redfish.rs: sends of one Redfish call.
const ATTEMPTS: usize = 5;
/// No server thread outlives this, whatever the client does.
const LIFETIME: Duration = Duration::from_secs(90);
/// At most this many connections per server (each one a thread).
const MAX_CONNECTIONS: usize = 64;
/// At most this many requests per connection.
const MAX_REQUESTS: usize = 200;
/// The system the fake BMCs serve.
const SYSTEM: &str = "/redfish/v1/Systems/1";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// Reads the request, then says nothing until the client hangs up.
    Silent,
    /// A 200 head with a Content-Length, then one body byte every 200 ms.
    Trickle,
    /// 200 with `{"Members": [` (JSON cut short).
    TruncatedJson,
    /// 200 with an HTML page (a web UI's login page, say).
    Html,
    /// 500 with a Redfish error body, on every request.
    Error500,
    /// Closes the connection as soon as the request is read.
    Close,
    /// Half a 200 answer (head and part of the body), then closes.
    HalfThenClose,
    /// Does what the request asks, then closes without an answer (a
    /// BMC whose web server dies after the action).
    ActThenClose,
}

/// Which requests the fault hits; the others get sane Redfish answers.
#[derive(Clone, Copy, Debug)]
enum Scope {
    Every,
    /// Requests with this method whose path ends with this.
    Only(&'static str, &'static str),
}

#[derive(Clone, Debug)]
struct Request {
    method: String,
    path: String,
    at: Instant,
    /// When the client hung up on a connection the server kept silent on.
    hung_up: Option<Instant>,
}

type Log = Arc<Mutex<Vec<Request>>>;

/// What a fake BMC's machine is: its POSTs and GETs go through this.
#[derive(Debug)]
struct Machine {
    power: &'static str,
    /// The inserted image, if any.
    image: Option<String>,
}

impl Default for Machine {
    fn default() -> Machine {
        Machine {
            power: "Off",
            image: None,
        }
    }
}

type Shared = Arc<Mutex<Machine>>;

/// A misbehaving BMC on 127.0.0.1: stopped (and its threads joined) on drop.
struct BadBmc {
    port: u16,
    fault: Fault,
    log: Log,
    machine: Shared,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl BadBmc {
    fn start(fault: Fault, scope: Scope) -> BadBmc {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let log: Log = Default::default();
        let machine: Shared = Default::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (log2, stop2, machine2) = (log.clone(), stop.clone(), machine.clone());
        let thread = std::thread::spawn(move || {
            let born = Instant::now();
            let mut conns = Vec::new();
            while !stop2.load(Ordering::SeqCst)
                && born.elapsed() < LIFETIME
                && conns.len() < MAX_CONNECTIONS
            {
                match listener.accept() {
                    Ok((s, _)) => {
                        let (log, stop, m) = (log2.clone(), stop2.clone(), machine2.clone());
                        conns.push(std::thread::spawn(move || {
                            serve(s, fault, scope, &log, &m, &stop, born)
                        }));
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(10))
                    }
                    Err(_) => break,
                }
            }
            for c in conns {
                let _ = c.join();
            }
        });
        BadBmc {
            port,
            fault,
            log,
            machine,
            stop,
            thread: Some(thread),
        }
    }

    fn address(&self) -> String {
        format!(
            "redfish-virtualmedia+http://127.0.0.1:{}{SYSTEM}",
            self.port
        )
    }

    fn requests(&self) -> Vec<Request> {
        self.log.lock().unwrap().clone()
    }

    /// How long the client kept the last request waiting before it hung
    /// up (the server notices within ~100 ms; waits up to 2 s for that).
    fn held(&self) -> Duration {
        let until = Instant::now() + Duration::from_secs(2);
        loop {
            let reqs = self.requests();
            if let Some(last) = reqs.last() {
                if let Some(h) = last.hung_up {
                    return h - last.at;
                }
            }
            assert!(
                Instant::now() < until,
                "{:?}: no hang-up: {reqs:?}",
                self.fault
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Requests with `method` whose path ends with `path`.
    fn count(&self, method: &str, path: &str) -> usize {
        self.requests()
            .iter()
            .filter(|r| r.method == method && r.path.ends_with(path))
            .count()
    }
}

impl Drop for BadBmc {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn alive(stop: &AtomicBool, born: Instant) -> bool {
    !stop.load(Ordering::SeqCst) && born.elapsed() < LIFETIME
}

/// One connection: requests in turn (keep-alive) until the client hangs
/// up, the fault ends it, or the server stops.
fn serve(
    mut s: TcpStream,
    fault: Fault,
    scope: Scope,
    log: &Log,
    machine: &Mutex<Machine>,
    stop: &AtomicBool,
    born: Instant,
) {
    s.set_nonblocking(false).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut buf = Vec::new();
    for _ in 0..MAX_REQUESTS {
        let Some((method, path, body)) = read_request(&mut s, &mut buf, stop, born) else {
            return;
        };
        let index = {
            let mut l = log.lock().unwrap();
            l.push(Request {
                method: method.clone(),
                path: path.clone(),
                at: Instant::now(),
                hung_up: None,
            });
            l.len() - 1
        };
        let hit = match scope {
            Scope::Every => true,
            Scope::Only(m, p) => method == m && path.ends_with(p),
        };
        if !hit {
            if reply(
                &mut s,
                "200 OK",
                "application/json",
                &healthy(&method, &path, &body, machine),
            )
            .is_err()
            {
                return;
            }
            continue;
        }
        match fault {
            Fault::Silent => {
                hold(&mut s, None, index, log, stop, born);
                return;
            }
            Fault::Trickle => {
                let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"Id\": \"";
                if s.write_all(head.as_bytes()).is_ok() {
                    hold(&mut s, Some(b"x"), index, log, stop, born);
                }
                return;
            }
            Fault::TruncatedJson => {
                if reply(&mut s, "200 OK", "application/json", "{\"Members\": [").is_err() {
                    return;
                }
            }
            Fault::Html => {
                let page = "<!DOCTYPE html>\n<html><head><title>iDRAC Login</title></head><body>Please log in</body></html>\n";
                if reply(&mut s, "200 OK", "text/html", page).is_err() {
                    return;
                }
            }
            Fault::Error500 => {
                let body = r#"{"error": {"code": "Base.1.0.InternalError", "message": "The request failed due to an internal service error.", "@Message.ExtendedInfo": [{"MessageId": "Base.1.0.InternalError", "Message": "Fan controller 3 is not responding; the service is restarting."}]}}"#;
                if reply(
                    &mut s,
                    "500 Internal Server Error",
                    "application/json",
                    body,
                )
                .is_err()
                {
                    return;
                }
            }
            Fault::Close => {
                let _ = s.shutdown(std::net::Shutdown::Both);
                return;
            }
            Fault::ActThenClose => {
                healthy(&method, &path, &body, machine);
                let _ = s.shutdown(std::net::Shutdown::Both);
                return;
            }
            Fault::HalfThenClose => {
                let half = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n{\"Id\": \"1\", \"PowerSt";
                let _ = s.write_all(half.as_bytes());
                let _ = s.flush();
                let _ = s.shutdown(std::net::Shutdown::Both);
                return;
            }
        }
    }
}

/// Keeps the connection open, saying nothing (or writing `tick` every
/// 200 ms), until the client hangs up (noted in the log) or the server
/// stops.
fn hold(
    s: &mut TcpStream,
    tick: Option<&[u8]>,
    index: usize,
    log: &Log,
    stop: &AtomicBool,
    born: Instant,
) {
    let mut chunk = [0u8; 1024];
    let mut last_tick = Instant::now();
    while alive(stop, born) {
        let gone = match s.read(&mut chunk) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        };
        let gone = gone
            || match tick {
                Some(t) if last_tick.elapsed() >= Duration::from_millis(200) => {
                    last_tick = Instant::now();
                    s.write_all(t).and_then(|_| s.flush()).is_err()
                }
                _ => false,
            };
        if gone {
            log.lock().unwrap()[index].hung_up = Some(Instant::now());
            return;
        }
    }
}

/// Reads one request (head and Content-Length body); `None` at EOF, on
/// error, or when the server stops.
fn read_request(
    s: &mut TcpStream,
    buf: &mut Vec<u8>,
    stop: &AtomicBool,
    born: Instant,
) -> Option<(String, String, String)> {
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            let len: usize = head
                .lines()
                .filter_map(|l| l.split_once(':'))
                .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
                .and_then(|(_, v)| v.trim().parse().ok())
                .unwrap_or(0);
            if buf.len() >= end + 4 + len {
                let body = String::from_utf8_lossy(&buf[end + 4..end + 4 + len]).into_owned();
                buf.drain(..end + 4 + len);
                let mut first = head.lines().next()?.split_whitespace();
                return Some((first.next()?.to_string(), first.next()?.to_string(), body));
            }
        }
        if !alive(stop, born) || buf.len() > 1 << 20 {
            return None;
        }
        match s.read(&mut chunk) {
            Ok(0) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return None,
        }
    }
}

fn reply(s: &mut TcpStream, status: &str, ctype: &str, body: &str) -> std::io::Result<()> {
    s.write_all(
        format!(
            "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    )?;
    s.flush()
}

/// What a sane BMC answers, from and to its machine (powered off with an
/// empty CD drive at first): Reset and Insert/EjectMedia take effect at
/// once.
fn healthy(method: &str, path: &str, body: &str, machine: &Mutex<Machine>) -> String {
    let mut m = machine.lock().unwrap();
    if method == "POST" {
        let body: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
        if path.ends_with("/ComputerSystem.Reset") {
            m.power = match body["ResetType"].as_str() {
                Some("ForceOff") => "Off",
                _ => "On",
            };
        } else if path.ends_with("/VirtualMedia.InsertMedia") {
            m.image = body["Image"].as_str().map(str::to_string);
        } else if path.ends_with("/VirtualMedia.EjectMedia") {
            m.image = None;
        }
    }
    if method != "GET" {
        return "{}".into();
    }
    if path == SYSTEM {
        format!(
            r##"{{"Id": "1", "PowerState": "{}", "Boot": {{}}, "VirtualMedia": {{"@odata.id": "{SYSTEM}/VirtualMedia"}}, "Actions": {{"#ComputerSystem.Reset": {{"target": "{SYSTEM}/Actions/ComputerSystem.Reset"}}}}}}"##,
            m.power
        )
    } else if path == format!("{SYSTEM}/VirtualMedia") {
        format!(r#"{{"Members": [{{"@odata.id": "{SYSTEM}/VirtualMedia/Cd"}}]}}"#)
    } else if path == format!("{SYSTEM}/VirtualMedia/Cd") {
        serde_json::json!({"Id": "Cd", "MediaTypes": ["CD", "DVD"], "Inserted": m.image.is_some(), "Image": m.image})
            .to_string()
    } else {
        "{}".into()
    }
}

/// An inventory: `healthy` on the emulator's first system, then one host
/// per bad BMC.
fn inventory(dir: &Path, emu: &Emulator, bad: &[(&str, &BadBmc)]) -> PathBuf {
    let mut text = format!(
        "nodenet: v1\ncluster:\n  name: lab\n  provisioning: {{network: Disabled}}\ncredentials:\n  good: {{username: admin, passwordEnv: NODENET_TEST_BMC_PW}}\nhosts:\n- name: healthy\n  bmc: {{address: \"{}\", credentials: good}}\n",
        emu.system_url(0)
    );
    for (name, b) in bad {
        text += &format!(
            "- name: {name}\n  bmc: {{address: \"{}\", credentials: good}}\n",
            b.address()
        );
    }
    let p = dir.join("cluster.yaml");
    std::fs::write(&p, text).unwrap();
    p
}

/// The one summary line of `host`.
fn line(out: &str, host: &str) -> String {
    let lines: Vec<&str> = out
        .lines()
        .filter(|l| l.split_whitespace().next() == Some(host))
        .collect();
    assert_eq!(lines.len(), 1, "{host}: {out}");
    lines[0].to_string()
}

/// Neither the password nor its Authorization header value in any output.
fn assert_no_secret(o: &std::process::Output) {
    let auth = base64(&format!("admin:{PASSWORD}"));
    for (name, text) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
        let text = String::from_utf8_lossy(text);
        for secret in [PASSWORD, auth.as_str()] {
            assert!(!text.contains(secret), "{secret} leaked on {name}");
        }
    }
}

fn report(what: &str, elapsed: Duration, bads: &[(&str, &BadBmc)]) {
    eprintln!("{what}: {:.1} s in all", elapsed.as_secs_f64());
    for (name, b) in bads {
        let reqs = b.requests();
        let first = reqs.first().map(|r| r.at);
        let hung = reqs.iter().rev().find_map(|r| r.hung_up);
        eprintln!(
            "  {name:<10} {:?}: {} request(s) {:?}{}",
            b.fault,
            reqs.len(),
            reqs.iter()
                .map(|r| format!("{} {}", r.method, r.path))
                .collect::<Vec<_>>(),
            match (first, hung) {
                (Some(f), Some(h)) => format!(
                    ", client hung up {:.2} s after the first",
                    (h - f).as_secs_f64()
                ),
                _ => String::new(),
            }
        );
    }
}

/// sushy-tools with `n` systems whose basic auth is cheap: the emulator
/// reads its htpasswd on every request and bcrypt's default cost (12)
/// takes ~250 ms of CPU per request, which on a busy 2-core machine makes
/// the healthy host need more than a short --timeout. Cost 4: ~1 ms.
fn emulator(dir: &Path, n: usize) -> Emulator {
    let emu = Emulator::start(dir, n);
    let python = sushy().with_file_name("python");
    let hash = run(std::process::Command::new(&python).args([
        "-c",
        &format!(
            "import bcrypt; print(bcrypt.hashpw(b'{PASSWORD}', bcrypt.gensalt(rounds=4)).decode())"
        ),
    ]));
    assert!(hash.status.success());
    let htpasswd = dir.join("htpasswd");
    let tmp = dir.join("htpasswd.new");
    std::fs::write(
        &tmp,
        format!("admin:{}", String::from_utf8_lossy(&hash.stdout)),
    )
    .unwrap();
    std::fs::rename(&tmp, &htpasswd).unwrap();
    emu
}

/// Asserts `host`'s line says FAILED, names `b`'s address and has every
/// word.
fn assert_failed(out: &str, host: &str, b: &BadBmc, words: &[&str]) {
    let l = line(out, host);
    assert!(l.contains("FAILED"), "{l}");
    assert!(l.contains(&format!("http://127.0.0.1:{}/", b.port)), "{l}");
    for w in words {
        assert!(l.contains(w), "{host}: `{w}` missing: {l}");
    }
}

/// Polls the emulator (up to 20 s: sushy's fake driver applies power
/// changes 1 to 12 s late) until system `sys` reports `want`.
fn wait_power(emu: &Emulator, sys: usize, want: &str) -> serde_json::Value {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let s = emu.get(&format!("/redfish/v1/Systems/{}", uuid(sys)));
        if s["PowerState"] == want || Instant::now() > until {
            return s;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// `bmc power restart --all` over one healthy host and one bad BMC per
/// fault, each failing on its first request (GET of the system). Restart
/// does not wait for the power state, so the healthy host is done in a
/// moment and --timeout can be short: below the client's own per-request
/// timeout (15 s), which must not outlast it.
#[test]
fn restart_beside_misbehaving_bmcs_fails_each_clearly_in_bounded_time() {
    if skip_without(&["sushy-emulator"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let emu = emulator(tmp.path(), 1);
    let silent = BadBmc::start(Fault::Silent, Scope::Every);
    let trickle = BadBmc::start(Fault::Trickle, Scope::Every);
    let truncated = BadBmc::start(Fault::TruncatedJson, Scope::Every);
    let error500 = BadBmc::start(Fault::Error500, Scope::Every);
    let closing = BadBmc::start(Fault::Close, Scope::Every);
    let halfclose = BadBmc::start(Fault::HalfThenClose, Scope::Every);
    // Sane until the restart itself, whose connection it closes.
    let reset = "/Actions/ComputerSystem.Reset";
    let restartclose = BadBmc::start(Fault::Close, Scope::Only("POST", reset));
    let bads = [
        ("silent", &silent),
        ("trickle", &trickle),
        ("truncated", &truncated),
        ("error500", &error500),
        ("closing", &closing),
        ("halfclose", &halfclose),
        ("restartclose", &restartclose),
    ];
    let inv = inventory(tmp.path(), &emu, &bads);
    // Above ATTEMPTS' backoff (0.25 + 0.5 + 1 + 2 s), below 15 s.
    let timeout = 6;
    let start = Instant::now();
    let o = run(nodenet()
        .args(["bmc", "power", "restart", "--all", "--yes", "--verbose"])
        .args(["--parallel", "8", "--timeout", &timeout.to_string()])
        .arg(&inv)
        .env("NODENET_TEST_BMC_PW", PASSWORD)
        .env("NODENET_LOG", "debug"));
    let elapsed = start.elapsed();
    report("bmc power restart", elapsed, &bads);
    let out = String::from_utf8_lossy(&o.stdout);
    eprintln!("{out}");
    let err = String::from_utf8_lossy(&o.stderr);
    // Exit 1: BMC failures are problems with the hosts, not usage errors.
    assert_eq!(o.status.code(), Some(1), "{out}{err}");

    // The healthy host restarted despite the others (sushy turns the
    // restart into On a few seconds later).
    assert!(!line(&out, "healthy").contains("FAILED"), "{out}{err}");
    let sys = wait_power(&emu, 0, "On");
    assert_eq!(sys["PowerState"], "On", "{sys}");

    // One clear line per bad host: the host, the request and BMC, what
    // went wrong.
    let get = |b: &BadBmc| format!("GET http://127.0.0.1:{}{SYSTEM}", b.port);
    let step = "reading the system: ";
    assert_failed(
        &out,
        "silent",
        &silent,
        &[step, "no answer before the deadline", &get(&silent)],
    );
    assert_failed(
        &out,
        "trickle",
        &trickle,
        &[step, "no answer before the deadline", &get(&trickle)],
    );
    assert_failed(
        &out,
        "truncated",
        &truncated,
        &[
            step,
            &format!("unexpected answer from {SYSTEM}: not JSON"),
            "`{\"Members\": [`",
            &get(&truncated),
        ],
    );
    assert_failed(
        &out,
        "error500",
        &error500,
        &[
            step,
            "the BMC answered 500: Fan controller 3 is not responding; the service is restarting.",
            &format!("{}, 5 attempts", get(&error500)),
        ],
    );
    assert_failed(
        &out,
        "closing",
        &closing,
        &[
            step,
            "the BMC closed the connection",
            &format!("{}, 5 attempts", get(&closing)),
        ],
    );
    assert_failed(
        &out,
        "halfclose",
        &halfclose,
        &[step, "the BMC closed the connection", &get(&halfclose)],
    );

    // A restart leaves nothing to read back (On before and after): sent
    // once, and the line says the BMC may have done it.
    assert_failed(
        &out,
        "restartclose",
        &restartclose,
        &[
            "restarting: the BMC closed the connection",
            "the BMC may have acted: a restart cannot be read back, so it is not sent again",
            &format!(
                "[POST http://127.0.0.1:{}{SYSTEM}{reset}]",
                restartclose.port
            ),
        ],
    );
    assert_eq!(restartclose.count("POST", reset), 1);

    // Retries are bounded: one Redfish call (GET of the system) each.
    for (_, b) in &bads[..6] {
        let reqs = b.requests();
        assert!(!reqs.is_empty(), "{:?}: no request", b.fault);
        assert!(
            reqs.iter().all(|r| r.method == "GET" && r.path == SYSTEM),
            "{:?}: {reqs:?}",
            b.fault
        );
        assert!(reqs.len() <= ATTEMPTS, "{:?}: {reqs:?}", b.fault);
    }
    // 5xx and dropped connections are retried up to ATTEMPTS; a 200 that
    // is not JSON is not retried (it would not get better).
    assert_eq!(error500.count("GET", SYSTEM), ATTEMPTS);
    assert_eq!(closing.count("GET", SYSTEM), ATTEMPTS);
    assert_eq!(halfclose.count("GET", SYSTEM), ATTEMPTS);
    assert_eq!(truncated.count("GET", SYSTEM), 1);

    // The silent and trickling BMCs are given up on at the deadline (one
    // attempt, hung up on after ~--timeout), not at the client's own
    // per-request timeout or later; nor is the run.
    let limit = Duration::from_millis(timeout * 1000 + 1000);
    for b in [&silent, &trickle] {
        assert_eq!(b.requests().len(), 1, "{:?}", b.requests());
        let held = b.held();
        assert!(
            held <= limit,
            "{:?}: held {held:?} with --timeout {timeout}",
            b.fault
        );
    }
    assert!(
        elapsed < Duration::from_secs(timeout + 4),
        "took {elapsed:?} with --timeout {timeout}"
    );

    // The debug log and --verbose are on, and neither shows the password.
    assert!(
        err.contains("redfish request") && err.contains("silent: FAILED"),
        "{err}"
    );
    assert_no_secret(&o);
}

/// `provision --all`: the bad BMCs answer sanely until one later call
/// (the media collection, the CD, the InsertMedia and Reset POSTs, the
/// boot-override PATCH), so each fails at its own step, retries are
/// counted per call, and nothing is sent after a bad answer.
#[test]
fn provision_beside_bmcs_failing_at_later_calls() {
    if skip_without(&["sushy-emulator"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let emu = emulator(tmp.path(), 1);
    let images = tmp.path().join("images");
    std::fs::create_dir_all(&images).unwrap();
    std::fs::write(images.join("healthy.iso"), "ISO of healthy").unwrap();
    let srv = ImageServer::start(&images);
    let insert = "/VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia";
    let reset = "/Actions/ComputerSystem.Reset";
    let collhalf = BadBmc::start(Fault::HalfThenClose, Scope::Only("GET", "/VirtualMedia"));
    let cdhtml = BadBmc::start(Fault::Html, Scope::Only("GET", "/VirtualMedia/Cd"));
    let insert500 = BadBmc::start(Fault::Error500, Scope::Only("POST", insert));
    let patchsilent = BadBmc::start(Fault::Silent, Scope::Only("PATCH", SYSTEM));
    let resetclose = BadBmc::start(Fault::Close, Scope::Only("POST", reset));
    // These two do what they are asked and then close the connection.
    let insertacts = BadBmc::start(Fault::ActThenClose, Scope::Only("POST", insert));
    let resetacts = BadBmc::start(Fault::ActThenClose, Scope::Only("POST", reset));
    let bads = [
        ("collhalf", &collhalf),
        ("cdhtml", &cdhtml),
        ("insert500", &insert500),
        ("patchsilent", &patchsilent),
        ("resetclose", &resetclose),
        ("insertacts", &insertacts),
        ("resetacts", &resetacts),
    ];
    let inv = inventory(tmp.path(), &emu, &bads);
    // The healthy host waits for power on, which sushy's fake driver
    // applies 1 to 12 s late.
    let timeout = 18;
    let start = Instant::now();
    let o = run(nodenet()
        .arg("provision")
        .arg(&inv)
        .args(["--all", "--yes", "-v", "--image-url-base", &srv.base()])
        .args(["--timeout", &timeout.to_string()])
        .env("NODENET_TEST_BMC_PW", PASSWORD)
        .env("NODENET_LOG", "debug"));
    let elapsed = start.elapsed();
    report("provision", elapsed, &bads);
    let out = String::from_utf8_lossy(&o.stdout);
    eprintln!("{out}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");

    // The healthy host is provisioned despite the others.
    let healthy = line(&out, "healthy");
    assert!(
        !healthy.contains("FAILED") && healthy.contains("On"),
        "{out}{err}"
    );
    let sys = emu.get(&format!("/redfish/v1/Systems/{}", uuid(0)));
    assert_eq!(sys["PowerState"], "On", "{sys}");
    assert_eq!(sys["Boot"]["BootSourceOverrideTarget"], "Cd", "{sys}");
    let cd = emu.get(&format!("/redfish/v1/Systems/{}/VirtualMedia/Cd", uuid(0)));
    assert_eq!(cd["Image"], format!("{}/healthy.iso", srv.base()), "{cd}");
    assert_eq!(cd["Inserted"], true, "{cd}");

    let at = |b: &BadBmc, method: &str, path: &str| {
        format!("{method} http://127.0.0.1:{}{SYSTEM}{path}", b.port)
    };
    assert_failed(
        &out,
        "collhalf",
        &collhalf,
        &[
            "finding virtual media: the BMC closed the connection",
            &format!("{}, 5 attempts", at(&collhalf, "GET", "/VirtualMedia")),
        ],
    );
    assert_failed(
        &out,
        "cdhtml",
        &cdhtml,
        &[
            &format!(
                "finding virtual media: unexpected answer from {SYSTEM}/VirtualMedia/Cd: not JSON (text/html"
            ),
            "`<!DOCTYPE html> <html>",
            &at(&cdhtml, "GET", "/VirtualMedia/Cd"),
        ],
    );
    assert_failed(
        &out,
        "insert500",
        &insert500,
        &[
            "inserting media: the BMC answered 500: Fan controller 3",
            &format!(
                "{}, 5 attempts",
                at(
                    &insert500,
                    "POST",
                    "/VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia"
                )
            ),
        ],
    );
    assert_failed(
        &out,
        "patchsilent",
        &patchsilent,
        &[
            "setting boot override: no answer before the deadline",
            &at(&patchsilent, "PATCH", ""),
        ],
    );
    assert_failed(
        &out,
        "resetclose",
        &resetclose,
        &[
            "powering on: the BMC closed the connection",
            &format!("{}, 5 attempts", at(&resetclose, "POST", reset)),
        ],
    );

    // Per call: the faulty one at most ATTEMPTS times (exactly, for 5xx
    // and dropped connections), a non-JSON 200 once; nothing that changes
    // the machine is sent after a failed step.
    let changes = |b: &BadBmc| b.count("POST", "") + b.count("PATCH", "");
    assert_eq!(collhalf.count("GET", "/VirtualMedia"), ATTEMPTS);
    assert_eq!(
        collhalf.count("GET", "/VirtualMedia/Cd") + changes(&collhalf),
        0
    );
    assert_eq!(cdhtml.count("GET", "/VirtualMedia/Cd"), 1);
    assert_eq!(changes(&cdhtml), 0);
    assert_eq!(insert500.count("POST", insert), ATTEMPTS);
    assert_eq!(changes(&insert500), ATTEMPTS);
    // Before each resend of a change (and after the last), its state is
    // read: the CD 3 times before the insert (finding, ejecting,
    // inserting), then 5; the system twice before the Reset, then 5.
    assert_eq!(
        insert500.count("GET", "/VirtualMedia/Cd"),
        3 + ATTEMPTS,
        "{:?}",
        insert500.requests()
    );
    assert!((1..=ATTEMPTS).contains(&patchsilent.count("PATCH", SYSTEM)));
    assert_eq!(patchsilent.count("POST", reset), 0);
    assert_eq!(resetclose.count("POST", reset), ATTEMPTS);
    assert_eq!(resetclose.count("PATCH", SYSTEM), 1);
    assert_eq!(
        resetclose.count("GET", SYSTEM),
        2 + ATTEMPTS,
        "{:?}",
        resetclose.requests()
    );
    assert_eq!(resetclose.machine.lock().unwrap().power, "Off");

    // A BMC that acted but whose answer was lost: the state read back
    // shows the change, so it is not sent again and the host is done.
    for (host, b, path) in [
        ("insertacts", &insertacts, insert),
        ("resetacts", &resetacts, reset),
    ] {
        let l = line(&out, host);
        assert!(!l.contains("FAILED") && l.contains("On"), "{l}");
        assert_eq!(b.count("POST", path), 1, "{host}: {:?}", b.requests());
        let m = b.machine.lock().unwrap();
        assert_eq!(m.power, "On", "{host}");
        assert_eq!(
            m.image.as_deref(),
            Some(format!("{}/{host}.iso", srv.base()).as_str()),
            "{host}"
        );
    }

    // The silent PATCH holds the host until its deadline, no longer.
    let reqs = patchsilent.requests();
    let held = patchsilent.held() + (reqs.last().unwrap().at - reqs[0].at);
    assert!(
        held <= Duration::from_millis(timeout * 1000 + 1000),
        "held {held:?} with --timeout {timeout}"
    );
    assert!(
        elapsed < Duration::from_secs(timeout + 4),
        "took {elapsed:?} with --timeout {timeout}"
    );
    assert_no_secret(&o);
}
