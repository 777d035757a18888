//! Names as Kubernetes and DNS take them: one home for "is this a valid
//! host/object name" and "make this a valid one"; and lists of names as
//! messages show them ("`a`, `b` and 3 more hosts").

/// `noun` as `n` of it reads: "host" for one, "hosts" otherwise.
pub fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        noun.to_string()
    } else {
        format!("{noun}s")
    }
}

/// A DNS-1123 subdomain (what Kubernetes, the installer and
/// assisted-service take as a host name): dot-separated labels of
/// lowercase letters, digits and '-', at most 63 characters each and 253
/// in all, no label starting or ending with '-'.
pub fn is_dns1123(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// A value as it may stand in a Kubernetes object name.
pub fn dns_label(s: &str) -> String {
    let l: String = s
        .to_ascii_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    l.trim_matches('-').to_string()
}

/// The name of a host a file stands for when nothing in it names one (a
/// bare NMState state, a `network_data.json`, a netplan file): the file's
/// name as given when it is a valid host name, else made into one, else
/// `this-host`. Such a name is nodenet's, not the input's: its consumer
/// never sees a file name, so it must never be found wanting.
pub fn host_name_from_file(stem: &str) -> String {
    if is_dns1123(stem) {
        return stem.to_string();
    }
    let label = dns_label(stem);
    let label: String = label.chars().take(63).collect();
    let label = label.trim_end_matches('-');
    if label.is_empty() {
        "this-host".to_string()
    } else {
        label.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns1123_names() {
        assert!(is_dns1123("master-0.example.com"));
        assert!(!is_dns1123("Master-0"));
        assert!(!is_dns1123("node_1"));
        assert!(!is_dns1123("-a"));
        assert!(!is_dns1123(""));
        assert!(!is_dns1123(&"a".repeat(64)));
    }

    #[test]
    fn file_names_become_host_names() {
        assert_eq!(host_name_from_file("master-0"), "master-0");
        assert_eq!(
            host_name_from_file("network_data_example"),
            "network-data-example"
        );
        assert_eq!(host_name_from_file("Bond_Example"), "bond-example");
        assert_eq!(host_name_from_file("___"), "this-host");
        assert_eq!(host_name_from_file(&"x".repeat(80)).len(), 63);
    }

    #[test]
    fn one_host_is_singular_and_others_plural() {
        assert_eq!(plural(1, "host"), "host");
        assert_eq!(plural(0, "host"), "hosts");
        assert_eq!(plural(2, "host"), "hosts");
    }
}
