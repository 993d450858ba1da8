//! A throwaway PKI for runs that need TLS (the `combiner-tls-auth` variant of
//! `server-micro`, and tests of the `rangelock` binary): a CA, a server certificate for
//! `localhost` and `127.0.0.1`, and a client certificate, generated with `rcgen` at run
//! time and written as PEM files to a fresh directory under the temp directory, which is
//! removed when the [`TempPki`] is dropped. Nothing here is fit to protect anything.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};

/// The PEM files of a throwaway PKI; see the module docs.
#[derive(Debug)]
pub struct TempPki {
    dir: PathBuf,
}

static NEXT: AtomicU64 = AtomicU64::new(0);

fn other(e: rcgen::Error) -> io::Error {
    io::Error::other(format!("cannot generate a certificate: {e}"))
}

impl TempPki {
    /// Generates the CA and both certificates and writes them.
    pub fn generate() -> io::Result<TempPki> {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("rangelock-pki-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let pki = TempPki { dir };
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(other)?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, "rangelock throwaway CA");
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().map_err(other)?)
            .map_err(other)?;
        std::fs::write(pki.ca(), ca.pem())?;
        for (name, names) in [
            ("server", vec!["localhost".to_owned(), "127.0.0.1".to_owned()]),
            ("client", vec!["rangelock-client".to_owned()]),
        ] {
            let mut params = CertificateParams::new(names).map_err(other)?;
            params.distinguished_name.push(DnType::CommonName, name);
            let key = KeyPair::generate().map_err(other)?;
            let cert = params.signed_by(&key, &ca).map_err(other)?;
            std::fs::write(pki.dir.join(format!("{name}.pem")), cert.pem())?;
            std::fs::write(pki.dir.join(format!("{name}.key")), key.serialize_pem())?;
        }
        Ok(pki)
    }

    /// The directory of the files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The CA certificate (PEM): what clients trust, and what `--tls-client-ca` takes.
    pub fn ca(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    /// The server's certificate (PEM), for `localhost` and `127.0.0.1`.
    pub fn server_cert(&self) -> PathBuf {
        self.dir.join("server.pem")
    }

    /// The server certificate's private key (PEM).
    pub fn server_key(&self) -> PathBuf {
        self.dir.join("server.key")
    }

    /// A client certificate signed by the CA (PEM).
    pub fn client_cert(&self) -> PathBuf {
        self.dir.join("client.pem")
    }

    /// The client certificate's private key (PEM).
    pub fn client_key(&self) -> PathBuf {
        self.dir.join("client.key")
    }
}

impl Drop for TempPki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
