//! async-std's global executor with N threads: one shared executor and IO
//! reactor, one listener. (async-std is discontinued upstream in favour of
//! smol; it stays because users still run it.)

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use async_global_executor::GlobalExecutorConfig;
use async_std::net::{TcpListener, TcpStream, UdpSocket};
use async_std::task::{self, JoinHandle};
use pingpong::Topology;
use pingpong::async_runtime::{
    Async, AsyncRuntime, Counters, Executor, Lock, OverSockets, Sockets, Task,
};

struct GlobalExecutor;

impl AsyncRuntime for GlobalExecutor {
    const TOPOLOGY: Topology = Topology::Shared;

    type Handle = ();
    type Join = JoinHandle<io::Result<()>>;

    /// async-std runs its tasks on async-global-executor, which starts its
    /// threads once, on first use: sized before anything else touches it.
    fn block_on<T, F>(executor: &Executor, main: impl FnOnce(()) -> F) -> io::Result<T>
    where
        F: Future<Output = io::Result<T>> + 'static,
    {
        async_global_executor::init_with_config(
            GlobalExecutorConfig::default()
                .with_min_threads(executor.threads)
                .with_max_threads(executor.threads),
        );
        task::block_on(main(()))
    }

    fn spawn(_: &(), task: Task<Self>) -> Self::Join {
        task::spawn(task.run())
    }

    type Io = OverSockets<Self>;

    async fn sleep(duration: Duration) {
        task::sleep(duration).await
    }

    async fn unblock<T: Send + 'static>(
        work: impl FnOnce() -> T + Send + 'static,
    ) -> io::Result<T> {
        Ok(task::spawn_blocking(work).await)
    }

    type Mutex = Mutex;
}

impl Sockets for GlobalExecutor {
    type Listener = TcpListener;
    type Stream = TcpStream;
    type Udp = Udp;

    fn listener(listener: std::net::TcpListener) -> io::Result<TcpListener> {
        Ok(TcpListener::from(listener))
    }

    async fn accept(listener: &TcpListener) -> io::Result<TcpStream> {
        Ok(listener.accept().await?.0)
    }

    async fn connect(addr: SocketAddr) -> io::Result<TcpStream> {
        TcpStream::connect(addr).await
    }

    fn udp(socket: std::net::UdpSocket) -> io::Result<Udp> {
        Ok(Udp(UdpSocket::from(socket)))
    }
}

/// A UDP socket on async-std's reactor.
struct Udp(UdpSocket);

pingpong::lent_datagrams!(Udp);

/// async-std's async mutex, over the shared shape's counters.
struct Mutex(async_std::sync::Mutex<Counters>);

impl Lock for Mutex {
    fn new() -> Self {
        Self(async_std::sync::Mutex::default())
    }

    async fn count(&self, connection: u64) {
        *self.0.lock().await.entry(connection).or_default() += 1;
    }
}

fn main() -> std::process::ExitCode {
    pingpong::cli::main::<Async<GlobalExecutor>>()
}
