//! `nodenet --version` names the nmstate it embeds: the version Cargo.lock
//! resolved (the workspace pins it exactly).

fn main() {
    let lock = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    let text = std::fs::read_to_string(&lock).unwrap_or_default();
    let version = text
        .split("[[package]]")
        .filter(|p| p.lines().any(|l| l.trim() == "name = \"nmstate\""))
        .find_map(|p| {
            p.lines()
                .find_map(|l| l.trim().strip_prefix("version = \""))
                .map(|v| v.trim_end_matches('"').to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=NODENET_NMSTATE_VERSION={version}");
}
