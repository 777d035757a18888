//! Typed Redfish resources (the fields nodenet reads) and a client that
//! follows links, retries what is worth retrying, and never shows the
//! password.

use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::{BmcError, Failure};

#[derive(Deserialize, Debug, Clone)]
pub struct Link {
    #[serde(rename = "@odata.id")]
    pub id: String,
}

#[derive(Deserialize, Debug)]
pub struct Collection {
    #[serde(rename = "Members", default)]
    pub members: Vec<Link>,
}

#[derive(Deserialize, Debug, Default, Clone)]
pub struct Boot {
    #[serde(rename = "BootSourceOverrideTarget")]
    pub target: Option<String>,
    #[serde(rename = "BootSourceOverrideEnabled")]
    pub enabled: Option<String>,
}

#[derive(Deserialize, Debug, Default)]
pub struct SystemLinks {
    #[serde(rename = "ManagedBy", default)]
    pub managed_by: Vec<Link>,
}

#[derive(Deserialize, Debug)]
pub struct ActionTarget {
    pub target: String,
}

#[derive(Deserialize, Debug, Default)]
pub struct SystemActions {
    #[serde(rename = "#ComputerSystem.Reset")]
    pub reset: Option<ActionTarget>,
}

#[derive(Deserialize, Debug)]
pub struct System {
    #[serde(rename = "Id")]
    pub id: String,
    #[serde(rename = "PowerState")]
    pub power_state: Option<String>,
    #[serde(rename = "Boot", default)]
    pub boot: Boot,
    #[serde(rename = "Links", default)]
    pub links: SystemLinks,
    #[serde(rename = "VirtualMedia")]
    pub virtual_media: Option<Link>,
    #[serde(rename = "Actions", default)]
    pub actions: SystemActions,
}

#[derive(Deserialize, Debug)]
pub struct Manager {
    #[serde(rename = "VirtualMedia")]
    pub virtual_media: Option<Link>,
}

#[derive(Deserialize, Debug, Default)]
pub struct MediaActions {
    #[serde(rename = "#VirtualMedia.InsertMedia")]
    pub insert: Option<ActionTarget>,
    #[serde(rename = "#VirtualMedia.EjectMedia")]
    pub eject: Option<ActionTarget>,
}

#[derive(Deserialize, Debug)]
pub struct VirtualMedia {
    #[serde(rename = "Id")]
    pub id: String,
    #[serde(rename = "MediaTypes", default)]
    pub media_types: Vec<String>,
    #[serde(rename = "Image")]
    pub image: Option<String>,
    #[serde(rename = "Inserted")]
    pub inserted: Option<bool>,
    #[serde(rename = "Actions", default)]
    pub actions: MediaActions,
}

/// A BMC endpoint with its credentials.
pub struct Client {
    http: reqwest::Client,
    pub base: String,
    username: String,
    password: nodenet_model::Secret,
    /// Each request is retried until this moment at the latest.
    pub deadline: Instant,
}

const ATTEMPTS: u32 = 5;

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
            .timeout(Duration::from_secs(15))
            .connect_timeout(Duration::from_secs(5))
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

    fn url(&self, path: &str) -> String {
        if path.starts_with("http://") || path.starts_with("https://") {
            path.to_string()
        } else {
            format!("{}{}", self.base, path)
        }
    }

    /// One request with retries (connection errors and 5xx, exponential
    /// backoff, never past the deadline); 4xx fail at once.
    async fn send(
        &self,
        step: &'static str,
        method: reqwest::Method,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<reqwest::Response, BmcError> {
        let mut delay = Duration::from_millis(250);
        let mut last = Failure::Timeout;
        for attempt in 0..ATTEMPTS {
            if Instant::now() >= self.deadline {
                break;
            }
            let mut req = self
                .http
                .request(method.clone(), self.url(path))
                .basic_auth(&self.username, Some(self.password.expose()))
                .header("Accept", "application/json");
            if let Some(b) = body {
                req = req.json(b);
            }
            let url = self.url(path);
            tracing::debug!(%method, %url, attempt, step, "redfish request");
            let sent = req.send().await;
            match &sent {
                Ok(resp) => {
                    tracing::debug!(%method, %url, status = resp.status().as_u16(), "redfish answer")
                }
                Err(e) => tracing::debug!(%method, %url, error = %e, "redfish request failed"),
            }
            match sent {
                Ok(resp) if resp.status().is_success() => return Ok(resp),
                Ok(resp) if resp.status().is_server_error() => {
                    last = Failure::Http {
                        status: resp.status().as_u16(),
                        message: redfish_message(resp).await,
                    };
                }
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    return Err(BmcError::new(
                        step,
                        Failure::Http {
                            status,
                            message: redfish_message(resp).await,
                        },
                    ));
                }
                Err(e) => {
                    last = if e.is_timeout() {
                        Failure::Timeout
                    } else {
                        Failure::Unreachable(without_url(e))
                    };
                }
            }
            if attempt + 1 < ATTEMPTS {
                let left = self.deadline.saturating_duration_since(Instant::now());
                tokio::time::sleep(delay.min(left)).await;
                delay *= 2;
            }
        }
        Err(BmcError::new(step, last))
    }

    pub async fn get<T: DeserializeOwned>(
        &self,
        step: &'static str,
        path: &str,
    ) -> Result<T, BmcError> {
        let resp = self.send(step, reqwest::Method::GET, path, None).await?;
        resp.json::<T>().await.map_err(|e| {
            BmcError::new(
                step,
                Failure::Protocol(format!("unexpected answer from {path}: {e}")),
            )
        })
    }

    pub async fn post(
        &self,
        step: &'static str,
        path: &str,
        body: serde_json::Value,
    ) -> Result<(), BmcError> {
        self.send(step, reqwest::Method::POST, path, Some(&body))
            .await
            .map(|_| ())
    }

    pub async fn patch(
        &self,
        step: &'static str,
        path: &str,
        body: serde_json::Value,
    ) -> Result<(), BmcError> {
        self.send(step, reqwest::Method::PATCH, path, Some(&body))
            .await
            .map(|_| ())
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

/// The message of a Redfish error body (`error.@Message.ExtendedInfo`),
/// else the body's first line.
async fn redfish_message(resp: reqwest::Response) -> String {
    let text = resp.text().await.unwrap_or_default();
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
        let err = &v["error"];
        if let Some(m) = err["@Message.ExtendedInfo"][0]["Message"].as_str() {
            return m.to_string();
        }
        if let Some(m) = err["message"].as_str() {
            return m.to_string();
        }
    }
    text.lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(200)
        .collect()
}
