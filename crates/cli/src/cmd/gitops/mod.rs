//! nodenet inside the GitOps engines. Three entry points, one render:
//! `manifests` (the objects as one YAML stream on stdout: what Argo CD's
//! plugin runs), the kustomize generator (this binary installed as
//! `<plugin home>/nodenet.io/v1alpha1/inventory/Inventory`, laid out by
//! `plugin-home`) and the KRM function (`krm.rs`). Each renders as
//! `render` does, into a scratch directory, and gives the objects a
//! cluster is given ([`nodenet_render::gitops`]); an inventory with
//! errors gives none, its findings said at their lines.

mod krm;
mod request;

use std::path::{Path, PathBuf};

use nodenet_model::load::inventory_resource;
use nodenet_render::artifacts::external_secret::SecretStore;
use nodenet_render::gitops::Object;
use nodenet_render::{Also, BmcSecrets, Provenance, Replace};

use super::{CliError, Exit, Outcome};
use crate::report::{self, Format};
use crate::ui::Phases;
pub use krm::{run as krm_function, Args as KrmArgs};
use request::{Inputs, Request};

/// The kustomize plugin's path under a plugin home: its API group and
/// version, its kind in lower case, and the executable named as the kind.
pub const PLUGIN_PATH: &str = "nodenet.io/v1alpha1/inventory/Inventory";

/// The BMC Secrets' form when nothing says one: a hub applies what it is
/// given, so a Secret with a `${VAR}` placeholder would be applied as it
/// is; the BareMetalHosts name a Secret made elsewhere instead.
const DEFAULT_BMC_SECRETS: &str = "reference";

#[derive(clap::Args)]
pub struct ManifestsArgs {
    /// Inventory files, or files holding nodenet `Inventory` resources
    /// (each rendered on its own); a directory: the resources directly in it.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    #[command(flatten)]
    asked: Asked,
}

/// How the BMC credentials are given, when the Inventory does not say.
#[derive(clap::Args, Default)]
pub struct Asked {
    /// The BMC Secrets: `reference` (the default here: none written, the
    /// BareMetalHosts name `<host>-bmc-secret`, made elsewhere),
    /// `external-secret` (an ExternalSecret per BMC Secret, from
    /// --secret-store), `placeholder` or `embed` (as render). A resource's
    /// `spec.bmcSecrets` wins; without either, NODENET_BMC_SECRETS (or
    /// Argo CD's ARGOCD_ENV_NODENET_BMC_SECRETS; the same for the store
    /// and key: NODENET_SECRET_STORE, NODENET_SECRET_KEY).
    #[arg(long, value_name = "FORM")]
    bmc_secrets: Option<String>,
    /// The store of the ExternalSecrets: `NAME` (a ClusterSecretStore) or
    /// `SecretStore/NAME`.
    #[arg(long, value_name = "[KIND/]NAME")]
    secret_store: Option<String>,
    /// The key of a BMC's credentials in the store (`{cluster}`, `{host}`,
    /// `{credentials}` replaced; default `{cluster}/bmc/{credentials}`).
    #[arg(long, value_name = "TEMPLATE")]
    secret_key: Option<String>,
}

#[derive(clap::Args)]
pub struct PluginHomeArgs {
    /// The directory to lay the plugin tree out in (KUSTOMIZE_PLUGIN_HOME).
    dir: PathBuf,
}

/// `nodenet manifests`: the objects of each request, one stream on stdout.
pub fn manifests(args: ManifestsArgs) -> Outcome {
    let requests = request::of_paths(&args.files)?;
    let mut objects = Vec::new();
    for r in &requests {
        match render_objects(r, &args.asked)? {
            Some(found) => objects.extend(found),
            None => return Ok(Exit::Problems),
        }
    }
    print_stream(&objects);
    Ok(Exit::Success)
}

fn print_stream(objects: &[Object]) {
    use std::io::Write;
    let text = nodenet_render::gitops::stream(objects);
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

/// kustomize's exec generator: `Inventory CONFIG`, run in the
/// kustomization's directory, with the generator's config (the
/// `Inventory` resource, as kustomize wrote it again) in CONFIG.
pub fn generator(args: &[std::ffi::OsString]) -> Outcome {
    let Some(config) = args.get(1).map(PathBuf::from) else {
        return Err(CliError::usage(
            "as a kustomize generator, nodenet takes the generator's config file (kustomize passes it); run `nodenet --help` for the commands",
        ));
    };
    let text = std::fs::read_to_string(&config)
        .map_err(|e| CliError::io(config.display().to_string(), e))?;
    // Files it names are read from the kustomization's directory.
    let passed = request::of_file(&config, &text, Path::new(""))?;
    let Ok([asked]) = <[Request; 1]>::try_from(passed) else {
        return Err(CliError::usage(format!(
            "the generator's config is no nodenet Inventory ({} with kind: Inventory)",
            inventory_resource::API_VERSION
        )));
    };
    // kustomize passes the resource written again (keys sorted, comments
    // gone): the file it came from is read instead, for its lines.
    let request = match original(&asked.name)? {
        Some(r) => r,
        None => asked.read_as_passed(&text),
    };
    match render_objects(&request, &Asked::default())? {
        Some(objects) => {
            print_stream(&objects);
            Ok(Exit::Success)
        }
        None => Ok(Exit::Problems),
    }
}

/// The resource named `name` in a file the kustomization in the working
/// directory lists as a generator.
fn original(name: &str) -> Result<Option<Request>, CliError> {
    let Some(kustomization) = ["kustomization.yaml", "kustomization.yml", "Kustomization"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
    else {
        return Ok(None);
    };
    let Ok(text) = std::fs::read_to_string(&kustomization) else {
        return Ok(None);
    };
    let Ok(root) = nodenet_model::yaml::parse(&text, 0) else {
        return Ok(None);
    };
    let listed = root
        .get("generators")
        .and_then(nodenet_model::Node::as_seq)
        .unwrap_or_default();
    for file in listed.iter().filter_map(nodenet_model::Node::as_str) {
        let path = PathBuf::from(file);
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        if let Some(r) = request::of_file(&path, &text, request::beside(&path))?
            .into_iter()
            .find(|r| r.name == name)
        {
            return Ok(Some(r));
        }
    }
    Ok(None)
}

/// `nodenet plugin-home DIR`: this binary at the path kustomize looks the
/// generator up at, under DIR.
pub fn plugin_home(args: PluginHomeArgs) -> Outcome {
    let target = args.dir.join(PLUGIN_PATH);
    let dir = target.parent().expect("the plugin path has directories");
    let io = |p: &Path, e: std::io::Error| CliError::io(p.display().to_string(), e);
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let exe = std::env::current_exe().map_err(|e| CliError::io("the running nodenet", e))?;
    // Copied beside the target, then renamed over it: never a partial
    // plugin, and a binary in use is replaced, not written into.
    let staged = dir.join(".Inventory.new");
    std::fs::copy(&exe, &staged).map_err(|e| io(&staged, e))?;
    std::fs::rename(&staged, &target).map_err(|e| io(&target, e))?;
    crate::ui::info!(
        "ok: the kustomize generator is {} (KUSTOMIZE_PLUGIN_HOME={}; kustomize build --enable-alpha-plugins)",
        target.display(),
        args.dir.display()
    );
    Ok(Exit::Success)
}

/// The objects of a request, its findings said on stderr as `render`
/// says them; `None` when its inventory has errors.
fn render_objects(r: &Request, asked: &Asked) -> Result<Option<Vec<Object>>, CliError> {
    let (objects, sources, diags) = render_request(r, asked)?;
    report::print(&sources, &diags, Format::Human);
    Ok(objects)
}

/// What rendering a request came to: its objects (`None` when the
/// inventory has errors), its sources and its findings.
pub(super) type Rendered = (
    Option<Vec<Object>>,
    nodenet_model::SourceMap,
    Vec<nodenet_model::Diagnostic>,
);

/// Loads and renders one request into a scratch directory.
pub(super) fn render_request(r: &Request, asked: &Asked) -> Result<Rendered, CliError> {
    let env = |name: &str| {
        // Argo CD passes an application's plugin env as ARGOCD_ENV_<name>.
        [
            format!("NODENET_{name}"),
            format!("ARGOCD_ENV_NODENET_{name}"),
        ]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|s| !s.is_empty()))
    };
    let (bmc_secrets, secret_store, secret_key) = (
        asked.bmc_secrets.clone().or_else(|| env("BMC_SECRETS")),
        asked.secret_store.clone().or_else(|| env("SECRET_STORE")),
        asked.secret_key.clone().or_else(|| env("SECRET_KEY")),
    );
    let store = secret_store.as_deref().map(|s| (s, secret_key.as_deref()));
    let (mut loaded, names) = match &r.inputs {
        Inputs::Files(files) => (
            super::load_files(files)?,
            files.iter().map(|f| Provenance::input_name(f)).collect(),
        ),
        Inputs::Inside(file) => (
            super::load_files(std::slice::from_ref(file))?,
            vec![Provenance::input_name(file)],
        ),
        Inputs::Text(name, text) => (
            nodenet_model::load_texts(vec![(name.clone(), text.clone())]),
            vec![name.clone()],
        ),
    };
    let form = r
        .bmc_secrets
        .as_deref()
        .or(bmc_secrets.as_deref())
        .unwrap_or(DEFAULT_BMC_SECRETS);
    let bmc_secrets = bmc_form(form)?;
    let secret_store = match (bmc_secrets, &r.external_secrets, store) {
        (BmcSecrets::ExternalSecret, Some((s, key)), _) => Some((s.as_str(), key.as_deref())),
        (BmcSecrets::ExternalSecret, None, Some(s)) => Some(s),
        (BmcSecrets::ExternalSecret, None, None) => {
            return Err(CliError::usage(format!(
                "`{}`: ExternalSecrets need a store: the Inventory's `spec.externalSecrets.storeRef`, or --secret-store",
                r.name
            )))
        }
        _ => None,
    };
    let secret_store = secret_store
        .map(|(s, key)| SecretStore::parse(s, key))
        .transpose()
        .map_err(CliError::usage)?;
    let replace = Replace {
        force: false,
        bmc_secrets,
        secret_store,
        also: Also::default(),
    };
    let provenance = Provenance::new(names, &loaded.sources);
    let beside = std::env::temp_dir().join("nodenet-manifests");
    let scratch = nodenet_model::scratch::dir_beside(&beside, nodenet_model::scratch::Kind::Render)
        .map_err(|e| CliError::io(std::env::temp_dir().display().to_string(), e))?;
    // Not in the scratch itself: render locks the directory it writes in,
    // and the scratch's own lock would hold it off.
    let work = scratch.path().join("render");
    std::fs::create_dir(&work).map_err(|e| CliError::io(work.display().to_string(), e))?;
    let out = work.join("out");
    let mut phases = Phases::start();
    let written =
        super::render::render_loaded(&mut loaded, &out, &provenance, replace, &mut phases)?;
    let (objects, diags) = match written {
        Ok(w) => {
            let objects = nodenet_render::gitops::objects(&out, &w.manifest)
                .map_err(|e| CliError::io(out.display().to_string(), e))?;
            (Some(objects), w.diags)
        }
        Err(diags) => (None, diags),
    };
    Ok((objects, loaded.sources, diags))
}

fn bmc_form(form: &str) -> Result<BmcSecrets, CliError> {
    BmcSecrets::parse(form).ok_or_else(|| {
        CliError::usage(format!(
            "BMC Secrets `{form}`: one of {}",
            inventory_resource::BMC_SECRETS.join(", ")
        ))
    })
}
