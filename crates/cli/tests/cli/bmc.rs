//! Redfish provisioning against sushy-tools 2.2.0 (fake driver, basic
//! auth, fresh state) on 127.0.0.1; end states are read back from the
//! emulator over Redfish, not from our output.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::sushy::*;
use crate::common::*;

/// An inventory whose hosts point at the emulator's systems.
fn inventory(dir: &Path, emu: &Emulator, hosts: &[(&str, usize, &str)]) -> PathBuf {
    let mut text = String::from(
        "nodenet: v1\ncluster:\n  name: lab\n  provisioning: {network: Disabled}\ncredentials:\n  good: {username: admin, passwordEnv: NODENET_TEST_BMC_PW}\n  bad: {username: admin, passwordEnv: NODENET_TEST_BMC_BAD}\nhosts:\n",
    );
    for (name, sys, cred) in hosts {
        let addr = if *sys == usize::MAX {
            format!(
                "redfish-virtualmedia+http://127.0.0.1:{}/redfish/v1/Systems/no-such-system",
                emu.port
            )
        } else {
            emu.system_url(*sys)
        };
        text += &format!("- name: {name}\n  bmc: {{address: \"{addr}\", credentials: {cred}}}\n");
    }
    let p = dir.join("cluster.yaml");
    fs::write(&p, text).unwrap();
    p
}

fn provision(inv: &Path, base: &str, extra: &[&str]) -> std::process::Output {
    run(nodenet()
        .arg("provision")
        .arg(inv)
        .args(["--all", "--image-url-base", base, "--timeout", "60"])
        .args(extra)
        .env("NODENET_TEST_BMC_PW", PASSWORD)
        .env("NODENET_TEST_BMC_BAD", "not-the-password")
        .env("NODENET_LOG", "debug"))
}

fn images(dir: &Path, names: &[&str]) -> PathBuf {
    let d = dir.join("images");
    fs::create_dir_all(&d).unwrap();
    for n in names {
        fs::write(d.join(format!("{n}.iso")), format!("ISO of {n}")).unwrap();
    }
    d
}

fn assert_provisioned(emu: &Emulator, sys: usize, url: &str) {
    let s = emu.get(&format!("/redfish/v1/Systems/{}", uuid(sys)));
    assert_eq!(s["PowerState"], "On", "{s}");
    assert_eq!(s["Boot"]["BootSourceOverrideTarget"], "Cd", "{s}");
    let cd = emu.get(&format!(
        "/redfish/v1/Systems/{}/VirtualMedia/Cd",
        uuid(sys)
    ));
    assert_eq!(cd["Image"], url, "{cd}");
    assert_eq!(cd["Inserted"], true, "{cd}");
}

#[test]
fn provision_three_hosts_in_parallel() {
    if skip_without(&["sushy-emulator"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let emu = Emulator::start(tmp.path(), 3);
    let srv = ImageServer::start(&images(tmp.path(), &["master-0", "master-1", "master-2"]));
    let inv = inventory(
        tmp.path(),
        &emu,
        &[
            ("master-0", 0, "good"),
            ("master-1", 1, "good"),
            ("master-2", 2, "good"),
        ],
    );
    let o = provision(&inv, &srv.base(), &["--parallel", "3"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success(),
        "{}{err}",
        String::from_utf8_lossy(&o.stdout)
    );
    for i in 0..3 {
        assert_provisioned(&emu, i, &format!("{}/master-{i}.iso", srv.base()));
    }
    // The password is in no output, even with every Redfish request logged
    // at debug level (the log is on: the insert is in it), and neither is
    // the Authorization header's value.
    assert!(
        err.contains("redfish request") && err.contains("VirtualMedia.InsertMedia"),
        "{err}"
    );
    let out = String::from_utf8_lossy(&o.stdout);
    let auth = base64(&format!("admin:{PASSWORD}"));
    for secret in [PASSWORD, auth.as_str()] {
        assert!(
            !err.contains(secret) && !out.contains(secret),
            "{secret} leaked"
        );
    }
    // `bmc status` reports what the emulator holds.
    let o = run(nodenet()
        .args(["bmc", "status", "--format", "json"])
        .arg(&inv)
        .env("NODENET_TEST_BMC_PW", PASSWORD));
    assert!(o.status.success());
    let v = json(&o);
    assert_eq!(
        v["hosts"][1]["status"]["media_image"],
        format!("{}/master-1.iso", srv.base())
    );
    assert_eq!(v["hosts"][1]["status"]["power"], "On");
}

#[test]
fn one_host_failing_never_stops_the_others() {
    if skip_without(&["sushy-emulator"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let emu = Emulator::start(tmp.path(), 3);
    // worker-1 has the wrong password, worker-2's ISO does not exist (the
    // emulator answers 400 to the insert), ghost names no system.
    let srv = ImageServer::start(&images(tmp.path(), &["worker-0", "worker-1"]));
    let inv = inventory(
        tmp.path(),
        &emu,
        &[
            ("worker-0", 0, "good"),
            ("worker-1", 1, "bad"),
            ("worker-2", 2, "good"),
            ("ghost", usize::MAX, "good"),
        ],
    );
    let o = provision(&inv, &srv.base(), &["--parallel", "4"]);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    let line = |h: &str| {
        out.lines()
            .find(|l| l.starts_with(h))
            .unwrap_or_else(|| panic!("{h}: {out}"))
            .to_string()
    };
    assert!(
        line("worker-1").contains("401") && line("worker-1").contains("wrong username or password"),
        "{out}"
    );
    assert!(
        line("worker-2").contains("inserting media") && line("worker-2").contains("400"),
        "{out}"
    );
    assert!(
        line("ghost").contains("404") && line("ghost").contains("reading the system"),
        "{out}"
    );
    assert_provisioned(&emu, 0, &format!("{}/worker-0.iso", srv.base()));
    assert!(
        !out.contains("not-the-password")
            && !String::from_utf8_lossy(&o.stderr).contains("not-the-password")
    );
}

#[test]
fn emulator_stopped_mid_run_gives_a_clear_error_in_time() {
    if skip_without(&["sushy-emulator"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut emu = Emulator::start(tmp.path(), 1);
    let srv = ImageServer::start(&images(tmp.path(), &["node-0"]));
    let inv = inventory(tmp.path(), &emu, &[("node-0", 0, "good")]);
    let start = Instant::now();
    let child = nodenet()
        .arg("provision")
        .arg(&inv)
        .args(["--all", "--image-url-base", &srv.base(), "--timeout", "20"])
        .env("NODENET_TEST_BMC_PW", PASSWORD)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Stop the BMC once the host is past the first steps: its CD is in.
    // What is left (boot override, power on, then at least a second
    // until the emulator applies it) then meets a BMC that is gone. (A
    // fixed sleep here raced the whole run once requests got fast.)
    let cd = format!("/redfish/v1/Systems/{}/VirtualMedia/Cd", uuid(0));
    let deadline = Instant::now() + Duration::from_secs(30);
    while emu.get(&cd)["Inserted"] != true {
        assert!(Instant::now() < deadline, "the CD was never inserted");
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = emu.child.kill();
    let _ = emu.child.wait();
    let o = child.wait_with_output().unwrap();
    let elapsed = start.elapsed();
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("node-0")
            && (out.contains("cannot reach the BMC") || out.contains("no answer")),
        "{out}"
    );
    assert!(
        elapsed < Duration::from_secs(35),
        "took {elapsed:?}, past the 20 s timeout"
    );
}

#[test]
fn certificate_verification_off_only_where_the_inventory_says_so_with_a_warning() {
    if skip_without(&["sushy-emulator"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let emu = Emulator::start(tmp.path(), 2);
    let inv = tmp.path().join("cluster.yaml");
    fs::write(
        &inv,
        format!(
            "nodenet: v1\ncluster:\n  name: lab\n  provisioning: {{network: Disabled}}\ncredentials:\n  good: {{username: admin, passwordEnv: NODENET_TEST_BMC_PW}}\nhosts:\n- name: trusting\n  bmc: {{address: \"{}\", credentials: good, disableCertificateVerification: true}}\n- name: strict\n  bmc: {{address: \"{}\", credentials: good}}\n",
            emu.system_url(0),
            emu.system_url(1)
        ),
    )
    .unwrap();
    let o = run(nodenet()
        .args(["bmc", "status"])
        .arg(&inv)
        .env("NODENET_TEST_BMC_PW", PASSWORD));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success(),
        "{}{err}",
        String::from_utf8_lossy(&o.stdout)
    );
    let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].contains("trusting") && warnings[0].contains("certificate verification"),
        "{err}"
    );
}

fn power_state(emu: &Emulator, sys: usize) -> String {
    emu.get(&format!("/redfish/v1/Systems/{}", uuid(sys)))["PowerState"]
        .as_str()
        .unwrap()
        .to_string()
}

fn bmc(inv: &Path, args: &[&str]) -> std::process::Output {
    run(nodenet()
        .arg("bmc")
        .args(args)
        .arg(inv)
        .env("NODENET_TEST_BMC_PW", PASSWORD))
}

#[test]
fn power_media_and_provision_act_only_on_named_hosts_or_all() {
    if skip_without(&["sushy-emulator"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let emu = Emulator::start(tmp.path(), 2);
    let inv = inventory(tmp.path(), &emu, &[("m0", 0, "good"), ("m1", 1, "good")]);
    // No --host, no --all: refused before anything is sent.
    for args in [
        &["power", "on"][..],
        &["power", "off"],
        &["power", "restart"],
        &["media", "eject"],
    ] {
        let o = bmc(&inv, args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("--host") && err.contains("--all"), "{err}");
    }
    let o = run(nodenet()
        .arg("provision")
        .arg(&inv)
        .args(["--image-url-base", "http://127.0.0.1:9/"])
        .env("NODENET_TEST_BMC_PW", PASSWORD));
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        (power_state(&emu, 0), power_state(&emu, 1)),
        ("Off".into(), "Off".into())
    );

    // --dry-run says what would be done to which host and BMC, and does not.
    let o = bmc(&inv, &["power", "on", "--all", "--dry-run"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}");
    for (h, sys) in [("m0", 0), ("m1", 1)] {
        let line = out
            .lines()
            .position(|l| l.starts_with(&format!("{h}: power on")))
            .unwrap_or_else(|| panic!("{h}: {out}"));
        assert!(
            out.lines().nth(line + 1).unwrap().contains(&uuid(sys)),
            "{out}"
        );
    }
    assert!(!out.contains(PASSWORD));
    let o = run(nodenet()
        .arg("provision")
        .arg(&inv)
        .args([
            "--all",
            "--dry-run",
            "--format",
            "json",
            "--image-url-base",
            "http://10.0.0.9/img",
        ])
        .env("NODENET_TEST_BMC_PW", PASSWORD));
    assert!(o.status.success());
    let v = json(&o);
    assert_eq!(v["dry_run"], true);
    assert!(v["hosts"][1]["plan"]
        .as_str()
        .unwrap()
        .contains("insert http://10.0.0.9/img/m1.iso"));
    assert_eq!(
        (power_state(&emu, 0), power_state(&emu, 1)),
        ("Off".into(), "Off".into())
    );

    // --host: that host only.
    let o = bmc(&inv, &["power", "on", "--host", "m1"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        (power_state(&emu, 0), power_state(&emu, 1)),
        ("Off".into(), "On".into())
    );

    // On a terminal, several hosts: asked first; "n" sends nothing.
    let (status, screen) = run_in_pty(
        nodenet()
            .args(["bmc", "power", "off", "--all"])
            .arg(&inv)
            .env("NODENET_TEST_BMC_PW", PASSWORD),
        "n\n",
    );
    assert_eq!(status.code(), Some(2), "{screen}");
    assert!(
        screen.contains("power off 2 hosts: m0, m1? [y/N]"),
        "{screen}"
    );
    assert!(screen.contains("aborted"), "{screen}");
    assert_eq!(power_state(&emu, 1), "On");
    // "y" acts, with a live line per host while it waits.
    let (status, screen) = run_in_pty(
        nodenet()
            .args(["bmc", "power", "on", "--all"])
            .arg(&inv)
            .env("NODENET_TEST_BMC_PW", PASSWORD),
        "y\n",
    );
    assert!(status.success(), "{screen}");
    assert!(
        screen.contains("m0") && screen.contains("powering on"),
        "{screen}"
    );
    assert_eq!(
        (power_state(&emu, 0), power_state(&emu, 1)),
        ("On".into(), "On".into())
    );
    // --yes: no question.
    let (status, screen) = run_in_pty(
        nodenet()
            .args(["bmc", "power", "off", "--all", "--yes"])
            .arg(&inv)
            .env("NODENET_TEST_BMC_PW", PASSWORD),
        "",
    );
    assert!(status.success(), "{screen}");
    assert!(!screen.contains("[y/N]"), "{screen}");
    assert_eq!(
        (power_state(&emu, 0), power_state(&emu, 1)),
        ("Off".into(), "Off".into())
    );
    // Not a terminal: no progress lines, unless --verbose.
    let o = bmc(&inv, &["power", "on", "--host", "m0"]);
    assert!(!String::from_utf8_lossy(&o.stderr).contains("powering on"));
    let o = bmc(&inv, &["power", "off", "--host", "m0", "--verbose"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("m0: powering off"), "{err}");
}

#[test]
fn provision_names_a_missing_live_iso_before_touching_any_bmc() {
    if skip_without(&["sushy-emulator"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let emu = Emulator::start(tmp.path(), 1);
    let inv = inventory(tmp.path(), &emu, &[("m0", 0, "good")]);
    let o = run(nodenet()
        .arg("provision")
        .arg(&inv)
        .args(["--host", "m0", "--image-url-base", "http://127.0.0.1:9/"])
        .args(["--build-from", "nope.iso", "--image-dir"])
        .arg(tmp.path().join("images"))
        .env("NODENET_TEST_BMC_PW", PASSWORD));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("nope.iso") && err.contains("No such file"),
        "{err}"
    );
    assert_eq!(power_state(&emu, 0), "Off");
}
