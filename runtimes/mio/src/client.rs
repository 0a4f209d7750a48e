//! One client thread: connect its share of the connections, then verify and
//! echo on each until the window closes.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Wake, Waker};
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Registry, Token};
use pingpong::Client;
use pingpong::client::{Arrival, Next, Session, SessionError};
use pingpong::tls::{Connector, handshake_failed};
use rustls::ClientConnection;

use crate::pipe::Pipe;
use crate::socket::Socket;

struct Conn<'a> {
    pipe: Pipe,
    session: Session<'a>,
    /// TCP is connected; then, with TLS, the handshake is done too.
    connected: bool,
    established: bool,
    started: bool,
}

/// The token of the start gate's wake-up.
pub const START: Token = Token(usize::MAX);

/// Wakes the event loop when the client's start gate opens.
pub struct Wakeup(pub mio::Waker);

impl Wakeup {
    /// The wake-up of `client`'s start gate, as event [`START`] of
    /// `registry`. Hold it: the gate drops its waker after waking it, and a
    /// dropped mio::Waker takes its pending event with it.
    pub fn on_start(client: &Client, registry: &Registry) -> io::Result<Arc<Self>> {
        let wakeup = Arc::new(Self(mio::Waker::new(registry, START)?));
        client.notify_on_start(&Waker::from(wakeup.clone()));
        Ok(wakeup)
    }
}

impl Wake for Wakeup {
    fn wake(self: Arc<Self>) {
        // Failing to wake is failing to start: the driver's deadline reports it.
        let _ = self.0.wake();
    }
}

/// How often a thread looks up from its sockets to see whether another
/// thread's failure has ended the run.
pub const FAILURE_CHECK: Duration = Duration::from_millis(100);

pub fn event_loop(client: &Client, connections: usize) -> io::Result<()> {
    let mut poll = Poll::new()?;
    let mut events = Events::with_capacity(1024);
    let mut conns = Vec::with_capacity(connections);
    // A storm issues every connect before anything else, so that nothing
    // slows the burst; otherwise each connection is set up as it connects.
    let mut burst = match client.config.arrival {
        Arrival::Storm => storm(client.config.connect, connections)?,
        Arrival::Gated | Arrival::Immediate => Vec::new(),
    }
    .into_iter();
    for i in 0..connections {
        let (pipe, session) = match burst.next() {
            Some((stream, began)) => (
                setup(client, stream, poll.registry(), Token(i))?,
                Session::new(client).connecting_since(began),
            ),
            None => {
                let session = Session::new(client);
                (open(client, poll.registry(), Token(i))?, session)
            }
        };
        conns.push(Some(Conn {
            pipe,
            session,
            connected: false,
            established: false,
            started: false,
        }));
    }
    let _wakeup = Wakeup::on_start(client, poll.registry())?;
    let mut open = connections;
    while open > 0 && !client.has_failed() {
        if let Err(e) = poll.poll(&mut events, Some(FAILURE_CHECK)) {
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        for event in &events {
            // The gate opened: every connection sends its first block.
            let tokens = if event.token() == START {
                0..connections
            } else {
                event.token().0..event.token().0 + 1
            };
            for token in tokens {
                let slot = &mut conns[token];
                let Some(conn) = slot else { continue };
                match conn.advance(
                    client,
                    event.is_read_closed(),
                    poll.registry(),
                    Token(token),
                ) {
                    Ok(true) => {}
                    Ok(false) => {
                        *slot = None;
                        open -= 1;
                    }
                    Err(e) => {
                        client.fail(&e);
                        *slot = None;
                        open -= 1;
                    }
                }
            }
        }
    }
    Ok(())
}

/// A connection to the client's server, registered as `token`; with TLS,
/// its handshake starts once TCP is connected.
pub fn open(client: &Client, registry: &Registry, token: Token) -> io::Result<Pipe> {
    setup(
        client,
        TcpStream::connect(client.config.connect)?,
        registry,
        token,
    )
}

/// `connections` non-blocking connects to `addr`, one after another and
/// nothing else between them, each with the moment it was issued.
fn storm(addr: SocketAddr, connections: usize) -> io::Result<Vec<(TcpStream, Instant)>> {
    (0..connections)
        .map(|_| {
            let began = Instant::now();
            Ok((TcpStream::connect(addr)?, began))
        })
        .collect()
}

/// A connecting `stream` registered as `token`, with what its connection needs.
fn setup(
    client: &Client,
    mut stream: TcpStream,
    registry: &Registry,
    token: Token,
) -> io::Result<Pipe> {
    registry.register(&mut stream, token, Interest::READABLE | Interest::WRITABLE)?;
    let socket = match &client.config.tls {
        None => Socket::Plain(stream),
        Some(tls) => Socket::tls(
            stream,
            ClientConnection::new(tls.config.clone(), Connector::server_name())
                .map_err(io::Error::other)?,
        ),
    };
    let buffer = client.config.in_flight().max(client.largest_write());
    Ok(Pipe::new(socket, buffer))
}

impl Conn<'_> {
    /// Makes all the progress the socket allows; `false` once the session
    /// has ended. With churn, a connection that ended gives way to the next.
    fn advance(
        &mut self,
        client: &Client,
        read_closed: bool,
        registry: &Registry,
        token: Token,
    ) -> Result<bool, SessionError> {
        if !self.connected {
            if !finish_connect(self.pipe.socket.tcp()).map_err(SessionError::Connect)? {
                return Ok(true);
            }
            self.connected = true;
        }
        if !self.established {
            let handshake = self.pipe.socket.handshake();
            if !handshake.map_err(|e| SessionError::Connect(handshake_failed(e)))? {
                return Ok(true);
            }
            self.established = true;
            self.session.connected();
        }
        if !self.started {
            if !client.started() {
                return Ok(true);
            }
            self.started = true;
            self.pipe.queue(self.session.first_block());
        }
        let mut drained = false;
        loop {
            if !self.pipe.flush().map_err(|e| self.session.io_error(e))? || drained {
                return Ok(true);
            }
            let data = match self.pipe.read(read_closed) {
                Ok(Some((data, short))) => {
                    drained = short;
                    data
                }
                Ok(None) => return Ok(true),
                Err(e) => return Err(self.session.io_error(e)),
            };
            if data.is_empty() {
                if !self.session.on_eof()? {
                    return Ok(false);
                }
                self.session.reconnecting();
                self.pipe = open(client, registry, token).map_err(SessionError::Connect)?;
                (self.connected, self.established, self.started) = (false, false, false);
                return Ok(true);
            }
            let n = data.len();
            match self.session.on_data(data)? {
                Next::Echo => {
                    self.pipe.echo(n);
                }
                Next::Send(0) => {}
                Next::Send(n) => self.pipe.queue(client.requests(n)),
                Next::Stop => self
                    .pipe
                    .socket
                    .shutdown_write()
                    .map_err(|e| self.session.io_error(e))?,
                Next::Drain => {}
            }
        }
    }
}

/// mio's recipe for a non-blocking connect: an error, or whether it is done
/// (then with TCP_NODELAY set).
pub fn finish_connect(stream: &TcpStream) -> io::Result<bool> {
    if let Some(e) = stream.take_error()? {
        return Err(e);
    }
    match stream.peer_addr() {
        Ok(_) => {
            stream.set_nodelay(true)?;
            Ok(true)
        }
        Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(false),
        Err(e) => Err(e),
    }
}
