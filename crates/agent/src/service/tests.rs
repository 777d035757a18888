use super::*;

#[test]
fn the_record_reads_back_and_takes_over_the_old_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("status.json");
    std::fs::write(
        dir.path().join("applied"),
        "abc123  /etc/nmstate/openshift/n.yml\n",
    )
    .unwrap();
    let old = Status::read(&path).unwrap();
    assert!(old.is_applied("abc123"));
    let s = Status {
        applied: Some(InPlace {
            sha256: "def".into(),
            file: "/etc/nmstate/openshift/n.yml".into(),
            at: now(),
        }),
        last: Some(Run {
            outcome: Outcome::RolledBack,
            file: None,
            sha256: Some("0ff".into()),
            failed_probe: Some("gateway".into()),
            message: Some("no answer".into()),
            started: now(),
            finished: now(),
            boot_id: boot_id(),
        }),
    };
    s.write(&path).unwrap();
    assert_eq!(Status::read(&path).unwrap(), s);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("\"outcome\": \"rolled-back\""), "{text}");
}

#[test]
fn default_probes_take_the_api_server_from_the_kubeconfig() {
    let dir = tempfile::tempdir().unwrap();
    let k = dir.path().join("kubeconfig");
    std::fs::write(
        &k,
        "clusters:\n- cluster:\n    server: https://api-int.ocp4.example.com:6443\n  name: c\n",
    )
    .unwrap();
    assert_eq!(
        default_probes(&[&k]),
        [
            Probe::Gateway,
            Probe::Dns("api-int.ocp4.example.com".into()),
            Probe::Tcp("api-int.ocp4.example.com".into(), 6443)
        ]
    );
    assert_eq!(
        default_probes(&[&dir.path().join("none")]),
        [Probe::Gateway]
    );
}

/// A node that does what it is told, and counts what it was asked.
struct Fake {
    host: String,
    applies: usize,
    result: Option<AgentError>,
    refuse: bool,
}

impl Fake {
    fn new(host: &str) -> Fake {
        Fake {
            host: host.into(),
            applies: 0,
            result: None,
            refuse: false,
        }
    }
}

impl Node for Fake {
    fn hostname(&self) -> String {
        self.host.clone()
    }
    fn rollback_if_pending(&mut self) -> Result<bool, AgentError> {
        Ok(false)
    }
    fn desired(&mut self, _file: &Path) -> Result<serde_json::Value, Refusal> {
        if self.refuse {
            return Err(Refusal {
                message: "not clean".into(),
                findings: None,
            });
        }
        Ok(serde_json::json!({"interfaces": []}))
    }
    fn apply(
        &mut self,
        _desired: &serde_json::Value,
        opts: &ApplyOptions,
    ) -> Result<Applied, AgentError> {
        self.applies += 1;
        assert_eq!(opts.probes, [Probe::Gateway], "the default probes are used");
        match self.result.take() {
            Some(e) => Err(e),
            None => Ok(Applied::default()),
        }
    }
    fn default_probes(&self) -> Vec<Probe> {
        vec![Probe::Gateway]
    }
    fn now(&self) -> String {
        "2026-11-26T00:00:00Z".into()
    }
    fn boot_id(&self) -> String {
        "b".into()
    }
}

fn options(dir: &Path) -> ServiceOptions {
    ServiceOptions {
        dir: dir.join("nmstate"),
        status: dir.join("status.json"),
        force: false,
        apply: ApplyOptions {
            timeout: std::time::Duration::from_secs(480),
            probes: Vec::new(),
            no_commit: false,
            ephemeral: false,
            probe_timeout: std::time::Duration::from_secs(120),
        },
    }
}

fn with_files(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("nmstate")).unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join("nmstate").join(name), text).unwrap();
    }
    dir
}

/// RHCOS names the file by `hostname -s`; the kernel may hold an FQDN.
#[test]
fn an_fqdn_host_applies_its_short_named_file_then_finds_it_unchanged() {
    let dir = with_files(&[
        ("worker-0.yml", "interfaces: []\n"),
        ("cluster.yml", "x: 1\n"),
    ]);
    let mut node = Fake::new("worker-0.ostest.example.com");
    let r = run(&mut node, options(dir.path())).unwrap();
    assert_eq!(r.run.outcome, Outcome::Applied);
    assert!(r.run.file.as_deref().unwrap().ends_with("/worker-0.yml"));
    assert_eq!(node.applies, 1);
    let r = run(&mut node, options(dir.path())).unwrap();
    assert_eq!(r.run.outcome, Outcome::Unchanged);
    assert_eq!(node.applies, 1, "an unchanged file is not applied again");
    let st = Status::read(&dir.path().join("status.json")).unwrap();
    assert_eq!(st.last.unwrap().outcome, Outcome::Unchanged);
    assert!(st.applied.unwrap().file.ends_with("/worker-0.yml"));
}

#[test]
fn cluster_yml_serves_hosts_without_a_file_and_empty_files_are_none() {
    let dir = with_files(&[("worker-0.yml", ""), ("cluster.yml", "interfaces: []\n")]);
    let mut node = Fake::new("worker-0");
    let r = run(&mut node, options(dir.path())).unwrap();
    assert!(r.run.file.as_deref().unwrap().ends_with("/cluster.yml"));
    let empty = with_files(&[]);
    let r = run(&mut Fake::new("worker-0"), options(empty.path())).unwrap();
    assert_eq!(r.run.outcome, Outcome::NoFile);
    assert!(r.run.outcome.ok());
}

#[test]
fn a_refused_file_is_recorded_and_not_applied() {
    let dir = with_files(&[("m0.yml", "interfaces: []\n")]);
    let mut node = Fake::new("m0");
    node.refuse = true;
    let r = run(&mut node, options(dir.path())).unwrap();
    assert_eq!(r.run.outcome, Outcome::Refused);
    assert_eq!(node.applies, 0);
    assert!(!r.run.outcome.ok());
}

/// The failed probe is what is recorded, also when restoring the
/// previous state failed too (then the run failed, not rolled back).
#[test]
fn a_failed_probe_is_recorded_whether_or_not_the_restore_worked() {
    let probe = || AgentError::ProbeFailed {
        probe: "gateway".into(),
        why: "no answer from 192.168.110.1".into(),
    };
    let dir = with_files(&[("m0.yml", "interfaces: []\n")]);
    let mut node = Fake::new("m0");
    node.result = Some(AgentError::RolledBack {
        cause: Box::new(probe()),
        seconds: 1.5,
    });
    let r = run(&mut node, options(dir.path())).unwrap();
    assert_eq!(r.run.outcome, Outcome::RolledBack);
    assert_eq!(r.run.failed_probe.as_deref(), Some("gateway"));
    assert!(r
        .run
        .message
        .as_deref()
        .unwrap()
        .contains("restored in 1.50 s"));
    node.result = Some(AgentError::RestoreFailed {
        cause: Box::new(probe()),
        restore: Box::new(AgentError::Nmstate("D-Bus: gone".into())),
    });
    let r = run(&mut node, options(dir.path())).unwrap();
    assert_eq!(r.run.outcome, Outcome::Failed);
    assert_eq!(r.run.failed_probe.as_deref(), Some("gateway"));
    let m = r.run.message.unwrap();
    assert!(
        m.contains("probe `gateway` failed")
            && m.contains("restoring the previous state failed too"),
        "{m}"
    );
    // Nothing was ever applied.
    assert!(Status::read(&dir.path().join("status.json"))
        .unwrap()
        .applied
        .is_none());
}
