//! NetBox's REST API, read page by page with a token taken from the
//! environment or a file (never from an argument, which `ps` shows).

use serde::de::DeserializeOwned;

use crate::Error;

pub const URL_ENV: &str = "NETBOX_URL";
pub const TOKEN_ENV: &str = "NETBOX_TOKEN";
pub const TOKEN_FILE_ENV: &str = "NETBOX_TOKEN_FILE";
/// Seconds a request may take (a NetBox under load answers a large page
/// slowly; a stalled one is given up on).
pub const TIMEOUT_ENV: &str = "NETBOX_TIMEOUT";

/// A request's limit when `NETBOX_TIMEOUT` sets none.
const DEFAULT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// How many times a read is sent before its failure is said.
const READ_ATTEMPTS: usize = 3;

/// Objects asked for per page (NetBox's default `MAX_PAGE_SIZE`).
const PAGE: usize = 1000;

pub struct Client {
    base: String,
    token: String,
    http: reqwest::blocking::Client,
    /// Each request's limit (said when one is given up on).
    timeout: std::time::Duration,
    /// Requests sent so far (what a read costs NetBox).
    requests: std::sync::atomic::AtomicUsize,
}

impl Client {
    /// `NETBOX_URL`, and `NETBOX_TOKEN` or the file `NETBOX_TOKEN_FILE`
    /// names; `NETBOX_TIMEOUT` if set.
    pub fn from_env() -> Result<Client, Error> {
        let base = std::env::var(URL_ENV).map_err(|_| {
            Error::Setup(format!(
                "{URL_ENV} is not set: the NetBox to read (https://netbox.example.com)"
            ))
        })?;
        let token = match (std::env::var(TOKEN_ENV), std::env::var(TOKEN_FILE_ENV)) {
            (Ok(t), _) if !t.trim().is_empty() => t.trim().to_string(),
            (_, Ok(path)) => std::fs::read_to_string(&path)
                .map_err(|e| Error::Setup(format!("cannot read {TOKEN_FILE_ENV} {path}: {e}")))?
                .trim()
                .to_string(),
            _ => {
                return Err(Error::Setup(format!(
                    "neither {TOKEN_ENV} nor {TOKEN_FILE_ENV} is set: a NetBox API token with read access"
                )))
            }
        };
        let timeout = match std::env::var(TIMEOUT_ENV) {
            Ok(t) => timeout_from(&t)?,
            Err(_) => DEFAULT_TIMEOUT,
        };
        Client::new(&base, token, timeout)
    }

    pub fn new(base: &str, token: String, timeout: std::time::Duration) -> Result<Client, Error> {
        let base = base.trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(Error::Setup(format!(
                "{URL_ENV}={base} is not an http:// or https:// URL"
            )));
        }
        let base = base.strip_suffix("/api").unwrap_or(base).to_string();
        let http = reqwest::blocking::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|e| Error::Setup(format!("HTTP client: {e}")))?;
        Ok(Client {
            base,
            token,
            http,
            timeout,
            requests: Default::default(),
        })
    }

    /// How many requests this client has sent.
    pub fn requests(&self) -> usize {
        self.requests.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// NetBox's address, without `/api`.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// `Token <key>` for v1 tokens, `Bearer nbt_…` for NetBox 4.5's v2.
    fn authorization(&self) -> String {
        if self.token.starts_with("nbt_") {
            format!("Bearer {}", self.token)
        } else {
            format!("Token {}", self.token)
        }
    }

    /// Every object of a list endpoint (`dcim/interfaces`) that `filters`
    /// select, following `next` page by page.
    pub fn list<T: DeserializeOwned>(
        &self,
        endpoint: &str,
        filters: &[(&str, String)],
    ) -> Result<Vec<T>, Error> {
        let mut url = format!("{}/api/{}/", self.base, endpoint.trim_matches('/'));
        let mut query: Vec<(&str, String)> = filters.to_vec();
        query.push(("limit", PAGE.to_string()));
        let mut first = true;
        let mut out = Vec::new();
        loop {
            let page: Page<T> = self.get(&url, if first { &query } else { &[] })?;
            first = false;
            out.extend(page.results);
            match page.next {
                Some(next) => url = next,
                None => return Ok(out),
            }
        }
    }

    /// One object or document (`status/`).
    pub fn get<T: DeserializeOwned>(
        &self,
        url: &str,
        query: &[(&str, String)],
    ) -> Result<T, Error> {
        let request = self.http.get(url).query(query);
        // A read is safe to send again: a NetBox restarting its workers
        // (502/503/504) or a dropped connection is tried three times.
        let mut wait = std::time::Duration::from_millis(500);
        for _ in 1..READ_ATTEMPTS {
            let again = request.try_clone().expect("a GET has no streamed body");
            match self.send(url, again) {
                Err(e) if e.is_transient() => std::thread::sleep(wait),
                done => return done,
            }
            wait *= 2;
        }
        self.send(url, request)
    }

    /// A write (`POST`/`PATCH` of `body`, a list for NetBox's bulk
    /// endpoints) to `/api/ENDPOINT/`: NetBox's answer.
    pub fn write<T: DeserializeOwned>(
        &self,
        method: reqwest::Method,
        endpoint: &str,
        body: &serde_json::Value,
    ) -> Result<T, Error> {
        let url = format!("{}/api/{}/", self.base, endpoint.trim_matches('/'));
        let request = self
            .http
            .request(method, &url)
            .header("Content-Type", "application/json")
            .body(body.to_string());
        // Never sent twice: a write NetBox made before the answer was
        // lost would be made again.
        self.send(&url, request)
    }

    /// A read-only GraphQL query (`/graphql/`): NetBox's whole answer,
    /// its `errors` included. The reads use REST; `nodenet-bench --netbox`
    /// times this beside them.
    pub fn graphql(&self, query: &str) -> Result<serde_json::Value, Error> {
        let url = format!("{}/graphql/", self.base);
        let request = self
            .http
            .post(&url)
            .header("Content-Type", "application/json")
            .body(serde_json::json!({ "query": query }).to_string());
        self.send(&url, request)
    }

    /// Sends with the token, and reads a 2xx answer as JSON.
    fn send<T: DeserializeOwned>(
        &self,
        url: &str,
        request: reqwest::blocking::RequestBuilder,
    ) -> Result<T, Error> {
        let failed = |e: reqwest::Error| Error::Request {
            url: url.to_string(),
            message: if e.is_timeout() {
                format!(
                    "no answer within {} s ({TIMEOUT_ENV} sets the limit)",
                    self.timeout.as_secs()
                )
            } else {
                e.without_url().to_string()
            },
        };
        self.requests
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let response = request
            .header("Authorization", self.authorization())
            .header("Accept", "application/json")
            .send()
            .map_err(failed)?;
        let status = response.status();
        if !status.is_success() {
            let body: String = response
                .text()
                .unwrap_or_default()
                .chars()
                .take(300)
                .collect();
            return Err(Error::Status {
                url: url.to_string(),
                status: status.as_u16(),
                body,
            });
        }
        let bytes = response.bytes().map_err(failed)?;
        serde_json::from_slice(&bytes).map_err(|e| Error::Request {
            url: url.to_string(),
            message: format!("not the NetBox answer expected: {e}"),
        })
    }
}

/// `NETBOX_TIMEOUT`'s value: whole seconds, at least one.
fn timeout_from(text: &str) -> Result<std::time::Duration, Error> {
    match text.trim().parse::<u64>() {
        Ok(s) if s > 0 => Ok(std::time::Duration::from_secs(s)),
        _ => Err(Error::Setup(format!(
            "{TIMEOUT_ENV}={text} is not a number of seconds (1 or more)"
        ))),
    }
}

#[derive(serde::Deserialize)]
struct Page<T> {
    next: Option<String>,
    results: Vec<T>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_base_is_netbox_itself_and_tokens_of_either_version_are_sent_as_netbox_takes_them() {
        let c = Client::new("https://nb.example.com/api/", "abc".into(), DEFAULT_TIMEOUT).unwrap();
        assert_eq!(c.base(), "https://nb.example.com");
        assert_eq!(c.authorization(), "Token abc");
        let c = Client::new("http://127.0.0.1:8000", "nbt_k.s".into(), DEFAULT_TIMEOUT).unwrap();
        assert_eq!(c.authorization(), "Bearer nbt_k.s");
        assert!(Client::new("nb.example.com", "x".into(), DEFAULT_TIMEOUT).is_err());
    }

    /// A server that answers each connection with the next of `answers`
    /// (status, body), then closes it; how many it answered.
    fn answering(answers: Vec<(u16, &'static str)>) -> (String, std::thread::JoinHandle<usize>) {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let served = std::thread::spawn(move || {
            let mut n = 0;
            for (status, body) in answers {
                let (mut s, _) = listener.accept().unwrap();
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf);
                let _ = write!(
                    s,
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                n += 1;
            }
            n
        });
        (url, served)
    }

    #[test]
    fn a_read_is_sent_again_while_netbox_restarts_and_a_refusal_is_said_at_once() {
        let page = r#"{"next": null, "results": [{"id": 1}]}"#;
        let (url, served) = answering(vec![(503, "restarting"), (502, ""), (200, page)]);
        let c = Client::new(&url, "t".into(), DEFAULT_TIMEOUT).unwrap();
        let got: Vec<serde_json::Value> = c.list("dcim/devices", &[]).unwrap();
        assert_eq!(got, [serde_json::json!({"id": 1})]);
        assert_eq!((served.join().unwrap(), c.requests()), (3, 3));
        // 403 is no passing failure: one request, and the status said.
        let (url, served) = answering(vec![(403, r#"{"detail": "no"}"#)]);
        let c = Client::new(&url, "t".into(), DEFAULT_TIMEOUT).unwrap();
        let e = c
            .list::<serde_json::Value>("dcim/devices", &[])
            .unwrap_err();
        assert!(matches!(e, Error::Status { status: 403, .. }), "{e}");
        assert_eq!((served.join().unwrap(), c.requests()), (1, 1));
    }

    #[test]
    fn the_timeout_is_whole_seconds_and_a_stalled_netbox_is_given_up_on_at_it() {
        use std::io::{Read, Write};
        assert_eq!(timeout_from(" 300 ").unwrap().as_secs(), 300);
        for bad in ["0", "-5", "1.5", "a minute", ""] {
            let e = timeout_from(bad).unwrap_err().to_string();
            assert!(e.contains("NETBOX_TIMEOUT") && e.contains("seconds"), "{e}");
        }
        // Each connection heard and left unanswered for a minute, then
        // answered: a client without the limit would get the page. (A
        // minute, not seconds: beside the lab this test may wait that
        // long for a core, and an answer come by then could be read.)
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            for s in listener.incoming() {
                std::thread::spawn(move || {
                    let mut s = s.unwrap();
                    let _ = s.read(&mut [0u8; 4096]);
                    std::thread::sleep(std::time::Duration::from_secs(60));
                    let body = r#"{"next": null, "results": []}"#;
                    let _ = write!(
                        s,
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                });
            }
        });
        let c = Client::new(&url, "t".into(), timeout_from("1").unwrap()).unwrap();
        let e = c
            .list::<serde_json::Value>("dcim/devices", &[])
            .unwrap_err();
        assert!(e.is_transient(), "{e}");
        assert!(
            e.to_string()
                .contains("no answer within 1 s (NETBOX_TIMEOUT"),
            "{e}"
        );
        assert_eq!(c.requests(), READ_ATTEMPTS);
    }
}
