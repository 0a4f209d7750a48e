//! tokio, declared once for both of its models: the multi-threaded
//! work-stealing runtime ([`WorkStealing`]) and a current-thread runtime
//! per thread ([`PerThread`]). Its streams plain and inside TLS
//! (tokio-rustls), its UDP socket, timer, blocking pool and mutex.

use std::io;
use std::marker::PhantomData;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use pingpong::Topology;
use pingpong::async_runtime::{AsyncRuntime, Counters, Executor, Io, Lock, Task};
use pingpong::knobs::{self, Knob, Settings};
use pingpong::tls::{Connector, ServerConfig, handshake_failed};
use pingpong::tokio_io::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadHalf, WriteHalf};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::runtime::Builder;
use tokio::task::JoinHandle;
use tokio_rustls::{TlsAcceptor, TlsConnector, TlsStream};

/// One of tokio's two models: its builder and how it spreads work.
pub trait Model: 'static {
    const TOPOLOGY: Topology;
    const KNOBS: &'static [Knob];

    /// The builder of an executor on `threads` threads.
    fn builder(threads: usize) -> Builder;
}

/// The multi-threaded work-stealing runtime: one shared IO driver, N
/// worker threads, one listener ("1 context / N threads").
pub struct WorkStealing;

impl Model for WorkStealing {
    const TOPOLOGY: Topology = Topology::Shared;
    const KNOBS: &'static [Knob] = knobs::TOKIO;

    fn builder(threads: usize) -> Builder {
        let mut builder = Builder::new_multi_thread();
        builder.worker_threads(threads);
        builder
    }
}

/// N current-thread runtimes, one per thread, each server thread with its
/// own SO_REUSEPORT listener ("N contexts / N threads"). A current-thread
/// runtime runs what it spawns on its own thread, so plain `tokio::spawn`
/// keeps every task there (no LocalSet needed: tokio's streams are Send).
pub struct PerThread;

impl Model for PerThread {
    const TOPOLOGY: Topology = Topology::PerThread;
    const KNOBS: &'static [Knob] = knobs::TOKIO_LOCAL;

    fn builder(_: usize) -> Builder {
        Builder::new_current_thread()
    }
}

/// tokio in model `M`.
pub struct Tokio<M>(PhantomData<M>);

impl<M: Model> AsyncRuntime for Tokio<M> {
    const TOPOLOGY: Topology = M::TOPOLOGY;
    const KNOBS: &'static [Knob] = M::KNOBS;

    type Handle = ();
    type Join = JoinHandle<io::Result<()>>;

    fn block_on<T, F>(executor: &Executor, main: impl FnOnce(()) -> F) -> io::Result<T>
    where
        F: Future<Output = io::Result<T>> + 'static,
    {
        let mut builder = M::builder(executor.threads);
        // The timer only where it is used: TCP runs go without it.
        if executor.timer {
            builder.enable_time();
        }
        build(&mut builder, &executor.knobs)?.block_on(main(()))
    }

    fn spawn(_: &(), task: Task<Self>) -> Self::Join {
        tokio::spawn(task.run())
    }

    type Io = Self;

    async fn sleep(duration: Duration) {
        tokio::time::sleep(duration).await
    }

    async fn unblock<T: Send + 'static>(
        work: impl FnOnce() -> T + Send + 'static,
    ) -> io::Result<T> {
        tokio::task::spawn_blocking(work)
            .await
            .map_err(io::Error::other)
    }

    type Mutex = Mutex;

    /// With `accept_unconstrained`, the accept loop inside
    /// `tokio::task::unconstrained`, so that it accepts until the queue is
    /// empty; by default as tokio's users write it, where its budget makes
    /// the loop yield after 128 accepts to the connections it spawned.
    async fn accepting(
        _: &(),
        knobs: &Settings,
        accept_loop: impl Future<Output = io::Result<()>>,
    ) -> io::Result<()> {
        match knobs.get("accept_unconstrained") == Some(1) {
            true => tokio::task::unconstrained(accept_loop).await,
            false => accept_loop.await,
        }
    }
}

impl<M: Model> Io for Tokio<M> {
    type Listener = TcpListener;

    fn listener(listener: std::net::TcpListener) -> io::Result<TcpListener> {
        TcpListener::from_std(listener)
    }

    type Tcp = Connection<TcpStream>;

    async fn accept(listener: &TcpListener) -> io::Result<Self::Tcp> {
        let (stream, _) = listener.accept().await?;
        Connection::plain(stream)
    }

    async fn connect(addr: SocketAddr) -> io::Result<Self::Tcp> {
        Connection::plain(TcpStream::connect(addr).await?)
    }

    type TlsServer = Connection<TlsStream<TcpStream>>;
    type TlsClient = Connection<TlsStream<TcpStream>>;

    async fn tls_accept(config: Arc<ServerConfig>, tcp: Self::Tcp) -> io::Result<Self::TlsServer> {
        let stream = TlsAcceptor::from(config).accept(tcp.stream).await?;
        Ok(Connection::tls(stream.into()))
    }

    async fn tls_connect(connector: Arc<Connector>, tcp: Self::Tcp) -> io::Result<Self::TlsClient> {
        let stream = TlsConnector::from(connector.config.clone())
            .connect(Connector::server_name(), tcp.stream)
            .await
            .map_err(handshake_failed)?;
        Ok(Connection::tls(stream.into()))
    }

    type Udp = Udp;

    fn udp(socket: std::net::UdpSocket) -> io::Result<Udp> {
        UdpSocket::from_std(socket).map(Udp)
    }

    type FuturesIo = TokioIo<TcpStream>;

    fn futures_io(tcp: Self::Tcp) -> io::Result<Self::FuturesIo> {
        Ok(TokioIo(tcp.stream))
    }
}

/// Builds `builder` with IO and the knobs set (`pingpong::knobs::TOKIO`
/// and `TOKIO_LOCAL` name them).
fn build(builder: &mut Builder, knobs: &Settings) -> io::Result<tokio::runtime::Runtime> {
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

/// A tokio stream: a TCP socket, or TLS over one (which says goodbye
/// before it is dropped: close_notify).
pub struct Connection<S> {
    stream: S,
    tls: bool,
}

impl Connection<TcpStream> {
    fn plain(stream: TcpStream) -> io::Result<Self> {
        stream.set_nodelay(true)?;
        Ok(Self { stream, tls: false })
    }
}

impl<S> Connection<S> {
    fn tls(stream: S) -> Self {
        Self { stream, tls: true }
    }
}

impl<S: AsyncRead + Unpin> pingpong::Reads for Connection<S> {
    async fn read(&mut self, mut buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        // read_buf fills the Vec's spare capacity: no zeroing, no allocation.
        buf.clear();
        let read = self.stream.read_buf(&mut buf).await;
        (read, buf)
    }
}

impl<S: AsyncWrite + Unpin> pingpong::Writes for Connection<S> {
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
impl<S: AsyncRead + AsyncWrite + Unpin + 'static> pingpong::Split for Connection<S> {
    type Read = Connection<ReadHalf<S>>;
    type Write = Connection<WriteHalf<S>>;

    fn split(self) -> (Self::Read, Self::Write) {
        let (read, write) = tokio::io::split(self.stream);
        let tls = self.tls;
        (
            Connection { stream: read, tls },
            Connection { stream: write, tls },
        )
    }
}

/// A tokio UDP socket: a client's, connected to the server, or one of a
/// server's.
pub struct Udp(UdpSocket);

pingpong::lent_datagrams!(Udp);

/// tokio's async mutex, over the shared shape's counters.
pub struct Mutex(tokio::sync::Mutex<Counters>);

impl Lock for Mutex {
    fn new() -> Self {
        Self(tokio::sync::Mutex::default())
    }

    async fn count(&self, connection: u64) {
        *self.0.lock().await.entry(connection).or_default() += 1;
    }
}
