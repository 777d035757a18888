//! The stage held against the real tools beside it: a patched disk image
//! against a rewritten one, qcow2 against qemu-img and qemu-io, and the
//! image server over raw TCP.

mod patch_vs_rewrite;
mod qcow2_vs_qemu;
mod serve;
