//! The no-runtime baseline: blocking std::net, one OS thread per connection
//! on both sides, no event loop. The threads option has no effect here,
//! but over UDP, where a server has one socket per thread asked for and
//! serves each on a thread of its own (a client, each socket on its own).
//!
//! Every IO call blocks its thread ([`pingpong::blocking`]); the one real
//! wait is the client's start gate, on which a connection thread parks until
//! it is woken.

use std::future;
use std::io;
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::mpsc::{self, SendError, SyncSender};
use std::sync::{Arc, Barrier, Mutex};
use std::thread::{self, Thread};

use pingpong::blocking::{self, Blocking, BlockingDatagrams};
use pingpong::client::{connection, datagram_connection};
use pingpong::datagram::LOSS_TIMEOUT;
use pingpong::server::{DatagramServer, accept_loop, answer, connected_datagrams};
use pingpong::{Client, Server, Topology};

use backlog::Backlog;

mod backlog;

/// Stack of each connection thread: the session keeps its buffer on the
/// heap, and 10,000 threads must fit in memory.
const STACK: usize = 128 << 10;

struct ThreadPerConnection;

/// A connection: blocking, TCP_NODELAY, lowering its thread's priority before its first read.
fn blocking(stream: TcpStream) -> io::Result<Blocking<TcpStream>> {
    stream.set_nonblocking(false)?;
    stream.set_nodelay(true)?;
    Ok(Blocking::new(stream).before_first_read(lower_priority))
}

/// Runs a future on this thread, parking it whenever the future waits.
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    blocking::block_on::<Thread, F>(future)
}

/// Spawns a connection thread.
fn spawn(name: String, work: impl FnOnce() + Send + 'static) -> io::Result<thread::JoinHandle<()>> {
    thread::Builder::new()
        .name(name)
        .stack_size(STACK)
        .spawn(work)
}

/// Connection threads run at the lowest priority (nice 19, which Linux
/// applies per thread) from their first read on: 10,000 of them busy would
/// otherwise starve the process's own control threads (the client's timer
/// waking them all, the server's accept loop) for minutes. They all share
/// that priority, so how they compete with each other is unchanged. Not
/// before: with immediate arrival, a client thread lowered as it starts (or
/// once connected) waited behind thousands of busy ones to connect (or to
/// count itself connected), and 2,000 of 10,000 were not up after a minute.
fn lower_priority() {
    // SAFETY: setpriority(2) on the calling thread. Raising one's own
    // niceness needs no privilege; should it fail, the thread runs as is.
    unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 19) };
}

impl pingpong::Runtime for ThreadPerConnection {
    const TOPOLOGY: Topology = Topology::Shared;
    const NO_WEB: &'static str =
        "std-threads blocks a thread on each connection's IO, and polls no futures";
    const NO_TASKS: Option<&'static str> =
        Some("std-threads serves each connection on a thread of its own and spawns nothing else");

    fn serve(mut server: Server) -> io::Result<()> {
        let listener = server.listeners.pop().expect("one shared listener");
        listener.set_nonblocking(false)?;
        let (echo, tls) = (server.echo, server.tls);
        // A thread whose connection ended waits for the next one instead of
        // exiting: every exit unmaps its stacks under the process's memory-map
        // lock, and 10,000 of them in a row stall the connections still running
        // for minutes. Still one thread per live connection.
        let idle: Arc<Mutex<Vec<SyncSender<Blocking<TcpStream>>>>> = Arc::default();
        let mut backlog = Backlog::new(listener);
        block_on(accept_loop(
            &server.ready,
            async || blocking(backlog.next()?),
            |stream| {
                let waiting = idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
                let stream = match waiting {
                    Some(thread) => match thread.send(stream) {
                        Ok(()) => return,
                        Err(SendError(stream)) => stream,
                    },
                    None => stream,
                };
                let (idle, tls, echo) = (idle.clone(), tls.clone(), echo.clone());
                // A thread that cannot start drops its connection; the client reports it.
                let _ = spawn("echo".into(), move || {
                    let (next, connections) = mpsc::sync_channel(0);
                    let mut stream = stream;
                    loop {
                        blocking::serve::<Thread, _>(stream, echo.clone(), tls.as_ref());
                        idle.lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(next.clone());
                        match connections.recv() {
                            Ok(another) => stream = another,
                            Err(_) => return,
                        }
                    }
                });
            },
        ))
    }

    fn client(client: &Arc<Client>) -> io::Result<()> {
        on_connection_threads(client, |client| {
            let tls = client.config.tls.clone();
            // Blocking, as every IO call here.
            let connect = |addr: SocketAddr| {
                let plain = TcpStream::connect(addr).and_then(blocking);
                future::ready(plain.and_then(|plain| plain.connected(tls.as_deref())))
            };
            block_on(connection(client, connect));
        })
    }

    fn serve_udp(server: DatagramServer) -> io::Result<()> {
        let ready = &server.ready;
        pingpong::on_threads("server", server.sockets, |socket| {
            socket.set_nonblocking(false)?;
            block_on(answer(ready.clone(), BlockingDatagrams(socket)))
        })
    }

    fn client_udp(client: &Arc<Client>) -> io::Result<()> {
        on_connection_threads(client, |client| {
            let open = |server| future::ready(blocking_datagrams(server));
            // The socket times its receives out itself.
            block_on(datagram_connection(client, open, |_| future::pending()));
        })
    }
}

/// A client's UDP socket, blocking, its receives timed out.
fn blocking_datagrams(server: SocketAddr) -> io::Result<BlockingDatagrams<UdpSocket>> {
    let socket = connected_datagrams(server)?;
    socket.set_nonblocking(false)?;
    socket.set_read_timeout(Some(LOSS_TIMEOUT))?;
    Ok(BlockingDatagrams(socket))
}

/// Runs `session` for each of the client's connections, each on a thread
/// of its own, and waits for them all.
fn on_connection_threads(
    client: &Arc<Client>,
    session: impl Fn(Arc<Client>) + Send + Sync + Clone + 'static,
) -> io::Result<()> {
    // No thread exits before every session is over: each exit unmaps its
    // stacks under the process's memory-map lock, and 10,000 of them in a
    // row stall the sessions still running (page faults wait for that lock)
    // for minutes, with the CPUs idle.
    let all_ended = Arc::new(Barrier::new(client.config.connections));
    let threads: Vec<_> = (0..client.config.connections)
        .map(|i| {
            let (client, all_ended, session) = (client.clone(), all_ended.clone(), session.clone());
            spawn(format!("conn-{i}"), move || {
                session(client);
                all_ended.wait();
            })
        })
        .collect::<io::Result<_>>()?;
    for thread in threads {
        thread
            .join()
            .map_err(|_| io::Error::other("a connection thread panicked"))?;
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    pingpong::cli::main::<ThreadPerConnection>()
}
