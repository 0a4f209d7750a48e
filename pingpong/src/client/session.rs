//! One client connection's protocol state, free of any IO: what it checks,
//! what it counts, and what the caller does next. The async loop
//! ([`super::tasks::connection`]) and hand-written event loops (the mio
//! baseline) drive this one definition of the client's side.

use std::io;
use std::time::Instant;

use super::state::{Arrived, Client, Phase};
use crate::latency::Clock;
use crate::protocol::{Mismatch, Protocol, Verifier};
use crate::web::{Piece, Unframer};
use crate::{fault, work};

/// Why one client connection failed.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("connect failed: {0}")]
    Connect(#[source] io::Error),
    #[error("connection failed after {offset} verified bytes: {source}")]
    Io { offset: u64, source: io::Error },
    #[error(
        "server closed the connection after {offset} verified bytes, before the client stopped"
    )]
    Closed { offset: u64 },
    #[error("corrupt stream: {0}")]
    Corrupt(#[from] Mismatch),
    #[error("{0}")]
    Datagram(#[from] crate::datagram::BadDatagram),
    #[error("{0}")]
    Answer(#[from] crate::web::BadAnswer),
}

/// What the caller does with bytes it just read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Write them back.
    Echo,
    /// Write so many more requests ([`Client::requests`]): one for each
    /// answer that came back whole, or the first window once a WebSocket
    /// upgrade is through.
    Send(usize),
    /// The window has closed: half-close now, then read until end of stream.
    Stop,
    /// Already stopped: keep reading until end of stream.
    Drain,
}

/// One client connection's protocol state: verification and counting.
///
/// Bytes are counted only while the client is in its measurement window; the
/// count joins the client's total when the session is dropped, so the hot path
/// touches no shared counter. Drop it only after recording its failure: the
/// client's driver takes every session ended as the run ended.
///
/// With churn, one session is one connection's place in the client: each
/// connection closes after so many blocks and the session opens the next
/// ([`Self::on_eof`] says when, [`Self::reconnecting`] starts it).
pub struct Session<'a> {
    client: &'a Client,
    /// Over HTTP and WebSocket: what takes the bodies out of the answers,
    /// which are then verified as a TCP stream is.
    unframer: Option<Unframer>,
    verifier: Verifier<'a>,
    /// Bytes counted in each slice of the window.
    counted: Box<[u64]>,
    draining: bool,
    /// Bytes after which the connection stops: for a number of blocks, or
    /// for churn.
    limit: Option<u64>,
    /// Connections that came up inside the window.
    opened: u64,
    /// Absent when the client records no round-trip times.
    clock: Option<Clock>,
    /// When the session began to connect.
    began: Instant,
    /// When the first block went out, until it came back.
    first_sent: Option<Instant>,
    /// Whether a block has come back on any of the session's connections.
    round_tripped: bool,
    /// How the current connection arrived.
    arrived: Arrived,
    /// How the earlier ones did: given to the client when the session ends
    /// (or a batch is full), not as it happens, so that busy connections
    /// take no shared lock.
    arrivals: Vec<Arrived>,
}

/// Arrivals a session keeps before it hands them to the client.
const ARRIVALS_BATCH: usize = 64;

impl<'a> Session<'a> {
    pub fn new(client: &'a Client) -> Self {
        Self {
            client,
            unframer: unframer(client),
            verifier: Verifier::new(&client.pattern),
            counted: vec![0; client.config.slices()].into_boxed_slice(),
            draining: false,
            limit: (client.config.blocks)
                .or(client.config.churn)
                .map(|blocks| blocks * client.config.block as u64),
            opened: 0,
            clock: client.recorders().map(Clock::new),
            began: Instant::now(),
            first_sent: None,
            round_tripped: false,
            arrived: Arrived::default(),
            arrivals: Vec::new(),
        }
    }

    /// The session's first connect was issued at `began` (before the
    /// session was made, in a storm's burst).
    pub fn connecting_since(mut self, began: Instant) -> Self {
        self.began = began;
        self
    }

    /// The connection is established, with TCP_NODELAY set.
    pub fn connected(&mut self) {
        self.arrived.connect = Some(self.began.elapsed());
        if matches!(self.client.phase(), Phase::Measuring(_)) {
            self.opened += 1;
        }
        self.client.connected();
    }

    /// The next connection of the session (churn) begins to connect: the
    /// stream starts over.
    pub fn reconnecting(&mut self) {
        self.arrivals.push(std::mem::take(&mut self.arrived));
        if self.arrivals.len() >= ARRIVALS_BATCH {
            self.client.arrived(&self.arrivals);
            self.arrivals.clear();
        }
        self.verifier = Verifier::new(&self.client.pattern);
        self.unframer = unframer(self.client);
        self.draining = false;
        self.began = Instant::now();
        self.first_sent = None;
    }

    /// What each connection opens with, to be written now: its window of
    /// blocks (or requests), whose round trips start; over WebSocket, the
    /// upgrade, after which [`Self::on_data`] says to send them.
    pub fn first_block(&mut self) -> &'a [u8] {
        if self.client.config.protocol == Protocol::WebSocket {
            return &self.client.upgrade;
        }
        self.round_trips_start();
        &self.client.first
    }

    fn round_trips_start(&mut self) {
        if let Some(clock) = &mut self.clock {
            clock.start(self.client.config.window);
        }
        self.first_sent = Some(Instant::now());
    }

    /// Takes bytes just read from the server.
    pub fn on_data(&mut self, data: &[u8]) -> Result<Next, SessionError> {
        let Some(mut unframer) = self.unframer.take() else {
            let phase = self.take(data)?;
            return Ok(self.next(phase, Next::Echo));
        };
        let (mut data, mut send, mut phase) = (data, 0, None);
        let outcome = loop {
            match unframer.next(&mut data) {
                Ok(Some(Piece::Body(body))) => match self.take(body) {
                    Ok(now) => phase = Some(now),
                    Err(e) => break Err(e),
                },
                Ok(Some(Piece::End)) => send += 1,
                Ok(Some(Piece::Upgraded)) => {
                    self.round_trips_start();
                    send += self.client.config.window;
                }
                Ok(None) => {
                    let phase = phase.unwrap_or_else(|| self.client.phase());
                    break Ok(self.next(phase, Next::Send(send)));
                }
                Err(e) => break Err(e.into()),
            }
        };
        self.unframer = Some(unframer);
        outcome
    }

    /// Verifies and counts bytes of the block stream; where the run is.
    fn take(&mut self, data: &[u8]) -> Result<Phase, SessionError> {
        let before = self.verifier.offset();
        self.verifier.check(data)?;
        // Only a slowed client (the client-slow fault) works per block.
        work::on_echo(before, data.len(), self.client.pattern.len());
        fault::on_block_back(before, data.len(), self.client.pattern.len());
        if let Some(sent) = self.first_sent
            && self.verifier.offset() >= self.client.pattern.len() as u64
        {
            self.arrived.first_rtt = Some(sent.elapsed());
            self.first_sent = None;
            if !self.round_tripped {
                self.round_tripped = true;
                self.client.round_tripped();
            }
        }
        if self.draining {
            return Ok(Phase::Stopping);
        }
        let phase = self.client.phase();
        if let Some(clock) = &mut self.clock {
            // With a window of several blocks, one read may complete several.
            let block = self.client.pattern.len() as u64;
            for _ in before / block..self.verifier.offset() / block {
                clock.block_completed(matches!(phase, Phase::Measuring(_)));
            }
        }
        if let Phase::Measuring(slice) = phase {
            let last = self.counted.len() - 1;
            self.counted[slice.min(last)] += data.len() as u64;
        }
        Ok(phase)
    }

    /// What to do once the bytes read are taken, at `phase`: `go_on`,
    /// unless the window has closed or the connection has done its blocks.
    fn next(&mut self, phase: Phase, go_on: Next) -> Next {
        if self.draining {
            return Next::Drain;
        }
        let done = self
            .limit
            .is_some_and(|limit| self.verifier.offset() >= limit);
        if done || phase == Phase::Stopping {
            self.draining = true;
            return Next::Stop;
        }
        go_on
    }

    /// The caller half-closes of its own accord (the open loop, at the
    /// window's end): the server's end of stream is due now.
    pub fn stop_sending(&mut self) {
        self.draining = true;
    }

    /// The server closed its side: fine once the client has stopped, an
    /// error before. Whether the session opens another connection (churn,
    /// inside the run): then call [`Self::reconnecting`] and connect.
    pub fn on_eof(&mut self) -> Result<bool, SessionError> {
        if self.draining {
            let whole = self.verifier.offset() >= self.client.pattern.len() as u64;
            // With churn a connection ends after its blocks; the window's
            // end (which stays ended) ends the session.
            let again = self.client.config.churn.is_some()
                && whole
                && self.client.phase() != Phase::Stopping;
            if whole && !again {
                self.client.verified();
            }
            Ok(again)
        } else {
            Err(SessionError::Closed {
                offset: self.verifier.offset(),
            })
        }
    }

    /// Wraps an IO error with how far the stream got.
    pub fn io_error(&self, source: io::Error) -> SessionError {
        SessionError::Io {
            offset: self.verifier.offset(),
            source,
        }
    }
}

fn unframer(client: &Client) -> Option<Unframer> {
    let protocol = client.config.protocol;
    protocol
        .web()
        .then(|| Unframer::new(protocol, client.config.block))
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        self.arrivals.push(self.arrived);
        self.client.arrived(&self.arrivals);
        self.client.session_ended(&self.counted, self.opened);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::client::state::ClientConfig;
    use crate::protocol::pattern;

    fn stream(block: usize, len: usize) -> Vec<u8> {
        let p = pattern(block);
        (0..len).map(|k| p[k % block]).collect()
    }

    /// A client of one connection that records times, its window an hour long.
    pub(crate) fn config(block: usize) -> ClientConfig {
        ClientConfig {
            protocol: crate::protocol::Protocol::Tcp,
            connect: "127.0.0.1:1".parse().unwrap(),
            threads: 1,
            connections: 1,
            block,
            warmup: std::time::Duration::ZERO,
            seconds: std::time::Duration::from_secs(3600),
            latency: true,
            window: 1,
            blocks: None,
            arrival: Default::default(),
            churn: None,
            rate: None,
            tls: None,
            knobs: Default::default(),
            start_signal: false,
        }
    }

    fn client(block: usize) -> Client {
        Client::new(config(block))
    }

    #[test]
    fn session_counts_only_inside_the_window_then_drains() {
        let client = client(100);
        let data = stream(100, 400);
        {
            let mut s = Session::new(&client);
            s.first_block();
            assert_eq!(s.on_data(&data[..100]).unwrap(), Next::Echo);
            client.open_window();
            assert_eq!(s.on_data(&data[100..250]).unwrap(), Next::Echo);
            client.stop();
            assert_eq!(s.on_data(&data[250..300]).unwrap(), Next::Stop);
            assert_eq!(s.on_data(&data[300..]).unwrap(), Next::Drain);
            assert!(!s.on_eof().unwrap());
        }
        assert_eq!(client.bytes(), 150);
        assert_eq!(client.verified_connections(), 1);
        // Blocks completed at 100 (warm-up) and 200 (window): one time recorded.
        assert_eq!(client.recorders().unwrap().merged().len(), 1);
    }

    #[test]
    fn a_connection_given_blocks_stops_once_they_came_back() {
        let client = Client::new(ClientConfig {
            blocks: Some(2),
            ..client(100).config
        });
        client.open_window();
        let data = stream(100, 300);
        {
            let mut s = Session::new(&client);
            s.first_block();
            assert_eq!(s.on_data(&data[..100]).unwrap(), Next::Echo);
            assert_eq!(s.on_data(&data[100..150]).unwrap(), Next::Echo);
            // The second block is back whole: half-close instead of echoing.
            assert_eq!(s.on_data(&data[150..200]).unwrap(), Next::Stop);
            assert!(!s.on_eof().unwrap());
        }
        assert_eq!(client.bytes(), 200);
    }

    #[test]
    fn a_session_gives_its_connect_time_and_first_round_trip_as_it_ends() {
        let client = client(100);
        let data = stream(100, 200);
        {
            let mut s = Session::new(&client);
            s.connected();
            assert_eq!(client.connected_count(), 1);
            s.first_block();
            s.on_data(&data[..50]).unwrap();
            assert_eq!(
                client.round_tripped_count(),
                0,
                "half a block is no round trip"
            );
            s.on_data(&data[50..]).unwrap();
            // Counted once, for the window to wait on, though two blocks came back.
            assert_eq!(client.round_tripped_count(), 1);
            // Kept by the session until it ends: no shared lock meanwhile.
            assert_eq!(client.arrivals().unwrap().connect.len(), 0);
        }
        let arrivals = client.arrivals().unwrap();
        // One of each, though two blocks came back.
        assert_eq!((arrivals.connect.len(), arrivals.first_rtt.len()), (1, 1));
    }

    #[test]
    fn with_churn_a_connection_stops_after_its_blocks_and_the_next_starts_over() {
        let client = Client::new(ClientConfig {
            churn: Some(2),
            ..client(100).config
        });
        let data = stream(100, 200);
        {
            let mut s = Session::new(&client);
            for _ in 0..2 {
                s.connected();
                s.first_block();
                assert_eq!(s.on_data(&data[..100]).unwrap(), Next::Echo);
                assert_eq!(s.on_data(&data[100..]).unwrap(), Next::Stop);
                // The run goes on: another connection, its stream from offset 0.
                assert!(s.on_eof().unwrap());
                s.reconnecting();
            }
            s.connected();
            s.first_block();
            client.stop();
            assert_eq!(s.on_data(&data[..100]).unwrap(), Next::Stop);
            // The run is over: this connection was the last.
            assert!(!s.on_eof().unwrap());
        }
        assert_eq!(client.verified_connections(), 1);
        let arrivals = client.arrivals().unwrap();
        assert_eq!((arrivals.connect.len(), arrivals.first_rtt.len()), (3, 3));
    }

    #[test]
    fn end_of_stream_before_the_stop_is_an_error() {
        let client = client(100);
        let mut s = Session::new(&client);
        assert!(matches!(
            s.on_eof(),
            Err(SessionError::Closed { offset: 0 })
        ));
    }
}
