//! A host's provisioning fields as openshift-install and the
//! BareMetalHost CRD read them: `bootMode` (an enum in both) and
//! `rootDeviceHints` (known keys, each of its type; `deviceName` a
//! `/dev/` path). Both refuse what these rules refuse, at install time,
//! so check says it first.

use nodenet_model::fields::suggest;
use nodenet_model::load::ROOT_DEVICE_HINTS;
use nodenet_model::{Code, Diagnostic, Host, InputKind, Node, Value};

/// `BootMode` of the installer's baremetal platform and of metal3's
/// BareMetalHost (kubebuilder enum).
pub const BOOT_MODES: &[&str] = &["UEFI", "UEFISecureBoot", "legacy"];

/// The type of a root device hint's value (metal3's `RootDeviceHints`;
/// the keys are the model's [`ROOT_DEVICE_HINTS`]).
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Str,
    Int,
    Bool,
}

fn kind_of(hint: &str) -> Kind {
    match hint {
        "minSizeGigabytes" => Kind::Int,
        "rotational" => Kind::Bool,
        _ => Kind::Str,
    }
}

pub fn check_host(host: &Host, out: &mut Vec<Diagnostic>) {
    let mut push = |d: Diagnostic| out.push(d.host(host.name.value.clone()));
    if let Some(mode) = &host.boot_mode {
        if !BOOT_MODES.contains(&mode.value.as_str()) {
            let near = BOOT_MODES
                .iter()
                .find(|m| m.eq_ignore_ascii_case(&mode.value))
                .copied()
                .or_else(|| suggest(&mode.value, BOOT_MODES))
                .or_else(|| {
                    mode.value
                        .to_ascii_lowercase()
                        .contains("secure")
                        .then_some("UEFISecureBoot")
                });
            let help = match near {
                Some(m) => format!("write `bootMode: {m}` (one of {})", BOOT_MODES.join(", ")),
                None => format!("one of {}", BOOT_MODES.join(", ")),
            };
            push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!(
                        "bootMode `{}` is not one openshift-install and the BareMetalHost CRD accept",
                        mode.value
                    ),
                )
                .at(mode.span)
                .help(help),
            );
        }
    }
    if let Some(hints) = &host.root_device_hints {
        // install-config and agent-config report unknown keys as they
        // are read (Go's decoder rules).
        let keys_reported = matches!(host.kind, InputKind::InstallConfig | InputKind::AgentConfig);
        check_hints(hints, keys_reported, &mut push);
    }
}

fn check_hints(hints: &Node, keys_reported: bool, push: &mut impl FnMut(Diagnostic)) {
    let Value::Map(entries) = &hints.value else {
        if !hints.is_null() {
            push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!(
                        "rootDeviceHints must be a mapping, found {}",
                        hints.kind_name()
                    ),
                )
                .at(hints.span),
            );
        }
        return;
    };
    let names = ROOT_DEVICE_HINTS;
    for (key, value) in entries {
        let name = key.scalar_text().unwrap_or_default();
        if !names.contains(&name.as_str()) {
            if !keys_reported {
                let help = match suggest(&name, names).or_else(|| {
                    (name.eq_ignore_ascii_case("device") || name.eq_ignore_ascii_case("name"))
                        .then_some("deviceName")
                }) {
                    Some(s) => format!("did you mean `{s}`?"),
                    None => format!("known hints: {}", names.join(", ")),
                };
                push(
                    Diagnostic::error(
                        Code::UnknownField,
                        format!("unknown root device hint `{name}`: the BareMetalHost CRD drops it, and the disk choice with it"),
                    )
                    .at(key.span)
                    .help(help),
                );
            }
            continue;
        }
        let kind = kind_of(&name);
        let ok = match kind {
            Kind::Str => matches!(value.value, Value::Str(_)),
            Kind::Int => value.as_i64().is_some_and(|n| n >= 0),
            Kind::Bool => value.as_bool().is_some(),
        };
        let what = match kind {
            Kind::Str => "a string",
            Kind::Int => "a whole number of gigabytes (0 or more)",
            Kind::Bool => "true or false",
        };
        if !ok {
            push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("root device hint `{name}` must be {what}, found `{value}`"),
                )
                .at(value.span),
            );
        } else if name == "deviceName" && !value.as_str().unwrap_or("").starts_with("/dev/") {
            push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!(
                        "root device hint deviceName `{value}` is no /dev path: the installer refuses it"
                    ),
                )
                .at(value.span)
                .help("a device path: `/dev/sda`, or a stable link such as `/dev/disk/by-path/pci-0000:18:00.0-scsi-0:2:0:0`"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<(String, String)> {
        let l = nodenet_model::load_texts(vec![("c.yaml".into(), text.into())]);
        let mut out = Vec::new();
        for h in &l.inventory.hosts {
            check_host(h, &mut out);
        }
        out.iter()
            .map(|d| (d.code.as_str().to_string(), d.message.clone()))
            .collect()
    }

    fn host(fields: &str) -> String {
        format!("nodenet: v1\ncluster: {{name: c}}\nhosts:\n- name: w0\n  role: worker\n{fields}")
    }

    #[test]
    fn boot_modes_are_the_enum_with_the_meant_one_suggested() {
        assert!(found(&host("  bootMode: UEFISecureBoot\n")).is_empty());
        assert!(found(&host("  bootMode: legacy\n")).is_empty());
        let f = found(&host("  bootMode: uefi\n"));
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].0, "invalid-value");
        let f = found(&host("  bootMode: UEFI-secure\n"));
        assert_eq!(f.len(), 1, "{f:?}");
    }

    #[test]
    fn root_device_hints_have_known_keys_of_their_types() {
        assert!(found(&host(
            "  rootDeviceHints: {deviceName: /dev/sda, minSizeGigabytes: 100, rotational: false}\n"
        ))
        .is_empty());
        let f = found(&host("  rootDeviceHints: {device: /dev/sda}\n"));
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].0, "unknown-field");
        let f = found(&host(
            "  rootDeviceHints: {deviceName: sda, minSizeGigabytes: big, rotational: maybe}\n",
        ));
        let codes: Vec<&str> = f.iter().map(|d| d.0.as_str()).collect();
        assert_eq!(codes, ["invalid-value"; 3], "{f:?}");
    }
}
