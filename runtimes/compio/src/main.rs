//! compio: one completion-based io_uring runtime per thread, per-thread
//! listeners. Built with the io-uring driver alone, so it cannot fall back
//! to polling.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use compio::buf::{IntoInner, IoBuf};
use compio::driver::ProactorBuilder;
use compio::io::compat::AsyncStream;
use compio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use compio::net::{TcpListener, TcpStream, UdpSocket};
use compio::runtime::{JoinHandle, RuntimeBuilder};
use compio::tls::{TlsAcceptor, TlsConnector, TlsStream};
use pingpong::Topology;
use pingpong::async_runtime::{Async, AsyncLock, AsyncRuntime, Executor, Io, Task};
use pingpong::futures_io::{ReadSide, WriteSide, halves};
use pingpong::knobs::{self, Knob};
use pingpong::tls::{Connector, SERVER_NAME, ServerConfig, handshake_failed};
use pingpong::unavailable::Unavailable;

struct PerThread;

/// Submission queue entries: room for a read or write of every one of
/// 10,000 connections without waiting for the ring (compio's default is 1,024).
const RING_ENTRIES: u32 = 16_384;

/// A compio stream: a TCP socket, or TLS over one (compio's own TLS
/// crate), which says goodbye before it is dropped (close_notify).
struct Connection<S> {
    stream: S,
    tls: bool,
}

type Tcp = Connection<TcpStream>;
type Tls = Connection<TlsStream<TcpStream>>;

impl Tcp {
    fn plain(stream: TcpStream) -> io::Result<Self> {
        stream.set_nodelay(true)?;
        Ok(Self { stream, tls: false })
    }
}

impl<S: AsyncRead> pingpong::Reads for Connection<S> {
    async fn read(&mut self, mut buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        // compio reads into the spare capacity, after what the Vec holds.
        buf.clear();
        self.stream.read(buf).await.into()
    }
}

impl<S: AsyncWrite> pingpong::Writes for Connection<S> {
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
        let side = |stream| Connection { stream, tls: false };
        (side(read), side(write))
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

impl AsyncRuntime for PerThread {
    const TOPOLOGY: Topology = Topology::PerThread;
    const KNOBS: &'static [Knob] = knobs::COMPIO;

    type Handle = ();
    type Join = JoinHandle<io::Result<()>>;

    fn block_on<T, F>(executor: &Executor, main: impl FnOnce(()) -> F) -> io::Result<T>
    where
        F: Future<Output = io::Result<T>> + 'static,
    {
        let entries = executor
            .knobs
            .get("capacity")
            .map_or(RING_ENTRIES, |n| n as u32);
        RuntimeBuilder::new()
            .with_proactor(ProactorBuilder::new().capacity(entries).to_owned())
            .build()
            .map_err(Unavailable::io_uring)?
            .block_on(main(()))
    }

    fn spawn(_: &(), task: Task<Self>) -> Self::Join {
        compio::runtime::spawn(task.run())
    }

    fn detach(join: Self::Join) {
        join.detach();
    }

    type Io = Self;

    async fn sleep(duration: Duration) {
        compio::time::sleep(duration).await;
    }

    async fn unblock<T: Send + 'static>(
        work: impl FnOnce() -> T + Send + 'static,
    ) -> io::Result<T> {
        compio::runtime::spawn_blocking(work)
            .await
            .map_err(|e| io::Error::other(format!("the blocking pool: {e}")))
    }

    /// compio has no async mutex.
    type Mutex = AsyncLock;
}

impl Io for PerThread {
    type Listener = TcpListener;

    fn listener(listener: std::net::TcpListener) -> io::Result<TcpListener> {
        TcpListener::from_std(listener)
    }

    type Tcp = Tcp;

    async fn accept(listener: &TcpListener) -> io::Result<Tcp> {
        Tcp::plain(listener.accept().await?.0)
    }

    async fn connect(addr: SocketAddr) -> io::Result<Tcp> {
        Tcp::plain(TcpStream::connect(addr).await?)
    }

    type TlsServer = Tls;
    type TlsClient = Tls;

    async fn tls_accept(config: Arc<ServerConfig>, tcp: Tcp) -> io::Result<Tls> {
        let stream = TlsAcceptor::from(config).accept(tcp.stream).await?;
        Ok(Connection { stream, tls: true })
    }

    async fn tls_connect(connector: Arc<Connector>, tcp: Tcp) -> io::Result<Tls> {
        let stream = TlsConnector::from(connector.config.clone())
            .connect(SERVER_NAME, tcp.stream)
            .await
            .map_err(handshake_failed)?;
        Ok(Connection { stream, tls: true })
    }

    type Udp = Udp;

    fn udp(socket: std::net::UdpSocket) -> io::Result<Udp> {
        UdpSocket::from_std(socket).map(Udp)
    }

    /// compio-io's compat, which buffers over the ring's owned-buffer IO
    /// (pinned: it borrows its own buffers).
    type FuturesIo = Pin<Box<AsyncStream<TcpStream>>>;

    fn futures_io(tcp: Tcp) -> io::Result<Self::FuturesIo> {
        Ok(Box::pin(AsyncStream::new(tcp.stream)))
    }
}

fn main() -> std::process::ExitCode {
    pingpong::cli::main::<Async<PerThread>>()
}
