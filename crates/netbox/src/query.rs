//! The `netbox:` input: which devices a NetBox read selects
//! (`netbox:?site=dc1&cluster=ocp-prod&role=worker&tag=ocp`).

use crate::Error;

pub(crate) const SCHEME: &str = "netbox:";

/// The filters of a `netbox:` input, each NetBox's own device filter.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Query {
    /// Site slugs.
    pub sites: Vec<String>,
    /// The virtualization cluster's name (the OpenShift cluster).
    pub cluster: Option<String>,
    /// Device role slugs.
    pub roles: Vec<String>,
    /// Tag slugs (a device has every one).
    pub tags: Vec<String>,
}

const KEYS: &[&str] = &["site", "cluster", "role", "tag"];

impl Query {
    pub fn parse(source: &str) -> Result<Query, Error> {
        let rest = source.strip_prefix(SCHEME).ok_or_else(|| {
            Error::Query(format!(
                "`{source}` is not a NetBox input (netbox:?site=…&cluster=…)"
            ))
        })?;
        let params = rest.strip_prefix('?').unwrap_or(rest);
        let mut q = Query::default();
        for pair in params.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let value = decode(value).ok_or_else(|| {
                Error::Query(format!("`{pair}` in `{source}`: not percent-encoded UTF-8"))
            })?;
            if value.is_empty() {
                return Err(Error::Query(format!(
                    "`{key}` in `{source}` has no value (`{key}=…`)"
                )));
            }
            match key {
                "site" => q.sites.push(value),
                "cluster" if q.cluster.is_none() => q.cluster = Some(value),
                "cluster" => {
                    return Err(Error::Query(format!(
                        "`{source}` names two clusters: an inventory is one cluster"
                    )))
                }
                "role" => q.roles.push(value),
                "tag" => q.tags.push(value),
                _ => {
                    return Err(Error::Query(format!(
                        "`{key}` in `{source}` is not a NetBox filter nodenet takes (one of: {})",
                        KEYS.join(", ")
                    )))
                }
            }
        }
        if q == Query::default() {
            return Err(Error::Query(format!(
                "`{source}` selects every device of NetBox: name a cluster, site, role or tag (netbox:?cluster=ocp-prod)"
            )));
        }
        Ok(q)
    }

    /// The device list's filters, as NetBox's API takes them (the
    /// cluster by id, found first).
    pub(crate) fn device_filters(&self, cluster_id: Option<u64>) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        out.extend(self.sites.iter().map(|s| ("site", s.clone())));
        out.extend(self.roles.iter().map(|s| ("role", s.clone())));
        out.extend(self.tags.iter().map(|s| ("tag", s.clone())));
        if let Some(id) = cluster_id {
            out.push(("cluster_id", id.to_string()));
        }
        out
    }
}

/// `%XX` and `+` decoded (a query string's value).
fn decode(s: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(s.len());
    let mut it = s.bytes();
    while let Some(b) = it.next() {
        match b {
            b'%' => {
                let hex = [it.next()?, it.next()?];
                let hex = std::str::from_utf8(&hex).ok()?;
                bytes.push(u8::from_str_radix(hex, 16).ok()?);
            }
            b'+' => bytes.push(b' '),
            b => bytes.push(b),
        }
    }
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_are_read_with_their_repeats_and_encodings() {
        let q = Query::parse("netbox:?site=dc1&site=dc%2D2&cluster=ocp+prod&role=worker&tag=ocp")
            .unwrap();
        assert_eq!(q.sites, ["dc1", "dc-2"]);
        assert_eq!(q.cluster.as_deref(), Some("ocp prod"));
        assert_eq!(q.roles, ["worker"]);
        assert_eq!(q.tags, ["ocp"]);
        assert_eq!(
            q.device_filters(Some(7)),
            [
                ("site", "dc1".to_string()),
                ("site", "dc-2".to_string()),
                ("role", "worker".to_string()),
                ("tag", "ocp".to_string()),
                ("cluster_id", "7".to_string()),
            ]
        );
    }

    #[test]
    fn a_query_that_selects_everything_or_nothing_known_is_refused() {
        for bad in [
            "netbox:",
            "netbox:?",
            "netbox:?rack=r1",
            "netbox:?site=",
            "netbox:?cluster=a&cluster=b",
            "netbox:?site=%zz",
        ] {
            assert!(Query::parse(bad).is_err(), "{bad}");
        }
    }
}
