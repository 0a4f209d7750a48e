//! monoio, one runtime per thread with per-thread listeners, on either of its
//! drivers: io_uring or the legacy epoll one. The driver is a type, chosen by
//! each binary: a ring that cannot start is an error, never a silent epoll.

use std::io;
use std::marker::PhantomData;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use monoio::blocking::DefaultThreadPool;
use monoio::buf::IoBuf;
use monoio::io::{
    AsyncReadRent, AsyncWriteRent, AsyncWriteRentExt, IntoPollIo, OwnedReadHalf, OwnedWriteHalf,
    Split, Splitable,
};
use monoio::net::tcp::stream_poll::TcpStreamPoll;
use monoio::net::udp::UdpSocket;
use monoio::net::{TcpListener, TcpStream};
use monoio::task::JoinHandle;
use monoio::time::TimeDriver;
use monoio::{Buildable, IoUringDriver, LegacyDriver, RuntimeBuilder};
use monoio_rustls::{ClientTlsStream, ServerTlsStream, TlsAcceptor, TlsConnector};
use pingpong::Topology;
use pingpong::async_runtime::{AsyncLock, AsyncRuntime, Executor, Io, Task};
use pingpong::knobs::{self, Knob};
use pingpong::tls::{Connector, ServerConfig, handshake_failed};
use pingpong::tokio_io::TokioIo;
use pingpong::unavailable::Unavailable;

/// Submission queue entries: room for a read or write of every one of
/// 10,000 connections without waiting for the ring (monoio's default is 1,024).
const RING_ENTRIES: u32 = 16_384;

/// Threads of each runtime's blocking pool, which monoio leaves to its
/// users to size: as many as monoio's own tests attach.
const BLOCKING_THREADS: usize = 4;

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

fn builder<D: Driver>(executor: &Executor) -> RuntimeBuilder<D> {
    let entries = executor
        .knobs
        .get("entries")
        .map_or(RING_ENTRIES, |n| n as u32);
    let builder = RuntimeBuilder::<D>::new().with_entries(entries);
    match executor.blocking_pool {
        true => builder.attach_thread_pool(Box::new(DefaultThreadPool::new(BLOCKING_THREADS))),
        false => builder,
    }
}

/// A monoio stream: a TCP socket, or TLS over one (monoio-rustls), which
/// says goodbye before it is dropped (close_notify).
pub struct Connection<S> {
    stream: S,
    tls: bool,
}

pub type Tcp = Connection<TcpStream>;

impl<S: AsyncReadRent> pingpong::Reads for Connection<S> {
    async fn read(&mut self, buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        // monoio reads into the Vec from its start, up to its capacity.
        self.stream.read(buf).await
    }
}

impl<S: AsyncWriteRent> pingpong::Writes for Connection<S> {
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
impl<S: Split + AsyncReadRent + AsyncWriteRent + 'static> pingpong::Split for Connection<S> {
    type Read = Connection<OwnedReadHalf<S>>;
    type Write = Connection<OwnedWriteHalf<S>>;

    fn split(self) -> (Self::Read, Self::Write) {
        let (read, write) = self.stream.into_split();
        let tls = self.tls;
        (
            Connection { stream: read, tls },
            Connection { stream: write, tls },
        )
    }
}

/// A monoio UDP socket. A receive dropped on a timeout is cancelled in
/// the ring (monoio's async-cancel), so that it takes no later datagram.
pub struct Udp(UdpSocket);

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

impl<D: Driver> AsyncRuntime for PerThread<D> {
    const TOPOLOGY: Topology = Topology::PerThread;
    const KNOBS: &'static [Knob] = knobs::MONOIO;

    type Handle = ();
    type Join = JoinHandle<io::Result<()>>;

    fn block_on<T, F>(executor: &Executor, main: impl FnOnce(()) -> F) -> io::Result<T>
    where
        F: Future<Output = io::Result<T>> + 'static,
    {
        let builder = builder::<D>(executor);
        // The timer only where it is used: TCP runs go without it.
        match executor.timer {
            false => D::build(builder)
                .map_err(D::build_error)?
                .block_on(main(())),
            true => D::Timed::build(D::with_timer(builder))
                .map_err(D::build_error)?
                .block_on(main(())),
        }
    }

    fn spawn(_: &(), task: Task<Self>) -> Self::Join {
        monoio::spawn(task.run())
    }

    type Io = Self;

    async fn sleep(duration: Duration) {
        monoio::time::sleep(duration).await;
    }

    async fn unblock<T: Send + 'static>(
        work: impl FnOnce() -> T + Send + 'static,
    ) -> io::Result<T> {
        monoio::spawn_blocking(work)
            .await
            .map_err(|e| io::Error::other(format!("the blocking pool: {e:?}")))
    }

    /// monoio has no async mutex.
    type Mutex = AsyncLock;
}

impl<D: Driver> Io for PerThread<D> {
    type Listener = TcpListener;

    fn listener(listener: std::net::TcpListener) -> io::Result<TcpListener> {
        TcpListener::from_std(listener)
    }

    type Tcp = Tcp;

    async fn accept(listener: &TcpListener) -> io::Result<Tcp> {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        Ok(Connection { stream, tls: false })
    }

    async fn connect(addr: SocketAddr) -> io::Result<Tcp> {
        let stream = TcpStream::connect_addr(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Connection { stream, tls: false })
    }

    type TlsServer = Connection<ServerTlsStream<TcpStream>>;
    type TlsClient = Connection<ClientTlsStream<TcpStream>>;

    async fn tls_accept(config: Arc<ServerConfig>, tcp: Tcp) -> io::Result<Self::TlsServer> {
        let stream = TlsAcceptor::from(config).accept(tcp.stream).await?;
        Ok(Connection { stream, tls: true })
    }

    async fn tls_connect(connector: Arc<Connector>, tcp: Tcp) -> io::Result<Self::TlsClient> {
        let stream = TlsConnector::from(connector.config.clone())
            .connect(Connector::server_name(), tcp.stream)
            .await
            .map_err(|e| handshake_failed(e.into()))?;
        Ok(Connection { stream, tls: true })
    }

    type Udp = Udp;

    fn udp(socket: std::net::UdpSocket) -> io::Result<Udp> {
        UdpSocket::from_std(socket).map(Udp)
    }

    /// Through monoio's poll-io (readiness over its driver, as monoio
    /// offers poll-based libraries), which implements tokio's IO traits.
    type FuturesIo = TokioIo<TcpStreamPoll>;

    fn futures_io(tcp: Tcp) -> io::Result<Self::FuturesIo> {
        Ok(TokioIo(tcp.stream.into_poll_io()?))
    }
}
