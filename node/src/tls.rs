//! TLS for client and peer traffic, with etcd's flags: `--cert-file`,
//! `--key-file`, `--trusted-ca-file`, `--client-cert-auth` for the gRPC
//! client API and their `--peer-*` twins for the peer transport.
//!
//! It exists so that a member can be reached only by whom the operator
//! chose: with `--client-cert-auth` a client must show a certificate signed
//! by `--trusted-ca-file`, and with `--peer-client-cert-auth` a peer one
//! signed by `--peer-trusted-ca-file`, as in etcd. The client API uses
//! tonic's rustls support; the peer transport wraps its TCP streams with
//! tokio-rustls (both sides, so a peer with a certificate from another CA
//! can neither dial in nor be dialled). TLS is on for a side when its
//! certificate flags are given; its URLs are then advertised as https://.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

use clap::Args;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{ClientConfig, RootCertStore, ServerConfig};
use tokio_rustls::{TlsAcceptor, TlsConnector};

/// etcd's TLS flags.
#[derive(Args, Clone, Debug, Default)]
pub struct TlsArgs {
    /// Client API certificate (PEM); turns on TLS for --listen-client-urls.
    #[arg(long, requires = "key_file")]
    pub cert_file: Option<PathBuf>,
    /// Client API private key (PEM).
    #[arg(long, requires = "cert_file")]
    pub key_file: Option<PathBuf>,
    /// CA certificate(s) (PEM) that client certificates must be signed by.
    #[arg(long)]
    pub trusted_ca_file: Option<PathBuf>,
    /// Refuse clients without a certificate signed by --trusted-ca-file.
    #[arg(long, requires = "trusted_ca_file")]
    pub client_cert_auth: bool,
    /// Peer certificate (PEM), shown both when listening and when dialling
    /// peers; turns on TLS for the peer transport.
    #[arg(long, requires_all = ["peer_key_file", "peer_trusted_ca_file"])]
    pub peer_cert_file: Option<PathBuf>,
    /// Peer private key (PEM).
    #[arg(long, requires = "peer_cert_file")]
    pub peer_key_file: Option<PathBuf>,
    /// CA certificate(s) (PEM) peers' certificates must be signed by (also
    /// what a dialled peer's certificate is checked against).
    #[arg(long, requires = "peer_cert_file")]
    pub peer_trusted_ca_file: Option<PathBuf>,
    /// Refuse peers without a certificate signed by --peer-trusted-ca-file.
    #[arg(long, requires = "peer_trusted_ca_file")]
    pub peer_client_cert_auth: bool,
}

impl TlsArgs {
    /// The scheme of this member's client URLs.
    pub fn client_scheme(&self) -> &'static str {
        if self.cert_file.is_some() {
            "https"
        } else {
            "http"
        }
    }

    /// The scheme of this member's peer URLs.
    pub fn peer_scheme(&self) -> &'static str {
        if self.peer_cert_file.is_some() {
            "https"
        } else {
            "http"
        }
    }

    /// Holds `--initial-cluster`'s schemes against the peer TLS flags, as
    /// etcd does: https:// peers need --peer-cert-file, and with it every
    /// peer URL must be https://.
    pub fn check_peer_urls(&self, initial_cluster: &str) -> Result<(), String> {
        for part in initial_cluster.split(',').filter(|p| !p.trim().is_empty()) {
            let url = part.split_once('=').map_or(part, |(_, url)| url).trim();
            match (url.starts_with("https://"), self.peer_cert_file.is_some()) {
                (true, false) => {
                    return Err(format!("--initial-cluster: {url} is https:// but --peer-cert-file/--peer-key-file are not given"))
                }
                (false, true) => return Err(format!("--initial-cluster: {url} is not https:// although --peer-cert-file is given")),
                _ => {}
            }
        }
        Ok(())
    }

    /// The gRPC server's TLS settings (None: plain HTTP/2).
    pub fn client_server(&self) -> Result<Option<tonic::transport::ServerTlsConfig>, String> {
        let (Some(cert), Some(key)) = (&self.cert_file, &self.key_file) else {
            return Ok(None);
        };
        let identity = tonic::transport::Identity::from_pem(read(cert, "--cert-file")?, read(key, "--key-file")?);
        // Checked here, not by the handshake, so a bad file stops the start.
        server_config(cert, key, None, "--cert-file", "--key-file")?;
        let mut tls = tonic::transport::ServerTlsConfig::new().identity(identity);
        if self.client_cert_auth {
            let ca = self.trusted_ca_file.as_ref().expect("clap requires --trusted-ca-file");
            roots(ca, "--trusted-ca-file")?;
            tls = tls.client_ca_root(tonic::transport::Certificate::from_pem(read(ca, "--trusted-ca-file")?));
        }
        Ok(Some(tls))
    }

    /// How this member calls another member's client API (forwarding a
    /// membership change to the leader): its own certificate, and the
    /// trusted CA as the root (None: plain HTTP/2).
    pub fn client_dialer(&self) -> Result<Option<tonic::transport::ClientTlsConfig>, String> {
        let (Some(cert), Some(key)) = (&self.cert_file, &self.key_file) else {
            return Ok(None);
        };
        let mut tls = tonic::transport::ClientTlsConfig::new()
            .identity(tonic::transport::Identity::from_pem(read(cert, "--cert-file")?, read(key, "--key-file")?));
        if let Some(ca) = &self.trusted_ca_file {
            tls = tls.ca_certificate(tonic::transport::Certificate::from_pem(read(ca, "--trusted-ca-file")?));
        }
        Ok(Some(tls))
    }

    /// The peer transport's TLS (plain TCP when no peer certificate).
    pub fn peer(&self) -> Result<PeerTls, String> {
        let (Some(cert), Some(key), Some(ca)) = (&self.peer_cert_file, &self.peer_key_file, &self.peer_trusted_ca_file) else {
            return Ok(PeerTls::default());
        };
        let client_ca = self.peer_client_cert_auth.then_some(ca.as_path());
        let server = server_config(cert, key, client_ca, "--peer-cert-file", "--peer-key-file")?;
        let client = ClientConfig::builder()
            .with_root_certificates(roots(ca, "--peer-trusted-ca-file")?)
            .with_client_auth_cert(certs(cert, "--peer-cert-file")?, private_key(key, "--peer-key-file")?)
            .map_err(|e| format!("--peer-cert-file {} / --peer-key-file {}: {e}", cert.display(), key.display()))?;
        Ok(PeerTls { acceptor: Some(TlsAcceptor::from(Arc::new(server))), connector: Some(TlsConnector::from(Arc::new(client))) })
    }
}

/// A peer connection, plain or TLS.
pub trait PeerIo: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> PeerIo for T {}
pub type PeerStream = Pin<Box<dyn PeerIo>>;

/// Both ends of the peer transport's TLS; the default is plain TCP.
#[derive(Clone, Default)]
pub struct PeerTls {
    acceptor: Option<TlsAcceptor>,
    connector: Option<TlsConnector>,
}

impl PeerTls {
    /// Dials `addr`, checking its certificate names that IP when TLS is on.
    pub async fn dial(&self, addr: SocketAddr) -> std::io::Result<PeerStream> {
        let stream = TcpStream::connect(addr).await?;
        let _ = stream.set_nodelay(true);
        match &self.connector {
            None => Ok(Box::pin(stream)),
            Some(connector) => Ok(Box::pin(connector.connect(ServerName::IpAddress(addr.ip().into()), stream).await?)),
        }
    }

    /// Completes an accepted connection's handshake when TLS is on; a peer
    /// whose certificate does not verify fails here.
    pub async fn accept(&self, stream: TcpStream) -> std::io::Result<PeerStream> {
        let _ = stream.set_nodelay(true);
        match &self.acceptor {
            None => Ok(Box::pin(stream)),
            Some(acceptor) => Ok(Box::pin(acceptor.accept(stream).await?)),
        }
    }

    pub fn is_on(&self) -> bool {
        self.connector.is_some()
    }
}

fn read(path: &Path, flag: &str) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{flag} {}: {e}", path.display()))
}

fn certs(path: &Path, flag: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let bytes = read(path, flag)?;
    let certs: Vec<_> =
        rustls_pemfile::certs(&mut bytes.as_slice()).collect::<Result<_, _>>().map_err(|e| format!("{flag} {}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("{flag} {}: no PEM certificate in the file", path.display()));
    }
    Ok(certs)
}

fn private_key(path: &Path, flag: &str) -> Result<PrivateKeyDer<'static>, String> {
    let bytes = read(path, flag)?;
    rustls_pemfile::private_key(&mut bytes.as_slice())
        .map_err(|e| format!("{flag} {}: {e}", path.display()))?
        .ok_or_else(|| format!("{flag} {}: no PEM private key in the file", path.display()))
}

fn roots(path: &Path, flag: &str) -> Result<RootCertStore, String> {
    let mut store = RootCertStore::empty();
    for cert in certs(path, flag)? {
        store.add(cert).map_err(|e| format!("{flag} {}: {e}", path.display()))?;
    }
    Ok(store)
}

/// A rustls server config from PEM files; `client_ca` set: clients must
/// show a certificate it signed.
fn server_config(cert: &Path, key: &Path, client_ca: Option<&Path>, cert_flag: &str, key_flag: &str) -> Result<ServerConfig, String> {
    let builder = ServerConfig::builder();
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let verifier = WebPkiClientVerifier::builder(Arc::new(roots(ca, "--peer-trusted-ca-file")?))
                .build()
                .map_err(|e| format!("--peer-trusted-ca-file {}: {e}", ca.display()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    builder
        .with_single_cert(certs(cert, cert_flag)?, private_key(key, key_flag)?)
        .map_err(|e| format!("{cert_flag} {} / {key_flag} {}: {e}", cert.display(), key.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_url_schemes_must_match_the_peer_flags() {
        let plain = TlsArgs::default();
        assert!(plain.check_peer_urls("s1=http://127.0.0.1:1,s2=http://127.0.0.1:2").is_ok());
        assert!(plain.check_peer_urls("s1=https://127.0.0.1:1").unwrap_err().contains("--peer-cert-file"));
        let tls = TlsArgs { peer_cert_file: Some("c.pem".into()), ..TlsArgs::default() };
        assert!(tls.check_peer_urls("s1=https://127.0.0.1:1").is_ok());
        assert!(tls.check_peer_urls("s1=https://127.0.0.1:1,s2=http://127.0.0.1:2").unwrap_err().contains("http://127.0.0.1:2"));
    }
}
