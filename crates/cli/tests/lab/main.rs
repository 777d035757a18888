//! The lab suite (`cargo test --release -p nodenet --test lab`): qemu TCG
//! VMs with Debian's kernel and a real NetworkManager, cabled NIC-to-NIC
//! over UDP on 127.0.0.1 to a "switch" VM running a kernel 802.3ad bond.
//! One binary, a module per subject; the VMs of one test fill the two
//! cores, so tests that boot VMs take [`one_lab`] first.
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
use std::sync::{Mutex, MutexGuard};

/// One VM-booting test at a time: two VMs already fill the two cores.
static ONE_LAB: Mutex<()> = Mutex::new(());

/// Held for the whole of a test that boots VMs (a failed test's poison is
/// not the next one's failure).
pub fn one_lab() -> MutexGuard<'static, ()> {
    ONE_LAB.lock().unwrap_or_else(|e| e.into_inner())
}

/// Where lab images are built once and kept between runs
/// (`NODENET_LAB_CACHE`, default `target/lab-cache`).
pub fn cache() -> PathBuf {
    std::env::var_os("NODENET_LAB_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| common::repo().join("target/lab-cache"))
}
