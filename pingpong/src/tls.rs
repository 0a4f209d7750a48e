//! TLS, the same for every runtime, so that only the runtime differs: TLS
//! 1.3 alone, one cipher suite, one key exchange group, one crypto provider
//! (rustls with ring). The server makes a self-signed certificate at start
//! and prints it in its ready line; the client is told to trust exactly that
//! certificate and verifies it. Each runtime wraps its sockets with its own
//! rustls integration; what they share is here.

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
/// The server's side of every handshake, as the runtimes' TLS takes it.
pub use rustls::ServerConfig;
use rustls::client::{ClientSessionStore, Resumption};
use rustls::crypto::CryptoProvider;
use rustls::crypto::ring::{self as provider, cipher_suite, kx_group};
use rustls::pki_types::{CertificateDer, PrivatePkcs8KeyDer, ServerName};
use rustls::server::NoServerSessionStorage;
use rustls::version::TLS13;
use rustls::{ClientConfig, NamedGroup, RootCertStore};

use crate::fault::{self, Fault};
use crate::wire;

/// The name the certificate is made for and the client verifies: not an
/// address, so that the certificate holds wherever the server listens.
pub const SERVER_NAME: &str = "pingpong.test";

/// What every connection negotiates: the only version, suite and group offered.
pub const VERSION: &str = "TLSv1.3";
pub const SUITE: &str = "TLS13_AES_128_GCM_SHA256";
pub const GROUP: &str = "X25519";
pub const PROVIDER: &str = "rustls 0.23, ring 0.17";
pub const CERTIFICATE: &str = "ECDSA P-256, self-signed, made by each server at start (rcgen)";

/// Tickets a client keeps at most; each connection uses one per reconnect.
const MAX_TICKETS: usize = 65_536;

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("making the certificate: {0}")]
    Certificate(#[from] rcgen::Error),
    #[error("{0}")]
    Rustls(#[from] rustls::Error),
    #[error("--tls-trust: {0}")]
    Trust(String),
}

/// The crypto provider of every connection, narrowed to one suite and one group.
fn crypto() -> Arc<CryptoProvider> {
    Arc::new(CryptoProvider {
        cipher_suites: vec![cipher_suite::TLS13_AES_128_GCM_SHA256],
        kx_groups: vec![kx_group::X25519],
        ..provider::default_provider()
    })
}

/// A server's TLS: its configuration and the certificate it made.
pub struct Acceptor {
    pub config: Arc<ServerConfig>,
    pub certificate: CertificateDer<'static>,
}

impl Acceptor {
    /// A fresh self-signed certificate (ECDSA P-256) for [`SERVER_NAME`].
    /// With `resumption`, the server issues one stateless ticket per
    /// handshake; without, it issues none and keeps no session.
    pub fn new(resumption: bool) -> Result<Self, TlsError> {
        let made = rcgen::generate_simple_self_signed(vec![SERVER_NAME.to_string()])?;
        let certificate = made.cert.der().clone();
        let key = PrivatePkcs8KeyDer::from(made.signing_key.serialize_der());
        let mut config = ServerConfig::builder_with_provider(crypto())
            .with_protocol_versions(&[&TLS13])?
            .with_no_client_auth()
            .with_single_cert(vec![certificate.clone()], key.into())?;
        if resumption {
            config.ticketer = provider::Ticketer::new()?;
            config.send_tls13_tickets = 1;
        } else {
            config.session_storage = Arc::new(NoServerSessionStorage {});
            config.send_tls13_tickets = 0;
        }
        Ok(Self {
            config: Arc::new(config),
            certificate,
        })
    }

    /// The certificate as the ready line carries it: base64 of its DER.
    pub fn certificate_base64(&self) -> String {
        STANDARD.encode(&self.certificate)
    }
}

/// A client's TLS: its configuration, and with resumption, its tickets.
#[derive(Debug)]
pub struct Connector {
    pub config: Arc<ClientConfig>,
    tickets: Option<Arc<Tickets>>,
}

impl Connector {
    /// Trusts the one certificate `trust` (base64 DER, as the server's ready
    /// line gives it). With `resumption`, each reconnect offers a ticket
    /// from an earlier connection.
    pub fn new(trust: &str, resumption: bool) -> Result<Self, TlsError> {
        let der = STANDARD
            .decode(trust)
            .map_err(|e| TlsError::Trust(format!("not base64: {e}")))?;
        let der = match fault::get() {
            // Another certificate than the server's: every handshake must fail.
            Some(Fault::UntrustedCertificate) => Acceptor::new(false)?.certificate.to_vec(),
            _ => der,
        };
        let mut roots = RootCertStore::empty();
        roots
            .add(CertificateDer::from(der))
            .map_err(|e| TlsError::Trust(format!("not a certificate: {e}")))?;
        let mut config = ClientConfig::builder_with_provider(crypto())
            .with_protocol_versions(&[&TLS13])?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let tickets = resumption.then(Arc::<Tickets>::default);
        config.resumption = match &tickets {
            Some(tickets) => Resumption::store(tickets.clone()),
            None => Resumption::disabled(),
        };
        Ok(Self {
            config: Arc::new(config),
            tickets,
        })
    }

    /// The name every connection verifies the certificate against.
    pub fn server_name() -> ServerName<'static> {
        ServerName::try_from(SERVER_NAME).expect("a valid DNS name")
    }

    /// What the result records of this client's TLS.
    pub fn record(&self) -> wire::Tls {
        wire::Tls {
            version: VERSION.into(),
            suite: SUITE.into(),
            group: GROUP.into(),
            provider: PROVIDER.into(),
            resumption: self.tickets.is_some(),
            handshakes: self
                .tickets
                .as_ref()
                .map(|t| t.looked_up.load(Ordering::Relaxed)),
            with_ticket: self
                .tickets
                .as_ref()
                .map(|t| t.offered.load(Ordering::Relaxed)),
        }
    }
}

/// A failed handshake, said as one.
pub fn handshake_failed(error: io::Error) -> io::Error {
    io::Error::new(error.kind(), format!("TLS handshake: {error}"))
}

/// Session tickets from the one server, enough for every connection:
/// rustls's own store keeps eight per server, too few for a thousand
/// connections reconnecting at once.
#[derive(Debug, Default)]
struct Tickets {
    tickets: Mutex<VecDeque<rustls::client::Tls13ClientSessionValue>>,
    /// Handshakes: each looks for a ticket once.
    looked_up: AtomicU64,
    /// Handshakes that offered a ticket.
    offered: AtomicU64,
}

impl ClientSessionStore for Tickets {
    // One group is offered: there is nothing to hint.
    fn set_kx_hint(&self, _: ServerName<'static>, _: NamedGroup) {}

    fn kx_hint(&self, _: &ServerName<'_>) -> Option<NamedGroup> {
        None
    }

    // TLS 1.2 is never offered.
    fn set_tls12_session(
        &self,
        _: ServerName<'static>,
        _: rustls::client::Tls12ClientSessionValue,
    ) {
    }

    fn tls12_session(&self, _: &ServerName<'_>) -> Option<rustls::client::Tls12ClientSessionValue> {
        None
    }

    fn remove_tls12_session(&self, _: &ServerName<'static>) {}

    fn insert_tls13_ticket(
        &self,
        _: ServerName<'static>,
        value: rustls::client::Tls13ClientSessionValue,
    ) {
        let mut tickets = self.tickets.lock().unwrap_or_else(|e| e.into_inner());
        if tickets.len() == MAX_TICKETS {
            tickets.pop_front();
        }
        tickets.push_back(value);
    }

    fn take_tls13_ticket(
        &self,
        _: &ServerName<'static>,
    ) -> Option<rustls::client::Tls13ClientSessionValue> {
        self.looked_up.fetch_add(1, Ordering::Relaxed);
        let ticket = self
            .tickets
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_back();
        if ticket.is_some() {
            self.offered.fetch_add(1, Ordering::Relaxed);
        }
        ticket
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_trusts_the_certificate_it_is_given_and_only_that() {
        let acceptor = Acceptor::new(false).unwrap();
        let connector = Connector::new(&acceptor.certificate_base64(), false).unwrap();
        let record = connector.record();
        assert_eq!(
            (record.version.as_str(), record.suite.as_str()),
            (VERSION, SUITE)
        );
        assert_eq!((record.handshakes, record.with_ticket), (None, None));
        let e = Connector::new("not base64!", false).unwrap_err();
        assert!(e.to_string().starts_with("--tls-trust: not base64"), "{e}");
        let e = Connector::new("AAAA", false).unwrap_err();
        assert!(e.to_string().contains("not a certificate"), "{e}");
    }
}
