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
    /// What the inventory or the command line asks cannot be built.
    #[error("{0}")]
    Input(String),
    /// No lab in the directory given (a usage error, not the input's).
    #[error("no lab in {0} (start one with `nodenet lab up INVENTORY`)")]
    NoLab(String),
}

pub mod bmc;
pub mod rehearse;
pub mod report;
pub mod state;
pub mod switch;
pub mod topology;
pub mod verify;

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
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Image {
    pub kernel: PathBuf,
    pub initrd: PathBuf,
    pub rootfs: PathBuf,
}

/// cloud-init and netplan.io: the cloud image's first boot (`lab.role=cloud`);
/// python3-cffi-backend: what python3-cryptography (for cloud-init) needs
/// through a virtual package, which debootstrap does not resolve.
const PACKAGES: &str =
    "network-manager,libpam-systemd,iproute2,dbus,udev,kmod,procps,iputils-ping,busybox,ethtool,lldpd,tcpdump,openvswitch-switch,jq,gawk,dnsmasq-base,cloud-init,netplan.io,python3-cffi-backend";
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

/// Bumped whenever the files under `files/` or the build steps change, so
/// cached images are rebuilt (from the cached debootstrap root).
const RECIPE: u32 = 12;

/// Builds (or reuses) the lab image under `cache`.
pub fn image(cache: &Path) -> Result<Image, LabError> {
    let kver = sh("ls /lib/modules | sort | tail -1")?;
    let nm = sh("apt-cache policy network-manager | sed -n 's/ *Candidate: //p'")?;
    let dir = cache.join(format!("{kver}-nm{nm}"));
    let img = Image {
        kernel: PathBuf::from(format!("/boot/vmlinuz-{kver}")),
        initrd: dir.join(format!("stage1-r{RECIPE}.cpio")),
        rootfs: dir.join(format!("rootfs-r{RECIPE}.ext4")),
    };
    if img.rootfs.is_file() && img.initrd.is_file() {
        return Ok(img);
    }
    std::fs::create_dir_all(&dir).map_err(io("cache dir"))?;
    let root = dir.join("root");
    let d = dir.display();
    // A root bootstrapped with other packages (an older recipe), or not to
    // the end: bootstrap again.
    let stamp = root.join("etc/nodenet-lab-packages");
    if std::fs::read_to_string(&stamp).ok().as_deref() != Some(PACKAGES) {
        let _ = std::fs::remove_dir_all(&root);
        sh(&format!("debootstrap --variant=minbase --include={PACKAGES} bookworm '{}' http://deb.debian.org/debian >'{d}/debootstrap.log' 2>&1", root.display()))?;
        std::fs::write(&stamp, PACKAGES).map_err(io("package stamp"))?;
    }
    sh(&format!("mkdir -p '{r}/lib/modules' && cp -a /lib/modules/{kver} '{r}/lib/modules/' && rm -rf '{r}'/var/cache/apt/archives/*.deb", r = root.display()))?;
    std::fs::write(
        root.join("sbin/lab-init"),
        include_str!("../files/lab-init"),
    )
    .map_err(io("lab-init"))?;
    sh(&format!("chmod 0755 '{}/sbin/lab-init'", root.display()))?;
    for (path, mode, text) in BASE_FILES {
        write_file(&root, path, *mode, text)?;
    }
    // When systemd is PID 1 (`rhcos`, `cloud`): the harness's shell on
    // ttyS0, and no getty or periodic maintenance taking the two cores.
    sh(&format!(
        "cd '{}/etc/systemd/system' && mkdir -p sysinit.target.wants && ln -sf /etc/systemd/system/lab-shell.service sysinit.target.wants/ && for u in serial-getty@ttyS0.service getty@tty1.service apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer; do ln -sf /dev/null \"$u\"; done",
        root.display()
    ))?;
    // Debian's ifupdown hook fails on every event (no ifupdown here) and
    // costs a fork per event; CoreOS has no such hook either.
    let _ = std::fs::remove_file(root.join("etc/NetworkManager/dispatcher.d/01-ifupdown"));
    // cloud-init's (Azure only) hook, the same fork per event; the cloud
    // role runs no NetworkManager.
    let _ = std::fs::remove_file(
        root.join("etc/NetworkManager/dispatcher.d/cloud-init-hook-network-manager"),
    );
    // Sparse: room for the ~180 MB binary lab-init installs next to the
    // ~850 MB root (a full disk leaves it half-written, not executable).
    let tmp_rootfs = dir.join("rootfs.tmp");
    sh(&format!(
        "rm -f '{t}' && mkfs.ext4 -q -F -L labroot -d '{}' '{t}' 2G",
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

/// NetworkManager built with its OVS device plugin from Debian's own
/// source (`.ci/install-lab.sh`): `sbin/NetworkManager` and
/// `lib/NetworkManager/<version>/libnm-device-plugin-ovs.so` under it.
pub fn nm_ovs_prefix() -> PathBuf {
    std::env::var_os("NODENET_NM_OVS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/nodenet-ci/nm-ovs"))
}

/// The lab image as an OpenShift node boots (`lab.role=rhcos`): systemd as
/// init, NetworkManager with its OVS device plugin (rebuilt, see
/// [`nm_ovs_prefix`]; Debian builds it without), Open vSwitch, and
/// `nmstatectl` with its `service` (`nmstatectl`, the full build: the
/// machine's, or `$NODENET_NMSTATECTL`), what RHCOS's network scripts
/// need around them (`rpm -qa` naming openvswitch, the unit names
/// `openvswitch.service` and `kubelet-dependencies.target`), and the
/// harness's shell on ttyS0 as a unit. RHCOS's own scripts and units and
/// the rendered MachineConfigs' files come with each test's config disk.
pub fn rhcos_image(cache: &Path) -> Result<Image, LabError> {
    let base = image(cache)?;
    let dir = base.rootfs.parent().expect("in the cache").to_path_buf();
    let nm = nm_ovs_prefix();
    let nm_version = std::fs::read_to_string(nm.join("VERSION")).map_err(io(format!(
        "{}/VERSION (NetworkManager with OVS: run .ci/install-lab.sh)",
        nm.display()
    )))?;
    let nmstatectl = std::env::var_os("NODENET_NMSTATECTL")
        .map(PathBuf::from)
        .or_else(|| {
            let home = std::env::var_os("HOME")?;
            Some(Path::new(&home).join(".cargo/bin/nmstatectl"))
        })
        .filter(|p| p.is_file())
        .ok_or_else(|| {
            LabError::Tool(
                "nmstatectl".into(),
                "not found (.ci/run installs it)".into(),
            )
        })?;
    let img = Image {
        rootfs: dir.join(format!(
            "rootfs-rhcos-r{RECIPE}-nm{}.ext4",
            nm_version.trim().replace(['/', ' '], "_")
        )),
        ..base
    };
    if img.rootfs.is_file() {
        return Ok(img);
    }
    let root = dir.join("root-rhcos");
    let r = root.display();
    sh(&format!(
        "rm -rf '{r}' && cp -a '{}' '{r}'",
        dir.join("root").display()
    ))?;
    // NetworkManager with OVS: the daemon and only its own plugins (the
    // distribution's were built against another daemon's exports).
    let plugins = sh(&format!(
        "ls -d '{r}'/usr/lib/x86_64-linux-gnu/NetworkManager/*/ | head -1"
    ))?;
    sh(&format!(
        "install -m 0755 '{n}/sbin/NetworkManager' '{r}/usr/sbin/NetworkManager' && rm -f '{plugins}'*.so && cp '{n}'/lib/NetworkManager/*/*.so '{plugins}'",
        n = nm.display()
    ))?;
    sh(&format!(
        "install -m 0755 '{}' '{r}/usr/bin/nmstatectl'",
        nmstatectl.display()
    ))?;
    for (path, mode, text) in RHCOS_SHIMS {
        write_file(&root, path, *mode, text)?;
    }
    // Ignition configures an OpenShift node, not cloud-init or netplan.
    sh(&format!(
        "touch '{r}/etc/cloud/cloud-init.disabled' && rm -f '{r}/lib/systemd/system-generators/netplan'"
    ))?;
    sh(&format!(
        "cd '{r}/etc/systemd/system' && ln -sf /lib/systemd/system/openvswitch-switch.service openvswitch.service && mkdir -p multi-user.target.wants && ln -sf /etc/systemd/system/kubelet-dependencies.target multi-user.target.wants/"
    ))?;
    let tmp = dir.join("rootfs-rhcos.tmp");
    sh(&format!(
        "rm -f '{t}' && mkfs.ext4 -q -F -L labroot -d '{r}' '{t}' 2G && mv '{t}' '{}'",
        img.rootfs.display(),
        t = tmp.display()
    ))?;
    let _ = std::fs::remove_dir_all(&root);
    Ok(img)
}

/// Writes `text` at `path` under `root` with `mode`.
fn write_file(root: &Path, path: &str, mode: u32, text: &str) -> Result<(), LabError> {
    let p = root.join(path);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).map_err(io(path.to_string()))?;
    }
    std::fs::write(&p, text).map_err(io(path.to_string()))?;
    std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(mode))
        .map_err(io(path.to_string()))
}

/// Files of every lab root: (path, mode, content).
const BASE_FILES: &[(&str, u32, &str)] = &[
    (
        "etc/NetworkManager/conf.d/lab.conf",
        0o644,
        "[main]\nplugins=keyfile\n[logging]\nlevel=INFO\n",
    ),
    // The harness's shell when systemd is PID 1 (`rhcos` and `cloud`).
    (
        "etc/systemd/system/lab-shell.service",
        0o644,
        "[Unit]\nDescription=The lab harness's shell on ttyS0\nDefaultDependencies=no\n\n[Service]\nExecStart=/bin/sh -c \"echo 'lab: ready'; exec /bin/sh -i\"\nStandardInput=tty-force\nStandardOutput=tty\nStandardError=tty\nTTYPath=/dev/ttyS0\nTTYVHangup=no\nRestart=always\n",
    ),
    // A bare-metal cloud image's cloud-init: it looks for the config
    // drive Ironic (and Nova) attach, as diskimage-builder's
    // `cloud-init-datasources` element sets it for Ironic images, and
    // writes the network as netplan, as on Ubuntu.
    (
        "etc/cloud/cloud.cfg.d/90-lab.cfg",
        0o644,
        "datasource_list: [ConfigDrive]\nsystem_info:\n  network:\n    renderers: [netplan]\n",
    ),
];

/// What an OpenShift node has around its network scripts, for the lab's
/// Debian root: (path, mode, content).
const RHCOS_SHIMS: &[(&str, u32, &str)] = &[
    // configure-ovs.sh checks the package is installed with `rpm -qa`.
    (
        "usr/local/bin/rpm",
        0o755,
        "#!/bin/sh\n# The lab's stand-in: Open vSwitch is installed (Debian's openvswitch-switch).\n[ \"$1\" = -qa ] && echo openvswitch3.1-3.1.0-1.el9fdp.x86_64\n",
    ),
    // What pulls network-online.target and orders the network units
    // before the kubelet on a node; here only the target.
    (
        "etc/systemd/system/kubelet-dependencies.target",
        0o644,
        "[Unit]\nDescription=What the kubelet needs (lab: the network units order against it)\nWants=network-online.target\nAfter=network-online.target\n\n[Install]\nWantedBy=multi-user.target\n",
    ),
];

/// The lab kernel's command line (a serial console; eth* names; TCG's
/// TSC is one host clock for all vCPUs, so trust it rather than fall back
/// to the HPET, whose every read is an emulated MMIO access).
const KERNEL_ARGS: &str = "console=ttyS0 quiet loglevel=1 net.ifnames=0 panic=-1 tsc=reliable";

/// Size of the Ignition/network embed area, as in a CoreOS live ISO.
const EMBED_AREA: usize = 256 * 1024;

/// A bootable CoreOS-like live ISO of the lab image: ISOLINUX loads the
/// lab kernel with stage 1 and, as CoreOS's isolinux.cfg does, the embed
/// area `images/ignition.img` as a second initrd, so keyfiles that
/// `nodenet image iso` (or coreos-installer) writes there reach stage 1 as
/// /etc/coreos-firstboot-network. The layout (embed area, feature flag)
/// is what `nodenet image iso` recognises as a CoreOS live ISO.
pub fn live_iso(img: &Image, out: &Path) -> Result<(), LabError> {
    let tree = out.with_extension("tree");
    let _ = std::fs::remove_dir_all(&tree);
    for d in ["isolinux", "images/pxeboot", "coreos"] {
        std::fs::create_dir_all(tree.join(d)).map_err(io("ISO tree"))?;
    }
    let t = tree.display();
    sh(&format!(
        "cp /usr/lib/ISOLINUX/isolinux.bin /usr/lib/syslinux/modules/bios/ldlinux.c32 '{t}/isolinux/' && cp '{}' '{t}/images/pxeboot/vmlinuz' && cp '{}' '{t}/images/pxeboot/initrd.img'",
        img.kernel.display(),
        img.initrd.display()
    ))?;
    let files: [(&str, Vec<u8>); 3] = [
        (
            "isolinux/isolinux.cfg",
            format!(
                "serial 0 115200\ndefault live\nprompt 0\ntimeout 0\nlabel live\n  kernel /images/pxeboot/vmlinuz\n  append initrd=/images/pxeboot/initrd.img,/images/ignition.img {KERNEL_ARGS}\n"
            )
            .into_bytes(),
        ),
        ("images/ignition.img", vec![0u8; EMBED_AREA]),
        (
            "coreos/features.json",
            b"{\"live-initrd-network\": true}\n".to_vec(),
        ),
    ];
    for (name, data) in files {
        std::fs::write(tree.join(name), data).map_err(io(name))?;
    }
    sh(&format!(
        // genisoimage, as CoreOS's build used: xorriso's -boot-info-table
        // leaves lowercase ISO 9660 names, which coreos-installer rejects.
        "genisoimage -quiet -V COREOS -R -J -joliet-long -b isolinux/isolinux.bin -c isolinux/boot.cat -no-emul-boot -boot-load-size 4 -boot-info-table -o '{}' '{t}' 2>&1",
        out.display()
    ))?;
    let _ = std::fs::remove_dir_all(&tree);
    Ok(())
}

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
    child: Option<Child>,
    serial: BufReader<UnixStream>,
    monitor: PathBuf,
    seq: u32,
    pub console: String,
}

/// The qemu command line of a VM, with its serial and monitor sockets.
fn qemu(
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
fn kernel_boots_under_kvm(kernel: &Path) -> bool {
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
fn systemd_is_init(role: &str) -> bool {
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
enum Console<'a> {
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
    /// in `dir` too. The qemu process id.
    pub fn start_detached(
        img: &Image,
        spec: &VmSpec,
        dir: &Path,
        accel: &str,
    ) -> Result<u32, LabError> {
        let log = dir.join(format!("{}-console.log", spec.name));
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

    /// [`Vm::run`] for callers that report rather than stop: a shell that
    /// does not answer is status -1 with the why as its output.
    pub fn shell(&mut self, cmd: &str, timeout: Duration) -> (i32, String) {
        self.run(cmd, timeout)
            .unwrap_or_else(|e| (-1, format!("the shell did not answer: {e}")))
    }

    /// Hard reset (power cycle without ending qemu): the disks keep what
    /// the guest wrote (the snapshot overlay lives as long as qemu), /run
    /// is lost. Follow with `wait_ready`.
    pub fn reset(&self) -> Result<(), LabError> {
        self.monitor("system_reset").map(|_| ())
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

impl Vm {
    /// The number of `bond`'s ports, once every port (actor and partner)
    /// is collecting and distributing in the bond's active aggregator.
    pub fn bond_aggregated(&mut self, bond: &str) -> Option<usize> {
        let (_, out) = self
            .run(
                &format!("cat /proc/net/bonding/{bond}"),
                Duration::from_secs(30),
            )
            .ok()?;
        lacp_aggregated(&out).ok()
    }

    /// The kernel's boot id: unchanged means the guest did not reboot.
    pub fn boot_id(&mut self) -> Result<String, LabError> {
        let (_, out) = self.run(
            "cat /proc/sys/kernel/random/boot_id",
            Duration::from_secs(30),
        )?;
        Ok(out.trim().to_string())
    }
}

/// `/proc/net/bonding/<bond>` of an 802.3ad bond: every port collecting
/// and distributing in the bond's active aggregator (any number of ports).
pub fn lacp_aggregated(proc_bonding: &str) -> Result<usize, String> {
    let mut ids = proc_bonding
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("Aggregator ID:"))
        .map(str::trim);
    let Some(active) = ids.next() else {
        return Err("no active aggregator (no LACP partner)".into());
    };
    let ports: Vec<&str> = ids.collect();
    let states: Vec<u32> = proc_bonding
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("port state:"))
        .filter_map(|v| v.trim().parse().ok())
        .collect();
    if ports.is_empty() {
        return Err("no ports".into());
    }
    let apart = ports.iter().filter(|p| **p != active).count();
    let not_ready = states.iter().filter(|s| *s & 0x30 != 0x30).count();
    if apart > 0 || not_ready > 0 || states.len() != 2 * ports.len() {
        return Err(format!(
            "{apart} of {} port(s) outside the active aggregator, {not_ready} actor/partner state(s) not collecting+distributing",
            ports.len()
        ));
    }
    Ok(ports.len())
}

/// `f` on every VM at once, a thread each (the guests run in parallel; each
/// shell is driven by one thread): the results in the VMs' order.
pub fn on_each<T: Send>(vms: &mut [Vm], f: impl Fn(&mut Vm) -> T + Sync) -> Vec<T> {
    std::thread::scope(|s| {
        let f = &f;
        let handles: Vec<_> = vms.iter_mut().map(|vm| s.spawn(move || f(vm))).collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("VM thread"))
            .collect()
    })
}

/// Polls `f` every 2 s until it holds or `timeout` passes.
pub fn wait_for(
    what: &str,
    timeout: Duration,
    mut f: impl FnMut() -> bool,
) -> Result<(), LabError> {
    let deadline = Instant::now() + timeout;
    loop {
        if f() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(LabError::Timeout(format!(
                "{what}: not reached within {timeout:?}"
            )));
        }
        std::thread::sleep(Duration::from_secs(2));
    }
}

/// A free UDP port on 127.0.0.1 for one end of a link.
pub fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .map(|a| a.port())
        .unwrap_or(0)
}

/// `n` cables between two VMs: the NICs of side A (MACs `a_macs`) and of
/// side B, NIC i of A wired to NIC i of B.
pub fn cables(a_macs: &[&str], b_macs: &[&str]) -> (Vec<Nic>, Vec<Nic>) {
    let mut a = Vec::new();
    let mut b = Vec::new();
    for (ma, mb) in a_macs.iter().zip(b_macs) {
        let (pa, pb) = (free_udp_port(), free_udp_port());
        a.push(Nic {
            local: pa,
            remote: pb,
            mac: ma.to_string(),
        });
        b.push(Nic {
            local: pb,
            remote: pa,
            mac: mb.to_string(),
        });
    }
    (a, b)
}

/// The "switch" side of the lab's seed topology: a kernel 802.3ad bond of
/// eth0+eth1 (fast LACP) with VLANs 110, 120 and 130, holding
/// 192.168.<vlan>.1/24 on each, and lldpd announcing eth0 and eth1 every
/// 2 s, for `lab.role=switch` (the config disk's switch.sh).
pub const SWITCH_LACP_VLANS: &str =
    "ip link add bond0 type bond mode 802.3ad miimon 100 lacp_rate fast
for i in eth0 eth1; do ip link set $i down; ip link set $i master bond0; done
ip link set bond0 up
for v in 110 120 130; do
    ip link add link bond0 name bond0.$v type vlan id $v
    ip addr add 192.168.$v.1/24 dev bond0.$v
    ip link set bond0.$v up
done
mkdir -p /run/lldpd /etc/lldpd.d
printf 'configure system hostname switch\nconfigure lldp tx-interval 2\n' > /etc/lldpd.d/lab.conf
lldpd -I eth0,eth1
";

fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

impl Drop for Vm {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lacp_needs_every_port_in_the_active_aggregator() {
        let port = |agg: u32, partner: u32| {
            format!("Slave Interface: eno\nAggregator ID: {agg}\ndetails actor lacp pdu:\n    port state: 63\ndetails partner lacp pdu:\n    port state: {partner}\n")
        };
        let head = "Active Aggregator Info:\n\tAggregator ID: 1\n";
        assert_eq!(
            lacp_aggregated(&format!(
                "{head}{}{}{}",
                port(1, 63),
                port(1, 63),
                port(1, 61)
            )),
            Ok(3)
        );
        assert!(lacp_aggregated(&format!("{head}{}{}", port(1, 63), port(2, 63))).is_err());
        // Partner only defaulted (no LACPDU heard): not collecting.
        assert!(lacp_aggregated(&format!("{head}{}{}", port(1, 63), port(1, 1))).is_err());
        assert!(lacp_aggregated("Bonding Mode: 802.3ad\n").is_err());
    }
}
