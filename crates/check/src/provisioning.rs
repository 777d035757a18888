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
mod tests;
