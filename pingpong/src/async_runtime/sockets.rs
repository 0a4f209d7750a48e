//! The IO of every runtime whose sockets implement the futures-io traits
//! (async-std, smol, glommio), written once: its glue says how its
//! sockets listen, accept, connect and take a UDP socket in ([`Sockets`]),
//! and [`OverSockets`] is the rest: TCP_NODELAY, TLS over futures-rustls,
//! the split, and the socket itself as the futures-io view.

use std::io;
use std::marker::PhantomData;
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::Arc;

use futures_lite::{AsyncRead, AsyncWrite};

use super::interface::Io;
use crate::datagram::Datagrams;
use crate::futures_io::{Compat, Tls};
use crate::tls::{Connector, ServerConfig};

/// A runtime's futures-io sockets: how they come to be.
#[allow(async_fn_in_trait)]
pub trait Sockets: 'static {
    type Listener: 'static;
    type Stream: AsyncRead + AsyncWrite + AsRawFd + Unpin + 'static;
    type Udp: Datagrams + 'static;

    /// The listener, made inside the executor from a bound, listening,
    /// non-blocking socket.
    fn listener(listener: TcpListener) -> io::Result<Self::Listener>;
    async fn accept(listener: &Self::Listener) -> io::Result<Self::Stream>;
    async fn connect(addr: SocketAddr) -> io::Result<Self::Stream>;
    /// The UDP socket, made inside the executor.
    fn udp(socket: UdpSocket) -> io::Result<Self::Udp>;
}

/// The [`Io`] of a runtime whose sockets are `S`.
pub struct OverSockets<S>(PhantomData<S>);

impl<S: Sockets> Io for OverSockets<S> {
    type Listener = S::Listener;

    fn listener(listener: TcpListener) -> io::Result<S::Listener> {
        S::listener(listener)
    }

    type Tcp = Compat<S::Stream>;

    async fn accept(listener: &S::Listener) -> io::Result<Self::Tcp> {
        Compat::nodelay(S::accept(listener).await?)
    }

    async fn connect(addr: SocketAddr) -> io::Result<Self::Tcp> {
        Compat::nodelay(S::connect(addr).await?)
    }

    type TlsServer = Tls<S::Stream>;
    type TlsClient = Tls<S::Stream>;

    async fn tls_accept(config: Arc<ServerConfig>, tcp: Self::Tcp) -> io::Result<Self::TlsServer> {
        Tls::accept(config, tcp).await
    }

    async fn tls_connect(connector: Arc<Connector>, tcp: Self::Tcp) -> io::Result<Self::TlsClient> {
        Tls::connect(&connector, tcp).await
    }

    type Udp = S::Udp;

    fn udp(socket: UdpSocket) -> io::Result<S::Udp> {
        S::udp(socket)
    }

    type FuturesIo = S::Stream;

    fn futures_io(tcp: Self::Tcp) -> io::Result<S::Stream> {
        Ok(tcp.0)
    }
}
