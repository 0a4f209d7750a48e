//! The HTTP/1.1 and WebSocket echo servers, written once over futures-io:
//! hyper's HTTP/1.1 server (through smol-hyper's adapter to hyper's IO
//! traits) and async-tungstenite's WebSocket. A runtime's glue hands each
//! accepted connection over as a futures-io stream: its own, or a tokio-IO
//! one through tokio-util's compat. TLS is futures-rustls, on the suite's
//! one rustls configuration.
//!
//! Each is set up as a service written with it would be, with hyper's and
//! tungstenite's defaults except where the protocol needs otherwise: hyper
//! keeps a connection the client half-closed until its answers are out,
//! and tungstenite takes messages of any size.

use std::sync::atomic::{AtomicU64, Ordering};

use async_tungstenite::tungstenite::Message;
use async_tungstenite::tungstenite::protocol::WebSocketConfig;
use futures_lite::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, StreamExt};
use futures_rustls::TlsAcceptor;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};

use super::setup::Server;
use crate::fault::{self, Fault};
use crate::protocol::Protocol;

/// How a server answers HTTP or WebSocket connections: cloned into each
/// connection's task.
#[derive(Clone)]
pub struct Web {
    protocol: Protocol,
    tls: Option<TlsAcceptor>,
}

impl Web {
    /// What `server` serves on each connection it accepts.
    pub fn of(server: &Server) -> Self {
        assert!(
            server.protocol.web(),
            "{} is no web protocol",
            server.protocol.name()
        );
        Self {
            protocol: server.protocol,
            tls: server.tls.clone().map(TlsAcceptor::from),
        }
    }

    /// Answers one accepted connection (TCP_NODELAY set) until the client
    /// closes it, after the TLS handshake where the server has TLS. An
    /// error ends the connection quietly: the client sees it and reports it.
    pub async fn serve<S: AsyncRead + AsyncWrite + Unpin>(self, stream: S) {
        match &self.tls {
            None => self.answer(stream).await,
            Some(tls) => {
                if let Ok(stream) = tls.accept(stream).await {
                    self.answer(stream).await
                }
            }
        }
    }

    async fn answer<S: AsyncRead + AsyncWrite + Unpin>(&self, stream: S) {
        match (fault::get(), self.protocol) {
            (Some(Fault::MalformedAnswer), _) => malformed(stream).await,
            (_, Protocol::WebSocket) => websocket(stream).await,
            _ => http(stream).await,
        }
    }
}

/// Each request's body, as the answer's: hyper keeps the connection alive
/// and reads pipelined requests one after another.
async fn http<S: AsyncRead + AsyncWrite + Unpin>(stream: S) {
    let echoed = AtomicU64::new(0);
    let service = hyper::service::service_fn(|request: Request<Incoming>| {
        let echoed = &echoed;
        async move {
            let body = request.into_body().collect().await?.to_bytes();
            let at = echoed.fetch_add(body.len() as u64, Ordering::Relaxed);
            Ok::<_, hyper::Error>(Response::new(Full::new(faulty(body, at))))
        }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        // The client half-closes once its window is over, with requests
        // still in flight: they are answered before the connection closes.
        .half_close(true)
        .serve_connection(smol_hyper::rt::FuturesIo::new(stream), service)
        .await;
}

/// Each binary message back as it came, until the client closes.
async fn websocket<S: AsyncRead + AsyncWrite + Unpin>(stream: S) {
    // A block is one message, of up to the suite's largest.
    let config = WebSocketConfig::default()
        .max_message_size(None)
        .max_frame_size(None);
    let Ok(mut socket) = async_tungstenite::accept_async_with_config(stream, Some(config)).await
    else {
        return;
    };
    let mut echoed = 0;
    // The client's half-close (or a close frame) ends the stream.
    while let Some(Ok(message)) = socket.next().await {
        let Message::Binary(body) = message else {
            continue;
        };
        let at = echoed;
        echoed += body.len() as u64;
        if socket
            .send(Message::Binary(faulty(body, at)))
            .await
            .is_err()
        {
            return;
        }
    }
    // With TLS, close_notify: the client reads a clean end of stream.
    let _ = socket.get_mut().close().await;
}

/// A body as it goes back, which starts at `at` of the connection's
/// stream of bodies: with the flip-byte fault, one of its bytes flipped.
fn faulty(body: Bytes, at: u64) -> Bytes {
    if !matches!(fault::get(), Some(Fault::FlipByte(_))) {
        return body;
    }
    let mut body = body.to_vec();
    fault::corrupt(&mut body, at);
    body.into()
}

/// The malformed-answer fault: reads what the client sent first, answers
/// with a head no HTTP parser takes, and waits for the client to close (so
/// that the client reads the answer, not a reset).
async fn malformed<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S) {
    let mut buf = [0; 4096];
    if !matches!(stream.read(&mut buf).await, Ok(1..)) {
        return;
    }
    if stream
        .write_all(b"HTTP/1.1 2xx Malformed\r\n\r\n")
        .await
        .and(stream.flush().await)
        .is_err()
    {
        return;
    }
    while let Ok(1..) = stream.read(&mut buf).await {}
}

/// The server's half of what the suite's own client checks, for one
/// connection each: every body back whole and in order.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::pattern;
    use crate::web::{Piece, Unframer, request, upgrade};

    /// One connection, the client's side written by hand over a pipe.
    fn echoes(protocol: Protocol, block: usize, requests: usize) -> (Vec<u8>, usize) {
        let (client, server) = std::os::unix::net::UnixStream::pair().unwrap();
        let web = Web {
            protocol,
            tls: None,
        };
        let served = std::thread::spawn(move || {
            let server = async_io::Async::new(server).unwrap();
            async_io::block_on(web.serve(server));
        });
        use std::io::{Read, Write};
        client
            .set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        let mut answers = Vec::new();
        if protocol == Protocol::WebSocket {
            // A client sends nothing more before the server's answer.
            (&client).write_all(&upgrade()).unwrap();
            while !answers.ends_with(b"\r\n\r\n") {
                let mut byte = [0];
                (&client).read_exact(&mut byte).unwrap();
                answers.push(byte[0]);
            }
        }
        let body = pattern(block);
        let wire = request(protocol, &body).repeat(requests);
        // Written beside the reading: the answers fill the pipe meanwhile.
        let writer = client.try_clone().unwrap();
        let written = std::thread::spawn(move || {
            (&writer).write_all(&wire).unwrap();
            writer.shutdown(std::net::Shutdown::Write).unwrap();
        });
        (&client).read_to_end(&mut answers).unwrap();
        written.join().unwrap();
        served.join().unwrap();
        let mut unframer = Unframer::new(protocol, block);
        let (mut bodies, mut ends) = (Vec::new(), 0);
        let mut data = answers.as_slice();
        while let Some(piece) = unframer.next(&mut data).unwrap() {
            match piece {
                Piece::Body(b) => bodies.extend_from_slice(b),
                Piece::End => ends += 1,
                Piece::Upgraded => {}
            }
        }
        assert_eq!(bodies, body.repeat(ends));
        (bodies, ends)
    }

    #[test]
    fn hyper_answers_every_pipelined_request_before_it_closes() {
        for block in [1, 1024, 70_000] {
            assert_eq!(echoes(Protocol::Http, block, 16).1, 16, "block {block}");
        }
    }

    #[test]
    fn tungstenite_echoes_every_message_after_the_upgrade() {
        for block in [1, 1024, 70_000] {
            assert_eq!(
                echoes(Protocol::WebSocket, block, 16).1,
                16,
                "block {block}"
            );
        }
    }
}
