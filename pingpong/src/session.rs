//! The session loops, written once for every async runtime.

use std::future::Future;
use std::io;
use std::sync::Arc;

use crate::Client;
use crate::Stream;
use crate::protocol::{Next, Session, SessionError};
use crate::server::Ready;
use crate::{fault, work};

/// How a server connection echoes: the block, the unit of the work per
/// block, and the buffer it reads into, which holds every byte a client
/// can have in flight (`window` blocks): pipelined blocks are read, and
/// echoed, together.
#[derive(Debug, Clone, Copy)]
pub struct Echo {
    pub block: usize,
    pub buffer: usize,
}

/// Echoes every byte it reads, as soon as it reads it, until end of stream.
///
/// An error ends the connection quietly: the client sees it and reports it.
pub async fn echo<S: Stream>(mut stream: S, shape: Echo) {
    let mut buf = Vec::with_capacity(shape.buffer);
    let mut echoed = 0;
    loop {
        let (read, mut b) = stream.read(buf).await;
        let n = match read {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        before_echo(&mut b[..n], echoed, shape.block);
        echoed += n as u64;
        let (written, b) = stream.write_all(b, n).await;
        buf = b;
        if written.is_err() {
            return;
        }
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

/// What a runtime's task handle yields: nothing, or whether the task ran to
/// its end (an error means it panicked or was cancelled).
pub trait Joined {
    fn into_result(self) -> io::Result<()>;
}

impl Joined for () {
    fn into_result(self) -> io::Result<()> {
        Ok(())
    }
}

impl<E: std::fmt::Display> Joined for Result<(), E> {
    fn into_result(self) -> io::Result<()> {
        self.map_err(|e| io::Error::other(format!("a connection task did not finish: {e}")))
    }
}

/// Starts `count` client connections with `spawn` (which spawns one
/// [`connection`] on the runtime and returns its handle) and waits for all.
pub async fn all_connections<H>(count: usize, spawn: impl FnMut() -> H) -> io::Result<()>
where
    H: Future<Output: Joined>,
{
    let tasks: Vec<H> = std::iter::repeat_with(spawn).take(count).collect();
    for task in tasks {
        task.await.into_result()?;
    }
    Ok(())
}

/// One client connection: `connect`, wait until every connection is up,
/// write the first block, then verify and echo until the window closes;
/// half-close and drain. A failure is recorded
/// in `client` and ends only this connection.
pub async fn connection<S: Stream>(
    client: Arc<Client>,
    connect: impl Future<Output = io::Result<S>>,
) {
    let mut session = Session::new(&client);
    if let Err(e) = run_connection(&client, &mut session, connect).await {
        client.fail(&e);
    }
}

async fn run_connection<S: Stream>(
    client: &Client,
    session: &mut Session<'_>,
    connect: impl Future<Output = io::Result<S>>,
) -> Result<(), SessionError> {
    let mut stream = connect.await.map_err(SessionError::Connect)?;
    client.connected();
    client.wait_for_start().await;
    let first = session.first_block();
    let (written, mut buf) = stream.write_all(first.to_vec(), first.len()).await;
    written.map_err(|e| session.io_error(e))?;
    loop {
        let (read, b) = stream.read(buf).await;
        buf = b;
        let n = read.map_err(|e| session.io_error(e))?;
        if n == 0 {
            return session.on_eof();
        }
        match session.on_data(&buf[..n])? {
            Next::Echo => {
                let (written, b) = stream.write_all(buf, n).await;
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
