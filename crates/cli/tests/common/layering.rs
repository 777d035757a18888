//! RHCOS image layering as the tests do it: buildah (Debian's) with its
//! own storage, never the network, and the files of a pushed image.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{repo, run, tool};

/// buildah with its own storage under `dir` (vfs: no overlay mount
/// needed; chroot isolation: no container runtime), never the network.
pub fn buildah(dir: &Path) -> std::process::Command {
    let mut c = std::process::Command::new(tool("buildah"));
    c.arg("--root")
        .arg(dir.join("root"))
        .arg("--runroot")
        .arg(dir.join("runroot"))
        .args(["--storage-driver", "vfs"]);
    c
}

pub fn ok(o: std::process::Output, what: &str) -> std::process::Output {
    assert!(
        o.status.success(),
        "{what}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// The files of an image pushed to an OCI layout, its layers unpacked in
/// order into `into`.
pub fn unpack(layout: &Path, into: &Path) {
    let blob = |digest: &str| {
        layout
            .join("blobs/sha256")
            .join(digest.trim_start_matches("sha256:"))
    };
    let index: Value =
        serde_json::from_slice(&std::fs::read(layout.join("index.json")).unwrap()).unwrap();
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(blob(index["manifests"][0]["digest"].as_str().unwrap())).unwrap(),
    )
    .unwrap();
    std::fs::create_dir_all(into).unwrap();
    for layer in manifest["layers"].as_array().unwrap() {
        ok(
            run(std::process::Command::new("tar")
                .arg("-xzf")
                .arg(blob(layer["digest"].as_str().unwrap()))
                .arg("-C")
                .arg(into)),
            "unpacking a layer",
        );
    }
}

/// The agent image built from dist/Containerfile (the stripped binary in
/// `dir/ctx`), tagged `image`, unpacked into `dir/image`: that root, and
/// the stripped binary.
pub fn agent_image(dir: &Path, image: &str) -> (PathBuf, PathBuf) {
    let ctx = dir.join("ctx");
    std::fs::create_dir_all(&ctx).unwrap();
    let bin = ctx.join("nodenet");
    ok(
        run(std::process::Command::new(tool("strip"))
            .arg("-o")
            .arg(&bin)
            .arg(env!("CARGO_BIN_EXE_nodenet"))),
        "strip",
    );
    ok(
        run(buildah(dir)
            .args(["bud", "--isolation", "chroot", "--pull-never", "-f"])
            .arg(repo().join("dist/Containerfile"))
            .args(["-t", image])
            .arg(&ctx)),
        "buildah bud dist/Containerfile",
    );
    let layout = dir.join("layout");
    ok(
        run(buildah(dir)
            .arg("push")
            .arg(image)
            .arg(format!("oci:{}:agent", layout.display()))),
        "buildah push",
    );
    let root = dir.join("image");
    unpack(&layout, &root);
    (root, bin)
}
