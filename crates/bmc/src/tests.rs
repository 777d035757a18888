use std::time::Duration;

use super::*;

#[test]
fn addresses() {
    assert_eq!(
        parse_address("redfish-virtualmedia+http://192.168.111.1:8000/redfish/v1/Systems/abc")
            .unwrap(),
        (
            "http://192.168.111.1:8000".to_string(),
            Some("/redfish/v1/Systems/abc".to_string())
        )
    );
    assert_eq!(
        parse_address("idrac-virtualmedia://10.0.0.5").unwrap(),
        ("https://10.0.0.5".to_string(), None)
    );
    assert_eq!(
        parse_address("ilo5-virtualmedia://10.0.0.6/redfish/v1/Systems/1/")
            .unwrap()
            .1
            .as_deref(),
        Some("/redfish/v1/Systems/1")
    );
    assert!(parse_address("ipmi://10.0.0.1").is_err());
    assert!(parse_address("redfish-virtualmedia://admin:pw@10.0.0.1/x").is_err());
}

#[test]
fn errors_say_where_and_how_often() {
    let e = BmcError::new(
        "reading the system",
        Failure::Http {
            status: 500,
            message: "Internal error".into(),
        },
    )
    .sent("GET http://10.0.0.1/redfish/v1/Systems/1".into(), 5);
    assert_eq!(
        e.to_string(),
        "reading the system: the BMC answered 500: Internal error \
             [GET http://10.0.0.1/redfish/v1/Systems/1, 5 attempts]"
    );
    let e = BmcError::new(
        "powering on",
        Failure::Timeout {
            waited: Duration::from_millis(5990),
            deadline: true,
        },
    )
    .sent("POST http://10.0.0.1/x".into(), 1)
    .at_bmc("http://10.0.0.1/redfish/v1/Systems/1");
    assert_eq!(
        e.to_string(),
        "powering on: no answer before the deadline (waited 6 s) [POST http://10.0.0.1/x]"
    );
    let e = BmcError::new("verifying", Failure::Protocol("media not inserted".into()))
        .at_bmc("http://10.0.0.1 (its only system)");
    assert_eq!(
        e.to_string(),
        "verifying: media not inserted [BMC http://10.0.0.1 (its only system)]"
    );
    let e = BmcError::new(
        "reading the system",
        Failure::Http {
            status: 401,
            message: String::new(),
        },
    )
    .sent("GET http://10.0.0.1/s".into(), 1);
    assert_eq!(
            e.to_string(),
            "reading the system: the BMC answered 401 (wrong username or password?) [GET http://10.0.0.1/s]"
        );
    assert_eq!(
        Failure::Timeout {
            waited: Duration::from_secs(79),
            deadline: false
        }
        .to_string(),
        "no answer within 15 s per attempt (waited 79 s)"
    );
    assert_eq!(
        Failure::Timeout {
            waited: Duration::ZERO,
            deadline: true
        }
        .to_string(),
        "the deadline passed before the request could be sent"
    );
}
