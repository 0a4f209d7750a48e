//! What an async runtime's glue declares its runtime provides, and the
//! tasks pingpong hands its spawn: the one vocabulary the two share.

use std::future::Future;
use std::io;
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

use futures_lite::{AsyncRead, AsyncWrite};

use async_channel::Receiver;

use super::handoff::{Handoff, Helper};
use super::services::Lock;
use super::split::Writer;
use crate::client::Client;
use crate::server::{Echo, Ready, Web};
use crate::stream::Either;

use crate::datagram::Datagrams;
use crate::knobs::{Knob, Settings};
use crate::runtime::Topology;
use crate::stream::{Split, Stream};
use crate::tls::{Connector, ServerConfig};
use crate::unavailable::Unavailable;

/// An async runtime as its glue declares it: its executors, its IO
/// ([`Io`]) and the services a request handler calls.
///
/// Where a runtime lacks an optional service (a blocking pool, a
/// futures-io view of its sockets), its glue says why (`NO_...`), and
/// what needs it is unavailable with that reason.
#[allow(async_fn_in_trait)]
pub trait AsyncRuntime: Sized + 'static {
    /// One executor over the process's threads, or one on each.
    const TOPOLOGY: Topology;

    /// The builder settings a run may turn ([`crate::knobs`]).
    const KNOBS: &'static [Knob] = &[];

    /// What spawns onto a running executor (`()` where spawning is a free
    /// function that finds the executor it is called on).
    type Handle: Clone + Send + Sync + 'static;

    /// A spawned task's handle: awaited, it says how the task ended.
    type Join: Future<Output: Joined>;

    /// Makes an executor as `executor` says, runs `main` on it (given the
    /// handle to spawn with) on the calling thread until it ends, and
    /// returns what it returned.
    fn block_on<T, F>(executor: &Executor, main: impl FnOnce(Self::Handle) -> F) -> io::Result<T>
    where
        F: Future<Output = io::Result<T>> + 'static;

    /// Spawns `task` (`task.run()`) on the executor of `handle`.
    fn spawn(handle: &Self::Handle, task: Task<Self>) -> Self::Join;

    /// Lets a spawned task run on with nobody waiting for its end; where
    /// dropping its handle would cancel it, the runtime's own detach.
    fn detach(join: Self::Join) {
        drop(join);
    }

    /// Its sockets, TLS over them, and its futures-io view of a connection.
    type Io: Io;

    /// Its timer. Armed only on an executor made with one
    /// ([`Executor::timer`]): some runtimes run without it otherwise.
    async fn sleep(duration: Duration);

    /// Runs `work` on the runtime's pool of blocking threads, and waits for
    /// it; where it has no pool, `NO_BLOCKING_POOL` says why.
    const NO_BLOCKING_POOL: Option<&'static str> = None;
    async fn unblock<T: Send + 'static>(
        _work: impl FnOnce() -> T + Send + 'static,
    ) -> io::Result<T> {
        Err(Unavailable::missing(
            "no blocking pool",
            Self::NO_BLOCKING_POOL.unwrap_or("its glue gives none"),
        ))
    }

    /// Its async mutex, or [`AsyncLock`](super::AsyncLock) where it has none (or none that
    /// threads share).
    type Mutex: Lock;

    /// Whether a waker of this runtime may only be woken on its own
    /// thread: what another thread wakes (the client's start gate, a lock
    /// another thread releases) must then be relayed.
    const THREAD_BOUND_WAKERS: bool = false;

    /// Runs the server's accept loop: by default as the runtime's users
    /// write it; the runtime's way to keep accepting under load where a
    /// knob asks for it ([`crate::knobs`]).
    async fn accepting(
        _handle: &Self::Handle,
        _knobs: &Settings,
        accept_loop: impl Future<Output = io::Result<()>>,
    ) -> io::Result<()> {
        accept_loop.await
    }
}

/// An async runtime's IO: what pingpong's sockets become on it. A runtime
/// whose sockets implement futures-io has it from its
/// [`Sockets`](super::Sockets), as [`OverSockets`](super::OverSockets).
#[allow(async_fn_in_trait)]
pub trait Io: 'static {
    /// Its listener, made inside the executor from a bound, listening,
    /// non-blocking socket.
    type Listener: 'static;
    fn listener(listener: TcpListener) -> io::Result<Self::Listener>;

    /// Its TCP connection, TCP_NODELAY set by accept and connect.
    type Tcp: Split + 'static;
    async fn accept(listener: &Self::Listener) -> io::Result<Self::Tcp>;
    async fn connect(addr: SocketAddr) -> io::Result<Self::Tcp>;

    /// TLS over its connection, with its own rustls integration where it
    /// has one ([`crate::tls_stream`] where it has none).
    type TlsServer: Split + 'static;
    type TlsClient: Stream + 'static;
    async fn tls_accept(config: Arc<ServerConfig>, tcp: Self::Tcp) -> io::Result<Self::TlsServer>;
    async fn tls_connect(connector: Arc<Connector>, tcp: Self::Tcp) -> io::Result<Self::TlsClient>;

    /// Its UDP socket, made inside the executor from a bound (and for a
    /// client, connected) non-blocking one.
    type Udp: Datagrams + 'static;
    fn udp(socket: UdpSocket) -> io::Result<Self::Udp>;

    /// Its connection as a futures-io stream, for the HTTP and WebSocket
    /// servers ([`crate::server::Web`]); [`Never`](super::Never) where it has none, and
    /// `NO_FUTURES_IO` says why.
    type FuturesIo: AsyncRead + AsyncWrite + Unpin + 'static;
    const NO_FUTURES_IO: Option<&'static str> = None;
    fn futures_io(_tcp: Self::Tcp) -> io::Result<Self::FuturesIo> {
        Err(Unavailable::missing(
            "no futures-io stream",
            Self::NO_FUTURES_IO.unwrap_or("its glue gives none"),
        ))
    }
}

/// The executor a runtime is asked to make.
#[derive(Debug, Clone)]
pub struct Executor {
    /// Threads it runs on: the process's for a shared executor, one for
    /// each of a per-thread runtime's.
    pub threads: usize,
    /// Which of the process's threads this is (0 for a shared executor).
    pub thread: usize,
    /// The runtime's builder settings.
    pub knobs: Settings,
    /// With its timer running.
    pub timer: bool,
    /// With its pool of blocking threads.
    pub blocking_pool: bool,
}

/// What a runtime's task handle yields when awaited: the task's own
/// outcome, or that within whether it ran to its end (an error there
/// means it panicked or was cancelled).
pub trait Joined {
    fn into_result(self) -> io::Result<()>;
}

impl Joined for io::Result<()> {
    fn into_result(self) -> io::Result<()> {
        self
    }
}

impl<E: std::fmt::Display> Joined for Result<io::Result<()>, E> {
    fn into_result(self) -> io::Result<()> {
        self.map_err(|e| io::Error::other(format!("a task did not finish: {e}")))?
    }
}

/// A task of pingpong's, for a runtime's spawn to run ([`Task::run`]).
pub struct Task<R: AsyncRuntime>(pub(super) Kind<R>);

pub(super) enum Kind<R: AsyncRuntime> {
    /// An accepted connection, served in the server's shape.
    Serve(Box<Accepted<R>>),
    /// The writing side of a connection in the split shape.
    Writer(Box<ServerWriter<R>>),
    /// An accepted connection answered over HTTP or WebSocket.
    Web(Box<(FuturesIo<R>, Web)>),
    /// A block's handler, or a pool's worker (the spawn and pool shapes).
    Helper(Helper),
    /// One share of a shared executor's connections in the select shape.
    Select(Box<Share<R>>),
    /// One of a server's UDP sockets, answering.
    Answer(Box<(Ready, Udp<R>)>),
    /// One of the client's connections.
    Connection(Arc<Client>),
    /// One of the client's UDP sockets.
    Datagrams(Arc<Client>),
    /// The client's start, relayed to wakers bound to their thread.
    Relay(Arc<Client>),
}

impl<R: AsyncRuntime> Task<R> {
    pub(super) fn serve(accepted: Accepted<R>) -> Self {
        Self(Kind::Serve(Box::new(accepted)))
    }

    pub(super) fn writer(writer: ServerWriter<R>) -> Self {
        Self(Kind::Writer(Box::new(writer)))
    }

    pub(super) fn web(stream: FuturesIo<R>, web: Web) -> Self {
        Self(Kind::Web(Box::new((stream, web))))
    }

    pub(super) fn helper(helper: Helper) -> Self {
        Self(Kind::Helper(helper))
    }

    pub(super) fn select(share: Share<R>) -> Self {
        Self(Kind::Select(Box::new(share)))
    }

    pub(super) fn answer(ready: Ready, socket: Udp<R>) -> Self {
        Self(Kind::Answer(Box::new((ready, socket))))
    }

    pub(super) fn connection(client: Arc<Client>) -> Self {
        Self(Kind::Connection(client))
    }

    pub(super) fn datagrams(client: Arc<Client>) -> Self {
        Self(Kind::Datagrams(client))
    }

    pub(super) fn relay(client: Arc<Client>) -> Self {
        Self(Kind::Relay(client))
    }
}

/// What every connection an executor accepts is served with.
pub(super) struct Serving<R: AsyncRuntime> {
    pub(super) handle: R::Handle,
    pub(super) echo: Echo,
    /// Where the spawn and pool shapes hand blocks, on this executor.
    pub(super) handoff: Option<Handoff>,
    pub(super) tls: Option<Arc<rustls::ServerConfig>>,
    /// The shared shape's lock, one for the whole server.
    pub(super) lock: Arc<R::Mutex>,
}

/// A connection the server accepted, and how to serve it.
pub(super) struct Accepted<R: AsyncRuntime> {
    pub(super) stream: Tcp<R>,
    pub(super) serving: Arc<Serving<R>>,
}

/// The write side of a connection in the split shape, plain or TLS.
pub(super) type ServerWriter<R> =
    Writer<Either<<Tcp<R> as Split>::Write, <TlsServer<R> as Split>::Write>>;

/// A share of a shared executor's connections: those the accept loop
/// deals to it, served until the server ends.
pub(super) struct Share<R: AsyncRuntime> {
    pub(super) connections: Receiver<Tcp<R>>,
    pub(super) serving: Arc<Serving<R>>,
}

/// The connection of runtime `R`, and its listener.
pub(super) type Tcp<R> = <<R as AsyncRuntime>::Io as Io>::Tcp;
pub(super) type Listener<R> = <<R as AsyncRuntime>::Io as Io>::Listener;
/// Its server's side of TLS.
pub(super) type TlsServer<R> = <<R as AsyncRuntime>::Io as Io>::TlsServer;
/// Its UDP socket.
pub(super) type Udp<R> = <<R as AsyncRuntime>::Io as Io>::Udp;
/// Its connection as a futures-io stream.
pub(super) type FuturesIo<R> = <<R as AsyncRuntime>::Io as Io>::FuturesIo;
