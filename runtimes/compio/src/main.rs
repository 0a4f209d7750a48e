//! compio: one completion-based io_uring runtime per thread, per-thread
//! listeners. Built with the io-uring driver alone, so it cannot fall back
//! to polling.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use compio::buf::{IntoInner, IoBuf};
use compio::driver::ProactorBuilder;
use compio::io::compat::AsyncStream;
use compio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use compio::net::{TcpListener, TcpStream, UdpSocket};
use compio::runtime::{Runtime, RuntimeBuilder, spawn};
use compio::tls::{TlsAcceptor, TlsConnector, TlsStream};
use pingpong::client::{all_connections, connection, datagram_connection};
use pingpong::futures_io::{ReadSide, WriteSide, halves};
use pingpong::knobs::{self, Settings};
use pingpong::server::{
    DatagramServer, Web, Writer, accept_loop, answer, connected_datagrams, serve,
};
use pingpong::tls::{Connector, SERVER_NAME, handshake_failed};
use pingpong::{Client, ListenerModel, Server, Unavailable, on_threads};

struct PerThread;

/// Submission queue entries: room for a read or write of every one of
/// 10,000 connections without waiting for the ring (compio's default is 1,024).
const RING_ENTRIES: u32 = 16_384;

fn runtime(knobs: &Settings) -> io::Result<Runtime> {
    let entries = knobs.get("capacity").map_or(RING_ENTRIES, |n| n as u32);
    RuntimeBuilder::new()
        .with_proactor(ProactorBuilder::new().capacity(entries).to_owned())
        .build()
        .map_err(Unavailable::io_uring)
}

/// A compio stream: a TCP socket, or TLS over one (compio's own TLS
/// crate), which says goodbye before it is dropped (close_notify).
struct Io<S> {
    stream: S,
    tls: bool,
}

type Tcp = Io<TcpStream>;
type Tls = Io<TlsStream<TcpStream>>;

impl Tcp {
    /// The connection as the futures-io stream that the HTTP and WebSocket
    /// servers take: compio-io's compat, which buffers over the ring's
    /// owned-buffer IO (pinned: it borrows its own buffers).
    fn futures_io(self) -> std::pin::Pin<Box<AsyncStream<TcpStream>>> {
        Box::pin(AsyncStream::new(self.stream))
    }

    async fn connect(addr: SocketAddr) -> io::Result<Self> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Self::plain(stream))
    }

    async fn accept(listener: &TcpListener) -> io::Result<Self> {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        Ok(Self::plain(stream))
    }

    fn plain(stream: TcpStream) -> Self {
        Self { stream, tls: false }
    }
}

impl Tls {
    async fn connect(tls: Arc<Connector>, addr: SocketAddr) -> io::Result<Self> {
        let tcp = Tcp::connect(addr).await?.stream;
        let stream = TlsConnector::from(tls.config.clone())
            .connect(SERVER_NAME, tcp)
            .await
            .map_err(handshake_failed)?;
        Ok(Self { stream, tls: true })
    }

    async fn accept(tls: Arc<rustls::ServerConfig>, tcp: Tcp) -> io::Result<Self> {
        let stream = TlsAcceptor::from(tls).accept(tcp.stream).await?;
        Ok(Self { stream, tls: true })
    }
}

impl<S: AsyncRead> pingpong::Reads for Io<S> {
    async fn read(&mut self, mut buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        // compio reads into the spare capacity, after what the Vec holds.
        buf.clear();
        self.stream.read(buf).await.into()
    }
}

impl<S: AsyncWrite> pingpong::Writes for Io<S> {
    async fn write_all(&mut self, buf: Vec<u8>, len: usize) -> (io::Result<()>, Vec<u8>) {
        let (written, slice) = self.stream.write_all(buf.slice(..len)).await.into();
        // TLS may hold records it could not send yet: flush sends them.
        let written = match written {
            Ok(()) => self.stream.flush().await,
            Err(e) => Err(e),
        };
        (written, slice.into_inner())
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

/// The socket shared by both sides: compio reads and writes it at once.
impl pingpong::Split for Tcp {
    type Read = Self;
    type Write = Self;

    fn split(self) -> (Self, Self) {
        let (read, write) = self.stream.into_split();
        (Io::plain(read), Io::plain(write))
    }
}

/// compio's own split of its TLS stream locks the stream across a whole
/// read, which would hold every write behind a pending read; its TLS stream
/// is a futures-io stream too, whose halves lock it for one poll at a time.
impl pingpong::Split for Tls {
    type Read = ReadSide<TlsStream<TcpStream>>;
    type Write = WriteSide<TlsStream<TcpStream>>;

    fn split(self) -> (Self::Read, Self::Write) {
        // Closing it sends close_notify and half-closes the socket.
        halves(self.stream, true, None)
    }
}

/// A compio UDP socket. A receive dropped on a timeout is cancelled in
/// the ring, so that it takes no later datagram.
struct Udp(UdpSocket);

impl Udp {
    async fn open(server: SocketAddr) -> io::Result<Self> {
        UdpSocket::from_std(connected_datagrams(server)?).map(Self)
    }
}

impl pingpong::Datagrams for Udp {
    async fn send(&mut self, buf: Vec<u8>, len: usize) -> (io::Result<()>, Vec<u8>) {
        let (sent, slice) = self.0.send(buf.slice(..len)).await.into();
        (pingpong::datagram::whole(sent, len), slice.into_inner())
    }

    async fn recv(&mut self, mut buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        // Into the spare capacity, after what the Vec holds.
        buf.clear();
        self.0.recv(buf).await.into()
    }

    async fn recv_from(&mut self, mut buf: Vec<u8>) -> (io::Result<(usize, SocketAddr)>, Vec<u8>) {
        buf.clear();
        self.0.recv_from(buf).await.into()
    }

    async fn send_to(
        &mut self,
        buf: Vec<u8>,
        len: usize,
        to: SocketAddr,
    ) -> (io::Result<()>, Vec<u8>) {
        let (sent, slice) = self.0.send_to(buf.slice(..len), to).await.into();
        (pingpong::datagram::whole(sent, len), slice.into_inner())
    }
}

async fn sleep(timeout: Duration) {
    compio::time::sleep(timeout).await;
}

impl pingpong::Runtime for PerThread {
    const LISTENERS: ListenerModel = ListenerModel::PerThread;
    const KNOBS: &'static [knobs::Knob] = knobs::COMPIO;

    fn serve(server: Server) -> io::Result<()> {
        let ready = &server.ready;
        on_threads("server", server.listeners, |listener| {
            runtime(&server.knobs)?.block_on(async {
                let listener = TcpListener::from_std(listener)?;
                let echo = server.echo.spawning(1, |task| spawn(task).detach());
                accept_loop(
                    ready,
                    async || Tcp::accept(&listener).await,
                    |stream| {
                        let tls = server.tls.clone();
                        let spawn_writer = |writer: Writer<_>| spawn(writer.run()).detach();
                        spawn(serve(stream, tls, Tls::accept, echo.clone(), spawn_writer)).detach();
                    },
                )
                .await
            })
        })
    }

    fn serve_web(server: Server) -> io::Result<()> {
        let web = Web::of(&server);
        on_threads("server", server.listeners, |listener| {
            runtime(&server.knobs)?.block_on(async {
                let listener = TcpListener::from_std(listener)?;
                accept_loop(
                    &server.ready,
                    async || Tcp::accept(&listener).await,
                    |stream| spawn(web.clone().serve(stream.futures_io())).detach(),
                )
                .await
            })
        })
    }

    fn client(client: &Arc<Client>) -> io::Result<()> {
        on_threads("client", (0..client.config.threads).collect(), |thread| {
            runtime(&client.config.knobs)?.block_on(async {
                all_connections(client.connections_of(thread), || match &client.config.tls {
                    None => spawn(connection(client.clone(), Tcp::connect)),
                    Some(tls) => {
                        let tls = tls.clone();
                        spawn(connection(client.clone(), move |addr| {
                            Tls::connect(tls.clone(), addr)
                        }))
                    }
                })
                .await
            })
        })
    }

    fn serve_udp(server: DatagramServer) -> io::Result<()> {
        on_threads("server", server.sockets, |socket| {
            runtime(&server.knobs)?.block_on(async {
                answer(server.ready.clone(), Udp(UdpSocket::from_std(socket)?)).await
            })
        })
    }

    fn client_udp(client: &Arc<Client>) -> io::Result<()> {
        on_threads("client", (0..client.config.threads).collect(), |thread| {
            runtime(&client.config.knobs)?.block_on(async {
                all_connections(client.connections_of(thread), || {
                    spawn(datagram_connection(client.clone(), Udp::open, sleep))
                })
                .await
            })
        })
    }
}

fn main() -> std::process::ExitCode {
    pingpong::cli::main::<PerThread>()
}
