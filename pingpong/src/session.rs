//! The session loops, written once for every async runtime.

use std::io;
use std::sync::Arc;

use crate::protocol::{Next, Session, SessionError};
use crate::server::Ready;
use crate::{Client, Listener, Stream};

/// Echoes every byte it reads, as soon as it reads it, until end of stream.
///
/// An error ends the connection quietly: the client sees it and reports it.
pub async fn echo<S: Stream>(mut stream: S, block: usize) {
    let mut buf = Vec::with_capacity(block);
    loop {
        buf.clear();
        let (read, b) = stream.read(buf).await;
        buf = b;
        match read {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let (written, b) = stream.write_all(buf).await;
        buf = b;
        if written.is_err() {
            return;
        }
    }
}

/// Accepts connections and hands each to `spawn`, until accepting fails for
/// good. Reports the listener as served before the first accept.
pub async fn accept_loop<L: Listener>(
    mut listener: L,
    ready: &Ready,
    mut spawn: impl FnMut(L::Stream),
) -> io::Result<()> {
    ready.listening();
    loop {
        match listener.accept().await {
            Ok(stream) => spawn(stream),
            // The peer gave up before we accepted: not the listener's fault.
            Err(e) if e.kind() == io::ErrorKind::ConnectionAborted => {}
            Err(e) => return Err(e),
        }
    }
}

/// One client connection: connect, write the first block, then verify and
/// echo until the window closes; half-close and drain. A failure is recorded
/// in `client` and ends only this connection.
pub async fn connection<S: Stream>(client: Arc<Client>) {
    if let Err(e) = run_connection::<S>(&client).await {
        client.fail(&e);
    }
}

async fn run_connection<S: Stream>(client: &Client) -> Result<(), SessionError> {
    let mut stream = S::connect(client.config.connect)
        .await
        .map_err(SessionError::Connect)?;
    let mut session = Session::new(client);
    client.connected();
    let (written, mut buf) = stream.write_all(session.first_block().to_vec()).await;
    written.map_err(|e| session.io_error(e))?;
    loop {
        buf.clear();
        let (read, b) = stream.read(buf).await;
        buf = b;
        if read.map_err(|e| session.io_error(e))? == 0 {
            return session.on_eof();
        }
        match session.on_data(&buf)? {
            Next::Echo => {
                let (written, b) = stream.write_all(buf).await;
                buf = b;
                written.map_err(|e| session.io_error(e))?;
            }
            Next::Stop => stream
                .shutdown_write()
                .await
                .map_err(|e| session.io_error(e))?,
            Next::Drain => {}
        }
    }
}
