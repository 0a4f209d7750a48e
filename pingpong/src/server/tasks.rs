//! The server's loops on an async runtime, and what every echo does to the
//! bytes: written once for every runtime (the mio baseline calls
//! [`before_echo`] from its own loop).

use std::future::Future;
use std::io;

use super::setup::{Echo, Ready};
use crate::stream::Stream;
use crate::{fault, work};

/// Echoes every byte it reads, as soon as it reads it, until end of stream.
///
/// An error ends the connection quietly: the client sees it and reports it.
pub async fn echo<S: Stream>(mut stream: S, shape: Echo) {
    let mut buf = Vec::with_capacity(shape.buffer);
    let mut echoed = 0;
    loop {
        let (read, mut b) = stream.read(buf).await;
        let n = match read {
            Ok(0) => return stream.close().await,
            Err(_) => return,
            Ok(n) => n,
        };
        before_echo(&mut b[..n], echoed, shape.block);
        echoed += n as u64;
        let (written, b) = stream.write_all(b, n).await;
        buf = b;
        if written.is_err() {
            return;
        }
        if fault::ends_connection(echoed) {
            return stream.close().await;
        }
    }
}

/// Echoes on the stream that `handshake` (TLS's, on an accepted socket)
/// gives, once it has. A failed handshake ends the connection quietly: the
/// client reports it. Run in the connection's own task, so that handshakes
/// do not queue behind each other in the accept loop.
pub async fn handshake_then_echo<S: Stream>(
    handshake: impl Future<Output = io::Result<S>>,
    shape: Echo,
) {
    if let Ok(stream) = handshake.await {
        echo(stream, shape).await;
    }
}

/// What a server does to `data` (stream offset `offset`) before echoing it:
/// the work per block asked for, and the fault under test, if any. Every
/// echo loop calls it, the shared one above and hand-written ones.
pub fn before_echo(data: &mut [u8], offset: u64, block: usize) {
    work::on_echo(offset, data.len(), block);
    fault::corrupt(data, offset);
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
