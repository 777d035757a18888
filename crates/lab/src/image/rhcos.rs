//! The lab image as an OpenShift node boots it: systemd, NetworkManager
//! with its OVS plugin, Open vSwitch and nmstatectl over the base image.

use super::*;

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
    let _building = cache_lock(cache)?;
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
