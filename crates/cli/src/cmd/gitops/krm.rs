//! The KRM function (the kustomize/kpt function spec): a
//! `config.kubernetes.io/v1` ResourceList on stdin, the same list on
//! stdout with the rendered objects added. The inventory is the
//! function's config (a nodenet `Inventory` resource), or each
//! `Inventory` among the items when the config is none.
//!
//! The items come back as they came, byte for byte (comments and all: kpt
//! writes them back to the package), but for the objects an earlier run
//! made, which are made again: they live under
//! `<the Inventory's directory>/rendered/<its name>/`, at render's paths.
//! Findings are `results`, each with its file, line and column; an
//! inventory with errors adds nothing and removes nothing, and the
//! function exits 1.

use std::io::Read;
use std::path::{Path, PathBuf};

use nodenet_model::load::inventory_resource;
use nodenet_model::Node;
use serde_json::{json, Value as J};

use super::request::{self, Request};
use crate::cmd::{CliError, Exit, Outcome};

#[derive(clap::Args)]
pub struct Args {
    /// The BMC Secrets when the Inventory does not say (as `manifests`).
    #[command(flatten)]
    asked: super::Asked,
}

const PATH: &str = "config.kubernetes.io/path";
const INDEX: &str = "config.kubernetes.io/index";
const INTERNAL_PATH: &str = "internal.config.kubernetes.io/path";
const INTERNAL_INDEX: &str = "internal.config.kubernetes.io/index";

pub fn run(args: Args) -> Outcome {
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .map_err(|e| CliError::io("stdin", e))?;
    let list = nodenet_model::yaml::parse(&text, 0)
        .map_err(|e| CliError::usage(format!("stdin is no ResourceList: {e}")))?;
    if list.get("kind").and_then(Node::as_str) != Some("ResourceList") {
        return Err(CliError::usage(
            "stdin is no ResourceList (kind: ResourceList): run nodenet krm-function as a KRM function (kpt fn eval --exec, kpt fn render)",
        ));
    }
    let items = list.get("items").and_then(Node::as_seq).unwrap_or_default();
    let chunks = item_texts(&text);
    if chunks.len() != items.len() {
        return Err(CliError::usage(
            "the ResourceList's items are not one block list nodenet can give back as written",
        ));
    }
    let resources: Vec<&Node> = match list.get("functionConfig") {
        Some(c) if inventory_resource::is_resource(c) => vec![c],
        _ => items
            .iter()
            .filter(|i| inventory_resource::is_resource(i))
            .collect(),
    };
    if resources.is_empty() {
        return Err(CliError::usage(format!(
            "no nodenet Inventory ({}, kind: Inventory) as the function's config or among the items",
            inventory_resource::API_VERSION
        )));
    }
    let mut results = Vec::new();
    let mut made = Vec::new();
    let mut replaced = Vec::new();
    let mut failed = false;
    for resource in resources {
        let name = resource
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Node::as_str)
            .unwrap_or("")
            .to_string();
        let (request, home) = locate(resource, &name, items)?;
        let (objects, sources, diags) = super::render_request(&request, &args.asked)?;
        results.extend(to_results(&sources, &diags, &name));
        let prefix = format!("{home}rendered/{name}/");
        match objects {
            None => failed = true,
            Some(objects) => {
                for o in objects {
                    made.push(item(&o, &format!("{prefix}{}", o.path))?);
                }
                replaced.push(prefix);
            }
        }
    }
    let kept: Vec<&str> = items
        .iter()
        .zip(&chunks)
        .filter(|(i, _)| {
            let path = annotation(i, INTERNAL_PATH).or_else(|| annotation(i, PATH));
            !path.is_some_and(|p| replaced.iter().any(|r| p.starts_with(r.as_str())))
        })
        .map(|(_, c)| *c)
        .collect();
    let indent = chunks.first().map_or(0, |c| c.len() - c.trim_start().len());
    print!("{}", resource_list(&kept, &made, indent, &results));
    Ok(Exit::problems_if(failed))
}

fn annotation<'a>(item: &'a Node, key: &str) -> Option<&'a str> {
    item.get("metadata")?.get("annotations")?.get(key)?.as_str()
}

/// The request for an Inventory resource, and the directory (with a
/// trailing `/`, or empty) its objects go under: read from the file the
/// item says it came from (its lines, its files beside it) when that file
/// is here, else from the list as passed.
fn locate(resource: &Node, name: &str, items: &[Node]) -> Result<(Request, String), CliError> {
    let is_it = |i: &&Node| {
        inventory_resource::is_resource(i)
            && i.get("metadata")
                .and_then(|m| m.get("name"))
                .and_then(Node::as_str)
                == Some(name)
    };
    let path = annotation(resource, INTERNAL_PATH)
        .or_else(|| annotation(resource, PATH))
        .or_else(|| {
            let item = items.iter().find(is_it)?;
            annotation(item, INTERNAL_PATH).or_else(|| annotation(item, PATH))
        })
        .map(PathBuf::from);
    let home = path
        .as_deref()
        .and_then(Path::parent)
        .map(|d| d.display().to_string())
        .filter(|d| !d.is_empty())
        .map(|d| format!("{d}/"))
        .unwrap_or_default();
    if let Some(path) = path.filter(|p| p.is_file()) {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| CliError::io(path.display().to_string(), e))?;
        if let Some(r) = request::of_file(&path, &text, request::beside(&path))?
            .into_iter()
            .find(|r| r.name == name)
        {
            return Ok((r, home));
        }
    }
    let label = format!("Inventory {name} (as passed)");
    let text = nodenet_render::yaml_out::to_string(&without_annotations(resource.to_json()));
    // Files it names are read from the working directory.
    let asked = request::of_file(Path::new(&label), &text, Path::new(""))?;
    let Some(asked) = asked.into_iter().next() else {
        return Err(CliError::usage(format!(
            "the Inventory `{name}` cannot be read"
        )));
    };
    Ok((asked.read_as_passed(&text), home))
}

/// A resource without the annotations the tools add (path, index, ids).
fn without_annotations(mut v: J) -> J {
    if let Some(m) = v.get_mut("metadata").and_then(J::as_object_mut) {
        m.remove("annotations");
    }
    v
}

/// The text of each item of the top-level `items:` block list, as
/// written (a `- ` line at the list's indentation starts one).
fn item_texts(text: &str) -> Vec<&str> {
    let mut starts = Vec::new();
    let mut end = text.len();
    let mut in_items = false;
    let mut indent = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let at = offset;
        offset += line.len();
        if !in_items {
            in_items = line.trim_end() == "items:";
            continue;
        }
        let trimmed = line.trim_start_matches(' ');
        if trimmed.trim().is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let ind = line.len() - trimmed.len();
        let dash = trimmed.starts_with("- ") || trimmed.trim_end() == "-";
        if ind == 0 && !dash {
            end = at;
            break;
        }
        if dash && indent.is_none_or(|i| i == ind) {
            indent = Some(ind);
            starts.push(at);
        }
    }
    let mut chunks = Vec::new();
    for (n, &s) in starts.iter().enumerate() {
        let e = starts.get(n + 1).copied().unwrap_or(end);
        chunks.push(&text[s..e]);
    }
    chunks
}

/// A rendered object as an item: kpt's path and index annotations added.
fn item(o: &nodenet_render::gitops::Object, path: &str) -> Result<J, CliError> {
    let node = nodenet_model::yaml::parse(&o.text, 0).map_err(|e| {
        CliError::input(
            "yaml-syntax",
            format!("rendered {} is no YAML: {e}", o.path),
        )
    })?;
    let mut v = node.to_json();
    let meta = v
        .as_object_mut()
        .and_then(|m| m.get_mut("metadata"))
        .and_then(J::as_object_mut);
    if let Some(meta) = meta {
        let notes = meta.entry("annotations").or_insert_with(|| json!({}));
        if let Some(notes) = notes.as_object_mut() {
            for (k, val) in [
                (PATH, path.to_string()),
                (INDEX, o.index.to_string()),
                (INTERNAL_PATH, path.to_string()),
                (INTERNAL_INDEX, o.index.to_string()),
            ] {
                notes.insert(k.into(), J::String(val));
            }
        }
    }
    Ok(v)
}

/// Findings as function results: severity, the message with its place,
/// and the file, line, column and code as fields tools read.
fn to_results(
    sources: &nodenet_model::SourceMap,
    diags: &[nodenet_model::Diagnostic],
    name: &str,
) -> Vec<J> {
    let listed = crate::report::to_json(sources, diags);
    let list = listed["diagnostics"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    list.into_iter()
        .map(|d| {
            let severity = match d["severity"].as_str() {
                Some("error") => "error",
                Some("warning") => "warning",
                _ => "info",
            };
            let place = match (d["file"].as_str(), d["line"].as_u64(), d["column"].as_u64()) {
                (Some(f), Some(l), Some(c)) => format!("{f}:{l}:{c}: "),
                (Some(f), _, _) => format!("{f}: "),
                _ => String::new(),
            };
            let code = d["code"].as_str().unwrap_or("");
            let mut r = json!({
                "message": format!("{place}{} [{code}]", d["message"].as_str().unwrap_or("")),
                "severity": severity,
                "resourceRef": {
                    "apiVersion": inventory_resource::API_VERSION,
                    "kind": inventory_resource::KIND,
                    "name": name,
                },
                "tags": {"code": code},
            });
            if let Some(f) = d["file"].as_str() {
                r["file"] = json!({"path": f});
            }
            for key in ["line", "column"] {
                if let Some(n) = d[key].as_u64() {
                    r["tags"][key] = J::String(n.to_string());
                }
            }
            if let Some(h) = d["host"].as_str() {
                r["tags"]["host"] = J::String(h.to_string());
                r["message"] = J::String(format!(
                    "{} (host {h})",
                    r["message"].as_str().unwrap_or("")
                ));
            }
            r
        })
        .collect()
}

/// The ResourceList given back: the items kept as they came, the objects
/// made, and the results.
fn resource_list(kept: &[&str], made: &[J], indent: usize, results: &[J]) -> String {
    let mut out = String::from("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n");
    if kept.is_empty() && made.is_empty() {
        out.push_str("items: []\n");
    } else {
        out.push_str("items:\n");
        for chunk in kept {
            out.push_str(chunk);
            if !chunk.ends_with('\n') {
                out.push('\n');
            }
        }
        let pad = " ".repeat(indent);
        for v in made {
            let text = nodenet_render::yaml_out::to_string(v);
            for (n, line) in text.lines().enumerate() {
                let lead = if n == 0 { "- " } else { "  " };
                if line.is_empty() {
                    out.push('\n');
                } else {
                    out.push_str(&format!("{pad}{lead}{line}\n"));
                }
            }
        }
    }
    if !results.is_empty() {
        out.push_str(&nodenet_render::yaml_out::to_string(
            &json!({ "results": results }),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_cut_as_written_up_to_the_next_key() {
        let text = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- a: 1 # one\n  b: |\n    - not an item\n# between\n- c: 2\nfunctionConfig:\n  x: 1\n";
        assert_eq!(
            item_texts(text),
            [
                "- a: 1 # one\n  b: |\n    - not an item\n# between\n",
                "- c: 2\n"
            ]
        );
        let indented = "items:\n  - a: 1\n    b:\n    - x\n  - c: 2\nresults: []\n";
        assert_eq!(
            item_texts(indented),
            ["  - a: 1\n    b:\n    - x\n", "  - c: 2\n"]
        );
        assert!(item_texts("kind: ResourceList\nitems: []\n").is_empty());
    }
}
