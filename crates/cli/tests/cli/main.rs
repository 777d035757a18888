//! Integration tests of the `nodenet` binary with no VM (`cargo test
//! --release -p nodenet --test cli`): each module drives the real binary
//! and judges what it writes by the real consumer (nmstate, nmcli,
//! ignition-validate, coreos-installer, the upstream CRDs, cloud-init,
//! netplan, sushy-tools, lldpd). The lab's VM tests are the `lab` binary.

#[path = "../common/mod.rs"]
mod common;

mod bmc;
mod bmc_faults;
mod catalogue;
mod contract;
mod diagnostics;
mod discover;
mod docs;
mod examples;
mod faults;
mod gitops;
mod image;
mod import;
mod inputs;
mod metal3;
mod netbox;
mod netplan;
mod network_data;
mod openshift;
mod passthrough;
mod plan;
mod schemas;
mod views;
mod wires;
mod ztp;
