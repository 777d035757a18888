use super::*;

fn client(base: &str, password: &str) -> Client {
    Client::new(
        base,
        "admin",
        nodenet_model::Secret::new(password.to_string()),
        false,
        Instant::now(),
    )
    .unwrap()
}

#[test]
fn links_to_another_origin_are_not_followed() {
    let c = client("https://10.1.2.3:8000", "pw");
    assert_eq!(
        c.url("/redfish/v1/Systems").unwrap(),
        "https://10.1.2.3:8000/redfish/v1/Systems"
    );
    assert!(c.url("https://10.1.2.3:8000/redfish/v1/x").is_ok());
    for other in [
        "https://evil.example/redfish/v1/x",
        "http://10.1.2.3:8000/redfish/v1/x",
        "https://10.1.2.3:8443/redfish/v1/x",
        "https://10.1.2.3/redfish/v1/x",
    ] {
        let e = c.url(other).unwrap_err().to_string();
        assert!(e.contains("outside its own address"), "{other}: {e}");
    }
}

#[test]
fn one_line_cuts_and_joins() {
    assert_eq!(
        one_line("<!DOCTYPE html>\n<html>\r\n\t<body>", 80),
        "<!DOCTYPE html> <html> <body>"
    );
    assert_eq!(one_line("abcdef", 3), "abc…");
}

#[test]
fn redfish_messages() {
    let body = br#"{"error": {"message": "generic", "@Message.ExtendedInfo": [{"Message": "Fan 3\nfailed"}]}}"#;
    assert_eq!(redfish_message(body), "Fan 3 failed");
    assert_eq!(
        redfish_message(br#"{"error": {"message": "generic"}}"#),
        "generic"
    );
    assert_eq!(
        redfish_message(b"Service Unavailable\nmore"),
        "Service Unavailable"
    );
}

#[test]
fn echoed_secrets_are_scrubbed() {
    let c = client("http://127.0.0.1:9", "s3cret");
    assert_eq!(
        c.scrub("got s3cret and Basic YWRtaW46czNjcmV0"),
        "got *** and Basic ***"
    );
}
