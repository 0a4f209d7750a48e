//! monoio, one runtime per thread with per-thread listeners, on either of its
//! drivers: io_uring or the legacy epoll one. The driver is a type, chosen by
//! each binary: a ring that cannot start is an error, never a silent epoll.

use std::io;
use std::marker::PhantomData;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use monoio::buf::IoBuf;
use monoio::io::{
    AsyncReadRent, AsyncWriteRent, AsyncWriteRentExt, IntoPollIo, OwnedReadHalf, OwnedWriteHalf,
    Split, Splitable,
};
use monoio::net::tcp::stream_poll::TcpStreamPoll;
use monoio::net::udp::UdpSocket;
use monoio::net::{TcpListener, TcpStream};
use monoio::time::TimeDriver;
use monoio::{Buildable, IoUringDriver, LegacyDriver, RuntimeBuilder};
use monoio_rustls::{ClientTlsStream, ServerTlsStream, TlsAcceptor, TlsConnector};
use pingpong::client::{all_connections, connection, datagram_connection};
use pingpong::knobs::{self, Settings};
use pingpong::server::{
    DatagramServer, Web, Writer, accept_loop, answer, connected_datagrams, serve,
};
use pingpong::tls::{Connector, handshake_failed};
use pingpong::tokio_io::TokioIo;
use pingpong::{Client, ListenerModel, Server, Unavailable, on_threads};

/// Submission queue entries: room for a read or write of every one of
/// 10,000 connections without waiting for the ring (monoio's default is 1,024).
const RING_ENTRIES: u32 = 16_384;

/// A monoio driver, and what a failure to build it means.
pub trait Driver: Buildable + monoio::Driver + 'static {
    /// The driver with monoio's timer over it.
    type Timed: Buildable + monoio::Driver;

    fn build_error(error: io::Error) -> io::Error;

    fn with_timer(builder: RuntimeBuilder<Self>) -> RuntimeBuilder<Self::Timed>;
}

impl Driver for IoUringDriver {
    type Timed = TimeDriver<Self>;

    fn build_error(error: io::Error) -> io::Error {
        Unavailable::io_uring(error)
    }

    fn with_timer(builder: RuntimeBuilder<Self>) -> RuntimeBuilder<Self::Timed> {
        builder.enable_timer()
    }
}

impl Driver for LegacyDriver {
    type Timed = TimeDriver<Self>;

    fn build_error(error: io::Error) -> io::Error {
        error
    }

    fn with_timer(builder: RuntimeBuilder<Self>) -> RuntimeBuilder<Self::Timed> {
        builder.enable_timer()
    }
}

/// One monoio runtime per thread on driver `D`.
pub struct PerThread<D>(PhantomData<D>);

fn runtime<D: Driver>(knobs: &Settings) -> io::Result<monoio::Runtime<D>> {
    D::build(builder(knobs)).map_err(D::build_error)
}

/// With the timer a UDP client waits for its answers with.
fn timed_runtime<D: Driver>(knobs: &Settings) -> io::Result<monoio::Runtime<D::Timed>> {
    D::Timed::build(D::with_timer(builder(knobs))).map_err(D::build_error)
}

fn builder<D: Driver>(knobs: &Settings) -> RuntimeBuilder<D> {
    let entries = knobs.get("entries").map_or(RING_ENTRIES, |n| n as u32);
    RuntimeBuilder::<D>::new().with_entries(entries)
}

/// A monoio stream: a TCP socket, or TLS over one (monoio-rustls), which
/// says goodbye before it is dropped (close_notify).
pub struct Io<S> {
    stream: S,
    tls: bool,
}

pub type Tcp = Io<TcpStream>;
/// monoio-rustls's streams implement monoio's IO traits per side.
type TlsClient = Io<ClientTlsStream<TcpStream>>;
type TlsServer = Io<ServerTlsStream<TcpStream>>;

impl Tcp {
    /// The connection as the futures-io stream that the HTTP and WebSocket
    /// servers take: through monoio's poll-io (readiness over its driver,
    /// as monoio offers poll-based libraries), which implements tokio's
    /// IO traits.
    fn futures_io(self) -> io::Result<TokioIo<TcpStreamPoll>> {
        Ok(TokioIo(self.stream.into_poll_io()?))
    }

    async fn connect(addr: SocketAddr) -> io::Result<Self> {
        let stream = TcpStream::connect_addr(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Self { stream, tls: false })
    }

    async fn accept(listener: &TcpListener) -> io::Result<Self> {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        Ok(Self { stream, tls: false })
    }
}

impl TlsClient {
    async fn connect(tls: Arc<Connector>, addr: SocketAddr) -> io::Result<Self> {
        let tcp = Tcp::connect(addr).await?.stream;
        let stream = TlsConnector::from(tls.config.clone())
            .connect(Connector::server_name(), tcp)
            .await
            .map_err(|e| handshake_failed(e.into()))?;
        Ok(Self { stream, tls: true })
    }
}

impl TlsServer {
    async fn accept(tls: Arc<rustls::ServerConfig>, tcp: Tcp) -> io::Result<Self> {
        let stream = TlsAcceptor::from(tls).accept(tcp.stream).await?;
        Ok(Self { stream, tls: true })
    }
}

impl<S: AsyncReadRent> pingpong::Reads for Io<S> {
    async fn read(&mut self, buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        // monoio reads into the Vec from its start, up to its capacity.
        self.stream.read(buf).await
    }
}

impl<S: AsyncWriteRent> pingpong::Writes for Io<S> {
    async fn write_all(&mut self, buf: Vec<u8>, len: usize) -> (io::Result<()>, Vec<u8>) {
        let (written, slice) = self.stream.write_all(buf.slice(..len)).await;
        (written.map(drop), slice.into_inner())
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

/// monoio's own split, for its streams that may be read and written at
/// once (its TCP socket, and monoio-rustls over one).
impl<S: Split + AsyncReadRent + AsyncWriteRent + 'static> pingpong::Split for Io<S> {
    type Read = Io<OwnedReadHalf<S>>;
    type Write = Io<OwnedWriteHalf<S>>;

    fn split(self) -> (Self::Read, Self::Write) {
        let (read, write) = self.stream.into_split();
        let tls = self.tls;
        (Io { stream: read, tls }, Io { stream: write, tls })
    }
}

/// A monoio UDP socket. A receive dropped on a timeout is cancelled in
/// the ring (monoio's async-cancel), so that it takes no later datagram.
struct Udp(UdpSocket);

impl Udp {
    async fn open(server: SocketAddr) -> io::Result<Self> {
        UdpSocket::from_std(connected_datagrams(server)?).map(Self)
    }
}

impl pingpong::Datagrams for Udp {
    async fn send(&mut self, buf: Vec<u8>, len: usize) -> (io::Result<()>, Vec<u8>) {
        let (sent, slice) = self.0.send(buf.slice(..len)).await;
        (pingpong::datagram::whole(sent, len), slice.into_inner())
    }

    async fn recv(&mut self, buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        // Into the Vec from its start, up to its capacity.
        self.0.recv(buf).await
    }

    async fn recv_from(&mut self, buf: Vec<u8>) -> (io::Result<(usize, SocketAddr)>, Vec<u8>) {
        self.0.recv_from(buf).await
    }

    async fn send_to(
        &mut self,
        buf: Vec<u8>,
        len: usize,
        to: SocketAddr,
    ) -> (io::Result<()>, Vec<u8>) {
        let (sent, slice) = self.0.send_to(buf.slice(..len), to).await;
        (pingpong::datagram::whole(sent, len), slice.into_inner())
    }
}

impl<D: Driver> pingpong::Runtime for PerThread<D> {
    const LISTENERS: ListenerModel = ListenerModel::PerThread;
    const KNOBS: &'static [knobs::Knob] = knobs::MONOIO;

    fn serve(server: Server) -> io::Result<()> {
        let ready = &server.ready;
        on_threads("server", server.listeners, |listener| {
            runtime::<D>(&server.knobs)?.block_on(async {
                let listener = TcpListener::from_std(listener)?;
                let echo = server.echo.spawning(1, |task| drop(monoio::spawn(task)));
                accept_loop(
                    ready,
                    async || Tcp::accept(&listener).await,
                    |stream| {
                        let tls = server.tls.clone();
                        drop(monoio::spawn(serve(
                            stream,
                            tls,
                            TlsServer::accept,
                            echo.clone(),
                            |writer: Writer<_>| drop(monoio::spawn(writer.run())),
                        )));
                    },
                )
                .await
            })
        })
    }

    fn serve_web(server: Server) -> io::Result<()> {
        let web = Web::of(&server);
        on_threads("server", server.listeners, |listener| {
            runtime::<D>(&server.knobs)?.block_on(async {
                let listener = TcpListener::from_std(listener)?;
                accept_loop(
                    &server.ready,
                    async || Tcp::accept(&listener).await?.futures_io(),
                    |stream| drop(monoio::spawn(web.clone().serve(stream))),
                )
                .await
            })
        })
    }

    fn client(client: &Arc<Client>) -> io::Result<()> {
        on_threads("client", (0..client.config.threads).collect(), |thread| {
            runtime::<D>(&client.config.knobs)?.block_on(async {
                all_connections(client.connections_of(thread), || match &client.config.tls {
                    None => monoio::spawn(connection(client.clone(), Tcp::connect)),
                    Some(tls) => {
                        let tls = tls.clone();
                        monoio::spawn(connection(client.clone(), move |addr| {
                            TlsClient::connect(tls.clone(), addr)
                        }))
                    }
                })
                .await
            })
        })
    }

    fn serve_udp(server: DatagramServer) -> io::Result<()> {
        on_threads("server", server.sockets, |socket| {
            runtime::<D>(&server.knobs)?.block_on(async {
                answer(server.ready.clone(), Udp(UdpSocket::from_std(socket)?)).await
            })
        })
    }

    fn client_udp(client: &Arc<Client>) -> io::Result<()> {
        on_threads("client", (0..client.config.threads).collect(), |thread| {
            timed_runtime::<D>(&client.config.knobs)?.block_on(async {
                all_connections(client.connections_of(thread), || {
                    monoio::spawn(datagram_connection(client.clone(), Udp::open, sleep))
                })
                .await
            })
        })
    }
}

async fn sleep(timeout: Duration) {
    monoio::time::sleep(timeout).await;
}
