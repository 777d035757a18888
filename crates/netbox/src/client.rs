//! NetBox's REST API, read page by page with a token taken from the
//! environment or a file (never from an argument, which `ps` shows).

use serde::de::DeserializeOwned;

use crate::Error;

pub const URL_ENV: &str = "NETBOX_URL";
pub const TOKEN_ENV: &str = "NETBOX_TOKEN";
pub const TOKEN_FILE_ENV: &str = "NETBOX_TOKEN_FILE";

/// Objects asked for per page (NetBox's default `MAX_PAGE_SIZE`).
const PAGE: usize = 1000;

pub struct Client {
    base: String,
    token: String,
    http: reqwest::blocking::Client,
    /// Requests sent so far (what a read costs NetBox).
    requests: std::sync::atomic::AtomicUsize,
}

impl Client {
    /// `NETBOX_URL`, and `NETBOX_TOKEN` or the file `NETBOX_TOKEN_FILE`
    /// names.
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
        Client::new(&base, token)
    }

    pub fn new(base: &str, token: String) -> Result<Client, Error> {
        let base = base.trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(Error::Setup(format!(
                "{URL_ENV}={base} is not an http:// or https:// URL"
            )));
        }
        let base = base.strip_suffix("/api").unwrap_or(base).to_string();
        let http = reqwest::blocking::Client::builder()
            .timeout(std::time::Duration::from_secs(60))
            .build()
            .map_err(|e| Error::Setup(format!("HTTP client: {e}")))?;
        Ok(Client {
            base,
            token,
            http,
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
        let request = |e: reqwest::Error| Error::Request {
            url: url.to_string(),
            message: e.without_url().to_string(),
        };
        self.requests
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let response = self
            .http
            .get(url)
            .query(query)
            .header("Authorization", self.authorization())
            .header("Accept", "application/json")
            .send()
            .map_err(request)?;
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
        let bytes = response.bytes().map_err(request)?;
        serde_json::from_slice(&bytes).map_err(|e| Error::Request {
            url: url.to_string(),
            message: format!("not the NetBox answer expected: {e}"),
        })
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
        let c = Client::new("https://nb.example.com/api/", "abc".into()).unwrap();
        assert_eq!(c.base(), "https://nb.example.com");
        assert_eq!(c.authorization(), "Token abc");
        let c = Client::new("http://127.0.0.1:8000", "nbt_k.s".into()).unwrap();
        assert_eq!(c.authorization(), "Bearer nbt_k.s");
        assert!(Client::new("nb.example.com", "x".into()).is_err());
    }
}
