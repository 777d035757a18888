use super::*;
use std::io::Write;

#[test]
fn file_entries_are_gzip_in_a_data_url_that_reads_back() {
    let text = "interfaces:\n- {name: eth0, type: ethernet}\n".repeat(20);
    let e = file_entry("/etc/nodenet/nmstate/w0.yml", &text);
    assert_eq!(e["contents"]["compression"], "gzip");
    assert_eq!(e["mode"], 420);
    let url = e["contents"]["source"].as_str().unwrap();
    let data = nodenet_model::load::decode_data_url(url).unwrap();
    let mut back = String::new();
    use std::io::Read;
    flate2::read::GzDecoder::new(&data[..])
        .read_to_string(&mut back)
        .unwrap();
    assert_eq!(back, text);
    // The same text gives the same bytes (no timestamp in the header).
    assert_eq!(e, file_entry("/etc/nodenet/nmstate/w0.yml", &text));
}

/// The reused compressor writes what a new `GzBuilder` writes, byte
/// for byte, whatever came before it on the thread (empty, short,
/// incompressible, and larger than one output reservation).
#[test]
fn gzip_is_gzbuilders_bytes_at_best() {
    let noise: Vec<u8> = (0u32..200_000)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let texts: Vec<Vec<u8>> = vec![
        b"interfaces:\n- {name: eth0}\n".repeat(40),
        Vec::new(),
        b"a".to_vec(),
        noise,
        b"routes:\n  config: []\n".repeat(3),
    ];
    for t in &texts {
        let mut gz = flate2::GzBuilder::new().write(Vec::new(), flate2::Compression::best());
        gz.write_all(t).unwrap();
        assert_eq!(gzip(t), gz.finish().unwrap(), "{} bytes", t.len());
    }
}

/// The MachineConfigs' bytes are zlib's at level 9 whatever machine
/// built nodenet: a libz swapped by the build machine (zlib-ng-compat
/// writes other bytes for the same text) would change every data URL,
/// and the MCO would roll the change out to every node for nothing. The
/// expected bytes are Python's `gzip.compress(text, 9, mtime=0)` (zlib
/// 1.2.13) after its 10-byte header, whose OS byte differs.
#[test]
fn gzip_body_is_zlib_level_9s_bytes() {
    let text = "interfaces:\n- name: bond0\n  type: bond\n  state: up\n  mtu: 9000\n  \
                link-aggregation:\n    mode: 802.3ad\n    port:\n    - ens1f0\n    - ens1f1\n  \
                ipv4:\n    enabled: true\n    address:\n    - ip: 10.1.0.1\n      \
                prefix-length: 8\n";
    assert_eq!(text.len(), 218);
    let expected = "4d8dd10ec2200c45dff715fd0116501f94bfe9a443e256087446ffdeca34f1a149cfe9cd6d62a13ae3959a1f0c30aee461ca1cec0020aff2258526284a5bd17d95cdc3c5da4f68497c371863a58892327b759ac841c3677b188f18ba29b9ca7e3340dcdc6cffc129a4f238ed09629c160a1ea46ed40d8650a9b55f412a1e9c1ddda8d395f6579ad3d32cc4516efa7a7803b22d91d2da000000";
    let out = gzip(text.as_bytes());
    assert_eq!(out[..10], [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 0xff]);
    assert_eq!(nodenet_model::hex(&out[10..]), expected);
}

/// An entry written directly is what the emitter writes for
/// `[file_entry(..)]`, with the size the layout counts; paths the fast
/// path must quote or hand over included.
#[test]
fn entries_written_directly_are_the_emitters_bytes() {
    let text = "interfaces:\n- {name: eth0, type: ethernet}\n".repeat(3);
    let paths = [
        "/etc/nmstate/openshift/w0.yml",
        "/etc/systemd/network/10-nodenet-ens1f0.link",
        "/etc/x/a b.yml",
        "/etc/x/it's: here",
        "/etc/x/é.yml",
        "yes",
    ];
    for path in paths {
        let e = Entry::new(path, &text);
        let emitted = yaml(&J::Array(vec![file_entry(path, &text)]));
        assert_eq!(e.yaml, emitted, "{path}");
        let source = file_entry(path, &text)["contents"]["source"]
            .as_str()
            .unwrap()
            .len();
        assert_eq!(e.size, source + path.len() + 160, "{path}");
    }
}

/// A pool's MachineConfig made from written entries is the whole document
/// emitted with the entries in it, byte for byte, kind by kind.
#[test]
fn a_pools_machine_configs_are_the_whole_documents_emitted() {
    let hosts: Vec<(String, String)> = (0..3)
        .map(|i| {
            (
                format!("w{i}"),
                format!("interfaces:\n- name: eth0\n  ipv4:\n    address:\n    - ip: 10.0.0.{i}\n"),
            )
        })
        .collect();
    let entries: Vec<HostEntries> = hosts
        .iter()
        .map(|(name, text)| HostEntries {
            br_ex: Some(Entry::new(&format!("{OPENSHIFT_DIR}/{name}.yml"), text)),
            nodenet: None,
            links: vec![
                Entry::new(&format!("/etc/systemd/network/{name}-a.link"), "[Match]\n"),
                Entry::new(&format!("/etc/systemd/network/{name}-b.link"), "[Link]\n"),
            ],
        })
        .collect();
    let pool = Pool {
        name: "worker-2".into(),
        role: "worker",
        custom: None,
        hosts: vec![0, 1, 2],
    };
    let made = pool_files(&pool, entries);
    let whole = |kind: &str, files: Vec<J>| {
        let name = format!("10-nodenet-{kind}-worker-2");
        let config = json!({"ignition": {"version": "3.2.0"}, "storage": {"files": files}});
        (
            format!("openshift/{name}.yaml"),
            yaml(&machine_config(&name, "worker-2", config, None)),
        )
    };
    let br_ex = hosts
        .iter()
        .map(|(name, text)| file_entry(&format!("{OPENSHIFT_DIR}/{name}.yml"), text))
        .collect();
    let links = hosts
        .iter()
        .flat_map(|(name, _)| {
            [
                file_entry(&format!("/etc/systemd/network/{name}-a.link"), "[Match]\n"),
                file_entry(&format!("/etc/systemd/network/{name}-b.link"), "[Link]\n"),
            ]
        })
        .collect();
    let expected = [whole("br-ex", br_ex), whole("nic-names", links)];
    assert_eq!(made.len(), 2);
    for (file, (path, content)) in made.iter().zip(expected) {
        assert_eq!(file.path, path);
        assert_eq!(String::from_utf8_lossy(&file.content), content);
    }
}
