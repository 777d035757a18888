//! Power changes as the BMC emulator makes them. sushy-tools' fake driver
//! PUTs a system's whole record to `EXTERNAL_NOTIFICATION_URL` on every
//! change it makes to it (with `external_notifier: True`), the power
//! state's included, in the order it makes them, and waits for the answer.
//! Polling the power state misses an off shorter than the poll:
//! `provision` is off only for an eject, an insert and a PATCH.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::time::Duration;

use crate::{io, LabError};

/// A system's power state, as the emulator has just set it.
#[derive(Clone, Debug, PartialEq)]
pub struct PowerChange {
    /// The system's UUID (its Redfish id).
    pub system: String,
    pub power: String,
}

/// The most a notification may take: a system's record is a few hundred
/// bytes.
const MAX_REQUEST: usize = 1 << 20;

/// Listens on `127.0.0.1:port` for the emulator's notifications, on a
/// thread of its own. Each one's power state is on the receiver before the
/// emulator gets its answer, so a change is never behind a later read of
/// the same system.
pub fn listen(port: u16) -> Result<Receiver<PowerChange>, LabError> {
    let at = format!("127.0.0.1:{port}");
    let listener = TcpListener::bind(&at).map_err(io(at))?;
    Ok(listen_on(listener))
}

/// [`listen`] on a socket already bound (a test's, on a port the kernel
/// chose: a port found free and bound later can be taken meanwhile).
fn listen_on(listener: TcpListener) -> Receiver<PowerChange> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            answer(stream, &tx);
        }
    });
    rx
}

/// Reads one notification, passes its power state on and answers it (204,
/// or 400 when it is not one).
fn answer(mut stream: TcpStream, tx: &Sender<PowerChange>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let status = match read_body(&mut stream).and_then(|body| power_change(&body)) {
        Some(change) => {
            let _ = tx.send(change);
            "204 No Content"
        }
        None => "400 Bad Request",
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
}

/// The body of a PUT, read to its `Content-Length`.
fn read_body(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let (head, length) = loop {
        let n = stream.read(&mut chunk).ok().filter(|&n| n > 0)?;
        buf.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut request = httparse::Request::new(&mut headers);
        if let httparse::Status::Complete(head) = request.parse(&buf).ok()? {
            if request.method != Some("PUT") {
                return None;
            }
            let length = request
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                .and_then(|h| {
                    std::str::from_utf8(h.value)
                        .ok()?
                        .trim()
                        .parse::<usize>()
                        .ok()
                })?;
            break (head, length);
        }
        if buf.len() > MAX_REQUEST {
            return None;
        }
    };
    if length > MAX_REQUEST {
        return None;
    }
    while buf.len() < head + length {
        let n = stream.read(&mut chunk).ok().filter(|&n| n > 0)?;
        buf.extend_from_slice(&chunk[..n]);
    }
    Some(buf[head..head + length].to_vec())
}

/// The system and power state of a notification's record.
fn power_change(body: &[u8]) -> Option<PowerChange> {
    let record: serde_json::Value = serde_json::from_slice(body).ok()?;
    Some(PowerChange {
        system: record["uuid"].as_str()?.to_string(),
        power: record["power_state"].as_str()?.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What comes back for `request`, sent whole or a byte at a time.
    fn send(port: u16, request: &[u8], bytewise: bool) -> String {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        if bytewise {
            for b in request {
                s.write_all(&[*b]).unwrap();
            }
        } else {
            s.write_all(request).unwrap();
        }
        let mut reply = String::new();
        s.read_to_string(&mut reply).unwrap();
        reply
    }

    /// A listener on a port the kernel chose, and that port.
    fn bound() -> (u16, Receiver<PowerChange>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        (port, listen_on(listener))
    }

    fn put(body: &str) -> Vec<u8> {
        format!(
            "PUT / HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: python-requests/2.31.0\r\nContent-type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    }

    #[test]
    fn notifications_arrive_in_order_whole_or_in_pieces_and_garbage_is_refused() {
        let (port, rx) = bound();
        // The fake driver's record, as it PUTs it (pending power included).
        let off = r#"{"uuid": "0b8c-1", "name": "worker-0", "power_state": "Off", "pending_power": null, "nics": [{"mac": "52:54:00:00:00:01"}], "external_notifier": true}"#;
        let on = r#"{"uuid": "0b8c-1", "name": "worker-0", "power_state": "On", "pending_power": {"power_state": "On", "apply_time": 1764400000}}"#;
        assert!(send(port, &put(off), false).starts_with("HTTP/1.1 204"));
        assert!(send(port, &put(on), true).starts_with("HTTP/1.1 204"));
        for bad in [
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
            put("{\"uuid\": \"0b8c-1\"}"),
            put("not json"),
            b"PUT / HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n".to_vec(),
        ] {
            assert!(
                send(port, &bad, false).starts_with("HTTP/1.1 400"),
                "{}",
                String::from_utf8_lossy(&bad)
            );
        }
        let got: Vec<PowerChange> = rx.try_iter().collect();
        assert_eq!(
            got,
            [
                PowerChange {
                    system: "0b8c-1".into(),
                    power: "Off".into()
                },
                PowerChange {
                    system: "0b8c-1".into(),
                    power: "On".into()
                }
            ]
        );
    }

    /// The real emulator (sushy-tools, as `.ci/install-bmc.sh` installs
    /// it): a power cycle through Redfish is reported as off, then on,
    /// however short the off was.
    #[test]
    fn sushy_reports_a_power_cycle_as_off_then_on() {
        let Some(sushy) = super::super::sushy() else {
            assert!(
                std::env::var_os("CI").is_none(),
                "sushy-emulator is required under CI (.ci/install-bmc.sh)"
            );
            eprintln!("skipped: sushy-emulator not installed");
            return;
        };
        let dir = std::env::temp_dir().join(format!("nodenet-notify-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let password = "notify-test";
        super::super::write_htpasswd(&sushy, password, &dir.join("htpasswd")).unwrap();
        let (port, rx) = bound();
        let id = "4e1f2c3a-0000-4000-8000-000000000001";
        let conf = dir.join("emulator.conf");
        let system = format!(
            "{{'uuid': '{id}', 'name': 'node-0', 'power_state': 'On', 'external_notifier': True, 'nics': []}}"
        );
        super::super::write_emulator_conf(&conf, &dir, port, &[system]).unwrap();
        let (base, pid) = super::super::start_emulator(&sushy, &conf, &dir, password).unwrap();
        let host = super::super::RedfishHost {
            system: format!("{base}/redfish/v1/Systems/{id}"),
            user: super::super::USER.into(),
            password: password.into(),
        };
        // The fake driver applies a change 1 to 11 s later, on a read.
        let cycle = |reset: &str, power: &str| {
            let body = format!(r#"{{"ResetType": "{reset}"}}"#);
            host.curl(
                &[
                    "-X",
                    "POST",
                    "-H",
                    "Content-Type: application/json",
                    "-d",
                    &body,
                ],
                &format!("{}/Actions/ComputerSystem.Reset", host.system),
            )
            .unwrap();
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            while host.seen().unwrap().power != power {
                assert!(std::time::Instant::now() < deadline, "never {power}");
                std::thread::sleep(Duration::from_millis(100));
            }
        };
        cycle("ForceOff", "Off");
        cycle("On", "On");
        crate::state::terminate(&[pid], &dir);
        let _ = std::fs::remove_dir_all(&dir);
        let mut powers: Vec<String> = rx
            .try_iter()
            .inspect(|c| assert_eq!(c.system, id))
            .map(|c| c.power)
            .collect();
        powers.dedup();
        assert!(
            powers.ends_with(&["Off".to_string(), "On".to_string()]),
            "{powers:?}"
        );
    }
}
