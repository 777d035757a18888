//! What a GitOps entry point is asked to render: inventory files given
//! as they are, or nodenet's `Inventory` resources (each its own
//! render), read from the files that hold them so that findings point at
//! their lines.

use std::path::{Path, PathBuf};

use nodenet_model::load::inventory_resource;
use nodenet_model::{Diagnostic, SourceMap};

use crate::cmd::CliError;

/// One render: its inputs, and the BMC Secrets' form asked for.
pub struct Request {
    /// The resource's `metadata.name`, or the first input's name.
    pub name: String,
    pub inputs: Inputs,
    /// `spec.bmcSecrets`, when the resource says it.
    pub bmc_secrets: Option<String>,
    /// `spec.externalSecrets`: the store (`KIND/NAME`) and key template.
    pub external_secrets: Option<(String, Option<String>)>,
}

/// Where the inventory comes from.
pub enum Inputs {
    /// Files (and `netbox:` sources), loaded together as `render` does.
    Files(Vec<PathBuf>),
    /// The resource's own file, holding the inventory (`spec.inventory`):
    /// loaded as a file, so that findings are at its lines.
    Inside(PathBuf),
    /// A text that is no file of its own (an inventory as a tool passed
    /// it): its name, and the text.
    Text(String, String),
}

/// The requests of `paths`: each `Inventory` resource in them (a
/// directory: the resources directly in it) its own, every other file
/// together as one inventory.
pub fn of_paths(paths: &[PathBuf]) -> Result<Vec<Request>, CliError> {
    let mut requests = Vec::new();
    let mut plain = Vec::new();
    for path in paths {
        if path.to_str().is_some_and(nodenet_netbox::is_source) {
            plain.push(path.clone());
        } else if path.is_dir() {
            let found = of_dir(path)?;
            if found.is_empty() {
                return Err(CliError::usage(format!(
                    "{}: no Inventory resource (apiVersion: {}, kind: Inventory) directly in this directory; name the inventory files instead",
                    path.display(),
                    inventory_resource::API_VERSION
                )));
            }
            requests.extend(found);
        } else {
            let text = read(path)?;
            match of_file(path, &text, beside(path))? {
                found if found.is_empty() => plain.push(path.clone()),
                found => requests.extend(found),
            }
        }
    }
    if !plain.is_empty() {
        requests.insert(
            0,
            Request {
                name: plain[0].display().to_string(),
                inputs: Inputs::Files(plain),
                bmc_secrets: None,
                external_secrets: None,
            },
        );
    }
    Ok(requests)
}

fn read(path: &Path) -> Result<String, CliError> {
    std::fs::read_to_string(path).map_err(|e| CliError::io(path.display().to_string(), e))
}

/// The resources in the YAML files directly in `dir`, by file name.
fn of_dir(dir: &Path) -> Result<Vec<Request>, CliError> {
    let entries = std::fs::read_dir(dir).map_err(|e| CliError::io(dir.display().to_string(), e))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    let mut requests = Vec::new();
    for f in files {
        let text = read(&f)?;
        if text.contains(inventory_resource::API_GROUP) {
            requests.extend(of_file(&f, &text, beside(&f))?);
        }
    }
    Ok(requests)
}

/// The directory of `path`: where the files its resources name are.
pub fn beside(path: &Path) -> &Path {
    path.parent().unwrap_or(Path::new(""))
}

impl Request {
    /// The request as a tool passed its resource (written again, its file
    /// not to be found): an inventory inside it read from `text`, the
    /// text passed (its lines are that text's).
    pub fn read_as_passed(self, text: &str) -> Request {
        let inputs = match self.inputs {
            Inputs::Inside(_) => Inputs::Text(
                format!("Inventory {} (as passed)", self.name),
                text.to_string(),
            ),
            other => other,
        };
        Request { inputs, ..self }
    }
}

/// The `Inventory` resources of one file (none when it holds none), the
/// files they name read from `base`; mistakes in them stop the command,
/// said at their lines.
pub fn of_file(path: &Path, text: &str, base: &Path) -> Result<Vec<Request>, CliError> {
    if !text.contains(inventory_resource::KIND) {
        return Ok(Vec::new());
    }
    let mut sources = SourceMap::default();
    let id = sources.add(path.display().to_string(), text.to_string());
    // Not YAML: not ours to say; the file is then loaded as an input,
    // whose reader says where.
    let Ok(docs) = nodenet_model::yaml::parse_all(text, id) else {
        return Ok(Vec::new());
    };
    let mut requests = Vec::new();
    let mut diags: Vec<Diagnostic> = Vec::new();
    let resources: Vec<&nodenet_model::Node> = docs
        .iter()
        .filter(|d| inventory_resource::is_resource(d))
        .collect();
    // An inventory inside a resource is read by loading its file: another
    // resource beside it would be read with it.
    let inline =
        |d: &&nodenet_model::Node| d.get("spec").and_then(|s| s.get("inventory")).is_some();
    if resources.len() > 1 && resources.iter().any(inline) {
        return Err(CliError::usage(format!(
            "{}: {} Inventory resources, one holding its inventory: give each such resource a file of its own",
            path.display(),
            resources.len()
        )));
    }
    for doc in resources {
        let before = diags.len();
        let Some(r) = inventory_resource::read(doc, &mut diags) else {
            continue;
        };
        if diags[before..].iter().any(Diagnostic::is_error) {
            continue;
        }
        let inputs = if r.inventory.is_some() {
            Inputs::Inside(path.to_path_buf())
        } else {
            Inputs::Files(
                r.files
                    .iter()
                    .map(|f| match nodenet_netbox::is_source(&f.value) {
                        true => PathBuf::from(&f.value),
                        false => base.join(&f.value),
                    })
                    .collect(),
            )
        };
        requests.push(Request {
            name: r.name.value,
            inputs,
            // `externalSecrets` alone implies the form.
            bmc_secrets: r.bmc_secrets.map(|b| b.value).or_else(|| {
                r.external_secrets
                    .is_some()
                    .then(|| "external-secret".to_string())
            }),
            external_secrets: r.external_secrets,
        });
    }
    if diags.iter().any(Diagnostic::is_error) {
        return Err(CliError::input(
            "invalid-value",
            format!("{}: the Inventory resource cannot be read", path.display()),
        )
        .with_findings(sources, diags));
    }
    Ok(requests)
}
