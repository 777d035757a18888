//! The lab suite (`cargo test --release -p nodenet --test lab`): qemu TCG
//! VMs with Debian's kernel and a real NetworkManager, cabled NIC-to-NIC
//! over UDP on 127.0.0.1 to a "switch" VM running a kernel 802.3ad bond.
//! One binary, a module per subject; tests that boot VMs take a
//! [`lab_slot`] first.
//!
//! - `node`: day-1 keyfiles, LACP link failure, day-2 apply and rollback on one node; a config drive through cloud-init.
//! - `up`: `nodenet lab up`/`verify`/`down`, provisioning through Redfish, rehearsed rollouts.
//! - `openshift`: RHCOS's own network scripts making br-ex from what `render` writes.
//! - `wires`: LLDP and probe frames against the switch and the cables.

#[path = "../common/mod.rs"]
mod common;
mod node;
mod openshift;
mod up;
mod wires;

use std::path::PathBuf;
use std::sync::{Condvar, Mutex};

/// How many VM-booting tests run at once (`NODENET_LAB_SLOTS`, default
/// 1). A lab's VMs keep both cores busy only in bursts and wait on timers,
/// DHCP and LACP between them, so two labs side by side fit on two cores
/// most of the time: the suite took 903 s instead of 1,249 s, every test
/// passing. But not always: in the next run two failed (a ping lost in a
/// rehearsal that counts them, and a power cycle the lab's BMC poller
/// missed, since followed by the emulator's own reports: `bmc::notify`),
/// so one lab at a time stays the default. Images are built under a lock
/// (`nodenet_lab::image`) either way.
fn slots() -> usize {
    std::env::var("NODENET_LAB_SLOTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(1)
}

static BUSY: Mutex<usize> = Mutex::new(0);
static FREED: Condvar = Condvar::new();

/// One of the [`slots`], held for the whole of a test that boots VMs,
/// from when it was taken.
pub struct LabSlot(std::time::Instant);

/// Where each test's time in its slot is added (`name seconds
/// ended-at`, the last in seconds since the epoch; a line each): the
/// suite prints it after the lab, the figures to cut CI's time by, with
/// what the machine gave each test meanwhile. The harness captures a
/// passing test's own output.
const SLOT_TIMES: &str = "target/lab-slot-times.log";

impl Drop for LabSlot {
    fn drop(&mut self) {
        *BUSY.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
        FREED.notify_one();
        let test = std::thread::current().name().unwrap_or("?").to_string();
        let ended = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let line = format!("{test} {:.0} {ended}\n", self.0.elapsed().as_secs_f64());
        let _ = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(common::repo().join(SLOT_TIMES))
            .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
    }
}

/// Waits for a free slot (a failed test's poison is not the next one's
/// failure).
pub fn lab_slot() -> LabSlot {
    let mut busy = BUSY.lock().unwrap_or_else(|e| e.into_inner());
    while *busy >= slots() {
        busy = FREED.wait(busy).unwrap_or_else(|e| e.into_inner());
    }
    *busy += 1;
    LabSlot(std::time::Instant::now())
}

/// Where lab images are built once and kept between runs
/// (`NODENET_LAB_CACHE`, default `target/lab-cache`).
pub fn cache() -> PathBuf {
    std::env::var_os("NODENET_LAB_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| common::repo().join("target/lab-cache"))
}
