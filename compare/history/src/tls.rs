//! TLS to a PostgreSQL history, with rustls (the suite's one TLS library),
//! asked for in its URL as libpq spells it: `sslmode=disable`, `require`
//! (encrypted, the server not verified) or `verify-full` (its certificate
//! chained to a root and naming the host), and `sslrootcert=FILE` (PEM)
//! for the roots instead of the system's. Without `sslmode`: `verify-full`,
//! but for a server on this host (localhost, a loopback address or a
//! socket), where nothing crosses a network: `disable`.
//!
//! The password comes from the URL or, as libpq reads it, from
//! `PGPASSWORD`, which keeps it off the command line (and so out of `ps`
//! and the results' recorded command).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use postgres::config::{Host, SslMode};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres_rustls::MakeRustlsConnect;

/// The environment variable libpq reads a password from.
pub const PASSWORD_ENV: &str = "PGPASSWORD";

/// How a connection protects itself, as libpq names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Disable,
    Require,
    VerifyFull,
}

impl Mode {
    fn parse(text: &str) -> Result<Self> {
        Ok(match text {
            "disable" => Self::Disable,
            "require" => Self::Require,
            "verify-full" => Self::VerifyFull,
            other => bail!(
                "sslmode={other} is not one the history takes: disable, require or verify-full"
            ),
        })
    }
}

/// A connection's settings and its TLS, where it has any.
pub struct Connection {
    pub config: postgres::Config,
    pub mode: Mode,
    pub tls: Option<MakeRustlsConnect>,
}

/// The settings of `url`, its `sslmode` and `sslrootcert` taken out (the
/// PostgreSQL client knows neither `verify-full` nor a root file).
pub fn connection(url: &str) -> Result<Connection> {
    // Parse errors name no part of the URL: it may hold a password.
    let mut parsed = url::Url::parse(url).context("the history's URL is not a URL")?;
    let (mut mode, mut root, mut rest) = (None, None, Vec::new());
    for (key, value) in parsed.query_pairs() {
        match key.as_ref() {
            "sslmode" => mode = Some(Mode::parse(&value)?),
            "sslrootcert" => root = Some(PathBuf::from(value.as_ref())),
            _ => rest.push((key.into_owned(), value.into_owned())),
        }
    }
    match rest.is_empty() {
        true => parsed.set_query(None),
        false => {
            parsed.query_pairs_mut().clear().extend_pairs(rest);
        }
    }
    let mut config: postgres::Config = parsed
        .as_str()
        .parse()
        .context("the history's URL is not one the PostgreSQL client takes")?;
    if config.get_password().is_none()
        && let Ok(password) = std::env::var(PASSWORD_ENV)
    {
        config.password(password);
    }
    let local = config.get_hosts().iter().all(|host| match host {
        Host::Tcp(name) => matches!(name.as_str(), "localhost" | "127.0.0.1" | "::1" | "[::1]"),
        Host::Unix(_) => true,
    });
    let mode = mode.unwrap_or(match local {
        true => Mode::Disable,
        false => Mode::VerifyFull,
    });
    let tls = match mode {
        Mode::Disable => None,
        Mode::Require => Some(unverified()),
        Mode::VerifyFull => Some(verified(root)?),
    };
    config.ssl_mode(match mode {
        Mode::Disable => SslMode::Disable,
        Mode::Require | Mode::VerifyFull => SslMode::Require,
    });
    Ok(Connection { config, mode, tls })
}

/// TLS that trusts the roots of `file`, or the system's.
fn verified(file: Option<PathBuf>) -> Result<MakeRustlsConnect> {
    let mut roots = RootCertStore::empty();
    match file {
        Some(file) => {
            let certificates = CertificateDer::pem_file_iter(&file)
                .and_then(|all| all.collect::<Result<Vec<_>, _>>())
                .with_context(|| format!("reading the root certificates of {}", file.display()))?;
            if certificates.is_empty() {
                bail!("{} holds no PEM certificate", file.display());
            }
            for certificate in certificates {
                roots
                    .add(certificate)
                    .with_context(|| format!("a root certificate of {}", file.display()))?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
            if roots.is_empty() {
                bail!(
                    "sslmode=verify-full and this system has no root certificates: name \
                     the server's with sslrootcert=FILE"
                );
            }
        }
    }
    let config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .context("TLS versions")?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

/// TLS that takes any certificate: libpq's `require`.
fn unverified() -> MakeRustlsConnect {
    let config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("ring supports the default versions")
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider())))
        .with_no_client_auth();
    MakeRustlsConnect::new(config)
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// `require`'s verifier: the handshake's signatures checked, the
/// certificate not.
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mode_defaults_to_verifying_but_on_this_host_and_the_url_loses_its_tls_words() {
        let remote = connection("postgres://bench@db.example:5432/h").unwrap();
        assert_eq!(remote.mode, Mode::VerifyFull);
        let local = connection("postgres://bench@127.0.0.1:5432/h").unwrap();
        assert_eq!(local.mode, Mode::Disable);
        assert!(local.tls.is_none());
        let asked =
            connection("postgres://bench:secret@localhost/h?sslmode=require&application_name=pp")
                .unwrap();
        assert_eq!(asked.mode, Mode::Require);
        assert_eq!(asked.config.get_application_name(), Some("pp"));
        assert_eq!(asked.config.get_password(), Some(&b"secret"[..]));
        let wrong = connection("postgres://bench:secret@h/h?sslmode=verify-ca");
        let wrong = format!("{:#}", wrong.err().unwrap());
        assert!(wrong.contains("disable, require or verify-full"), "{wrong}");
        assert!(!wrong.contains("secret"), "{wrong}");
        let missing = connection("postgres://b@h/h?sslmode=verify-full&sslrootcert=/nonexistent");
        let missing = format!("{:#}", missing.err().unwrap());
        assert!(missing.contains("/nonexistent"), "{missing}");
    }
}
