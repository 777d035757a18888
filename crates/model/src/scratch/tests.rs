use super::*;

#[test]
fn only_our_names_are_scratch() {
    for name in [
        ".nodenet-file-a1B2c3",
        ".nodenet-disk-zzzzzz",
        ".out.nodenet-render-000000",
        ".nodenet-iso-Abc123",
    ] {
        assert!(is_scratch(name), "{name}");
    }
    for name in [
        "nodenet-file-a1B2c3",
        ".nodenet-file-a1B2c",
        ".nodenet-file-a1B2c3d",
        ".nodenet-other-a1B2c3",
        ".nodenet-file-a1B2c!",
        ".nodenet-",
        "inventory.yaml",
    ] {
        assert!(!is_scratch(name), "{name}");
    }
}

#[test]
fn a_held_scratch_survives_a_sweep_and_a_released_one_does_not() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("image.raw");
    let held = dir_beside(&out, Kind::Disk).unwrap();
    std::fs::write(held.path().join("image"), "x").unwrap();
    let file = file_beside(&out, Kind::File).unwrap();
    // Left by a run that died: the same names, nobody holding them.
    let (left_dir, lock) = dir_beside(&out, Kind::Disk).unwrap().keep();
    drop(lock);
    let left_file = tmp.path().join(".nodenet-file-Zz9Zz9");
    std::fs::write(&left_file, "partial").unwrap();
    // Not ours: never removed.
    let theirs = tmp.path().join(".nodenet-notes");
    std::fs::write(&theirs, "mine").unwrap();
    sweep(tmp.path());
    assert!(held.path().join("image").exists());
    assert!(file.path().exists());
    assert!(!left_dir.exists());
    assert!(!left_file.exists());
    assert!(theirs.exists());
}

#[test]
fn nothing_is_swept_while_another_scratch_is_being_made() {
    let tmp = tempfile::tempdir().unwrap();
    // A maker holds the directory and has made its scratch, not yet
    // locked it.
    let maker = making_in(tmp.path()).unwrap();
    let unlocked = tmp.path().join(".nodenet-file-AbC123");
    std::fs::write(&unlocked, "being made").unwrap();
    let other = file_beside(&tmp.path().join("x"), Kind::File).unwrap();
    assert!(
        unlocked.exists(),
        "swept while its maker held the directory"
    );
    drop((maker, other));
    // Once the maker is gone, the next one sweeps it.
    let _next = file_beside(&tmp.path().join("x"), Kind::File).unwrap();
    assert!(!unlocked.exists());
}

#[test]
fn a_symlink_named_like_scratch_is_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("precious");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("data"), "keep").unwrap();
    std::os::unix::fs::symlink(&target, tmp.path().join(".nodenet-disk-abcdef")).unwrap();
    sweep(tmp.path());
    assert!(target.join("data").exists());
}
