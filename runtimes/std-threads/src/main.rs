//! The no-runtime baseline: blocking std::net, one OS thread per connection
//! on both sides, no event loop. The threads option has no effect here.
//!
//! The shared loops are async only in name for this socket: every
//! IO call blocks until done. The one real wait is the client's start gate,
//! on which a connection thread parks until it is woken.

use std::future::{self, Future};
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::ops::{Deref, DerefMut};
use std::pin::pin;
use std::sync::mpsc::{self, SendError, SyncSender};
use std::sync::{Arc, Barrier, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};

use pingpong::client::connection;
use pingpong::server::{accept_loop, echo, handshake_then_echo};
use pingpong::tls::{Connector, handshake_failed};
use pingpong::{Client, ListenerModel, Server};
use rustls::{
    ClientConnection, ConnectionCommon, ServerConfig, ServerConnection, SideData, StreamOwned,
};

/// Stack of each connection thread: the session keeps its buffer on the
/// heap, and 10,000 threads must fit in memory.
const STACK: usize = 128 << 10;

struct ThreadPerConnection;

struct Blocking {
    socket: Socket,
    /// Whether its thread runs at the lowest priority yet.
    lowered: bool,
}

/// A blocking TCP socket, or TLS over one: rustls's blocking stream.
enum Socket {
    Plain(TcpStream),
    Tls(Box<dyn Tls + Send>),
}

/// rustls's blocking stream, either side.
trait Tls: Read + Write {
    /// Sends close_notify and every record still held.
    fn close_notify(&mut self) -> io::Result<()>;
    fn tcp(&self) -> &TcpStream;
}

impl<C, S> Tls for StreamOwned<C, TcpStream>
where
    C: DerefMut + Deref<Target = ConnectionCommon<S>>,
    S: SideData,
{
    fn close_notify(&mut self) -> io::Result<()> {
        self.conn.send_close_notify();
        self.flush()
    }

    fn tcp(&self) -> &TcpStream {
        &self.sock
    }
}

impl Blocking {
    fn new(stream: TcpStream) -> io::Result<Self> {
        stream.set_nonblocking(false)?;
        stream.set_nodelay(true)?;
        Ok(Self {
            socket: Socket::Plain(stream),
            lowered: false,
        })
    }

    /// Completes a TLS handshake on the (plain) socket, blocking until done.
    fn handshake<C, S>(self, mut conn: C) -> io::Result<Self>
    where
        C: DerefMut + Deref<Target = ConnectionCommon<S>> + Send + 'static,
        S: SideData + 'static,
    {
        let Socket::Plain(mut tcp) = self.socket else {
            unreachable!("a handshake starts on a plain socket")
        };
        while conn.is_handshaking() {
            conn.complete_io(&mut tcp)?;
        }
        Ok(Self {
            socket: Socket::Tls(Box::new(StreamOwned::new(conn, tcp))),
            lowered: self.lowered,
        })
    }

    fn connect(addr: SocketAddr, tls: Option<&Connector>) -> io::Result<Self> {
        let plain = Self::new(TcpStream::connect(addr)?)?;
        match tls {
            None => Ok(plain),
            Some(tls) => {
                let conn = ClientConnection::new(tls.config.clone(), Connector::server_name())
                    .map_err(io::Error::other)?;
                plain.handshake(conn).map_err(handshake_failed)
            }
        }
    }

    fn accept(self, tls: &Arc<ServerConfig>) -> io::Result<Self> {
        let conn = ServerConnection::new(tls.clone()).map_err(io::Error::other)?;
        self.handshake(conn)
    }
}

impl pingpong::Stream for Blocking {
    async fn read(&mut self, mut buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        // std reads into initialized memory: zero the buffer once, keep it full length.
        if buf.len() < buf.capacity() {
            buf.resize(buf.capacity(), 0);
        }
        if !self.lowered {
            lower_priority();
            self.lowered = true;
        }
        let read = match &mut self.socket {
            Socket::Plain(tcp) => tcp.read(&mut buf),
            Socket::Tls(tls) => tls.read(&mut buf),
        };
        (read, buf)
    }

    async fn write_all(&mut self, buf: Vec<u8>, len: usize) -> (io::Result<()>, Vec<u8>) {
        let written = match &mut self.socket {
            Socket::Plain(tcp) => tcp.write_all(&buf[..len]),
            Socket::Tls(tls) => tls.write_all(&buf[..len]).and_then(|()| tls.flush()),
        };
        (written, buf)
    }

    async fn shutdown_write(&mut self) -> io::Result<()> {
        match &mut self.socket {
            Socket::Plain(tcp) => tcp.shutdown(Shutdown::Write),
            Socket::Tls(tls) => {
                tls.close_notify()?;
                tls.tcp().shutdown(Shutdown::Write)
            }
        }
    }

    async fn close(&mut self) {
        if let Socket::Tls(tls) = &mut self.socket {
            // The peer has gone if it fails.
            let _ = tls.close_notify();
        }
    }
}

/// Wakes a parked thread.
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Runs a future on this thread, parking it whenever the future waits.
fn block_on<F: Future>(future: F) -> F::Output {
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        thread::park();
    }
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
    const LISTENERS: ListenerModel = ListenerModel::Shared;

    fn serve(mut server: Server) -> io::Result<()> {
        let listener = server.listeners.pop().expect("one shared listener");
        listener.set_nonblocking(false)?;
        let (shape, tls) = (server.echo, server.tls);
        // A thread whose connection ended waits for the next one instead of
        // exiting: every exit unmaps its stacks under the process's memory-map
        // lock, and 10,000 of them in a row stall the connections still running
        // for minutes. Still one thread per live connection.
        let idle: Arc<Mutex<Vec<SyncSender<Blocking>>>> = Arc::default();
        block_on(accept_loop(
            &server.ready,
            async || Blocking::new(listener.accept()?.0),
            |stream| {
                let waiting = idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
                let stream = match waiting {
                    Some(thread) => match thread.send(stream) {
                        Ok(()) => return,
                        Err(SendError(stream)) => stream,
                    },
                    None => stream,
                };
                let (idle, tls) = (idle.clone(), tls.clone());
                // A thread that cannot start drops its connection; the client reports it.
                let _ = spawn("echo".into(), move || {
                    let (next, connections) = mpsc::sync_channel(0);
                    let mut stream = stream;
                    loop {
                        match &tls {
                            None => block_on(echo(stream, shape)),
                            Some(tls) => {
                                block_on(handshake_then_echo(async { stream.accept(tls) }, shape))
                            }
                        }
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
        // No thread exits before every session is over: each exit unmaps its
        // stacks under the process's memory-map lock, and 10,000 of them in a
        // row stall the sessions still running (page faults wait for that lock)
        // for minutes, with the CPUs idle.
        let all_ended = Arc::new(Barrier::new(client.config.connections));
        let threads: Vec<_> = (0..client.config.connections)
            .map(|i| {
                let (client, all_ended) = (client.clone(), all_ended.clone());
                spawn(format!("conn-{i}"), move || {
                    let tls = client.config.tls.clone();
                    // Blocking, as every IO call here.
                    let connect =
                        |addr: SocketAddr| future::ready(Blocking::connect(addr, tls.as_deref()));
                    block_on(connection(client, connect));
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
}

fn main() -> std::process::ExitCode {
    pingpong::cli::main::<ThreadPerConnection>()
}
