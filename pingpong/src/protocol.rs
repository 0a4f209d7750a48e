//! What bytes go where, what the client checks, and what it counts.
//!
//! The client writes one block of `B` bytes on each connection and from then
//! on echoes whatever it reads; the server echoes whatever it reads. Each
//! connection therefore carries a stream that repeats the first block forever:
//! byte `k` of the stream is `pattern[k % B]`. The client verifies every byte
//! it reads against that, so a lost, duplicated or corrupted byte is an error
//! of the cell and never throughput.
//!
//! [`Session`] is the client's per-connection state machine, free of any IO,
//! so that the async loops in [`crate::session`] and hand-written event loops
//! (the mio baseline) share one definition of the protocol.

use std::io;

use crate::client::{Client, Phase};
use crate::latency::Clock;

/// The largest block a connection may keep in flight.
pub const MAX_BLOCK: usize = 64 << 20;

/// The first block of every connection: a pattern with no short period, so
/// that a shifted or repeated chunk of the stream cannot pass for the right one.
pub fn pattern(block: usize) -> Box<[u8]> {
    (0..block as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect()
}

/// A byte that was not what the protocol says it must be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("byte {offset} of the stream is {actual:#04x}, expected {expected:#04x}")]
pub struct Mismatch {
    pub offset: u64,
    pub expected: u8,
    pub actual: u8,
}

/// Checks a stream, chunk by chunk, against the repeating block pattern.
#[derive(Debug)]
pub struct Verifier<'a> {
    pattern: &'a [u8],
    offset: u64,
}

impl<'a> Verifier<'a> {
    pub fn new(pattern: &'a [u8]) -> Self {
        Self { pattern, offset: 0 }
    }

    /// Stream bytes verified so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Verifies the next chunk of the stream.
    pub fn check(&mut self, mut data: &[u8]) -> Result<(), Mismatch> {
        let block = self.pattern.len();
        while !data.is_empty() {
            let at = (self.offset % block as u64) as usize;
            let len = data.len().min(block - at);
            let (chunk, rest) = data.split_at(len);
            let expected = &self.pattern[at..at + len];
            if chunk != expected {
                let i = chunk.iter().zip(expected).position(|(a, e)| a != e);
                let i = i.expect("unequal slices of equal length differ somewhere");
                return Err(Mismatch {
                    offset: self.offset + i as u64,
                    expected: expected[i],
                    actual: chunk[i],
                });
            }
            self.offset += len as u64;
            data = rest;
        }
        Ok(())
    }
}

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
}

/// What the caller does with bytes it just read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Write them back.
    Echo,
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
pub struct Session<'a> {
    client: &'a Client,
    verifier: Verifier<'a>,
    counted: u64,
    draining: bool,
    /// Absent when the client records no round-trip times.
    clock: Option<Clock>,
}

impl<'a> Session<'a> {
    pub fn new(client: &'a Client) -> Self {
        Self {
            client,
            verifier: Verifier::new(&client.pattern),
            counted: 0,
            draining: false,
            clock: client.recorders().map(Clock::new),
        }
    }

    /// The blocks each connection opens with (its window), to be written
    /// now: their round trips start.
    pub fn first_block(&mut self) -> &'a [u8] {
        if let Some(clock) = &mut self.clock {
            clock.start(self.client.config.window);
        }
        &self.client.first
    }

    /// Takes bytes just read from the server.
    pub fn on_data(&mut self, data: &[u8]) -> Result<Next, SessionError> {
        let before = self.verifier.offset();
        self.verifier.check(data)?;
        if self.draining {
            return Ok(Next::Drain);
        }
        let phase = self.client.phase();
        if let Some(clock) = &mut self.clock {
            // With a window of several blocks, one read may complete several.
            let block = self.client.pattern.len() as u64;
            for _ in before / block..self.verifier.offset() / block {
                clock.block_completed(phase == Phase::Measuring);
            }
        }
        Ok(match phase {
            Phase::Running => Next::Echo,
            Phase::Measuring => {
                self.counted += data.len() as u64;
                Next::Echo
            }
            Phase::Stopping => {
                self.draining = true;
                Next::Stop
            }
        })
    }

    /// The server closed its side: fine once the client has stopped, an error before.
    pub fn on_eof(&self) -> Result<(), SessionError> {
        if self.draining {
            if self.verifier.offset() >= self.client.pattern.len() as u64 {
                self.client.verified();
            }
            Ok(())
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

impl Drop for Session<'_> {
    fn drop(&mut self) {
        self.client.session_ended(self.counted);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(block: usize, len: usize) -> Vec<u8> {
        let p = pattern(block);
        (0..len).map(|k| p[k % block]).collect()
    }

    #[test]
    fn pattern_has_no_short_period() {
        let p = pattern(16384);
        for period in 1..=4096 {
            assert!(
                (0..p.len() - period).any(|i| p[i] != p[i + period]),
                "period {period}"
            );
        }
    }

    #[test]
    fn verifier_accepts_the_stream_in_any_chunking() {
        let block = 1000;
        let data = stream(block, 5 * block + 17);
        for chunk in [1, 7, 999, 1000, 1001, 4096] {
            let p = pattern(block);
            let mut v = Verifier::new(&p);
            for c in data.chunks(chunk) {
                v.check(c).unwrap();
            }
            assert_eq!(v.offset(), data.len() as u64);
        }
    }

    #[test]
    fn verifier_rejects_one_wrong_byte() {
        let block = 512;
        let p = pattern(block);
        for at in [0, 1, 511, 512, 1500, 2047] {
            let mut data = stream(block, 4 * block);
            data[at] ^= 0x01;
            let mut v = Verifier::new(&p);
            let err = data.chunks(300).try_for_each(|c| v.check(c)).unwrap_err();
            assert_eq!(err.offset, at as u64);
            assert_eq!(err.actual, err.expected ^ 0x01);
        }
    }

    #[test]
    fn verifier_rejects_a_shifted_stream() {
        let block = 16384;
        let p = pattern(block);
        let data = stream(block, 2 * block);
        let mut v = Verifier::new(&p);
        assert!(v.check(&data[256..]).is_err());
    }

    fn client(block: usize) -> Client {
        Client::new(crate::client::ClientConfig {
            connect: "127.0.0.1:1".parse().unwrap(),
            threads: 1,
            connections: 1,
            block,
            warmup: std::time::Duration::ZERO,
            seconds: std::time::Duration::ZERO,
            latency: true,
            window: 1,
        })
    }

    #[test]
    fn session_counts_only_inside_the_window_then_drains() {
        let client = client(100);
        let data = stream(100, 400);
        {
            let mut s = Session::new(&client);
            s.first_block();
            assert_eq!(s.on_data(&data[..100]).unwrap(), Next::Echo);
            client.set_phase(Phase::Measuring);
            assert_eq!(s.on_data(&data[100..250]).unwrap(), Next::Echo);
            client.set_phase(Phase::Stopping);
            assert_eq!(s.on_data(&data[250..300]).unwrap(), Next::Stop);
            assert_eq!(s.on_data(&data[300..]).unwrap(), Next::Drain);
            s.on_eof().unwrap();
        }
        assert_eq!(client.bytes(), 150);
        assert_eq!(client.verified_connections(), 1);
        // Blocks completed at 100 (warm-up) and 200 (window): one time recorded.
        assert_eq!(client.recorders().unwrap().merged().len(), 1);
    }

    #[test]
    fn end_of_stream_before_the_stop_is_an_error() {
        let client = client(100);
        let s = Session::new(&client);
        assert!(matches!(
            s.on_eof(),
            Err(SessionError::Closed { offset: 0 })
        ));
    }
}
