//! may: stackful coroutines scheduled over N worker threads (work-stealing),
//! each worker with its own epoll; one shared listener. Code is written as
//! blocking IO ([`pingpong::blocking`]); a coroutine that would block is
//! switched away from until its socket is ready.

use std::future;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::os::fd::{FromRawFd, IntoRawFd};
use std::sync::Arc;

use may::coroutine::{self, Coroutine, JoinHandle};
use may::net::{TcpListener, TcpStream, UdpSocket};
use pingpong::blocking::{self, Blocking, BlockingDatagrams, DatagramSocket, Parker};
use pingpong::client::{connection, datagram_connection};
use pingpong::datagram::LOSS_TIMEOUT;
use pingpong::knobs::{self, Settings};
use pingpong::server::{DatagramServer, accept_loop, answer, connected_datagrams};
use pingpong::{Client, Server, Topology};

struct Coroutines;

/// Each coroutine's stack in words: 128 KiB, room for a TLS handshake
/// (may's default is 32 KiB).
const STACK_WORDS: u64 = 16 << 10;

/// A may socket: reads and writes switch the coroutine away while they wait.
struct Socket(TcpStream);

impl Read for Socket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

impl Write for Socket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl blocking::Socket for Socket {
    fn shutdown_write(&self) -> io::Result<()> {
        self.0.shutdown(std::net::Shutdown::Write)
    }
}

/// A may UDP socket: its IO switches the coroutine away while it waits.
struct Udp(UdpSocket);

impl Udp {
    fn from_std(socket: std::net::UdpSocket) -> Self {
        // SAFETY: the descriptor comes from a bound socket given up here.
        Self(unsafe { UdpSocket::from_raw_fd(socket.into_raw_fd()) })
    }

    /// A client's: connected, its receives timed out.
    fn open(server: SocketAddr) -> io::Result<BlockingDatagrams<Self>> {
        let udp = Self::from_std(connected_datagrams(server)?);
        udp.0.set_read_timeout(Some(LOSS_TIMEOUT))?;
        Ok(BlockingDatagrams(udp))
    }
}

impl DatagramSocket for Udp {
    fn send(&self, buf: &[u8]) -> io::Result<usize> {
        self.0.send(buf)
    }

    fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.recv(buf)
    }

    fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.0.recv_from(buf)
    }

    fn send_to(&self, buf: &[u8], to: SocketAddr) -> io::Result<usize> {
        self.0.send_to(buf, to)
    }
}

fn socket(stream: TcpStream) -> io::Result<Blocking<Socket>> {
    stream.set_nodelay(true)?;
    Ok(Blocking::new(Socket(stream)))
}

/// Parks the calling coroutine, not its worker thread.
struct Co(Coroutine);

impl Parker for Co {
    fn current() -> Self {
        Self(coroutine::current())
    }

    fn park() {
        coroutine::park();
    }

    fn unpark(&self) {
        self.0.unpark();
    }
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    blocking::block_on::<Co, F>(future)
}

/// Sets may's workers (once, before the first coroutine): `threads` of
/// them, unpinned (the orchestrator pins the process), with the knobs.
fn configure(threads: usize, knobs: &Settings) {
    let config = may::config();
    let stack = knobs.get("stack_words").unwrap_or(STACK_WORDS);
    config.set_workers(threads).set_stack_size(stack as usize);
    config.set_worker_pin(false);
}

/// Starts `work` in a coroutine.
fn go<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> JoinHandle<T> {
    // SAFETY: may's spawn is unsafe because a coroutine may move between
    // worker threads at a switch, so a thread-local borrow held across one
    // would dangle. Nothing here holds one across IO (the latency recorder
    // borrows its thread's histogram only to clone a handle to it).
    unsafe { coroutine::spawn(work) }
}

fn joined<T>(handle: JoinHandle<T>, what: &str) -> io::Result<T> {
    handle
        .join()
        .map_err(|_| io::Error::other(format!("a {what} coroutine panicked")))
}

impl pingpong::Runtime for Coroutines {
    const TOPOLOGY: Topology = Topology::Shared;
    const NO_WEB: &'static str = "may's coroutines block on their IO, and poll no futures";
    const NO_TASKS: Option<&'static str> =
        Some("may serves each connection on a coroutine of its own, whose IO blocks it");
    const KNOBS: &'static [knobs::Knob] = knobs::MAY;

    fn serve(mut server: Server) -> io::Result<()> {
        configure(server.threads, &server.knobs);
        let listener = server.listeners.pop().expect("one shared listener");
        if server.knobs.get("accept_thread") == Some(1) {
            // As muduo's acceptor: a thread that only accepts, parked in
            // the kernel while the queue is empty, and that no busy
            // coroutine keeps from running.
            listener.set_nonblocking(false)?;
            return accept_loop_on::<std::thread::Thread>(server, move || {
                let stream = listener.accept()?.0;
                // SAFETY: the descriptor comes from a connection given up
                // here; may makes it non-blocking and registers it.
                Ok(unsafe { TcpStream::from_raw_fd(stream.into_raw_fd()) })
            });
        }
        // SAFETY: the descriptor comes from a bound, listening socket given up here.
        let listener = unsafe { TcpListener::from_raw_fd(listener.into_raw_fd()) };
        let accepting = go(move || accept_loop_on::<Co>(server, move || Ok(listener.accept()?.0)));
        joined(accepting, "server")?
    }

    fn client(client: &Arc<Client>) -> io::Result<()> {
        on_coroutines(client, |client| {
            let tls = client.config.tls.clone();
            let connect = |addr: SocketAddr| {
                let plain = TcpStream::connect(addr).and_then(socket);
                future::ready(plain.and_then(|plain| plain.connected(tls.as_deref())))
            };
            block_on(connection(client, connect))
        })
    }

    fn serve_udp(server: DatagramServer) -> io::Result<()> {
        configure(server.threads, &server.knobs);
        let answering: Vec<_> = (server.sockets.into_iter())
            .map(|socket| {
                let (ready, socket) = (server.ready.clone(), Udp::from_std(socket));
                go(move || block_on(answer(ready, BlockingDatagrams(socket))))
            })
            .collect();
        for socket in answering {
            joined(socket, "server")??;
        }
        Ok(())
    }

    fn client_udp(client: &Arc<Client>) -> io::Result<()> {
        on_coroutines(client, |client| {
            let open = |server| future::ready(Udp::open(server));
            // The socket times its receives out itself.
            block_on(datagram_connection(client, open, |_| future::pending()))
        })
    }
}

/// The server's accept loop, parked with `P`: a coroutine for each
/// connection that `accept` gives.
fn accept_loop_on<P: Parker>(
    server: Server,
    mut accept: impl FnMut() -> io::Result<TcpStream>,
) -> io::Result<()> {
    let (echo, tls) = (server.echo, server.tls);
    blocking::block_on::<P, _>(accept_loop(
        &server.ready,
        async || socket(accept()?),
        |stream| {
            let (tls, echo) = (tls.clone(), echo.clone());
            go(move || blocking::serve::<Co, _>(stream, echo, tls.as_ref()));
        },
    ))
}

/// Runs `session` for each of the client's connections, each in a
/// coroutine of its own, and waits for them all.
fn on_coroutines(
    client: &Arc<Client>,
    session: impl Fn(Arc<Client>) + Send + Clone + 'static,
) -> io::Result<()> {
    configure(client.config.threads, &client.config.knobs);
    let sessions: Vec<_> = (0..client.config.connections)
        .map(|_| {
            let (client, session) = (client.clone(), session.clone());
            go(move || session(client))
        })
        .collect();
    for session in sessions {
        joined(session, "connection")?;
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    pingpong::cli::main::<Coroutines>()
}
