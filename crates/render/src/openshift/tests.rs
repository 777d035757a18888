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
