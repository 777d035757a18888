//! The lab: qemu VMs (TCG; no KVM here) booting Debian's kernel and a
//! debootstrapped root with NetworkManager, linked NIC-to-NIC by qemu
//! `dgram` netdevs on 127.0.0.1, driven over a serial shell and the qemu
//! monitor. Images are built once from apt packages and cached, keyed by
//! the kernel and NetworkManager versions.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error("{0}: {1}")]
    Io(String, #[source] std::io::Error),
    #[error("{0} failed: {1}")]
    Tool(String, String),
    #[error("{0}")]
    Timeout(String),
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> LabError {
    let what = what.into();
    move |e| LabError::Io(what, e)
}

fn sh(cmd: &str) -> Result<String, LabError> {
    let out = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .output()
        .map_err(io(cmd.to_string()))?;
    if !out.status.success() {
        return Err(LabError::Tool(
            cmd.chars().take(120).collect(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Kernel, stage-1 initramfs and root filesystem image.
#[derive(Clone, Debug)]
pub struct Image {
    pub kernel: PathBuf,
    pub initrd: PathBuf,
    pub rootfs: PathBuf,
}

const PACKAGES: &str =
    "network-manager,libpam-systemd,iproute2,dbus,udev,kmod,procps,iputils-ping,busybox,ethtool";
/// Modules stage 1 needs to read an ext4 virtio disk, in load order.
const STAGE1_MODULES: &[&str] = &[
    "virtio_ring",
    "virtio",
    "virtio_pci_modern_dev",
    "virtio_pci_legacy_dev",
    "virtio_pci",
    "virtio_blk",
    "crc16",
    "crc32c_generic",
    "libcrc32c",
    "mbcache",
    "jbd2",
    "ext4",
];

/// Builds (or reuses) the lab image under `cache`.
pub fn image(cache: &Path) -> Result<Image, LabError> {
    let kver = sh("ls /lib/modules | sort | tail -1")?;
    let nm = sh("apt-cache policy network-manager | sed -n 's/ *Candidate: //p'")?;
    let dir = cache.join(format!("{kver}-nm{nm}"));
    let img = Image {
        kernel: PathBuf::from(format!("/boot/vmlinuz-{kver}")),
        initrd: dir.join("stage1.cpio"),
        rootfs: dir.join("rootfs.ext4"),
    };
    if img.rootfs.is_file() && img.initrd.is_file() {
        return Ok(img);
    }
    std::fs::create_dir_all(&dir).map_err(io("cache dir"))?;
    let root = dir.join("root");
    let d = dir.display();
    if !root.join("usr/sbin/NetworkManager").is_file() {
        let _ = std::fs::remove_dir_all(&root);
        sh(&format!("debootstrap --variant=minbase --include={PACKAGES} bookworm '{}' http://deb.debian.org/debian >'{d}/debootstrap.log' 2>&1", root.display()))?;
    }
    sh(&format!("mkdir -p '{r}/lib/modules' && cp -a /lib/modules/{kver} '{r}/lib/modules/' && rm -rf '{r}'/var/cache/apt/archives/*.deb", r = root.display()))?;
    std::fs::write(
        root.join("sbin/lab-init"),
        include_str!("../files/lab-init"),
    )
    .map_err(io("lab-init"))?;
    sh(&format!("chmod 0755 '{}/sbin/lab-init'", root.display()))?;
    std::fs::write(
        root.join("etc/NetworkManager/conf.d/lab.conf"),
        "[main]\nplugins=keyfile\n[logging]\nlevel=INFO\n",
    )
    .map_err(io("NM conf"))?;
    let tmp_rootfs = dir.join("rootfs.tmp");
    sh(&format!(
        "rm -f '{t}' && mkfs.ext4 -q -F -L labroot -d '{}' '{t}' 1G",
        root.display(),
        t = tmp_rootfs.display()
    ))?;
    // Stage 1: busybox + the modules to mount the root disk.
    let s1 = dir.join("stage1");
    sh(&format!("rm -rf '{s}' && mkdir -p '{s}/bin' '{s}/modules' && cp /bin/busybox '{s}/bin/busybox' && ln -s busybox '{s}/bin/sh'", s = s1.display()))?;
    std::fs::write(s1.join("init"), include_str!("../files/stage1-init"))
        .map_err(io("stage1 init"))?;
    let mut order = String::new();
    for m in STAGE1_MODULES {
        let found = sh(&format!(
            "find /lib/modules/{kver} -name '{m}.ko' | head -1"
        ))?;
        if !found.is_empty() {
            sh(&format!("cp '{found}' '{}/modules/'", s1.display()))?;
            order.push_str(&format!("{m}.ko\n"));
        }
    }
    std::fs::write(s1.join("modules.order"), order).map_err(io("modules.order"))?;
    sh(&format!("chmod 0755 '{s}/init' && cd '{s}' && find . | cpio -o -H newc --quiet > '{i}.tmp' && mv '{i}.tmp' '{i}'", s = s1.display(), i = img.initrd.display()))?;
    std::fs::rename(&tmp_rootfs, &img.rootfs).map_err(io("rootfs"))?;
    Ok(img)
}

/// One NIC: this VM's UDP port and its peer's.
#[derive(Clone, Debug)]
pub struct Nic {
    pub local: u16,
    pub remote: u16,
    pub mac: String,
}

pub struct VmSpec {
    pub name: String,
    /// `node` or `switch`.
    pub role: String,
    pub machine_id: String,
    pub nics: Vec<Nic>,
    /// Files for the config disk (/run/cfg in the guest).
    pub config: PathBuf,
}

pub struct Vm {
    pub name: String,
    child: Child,
    serial: BufReader<UnixStream>,
    monitor: PathBuf,
    seq: u32,
    pub console: String,
}

fn connect(path: &Path, deadline: Instant) -> Result<UnixStream, LabError> {
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

impl Vm {
    pub fn launch(img: &Image, spec: &VmSpec, dir: &Path) -> Result<Vm, LabError> {
        let cfg = dir.join(format!("{}-cfg.ext4", spec.name));
        sh(&format!(
            "mkfs.ext4 -q -F -d '{}' '{}' 512M",
            spec.config.display(),
            cfg.display()
        ))?;
        let serial = dir.join(format!("{}-serial.sock", spec.name));
        let monitor = dir.join(format!("{}-mon.sock", spec.name));
        let mut cmd = Command::new("qemu-system-x86_64");
        cmd.args(["-accel", "tcg", "-m", "512", "-smp", "1", "-display", "none", "-vga", "none", "-no-reboot"])
            .arg("-kernel")
            .arg(&img.kernel)
            .arg("-initrd")
            .arg(&img.initrd)
            .arg("-append")
            .arg(format!(
                "console=ttyS0 quiet loglevel=1 net.ifnames=0 panic=-1 lab.role={} lab.name={} lab.machineid={}",
                spec.role, spec.name, spec.machine_id
            ))
            .arg("-drive")
            .arg(format!("file={},if=virtio,format=raw,snapshot=on", img.rootfs.display()))
            .arg("-drive")
            .arg(format!("file={},if=virtio,format=raw,readonly=on", cfg.display()))
            .arg("-chardev")
            .arg(format!("socket,id=s0,path={},server=on,wait=on", serial.display()))
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
        let child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(io("qemu-system-x86_64"))?;
        let stream = connect(&serial, Instant::now() + Duration::from_secs(20))?;
        Ok(Vm {
            name: spec.name.clone(),
            child,
            serial: BufReader::new(stream),
            monitor,
            seq: 0,
            console: String::new(),
        })
    }

    fn read_until(
        &mut self,
        pred: &mut dyn FnMut(&str) -> bool,
        deadline: Instant,
    ) -> Result<(), LabError> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(LabError::Timeout(format!(
                    "{}: timed out; console so far:\n{}",
                    self.name,
                    tail(&self.console)
                )));
            }
            self.serial
                .get_ref()
                .set_read_timeout(Some(left))
                .map_err(io("serial"))?;
            let mut line = String::new();
            match self.serial.read_line(&mut line) {
                Ok(0) => {
                    return Err(LabError::Timeout(format!(
                        "{}: serial closed; console:\n{}",
                        self.name,
                        tail(&self.console)
                    )))
                }
                Ok(_) => {
                    let clean = line.replace('\r', "");
                    self.console.push_str(&clean);
                    if pred(clean.trim_end()) {
                        return Ok(());
                    }
                }
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut => {}
                Err(e) => return Err(LabError::Io("serial".into(), e)),
            }
        }
    }

    /// Waits for the guest's init to print "lab: ready", then sets the
    /// shell up for the harness (no echo, no prompt).
    pub fn wait_ready(&mut self, timeout: Duration) -> Result<(), LabError> {
        self.read_until(&mut |l| l.contains("lab: ready"), Instant::now() + timeout)?;
        std::thread::sleep(Duration::from_millis(500));
        self.run("stty -echo; PS1=''; PS2=''", Duration::from_secs(30))?;
        Ok(())
    }

    /// Runs a shell command in the guest: (exit status, output).
    pub fn run(&mut self, cmd: &str, timeout: Duration) -> Result<(i32, String), LabError> {
        self.seq += 1;
        let marker = format!("__lab_done_{}__", self.seq);
        let line = format!("{cmd}; echo \"{marker} $?\"\n");
        self.serial
            .get_mut()
            .write_all(line.as_bytes())
            .map_err(io("serial"))?;
        let start = self.console.len();
        let mut status = None;
        let m = marker.clone();
        self.read_until(
            &mut |l| {
                if let Some(rest) = l.split(&m).nth(1) {
                    if let Ok(s) = rest.trim().parse::<i32>() {
                        status = Some(s);
                        return true;
                    }
                }
                false
            },
            Instant::now() + timeout,
        )?;
        let out: Vec<&str> = self.console[start..]
            .lines()
            .filter(|l| !l.contains(&marker))
            .collect();
        Ok((status.unwrap_or(-1), out.join("\n")))
    }

    /// A qemu monitor command (e.g. `set_link n0 off`).
    pub fn monitor(&self, cmd: &str) -> Result<String, LabError> {
        let mut s = connect(&self.monitor, Instant::now() + Duration::from_secs(5))?;
        s.set_read_timeout(Some(Duration::from_millis(500)))
            .map_err(io("monitor"))?;
        s.write_all(format!("{cmd}\n").as_bytes())
            .map_err(io("monitor"))?;
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = s.read(&mut buf) {
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }
}

fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

impl Drop for Vm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
