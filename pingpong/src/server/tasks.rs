//! The server's loops on an async runtime, written once for every runtime.

use std::future::Future;
use std::io;
use std::sync::Arc;

use super::bytes::before_echo;
use super::setup::{Echo, Ready};
use super::shape::Shape;
use super::split::{Writer, split};
use crate::fault;
use crate::stream::{Either, Split, Stream};

/// Echoes every byte it reads, as soon as it reads it, until end of stream;
/// in a shape that hands blocks off, after another task has had them.
///
/// An error ends the connection quietly: the client sees it and reports it.
pub async fn echo<S: Stream>(mut stream: S, how: Echo) {
    let handoff = match (how.shape.spawns(), &how.handoff) {
        (false, _) => None,
        (true, Some(handoff)) => Some(handoff.connection()),
        (true, None) => panic!(
            "the {:?} shape needs the runtime's spawn: its glue must serve Echo::spawning",
            how.shape
        ),
    };
    let mut buf = Vec::with_capacity(how.buffer);
    let mut echoed = 0;
    loop {
        let (read, mut b) = stream.read(buf).await;
        let n = match read {
            Ok(0) => return stream.close().await,
            Err(_) => return,
            Ok(n) => n,
        };
        match &handoff {
            None => before_echo(&mut b[..n], echoed, how.block),
            Some(handoff) => match handoff.round_trip(b, n, echoed, how.block).await {
                Some(back) => b = back,
                None => return,
            },
        }
        echoed += n as u64;
        let (written, b) = stream.write_all(b, n).await;
        buf = b;
        if written.is_err() {
            return;
        }
        if fault::ends_connection(echoed) {
            return hang_up(stream, buf).await;
        }
    }
}

/// Ends a connection mid-stream as a server that means to: half-closes
/// (with TLS, by close_notify), then reads on until the client closes too.
/// Closing with the client's bytes unread would reset the connection, and
/// the client could see the reset before the end of stream under test.
async fn hang_up<S: Stream>(mut stream: S, mut buf: Vec<u8>) {
    if stream.shutdown_write().await.is_err() {
        return;
    }
    loop {
        let (read, b) = stream.read(buf).await;
        if !matches!(read, Ok(1..)) {
            return;
        }
        buf = b;
    }
}

/// The task of one accepted connection: its echo, after the server's TLS
/// handshake where the server has TLS, which `tls_accept` (the runtime's
/// own way to wrap a socket, such as its rustls integration) performs. A
/// failed handshake ends the connection quietly, as a failed read does.
/// Spawned as the connection's own task, so that handshakes do not queue
/// behind each other in the accept loop; plain or not, one future type.
///
/// In the split shape, this task reads and `spawn_writer` spawns the
/// write side as a task of its own: the runtime's spawn, called where the
/// stream's type is known, so that it proves the writer may run there.
pub async fn serve<S, T, H>(
    stream: S,
    tls: Option<Arc<rustls::ServerConfig>>,
    tls_accept: impl FnOnce(Arc<rustls::ServerConfig>, S) -> H,
    how: Echo,
    spawn_writer: impl FnOnce(Writer<Either<S::Write, T::Write>>),
) where
    S: Split,
    T: Split,
    H: Future<Output = io::Result<T>>,
{
    let stream = match tls {
        None => Either::Plain(stream),
        Some(tls) => match tls_accept(tls, stream).await {
            Ok(stream) => Either::Tls(stream),
            Err(_) => return,
        },
    };
    match (how.shape, stream) {
        (Shape::Split, stream) => split(stream, how, spawn_writer).await,
        // Each kind of stream echoes on its own code, as in the echo shape.
        (_, Either::Plain(stream)) => echo(stream, how).await,
        (_, Either::Tls(stream)) => echo(stream, how).await,
    }
}

/// Accepts connections with `accept` and hands each to `spawn`, until
/// accepting fails for good. Reports the listener as served first.
pub async fn accept_loop<S>(
    ready: &Ready,
    mut accept: impl AsyncFnMut() -> io::Result<S>,
    mut spawn: impl FnMut(S),
) -> io::Result<()> {
    ready.listening();
    loop {
        match accept().await {
            Ok(stream) => spawn(stream),
            // The peer gave up before we accepted: not the listener's fault.
            Err(e) if e.kind() == io::ErrorKind::ConnectionAborted => {}
            Err(e) => return Err(e),
        }
    }
}
