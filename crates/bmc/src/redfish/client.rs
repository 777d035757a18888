//! The Redfish client: HTTP(S) to one BMC, links followed within its
//! origin, retries bounded by a deadline, errors without credentials.

use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;

use super::*;
use crate::{BmcError, Failure};

/// A BMC endpoint with its credentials.
pub struct Client {
    http: reqwest::Client,
    pub base: String,
    username: String,
    password: nodenet_model::Secret,
    /// Each request is retried until this moment at the latest, and no
    /// attempt waits past it.
    pub deadline: Instant,
}

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// A successful answer, read in full.
pub struct Answer {
    pub content_type: String,
    pub body: Vec<u8>,
    /// `METHOD URL` of the request (for messages; never credentials).
    pub request: String,
    /// How many sends it took.
    pub attempts: u32,
}

impl Client {
    pub fn new(
        base: &str,
        username: &str,
        password: nodenet_model::Secret,
        insecure: bool,
        deadline: Instant,
    ) -> Result<Client, BmcError> {
        if insecure {
            tracing::debug!(
                bmc = base,
                "TLS certificate verification disabled for this BMC (disableCertificateVerification: true)"
            );
        }
        let http = reqwest::Client::builder()
            .danger_accept_invalid_certs(insecure)
            .timeout(REQUEST_TIMEOUT)
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .map_err(|e| BmcError::new("connecting", Failure::Protocol(e.to_string())))?;
        Ok(Client {
            http,
            base: base.trim_end_matches('/').to_string(),
            username: username.to_string(),
            password,
            deadline,
        })
    }

    /// The URL of a link the BMC gave. Links to another scheme, host or
    /// port are refused: the request carries the BMC's credentials, which
    /// must never go anywhere but the BMC the inventory names.
    fn url(&self, path: &str) -> Result<String, Failure> {
        if !(path.starts_with("http://") || path.starts_with("https://")) {
            return Ok(format!("{}{}", self.base, path));
        }
        let origin = |u: &str| {
            reqwest::Url::parse(u).ok().map(|u| {
                (
                    u.scheme().to_string(),
                    u.host_str().map(str::to_string),
                    u.port_or_known_default(),
                )
            })
        };
        match (origin(path), origin(&self.base)) {
            (Some(link), Some(base)) if link == base => Ok(path.to_string()),
            _ => Err(Failure::Protocol(format!(
                "the BMC links to `{}`, outside its own address: not followed (it would be sent the BMC's credentials)",
                one_line(path, 200)
            ))),
        }
    }

    /// One request with retries (connection errors, dropped connections,
    /// timeouts and 5xx; exponential backoff), at most `sends` sends and
    /// never past the deadline: each attempt's timeout is cut to the time
    /// left. 4xx fail at once. The answer's body is read within the
    /// attempt, so a body that stalls or breaks off counts as that
    /// attempt's failure. Unless `idempotent`, only a request that never
    /// reached the BMC (no connection) is sent again here: after any other
    /// failure the BMC may have acted, and [`Client::act`] decides.
    async fn send(
        &self,
        step: &'static str,
        method: reqwest::Method,
        path: &str,
        body: Option<&serde_json::Value>,
        sends: u32,
        idempotent: bool,
    ) -> Result<Answer, BmcError> {
        let url = self
            .url(path)
            .map_err(|failure| BmcError::new(step, failure))?;
        let request = format!("{method} {url}");
        let mut delay = Duration::from_millis(250);
        let mut last = Failure::Timeout {
            waited: Duration::ZERO,
            deadline: true,
        };
        let mut attempts = 0;
        let first = Instant::now();
        while attempts < sends {
            let left = self.deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            attempts += 1;
            let wait = REQUEST_TIMEOUT.min(left);
            let mut req = self
                .http
                .request(method.clone(), &url)
                .timeout(wait)
                .basic_auth(&self.username, Some(self.password.expose()))
                .header("Accept", "application/json");
            if let Some(b) = body {
                req = req.json(b);
            }
            tracing::debug!(%method, %url, attempt = attempts, step, "redfish request");
            let answer = match req.send().await {
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    tracing::debug!(%method, %url, status, "redfish answer");
                    let content_type = resp
                        .headers()
                        .get(reqwest::header::CONTENT_TYPE)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("")
                        .to_string();
                    resp.bytes()
                        .await
                        .map(|b| (status, content_type, b.to_vec()))
                }
                Err(e) => Err(e),
            };
            match answer {
                Ok((200..=299, content_type, body)) => {
                    return Ok(Answer {
                        content_type,
                        body,
                        request,
                        attempts,
                    })
                }
                Ok((status @ 500.., _, body)) => {
                    last = Failure::Http {
                        status,
                        message: self.scrub(&redfish_message(&body)),
                    };
                }
                Ok((status, _, body)) => {
                    return Err(BmcError::new(
                        step,
                        Failure::Http {
                            status,
                            message: self.scrub(&redfish_message(&body)),
                        },
                    )
                    .sent(request, attempts));
                }
                Err(e) => {
                    tracing::debug!(%method, %url, error = %e, "redfish request failed");
                    last = if e.is_timeout() {
                        Failure::Timeout {
                            waited: first.elapsed(),
                            deadline: wait < REQUEST_TIMEOUT,
                        }
                    } else if e.is_connect() {
                        Failure::Unreachable(without_url(e))
                    } else {
                        Failure::Dropped(self.scrub(&innermost(&e)))
                    };
                }
            }
            if !idempotent && !matches!(last, Failure::Unreachable(_)) {
                break;
            }
            if attempts < sends {
                let left = self.deadline.saturating_duration_since(Instant::now());
                tokio::time::sleep(delay.min(left)).await;
                delay *= 2;
            }
        }
        Err(BmcError::new(step, last).sent(request, attempts))
    }

    /// GET and decode. A 200 that is not the JSON expected is a protocol
    /// error, not retried (it would not get better).
    pub async fn get<T: DeserializeOwned>(
        &self,
        step: &'static str,
        path: &str,
    ) -> Result<T, BmcError> {
        let a = self
            .send(step, reqwest::Method::GET, path, None, ATTEMPTS, true)
            .await?;
        serde_json::from_slice::<T>(&a.body).map_err(|e| {
            let what = if a.body.iter().all(u8::is_ascii_whitespace) {
                "an empty answer".to_string()
            } else if serde_json::from_slice::<serde::de::IgnoredAny>(&a.body).is_ok() {
                format!("JSON without the expected fields ({e})")
            } else {
                let ctype = if a.content_type.is_empty() {
                    String::new()
                } else {
                    format!("{}; ", one_line(&a.content_type, 60))
                };
                format!(
                    "not JSON ({ctype}{e}): it begins `{}`",
                    self.scrub(&one_line(&String::from_utf8_lossy(&a.body), 60))
                )
            };
            BmcError::new(
                step,
                Failure::Protocol(format!("unexpected answer from {path}: {what}")),
            )
            .sent(a.request, a.attempts)
        })
    }

    /// A POST that changes the machine (a Reset, InsertMedia,
    /// EjectMedia). Sending it twice is not harmless (a second power
    /// cycle, media swapped under a booting host), so when a send may
    /// have reached the BMC without a clear answer (no answer, a dropped
    /// connection, a 5xx), the state `effect` names is read back first:
    /// if it already shows the change, that is success; else the POST is
    /// sent again, [`ATTEMPTS`] sends in all. An effect that cannot be
    /// read back is never sent a second time.
    pub async fn act(
        &self,
        step: &'static str,
        path: &str,
        body: serde_json::Value,
        effect: Effect<'_>,
    ) -> Result<(), BmcError> {
        let mut sent = 0;
        let mut delay = Duration::from_millis(250);
        loop {
            let mut e = match self
                .send(
                    step,
                    reqwest::Method::POST,
                    path,
                    Some(&body),
                    ATTEMPTS - sent,
                    false,
                )
                .await
            {
                Ok(_) => return Ok(()),
                Err(e) => e,
            };
            sent += e.attempts;
            // The message counts every send of this action.
            e.attempts = sent;
            let unsure = match &e.failure {
                Failure::Timeout { waited, .. } => !waited.is_zero(),
                Failure::Dropped(_) => true,
                Failure::Http { status, .. } => *status >= 500,
                _ => false,
            };
            if !unsure {
                return Err(e);
            }
            let maybe = |why: String| {
                let mut e = e.clone();
                e.failure = Failure::MayHaveActed {
                    failure: Box::new(e.failure.clone()),
                    why,
                };
                e
            };
            if let Effect::Unreadable(what) = effect {
                return Err(maybe(format!(
                    "{what} cannot be read back, so it is not sent again"
                )));
            }
            match self.shows(step, effect).await {
                Ok(true) => {
                    tracing::debug!(
                        step,
                        attempts = sent,
                        "the BMC acted though its answer was lost"
                    );
                    return Ok(());
                }
                Ok(false) => {}
                Err(read) => {
                    return Err(maybe(format!(
                        "its state could not be read back ({})",
                        read.failure
                    )))
                }
            }
            let left = self.deadline.saturating_duration_since(Instant::now());
            if sent >= ATTEMPTS || left.is_zero() {
                return Err(e);
            }
            tokio::time::sleep(delay.min(left)).await;
            delay *= 2;
        }
    }

    /// Whether the BMC's state shows `effect` (an unreadable one never
    /// shows).
    async fn shows(&self, step: &'static str, effect: Effect<'_>) -> Result<bool, BmcError> {
        match effect {
            Effect::Unreadable(_) => Ok(false),
            Effect::Power { system, reached } => self
                .get::<System>(step, system)
                .await
                .map(|s| reached.contains(&s.power_state.as_deref().unwrap_or(""))),
            Effect::Media { media, image } => {
                self.get::<VirtualMedia>(step, media)
                    .await
                    .map(|vm| match image {
                        Some(url) => vm.inserted == Some(true) && vm.image.as_deref() == Some(url),
                        None => vm.inserted != Some(true),
                    })
            }
        }
    }

    pub async fn patch(
        &self,
        step: &'static str,
        path: &str,
        body: serde_json::Value,
    ) -> Result<(), BmcError> {
        self.send(
            step,
            reqwest::Method::PATCH,
            path,
            Some(&body),
            ATTEMPTS,
            true,
        )
        .await
        .map(|_| ())
    }

    /// Text from the BMC, without the password or the Authorization
    /// value, should a BMC echo them.
    fn scrub(&self, text: &str) -> String {
        let password = self.password.expose();
        let auth = {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD
                .encode(format!("{}:{password}", self.username))
        };
        let mut out = text.to_string();
        for secret in [password, auth.as_str()] {
            if !secret.is_empty() {
                out = out.replace(secret, "***");
            }
        }
        out
    }
}

/// reqwest errors print the URL; ours must not carry credentials, and the
/// URL is known anyway, so keep only the cause.
fn without_url(e: reqwest::Error) -> String {
    let e = e.without_url();
    let mut msg = e.to_string();
    let mut src = std::error::Error::source(&e);
    while let Some(s) = src {
        msg = format!("{msg}: {s}");
        src = s.source();
    }
    msg
}

/// The deepest cause of an error (hyper's `connection closed before
/// message completed`, not reqwest's `error sending request for url`).
fn innermost(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(s) = cur.source() {
        cur = s;
    }
    cur.to_string()
}

/// The message of a Redfish error body (`error.@Message.ExtendedInfo`),
/// else the body's first line; on one line.
fn redfish_message(body: &[u8]) -> String {
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) {
        let err = &v["error"];
        if let Some(m) = err["@Message.ExtendedInfo"][0]["Message"].as_str() {
            return one_line(m, 300);
        }
        if let Some(m) = err["message"].as_str() {
            return one_line(m, 300);
        }
    }
    let text = String::from_utf8_lossy(body);
    one_line(text.lines().next().unwrap_or(""), 200)
}

#[cfg(test)]
mod tests;
