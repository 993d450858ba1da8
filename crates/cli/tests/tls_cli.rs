//! TLS through the binary: `rangelock serve --tls-cert --tls-key [--tls-client-ca]`, and
//! `lock` / `stat` with `--tls-ca` (plus a client certificate, or a server name) against
//! it; a plain client is told TLS is required; bad files are clear startup errors.
//! Certificates come from a throwaway PKI generated at run time.

mod common;

use std::process::Output;

use common::{lock_cmd, rangelock, ServerProc};
use rangelock_bench::tls_pki::TempPki;

fn s(p: &std::path::Path) -> String {
    p.display().to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn lock_and_stat_over_tls() {
    let pki = TempPki::generate().unwrap();
    let server = ServerProc::start(&[
        "--tls-cert",
        &s(&pki.server_cert()),
        "--tls-key",
        &s(&pki.server_key()),
    ]);
    let ca = s(&pki.ca());
    let out = lock_cmd(
        &server.addr,
        "0..100",
        &["--tls-ca", &ca],
        &["sh", "-c", "echo token=$RANGELOCK_TOKEN"],
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("token="), "{}", stdout(&out));
    // By name: the certificate is for localhost and 127.0.0.1.
    let out = lock_cmd(
        &server.addr,
        "0..100",
        &["--tls-ca", &ca, "--tls-server-name", "localhost"],
        &["true"],
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let out =
        rangelock().args(["stat", "--server", &server.addr, "--tls-ca", &ca]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("grants"), "{}", stdout(&out));

    // Without TLS: told it is required; a server it cannot use is 69, as documented.
    let out = lock_cmd(&server.addr, "0..100", &[], &["true"]).output().unwrap();
    assert_eq!(out.status.code(), Some(69), "{}", stderr(&out));
    assert!(stderr(&out).contains("requires TLS"), "{}", stderr(&out));
    // A CA that did not sign the server's certificate.
    let other = TempPki::generate().unwrap();
    let out = lock_cmd(&server.addr, "0..100", &["--tls-ca", &s(&other.ca())], &["true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(69), "{}", stderr(&out));
    assert!(stderr(&out).contains("TLS: handshake"), "{}", stderr(&out));
    let out = rangelock()
        .args(["stat", "--server", &server.addr, "--tls-ca", &s(&other.ca())])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(69), "{}", stderr(&out));
    // A name the certificate does not carry.
    let out = lock_cmd(
        &server.addr,
        "0..100",
        &["--tls-ca", &ca, "--tls-server-name", "lock.example.com"],
        &["true"],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(69), "{}", stderr(&out));
    assert!(stderr(&out).contains("name mismatch"), "{}", stderr(&out));
    server.terminate();
    // --tls-ca against a plain server.
    let plain = ServerProc::start(&[]);
    let out = lock_cmd(&plain.addr, "0..100", &["--tls-ca", &ca], &["true"]).output().unwrap();
    assert_eq!(out.status.code(), Some(69), "{}", stderr(&out));
    assert!(stderr(&out).contains("does not speak TLS"), "{}", stderr(&out));
}

#[test]
fn client_certificates_through_the_binary() {
    let pki = TempPki::generate().unwrap();
    let server = ServerProc::start(&[
        "--tls-cert",
        &s(&pki.server_cert()),
        "--tls-key",
        &s(&pki.server_key()),
        "--tls-client-ca",
        &s(&pki.ca()),
    ]);
    let ca = s(&pki.ca());
    let (cert, key) = (s(&pki.client_cert()), s(&pki.client_key()));
    let out = lock_cmd(
        &server.addr,
        "0..100",
        &["--tls-ca", &ca, "--tls-cert", &cert, "--tls-key", &key],
        &["true"],
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let out = lock_cmd(&server.addr, "0..100", &["--tls-ca", &ca], &["true"]).output().unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("requires a client certificate"), "{}", stderr(&out));
    // --tls-cert without --tls-key is a usage error.
    let out = lock_cmd(&server.addr, "0..100", &["--tls-ca", &ca, "--tls-cert", &cert], &["true"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--tls-key"), "{}", stderr(&out));
    server.terminate();
}

#[test]
fn bad_tls_files_are_clear_errors() {
    let pki = TempPki::generate().unwrap();
    let missing = pki.dir().join("missing.pem");
    let out = rangelock()
        .args(["serve", "--addr", "127.0.0.1:0", "--tls-cert", &s(&missing)])
        .args(["--tls-key", &s(&pki.server_key())])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("cannot read the TLS certificate file") && err.contains(&s(&missing)),
        "{err}"
    );
    assert!(stdout(&out).is_empty(), "never listened: {}", stdout(&out));
    // A key that is not the certificate's.
    let out = rangelock()
        .args(["serve", "--addr", "127.0.0.1:0", "--tls-cert", &s(&pki.server_cert())])
        .args(["--tls-key", &s(&pki.client_key())])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("does not hold the private key"), "{}", stderr(&out));
    // --tls-cert alone is a usage error.
    let out = rangelock()
        .args(["serve", "--addr", "127.0.0.1:0", "--tls-cert", &s(&pki.server_cert())])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--tls-key"), "{}", stderr(&out));
    // The client's CA file.
    let server = ServerProc::start(&[]);
    let out =
        lock_cmd(&server.addr, "0..1", &["--tls-ca", &s(&missing)], &["true"]).output().unwrap();
    assert_eq!(out.status.code(), Some(66), "EX_NOINPUT: {}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("cannot read the CA file") && err.contains(&s(&missing)), "{err}");
    let out = rangelock()
        .args(["stat", "--server", &server.addr, "--tls-ca", &s(&missing)])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(66), "{}", stderr(&out));
    // A client key file that holds no key.
    let (ca, cert) = (s(&pki.ca()), s(&pki.client_cert()));
    let args = ["--tls-ca", &ca, "--tls-cert", &cert, "--tls-key", &ca];
    let out = lock_cmd(&server.addr, "0..1", &args, &["true"]).output().unwrap();
    assert_eq!(out.status.code(), Some(66), "{}", stderr(&out));
    server.terminate();
}

#[test]
fn tls_settings_from_the_config_file() {
    let pki = TempPki::generate().unwrap();
    let config = pki.dir().join("serve.toml");
    let text =
        format!("tls_cert = {:?}\ntls_key = {:?}\n", s(&pki.server_cert()), s(&pki.server_key()));
    std::fs::write(&config, text).unwrap();
    let server = ServerProc::start(&["--config", &s(&config)]);
    let out =
        lock_cmd(&server.addr, "0..10", &["--tls-ca", &s(&pki.ca())], &["true"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let out = lock_cmd(&server.addr, "0..10", &[], &["true"]).output().unwrap();
    assert!(stderr(&out).contains("requires TLS"), "{}", stderr(&out));
    server.terminate();
    // A key without its certificate is refused before anything is bound.
    std::fs::write(&config, format!("tls_key = {:?}\n", s(&pki.server_key()))).unwrap();
    let out = rangelock().args(["serve", "--config", &s(&config)]).output().unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("needs `tls_cert`"), "{}", stderr(&out));
}
