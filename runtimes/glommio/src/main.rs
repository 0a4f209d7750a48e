//! glommio: one thread-per-core io_uring executor per thread, each server
//! executor with its own SO_REUSEPORT listener.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{FromRawFd, IntoRawFd};
use std::time::Duration;

use glommio::net::{TcpListener, TcpStream, UdpSocket};
use glommio::{
    Latency, LocalExecutorBuilder, Placement, Shares, TaskQueueHandle, spawn_local,
    spawn_local_into, spawn_scoped_local_into,
};
use pingpong::Topology;
use pingpong::async_runtime::{
    Async, AsyncLock, AsyncRuntime, Executor, OverSockets, Sockets, Task,
};
use pingpong::knobs::{self, Knob, Settings};
use pingpong::unavailable::Unavailable;

struct ThreadPerCore;

impl AsyncRuntime for ThreadPerCore {
    const TOPOLOGY: Topology = Topology::PerThread;
    const KNOBS: &'static [Knob] = knobs::GLOMMIO;

    /// The connections' task queue, where the accept loop runs in a queue
    /// of its own (`accept_latency_us`); otherwise the current one.
    type Handle = Option<TaskQueueHandle>;
    type Join = glommio::Task<io::Result<()>>;

    /// An executor on this thread. Unbound: the CPUs are the orchestrator's
    /// choice (it pins the whole process), not glommio's. Glommio panics where
    /// io_uring is missing, so its availability is probed first.
    fn block_on<T, F>(executor: &Executor, main: impl FnOnce(Self::Handle) -> F) -> io::Result<T>
    where
        F: Future<Output = io::Result<T>> + 'static,
    {
        Unavailable::probe_io_uring()?;
        let knobs = &executor.knobs;
        let mut builder = LocalExecutorBuilder::new(Placement::Unbound);
        if let Some(us) = knobs.get("spin_before_park_us") {
            builder = builder.spin_before_park(Duration::from_micros(us));
        }
        if let Some(depth) = knobs.get("ring_depth") {
            builder = builder.ring_depth(depth as usize);
        }
        let queue_of_its_own = knobs.get("accept_latency_us").is_some();
        let executor = builder
            .make()
            .map_err(|e| Unavailable::io_uring(e.into()))?;
        executor.run(async move {
            let connections = glommio::executor().current_task_queue();
            main(queue_of_its_own.then_some(connections)).await
        })
    }

    fn spawn(queue: &Self::Handle, task: Task<Self>) -> Self::Join {
        match queue {
            None => spawn_local(task.run()),
            Some(queue) => spawn_local_into(task.run(), *queue).expect("the executor's own queue"),
        }
    }

    fn detach(join: Self::Join) {
        drop(join.detach());
    }

    type Io = OverSockets<Self>;

    async fn sleep(duration: Duration) {
        glommio::timer::sleep(duration).await;
    }

    async fn unblock<T: Send + 'static>(
        work: impl FnOnce() -> T + Send + 'static,
    ) -> io::Result<T> {
        Ok(glommio::executor().spawn_blocking(work).await)
    }

    /// glommio's own locks are its thread's alone.
    type Mutex = AsyncLock;

    /// With `accept_latency_us`, the accept loop in a task queue of its own,
    /// `Latency::Matters`: the connections' queue is preempted for it at
    /// least that often.
    async fn accepting(
        _: &Self::Handle,
        knobs: &Settings,
        accept_loop: impl Future<Output = io::Result<()>>,
    ) -> io::Result<()> {
        let Some(us) = knobs.get("accept_latency_us") else {
            return accept_loop.await;
        };
        let queue = glommio::executor().create_task_queue(
            Shares::default(),
            Latency::Matters(Duration::from_micros(us)),
            "accept",
        );
        // SAFETY: the task is awaited here, before what it borrows ends.
        let accepting = unsafe { spawn_scoped_local_into(accept_loop, queue) };
        accepting
            .map_err(|e| io::Error::other(format!("the accept queue: {e}")))?
            .await
    }
}

/// glommio takes a socket in only inside its executor.
impl Sockets for ThreadPerCore {
    type Listener = TcpListener;
    type Stream = TcpStream;
    type Udp = Udp;

    fn listener(listener: std::net::TcpListener) -> io::Result<TcpListener> {
        // SAFETY: the descriptor comes from a bound, listening socket given up here.
        Ok(unsafe { TcpListener::from_raw_fd(listener.into_raw_fd()) })
    }

    async fn accept(listener: &TcpListener) -> io::Result<TcpStream> {
        Ok(listener.accept().await?)
    }

    async fn connect(addr: SocketAddr) -> io::Result<TcpStream> {
        Ok(TcpStream::connect(addr).await?)
    }

    fn udp(socket: std::net::UdpSocket) -> io::Result<Udp> {
        // SAFETY: the descriptor comes from a bound socket given up here.
        Ok(Udp(unsafe { UdpSocket::from_raw_fd(socket.into_raw_fd()) }))
    }
}

/// A UDP socket on glommio's ring.
struct Udp(UdpSocket);

pingpong::lent_datagrams!(Udp);

fn main() -> std::process::ExitCode {
    pingpong::cli::main::<Async<ThreadPerCore>>()
}
