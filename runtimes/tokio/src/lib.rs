//! tokio's streams behind the pingpong trait, plain and inside TLS
//! (tokio-rustls), shared by both tokio models.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use pingpong::knobs::Settings;
use pingpong::tls::{Connector, handshake_failed};
use pingpong::tokio_io::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadHalf, WriteHalf};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::runtime::{Builder, Runtime};
use tokio_rustls::{TlsAcceptor, TlsConnector, TlsStream};

/// Builds `builder` with IO and the knobs set (`pingpong::knobs::TOKIO`
/// and `TOKIO_LOCAL` name them).
pub fn runtime(builder: &mut Builder, knobs: &Settings) -> io::Result<Runtime> {
    builder.enable_io();
    if let Some(n) = knobs.get("event_interval") {
        builder.event_interval(n as u32);
    }
    if let Some(n) = knobs.get("global_queue_interval") {
        builder.global_queue_interval(n as u32);
    }
    if let Some(n) = knobs.get("max_io_events_per_tick") {
        builder.max_io_events_per_tick(n as usize);
    }
    if let Some(n) = knobs.get("max_io_events_per_busy_tick") {
        busy_tick(builder, n as usize)?;
    }
    if knobs.get("disable_lifo_slot") == Some(1) {
        disable_lifo_slot(builder)?;
    }
    builder.build()
}

#[cfg(tokio_busy_tick)]
fn busy_tick(builder: &mut Builder, events: usize) -> io::Result<()> {
    builder.max_io_events_per_busy_tick(events);
    Ok(())
}

/// Releases before 1.54.0 (#8410) have no such setting; the build script says which this is.
#[cfg(not(tokio_busy_tick))]
fn busy_tick(_: &mut Builder, _: usize) -> io::Result<()> {
    Err(io::Error::other(
        "max_io_events_per_busy_tick came with tokio 1.54.0; this binary is built against an older tokio",
    ))
}

#[cfg(tokio_unstable)]
fn disable_lifo_slot(builder: &mut Builder) -> io::Result<()> {
    builder.disable_lifo_slot();
    Ok(())
}

#[cfg(not(tokio_unstable))]
fn disable_lifo_slot(_: &mut Builder) -> io::Result<()> {
    Err(io::Error::other(
        "disable_lifo_slot is unstable in tokio: this binary was built without --cfg tokio_unstable",
    ))
}

/// The server's accept loop, as the knobs have it: by default as tokio's
/// users write it, where its budget makes the loop yield after 128 accepts
/// to the connections it spawned; with `accept_unconstrained`, inside
/// `tokio::task::unconstrained`, so that it accepts until the queue is empty.
pub async fn accepting<F: Future>(knobs: &Settings, accept_loop: F) -> F::Output {
    match knobs.get("accept_unconstrained") == Some(1) {
        true => tokio::task::unconstrained(accept_loop).await,
        false => accept_loop.await,
    }
}

/// Spawns `task` on the runtime this is called in, detached.
pub fn spawn(task: impl Future<Output = ()> + Send + 'static) {
    drop(tokio::spawn(task));
}

/// A tokio stream: a TCP socket, or TLS over one (which says goodbye
/// before it is dropped: close_notify).
pub struct Io<S> {
    stream: S,
    tls: bool,
}

pub type Tcp = Io<TcpStream>;
pub type Tls = Io<TlsStream<TcpStream>>;

impl Tcp {
    pub async fn connect(addr: SocketAddr) -> io::Result<Self> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Self { stream, tls: false })
    }

    pub async fn accept(listener: &TcpListener) -> io::Result<Self> {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        Ok(Self { stream, tls: false })
    }
}

impl Tcp {
    /// The connection as the futures-io stream that the HTTP and WebSocket
    /// servers take ([`pingpong::server::Web`]).
    pub fn futures_io(self) -> TokioIo<TcpStream> {
        TokioIo(self.stream)
    }
}

impl Tls {
    /// Connects, then completes the TLS handshake.
    pub async fn connect(tls: Arc<Connector>, addr: SocketAddr) -> io::Result<Self> {
        let tcp = Tcp::connect(addr).await?.stream;
        let stream = TlsConnector::from(tls.config.clone())
            .connect(Connector::server_name(), tcp)
            .await
            .map_err(handshake_failed)?;
        Ok(Self {
            stream: stream.into(),
            tls: true,
        })
    }

    /// Completes the server's side of the handshake on an accepted socket.
    pub async fn accept(tls: Arc<rustls::ServerConfig>, tcp: Tcp) -> io::Result<Self> {
        let stream = TlsAcceptor::from(tls).accept(tcp.stream).await?;
        Ok(Self {
            stream: stream.into(),
            tls: true,
        })
    }
}

impl<S: AsyncRead + Unpin> pingpong::Reads for Io<S> {
    async fn read(&mut self, mut buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        // read_buf fills the Vec's spare capacity: no zeroing, no allocation.
        buf.clear();
        let read = self.stream.read_buf(&mut buf).await;
        (read, buf)
    }
}

impl<S: AsyncWrite + Unpin> pingpong::Writes for Io<S> {
    async fn write_all(&mut self, buf: Vec<u8>, len: usize) -> (io::Result<()>, Vec<u8>) {
        // TLS may keep records it could not send yet: flush sends them (a
        // no-op on a TCP socket).
        let written = match self.stream.write_all(&buf[..len]).await {
            Ok(()) => self.stream.flush().await,
            Err(e) => Err(e),
        };
        (written, buf)
    }

    async fn shutdown_write(&mut self) -> io::Result<()> {
        self.stream.shutdown().await
    }

    async fn close(&mut self) {
        if self.tls {
            // close_notify; the peer has gone if it fails.
            let _ = self.stream.shutdown().await;
        }
    }
}

/// tokio's split, the one way for TCP and TLS alike: each half takes the
/// stream for one poll at a time.
impl<S: AsyncRead + AsyncWrite + Unpin + 'static> pingpong::Split for Io<S> {
    type Read = Io<ReadHalf<S>>;
    type Write = Io<WriteHalf<S>>;

    fn split(self) -> (Self::Read, Self::Write) {
        let (read, write) = tokio::io::split(self.stream);
        let tls = self.tls;
        (Io { stream: read, tls }, Io { stream: write, tls })
    }
}

/// A tokio UDP socket: a client's, connected to the server, or one of a
/// server's.
pub struct Udp(UdpSocket);

impl Udp {
    pub async fn open(server: SocketAddr) -> io::Result<Self> {
        Self::from_std(pingpong::server::connected_datagrams(server)?)
    }

    pub fn from_std(socket: std::net::UdpSocket) -> io::Result<Self> {
        UdpSocket::from_std(socket).map(Self)
    }
}

/// The client's timer over UDP: its runtime is built with tokio's time
/// driver (which TCP runs go without).
pub async fn sleep(timeout: Duration) {
    tokio::time::sleep(timeout).await
}

pingpong::lent_datagrams!(Udp);
