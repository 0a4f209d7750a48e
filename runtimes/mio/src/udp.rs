//! UDP on the raw event loop: a server thread answering on its own socket,
//! and a client thread driving its share of the sockets, each with one
//! datagram in flight and a deadline for its answer.

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use mio::net::UdpSocket;
use mio::{Events, Interest, Poll, Token};
use pingpong::Client;
use pingpong::client::{DatagramSession, Reply, SessionError};
use pingpong::datagram::LOSS_TIMEOUT;
use pingpong::server::{Ready, before_answer, connected_datagrams, datagram_buffer};

use crate::client::{FAILURE_CHECK, START, Wakeup};

const SOCKET: Token = Token(0);

/// Answers every datagram on `socket`, as it reads them.
pub fn serve(socket: std::net::UdpSocket, ready: &Ready) -> io::Result<()> {
    let mut poll = Poll::new()?;
    let mut socket = UdpSocket::from_std(socket);
    (poll.registry()).register(&mut socket, SOCKET, Interest::READABLE | Interest::WRITABLE)?;
    let mut events = Events::with_capacity(16);
    let mut buf = datagram_buffer();
    // A datagram read whose answer could not go out yet (a full send buffer).
    let mut unsent: Option<(usize, SocketAddr)> = None;
    ready.listening();
    loop {
        if let Err(e) = poll.poll(&mut events, None) {
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        // Edge-triggered: on until the socket would block.
        loop {
            if let Some((n, to)) = unsent {
                match socket.send_to(&buf[..n], to) {
                    Ok(_) => unsent = None,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(e),
                }
            }
            match socket.recv_from(&mut buf) {
                Ok((n, from)) => {
                    if before_answer(&mut buf[..n]) {
                        unsent = Some((n, from));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
    }
}

struct Socket<'a> {
    socket: UdpSocket,
    session: DatagramSession<'a>,
    buf: Vec<u8>,
    /// The datagram in the buffer has yet to go out.
    unsent: bool,
}

/// A sent datagram's deadline. Every deadline is its send's time plus
/// the same timeout, so in send order they are in deadline order.
struct Deadline {
    at: Instant,
    token: usize,
    seq: u64,
}

/// Runs `connections` of the client's sockets on this thread to their end.
pub fn client(client: &Arc<Client>, connections: usize) -> io::Result<()> {
    let mut poll = Poll::new()?;
    let mut events = Events::with_capacity(1024);
    let mut sockets = Vec::with_capacity(connections);
    for token in 0..connections {
        let mut socket = UdpSocket::from_std(connected_datagrams(client.config.connect)?);
        let interest = Interest::READABLE | Interest::WRITABLE;
        poll.registry()
            .register(&mut socket, Token(token), interest)?;
        let mut session = DatagramSession::new(client);
        session.connected();
        sockets.push(Some(Socket {
            socket,
            session,
            buf: Vec::new(),
            unsent: false,
        }));
    }
    // Held here as well: the gate drops its waker after waking it.
    let wakeup = Arc::new(Wakeup(mio::Waker::new(poll.registry(), START)?));
    client.notify_on_start(&std::task::Waker::from(wakeup.clone()));
    let mut deadlines = VecDeque::new();
    let mut open = connections;
    let block = client.config.block;
    while open > 0 && !client.has_failed() {
        let wait = match deadlines.front() {
            Some(Deadline { at, .. }) => at.saturating_duration_since(Instant::now()),
            None => FAILURE_CHECK,
        };
        if let Err(e) = poll.poll(&mut events, Some(wait.min(FAILURE_CHECK))) {
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        for event in &events {
            let tokens = match event.token() {
                START => 0..connections,
                Token(token) => token..token + 1,
            };
            for token in tokens {
                let Some(socket) = &mut sockets[token] else {
                    continue;
                };
                if event.token() == START {
                    socket.buf = socket.session.first();
                    socket.unsent = true;
                }
                let advanced = socket.advance(block, token, &mut deadlines);
                open -= close(client, &mut sockets[token], advanced);
            }
        }
        let now = Instant::now();
        while let Some(deadline) = deadlines.front().filter(|d| d.at <= now) {
            let Deadline { token, seq, .. } = *deadline;
            deadlines.pop_front();
            // Answered since, or through: no longer this socket's deadline.
            let Some(socket) = sockets[token]
                .as_mut()
                .filter(|s| s.session.awaited() == seq)
            else {
                continue;
            };
            let advanced = match socket.session.on_timeout() {
                Some(next) => {
                    (socket.buf, socket.unsent) = (next, true);
                    socket.advance(block, token, &mut deadlines)
                }
                None => Ok(false),
            };
            open -= close(client, &mut sockets[token], advanced);
        }
    }
    Ok(())
}

/// Closes a socket whose session is through or failed (recording the
/// failure): how many it closed.
fn close(
    client: &Client,
    slot: &mut Option<Socket>,
    advanced: Result<bool, SessionError>,
) -> usize {
    match advanced {
        Ok(true) => 0,
        Ok(false) => {
            *slot = None;
            1
        }
        Err(e) => {
            client.fail(&e);
            *slot = None;
            1
        }
    }
}

impl Socket<'_> {
    /// Sends what is due and takes every datagram that came back, until
    /// the socket would block; `false` once the session is through.
    fn advance(
        &mut self,
        block: usize,
        token: usize,
        deadlines: &mut VecDeque<Deadline>,
    ) -> Result<bool, SessionError> {
        loop {
            if self.unsent {
                match self.socket.send(&self.buf[..block]) {
                    Ok(_) => {
                        self.unsent = false;
                        deadlines.push_back(Deadline {
                            at: Instant::now() + LOSS_TIMEOUT,
                            token,
                            seq: self.session.awaited(),
                        });
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(true),
                    Err(e) => return Err(self.session.io_error(e)),
                }
            }
            if self.buf.is_empty() {
                // Not started yet.
                return Ok(true);
            }
            let n = match self.socket.recv(&mut self.buf) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(true),
                Err(e) => return Err(self.session.io_error(e)),
            };
            match self.session.on_datagram(&mut self.buf[..n])? {
                Reply::Send => self.unsent = true,
                Reply::Wait => {}
                Reply::Stop => return Ok(false),
            }
        }
    }
}
