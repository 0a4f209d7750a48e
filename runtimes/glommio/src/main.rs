//! glommio: one thread-per-core io_uring executor per thread, each server
//! executor with its own SO_REUSEPORT listener.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{FromRawFd, IntoRawFd};
use std::sync::Arc;
use std::time::Duration;

use glommio::net::{TcpListener, TcpStream, UdpSocket};
use glommio::{
    Latency, LocalExecutor, LocalExecutorBuilder, Placement, Shares, spawn_local, spawn_local_into,
    spawn_scoped_local_into,
};
use pingpong::client::{all_connections, connection, datagram_connection};
use pingpong::futures_io::{Compat, Tls, connect_tls};
use pingpong::knobs::{self, Settings};
use pingpong::server::{
    DatagramServer, Web, Writer, accept_loop, answer, connected_datagrams, serve,
};
use pingpong::{Client, ListenerModel, Server, Unavailable, on_threads};

struct ThreadPerCore;

/// A UDP socket on glommio's ring.
struct Udp(UdpSocket);

pingpong::lent_datagrams!(Udp);

impl Udp {
    fn from_std(socket: std::net::UdpSocket) -> Self {
        // SAFETY: the descriptor comes from a bound socket given up here.
        Self(unsafe { UdpSocket::from_raw_fd(socket.into_raw_fd()) })
    }

    async fn open(server: SocketAddr) -> io::Result<Self> {
        Ok(Self::from_std(connected_datagrams(server)?))
    }
}

async fn sleep(timeout: Duration) {
    glommio::timer::sleep(timeout).await;
}

/// An executor on this thread. Unbound: the CPUs are the orchestrator's
/// choice (it pins the whole process), not glommio's. Glommio panics where
/// io_uring is missing, so its availability is probed first.
fn executor(knobs: &Settings) -> io::Result<LocalExecutor> {
    Unavailable::probe_io_uring()?;
    let mut builder = LocalExecutorBuilder::new(Placement::Unbound);
    if let Some(us) = knobs.get("spin_before_park_us") {
        builder = builder.spin_before_park(Duration::from_micros(us));
    }
    if let Some(depth) = knobs.get("ring_depth") {
        builder = builder.ring_depth(depth as usize);
    }
    builder.make().map_err(|e| Unavailable::io_uring(e.into()))
}

async fn connect(addr: SocketAddr) -> io::Result<Compat<TcpStream>> {
    Compat::nodelay(TcpStream::connect(addr).await?)
}

impl pingpong::Runtime for ThreadPerCore {
    const LISTENERS: ListenerModel = ListenerModel::PerThread;
    const KNOBS: &'static [knobs::Knob] = knobs::GLOMMIO;

    fn serve(server: Server) -> io::Result<()> {
        let ready = &server.ready;
        on_threads("server", server.listeners, |listener| {
            executor(&server.knobs)?.run(async {
                // SAFETY: the descriptor comes from a bound, listening socket given up here.
                let listener = unsafe { TcpListener::from_raw_fd(listener.into_raw_fd()) };
                let echo = server
                    .echo
                    .spawning(1, |task| drop(spawn_local(task).detach()));
                let serving = glommio::executor().current_task_queue();
                let accepting = accept_loop(
                    ready,
                    async || Compat::nodelay(listener.accept().await?),
                    |stream| {
                        let tls = server.tls.clone();
                        let spawn_writer =
                            |writer: Writer<_>| drop(spawn_local(writer.run()).detach());
                        let connection =
                            serve(stream, tls, Tls::accept, echo.clone(), spawn_writer);
                        // Into the connections' queue, wherever the accept loop runs.
                        spawn_local_into(connection, serving)
                            .expect("the executor's own queue")
                            .detach();
                    },
                );
                match server.knobs.get("accept_latency_us") {
                    None => accepting.await,
                    Some(us) => {
                        let queue = glommio::executor().create_task_queue(
                            Shares::default(),
                            Latency::Matters(Duration::from_micros(us)),
                            "accept",
                        );
                        // SAFETY: the task is awaited here, before what it borrows ends.
                        let accepting = unsafe { spawn_scoped_local_into(accepting, queue) };
                        accepting
                            .map_err(|e| io::Error::other(format!("the accept queue: {e}")))?
                            .await
                    }
                }
            })
        })
    }

    fn serve_web(server: Server) -> io::Result<()> {
        let web = Web::of(&server);
        on_threads("server", server.listeners, |listener| {
            executor(&server.knobs)?.run(async {
                // SAFETY: the descriptor comes from a bound, listening socket given up here.
                let listener = unsafe { TcpListener::from_raw_fd(listener.into_raw_fd()) };
                accept_loop(
                    &server.ready,
                    async || Compat::nodelay(listener.accept().await?),
                    |stream| drop(spawn_local(web.clone().serve(stream.0)).detach()),
                )
                .await
            })
        })
    }

    fn client(client: &Arc<Client>) -> io::Result<()> {
        on_threads("client", (0..client.config.threads).collect(), |thread| {
            executor(&client.config.knobs)?.run(async {
                all_connections(client.connections_of(thread), || match &client.config.tls {
                    None => spawn_local(connection(client.clone(), connect)),
                    Some(tls) => {
                        let tls = tls.clone();
                        spawn_local(connection(client.clone(), move |addr| {
                            connect_tls(tls.clone(), addr, connect)
                        }))
                    }
                })
                .await
            })
        })
    }

    fn serve_udp(server: DatagramServer) -> io::Result<()> {
        on_threads("server", server.sockets, |socket| {
            // glommio takes a socket in only inside its executor.
            executor(&server.knobs)?
                .run(async { answer(server.ready.clone(), Udp::from_std(socket)).await })
        })
    }

    fn client_udp(client: &Arc<Client>) -> io::Result<()> {
        on_threads("client", (0..client.config.threads).collect(), |thread| {
            executor(&client.config.knobs)?.run(async {
                all_connections(client.connections_of(thread), || {
                    spawn_local(datagram_connection(client.clone(), Udp::open, sleep))
                })
                .await
            })
        })
    }
}

fn main() -> std::process::ExitCode {
    pingpong::cli::main::<ThreadPerCore>()
}
