//! The server's loops, written once: a connection's echo, and the accept
//! loop that hands each connection on.

use std::io;

use super::setup::{Echo, Ready};
use super::step::Step;
use crate::fault;
use crate::stream::Stream;

/// Echoes every byte it reads, as soon as it reads it, until end of
/// stream; each block after `step` (its work, here or elsewhere).
///
/// An error ends the connection quietly: the client sees it and reports it.
pub async fn echo<S: Stream>(mut stream: S, how: Echo, step: impl Step) {
    let mut buf = Vec::with_capacity(how.buffer);
    let mut echoed = 0;
    loop {
        let (read, b) = stream.read(buf).await;
        let n = match read {
            Ok(0) => return stream.close().await,
            Err(_) => return,
            Ok(n) => n,
        };
        let Some(b) = step.step(b, n, echoed, how.block).await else {
            return;
        };
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
