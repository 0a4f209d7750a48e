//! What a server runtime is handed: its bound listeners, how each
//! connection echoes, and the channel on which it reports a listener served.

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::mpsc::Sender;
use std::thread;

use socket2::{Protocol, Socket, Type};

use super::shape::Shape;

/// Asked of listen(2); the kernel caps it at net.core.somaxconn.
const BACKLOG: i32 = 65_535;

/// How a server connection echoes: the block, the unit of the work per
/// block, and the buffer it reads into, which holds every byte a client
/// can have in flight (`window` blocks): pipelined blocks are read, and
/// echoed, together. And the shape it echoes in.
#[derive(Debug, Clone)]
pub struct Echo {
    pub block: usize,
    pub buffer: usize,
    pub shape: Shape,
}

/// What a runtime serves: bound, non-blocking listeners (one, or one per
/// thread) and how each connection echoes.
pub struct Server {
    /// TCP, or HTTP or WebSocket over it ([`super::Web`]).
    pub protocol: crate::protocol::Protocol,
    pub listeners: Vec<TcpListener>,
    pub threads: usize,
    pub echo: Echo,
    /// With TLS: what every accepted connection's handshake uses.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// The runtime's builder settings.
    pub knobs: crate::knobs::Settings,
    pub ready: Ready,
}

/// What the server's driver hears from the runtime and from stdin.
pub(crate) enum Event {
    Listening,
    Ended(thread::Result<io::Result<()>>),
    StdinClosed,
}

/// Tells the driver that one listener is being served.
#[derive(Clone)]
pub struct Ready(pub(crate) Sender<Event>);

impl Ready {
    pub fn listening(&self) {
        // The driver outlives every listener; a failed send means it is exiting.
        let _ = self.0.send(Event::Listening);
    }
}

/// Binds `count` listeners on one address; several share the port through
/// SO_REUSEPORT, so that the kernel spreads connections over them.
pub fn bind(addr: SocketAddr, count: usize) -> io::Result<Vec<TcpListener>> {
    let listen = |socket: &Socket| socket.listen(BACKLOG);
    let sockets = bind_sharing_port(addr, count, Type::STREAM, Protocol::TCP, listen)?;
    Ok(sockets.into_iter().map(Into::into).collect())
}

/// Binds `count` non-blocking sockets of a type on one address, sharing its
/// port (SO_REUSEPORT) where there are several; `ready` finishes each one
/// once bound.
pub(crate) fn bind_sharing_port(
    addr: SocketAddr,
    count: usize,
    ty: Type,
    protocol: Protocol,
    ready: impl Fn(&Socket) -> io::Result<()>,
) -> io::Result<Vec<Socket>> {
    let mut sockets: Vec<Socket> = Vec::with_capacity(count);
    for _ in 0..count {
        let at = match sockets.first() {
            Some(first) => first.local_addr()?,
            None => addr.into(),
        };
        let socket = Socket::new(at.domain(), ty, Some(protocol))?;
        socket.set_reuse_address(true)?;
        if count > 1 {
            socket.set_reuse_port(true)?;
        }
        socket.bind(&at)?;
        ready(&socket)?;
        socket.set_nonblocking(true)?;
        sockets.push(socket);
    }
    Ok(sockets)
}

/// The backlog the kernel grants a listen(2) of [`BACKLOG`].
pub(crate) fn backlog_in_force() -> u32 {
    crate::limits::somaxconn().map_or(BACKLOG as u32, |max| max.min(BACKLOG as u32))
}
