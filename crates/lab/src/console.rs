//! Driving a VM over its serial console (a shell, each command's exit
//! status and output framed by markers) and its qemu monitor.

use super::*;

impl Vm {
    /// Reads the console until `pred` holds for a line; past `timeout`,
    /// the error names what was awaited (`awaiting`) and how long.
    fn read_until(
        &mut self,
        pred: &mut dyn FnMut(&str) -> bool,
        awaiting: &str,
        timeout: Duration,
    ) -> Result<(), LabError> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(LabError::Timeout(format!(
                    "{}: timed out after {} s awaiting {awaiting}; console so far:\n{}",
                    self.name,
                    timeout.as_secs(),
                    tail(&self.console)
                )));
            }
            self.serial
                .get_ref()
                .set_read_timeout(Some(left))
                .map_err(io("serial"))?;
            let mut line = String::new();
            match self.serial.read_line(&mut line) {
                Ok(0) => {
                    return Err(LabError::Timeout(format!(
                        "{}: serial closed; console:\n{}",
                        self.name,
                        tail(&self.console)
                    )))
                }
                Ok(_) => {
                    let clean = line.replace('\r', "");
                    self.console.push_str(&clean);
                    if pred(clean.trim_end()) {
                        return Ok(());
                    }
                }
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut => {}
                Err(e) => return Err(LabError::Io("serial".into(), e)),
            }
        }
    }

    /// Waits for the guest's init to print "lab: ready", then sets the
    /// shell up for the harness (no echo, no prompt).
    pub fn wait_ready(&mut self, timeout: Duration) -> Result<(), LabError> {
        self.read_until(&mut |l| l.contains("lab: ready"), "\"lab: ready\"", timeout)?;
        std::thread::sleep(Duration::from_millis(500));
        self.run("stty -echo; PS1=''; PS2=''", Duration::from_secs(30))?;
        Ok(())
    }

    /// Runs a shell command in the guest: (exit status, output).
    pub fn run(&mut self, cmd: &str, timeout: Duration) -> Result<(i32, String), LabError> {
        self.seq += 1;
        let marker = format!("__lab_done_{}__", self.seq);
        let line = format!("{cmd}; echo \"{marker} $?\"\n");
        self.serial
            .get_mut()
            .write_all(line.as_bytes())
            .map_err(io("serial"))?;
        let start = self.console.len();
        let mut status = None;
        let m = marker.clone();
        self.read_until(
            &mut |l| {
                if let Some(rest) = l.split(&m).nth(1) {
                    if let Ok(s) = rest.trim().parse::<i32>() {
                        status = Some(s);
                        return true;
                    }
                }
                false
            },
            &format!("`{}`", first_line(cmd)),
            timeout,
        )?;
        let out: Vec<&str> = self.console[start..]
            .lines()
            .filter(|l| !l.contains(&marker))
            .collect();
        Ok((status.unwrap_or(-1), out.join("\n")))
    }

    /// [`Vm::run`] for callers that report rather than stop: a shell that
    /// does not answer is status -1 with the why as its output.
    pub fn shell(&mut self, cmd: &str, timeout: Duration) -> (i32, String) {
        self.run(cmd, timeout)
            .unwrap_or_else(|e| (-1, format!("the shell did not answer: {e}")))
    }

    /// Hard reset (power cycle without ending qemu): the disks keep what
    /// the guest wrote (the snapshot overlay lives as long as qemu), /run
    /// is lost. Follow with `wait_ready`.
    pub fn reset(&self) -> Result<(), LabError> {
        self.monitor("system_reset").map(|_| ())
    }

    /// A qemu monitor command (e.g. `set_link n0 off`).
    pub fn monitor(&self, cmd: &str) -> Result<String, LabError> {
        let mut s = connect(&self.monitor, Instant::now() + Duration::from_secs(5))?;
        s.set_read_timeout(Some(Duration::from_millis(500)))
            .map_err(io("monitor"))?;
        s.write_all(format!("{cmd}\n").as_bytes())
            .map_err(io("monitor"))?;
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = s.read(&mut buf) {
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }
}

impl Vm {
    /// The number of `bond`'s ports, once every port (actor and partner)
    /// is collecting and distributing in the bond's active aggregator.
    pub fn bond_aggregated(&mut self, bond: &str) -> Option<usize> {
        let (_, out) = self
            .run(
                &format!("cat /proc/net/bonding/{bond}"),
                Duration::from_secs(30),
            )
            .ok()?;
        lacp_aggregated(&out).ok()
    }

    /// The kernel's boot id: unchanged means the guest did not reboot.
    pub fn boot_id(&mut self) -> Result<String, LabError> {
        let (_, out) = self.run(
            "cat /proc/sys/kernel/random/boot_id",
            Duration::from_secs(30),
        )?;
        Ok(out.trim().to_string())
    }
}

pub(crate) fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

/// A command's first line, cut to 80 characters: enough to name it in an
/// error (scripts run as one command are long).
fn first_line(cmd: &str) -> String {
    let line = cmd.lines().next().unwrap_or_default();
    match line.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_string(),
    }
}
