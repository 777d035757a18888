//! A lab VM: its qemu command line (TCG, or KVM where the kernel boots
//! under it), its NICs cabled over UDP, started for the harness or
//! detached for `nodenet lab up`, and stopped with it.

use super::*;

/// The lab kernel's command line (a serial console; eth* names; TCG's
/// TSC is one host clock for all vCPUs, so trust it rather than fall back
/// to the HPET, whose every read is an emulated MMIO access; no Spectre
/// mitigations, whose retpolines and RSB fills TCG emulates instruction by
/// instruction in a VM that guards nothing: the LACP-and-apply test took
/// 148 CPU-s instead of 175).
pub(crate) const KERNEL_ARGS: &str =
    "console=ttyS0 quiet loglevel=1 net.ifnames=0 panic=-1 tsc=reliable mitigations=off";

/// One NIC: this VM's UDP port and its peer's.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Nic {
    pub local: u16,
    pub remote: u16,
    pub mac: String,
}

pub struct VmSpec {
    pub name: String,
    /// `node`, `switch`, `bare`, `rhcos` or `cloud` (see files/lab-init).
    pub role: String,
    pub machine_id: String,
    pub nics: Vec<Nic>,
    /// Files for the config disk (/run/cfg in the guest).
    pub config: PathBuf,
    /// Boot this CD (BIOS, its boot loader and command line) instead of
    /// the lab kernel and stage 1 directly; see [`live_iso`].
    pub cdrom: Option<PathBuf>,
    /// A config drive (an ISO 9660 image labelled `config-2`, as Ironic
    /// and Nova write it) attached as one more disk, for cloud-init.
    pub config_drive: Option<PathBuf>,
}

pub struct Vm {
    pub name: String,
    /// The qemu process when this harness started it; `None` when attached
    /// to a VM that outlives us (`nodenet lab up`), which drop leaves running.
    pub(crate) child: Option<Child>,
    pub(crate) serial: BufReader<UnixStream>,
    pub(crate) monitor: PathBuf,
    pub(crate) seq: u32,
    pub console: String,
}

/// The qemu command line of a VM, with its serial and monitor sockets.
pub(crate) fn qemu(
    img: &Image,
    spec: &VmSpec,
    dir: &Path,
    console: Console,
) -> Result<(Command, PathBuf, PathBuf), LabError> {
    // Who this VM is, for lab-init when the command line is not ours
    // (a CD's boot loader has its own).
    std::fs::write(
        spec.config.join("lab.env"),
        format!(
            "role={}\nname={}\nmachineid={}\n",
            spec.role, spec.name, spec.machine_id
        ),
    )
    .map_err(io("lab.env"))?;
    let cfg = dir.join(format!("{}-cfg.ext4", spec.name));
    sh(&format!(
        "mkfs.ext4 -q -F -d '{}' '{}' 512M",
        spec.config.display(),
        cfg.display()
    ))?;
    let serial = dir.join(format!("{}-serial.sock", spec.name));
    let monitor = dir.join(format!("{}-mon.sock", spec.name));
    // The node gets two vCPUs: multi-threaded TCG then runs nodenet,
    // D-Bus and NetworkManager on both host cores (apply ~30% faster);
    // the switch only forwards frames.
    let systemd = systemd_is_init(&spec.role);
    let cpus = if spec.role == "node" || systemd {
        "2"
    } else {
        "1"
    };
    // systemd, Open vSwitch and nmstatectl beside NetworkManager.
    let memory = memory_mib(&spec.role).to_string();
    let mut cmd = Command::new("qemu-system-x86_64");
    // No -no-reboot: `reset` (a reboot) must restart the guest, not end qemu.
    let accel = match console {
        Console::Harness => "tcg",
        Console::Detached(_, a) => a,
    };
    cmd.args([
        "-accel", accel, "-m", &memory, "-smp", cpus, "-display", "none", "-vga", "none",
    ]);
    // Under systemd the console is not the harness's: units write to
    // /dev/console (RHCOS's with `journal+console`), the shell is on
    // ttyS0 (lab-shell.service).
    let args = if systemd {
        KERNEL_ARGS.replace("console=ttyS0", "console=tty0")
    } else {
        KERNEL_ARGS.to_string()
    };
    match &spec.cdrom {
        Some(iso) => {
            cmd.arg("-cdrom").arg(iso).args(["-boot", "d"]);
        }
        None => {
            cmd.arg("-kernel")
                .arg(&img.kernel)
                .arg("-initrd")
                .arg(&img.initrd)
                .arg("-append")
                .arg(format!(
                    "{args} lab.role={} lab.name={} lab.machineid={}",
                    spec.role, spec.name, spec.machine_id
                ));
        }
    }
    cmd.arg("-drive")
        .arg(format!(
            "file={},if=virtio,format=raw,snapshot=on",
            img.rootfs.display()
        ))
        .arg("-drive")
        .arg(format!(
            "file={},if=virtio,format=raw,readonly=on",
            cfg.display()
        ))
        .args(spec.config_drive.iter().flat_map(|d| {
            [
                "-drive".into(),
                format!("file={},if=virtio,format=raw,readonly=on", d.display()),
            ]
        }))
        .arg("-chardev")
        .arg(match console {
            Console::Harness => format!("socket,id=s0,path={},server=on,wait=on", serial.display()),
            Console::Detached(log, _) => format!(
                "socket,id=s0,path={},server=on,wait=off,logfile={},logappend=on",
                serial.display(),
                log.display()
            ),
        })
        .args(["-serial", "chardev:s0"])
        .arg("-monitor")
        .arg(format!("unix:{},server=on,wait=off", monitor.display()));
    for (i, n) in spec.nics.iter().enumerate() {
        cmd.arg("-netdev").arg(format!(
                "dgram,id=n{i},local.type=inet,local.host=127.0.0.1,local.port={},remote.type=inet,remote.host=127.0.0.1,remote.port={}",
                n.local, n.remote
            ));
        // speed/duplex: without them the bond refuses LACP.
        cmd.arg("-device").arg(format!(
            "virtio-net-pci,netdev=n{i},mac={},speed=1000,duplex=full",
            n.mac
        ));
    }
    Ok((cmd, serial, monitor))
}

pub(crate) fn connect(path: &Path, deadline: Instant) -> Result<UnixStream, LabError> {
    loop {
        match UnixStream::connect(path) {
            Ok(s) => return Ok(s),
            Err(e) if Instant::now() > deadline => {
                return Err(LabError::Io(path.display().to_string(), e))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// Which accelerator the lab's VMs get: `$NODENET_LAB_ACCEL` (`kvm` or
/// `tcg`) when set, else KVM when `/dev/kvm` opens and a kernel really
/// boots under it (a nested KVM can open and then hang at the first guest
/// instructions the BIOS does not use), else TCG.
pub fn accelerator(kernel: &Path) -> String {
    if let Ok(a) = std::env::var("NODENET_LAB_ACCEL") {
        return a;
    }
    let opens = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_ok();
    if opens && kernel_boots_under_kvm(kernel) {
        "kvm".into()
    } else {
        "tcg".into()
    }
}

/// Boots `kernel` under KVM with no root: it prints its banner on the
/// serial port within a second when KVM works.
pub(crate) fn kernel_boots_under_kvm(kernel: &Path) -> bool {
    let child = Command::new("qemu-system-x86_64")
        .args([
            "-accel",
            "kvm",
            "-m",
            "128",
            "-display",
            "none",
            "-nodefaults",
        ])
        .args(["-serial", "stdio", "-no-reboot", "-kernel"])
        .arg(kernel)
        .args(["-append", "console=ttyS0 panic=-1"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut child) = child else { return false };
    let Some(mut out) = child.stdout.take() else {
        return false;
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 256];
        let _ = tx.send(matches!(out.read(&mut buf), Ok(n) if n > 0));
    });
    let booted = rx.recv_timeout(Duration::from_secs(10)).unwrap_or(false);
    let _ = child.kill();
    let _ = child.wait();
    booted
}

/// Whether a VM of `role` boots systemd as PID 1 (an OpenShift node, a
/// cloud image) rather than lab-init's own start-up.
pub(crate) fn systemd_is_init(role: &str) -> bool {
    role == "rhcos" || role == "cloud"
}

/// Memory a VM of `role` gets, in MiB.
pub fn memory_mib(role: &str) -> u64 {
    if systemd_is_init(role) {
        1024
    } else {
        512
    }
}

/// How the serial console is served.
pub(crate) enum Console<'a> {
    /// qemu waits for the harness to connect before it starts the guest.
    Harness,
    /// qemu starts at once, in the background, with this accelerator; the
    /// console is also written to this file.
    Detached(&'a Path, &'a str),
}

impl Vm {
    pub fn launch(img: &Image, spec: &VmSpec, dir: &Path) -> Result<Vm, LabError> {
        let (mut cmd, serial, monitor) = qemu(img, spec, dir, Console::Harness)?;
        let child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(io("qemu-system-x86_64"))?;
        let stream = connect(&serial, Instant::now() + Duration::from_secs(20))?;
        Ok(Vm {
            name: spec.name.clone(),
            child: Some(child),
            serial: BufReader::new(stream),
            monitor,
            seq: 0,
            console: String::new(),
        })
    }

    /// Starts the VM in the background (qemu `-daemonize`): it runs on
    /// after this process ends. Its console goes to `<name>-console.log`
    /// in `dir` too (kept in memory, [`crate::console_log`]). The qemu
    /// process id.
    pub fn start_detached(
        img: &Image,
        spec: &VmSpec,
        dir: &Path,
        accel: &str,
    ) -> Result<u32, LabError> {
        let log = crate::console_log::prepare(dir, &spec.name);
        let (mut cmd, _, _) = qemu(img, spec, dir, Console::Detached(&log, accel))?;
        let pidfile = dir.join(format!("{}.pid", spec.name));
        cmd.arg("-daemonize").arg("-pidfile").arg(&pidfile);
        let out = cmd
            .stdin(Stdio::null())
            .output()
            .map_err(io("qemu-system-x86_64"))?;
        if !out.status.success() {
            return Err(LabError::Tool(
                format!("qemu-system-x86_64 ({})", spec.name),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            ));
        }
        let pid = std::fs::read_to_string(&pidfile).map_err(io(pidfile.display().to_string()))?;
        pid.trim()
            .parse()
            .map_err(|_| LabError::Tool("qemu pidfile".into(), pid.clone()))
    }

    /// The shell of a VM started with [`Vm::start_detached`] in `dir`.
    pub fn attach(name: &str, dir: &Path) -> Result<Vm, LabError> {
        let serial = dir.join(format!("{name}-serial.sock"));
        let stream = connect(&serial, Instant::now() + Duration::from_secs(5))?;
        let mut vm = Vm {
            name: name.to_string(),
            child: None,
            serial: BufReader::new(stream),
            monitor: dir.join(format!("{name}-mon.sock")),
            seq: 0,
            console: String::new(),
        };
        // The shell may be mid-line or echoing (a console session before):
        // a fresh line, then no echo and no prompt.
        vm.serial.get_mut().write_all(b"\n").map_err(io("serial"))?;
        vm.run("stty -echo; PS1=''; PS2=''", Duration::from_secs(30))?;
        Ok(vm)
    }
}

impl Drop for Vm {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
