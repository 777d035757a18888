//! `nodenet lab up|verify|status|console|down`: a small copy of the
//! cluster's network on this machine (crates/lab).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use nodenet_lab::state::{self, LabState, NodeFiles, REHEARSE_JSON, REPORT_HTML, REPORT_JSON};
use nodenet_lab::{report, switch, topology, LabError};

use super::{CliError, Exit, Outcome};
use crate::report::Format;
use crate::ui::info;

#[derive(clap::Subcommand)]
pub enum LabCommand {
    /// Build and boot the lab: a VM per host (its NICs, names, MACs and
    /// rendered keyfiles), a switch with the inventory's VLANs, MTUs, LACP,
    /// LLDP names, gateways, DHCP and DNS; a Redfish BMC per host
    /// (sushy-tools) and an image server for `nodenet provision --lab`.
    Up(UpArgs),
    /// Check that the network works: the live state is the intent, bonds
    /// aggregate, DHCP leases, LLDP neighbours, pings, jumbo frames, every
    /// VLAN between every pair of nodes. Writes report.html and report.json.
    Verify(VerifyArgs),
    /// Day 2 in the lab, rolled out as the plan writes it: ROLLOUT.md's
    /// steps in order, each policy through `nodenet apply` on the nodes
    /// it selects, maxUnavailable at a time, while the switch measures
    /// the connectivity each loses. Writes rehearse.json.
    Rehearse(RehearseArgs),
    /// The lab's VMs: running, ready.
    Status(DirArgs),
    /// A root shell on a VM's serial console (Ctrl-D leaves it).
    Console(ConsoleArgs),
    /// Stop every VM of the lab and remove its files.
    Down(DirArgs),
    /// Build the lab's VM image now (debootstrap and the machine's kernel,
    /// a few minutes, once), so that the first `lab up` boots at once;
    /// prints the kernel, initramfs and root filesystem it will boot.
    Image(ImageArgs),
    /// The machine side of the lab's BMCs (`lab up` starts it): power and
    /// virtual media turned into VM boots.
    #[command(hide = true)]
    Machines(DirArgs),
}

#[derive(clap::Args)]
pub struct DirArgs {
    /// The lab's directory [default: $XDG_CACHE_HOME/nodenet/lab].
    #[arg(long)]
    dir: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct ImageArgs {
    /// Where the lab image is built and kept [default: $NODENET_LAB_CACHE, else $XDG_CACHE_HOME/nodenet/lab-image].
    #[arg(long)]
    image_cache: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct UpArgs {
    /// The inventory (any single-cluster input `check` reads).
    inventory: PathBuf,
    #[command(flatten)]
    dir: DirArgs,
    /// Only these hosts (comma-separated names).
    #[arg(long, value_delimiter = ',')]
    hosts: Vec<String>,
    /// Only the first N hosts of each shape (role, NICs, interface types).
    #[arg(long)]
    per_shape: Option<usize>,
    /// Where the lab image is built and kept [default: $NODENET_LAB_CACHE, else $XDG_CACHE_HOME/nodenet/lab-image].
    #[arg(long)]
    image_cache: Option<PathBuf>,
    /// How long the VMs may take to boot, in seconds.
    #[arg(long, default_value_t = 300)]
    timeout: u64,
    /// The nodes' NIC names: the inventory's (given by MAC before anything
    /// starts), or the kernel's (eth0, eth1, ... as another boot medium
    /// would name them), to see which profiles still find their NICs.
    #[arg(long, value_enum, default_value_t = NicNames::Inventory)]
    nic_names: NicNames,
    /// Build even when check finds errors, to watch the failures they
    /// predict (a host whose state nmstate rejects still cannot be built).
    #[arg(long)]
    allow_errors: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum NicNames {
    Inventory,
    Kernel,
}

#[derive(clap::Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    dir: DirArgs,
    /// How long VMs still booting (after `provision --lab`) may take, in seconds.
    #[arg(long, default_value_t = 300)]
    timeout: u64,
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

#[derive(clap::Args)]
pub struct RehearseArgs {
    /// The inventory the lab runs (as `lab up` was given it).
    old: PathBuf,
    /// The new version of it.
    new: PathBuf,
    #[command(flatten)]
    dir: DirArgs,
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

#[derive(clap::Args)]
pub struct ConsoleArgs {
    /// The VM (a host's name, or `switch`).
    vm: String,
    #[command(flatten)]
    dir: DirArgs,
}

fn dir(d: &DirArgs) -> PathBuf {
    let p = d.dir.clone().unwrap_or_else(state::default_dir);
    p.canonicalize().unwrap_or(p)
}

/// Exit 1 when the inventory asks for what the lab cannot build, else 2.
impl From<LabError> for CliError {
    fn from(e: LabError) -> CliError {
        let exit = match e {
            LabError::Input(_) => super::PROBLEMS,
            _ => super::USAGE,
        };
        CliError::usage(e).code("lab").exit(exit)
    }
}

/// One cluster's inventory, loaded and checked. With errors, they are
/// printed and it is refused (exit 1) unless `allow_errors` is
/// `Some(true)`, for the lab to show what they do (`None`: the command has
/// no `--allow-errors`).
fn load_checked(
    path: &PathBuf,
    command: &str,
    allow_errors: Option<bool>,
) -> Result<(nodenet_model::Loaded, nodenet_check::Report), CliError> {
    let loaded = super::load_files(std::slice::from_ref(path))?;
    super::one_cluster(&loaded, command)?;
    let checked = nodenet_check::check(&loaded.inventory, loaded.diagnostics.clone());
    if checked.has_errors() {
        if allow_errors != Some(true) {
            let message = format!(
                "{} has errors; `nodenet {command}` takes only what check accepts{}",
                path.display(),
                if allow_errors.is_some() {
                    " (--allow-errors to watch them fail)"
                } else {
                    ""
                }
            );
            return Err(CliError::input("check-failed", message)
                .with_findings(loaded.sources, checked.diagnostics));
        }
        crate::report::print(&loaded.sources, &checked.diagnostics, Format::Human);
        info!("note: building despite the errors above (--allow-errors)");
    }
    Ok((loaded, checked))
}

pub fn run(cmd: LabCommand) -> Outcome {
    match cmd {
        LabCommand::Up(a) => up(a),
        LabCommand::Verify(a) => verify(a),
        LabCommand::Rehearse(a) => rehearse(a),
        LabCommand::Status(a) => status(&dir(&a)),
        LabCommand::Machines(a) => {
            // What the lab's BMCs did, a line each, as it happens.
            nodenet_lab::bmc::machines(&dir(&a), &|line| {
                println!("{line}");
                let _ = std::io::stdout().flush();
            })?;
            Ok(Exit::Success)
        }
        LabCommand::Console(a) => console(&dir(&a.dir), &a.vm),
        LabCommand::Down(a) => {
            let stopped = state::down(&dir(&a))?;
            println!("stopped {}: {}", stopped.len(), stopped.join(", "));
            Ok(Exit::Success)
        }
        LabCommand::Image(a) => image(a.image_cache),
    }
}

/// The lab image in `cache` (the default one when `None`), built when
/// missing.
fn lab_image(cache: Option<PathBuf>) -> Result<nodenet_lab::Image, LabError> {
    let cache = cache.unwrap_or_else(state::default_image_cache);
    info!(
        "lab image in {} (built once: debootstrap and a kernel, a few minutes)",
        cache.display()
    );
    nodenet_lab::image(&cache)
}

fn image(cache: Option<PathBuf>) -> Outcome {
    let img = lab_image(cache)?;
    println!("kernel {}", img.kernel.display());
    println!("initramfs {}", img.initrd.display());
    println!("root filesystem {}", img.rootfs.display());
    Ok(Exit::Success)
}

fn up(a: UpArgs) -> Outcome {
    // The lab builds what check accepts, from what render writes.
    let (loaded, checked) = load_checked(&a.inventory, "lab up", Some(a.allow_errors))?;
    let inv = &loaded.inventory;
    let chosen = topology::choose(inv, &a.hosts, a.per_shape)?;
    let mut topo = topology::plan(inv, &chosen)?;
    if a.nic_names == NicNames::Kernel {
        topo.kernel_nic_names = true;
        topo.notes.push("NICs named by the kernel (--nic-names kernel): profiles bound by name find only NICs the kernel happens to name alike; LLDP and VLAN checks of `lab verify` look for the inventory's names".into());
    }
    let me = std::env::current_exe()
        .map_err(|e| CliError::usage(format!("finding nodenet's own binary: {e}")))?;
    let mut files: Vec<NodeFiles> = Vec::new();
    for node in &topo.nodes {
        let i = inv
            .hosts
            .iter()
            .position(|h| h.name.value == node.name)
            .expect("chosen from the inventory");
        let hr = &checked.hosts[i];
        if inv.hosts[i].network.is_some() && hr.keyfiles.is_none() {
            return Err(LabError::Input(format!(
                "{}: nmstate rejects its state, so it has no keyfiles to boot with",
                node.name
            ))
            .into());
        }
        let mut f: NodeFiles = Vec::new();
        for (name, content) in hr.keyfiles.iter().flatten() {
            f.push((
                format!("keyfiles/{name}"),
                content.clone().into_bytes(),
                0o600,
            ));
        }
        // Pinned NIC names (`nicBinding: pin`): lab-init puts them where
        // udev reads them before it names the NICs.
        for link in nodenet_render::artifacts::pinned_names(&inv.hosts[i], &inv.cluster) {
            f.push((
                format!("links/{}", link.file_name),
                link.text.into_bytes(),
                0o644,
            ));
        }
        let state = hr
            .pinned_state
            .clone()
            .or_else(|| inv.hosts[i].network.as_ref().map(|n| n.to_json()));
        if let Some(s) = state {
            f.push((
                "nmstate.yml".into(),
                serde_json::to_vec_pretty(&s).expect("state serialises"),
                0o644,
            ));
        }
        files.push(f);
    }
    let script = switch::script(&topo);
    let started = std::time::Instant::now();
    let img = lab_image(a.image_cache.clone())?;
    let image_s = started.elapsed().as_secs_f64();
    let d = a.dir.dir.clone().unwrap_or_else(state::default_dir);
    let inventory = a.inventory.canonicalize().unwrap_or(a.inventory.clone());
    info!(
        "starting {} node VM(s) and the switch in {}",
        topo.nodes.len(),
        d.display()
    );
    let mut st = state::up(
        &img,
        &inventory,
        topo,
        &files,
        &me,
        &script,
        &d,
        Duration::from_secs(a.timeout),
    )?;
    let vms_s = started.elapsed().as_secs_f64() - image_s;
    let d = d.canonicalize().unwrap_or(d);
    match nodenet_lab::bmc::sushy() {
        Some(sushy) => {
            info!("starting a BMC per host ({}), the image server and the live ISO", sushy.display());
            let started = nodenet_lab::bmc::start(&st, &d, inv, &me, &sushy).and_then(|b| {
                st.bmc = Some(b);
                st.save(&d)
            });
            if let Err(e) = started {
                let _ = state::down(&d);
                return Err(e.into());
            }
        }
        None => info!(
            "note: no BMCs: sushy-emulator not found (install sushy-tools, or set NODENET_SUSHY); `nodenet provision --lab` needs them"
        ),
    }
    print_topology(&st);
    println!(
        "lab up took {:.1} s: image {image_s:.1} s, VMs started and ready {vms_s:.1} s, BMCs and image server {:.1} s",
        started.elapsed().as_secs_f64(),
        started.elapsed().as_secs_f64() - image_s - vms_s
    );
    println!(
        "lab up: {} VM(s) ({}); next: nodenet lab verify --dir {}",
        st.vms.len(),
        st.accel,
        d.display()
    );
    Ok(Exit::Success)
}

fn print_topology(st: &LabState) {
    let t = &st.topology;
    for n in &t.nodes {
        for nic in &n.nics {
            let p = t.ports.iter().find(|p| p.name == nic.port);
            println!(
                "{} {} {} -> {} {}{}{}",
                n.name,
                nic.name,
                nic.mac,
                t.switch,
                p.and_then(|p| p.label.clone()).unwrap_or(nic.port.clone()),
                p.map(|p| format!(" native {} tagged {:?} mtu {}", p.native, p.vlans, p.mtu))
                    .unwrap_or_default(),
                p.and_then(|p| p.lacp.as_ref())
                    .map(|b| format!(" lacp {b}"))
                    .unwrap_or_default()
            );
        }
    }
    for s in &t.segments {
        println!(
            "vlan {} {} gateway {}{}",
            s.vlan,
            s.network,
            s.gateway,
            s.dhcp
                .map(|(a, b)| format!(" dhcp {a}-{b}"))
                .unwrap_or_default()
        );
    }
    if let Some(b) = &st.bmc {
        for s in &b.systems {
            println!(
                "bmc {} {}{}",
                s.host,
                b.system_url(s),
                s.inventory_address
                    .as_ref()
                    .map(|a| format!(" (stands in for {a})"))
                    .unwrap_or_default()
            );
        }
        println!(
            "images {} (serving {})",
            b.image_url,
            nodenet_lab::bmc::IMAGES_DIR
        );
    }
    for n in &t.notes {
        info!("note: {n}");
    }
}

fn verify(a: VerifyArgs) -> Outcome {
    let d = dir(&a.dir);
    // VMs their BMC is booting again (`provision --lab`) are waited for.
    let waited = std::time::Instant::now();
    let st = state::wait_ready(&d, Duration::from_secs(a.timeout))?;
    if waited.elapsed() > Duration::from_secs(1) {
        info!(
            "waited {:.1} s for VMs still booting",
            waited.elapsed().as_secs_f64()
        );
    }
    let loaded = super::load_files(std::slice::from_ref(&st.inventory))?;
    let rep = nodenet_lab::verify::verify(&st, &d, &loaded.inventory)?;
    let json = serde_json::to_vec_pretty(&rep).expect("report serialises");
    for (name, data) in [
        (REPORT_JSON, json.clone()),
        (REPORT_HTML, report::html(&rep, &st.topology).into_bytes()),
    ] {
        nodenet_model::write_atomic(&d.join(name), &data)
            .map_err(|e| CliError::io(d.join(name).display().to_string(), e))?;
    }
    match a.format {
        Format::Json => println!("{}", String::from_utf8_lossy(&json)),
        Format::Human => {
            print!("{}", report::text(&rep));
            println!("report: {}", d.join(REPORT_HTML).display());
        }
    }
    Ok(Exit::problems_if(!rep.ok()))
}

fn status(d: &Path) -> Outcome {
    let (st, rows) = state::status(d)?;
    println!(
        "lab in {} from {} ({})",
        d.display(),
        st.inventory.display(),
        st.accel
    );
    for (v, running, ready) in &rows {
        println!(
            "{:<20} {:<7} pid {:<8} {:<8} {}",
            v.name,
            v.role,
            v.pid,
            match (running, ready) {
                (false, _) => "stopped",
                (true, false) => "booting",
                (true, true) => "ready",
            },
            state::rss_mib(v.pid)
                .filter(|_| *running)
                .map(|m| format!("{m} MiB resident"))
                .unwrap_or_default()
        );
    }
    if let Some(b) = &st.bmc {
        for (what, pid) in b.processes() {
            println!(
                "{what:<20} {:<7} pid {pid:<8} {}",
                "",
                if state::running(pid, d) {
                    "running"
                } else {
                    "stopped"
                }
            );
        }
        for s in &b.systems {
            println!("bmc {:<16} {}", s.host, b.system_url(s));
        }
        println!("images {}", b.image_url);
    }
    Ok(Exit::problems_if(
        !rows.iter().all(|(_, running, _)| *running),
    ))
}

fn console(d: &Path, vm: &str) -> Outcome {
    let st = LabState::load(d)?;
    if !st.vms.iter().any(|v| v.name == vm) {
        return Err(LabError::Input(format!(
            "no VM `{vm}` in the lab (it has {})",
            st.vms
                .iter()
                .map(|v| v.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .into());
    }
    let sock = d.join(format!("{vm}-serial.sock"));
    let mut stream = std::os::unix::net::UnixStream::connect(&sock)
        .map_err(|e| CliError::io(sock.display().to_string(), e))?;
    info!("{vm}'s console (Ctrl-D leaves it; the VM keeps running)");
    let mut out = stream.try_clone().expect("socket clone");
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        let mut stdout = std::io::stdout();
        while let Ok(n) = out.read(&mut buf) {
            if n == 0 || stdout.write_all(&buf[..n]).is_err() {
                break;
            }
            let _ = stdout.flush();
        }
    });
    let _ = stream.write_all(b"\n");
    let _ = std::io::copy(&mut std::io::stdin(), &mut stream);
    Ok(Exit::Success)
}

fn rehearse(a: RehearseArgs) -> Outcome {
    let d = dir(&a.dir);
    let mut st = LabState::load(&d)?;
    let load = |p: &PathBuf| load_checked(p, "lab rehearse", None).map(|(l, _)| l);
    let (old, new) = (load(&a.old)?, load(&a.new)?);
    let names = (a.old.display().to_string(), a.new.display().to_string());
    let r = nodenet_lab::rehearse::rehearse(
        &st,
        &d,
        &old.inventory,
        &new.inventory,
        (&names.0, &names.1),
    )?;
    // The lab now runs the new inventory: `lab verify` checks that.
    if let Some(t) = &r.topology {
        st.topology = t.clone();
        st.inventory = a.new.canonicalize().unwrap_or(a.new.clone());
        st.save(&d)?;
    }
    let json = serde_json::to_vec_pretty(&r).expect("rehearsal serialises");
    nodenet_model::write_atomic(&d.join(REHEARSE_JSON), &json)
        .map_err(|e| CliError::io(d.join(REHEARSE_JSON).display().to_string(), e))?;
    match a.format {
        Format::Json => println!("{}", String::from_utf8_lossy(&json)),
        Format::Human => print!("{}", nodenet_lab::rehearse::text(&r)),
    }
    Ok(Exit::problems_if(!r.ok()))
}
