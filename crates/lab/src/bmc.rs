//! The lab's BMCs, image server and machines (`nodenet lab up`).
//!
//! One sushy-tools emulator (the Redfish BMC emulator Metal3's dev
//! environments use) holds a system per node VM, behind basic auth with a
//! password only the lab directory knows; `nodenet serve` serves the
//! images; and the machine side ([`machines`], a background process) does
//! to each VM what a server does when its BMC is driven: power off stops
//! the VM, power on boots it — from the virtual CD when the boot override
//! says Cd, clearing a `Once` override afterwards as a BMC does.
//! sushy's fake driver only keeps state; it tells the machine side of
//! each change as it makes it ([`notify`]), so an off as short as
//! `provision`'s, or a restart's, is followed too.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::state::{self, LabState};
use crate::{io, LabError};

pub mod notify;

/// The lab BMCs' user.
pub const USER: &str = "admin";

/// What `lab up` started besides the VMs, recorded in lab.json.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LabBmcs {
    /// `http://127.0.0.1:PORT`: the emulator.
    pub base: String,
    pub emulator_pid: u32,
    /// `http://127.0.0.1:PORT`: `nodenet serve` of the lab's `images/`.
    pub image_url: String,
    pub image_server_pid: u32,
    /// The machine side ([`machines`]).
    pub machines_pid: u32,
    /// Where the machine side hears of each change the emulator makes
    /// ([`notify`]; 0 in a lab started before it did).
    #[serde(default)]
    pub notify_port: u16,
    pub systems: Vec<BmcSystem>,
}

/// One host's BMC in the lab.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BmcSystem {
    pub host: String,
    /// The Redfish system id (a UUID made from the VM's machine id).
    pub id: String,
    /// The host's BMC address in the inventory, which the lab stands in for.
    pub inventory_address: Option<String>,
}

impl LabBmcs {
    /// `/redfish/v1/Systems/ID`.
    pub fn system_path(&self, s: &BmcSystem) -> String {
        format!("/redfish/v1/Systems/{}", s.id)
    }

    /// `http://127.0.0.1:PORT/redfish/v1/Systems/ID`.
    pub fn system_url(&self, s: &BmcSystem) -> String {
        format!("{}{}", self.base, self.system_path(s))
    }

    /// The lab BMC of host `name`.
    pub fn system(&self, name: &str) -> Option<&BmcSystem> {
        self.systems.iter().find(|s| s.host == name)
    }

    /// The processes, named, for status and down.
    pub fn processes(&self) -> [(&'static str, u32); 3] {
        [
            ("machines", self.machines_pid),
            ("bmc emulator", self.emulator_pid),
            ("image server", self.image_server_pid),
        ]
    }
}

/// The lab's own files for its BMCs (password, emulator config and state).
pub const BMC_DIR: &str = "bmc";
/// What the image server serves.
pub const IMAGES_DIR: &str = "images";
/// The live ISO `nodenet provision --lab` builds each host's ISO from.
pub const LIVE_ISO: &str = "live.iso";
/// The machine side's log: every power and boot event.
pub const MACHINES_LOG: &str = "machines.log";
/// The image server's log (its URL is its first line).
pub const IMAGE_SERVER_LOG: &str = "image-server.log";

/// sushy-emulator: `$NODENET_SUSHY`, else on PATH, else where `.ci`
/// installs it.
pub fn sushy() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("NODENET_SUSHY") {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("sushy-emulator"))
        .chain([PathBuf::from("/opt/nodenet-ci/sushy/bin/sushy-emulator")])
        .find(|p| p.is_file())
}

/// The lab BMCs' password (`DIR/bmc/password`, mode 0600).
pub fn password(dir: &Path) -> Result<String, LabError> {
    let p = dir.join(BMC_DIR).join("password");
    std::fs::read_to_string(&p)
        .map(|s| s.trim().to_string())
        .map_err(io(p.display().to_string()))
}

/// A Redfish system id for a machine id (32 hex digits) in UUID form.
fn system_id(machine_id: &str) -> String {
    let m = format!("{machine_id:0>32}");
    format!(
        "{}-{}-{}-{}-{}",
        &m[0..8],
        &m[8..12],
        &m[12..16],
        &m[16..20],
        &m[20..32]
    )
}

/// Starts a background process of this lab: its own process group (a
/// terminal's Ctrl-C does not reach it), output to `log`.
fn spawn(cmd: &mut Command, log: &Path) -> Result<std::process::Child, LabError> {
    let out = std::fs::File::create(log).map_err(io(log.display().to_string()))?;
    let err = out.try_clone().map_err(io(log.display().to_string()))?;
    std::os::unix::process::CommandExt::process_group(cmd, 0);
    cmd.stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(io(format!("{:?}", cmd.get_program())))
}

fn free_tcp_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(0)
}

/// Starts the BMCs (one system per node VM, powered on as the VMs are),
/// the image server and the machine side for the lab in `dir`; builds the
/// live ISO `provision --lab` starts from. `nodenet` runs the image server
/// and the machine side.
pub fn start(
    st: &LabState,
    dir: &Path,
    inv: &nodenet_model::Inventory,
    nodenet: &Path,
    sushy: &Path,
) -> Result<LabBmcs, LabError> {
    let bmc_dir = dir.join(BMC_DIR);
    std::fs::create_dir_all(&bmc_dir).map_err(io(bmc_dir.display().to_string()))?;
    // The password: random, readable by the lab's owner only, never printed.
    let mut raw = [0u8; 18];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut raw))
        .map_err(io("/dev/urandom"))?;
    let password: String = raw.iter().map(|b| format!("{b:02x}")).collect();
    let pw_file = bmc_dir.join("password");
    write_private(&pw_file, password.as_bytes())?;
    let htpasswd = bmc_dir.join("htpasswd");
    write_htpasswd(sushy, &password, &htpasswd)?;

    let mut systems = Vec::new();
    let mut fake = Vec::new();
    for vm in st.vms.iter().filter(|v| v.role == "node") {
        let id = system_id(&vm.machine_id);
        let host = inv.hosts.iter().find(|h| h.name.value == vm.name);
        let macs: Vec<String> = vm
            .nics
            .iter()
            .map(|n| format!("{{'mac': '{}'}}", n.mac))
            .collect();
        fake.push(format!(
            "{{'uuid': '{id}', 'name': '{}', 'power_state': 'On', 'external_notifier': True, 'nics': [{}]}}",
            vm.name,
            macs.join(", ")
        ));
        systems.push(BmcSystem {
            host: vm.name.clone(),
            id,
            inventory_address: host
                .and_then(|h| h.bmc.as_ref())
                .map(|b| b.address.value.clone()),
        });
    }
    let conf = bmc_dir.join("emulator.conf");
    let notify_port = free_tcp_port();
    write_emulator_conf(&conf, &bmc_dir, notify_port, &fake)?;

    let mut started: Vec<u32> = Vec::new();
    let result = (|| {
        let (base, emulator_pid) = start_emulator(sushy, &conf, &bmc_dir, &password)?;
        started.push(emulator_pid);
        let images = dir.join(IMAGES_DIR);
        std::fs::create_dir_all(&images).map_err(io(images.display().to_string()))?;
        let (image_url, image_server_pid) = start_image_server(nodenet, &images, dir)?;
        started.push(image_server_pid);
        let img = st
            .image
            .as_ref()
            .ok_or_else(|| LabError::Input("the lab's state names no image".into()))?;
        crate::live_iso(img, &dir.join(LIVE_ISO))?;
        let machines = spawn(
            Command::new(nodenet)
                .args(["lab", "machines", "--dir"])
                .arg(dir),
            &dir.join(MACHINES_LOG),
        )?;
        Ok(LabBmcs {
            base,
            emulator_pid,
            image_url,
            image_server_pid,
            machines_pid: machines.id(),
            notify_port,
            systems,
        })
    })();
    if result.is_err() {
        state::terminate(&started, dir);
    }
    result
}

/// sushy-emulator's configuration at `conf`: on 127.0.0.1, the fake
/// driver with `systems` (Python dict literals) and its state in `dir`,
/// basic auth from `dir/htpasswd`, each change reported to
/// `127.0.0.1:notify_port` ([`notify`]).
fn write_emulator_conf(
    conf: &Path,
    dir: &Path,
    notify_port: u16,
    systems: &[String],
) -> Result<(), LabError> {
    std::fs::write(
        conf,
        format!(
            "SUSHY_EMULATOR_LISTEN_IP = '127.0.0.1'\nSUSHY_EMULATOR_FAKE_DRIVER = True\nSUSHY_EMULATOR_AUTH_FILE = '{}'\nSUSHY_EMULATOR_STATE_DIR = '{}'\nEXTERNAL_NOTIFICATION_URL = 'http://127.0.0.1:{notify_port}/'\nSUSHY_EMULATOR_FAKE_SYSTEMS = [{}]\n",
            dir.join("htpasswd").display(),
            dir.join("state").display(),
            systems.join(", ")
        ),
    )
    .map_err(io(conf.display().to_string()))
}

/// The emulator's htpasswd file at `to` (mode 0600): [`USER`] with
/// `password`.
fn write_htpasswd(sushy: &Path, password: &str, to: &Path) -> Result<(), LabError> {
    // sushy's basic auth reads bcrypt hashes; its own Python has bcrypt.
    // The lowest work factor (4): the password is 144 random bits, which
    // no work factor makes stronger, and the emulator pays the factor on
    // every request (the default 12 costs ~0.25 s of CPU each).
    let venv_python = sushy.with_file_name("python");
    let python = if venv_python.is_file() {
        venv_python
    } else {
        PathBuf::from("python3")
    };
    let mut hash = Command::new(&python)
        .args([
            "-c",
            "import sys, bcrypt; print(bcrypt.hashpw(sys.stdin.read().encode(), bcrypt.gensalt(rounds=4)).decode())",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(io(python.display().to_string()))?;
    if let Some(mut stdin) = hash.stdin.take() {
        stdin.write_all(password.as_bytes()).map_err(io("bcrypt"))?;
    }
    let hash = hash.wait_with_output().map_err(io("bcrypt"))?;
    if !hash.status.success() {
        return Err(LabError::Tool(
            format!(
                "{} (bcrypt, for the BMC emulator's htpasswd)",
                python.display()
            ),
            String::from_utf8_lossy(&hash.stderr).into_owned(),
        ));
    }
    write_private(
        to,
        format!("{USER}:{}", String::from_utf8_lossy(&hash.stdout).trim()).as_bytes(),
    )
}

fn write_private(p: &Path, data: &[u8]) -> Result<(), LabError> {
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::remove_file(p);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(p)
        .and_then(|mut f| f.write_all(data))
        .map_err(io(p.display().to_string()))
}

/// sushy-emulator on a free port, ready when it answers an authenticated
/// Redfish GET of its systems (a bare connect could reach whoever took the
/// port first); started again on another port if it ends.
fn start_emulator(
    sushy: &Path,
    conf: &Path,
    bmc_dir: &Path,
    password: &str,
) -> Result<(String, u32), LabError> {
    let log = bmc_dir.join("emulator.log");
    for _attempt in 0..5 {
        let port = free_tcp_port();
        let mut child = spawn(
            Command::new(sushy)
                .arg("--config")
                .arg(conf)
                .args(["--port", &port.to_string()]),
            &log,
        )?;
        let base = format!("http://127.0.0.1:{port}");
        let probe = RedfishHost {
            system: format!("{base}/redfish/v1/Systems"),
            user: USER.into(),
            password: password.into(),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if matches!(child.try_wait(), Ok(Some(_))) {
                break;
            }
            if probe.get(&probe.system).is_ok() {
                return Ok((base, child.id()));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    Err(LabError::Tool(
        format!("{} (the lab's BMC emulator)", sushy.display()),
        format!(
            "did not answer Redfish; its log: {}",
            bmc_dir.join("emulator.log").display()
        ),
    ))
}

/// `nodenet serve IMAGES --listen 127.0.0.1:0`; its URL from the line it
/// prints.
fn start_image_server(
    nodenet: &Path,
    images: &Path,
    dir: &Path,
) -> Result<(String, u32), LabError> {
    let log = dir.join(IMAGE_SERVER_LOG);
    let mut child = spawn(
        Command::new(nodenet)
            .arg("serve")
            .arg(images)
            .args(["--listen", "127.0.0.1:0"]),
        &log,
    )?;
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if let Some(url) = text
            .lines()
            .find_map(|l| l.strip_prefix("serving ")?.split(" on ").nth(1))
        {
            return Ok((url.trim_end_matches('/').to_string(), child.id()));
        }
        if matches!(child.try_wait(), Ok(Some(_))) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    Err(LabError::Tool(
        "nodenet serve (the lab's image server)".into(),
        std::fs::read_to_string(&log).unwrap_or_default(),
    ))
}

/// A system's state as the machine side acts on it.
#[derive(Clone, Debug, PartialEq)]
struct Seen {
    power: String,
    /// `Some((enabled, image))` when the next boot is from the inserted CD.
    cd_boot: Option<(String, String)>,
}

/// The machine side of the lab's BMCs, until the lab is gone: follows
/// each system's power transitions with the VM (see the module's doc),
/// as the emulator reports them ([`notify`]) and as polling its power
/// every half second reads them (which is also what makes the fake
/// driver apply a pending change). Every event goes to stdout
/// (`machines.log`).
pub fn machines(dir: &Path, say: &dyn Fn(&str)) -> Result<(), LabError> {
    let st = LabState::load(dir)?;
    let bmcs = st
        .bmc
        .clone()
        .ok_or_else(|| LabError::Input("the lab has no BMCs".into()))?;
    let img = st
        .image
        .clone()
        .ok_or_else(|| LabError::Input("the lab's state names no image".into()))?;
    let password = password(dir)?;
    let changes = match bmcs.notify_port {
        0 => std::sync::mpsc::channel().1,
        port => notify::listen(port)?,
    };
    let machines: Vec<Machine> = bmcs
        .systems
        .iter()
        .map(|s| Machine {
            sys: s,
            host: RedfishHost {
                system: bmcs.system_url(s),
                user: USER.into(),
                password: password.clone(),
            },
        })
        .collect();
    let mut power: Vec<Option<String>> = vec![None; machines.len()];
    say(&format!("machines: following {} BMC(s)", machines.len()));
    loop {
        // Ends with its lab (down, or another lab in the directory).
        match LabState::load(dir) {
            Ok(s) if s.bmc.as_ref().map(|b| b.machines_pid) == Some(std::process::id()) => {}
            _ => return Ok(()),
        }
        let reported = |power: &mut [Option<String>], change: notify::PowerChange| {
            if let Some(i) = machines.iter().position(|m| m.sys.id == change.system) {
                machines[i].follow(&mut power[i], &change.power, dir, &img, say);
            }
        };
        // Every change reported, in order, before what a read sees now:
        // a read after a change finds its report already here.
        changes
            .try_iter()
            .for_each(|change| reported(&mut power, change));
        for (m, power) in machines.iter().zip(&mut power) {
            if let Ok(seen) = m.host.seen() {
                m.follow(power, &seen.power, dir, &img, say);
            }
        }
        if let Ok(change) = changes.recv_timeout(Duration::from_millis(500)) {
            reported(&mut power, change);
        }
    }
}

/// A node VM and its BMC.
struct Machine<'a> {
    sys: &'a BmcSystem,
    host: RedfishHost,
}

impl Machine<'_> {
    /// Does to the VM what a power state `now` after `last` means (off:
    /// stopped; on: booted); the first state known is taken as it is.
    fn follow(
        &self,
        last: &mut Option<String>,
        now: &str,
        dir: &Path,
        img: &crate::Image,
        say: &dyn Fn(&str),
    ) {
        let Some(was) = last.replace(now.to_string()) else {
            return;
        };
        if was == now {
            return;
        }
        let result = match now {
            "Off" => {
                say(&format!("{}: powered off: VM stopped", self.sys.host));
                state::stop_vm(dir, &self.sys.host)
            }
            "On" => self
                .host
                .seen()
                .and_then(|seen| power_on(dir, img, self.sys, &self.host, &seen, say)),
            _ => Ok(()),
        };
        if let Err(e) = result {
            say(&format!("{}: {e}", self.sys.host));
        }
    }
}

/// Power on: the VM boots its CD when the override says so (fetched from
/// the URL the BMC holds, as the BMC's virtual media would), else its disk.
fn power_on(
    dir: &Path,
    img: &crate::Image,
    sys: &BmcSystem,
    host: &RedfishHost,
    seen: &Seen,
    say: &dyn Fn(&str),
) -> Result<(), LabError> {
    let cdrom = match &seen.cd_boot {
        Some((enabled, url)) => {
            let iso = dir.join(format!("{}-cd.iso", sys.host));
            RedfishHost::fetch(url, &iso)?;
            say(&format!("{}: powered on: booting its CD {url}", sys.host));
            if enabled == "Once" {
                host.patch(
                    &host.system,
                    r#"{"Boot": {"BootSourceOverrideEnabled": "Disabled"}}"#,
                )?;
            }
            Some(iso)
        }
        None => {
            say(&format!("{}: powered on: booting its disk", sys.host));
            None
        }
    };
    state::start_vm(dir, img, &sys.host, cdrom)
}

/// The machine behind an emulated BMC (sushy-tools' fake driver keeps
/// only state), seen over Redfish with curl (not nodenet's own client).
pub struct RedfishHost {
    /// `http://127.0.0.1:PORT/redfish/v1/Systems/<id>`.
    pub system: String,
    pub user: String,
    pub password: String,
}

impl RedfishHost {
    fn curl(&self, args: &[&str], url: &str) -> Result<Vec<u8>, LabError> {
        // Credentials on stdin (curl's config syntax), not on a command line.
        let mut child = Command::new("curl")
            .args(["-fsS", "--max-time", "10", "-K", "-"])
            .args(args)
            .arg(url)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(io("curl"))?;
        if let Some(mut stdin) = child.stdin.take() {
            writeln!(stdin, "user = \"{}:{}\"", self.user, self.password).map_err(io("curl"))?;
        }
        let out = child.wait_with_output().map_err(io("curl"))?;
        if !out.status.success() {
            return Err(LabError::Tool(
                format!("{} {url}", args.first().unwrap_or(&"GET")),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            ));
        }
        Ok(out.stdout)
    }

    fn get(&self, url: &str) -> Result<serde_json::Value, LabError> {
        let body = self.curl(&[], url)?;
        serde_json::from_slice(&body)
            .map_err(|e| LabError::Tool(format!("GET {url}"), e.to_string()))
    }

    fn patch(&self, url: &str, body: &str) -> Result<(), LabError> {
        self.curl(
            &[
                "-X",
                "PATCH",
                "-H",
                "Content-Type: application/json",
                "--data",
                body,
            ],
            url,
        )
        .map(|_| ())
    }

    fn seen(&self) -> Result<Seen, LabError> {
        let sys = self.get(&self.system)?;
        let cd = self.get(&format!("{}/VirtualMedia/Cd", self.system))?;
        let enabled = sys["Boot"]["BootSourceOverrideEnabled"]
            .as_str()
            .unwrap_or("Disabled")
            .to_string();
        let cd_boot = match (cd["Inserted"].as_bool(), cd["Image"].as_str()) {
            (Some(true), Some(url))
                if sys["Boot"]["BootSourceOverrideTarget"] == "Cd" && enabled != "Disabled" =>
            {
                Some((enabled, url.to_string()))
            }
            _ => None,
        };
        Ok(Seen {
            power: sys["PowerState"].as_str().unwrap_or("").to_string(),
            cd_boot,
        })
    }

    /// Downloads the CD image the BMC was given.
    pub fn fetch(url: &str, to: &Path) -> Result<(), LabError> {
        crate::sh(&format!(
            "curl -fsS --max-time 120 -o '{}' '{url}'",
            to.display()
        ))
        .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_ids_are_uuids_of_the_machine_id() {
        assert_eq!(
            system_id("0123456789abcdef0123456789abcdef"),
            "01234567-89ab-cdef-0123-456789abcdef"
        );
    }
}
