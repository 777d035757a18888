//! Differential: what `yaml_out` writes must read back as the same strings
//! in the YAML readers that consume nodenet's files — PyYAML (YAML 1.1,
//! both its pure-Python and its libyaml loader), go-yaml v2 (YAML 1.1-ish:
//! openshift-install, kubectl) and go-yaml v3 — not only in serde_yaml.
//!
//! Seeded random strings made of what YAML readers treat specially
//! (indicators, quotes, digits and `:`/`.`/`_` of numbers and times,
//! y/n/on/off, line breaks, tabs, non-ASCII, control characters), each as
//! a mapping value, a key and a list item, and alone as a document. One
//! reader process per reader for the whole batch.
//!
//!   YAML_READERS_CASES=N YAML_READERS_SEED=S   more or other cases
//!   YAML_OUT_CORPUS=DIR   also every file of DIR (a fuzz corpus) as a string

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value as J};

/// Pieces strings are made of: single characters and whole tokens that
/// resolve to other types somewhere.
const PIECES: &[&str] = &[
    "0",
    "1",
    "2",
    "5",
    "6",
    "9",
    ":",
    ":",
    ".",
    "_",
    "-",
    "+",
    "e",
    "E",
    "x",
    "o",
    "b",
    "y",
    "Y",
    "n",
    "N",
    "on",
    "off",
    "yes",
    "no",
    "true",
    "False",
    "null",
    "~",
    "Null",
    "inf",
    ".inf",
    ".NaN",
    "0x",
    "0o",
    "0b",
    "0X",
    "0O",
    "0B",
    "1_000",
    "12:30:45",
    "2001-12-14",
    "2001-12-14t21:59:43.10-05:00",
    "52:54:00:12:00:01",
    "=",
    "<<",
    " ",
    " ",
    "  ",
    "\t",
    "\n",
    "\r\n",
    "#",
    " #",
    ": ",
    "- ",
    "? ",
    "'",
    "\"",
    "\\",
    "&",
    "*",
    "!",
    "|",
    ">",
    "%",
    "@",
    "`",
    "{",
    "}",
    "[",
    "]",
    ",",
    "$",
    "${ip.p}",
    "/",
    "a",
    "k",
    "eth0",
    "é",
    "日本",
    "\u{85}",
    "\u{a0}",
    "\u{2028}",
    "\u{feff}",
    "\u{1}",
    "\u{7f}",
    "\u{1F600}",
    "---",
    "...",
];

/// Strings known to trip one reader or another.
const KNOWN: &[&str] = &[
    "yes",
    "No",
    "ON",
    "off",
    "y",
    "n",
    "~",
    "null",
    "NULL",
    "true",
    "0x1F",
    "0X1F",
    "0O17",
    "0B101",
    "0o17",
    "017",
    "0b101",
    "1_000",
    "1:20",
    "190:20:30",
    "52:54:00:12:00:01",
    "2001-12-14",
    "1e3",
    "1.0",
    ".5",
    "+1",
    "-0",
    ".inf",
    "-.Inf",
    ".nan",
    "=",
    "<<",
    "- a",
    "a: b",
    "#x",
    " lead",
    "trail ",
    "'",
    "\"",
    "---",
    "...",
    "a\nb",
    "a\n",
    "\n",
    "é",
    "\u{2028}",
    "\u{85}x",
    "x\u{85}",
    "\t",
    "a\tb",
    "12:30",
    "0.1.2",
    "1,000",
    "${dns.p[1]}",
    "data:,hello%20world",
];

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn strings() -> Vec<String> {
    let cases = env_num("YAML_READERS_CASES", 20_000) as usize;
    let mut rng = fastrand::Rng::with_seed(env_num("YAML_READERS_SEED", 0x5eed_1e55));
    let mut out: Vec<String> = KNOWN.iter().map(|s| s.to_string()).collect();
    while out.len() < cases {
        let n = 1 + rng.usize(..7);
        out.push((0..n).map(|_| PIECES[rng.usize(..PIECES.len())]).collect());
    }
    if let Ok(dir) = std::env::var("YAML_OUT_CORPUS") {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{dir}: {e}"))
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for f in files {
            let bytes = std::fs::read(&f).unwrap();
            // JSON inputs are documents, not strings: their strings are in
            // the generated set's alphabet anyway.
            if serde_json::from_slice::<J>(&bytes).is_err() {
                out.push(String::from_utf8_lossy(&bytes).into_owned());
            }
        }
    }
    out.retain(|s| s != "k");
    out
}

/// A reader's view of one document: every scalar (keys included) as
/// `[kind, text]`, kind `s` for strings, sorted.
fn expected(s: &str, alone: bool) -> J {
    let mut v = if alone {
        vec![json!(["s", s])]
    } else {
        vec![
            json!(["s", "k"]),
            json!(["s", s]),
            json!(["s", s]),
            json!(["s", s]),
        ]
    };
    v.sort_by_key(|x| x.to_string());
    J::Array(v)
}

const PYTHON: &str = r#"
import json, sys, yaml
def scalars(v, out):
    if isinstance(v, dict):
        for k, x in v.items():
            scalars(k, out); scalars(x, out)
    elif isinstance(v, list):
        for x in v:
            scalars(x, out)
    elif isinstance(v, str):
        out.append(["s", v])
    else:
        out.append([type(v).__name__, repr(v)])
    return out
files = open(sys.argv[1], encoding="utf-8").read().split("\n")
for loader in (yaml.SafeLoader, yaml.CSafeLoader):
    res = []
    for f in files:
        try:
            res.append(scalars(yaml.load(open(f, encoding="utf-8").read(), Loader=loader), []))
        except Exception as e:
            res.append([["error", str(e)]])
    print(json.dumps(res))
"#;

const GO: &str = r#"package main

import (
	"encoding/json"
	"fmt"
	"io/ioutil"
	"os"
	"strings"

	yaml2 "gopkg.in/yaml.v2"
	yaml3 "gopkg.in/yaml.v3"
)

func scalars(v interface{}, out [][]string) [][]string {
	switch t := v.(type) {
	case map[interface{}]interface{}:
		for k, x := range t {
			out = scalars(x, scalars(k, out))
		}
	case map[string]interface{}:
		for k, x := range t {
			out = scalars(x, append(out, []string{"s", k}))
		}
	case []interface{}:
		for _, x := range t {
			out = scalars(x, out)
		}
	case string:
		out = append(out, []string{"s", t})
	default:
		out = append(out, []string{fmt.Sprintf("%T", t), fmt.Sprint(t)})
	}
	return out
}

func main() {
	list, err := ioutil.ReadFile(os.Args[2])
	if err != nil {
		panic(err)
	}
	var res [][][]string
	for _, f := range strings.Split(string(list), "\n") {
		data, err := ioutil.ReadFile(f)
		if err != nil {
			panic(err)
		}
		var v interface{}
		if os.Args[1] == "v2" {
			err = yaml2.Unmarshal(data, &v)
		} else {
			err = yaml3.Unmarshal(data, &v)
		}
		if err != nil {
			res = append(res, [][]string{{"error", err.Error()}})
		} else {
			res = append(res, scalars(v, [][]string{}))
		}
	}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
}
"#;

fn run(cmd: &mut Command) -> Vec<u8> {
    let o = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e} (see .ci/run for what CI installs)"));
    assert!(
        o.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

/// The Go reader, built offline against Debian's golang-gopkg-yaml.v2-dev
/// and v3-dev.
fn go_reader(dir: &Path) -> PathBuf {
    let src = dir.join("reader.go");
    std::fs::write(&src, GO).unwrap();
    let bin = dir.join("reader");
    run(Command::new("go")
        .args(["build", "-o"])
        .arg(&bin)
        .arg(&src)
        .env("GO111MODULE", "off")
        .env("GOPATH", "/usr/share/gocode")
        .env("GOCACHE", dir.join("gocache"))
        .env("HOME", dir));
    bin
}

#[test]
fn yaml_out_reads_back_the_same_in_pyyaml_and_go_yaml() {
    let tmp = tempfile::tempdir().unwrap();
    let strings = strings();
    let mut files = Vec::new();
    let mut want = Vec::new();
    for (i, s) in strings.iter().enumerate() {
        for (alone, doc) in [
            (false, json!({ "k": s, s.as_str(): [s] })),
            (true, json!(s)),
        ] {
            let text = crate::yaml_out::to_string(&doc);
            // The reference reader first: a miss here is the fuzz target's.
            let back: J = serde_yaml::from_str(&text)
                .unwrap_or_else(|e| panic!("serde_yaml: {e}: {s:?} written as\n{text}"));
            assert_eq!(back, doc, "serde_yaml:\n{text}");
            let f = tmp.path().join(format!("{i}-{}.yaml", alone as u8));
            std::fs::write(&f, &text).unwrap();
            files.push(f);
            want.push((s.clone(), alone, text));
        }
    }
    let list = tmp.path().join("files");
    std::fs::write(
        &list,
        files
            .iter()
            .map(|f| f.to_str().unwrap())
            .collect::<Vec<_>>()
            .join("\n"),
    )
    .unwrap();

    let mut readers: Vec<(&str, Vec<J>)> = Vec::new();
    let py = run(Command::new("python3").arg("-c").arg(PYTHON).arg(&list));
    let mut lines = std::str::from_utf8(&py).unwrap().lines();
    for name in ["PyYAML (pure Python)", "PyYAML (libyaml)"] {
        let all: Vec<J> = serde_json::from_str(lines.next().unwrap()).unwrap();
        readers.push((name, all));
    }
    let go = go_reader(tmp.path());
    for (name, v) in [("go-yaml v2", "v2"), ("go-yaml v3", "v3")] {
        let all: Vec<J> =
            serde_json::from_slice(&run(Command::new(&go).arg(v).arg(&list))).unwrap();
        readers.push((name, all));
    }

    let mut report = String::new();
    let mut misses = 0;
    let mut seen = std::collections::BTreeSet::new();
    for (name, all) in &readers {
        assert_eq!(all.len(), want.len(), "{name}");
        for (got, (s, alone, text)) in all.iter().zip(&want) {
            let mut got = got.as_array().unwrap().clone();
            got.sort_by_key(|x| x.to_string());
            if J::Array(got.clone()) != expected(s, *alone) {
                misses += 1;
                if seen.insert((*name, s.clone())) && seen.len() <= 60 {
                    let read = serde_json::to_string(&got).unwrap();
                    let _ = writeln!(
                        report,
                        "{name}: {s:?} written as\n{text}read as {}\n",
                        read.chars().take(300).collect::<String>()
                    );
                }
            }
        }
    }
    assert_eq!(misses, 0, "{misses} misreadings:\n{report}");
    eprintln!(
        "{} strings, {} documents, {} readers: all read back",
        strings.len(),
        files.len(),
        readers.len()
    );
}
