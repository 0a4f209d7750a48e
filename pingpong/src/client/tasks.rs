//! A client connection as a future: it connects, waits for the start, and
//! pingpongs (an async runtime spawns one for each; a blocking baseline
//! runs it on a thread or coroutine of its own).

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use super::session::{Next, Session, SessionError};
use super::state::Client;
use crate::stream::Stream;

/// One client connection: `connect` to the client's server, wait for the
/// start (every connection up, unless arrival is immediate), write the
/// first block, then verify and echo until the window closes (over HTTP
/// and WebSocket, send a request for each answer); half-close and drain. With churn, it closes after so many blocks and connects
/// again, until the window closes. A failure is recorded in `client` and
/// ends only this connection.
pub async fn connection<S: Stream, F>(client: Arc<Client>, connect: impl Fn(SocketAddr) -> F)
where
    F: Future<Output = io::Result<S>>,
{
    let mut session = Session::new(&client);
    loop {
        match run_connection(&client, &mut session, connect(client.config.connect)).await {
            Ok(true) => session.reconnecting(),
            Ok(false) => return,
            Err(e) => return client.fail(&e),
        }
    }
}

/// One connection of the session; whether another is to follow it.
async fn run_connection<S: Stream>(
    client: &Client,
    session: &mut Session<'_>,
    connect: impl Future<Output = io::Result<S>>,
) -> Result<bool, SessionError> {
    let mut stream = connect.await.map_err(SessionError::Connect)?;
    session.connected();
    client.wait_for_start().await;
    let first = session.first_block();
    let (written, mut buf) = stream.write_all(first.to_vec(), first.len()).await;
    written.map_err(|e| session.io_error(e))?;
    // What was written first is read into next: a window, at least (a
    // WebSocket upgrade is less).
    if buf.capacity() < client.config.in_flight() {
        buf = Vec::with_capacity(client.config.in_flight());
    }
    // Over HTTP and WebSocket, a window of requests, made once: each
    // send writes a prefix of it.
    let mut requests = Vec::new();
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
            Next::Send(0) | Next::Drain => {}
            Next::Send(n) => {
                if requests.is_empty() {
                    requests = client.first.to_vec();
                }
                let len = client.requests(n).len();
                let (written, r) = stream.write_all(requests, len).await;
                requests = r;
                written.map_err(|e| session.io_error(e))?;
            }
            Next::Stop => stream
                .shutdown_write()
                .await
                .map_err(|e| session.io_error(e))?,
        }
    }
}
