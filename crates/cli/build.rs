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
    catalogue();
}

/// `nodenet explain CODE` shows an input that has the code: the shortest
/// file of tests/bad whose first `# expect:` line names it.
fn catalogue() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/bad");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.sort();
    let mut best: std::collections::BTreeMap<String, (String, String)> = Default::default();
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        let Some(code) = text
            .lines()
            .find_map(|l| l.strip_prefix("# expect:"))
            .and_then(|rest| rest.split_whitespace().next())
        else {
            continue;
        };
        let name = format!("tests/bad/{}", f.file_name().unwrap().to_string_lossy());
        match best.get(code) {
            Some((_, t)) if t.len() <= text.len() => {}
            _ => {
                best.insert(code.to_string(), (name, text));
            }
        }
    }
    let mut out = String::from("pub const EXAMPLES: &[(&str, &str, &str)] = &[\n");
    for (code, (name, text)) in best {
        out += &format!("    ({code:?}, {name:?}, {text:?}),\n");
    }
    out += "];\n";
    let dest = std::path::Path::new(&std::env::var("OUT_DIR").unwrap()).join("catalogue.rs");
    std::fs::write(dest, out).unwrap();
}
