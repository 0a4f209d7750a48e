//! smol: one async-executor shared by N threads, async-io's reactor, one listener.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use async_executor::{Executor, Task as Spawned};
use pingpong::Topology;
use pingpong::async_runtime::{self, Async, AsyncLock, AsyncRuntime, OverSockets, Sockets, Task};
use smol::net::{TcpListener, TcpStream, UdpSocket};

struct SharedExecutor;

impl AsyncRuntime for SharedExecutor {
    const TOPOLOGY: Topology = Topology::Shared;

    type Handle = Arc<Executor<'static>>;
    type Join = Spawned<io::Result<()>>;

    /// One executor on `threads` threads, the calling thread among them
    /// running `main` within the executor. `smol::block_on`, unlike
    /// futures-lite's, drives async-io's reactor on the thread itself when
    /// it would otherwise sleep, instead of waiting to be woken from
    /// async-io's fallback thread.
    fn block_on<T, F>(
        executor: &async_runtime::Executor,
        main: impl FnOnce(Self::Handle) -> F,
    ) -> io::Result<T>
    where
        F: Future<Output = io::Result<T>> + 'static,
    {
        let ex = Arc::new(Executor::new());
        let (stop, stopped) = smol::channel::unbounded::<()>();
        thread::scope(|scope| {
            for i in 1..executor.threads {
                let (ex, stopped) = (&ex, stopped.clone());
                thread::Builder::new()
                    .name(format!("smol-{i}"))
                    .spawn_scoped(scope, move || smol::block_on(ex.run(stopped.recv())))?;
            }
            let result = smol::block_on(ex.run(main(ex.clone())));
            drop(stop);
            result
        })
    }

    fn spawn(ex: &Self::Handle, task: Task<Self>) -> Self::Join {
        ex.spawn(task.run())
    }

    fn detach(join: Self::Join) {
        join.detach();
    }

    type Io = OverSockets<Self>;

    async fn sleep(duration: Duration) {
        smol::Timer::after(duration).await;
    }

    async fn unblock<T: Send + 'static>(
        work: impl FnOnce() -> T + Send + 'static,
    ) -> io::Result<T> {
        Ok(smol::unblock(work).await)
    }

    /// smol's own mutex is async-lock's.
    type Mutex = AsyncLock;
}

impl Sockets for SharedExecutor {
    type Listener = TcpListener;
    type Stream = TcpStream;
    type Udp = Udp;

    fn listener(listener: std::net::TcpListener) -> io::Result<TcpListener> {
        TcpListener::try_from(listener)
    }

    async fn accept(listener: &TcpListener) -> io::Result<TcpStream> {
        Ok(listener.accept().await?.0)
    }

    async fn connect(addr: SocketAddr) -> io::Result<TcpStream> {
        TcpStream::connect(addr).await
    }

    fn udp(socket: std::net::UdpSocket) -> io::Result<Udp> {
        UdpSocket::try_from(socket).map(Udp)
    }
}

/// A UDP socket on async-io's reactor.
struct Udp(UdpSocket);

pingpong::lent_datagrams!(Udp);

fn main() -> std::process::ExitCode {
    pingpong::cli::main::<Async<SharedExecutor>>()
}
