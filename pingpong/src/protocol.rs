//! What bytes go where, what the client checks, and what it counts.
//!
//! The client writes one block of `B` bytes on each connection and from then
//! on echoes whatever it reads; the server echoes whatever it reads. Each
//! connection therefore carries a stream that repeats the first block forever:
//! byte `k` of the stream is `pattern[k % B]`. The client verifies every byte
//! it reads against that, so a lost, duplicated or corrupted byte is an error
//! of the cell and never throughput.
//!
//! Over UDP the same pattern fills each datagram (the `datagram` module);
//! over HTTP and WebSocket each message's body is one block (the `web`
//! module), so the bodies end to end are that stream.
//!
//! This module is bytes only: it depends on nothing else in the crate.

/// What carries the pingpong between client and server.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Default,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// A TCP stream per connection, TCP_NODELAY on both ends (inside TLS
    /// with --tls).
    #[default]
    Tcp,
    /// A connected UDP socket per "connection", one datagram in flight.
    Udp,
    /// HTTP/1.1 over keep-alive TCP: each block the body of a POST, echoed
    /// as the answer's body (HTTPS with --tls).
    Http,
    /// WebSocket over TCP: each block one binary message, echoed (secure
    /// WebSocket with --tls).
    #[value(name = "websocket")]
    #[serde(rename = "websocket")]
    WebSocket,
}

impl Protocol {
    /// Its name, as `--protocol` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Tcp => "tcp",
            Self::Udp => "udp",
            Self::Http => "http",
            Self::WebSocket => "websocket",
        }
    }

    /// How tables name it.
    pub fn label(self) -> &'static str {
        match self {
            Self::Tcp => "TCP",
            Self::Udp => "UDP",
            Self::Http => "HTTP/1.1",
            Self::WebSocket => "WebSocket",
        }
    }

    /// Whether it runs over a TCP connection, which a server accepts.
    pub fn connected(self) -> bool {
        self != Self::Udp
    }

    /// Whether the blocks travel inside HTTP or WebSocket messages, which
    /// hyper and tungstenite serve.
    pub fn web(self) -> bool {
        matches!(self, Self::Http | Self::WebSocket)
    }
}

/// The most bytes a connection may keep in flight (block x window).
pub const MAX_IN_FLIGHT: usize = 64 << 20;

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
}
