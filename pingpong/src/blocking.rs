//! Blocking sockets behind the pingpong trait, for implementations whose
//! every IO call blocks its caller: an OS thread (std-threads), or a
//! stackful coroutine that its runtime switches away from while it waits
//! (may), TCP and UDP alike. The shared loops are async only in name on such a socket; the
//! one real wait is the client's start gate, on which [`block_on`] parks
//! the caller until it is woken.

use std::future::Future;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::ops::{Deref, DerefMut};
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use rustls::{
    ClientConnection, ConnectionCommon, ServerConfig, ServerConnection, SideData, StreamOwned,
};

use crate::datagram::{self, Datagrams};
use crate::server::{self, Echo};
use crate::tls::{Connector, handshake_failed};

/// A connected socket whose reads and writes block.
pub trait Socket: Read + Write + Send + 'static {
    /// Half-closes: the peer reads end of stream.
    fn shutdown_write(&self) -> io::Result<()>;
}

impl Socket for std::net::TcpStream {
    fn shutdown_write(&self) -> io::Result<()> {
        self.shutdown(std::net::Shutdown::Write)
    }
}

/// A blocking socket, or TLS over one (rustls's blocking stream).
pub struct Blocking<S: Socket> {
    socket: Inner<S>,
    /// Run once, before the first read (std-threads lowers its thread's priority).
    before_first_read: Option<fn()>,
}

enum Inner<S> {
    Plain(S),
    Tls(Box<dyn Tls<S> + Send>),
}

/// rustls's blocking stream, either side.
trait Tls<S>: Read + Write {
    /// Sends close_notify and every record still held.
    fn close_notify(&mut self) -> io::Result<()>;
    fn socket(&self) -> &S;
}

impl<C, D, S> Tls<S> for StreamOwned<C, S>
where
    C: DerefMut + Deref<Target = ConnectionCommon<D>>,
    D: SideData,
    S: Socket,
{
    fn close_notify(&mut self) -> io::Result<()> {
        self.conn.send_close_notify();
        self.flush()
    }

    fn socket(&self) -> &S {
        &self.sock
    }
}

impl<S: Socket> Blocking<S> {
    pub fn new(socket: S) -> Self {
        Self {
            socket: Inner::Plain(socket),
            before_first_read: None,
        }
    }

    /// Runs `f` once, before the first read.
    pub fn before_first_read(self, f: fn()) -> Self {
        Self {
            before_first_read: Some(f),
            ..self
        }
    }

    /// Completes a TLS handshake on the (plain) socket, blocking until done.
    fn handshake<C, D>(self, mut conn: C) -> io::Result<Self>
    where
        C: DerefMut + Deref<Target = ConnectionCommon<D>> + Send + 'static,
        D: SideData + 'static,
    {
        let Inner::Plain(mut socket) = self.socket else {
            unreachable!("a handshake starts on a plain socket")
        };
        while conn.is_handshaking() {
            conn.complete_io(&mut socket)?;
        }
        Ok(Self {
            socket: Inner::Tls(Box::new(StreamOwned::new(conn, socket))),
            before_first_read: self.before_first_read,
        })
    }

    /// A client's connection, connected: inside TLS where the client runs it.
    pub fn connected(self, tls: Option<&Connector>) -> io::Result<Self> {
        let Some(tls) = tls else { return Ok(self) };
        let conn = ClientConnection::new(tls.config.clone(), Connector::server_name())
            .map_err(io::Error::other)?;
        self.handshake(conn).map_err(handshake_failed)
    }

    /// The server's side of a TLS handshake.
    fn accept_tls(self, tls: &Arc<ServerConfig>) -> io::Result<Self> {
        let conn = ServerConnection::new(tls.clone()).map_err(io::Error::other)?;
        self.handshake(conn)
    }
}

/// Serves one accepted connection to its end on the caller, which parks
/// with `P`: the echo, after the TLS handshake where the server runs TLS.
/// A failed handshake ends the connection quietly, as a failed read does.
pub fn serve<P: Parker, S: Socket>(
    stream: Blocking<S>,
    shape: Echo,
    tls: Option<&Arc<ServerConfig>>,
) {
    let stream = match tls {
        None => stream,
        Some(tls) => match stream.accept_tls(tls) {
            Ok(stream) => stream,
            Err(_) => return,
        },
    };
    block_on::<P, _>(server::echo(stream, shape, server::Inline));
}

impl<S: Socket> crate::Reads for Blocking<S> {
    async fn read(&mut self, mut buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        // A blocking read fills initialized memory: zero the buffer once, keep it full length.
        if buf.len() < buf.capacity() {
            buf.resize(buf.capacity(), 0);
        }
        if let Some(f) = self.before_first_read.take() {
            f();
        }
        let read = match &mut self.socket {
            Inner::Plain(socket) => socket.read(&mut buf),
            Inner::Tls(tls) => tls.read(&mut buf),
        };
        (read, buf)
    }
}

impl<S: Socket> crate::Writes for Blocking<S> {
    async fn write_all(&mut self, buf: Vec<u8>, len: usize) -> (io::Result<()>, Vec<u8>) {
        let written = match &mut self.socket {
            Inner::Plain(socket) => socket.write_all(&buf[..len]),
            Inner::Tls(tls) => tls.write_all(&buf[..len]).and_then(|()| tls.flush()),
        };
        (written, buf)
    }

    async fn shutdown_write(&mut self) -> io::Result<()> {
        match &mut self.socket {
            Inner::Plain(socket) => socket.shutdown_write(),
            Inner::Tls(tls) => {
                tls.close_notify()?;
                tls.socket().shutdown_write()
            }
        }
    }

    async fn close(&mut self) {
        if let Inner::Tls(tls) = &mut self.socket {
            // The peer has gone if it fails.
            let _ = tls.close_notify();
        }
    }
}

/// A UDP socket whose IO blocks: std's, or may's. A client's receives
/// time out by themselves after [`crate::datagram::LOSS_TIMEOUT`].
pub trait DatagramSocket: Send + 'static {
    fn send(&self, buf: &[u8]) -> io::Result<usize>;
    fn recv(&self, buf: &mut [u8]) -> io::Result<usize>;
    fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)>;
    fn send_to(&self, buf: &[u8], to: SocketAddr) -> io::Result<usize>;
}

impl DatagramSocket for std::net::UdpSocket {
    fn send(&self, buf: &[u8]) -> io::Result<usize> {
        std::net::UdpSocket::send(self, buf)
    }

    fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        std::net::UdpSocket::recv(self, buf)
    }

    fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        std::net::UdpSocket::recv_from(self, buf)
    }

    fn send_to(&self, buf: &[u8], to: SocketAddr) -> io::Result<usize> {
        std::net::UdpSocket::send_to(self, buf, to)
    }
}

/// A blocking UDP socket behind the pingpong trait.
pub struct BlockingDatagrams<S>(pub S);

impl<S: DatagramSocket> Datagrams for BlockingDatagrams<S> {
    async fn send(&mut self, buf: Vec<u8>, len: usize) -> (io::Result<()>, Vec<u8>) {
        let sent = self.0.send(&buf[..len]);
        (datagram::whole(sent, len), buf)
    }

    async fn recv(&mut self, mut buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        buf.resize(buf.capacity(), 0);
        let received = match self.0.recv(&mut buf) {
            // How a receive timeout (SO_RCVTIMEO) ends, on Linux.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Err(io::ErrorKind::TimedOut.into()),
            received => received,
        };
        (received, buf)
    }

    async fn recv_from(&mut self, mut buf: Vec<u8>) -> (io::Result<(usize, SocketAddr)>, Vec<u8>) {
        buf.resize(buf.capacity(), 0);
        let received = self.0.recv_from(&mut buf);
        (received, buf)
    }

    async fn send_to(
        &mut self,
        buf: Vec<u8>,
        len: usize,
        to: SocketAddr,
    ) -> (io::Result<()>, Vec<u8>) {
        let sent = self.0.send_to(&buf[..len], to);
        (datagram::whole(sent, len), buf)
    }
}

/// What waits for a wake-up: an OS thread, or a coroutine.
pub trait Parker: Send + Sync + 'static {
    /// The caller's own.
    fn current() -> Self;
    /// Waits until unparked (or not: a spurious return is allowed).
    fn park();
    fn unpark(&self);
}

impl Parker for std::thread::Thread {
    fn current() -> Self {
        std::thread::current()
    }

    fn park() {
        std::thread::park();
    }

    fn unpark(&self) {
        std::thread::Thread::unpark(self);
    }
}

struct Unpark<P>(P);

impl<P: Parker> Wake for Unpark<P> {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Runs a future on the caller, parking it whenever the future waits.
pub fn block_on<P: Parker, F: Future>(future: F) -> F::Output {
    let waker = Waker::from(Arc::new(Unpark(P::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        P::park();
    }
}
