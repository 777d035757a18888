//! Redfish resources as a BMC may send them: deserialised or refused,
//! never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use nodenet_bmc::redfish::{Collection, Manager, System, VirtualMedia};

fuzz_target!(|data: &[u8]| {
    let _ = serde_json::from_slice::<System>(data);
    let _ = serde_json::from_slice::<Manager>(data);
    let _ = serde_json::from_slice::<VirtualMedia>(data);
    let _ = serde_json::from_slice::<Collection>(data);
});
