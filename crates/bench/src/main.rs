//! `nodenet-bench`: generates inputs of several shapes (`shapes.rs`), times
//! `nodenet check` and `nodenet render` on it (whole processes, to disk),
//! then runs `nmstatectl gc` on a sample of the same hosts, one process per
//! host, and prints both per-host costs and their ratio.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Parser;

mod gitops;
mod netbox;
mod shapes;

use shapes::Shape;

#[derive(Parser)]
struct Args {
    /// Hosts of the headline run of every input shape.
    #[arg(long, default_value_t = 10_000)]
    hosts: usize,
    /// Sizes of the scaling series run before it (the time ratio per
    /// doubling shows growth worse than linear).
    #[arg(long, value_delimiter = ',', default_value = "1000,2000,4000,8000")]
    series: Vec<usize>,
    /// Input shapes to run (default all): template, template-dhcp,
    /// install-config, agent-config, manifests, sites, sites-template,
    /// network-data, netplan, metal3.
    #[arg(long, value_delimiter = ',')]
    shapes: Vec<String>,
    /// Also render the headline runs into this directory (another file
    /// system, e.g. the disk when --dir is on tmpfs).
    #[arg(long)]
    disk_dir: Option<PathBuf>,
    /// Hosts given to nmstatectl, one process each.
    #[arg(long, default_value_t = 200)]
    sample: usize,
    /// Repetitions of check and render (the best run is reported).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Size of the live ISO for the in-place embed benchmark (0 skips it).
    #[arg(long, default_value_t = 1024)]
    iso_mib: u64,
    /// Size of the disk image for the qcow2.gz benchmark (0 skips it).
    #[arg(long, default_value_t = 2048)]
    disk_mib: u64,
    /// Skip the check/render/import benchmarks (boot media only).
    #[arg(long)]
    media_only: bool,
    /// Keep the plan series' inputs and outputs (to profile them).
    #[arg(long)]
    keep: bool,
    /// Only the `nodenet plan` series.
    #[arg(long)]
    plan_only: bool,
    /// Keyfiles for the import benchmark (0 skips it).
    #[arg(long, default_value_t = 10_000)]
    import_files: usize,
    /// nodenet binary (default: beside this one).
    #[arg(long)]
    nodenet: Option<PathBuf>,
    #[arg(long, default_value = "nmstatectl")]
    nmstatectl: String,
    /// Work directory (default: a temporary one).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Fail (exit 1) when a shape's check+render at the headline size
    /// takes more than this many times writing its files alone, measured
    /// in the same run (CI's guard against drift: a ratio, not a time):
    /// `R` for every shape, or `R,SHAPE=R2,...` with limits of their own
    /// for some (`4.5,template=3.5`).
    #[arg(long, value_parser = FloorLimits::parse)]
    max_floor_ratio: Option<FloorLimits>,
    /// Only NetBox: clusters of these many devices in the NetBox of
    /// NETBOX_URL/NETBOX_TOKEN (filled once, kept), read over REST by
    /// `nodenet check` and over GraphQL.
    #[arg(long, value_delimiter = ',')]
    netbox: Vec<usize>,
    /// Only GitOps: fleet repositories of these many single-node sites
    /// built by `kubectl kustomize` through nodenet's generator, beside
    /// `nodenet render` of the same inventories; the KRM function's cost.
    #[arg(long, value_delimiter = ',')]
    gitops: Vec<usize>,
}

/// Runs a command to completion, returning wall seconds.
fn timed(cmd: &mut Command) -> Result<f64> {
    Ok(run(cmd)?.0)
}

/// Runs a command to completion: wall seconds and its peak RSS in MiB.
fn run(cmd: &mut Command) -> Result<(f64, f64)> {
    run_exiting(cmd, &[0])
}

/// As `run`, for a command whose exit code is one of `codes`.
fn run_exiting(cmd: &mut Command, codes: &[i32]) -> Result<(f64, f64)> {
    let start = Instant::now();
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("{cmd:?}"))?;
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child, writing into values we own.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    let secs = start.elapsed().as_secs_f64();
    if pid < 0 || !libc::WIFEXITED(status) || !codes.contains(&libc::WEXITSTATUS(status)) {
        bail!("{cmd:?} failed: status {status}");
    }
    Ok((secs, usage.ru_maxrss as f64 / 1024.0))
}

fn best(runs: usize, mut f: impl FnMut() -> Result<f64>) -> Result<f64> {
    let mut best = f64::MAX;
    for _ in 0..runs.max(1) {
        best = best.min(f()?);
    }
    Ok(best)
}

fn main() -> Result<()> {
    let args = Args::parse();
    let nodenet = match args.nodenet.clone() {
        Some(p) => p,
        None => std::env::current_exe()?.with_file_name("nodenet"),
    };
    let tmp = tempfile::tempdir()?;
    let dir = args.dir.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&dir)?;
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    println!(
        "nodenet-bench: {} hosts, {} cores, output under {}",
        args.hosts,
        cores,
        dir.display()
    );

    if args.plan_only {
        return plan(&args, &nodenet, &dir);
    }
    if !args.netbox.is_empty() {
        return netbox::run(&nodenet, &args.netbox, args.runs);
    }
    if !args.gitops.is_empty() {
        return gitops::run(&nodenet, &args.gitops, args.runs, &dir);
    }
    if !args.media_only {
        let over = render_and_import(&args, &nodenet, &dir)?;
        if !over.is_empty() {
            bail!(
                "check+render past its limit of times writing the files alone: {}",
                over.join(", ")
            );
        }
        plan(&args, &nodenet, &dir)?;
    }
    media(&args, &nodenet, &dir)?;
    Ok(())
}

/// `--max-floor-ratio`: a limit for every shape, and some shapes' own.
#[derive(Clone, Debug, PartialEq)]
struct FloorLimits {
    every: Option<f64>,
    shapes: Vec<(String, f64)>,
}

impl FloorLimits {
    /// `R`, `SHAPE=R` or both, comma-separated (`4.5,template=3.5`).
    fn parse(text: &str) -> Result<FloorLimits, String> {
        let mut limits = FloorLimits {
            every: None,
            shapes: Vec::new(),
        };
        let ratio = |r: &str| match r.trim().parse::<f64>() {
            Ok(r) if r > 0.0 => Ok(r),
            _ => Err(format!("`{r}` is no ratio above 0")),
        };
        for part in text.split(',') {
            match part.split_once('=') {
                Some((shape, r)) => {
                    let shape = shape.trim();
                    if !Shape::ALL.iter().any(|s| s.key() == shape) {
                        return Err(format!("no shape `{shape}`"));
                    }
                    limits.shapes.push((shape.to_string(), ratio(r)?));
                }
                None => limits.every = Some(ratio(part)?),
            }
        }
        Ok(limits)
    }

    /// The limit for the shape called `key`.
    fn of(&self, key: &str) -> Option<f64> {
        self.shapes
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, r)| *r)
            .or(self.every)
    }
}

fn sh(cmd: &str) -> Result<f64> {
    timed(Command::new("sh").arg("-c").arg(cmd))
}

/// Boot media: in-place ISO embed vs `coreos-installer iso network embed`
/// on the same file; a qcow2.gz through nodenet vs the seed pipeline vs
/// pigz alone.
fn media(args: &Args, nodenet: &Path, dir: &Path) -> Result<()> {
    let kf = dir.join("bond0.nmconnection");
    std::fs::write(&kf, "[connection]\nid=bond0\ntype=bond\ninterface-name=bond0\n\n[bond]\nmode=802.3ad\nmiimon=1\n")?;
    let nn = nodenet.display();
    let kfs = kf.display();
    if args.iso_mib > 0 {
        let tree = dir.join("iso-tree");
        std::fs::create_dir_all(tree.join("images"))?;
        std::fs::create_dir_all(tree.join("coreos"))?;
        std::fs::write(tree.join("images/ignition.img"), vec![0u8; 256 * 1024])?;
        std::fs::write(
            tree.join("coreos/features.json"),
            "{\"live-initrd-network\": true}\n",
        )?;
        let iso = dir.join("live.iso");
        sh(&format!(
            "head -c {}M /dev/zero > '{t}/images/rootfs.img' && xorriso -as mkisofs -V COREOS -rational-rock -J -joliet-long -o '{i}' '{t}' 2>/dev/null",
            args.iso_mib,
            t = tree.display(),
            i = iso.display()
        ))?;
        let ours = best(args.runs, || {
            sh(&format!(
                "'{nn}' image iso --in-place --keyfile '{kfs}' '{}'",
                iso.display()
            ))
        })?;
        let peer = best(args.runs, || {
            sh(&format!(
                "coreos-installer iso network embed -f -k '{kfs}' '{}'",
                iso.display()
            ))
        })?;
        println!(
            "iso embed in place ({} MiB ISO): nodenet {:.3} s, coreos-installer {:.3} s",
            args.iso_mib, ours, peer
        );
    }
    if args.disk_mib > 0 {
        let raw = dir.join("disk.raw");
        let d = dir.display();
        // GPT: bios, boot (ext4 384 MiB, label boot), root filled with
        // compressible text so gzip has work like on a real image.
        sh(&format!(
            "rm -f '{d}'/disk* && truncate -s {m}M '{r}' && sgdisk -o -n 1:2048:+1M -c 1:bios -n 2:0:+384M -c 2:boot -n 3:0:0 -c 3:root '{r}' >/dev/null \
             && mkfs.ext4 -q -F -L boot '{d}/boot.img' 384M && dd if='{d}/boot.img' of='{r}' bs=1M seek=2 conv=notrunc status=none \
             && (seq 1 100000000 | head -c {root}M) | dd of='{r}' bs=1M seek=386 conv=notrunc status=none \
             && qemu-img convert -O qcow2 '{r}' '{d}/disk.qcow2' && pigz -k '{d}/disk.qcow2'",
            m = args.disk_mib,
            r = raw.display(),
            root = args.disk_mib - 390,
        ))?;
        let gz = dir.join("disk.qcow2.gz");
        let ours = best(args.runs, || {
            sh(&format!(
                "'{nn}' image disk --keyfile '{kfs}' '{}' -o '{d}/ours.qcow2.gz' >/dev/null",
                gz.display()
            ))
        })?;
        let seed = best(args.runs, || {
            sh(&format!(
                "cd '{d}' && rm -f s.qcow2 s.raw && pigz -dc disk.qcow2.gz > s.qcow2 && qemu-img convert -O raw s.qcow2 s.raw \
                 && printf 'mkdir /coreos-firstboot-network\nwrite {kfs} /coreos-firstboot-network/bond0.nmconnection\n' > cmds \
                 && debugfs -w -f cmds 's.raw?offset=2097152' >/dev/null 2>&1 && qemu-img convert -O qcow2 s.raw s2.qcow2 \
                 && pigz -c s2.qcow2 > seed.qcow2.gz && sha256sum seed.qcow2.gz >/dev/null"
            ))
        })?;
        let pigz = best(args.runs, || {
            sh(&format!("pigz -dc '{}' | pigz > /dev/null", gz.display()))
        })?;
        println!(
            "disk qcow2.gz ({} MiB): nodenet {ours:.2} s, seed pipeline {seed:.2} s ({:.2}x), pigz -dc | pigz alone {pigz:.2} s (nodenet/pigz {:.2})",
            args.disk_mib,
            seed / ours,
            ours / pigz
        );
    }
    Ok(())
}

/// Best check and check+render of one input, the render's peak RSS and
/// how many files it wrote.
struct Measured {
    check: f64,
    render: f64,
    rss: f64,
    files: usize,
}

fn measure(nodenet: &Path, inputs: &[PathBuf], out: &Path, runs: usize) -> Result<Measured> {
    let check = best(runs, || {
        timed(nodenet_cmd(nodenet).arg("check").args(inputs))
    })?;
    let mut rss: f64 = 0.0;
    // Each run writes a fresh tree (removing the previous one is not part
    // of producing the artifacts, and on ext4 costs as much again).
    let render = best(runs, || {
        if out.exists() {
            std::fs::remove_dir_all(out)?;
        }
        let (secs, peak) = run(nodenet_cmd(nodenet)
            .arg("render")
            .args(inputs)
            .arg("-o")
            .arg(out))?;
        rss = rss.max(peak);
        Ok(secs)
    })?;
    Ok(Measured {
        check,
        render,
        rss,
        files: count_files(out)?,
    })
}

/// One `nmstatectl gc` process per host on a sample of the rendered
/// hosts' `nmstate.yml`: seconds per host, and the sample's size.
fn nmstatectl_per_host(args: &Args, out: &Path) -> Result<(f64, usize)> {
    let list = |d: &Path| -> Result<Vec<PathBuf>> {
        Ok(std::fs::read_dir(d)?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()?)
    };
    // A cluster's hosts, or a fleet's (`sites/<cluster>/hosts/`).
    let mut hosts = Vec::new();
    if out.join("sites").exists() {
        for site in list(&out.join("sites"))? {
            hosts.extend(list(&site.join("hosts"))?);
        }
    } else {
        hosts = list(&out.join("hosts"))?;
    }
    hosts.sort();
    let step = (hosts.len() / args.sample.max(1)).max(1);
    let sample: Vec<&PathBuf> = hosts.iter().step_by(step).take(args.sample).collect();
    let start = Instant::now();
    for h in &sample {
        timed(Command::new(&args.nmstatectl).arg("gc").arg(h.join("nmstate.yml")))
            .context("nmstatectl gc (install: cargo install nmstatectl --version 2.2.62 --locked --no-default-features --features gen_conf)")?;
    }
    Ok((
        start.elapsed().as_secs_f64() / sample.len() as f64,
        sample.len(),
    ))
}

/// Every input shape: a scaling series (check and check+render, the time
/// ratio per doubling), then the headline size with its files written
/// alone (the floor) and nmstatectl per host beside it; then import.
/// Returns the shapes past `--max-floor-ratio`, with their ratio.
fn render_and_import(args: &Args, nodenet: &Path, dir: &Path) -> Result<Vec<String>> {
    let mut over = Vec::new();
    let shapes: Vec<Shape> = Shape::ALL
        .into_iter()
        .filter(|s| args.shapes.is_empty() || args.shapes.iter().any(|k| k == s.key()))
        .collect();
    for shape in shapes {
        println!("\n{} ({}):", shape.label(), shape.key());
        println!(
            "  {:>7}  {:>9}  {:>14}  {:>9}  {:>10}  {:>8}",
            "hosts", "check s", "check+render s", "hosts/s", "x/doubling", "RSS MiB"
        );
        let mut previous: Option<f64> = None;
        let mut sizes = args.series.clone();
        sizes.push(args.hosts);
        for (k, &n) in sizes.iter().enumerate() {
            let headline = k == sizes.len() - 1;
            let inputs =
                shape.write(n, &dir.join("inputs").join(format!("{}-{n}", shape.key())))?;
            let out = dir.join(format!("out-{}-{n}", shape.key()));
            let m = measure(nodenet, &inputs, &out, args.runs)?;
            let doubling = per_doubling(previous, m.render, headline);
            println!(
                "  {n:>7}  {:>9.3}  {:>14.3}  {:>9.0}  {doubling:>10}  {:>8.0}{}",
                m.check,
                m.render,
                n as f64 / m.render,
                m.rss,
                if headline {
                    format!("  ({} files)", m.files)
                } else {
                    String::new()
                }
            );
            if !headline {
                previous = Some(m.render);
                std::fs::remove_dir_all(&out)?;
                continue;
            }
            // What etcd is asked to hold (a fleet's sites: on their hubs).
            if !matches!(shape, Shape::Sites | Shape::SitesTemplate) {
                let limits = etcd_limits(&out)?;
                println!("  {limits}");
            }
            // What writing this render's files costs with nothing else to
            // do: the floor under any check+render of this shape.
            let (floor, files) = write_floor(&out, &dir.join("floor"), args.runs)?;
            let ratio = m.render / floor;
            let limit = args
                .max_floor_ratio
                .as_ref()
                .and_then(|l| l.of(shape.key()));
            println!(
                "  files alone: {floor:.3} s ({files} files of this render written again from memory on every core, nothing else): check+render is {ratio:.2}x that{}",
                match limit {
                    Some(limit) if ratio > limit => format!(", past the limit of {limit}x"),
                    Some(limit) => format!(", within the limit of {limit}x"),
                    None => String::new(),
                }
            );
            if let Some(limit) = limit.filter(|&limit| ratio > limit) {
                over.push(format!("{} {ratio:.2}x (limit {limit}x)", shape.key()));
            }
            if shape != Shape::TemplateDhcp {
                let (peer, sampled) = nmstatectl_per_host(args, &out)?;
                let ours = m.render / n as f64;
                println!(
                    "  nmstatectl gc {:.3} ms/host (sample of {sampled}, one process each), nodenet check+render {:.3} ms/host: {:.1}x (writing the files alone: {:.1}x)",
                    peer * 1e3,
                    ours * 1e3,
                    peer / ours,
                    peer / (floor / n as f64)
                );
            }
            if let Some(disk) = &args.disk_dir {
                std::fs::create_dir_all(disk)?;
                let on_disk = disk.join(format!("out-{}-{n}", shape.key()));
                let d = measure(nodenet, &inputs, &on_disk, args.runs)?;
                println!(
                    "  to {}: check+render {:.3} s, {:.0} hosts/s",
                    disk.display(),
                    d.render,
                    n as f64 / d.render
                );
                std::fs::remove_dir_all(on_disk)?;
            }
        }
    }

    if args.import_files > 0 {
        let kdir = dir.join("keyfiles");
        if kdir.exists() {
            std::fs::remove_dir_all(&kdir)?;
        }
        write_keyfiles(&kdir, args.import_files)?;
        let t = best(args.runs, || {
            timed(nodenet_cmd(nodenet).arg("import").arg(&kdir))
        })?;
        println!(
            "import:         {t:8.3} s  {:>10.0} files/s  ({} keyfiles, one directory, one NMState document)",
            args.import_files as f64 / t,
            args.import_files
        );
    }
    Ok(over)
}

/// `nodenet plan OLD NEW -o DIR` where NEW changes the MTU of every host
/// (a disruptive change everywhere: no host is left out of the diff), on
/// the template and the host-by-host install-config; beside it `nodenet
/// check NEW` alone (what any plan must do at least), and, at the
/// headline size, OLD given as the output directory of a render.
fn plan(args: &Args, nodenet: &Path, dir: &Path) -> Result<()> {
    for shape in [Shape::Template, Shape::InstallConfig] {
        if !args.shapes.is_empty() && !args.shapes.iter().any(|k| k == shape.key()) {
            continue;
        }
        println!("\nplan, every host's MTU changed ({}):", shape.key());
        let running = shape == Shape::Template;
        println!(
            "  {:>7}  {:>8}  {:>11}  {:>9}  {:>10}  {:>8}{}",
            "hosts",
            "plan s",
            "check NEW s",
            "hosts/s",
            "x/doubling",
            "RSS MiB",
            if running {
                "  --running s  x/doubling"
            } else {
                ""
            }
        );
        let mut previous_running: Option<f64> = None;
        let mut previous: Option<f64> = None;
        let mut sizes = args.series.clone();
        sizes.push(args.hosts);
        for (k, &n) in sizes.iter().enumerate() {
            let headline = k == sizes.len() - 1;
            let base = dir.join("plan").join(format!("{}-{n}", shape.key()));
            let old = shape.write(n, &base.join("old"))?;
            let new = shape.write(n, &base.join("new"))?;
            for f in &new {
                let text = std::fs::read_to_string(f)?;
                std::fs::write(f, text.replace("mtu: 9000", "mtu: 8000"))?;
            }
            let (old, new) = (&old[0], &new[0]);
            let out = base.join("out");
            let rss = std::cell::Cell::new(0.0f64);
            let plan_from = |old: &Path| -> Result<f64> {
                best(args.runs, || {
                    if out.exists() {
                        std::fs::remove_dir_all(&out)?;
                    }
                    let (secs, peak) = run_exiting(
                        nodenet_cmd(nodenet)
                            .arg("plan")
                            .arg(old)
                            .arg(new)
                            .arg("-o")
                            .arg(&out),
                        &[1],
                    )?;
                    rss.set(rss.get().max(peak));
                    Ok(secs)
                })
            };
            let secs = plan_from(old)?;
            let check = best(args.runs, || {
                timed(nodenet_cmd(nodenet).arg("check").arg(new))
            })?;
            let doubling = per_doubling(previous, secs, headline);
            // OLD rendered: what n nodes report comes from it, and at the
            // headline size OLD is also given as this directory.
            let rendered = base.join("rendered");
            if running {
                run(nodenet_cmd(nodenet)
                    .arg("render")
                    .arg(old)
                    .arg("-o")
                    .arg(&rendered))?;
            }
            // Beside OLD, what n nodes report (`oc get nns -o yaml`).
            let with_running = if running {
                let nns = base.join("nns.yaml");
                write_node_network_states(&rendered, &nns)?;
                let secs = best(args.runs, || {
                    Ok(run_exiting(
                        nodenet_cmd(nodenet)
                            .arg("plan")
                            .arg(old)
                            .arg(new)
                            .arg("--running")
                            .arg(&nns),
                        &[1],
                    )?
                    .0)
                })?;
                let doubling = per_doubling(previous_running, secs, headline);
                previous_running = Some(secs);
                format!("  {secs:>11.3}  {doubling:>10}")
            } else {
                String::new()
            };
            println!(
                "  {n:>7}  {secs:>8.3}  {check:>11.3}  {:>9.0}  {doubling:>10}  {:>8.0}{with_running}",
                n as f64 / secs,
                rss.get()
            );
            previous = Some(secs);
            if headline && running {
                let from_render = plan_from(&rendered)?;
                println!("  OLD as a render's output directory: plan {from_render:.3} s");
            }
            if !args.keep {
                std::fs::remove_dir_all(&base)?;
            }
        }
    }
    Ok(())
}

/// A NodeNetworkState List (`oc get nns -o yaml`) for every node of a
/// render, as nodes run when the day-2 engine has done its work: each
/// node's state is render's policies for it (its own and its role's,
/// `nncp/`) merged, with its loopback beside it. Written as JSON, which
/// is YAML too.
fn write_node_network_states(rendered: &Path, out: &Path) -> Result<()> {
    use serde::Deserialize;
    use serde_json::{json, Value as J};
    use std::collections::BTreeMap;
    let mut own: BTreeMap<String, (String, Vec<J>)> = BTreeMap::new();
    let mut shared: Vec<(String, J)> = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(rendered.join("nncp"))?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file)?;
        for doc in serde_yaml::Deserializer::from_str(&text) {
            let doc = J::deserialize(doc)?;
            let selector = &doc["spec"]["nodeSelector"];
            let role = selector
                .as_object()
                .and_then(|m| {
                    m.keys()
                        .find_map(|k| k.strip_prefix("node-role.kubernetes.io/"))
                })
                .unwrap_or_default()
                .to_string();
            let state = doc["spec"]["desiredState"].clone();
            match selector["kubernetes.io/hostname"].as_str() {
                Some(node) => own
                    .entry(node.to_string())
                    .or_insert((role, Vec::new()))
                    .1
                    .push(state),
                None => shared.push((role, state)),
            }
        }
    }
    let items: Vec<J> = own
        .into_iter()
        .map(|(node, (role, parts))| {
            let mut ifaces =
                vec![json!({"name": "lo", "type": "loopback", "state": "up", "mtu": 65536})];
            let mut current = serde_json::Map::new();
            let theirs = shared.iter().filter(|(r, _)| *r == role).map(|(_, s)| s);
            for part in parts.iter().chain(theirs) {
                if let Some(list) = part["interfaces"].as_array() {
                    ifaces.extend(list.iter().cloned());
                }
                for section in ["routes", "dns-resolver"] {
                    if let Some(v) = part.get(section) {
                        current.insert(section.into(), v.clone());
                    }
                }
            }
            current.insert("interfaces".into(), J::Array(ifaces));
            json!({
                "apiVersion": "nmstate.io/v1beta1",
                "kind": "NodeNetworkState",
                "metadata": {"name": node},
                "status": {"currentState": current},
            })
        })
        .collect();
    std::fs::write(
        out,
        serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "List", "items": items}))?,
    )?;
    Ok(())
}

/// The time ratio to the size before (none for the headline size, which
/// is no doubling of it).
fn per_doubling(previous: Option<f64>, secs: f64, headline: bool) -> String {
    match previous {
        Some(p) if !headline => format!("{:.2}", secs / p),
        _ => String::new(),
    }
}

/// `n` keyfiles as people write them: groups of a bond (802.3ad), its
/// two ports (controller by UUID) and a VLAN with a static address.
fn write_keyfiles(dir: &Path, n: usize) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    for i in 0..n {
        let g = i / 4;
        let uuid = format!("00000000-0000-4000-8000-{g:012x}");
        let (name, text) = match i % 4 {
            0 => (
                format!("bond{g}"),
                format!("[connection]\nid=bond{g}\nuuid={uuid}\ntype=bond\ninterface-name=bond{g}\n\n[bond]\nmode=802.3ad\nmiimon=100\n\n[ipv4]\nmethod=disabled\n\n[ipv6]\nmethod=disabled\n"),
            ),
            p @ (1 | 2) => (
                format!("bond{g}-port{p}"),
                format!("[connection]\nid=bond{g}-port{p}\ntype=ethernet\ninterface-name=p{g}n{p}\nmaster={uuid}\nslave-type=bond\n"),
            ),
            _ => (
                format!("bond{g}.100"),
                format!(
                    "[connection]\nid=bond{g}.100\ntype=vlan\ninterface-name=bond{g}.100\n\n[vlan]\nid=100\nparent=bond{g}\n\n[ipv4]\nmethod=manual\naddress1=10.{}.{}.1/24\n\n[ipv6]\nmethod=disabled\n",
                    g / 256 % 256,
                    g % 256
                ),
            ),
        };
        std::fs::write(dir.join(format!("{name}.nmconnection")), text)?;
    }
    Ok(())
}

/// The file system's share of a render: the same files (read back from
/// `out`) created again in `copy` by as many threads as cores, with
/// nothing else to do — what writing them costs on this machine alone.
fn write_floor(out: &Path, copy: &Path, runs: usize) -> Result<(f64, usize)> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    fn collect(dir: &Path, rel: &str, files: &mut Vec<(String, Vec<u8>, u32)>) -> Result<()> {
        for e in std::fs::read_dir(dir)? {
            let e = e?;
            let name = e.file_name().to_string_lossy().into_owned();
            let rel = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            if e.file_type()?.is_dir() {
                collect(&e.path(), &rel, files)?;
            } else {
                let mode = e.metadata()?.permissions().mode() & 0o777;
                files.push((rel, std::fs::read(e.path())?, mode));
            }
        }
        Ok(())
    }
    let mut files = Vec::new();
    collect(out, "", &mut files)?;
    files.sort();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let secs = best(runs, || {
        if copy.exists() {
            std::fs::remove_dir_all(copy)?;
        }
        let start = Instant::now();
        std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads)
                .map(|t| {
                    let files = &files;
                    scope.spawn(move || -> Result<()> {
                        for (rel, content, mode) in files.iter().skip(t).step_by(threads) {
                            let path = copy.join(rel);
                            let open = || {
                                std::fs::OpenOptions::new()
                                    .write(true)
                                    .create_new(true)
                                    .mode(*mode)
                                    .open(&path)
                            };
                            let mut f = match open() {
                                Ok(f) => f,
                                Err(_) => {
                                    std::fs::create_dir_all(path.parent().expect("under copy"))?;
                                    open()?
                                }
                            };
                            std::io::Write::write_all(&mut f, content)?;
                        }
                        Ok(())
                    })
                })
                .collect();
            workers
                .into_iter()
                .try_for_each(|w| w.join().expect("writer thread"))
        })?;
        Ok(start.elapsed().as_secs_f64())
    })?;
    std::fs::remove_dir_all(copy)?;
    Ok((secs, files.len()))
}

/// The largest object a render gives the cluster (a YAML document of
/// `openshift/` or install-config.yaml) and the largest pool's
/// MachineConfigs together (a custom pool's with the worker role's it
/// inherits), read from the files themselves.
fn etcd_limits(out: &Path) -> Result<String> {
    let mib = |n: usize| format!("{:.2} MiB", n as f64 / (1 << 20) as f64);
    let mut largest = (String::new(), 0);
    let mut files: Vec<PathBuf> = vec![out.join("install-config.yaml")];
    let openshift = out.join("openshift");
    if openshift.exists() {
        for e in std::fs::read_dir(&openshift)? {
            files.push(e?.path());
        }
    }
    // pool → bytes of its MachineConfigs; role → bytes of the role's own.
    let mut pools: std::collections::BTreeMap<String, usize> = Default::default();
    for f in &files {
        let text = std::fs::read_to_string(f)?;
        let name = f
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        for doc in text.split("\n---\n") {
            if doc.len() > largest.1 {
                largest = (name.clone(), doc.len());
            }
        }
        if let Some(pool) = name
            .strip_prefix("10-nodenet-")
            .and_then(|r| r.strip_suffix(".yaml"))
            .and_then(|r| r.split_once('-'))
            .map(|(_, pool)| pool.trim_start_matches("ex-").to_string())
        {
            *pools.entry(pool).or_default() += text.len();
        }
    }
    let worker_own = pools.get("worker").copied().unwrap_or(0);
    let custom = pools.keys().filter(|p| p.starts_with("worker-")).count();
    let biggest = pools
        .iter()
        .map(|(p, n)| {
            (
                p,
                if p.starts_with("worker-") {
                    n + worker_own
                } else {
                    *n
                },
            )
        })
        .max_by_key(|(_, n)| *n);
    Ok(match biggest {
        Some((pool, n)) => format!(
            "largest object: {} ({}); largest pool's MachineConfigs: {pool} ({}){}",
            largest.0,
            mib(largest.1),
            mib(n),
            if custom > 0 {
                format!(", {custom} custom worker pools")
            } else {
                String::new()
            }
        ),
        None => format!(
            "largest object: {} ({}); no MachineConfig",
            largest.0,
            mib(largest.1)
        ),
    })
}

fn count_files(dir: &Path) -> Result<usize> {
    let mut n = 0;
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        n += if e.file_type()?.is_dir() {
            count_files(&e.path())?
        } else {
            1
        };
    }
    Ok(n)
}

/// A nodenet command with the benchmark inventory's BMC password set
/// (render refuses to write BMC Secrets without one).
fn nodenet_cmd(nodenet: &Path) -> Command {
    let mut c = Command::new(nodenet);
    c.env("BENCH_BMC_PASSWORD", "bench-password");
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One limit for every shape, a shape's own beside it, and what is
    /// no limit refused.
    #[test]
    fn floor_limits_read_every_shape_and_some_shapes_own() {
        let one = FloorLimits::parse("4.5").unwrap();
        assert_eq!(one.of("template"), Some(4.5));
        assert_eq!(one.of("install-config"), Some(4.5));
        let some = FloorLimits::parse("4.5, template=3.5").unwrap();
        assert_eq!(some.of("template"), Some(3.5));
        assert_eq!(some.of("install-config"), Some(4.5));
        let only = FloorLimits::parse("template=3").unwrap();
        assert_eq!(only.of("template"), Some(3.0));
        assert_eq!(only.of("install-config"), None);
        assert!(FloorLimits::parse("tempalte=3").is_err());
        assert!(FloorLimits::parse("0").is_err());
        assert!(FloorLimits::parse("template=x").is_err());
    }
}
