//! The lab's images: a root filesystem debootstrapped once from apt
//! packages and cached (keyed by the kernel and NetworkManager versions),
//! the RHCOS-like variant for the OpenShift node (`rhcos.rs`), and a
//! bootable live ISO.

use super::*;

mod rhcos;
pub use rhcos::{nm_ovs_prefix, rhcos_image};

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
pub(crate) const PACKAGES: &str =
    "network-manager,libpam-systemd,iproute2,dbus,udev,kmod,procps,iputils-ping,busybox,ethtool,lldpd,tcpdump,openvswitch-switch,jq,gawk,dnsmasq-base,cloud-init,netplan.io,python3-cffi-backend";
/// Modules stage 1 needs to read an ext4 virtio disk, in load order.
pub(crate) const STAGE1_MODULES: &[&str] = &[
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
pub(crate) const RECIPE: u32 = 13;

/// Held while an image in `cache` is looked for or built: two labs
/// started together (two `nodenet lab up`, the test suite's lab slots)
/// would otherwise both debootstrap into one folder, or one would boot an
/// image the other is still writing. Released when dropped.
pub(crate) fn cache_lock(cache: &Path) -> Result<std::fs::File, LabError> {
    std::fs::create_dir_all(cache).map_err(io(cache.display().to_string()))?;
    let path = cache.join(".lock");
    let lock = std::fs::File::create(&path).map_err(io(path.display().to_string()))?;
    lock.lock().map_err(io(path.display().to_string()))?;
    Ok(lock)
}

/// Builds (or reuses) the lab image under `cache`.
pub fn image(cache: &Path) -> Result<Image, LabError> {
    let _building = cache_lock(cache)?;
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

/// Writes `text` at `path` under `root` with `mode`.
pub(crate) fn write_file(root: &Path, path: &str, mode: u32, text: &str) -> Result<(), LabError> {
    let p = root.join(path);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).map_err(io(path.to_string()))?;
    }
    std::fs::write(&p, text).map_err(io(path.to_string()))?;
    std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(mode))
        .map_err(io(path.to_string()))
}

/// Files of every lab root: (path, mode, content).
pub(crate) const BASE_FILES: &[(&str, u32, &str)] = &[
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
pub(crate) const RHCOS_SHIMS: &[(&str, u32, &str)] = &[
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

/// Size of the Ignition/network embed area, as in a CoreOS live ISO.
pub(crate) const EMBED_AREA: usize = 256 * 1024;

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
