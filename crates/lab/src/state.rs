//! A running lab (`nodenet lab up|status|down`): its VMs started in the
//! background from a [`Topology`], recorded in `lab.json` in the lab's
//! directory so that later commands find them, and stopped by their
//! recorded process ids (checked to be this lab's qemu first).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::topology::Topology;
use crate::{bmc, free_udp_port, io, memory_mib, Image, LabError, Nic, Vm, VmSpec};

pub const STATE_FILE: &str = "lab.json";
pub const REPORT_JSON: &str = "report.json";
pub const REPORT_HTML: &str = "report.html";
pub const REHEARSE_JSON: &str = "rehearse.json";

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct VmRecord {
    pub name: String,
    /// `node` or `switch`.
    pub role: String,
    pub pid: u32,
    /// What it takes to start the VM again (its BMC powers it on).
    #[serde(default)]
    pub machine_id: String,
    #[serde(default)]
    pub nics: Vec<Nic>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LabState {
    /// The inventory the lab was built from (absolute).
    pub inventory: PathBuf,
    /// `kvm` or `tcg`.
    pub accel: String,
    pub topology: Topology,
    pub vms: Vec<VmRecord>,
    /// The lab image (a VM its BMC powers on again boots it).
    #[serde(default)]
    pub image: Option<Image>,
    /// The BMCs, image server and machine side (absent without sushy-tools).
    #[serde(default)]
    pub bmc: Option<crate::bmc::LabBmcs>,
}

/// What one node VM carries on its config disk (`/run/cfg`): relative
/// path, content, mode.
pub type NodeFiles = Vec<(String, Vec<u8>, u32)>;

/// The default lab directory: `$XDG_CACHE_HOME/nodenet/lab`, else
/// `~/.cache/nodenet/lab`.
pub fn default_dir() -> PathBuf {
    cache_home().join("nodenet/lab")
}

/// Where the lab image is cached: `$NODENET_LAB_CACHE`, else
/// `$XDG_CACHE_HOME/nodenet/lab-image`.
pub fn default_image_cache() -> PathBuf {
    std::env::var_os("NODENET_LAB_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| cache_home().join("nodenet/lab-image"))
}

fn cache_home() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from("/var/cache"))
}

/// A `Key:   N kB` line of a /proc file (`meminfo`, `PID/status`), in MiB.
fn proc_mib(file: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(file).ok()?;
    let kib: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib / 1024)
}

/// MiB the machine can give to VMs now (`MemAvailable`).
fn available_mib() -> Option<u64> {
    proc_mib("/proc/meminfo", "MemAvailable")
}

/// qemu's own overhead per VM beyond guest memory, MiB: under TCG a
/// 512 MiB node measured ~930 MiB resident (translation cache, disk
/// overlay), the switch ~770 MiB (BENCHMARKS.md).
const QEMU_OVERHEAD_MIB: u64 = 512;

/// Memory the lab needs for `nodes` node VMs and its switch, MiB.
pub fn memory_needed(nodes: usize) -> u64 {
    (nodes as u64) * (memory_mib("node") + QEMU_OVERHEAD_MIB)
        + memory_mib("switch")
        + QEMU_OVERHEAD_MIB
}

impl LabState {
    pub fn load(dir: &Path) -> Result<LabState, LabError> {
        let p = dir.join(STATE_FILE);
        let text = std::fs::read_to_string(&p).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                LabError::NoLab(dir.display().to_string())
            } else {
                LabError::Io(p.display().to_string(), e)
            }
        })?;
        serde_json::from_str(&text)
            .map_err(|e| LabError::Input(format!("{}: not a lab's state: {e}", p.display())))
    }

    /// The lab's hosts as `inv` describes them (in the lab's order; hosts
    /// `inv` lacks left out).
    pub fn hosts_in<'i>(&self, inv: &'i nodenet_model::Inventory) -> Vec<&'i nodenet_model::Host> {
        self.topology
            .nodes
            .iter()
            .filter_map(|n| inv.hosts.iter().find(|h| h.name.value == n.name))
            .collect()
    }

    pub fn save(&self, dir: &Path) -> Result<(), LabError> {
        let p = dir.join(STATE_FILE);
        let text = serde_json::to_string_pretty(self).expect("state serialises");
        nodenet_model::write_atomic(&p, text.as_bytes()).map_err(io(p.display().to_string()))
    }
}

/// Whether `pid` is a qemu of the lab in `dir` (not a recycled id).
pub fn alive(pid: u32, dir: &Path) -> bool {
    ours(pid, dir).is_some_and(|c| c.contains("qemu-system"))
}

/// The command line of `pid` when it is a process of the lab in `dir`
/// (its command line names the directory).
fn ours(pid: u32, dir: &Path) -> Option<String> {
    let c = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let c = String::from_utf8_lossy(&c).replace('\0', " ");
    c.contains(&*dir.to_string_lossy()).then_some(c)
}

/// Whether `pid` is a process of the lab in `dir` (a VM, the BMC
/// emulator, the image server, the machine side).
pub fn running(pid: u32, dir: &Path) -> bool {
    ours(pid, dir).is_some()
}

/// TERM to each of `pids` that is a process of the lab in `dir`, KILL to
/// those still there after 5 s; waits up to 5 s more for them to end.
pub fn terminate(pids: &[u32], dir: &Path) {
    let left = || pids.iter().copied().filter(|p| running(*p, dir));
    left().for_each(|p| signal(p, rustix::process::Signal::TERM));
    let wait = || {
        let deadline = Instant::now() + Duration::from_secs(5);
        while left().next().is_some() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    wait();
    left().for_each(|p| signal(p, rustix::process::Signal::KILL));
    wait();
}

/// Stops the VM `name` (its BMC powered it off).
pub fn stop_vm(dir: &Path, name: &str) -> Result<(), LabError> {
    let st = LabState::load(dir)?;
    if let Some(v) = st.vms.iter().find(|v| v.name == name) {
        terminate(&[v.pid], dir);
    }
    Ok(())
}

/// Starts the VM `name` again (its BMC powered it on): from `cdrom` (its
/// config disk then without keyfiles, so that the CD's are the ones it
/// runs with), else as `lab up` started it. The previous console log is
/// kept as `NAME-console.prev.log`; lab.json gets the new pid.
pub fn start_vm(
    dir: &Path,
    img: &Image,
    name: &str,
    cdrom: Option<PathBuf>,
) -> Result<(), LabError> {
    let mut st = LabState::load(dir)?;
    let Some(i) = st.vms.iter().position(|v| v.name == name) else {
        return Err(LabError::Input(format!("no VM {name} in the lab")));
    };
    terminate(&[st.vms[i].pid], dir);
    let rec = st.vms[i].clone();
    let cfg = dir.join(format!("{name}-cfg"));
    let config = match cdrom {
        Some(_) => {
            let cd_cfg = dir.join(format!("{name}-cfg-cd"));
            let _ = std::fs::remove_dir_all(&cd_cfg);
            std::fs::create_dir_all(&cd_cfg).map_err(io(cd_cfg.display().to_string()))?;
            for e in std::fs::read_dir(&cfg).map_err(io(cfg.display().to_string()))? {
                let e = e.map_err(io(cfg.display().to_string()))?;
                if e.file_name() == "keyfiles" || !e.path().is_file() {
                    continue;
                }
                let to = cd_cfg.join(e.file_name());
                std::fs::hard_link(e.path(), &to)
                    .or_else(|_| std::fs::copy(e.path(), &to).map(|_| ()))
                    .map_err(io(to.display().to_string()))?;
            }
            cd_cfg
        }
        None => cfg,
    };
    crate::console_log::keep_previous(dir, name);
    let spec = VmSpec {
        name: name.to_string(),
        role: rec.role.clone(),
        machine_id: rec.machine_id.clone(),
        nics: rec.nics.clone(),
        config,
        cdrom,
        config_drive: None,
    };
    let pid = Vm::start_detached(img, &spec, dir, &st.accel)?;
    st.vms[i].pid = pid;
    st.save(dir)
}

/// Waits until every VM of the lab in `dir` runs and is ready (after its
/// BMC booted it again, say); the state then. A VM that is not running for
/// 20 s (its BMC powered it off) is an error.
pub fn wait_ready(dir: &Path, timeout: Duration) -> Result<LabState, LabError> {
    let deadline = Instant::now() + timeout;
    let mut down_since: std::collections::HashMap<String, Instant> = Default::default();
    loop {
        let st = LabState::load(dir)?;
        let mut waiting = Vec::new();
        for v in &st.vms {
            if !alive(v.pid, dir) {
                let since = *down_since
                    .entry(v.name.clone())
                    .or_insert_with(Instant::now);
                if since.elapsed() > Duration::from_secs(20) {
                    return Err(LabError::Input(format!(
                        "{} is not running (powered off through its BMC? `nodenet lab up` again)",
                        v.name
                    )));
                }
                waiting.push(v.name.clone());
            } else {
                down_since.remove(&v.name);
                if !ready(dir, &v.name) {
                    waiting.push(v.name.clone());
                }
            }
        }
        if waiting.is_empty() {
            return Ok(st);
        }
        if Instant::now() > deadline {
            return Err(LabError::Timeout(format!(
                "not ready within {timeout:?}: {}",
                waiting.join(", ")
            )));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Resident memory of a process (a VM's qemu), MiB.
pub fn rss_mib(pid: u32) -> Option<u64> {
    proc_mib(&format!("/proc/{pid}/status"), "VmRSS")
}

/// Whether the VM's init said it is ready (its console log).
pub fn ready(dir: &Path, name: &str) -> bool {
    std::fs::read_to_string(crate::console_log::path(dir, name))
        .map(|t| t.contains("lab: ready"))
        .unwrap_or(false)
}

/// Starts the lab: the switch, then a node VM per node of `topology`
/// with `files[i]` and the `nodenet` binary on its config disk; waits
/// until every VM is ready.
#[allow(clippy::too_many_arguments)]
pub fn up(
    img: &Image,
    inventory: &Path,
    topology: Topology,
    files: &[NodeFiles],
    nodenet: &Path,
    switch_script: &str,
    dir: &Path,
    ready_timeout: Duration,
) -> Result<LabState, LabError> {
    refuse_to_start(dir, topology.nodes.len())?;
    std::fs::create_dir_all(dir).map_err(io(dir.display().to_string()))?;
    let dir = &dir.canonicalize().map_err(io(dir.display().to_string()))?;
    let (switch_nics, node_nics) = cables(&topology);
    let mut state = LabState {
        inventory: inventory.to_path_buf(),
        accel: crate::accelerator(&img.kernel),
        topology,
        vms: Vec::new(),
        image: Some(img.clone()),
        bmc: None,
    };
    let cfg = |name: &str| -> Result<PathBuf, LabError> {
        let d = dir.join(format!("{name}-cfg"));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).map_err(io(d.display().to_string()))?;
        Ok(d)
    };
    let switch_cfg = cfg("switch")?;
    std::fs::write(switch_cfg.join("switch.sh"), switch_script).map_err(io("switch.sh"))?;
    let spec = VmSpec {
        name: "switch".into(),
        role: "switch".into(),
        machine_id: "5a1e0000000000000000000000005e00".into(),
        nics: switch_nics,
        config: switch_cfg,
        cdrom: None,
        config_drive: None,
    };
    let started = Vm::start_detached(img, &spec, dir, &state.accel);
    let result = started.and_then(|pid| {
        state.vms.push(VmRecord {
            name: "switch".into(),
            role: "switch".into(),
            pid,
            machine_id: spec.machine_id.clone(),
            nics: spec.nics.clone(),
        });
        for ((node, nics), files) in state
            .topology
            .nodes
            .clone()
            .iter()
            .zip(node_nics)
            .zip(files)
        {
            let c = cfg(&node.name)?;
            write_node_config(&c, nodenet, files, node, state.topology.kernel_nic_names)?;
            let spec = VmSpec {
                name: node.name.clone(),
                role: "node".into(),
                machine_id: node.machine_id.clone(),
                nics,
                config: c,
                cdrom: None,
                config_drive: None,
            };
            let pid = Vm::start_detached(img, &spec, dir, &state.accel)?;
            state.vms.push(VmRecord {
                name: node.name.clone(),
                role: "node".into(),
                pid,
                machine_id: spec.machine_id,
                nics: spec.nics,
            });
            state.save(dir)?;
        }
        state.save(dir)?;
        wait_until_ready(&mut state, dir, img, ready_timeout)?;
        Ok(())
    });
    match result {
        Ok(()) => Ok(state),
        Err(e) => {
            // Nothing half-started stays running; the consoles stay for
            // the error to point at (`lab down` removes them).
            let _ = state.save(dir);
            stop(&state, dir);
            Err(e)
        }
    }
}

/// A lab already running in `dir`, or too little memory for `nodes`
/// node VMs and the switch: nothing is started.
fn refuse_to_start(dir: &Path, nodes: usize) -> Result<(), LabError> {
    if let Ok(old) = LabState::load(dir) {
        if old.vms.iter().any(|v| alive(v.pid, dir)) {
            return Err(LabError::Input(format!(
                "a lab is running in {} (`nodenet lab down` first, or give another --dir)",
                dir.display()
            )));
        }
    }
    let need = memory_needed(nodes);
    if let Some(have) = available_mib() {
        if need > have {
            return Err(LabError::Input(format!(
                "the lab needs {need} MiB for {} node VM(s) and its switch ({} MiB each plus qemu's own); this machine has {have} MiB available (choose fewer hosts with --hosts or --per-shape)",
                nodes,
                memory_mib("node")
            )));
        }
    }
    Ok(())
}

/// The cables: each node NIC to its switch port, over UDP on 127.0.0.1
/// (the switch's ports, then each node's NICs).
fn cables(topology: &Topology) -> (Vec<Nic>, Vec<Vec<Nic>>) {
    let mut switch_nics: Vec<Nic> = Vec::new();
    let mut node_nics: Vec<Vec<Nic>> = Vec::new();
    for n in &topology.nodes {
        let mut nics = Vec::new();
        for nic in &n.nics {
            let (a, b) = (free_udp_port(), free_udp_port());
            nics.push(Nic {
                local: a,
                remote: b,
                mac: nic.mac.clone(),
            });
            switch_nics.push(Nic {
                local: b,
                remote: a,
                mac: switch_mac(switch_nics.len()),
            });
        }
        node_nics.push(nics);
    }
    (switch_nics, node_nics)
}

/// A node's config disk: the `nodenet` binary, its files, and (unless the
/// kernel names them) the NIC names its MACs get.
fn write_node_config(
    c: &Path,
    nodenet: &Path,
    files: &NodeFiles,
    node: &crate::topology::LabNode,
    kernel_nic_names: bool,
) -> Result<(), LabError> {
    // Copied, not read: the binary is ~180 MB, once per node.
    std::fs::copy(nodenet, c.join("nodenet")).map_err(io(nodenet.display().to_string()))?;
    for (rel, data, mode) in files {
        let p = c.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent.display().to_string()))?;
        }
        std::fs::write(&p, data).map_err(io(p.display().to_string()))?;
        let mut perm = std::fs::metadata(&p)
            .map_err(io(p.display().to_string()))?
            .permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perm, *mode);
        std::fs::set_permissions(&p, perm).map_err(io(p.display().to_string()))?;
    }
    let names: String = node
        .nics
        .iter()
        .map(|n| format!("{} {}\n", n.mac, n.name))
        .collect();
    if !kernel_nic_names {
        std::fs::write(c.join("nic-names"), names).map_err(io("nic-names"))?;
    }
    Ok(())
}

/// Waits until every VM of the lab says it is ready; a VM that exits is
/// the error. Under TCG a guest can hang while it boots (a soft lockup
/// with the host busy: seen twice in four runs of the lab suite), so the
/// first VM not ready in time is started again, once per lab, its first
/// console kept as `NAME-console.prev.log`; not ready again is the error.
fn wait_until_ready(
    state: &mut LabState,
    dir: &Path,
    img: &Image,
    ready_timeout: Duration,
) -> Result<(), LabError> {
    let mut deadline = Instant::now() + ready_timeout;
    let mut restarted: Option<String> = None;
    for i in 0..state.vms.len() {
        let name = state.vms[i].name.clone();
        while !ready(dir, &name) {
            if !alive(state.vms[i].pid, dir) {
                return Err(LabError::Tool(
                    format!("VM {name}"),
                    "qemu exited while booting".into(),
                ));
            }
            if Instant::now() > deadline {
                if restarted.is_none() {
                    start_vm(dir, img, &name, None)?;
                    state.vms[i].pid = LabState::load(dir)?.vms[i].pid;
                    restarted = Some(name.clone());
                    deadline = Instant::now() + ready_timeout;
                    continue;
                }
                return Err(LabError::Timeout(format!(
                    "{name} was not ready within {ready_timeout:?} (its console: {}){}",
                    crate::console_log::path(dir, &name).display(),
                    match &restarted {
                        Some(r) => format!(
                            "; {r} had been started again after a first boot that did not get ready (that boot's console: {})",
                            crate::console_log::previous(dir, r).display()
                        ),
                        None => String::new(),
                    }
                )));
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }
    Ok(())
}

/// MAC of the switch's n-th port.
fn switch_mac(n: usize) -> String {
    format!("52:54:00:5e:{:02x}:{:02x}", (n + 1) >> 8, (n + 1) & 0xff)
}

/// Stops every VM of the lab in `dir` (TERM, then KILL after 5 s) and
/// removes the lab's files. The VMs that were running.
pub fn down(dir: &Path) -> Result<Vec<String>, LabError> {
    let first = LabState::load(dir)?;
    let running_names = |procs: &[(String, u32)]| -> Vec<String> {
        procs
            .iter()
            .filter(|(_, pid)| running(*pid, dir))
            .map(|(name, _)| name.clone())
            .collect()
    };
    let pids = |procs: &[(String, u32)]| -> Vec<u32> { procs.iter().map(|(_, p)| *p).collect() };
    // The machine side first (it would start VMs again), then the rest of
    // what the lab started, read again with the VMs' current pids.
    let mut procs: Vec<(String, u32)> = first
        .bmc
        .iter()
        .map(|b| ("machines".to_string(), b.machines_pid))
        .collect();
    let mut stopped = running_names(&procs);
    terminate(&pids(&procs), dir);
    let state = LabState::load(dir)?;
    let rest: Vec<(String, u32)> = state
        .bmc
        .iter()
        .flat_map(|b| {
            b.processes()
                .into_iter()
                .filter(|(_, p)| *p != b.machines_pid)
        })
        .map(|(what, pid)| (what.to_string(), pid))
        .chain(state.vms.iter().map(|v| (v.name.clone(), v.pid)))
        .collect();
    stopped.extend(running_names(&rest));
    terminate(&pids(&rest), dir);
    procs.extend(rest);
    let left: Vec<String> = procs
        .iter()
        .filter(|(_, pid)| running(*pid, dir))
        .map(|(name, pid)| format!("{name} (pid {pid})"))
        .collect();
    if !left.is_empty() {
        return Err(LabError::Tool(
            "lab down".into(),
            format!("still running: {}", left.join(", ")),
        ));
    }
    // Only what the lab made: its state, the VMs' files, the reports.
    let mut ours: Vec<String> = [
        STATE_FILE,
        REPORT_JSON,
        REPORT_HTML,
        REHEARSE_JSON,
        bmc::BMC_DIR,
        bmc::IMAGES_DIR,
        bmc::LIVE_ISO,
        bmc::MACHINES_LOG,
        bmc::IMAGE_SERVER_LOG,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for v in &state.vms {
        for suffix in [
            "-cfg",
            "-cfg-cd",
            "-cd.iso",
            "-cfg.ext4",
            "-serial.sock",
            "-mon.sock",
            "-console.log",
            "-console.prev.log",
            ".pid",
        ] {
            ours.push(format!("{}{suffix}", v.name));
        }
    }
    for name in ours {
        let p = dir.join(name);
        let _ = if p.is_dir() {
            std::fs::remove_dir_all(&p)
        } else {
            std::fs::remove_file(&p)
        };
    }
    crate::console_log::remove_kept(dir);
    let _ = std::fs::remove_dir(dir);
    Ok(stopped)
}

/// Stops every VM of the lab ([`terminate`]). The VMs that were running.
fn stop(state: &LabState, dir: &Path) -> Vec<String> {
    let running: Vec<String> = state
        .vms
        .iter()
        .filter(|v| alive(v.pid, dir))
        .map(|v| v.name.clone())
        .collect();
    let pids: Vec<u32> = state.vms.iter().map(|v| v.pid).collect();
    terminate(&pids, dir);
    running
}

fn signal(pid: u32, sig: rustix::process::Signal) {
    if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process(pid, sig);
    }
}

/// A VM of the lab, whether its qemu runs, whether its init said ready.
pub type VmStatus = (VmRecord, bool, bool);

/// One line per VM: name, role, pid, running, ready.
pub fn status(dir: &Path) -> Result<(LabState, Vec<VmStatus>), LabError> {
    let state = LabState::load(dir)?;
    let rows = state
        .vms
        .iter()
        .map(|v| (v.clone(), alive(v.pid, dir), ready(dir, &v.name)))
        .collect();
    Ok((state, rows))
}
