use super::*;

fn prov(input: &str) -> Provenance {
    Provenance {
        inputs: vec![input.to_string()],
        files: vec![],
    }
}

#[test]
fn a_render_of_other_inputs_is_replaced_only_by_force() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    write_tree(
        &out,
        vec![OutFile::new("f", "a", 0o644)],
        Some(&prov("/a.yaml")),
    )
    .unwrap();
    // Same input (other content): fine.
    let mut changed = prov("/a.yaml");
    changed.files.push(crate::InputFile {
        path: "/a.yaml".into(),
        sha256: "1".repeat(64),
    });
    guard_provenance(&out, &changed, false).unwrap();
    let err = guard_provenance(&out, &prov("/b.yaml"), false).unwrap_err();
    assert!(
        matches!(&err, RenderError::OtherInput { previous, now, .. }
                if previous == &["/a.yaml"] && now == &["/b.yaml"]),
        "{err}"
    );
    guard_provenance(&out, &prov("/b.yaml"), true).unwrap();
    // A manifest that records no input (an older nodenet's).
    fs::write(out.join("manifest.json"), "{\"files\": []}").unwrap();
    assert!(matches!(
        guard_provenance(&out, &prov("/a.yaml"), false),
        Err(RenderError::UnknownInput(_))
    ));
    // No directory at all.
    guard_provenance(&tmp.path().join("none"), &prov("/a.yaml"), false).unwrap();
}

#[test]
fn remove_tree_deletes_links_not_their_targets() {
    let tmp = tempfile::tempdir().unwrap();
    let keep = tmp.path().join("keep");
    fs::create_dir(&keep).unwrap();
    fs::write(keep.join("precious"), "x").unwrap();
    let tree = tmp.path().join("tree");
    for d in ["hosts/a/system-connections", "hosts/b", "openshift"] {
        fs::create_dir_all(tree.join(d)).unwrap();
    }
    fs::write(
        tree.join("hosts/a/system-connections/eth0.nmconnection"),
        "k",
    )
    .unwrap();
    fs::write(tree.join("openshift/mc.yaml"), "m").unwrap();
    std::os::unix::fs::symlink(&keep, tree.join("hosts/b/link")).unwrap();
    remove_tree(&tree).unwrap();
    assert!(!tree.exists());
    assert!(keep.join("precious").is_file());
}

#[test]
fn rewrite_replaces_whole_tree_and_sets_modes() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    write_tree(
        &out,
        vec![
            OutFile::new("a/x.nmconnection", "x", 0o600),
            OutFile::new("old.txt", "o", 0o644),
        ],
        Some(&prov("a")),
    )
    .unwrap();
    let m = write_tree(
        &out,
        vec![OutFile::new("a/x.nmconnection", "y", 0o600)],
        Some(&prov("a")),
    )
    .unwrap();
    assert_eq!(
        fs::read_to_string(out.join("a/x.nmconnection")).unwrap(),
        "y"
    );
    assert!(!out.join("old.txt").exists());
    let mode = fs::metadata(out.join("a/x.nmconnection"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    // sha256("y"), computed independently with sha256sum.
    assert_eq!(
        m[0].sha256,
        "a1fce4363854ff888cff4b8e7875d600c2682390412a8cf79b37d0b11148b0fa"
    );
    // No temporary directories left beside the output.
    let left: Vec<_> = fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("out")]);
}

#[test]
fn two_files_on_one_path_conflict_and_nothing_is_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    write_tree(
        &out,
        vec![OutFile::new("keep.txt", "old", 0o644)],
        Some(&prov("a")),
    )
    .unwrap();
    // Many files in fresh nested directories, made from both threads,
    // and one path twice.
    let mut files: Vec<OutFile> = (0..200)
        .map(|i| OutFile::new(format!("hosts/h{i}/sc/a.nmconnection"), "x", 0o600))
        .collect();
    files.push(OutFile::new("hosts/h7/sc/a.nmconnection", "y", 0o600));
    let err = write_tree(&out, files, Some(&prov("a"))).unwrap_err();
    assert!(
        matches!(&err, RenderError::Conflict(p) if p == "hosts/h7/sc/a.nmconnection"),
        "{err}"
    );
    assert_eq!(fs::read_to_string(out.join("keep.txt")).unwrap(), "old");
    let left: Vec<_> = fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("out")]);
}

#[test]
fn refuses_foreign_non_empty_directory() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("precious"), "data").unwrap();
    let err = write_tree(tmp.path(), vec![OutFile::new("a", "b", 0o644)], None).unwrap_err();
    assert!(matches!(err, RenderError::NotOurs(_)));
    assert_eq!(
        fs::read_to_string(tmp.path().join("precious")).unwrap(),
        "data"
    );
}

/// manifest.json is serde_json's pretty form of the manifest, byte for
/// byte, whether its entries are written on every core or not at all.
#[test]
fn manifest_is_serde_jsons_pretty_form() {
    let mut source = prov("/a \"quoted\" é.yaml");
    source.files.push(crate::InputFile {
        path: "/a.yaml".into(),
        sha256: "2".repeat(64),
    });
    let entry = |path: &str, size| ManifestEntry {
        path: path.to_string(),
        sha256: "3".repeat(64),
        mode: "0600".into(),
        size,
    };
    for entries in [
        vec![],
        vec![entry("hosts/a/nmstate.yml", 1)],
        (0..300)
            .map(|i| entry(&format!("hosts/h{i}/\"x\"\n\\é.yml"), i))
            .collect(),
    ] {
        let mut want = serde_json::to_vec_pretty(&Manifest {
            source: &source,
            files: &entries,
        })
        .unwrap();
        want.push(b'\n');
        assert_eq!(
            String::from_utf8(manifest_json(&source, &entries)).unwrap(),
            String::from_utf8(want).unwrap()
        );
    }
}
