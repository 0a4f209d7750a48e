//! UDP pingpong: what one datagram carries, what the client checks, and the
//! IO a runtime's UDP socket offers the shared loops.
//!
//! Each client "connection" is a UDP socket connected to the server's
//! address, with one datagram of `B` bytes in flight. A datagram is an
//! 8-byte sequence number (little-endian) followed by bytes 8.. of the
//! block pattern; the server sends every datagram back to where it came
//! from, unchanged. Each send, a resend after a loss included, takes the
//! next sequence number, so that a late answer to an earlier send is told
//! apart from the answer awaited and dropped (it is no round trip).

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use crate::protocol::Mismatch;

/// The bytes of a datagram's sequence number, and the least a datagram carries.
pub const SEQUENCE: usize = 8;

/// The most a UDP datagram carries over IPv4: 65,535 bytes of IP packet
/// less 20 of IP header and 8 of UDP header (IPv6 allows 20 more; the
/// suite keeps one limit for both families).
pub const MAX_DATAGRAM: usize = 65_507;

/// How long a client waits for a datagram's answer before it counts the
/// datagram lost and sends the next. Far above any round trip a loopback
/// cell sees when nothing is lost (milliseconds at 10,000 sockets), so
/// that a slow answer is not taken for a lost one, and short enough that
/// a loss costs its socket a small part of a one-second window.
pub const LOSS_TIMEOUT: Duration = Duration::from_millis(200);

/// Whether `block` bytes fit in one datagram with its sequence number.
pub fn check_size(block: usize) -> Result<(), String> {
    if block < SEQUENCE {
        return Err(format!(
            "--block {block} is too small for UDP: each datagram starts with its \
             {SEQUENCE}-byte sequence number"
        ));
    }
    if block > MAX_DATAGRAM {
        return Err(format!(
            "--block {block} does not fit in one UDP datagram: the most one carries \
             over IPv4 is {MAX_DATAGRAM} bytes (65,535 less the IP and UDP headers)"
        ));
    }
    Ok(())
}

/// Writes sequence number `seq` into a datagram.
pub fn stamp(datagram: &mut [u8], seq: u64) {
    datagram[..SEQUENCE].copy_from_slice(&seq.to_le_bytes());
}

/// A datagram's sequence number.
pub fn sequence(datagram: &[u8]) -> u64 {
    let mut seq = [0; SEQUENCE];
    seq.copy_from_slice(&datagram[..SEQUENCE]);
    u64::from_le_bytes(seq)
}

/// A datagram that came back as no datagram sent: an error of the cell.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadDatagram {
    #[error("a datagram of {actual} bytes came back, {expected} were sent")]
    Length { expected: usize, actual: usize },
    #[error("a datagram came back with sequence number {actual}, the last sent was {expected}")]
    Sequence { expected: u64, actual: u64 },
    #[error("byte {} of a datagram is {:#04x}, expected {:#04x}", .0.offset, .0.actual, .0.expected)]
    Corrupt(Mismatch),
}

/// Checks a datagram that came back against the pattern (the whole block)
/// and `awaited`, the sequence number of the last one sent: whether it is
/// the answer awaited (`false`: a late answer to an earlier send).
pub fn check(datagram: &[u8], pattern: &[u8], awaited: u64) -> Result<bool, BadDatagram> {
    if datagram.len() != pattern.len() {
        return Err(BadDatagram::Length {
            expected: pattern.len(),
            actual: datagram.len(),
        });
    }
    match sequence(datagram) {
        seq if seq == awaited => {}
        seq if seq < awaited => return Ok(false),
        actual => {
            return Err(BadDatagram::Sequence {
                expected: awaited,
                actual,
            });
        }
    }
    let (body, expected) = (&datagram[SEQUENCE..], &pattern[SEQUENCE..]);
    match body.iter().zip(expected).position(|(a, e)| a != e) {
        None => Ok(true),
        Some(i) => Err(BadDatagram::Corrupt(Mismatch {
            offset: (SEQUENCE + i) as u64,
            expected: expected[i],
            actual: body[i],
        })),
    }
}

/// A send of `len` bytes, as one whole datagram or an error.
pub fn whole(sent: io::Result<usize>, len: usize) -> io::Result<()> {
    match sent? {
        n if n == len => Ok(()),
        n => Err(io::Error::other(format!(
            "a datagram of {len} bytes went out as {n}"
        ))),
    }
}

/// A runtime's UDP socket, in the owned-buffer style of [`crate::Reads`]:
/// a client's is connected to the server (`send`, `recv`), a server's
/// answers whoever sent (`recv_from`, `send_to`). Buffers hold a whole
/// datagram and are never reallocated. A socket that times its own
/// receives out (a blocking one) says so with [`io::ErrorKind::TimedOut`].
#[allow(async_fn_in_trait)]
pub trait Datagrams {
    /// Sends `buf[..len]` as one datagram to the connected peer.
    async fn send(&mut self, buf: Vec<u8>, len: usize) -> (io::Result<()>, Vec<u8>);

    /// Receives one datagram from the connected peer into `buf` (up to its
    /// capacity); on success `buf[..n]` holds it.
    async fn recv(&mut self, buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>);

    /// Receives one datagram from anyone.
    async fn recv_from(&mut self, buf: Vec<u8>) -> (io::Result<(usize, SocketAddr)>, Vec<u8>);

    /// Sends `buf[..len]` as one datagram to `to`.
    async fn send_to(
        &mut self,
        buf: Vec<u8>,
        len: usize,
        to: SocketAddr,
    ) -> (io::Result<()>, Vec<u8>);
}

/// Implements [`Datagrams`] for a newtype (`struct Udp(Socket)`) over a
/// readiness-based runtime's UDP socket, whose `send`, `recv`, `recv_from`
/// and `send_to` take `&self` and borrow slices (tokio's, async-net's,
/// async-std's, glommio's): lent the buffer, which is zeroed once and keeps
/// its length from then on.
#[macro_export]
macro_rules! lent_datagrams {
    ($udp:ty) => {
        impl $crate::datagram::Datagrams for $udp {
            async fn send(
                &mut self,
                buf: ::std::vec::Vec<u8>,
                len: usize,
            ) -> (::std::io::Result<()>, ::std::vec::Vec<u8>) {
                let sent = self.0.send(&buf[..len]).await;
                ($crate::datagram::whole(sent.map_err(Into::into), len), buf)
            }

            async fn recv(
                &mut self,
                mut buf: ::std::vec::Vec<u8>,
            ) -> (::std::io::Result<usize>, ::std::vec::Vec<u8>) {
                buf.resize(buf.capacity(), 0);
                let received = self.0.recv(&mut buf).await;
                (received.map_err(Into::into), buf)
            }

            async fn recv_from(
                &mut self,
                mut buf: ::std::vec::Vec<u8>,
            ) -> (
                ::std::io::Result<(usize, ::std::net::SocketAddr)>,
                ::std::vec::Vec<u8>,
            ) {
                buf.resize(buf.capacity(), 0);
                let received = self.0.recv_from(&mut buf).await;
                (received.map_err(Into::into), buf)
            }

            async fn send_to(
                &mut self,
                buf: ::std::vec::Vec<u8>,
                len: usize,
                to: ::std::net::SocketAddr,
            ) -> (::std::io::Result<()>, ::std::vec::Vec<u8>) {
                let sent = self.0.send_to(&buf[..len], to).await;
                ($crate::datagram::whole(sent.map_err(Into::into), len), buf)
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::pattern;

    fn datagram(block: usize, seq: u64) -> Vec<u8> {
        let mut d = pattern(block).to_vec();
        stamp(&mut d, seq);
        d
    }

    #[test]
    fn the_answer_awaited_passes_and_a_late_one_is_told_apart() {
        let p = pattern(64);
        assert_eq!(check(&datagram(64, 7), &p, 7), Ok(true));
        assert_eq!(check(&datagram(64, 6), &p, 7), Ok(false));
        assert_eq!(
            check(&datagram(64, 8), &p, 7),
            Err(BadDatagram::Sequence {
                expected: 7,
                actual: 8
            })
        );
    }

    #[test]
    fn a_changed_byte_or_length_is_an_error_that_says_where() {
        let p = pattern(1024);
        let mut d = datagram(1024, 3);
        d[100] ^= 0xff;
        match check(&d, &p, 3) {
            Err(BadDatagram::Corrupt(m)) => {
                assert_eq!(m.offset, 100);
                assert_eq!(m.actual, m.expected ^ 0xff);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            check(&d[..1000], &p, 3),
            Err(BadDatagram::Length {
                expected: 1024,
                actual: 1000
            })
        );
    }

    #[test]
    fn sizes_outside_one_datagram_are_refused_with_the_reason() {
        assert!(check_size(8).is_ok() && check_size(MAX_DATAGRAM).is_ok());
        assert!(check_size(7).unwrap_err().contains("sequence number"));
        assert!(check_size(MAX_DATAGRAM + 1).unwrap_err().contains("65507"));
    }

    proptest::proptest! {
        #[test]
        fn any_datagram_passes_only_whole_awaited_and_unchanged(
            bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..200),
            block in SEQUENCE..200,
            awaited in 0u64..4,
        ) {
            let p = pattern(block);
            match check(&bytes, &p, awaited) {
                Ok(true) => {
                    proptest::prop_assert_eq!(bytes.len(), block);
                    proptest::prop_assert_eq!(sequence(&bytes), awaited);
                    proptest::prop_assert_eq!(&bytes[SEQUENCE..], &p[SEQUENCE..]);
                }
                Ok(false) => proptest::prop_assert!(sequence(&bytes) < awaited),
                Err(e) => proptest::prop_assert!(!e.to_string().is_empty()),
            }
            // A datagram of ours, one byte changed: refused, or late.
            let mut d = datagram(block, awaited);
            let at = bytes.first().map_or(0, |&b| b as usize) % block;
            d[at] ^= 0x5a;
            proptest::prop_assert!(!matches!(check(&d, &p, awaited), Ok(true)));
        }
    }
}
