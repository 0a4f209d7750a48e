//! One server thread: accept on its own listener, echo every connection.

use std::io;
use std::sync::Arc;

use mio::net::TcpListener;
use mio::{Events, Interest, Poll, Token};
use pingpong::fault;
use pingpong::server::{Echo, Ready};
use rustls::{ServerConfig, ServerConnection};
use slab::Slab;

use crate::pipe::Pipe;
use crate::socket::Socket;

const LISTENER: Token = Token(usize::MAX);

pub fn event_loop(
    listener: std::net::TcpListener,
    sizes: &Echo,
    tls: Option<&Arc<ServerConfig>>,
    ready: &Ready,
) -> io::Result<()> {
    let mut poll = Poll::new()?;
    let mut listener = TcpListener::from_std(listener);
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)?;
    let mut conns: Slab<Pipe> = Slab::new();
    let mut events = Events::with_capacity(1024);
    ready.listening();
    loop {
        if let Err(e) = poll.poll(&mut events, None) {
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        // The listener first, whatever its place among the events: a queue
        // left waiting behind a thousand echoes overflows in a connect storm.
        if events.iter().any(|e| e.token() == LISTENER) {
            accept_all(&listener, &poll, &mut conns, sizes.buffer, tls)?;
        }
        for event in &events {
            let key = event.token().0;
            // A connection just accepted is writable and has nothing to do
            // until it is readable.
            let idle = |pipe: &Pipe| pipe.fresh() && !event.is_readable();
            if let Some(pipe) = conns.get_mut(key).filter(|p| !idle(p))
                && !matches!(echo(pipe, sizes.block, event.is_read_closed()), Ok(true))
            {
                // Closed by the peer or failed: the client reports failures.
                conns.remove(key);
            }
        }
    }
}

fn accept_all(
    listener: &TcpListener,
    poll: &Poll,
    conns: &mut Slab<Pipe>,
    buffer: usize,
    tls: Option<&Arc<ServerConfig>>,
) -> io::Result<()> {
    loop {
        let mut stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
                ) =>
            {
                continue;
            }
            Err(e) => return Err(e),
        };
        stream.set_nodelay(true)?;
        let entry = conns.vacant_entry();
        poll.registry().register(
            &mut stream,
            Token(entry.key()),
            Interest::READABLE | Interest::WRITABLE,
        )?;
        // The handshake runs in the echo loop: its first reads answer it.
        let socket = match tls {
            None => Socket::Plain(stream),
            Some(tls) => Socket::tls(
                stream,
                ServerConnection::new(tls.clone()).map_err(io::Error::other)?,
            ),
        };
        entry.insert(Pipe::new(socket, buffer));
    }
}

/// Echoes until the socket has nothing more to read or cannot take more;
/// `false` once the connection is over.
fn echo(pipe: &mut Pipe, block: usize, read_closed: bool) -> io::Result<bool> {
    let mut drained = false;
    loop {
        if !pipe.flush()? || drained {
            return Ok(true);
        }
        match pipe
            .read(read_closed)?
            .map(|(data, drained)| (data.len(), drained))
        {
            None => return Ok(true),
            Some((0, _)) => {
                pipe.socket.close();
                return Ok(false);
            }
            Some((n, short)) => {
                let (data, at) = pipe.echo(n);
                pingpong::server::before_echo(data, at, block);
                if fault::ends_connection(at + n as u64) {
                    pipe.flush()?;
                    pipe.socket.close();
                    return Ok(false);
                }
                drained = short;
            }
        }
    }
}
