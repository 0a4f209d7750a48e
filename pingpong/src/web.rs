//! HTTP/1.1 and WebSocket as the client's bytes: what each connection
//! sends for a block, and how it reads the answers back into bodies.
//!
//! Over HTTP a block is the body of a `POST`, and the answer's body is the
//! same block; over WebSocket a block is one binary message, echoed. The
//! bodies end to end are the TCP protocol's stream (byte `k` is
//! `pattern[k % B]`), so the client verifies and counts them as it does a
//! TCP stream, and each answer read whole is one round trip. Requests are
//! pipelined: a window of them is in flight on each connection.
//!
//! Bytes only: this module does no IO.

use crate::protocol::Protocol;

/// An answer that is not what the protocol says it must be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed {protocol} answer: {what}")]
pub struct BadAnswer {
    pub protocol: &'static str,
    pub what: String,
}

/// The key of every client's WebSocket upgrade and the accept value its
/// server must answer with: RFC 6455's own example (section 1.3).
const WEBSOCKET_KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";
const WEBSOCKET_ACCEPT: &[u8] = b"s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

/// The mask of every client frame. A client must mask what it sends (RFC
/// 6455, 5.3) so that proxies cannot be poisoned; on loopback nothing is
/// between, and one fixed key lets each message be masked once, before the
/// run, so that the client's cost is not the server's figure.
const MASK: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];

/// The most header bytes an answer may have.
const MAX_HEAD: usize = 8 << 10;

/// What a client sends for one block: a `POST` whose body it is, or a
/// masked binary WebSocket frame.
pub fn request(protocol: Protocol, block: &[u8]) -> Vec<u8> {
    match protocol {
        Protocol::Http => {
            let mut request = format!(
                "POST /echo HTTP/1.1\r\nhost: pingpong\r\ncontent-length: {}\r\n\r\n",
                block.len()
            )
            .into_bytes();
            request.extend_from_slice(block);
            request
        }
        Protocol::WebSocket => {
            // FIN and the binary opcode; the length, masked.
            let mut frame = vec![0x82];
            match block.len() {
                len @ 0..126 => frame.push(0x80 | len as u8),
                len @ 126..=0xffff => {
                    frame.push(0x80 | 126);
                    frame.extend_from_slice(&(len as u16).to_be_bytes());
                }
                len => {
                    frame.push(0x80 | 127);
                    frame.extend_from_slice(&(len as u64).to_be_bytes());
                }
            }
            frame.extend_from_slice(&MASK);
            frame.extend(block.iter().zip(MASK.iter().cycle()).map(|(b, m)| b ^ m));
            frame
        }
        Protocol::Tcp | Protocol::Udp => block.to_vec(),
    }
}

/// What a WebSocket client sends before its first block.
pub fn upgrade() -> Vec<u8> {
    format!(
        "GET /echo HTTP/1.1\r\nhost: pingpong\r\nupgrade: websocket\r\nconnection: Upgrade\r\n\
         sec-websocket-key: {WEBSOCKET_KEY}\r\nsec-websocket-version: 13\r\n\r\n"
    )
    .into_bytes()
}

/// A piece of what the server sent.
#[derive(Debug, PartialEq, Eq)]
pub enum Piece<'d> {
    /// Bytes of an answer's body, in order.
    Body(&'d [u8]),
    /// An answer is whole: one round trip.
    End,
    /// The server accepted the WebSocket upgrade: the blocks may go.
    Upgraded,
}

/// Reads a connection's answers off its stream, in whatever chunks it
/// comes: checks every head and hands on the bodies.
#[derive(Debug)]
pub struct Unframer {
    protocol: Protocol,
    block: u64,
    state: State,
    /// A head that came in several reads, so far.
    head: Vec<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Awaiting the answer to the WebSocket upgrade.
    Upgrading,
    /// Awaiting an answer's head.
    Head,
    /// Inside an answer's body, with so many bytes of it to come.
    Body(u64),
    /// A body just ended.
    Ended,
}

impl Unframer {
    pub fn new(protocol: Protocol, block: usize) -> Self {
        Self {
            protocol,
            block: block as u64,
            state: match protocol {
                Protocol::WebSocket => State::Upgrading,
                _ => State::Head,
            },
            head: Vec::new(),
        }
    }

    /// Takes the next piece off the front of `data`; `None` once `data` is
    /// used up (a head cut short is kept for the next call).
    pub fn next<'d>(&mut self, data: &mut &'d [u8]) -> Result<Option<Piece<'d>>, BadAnswer> {
        if self.state == State::Ended {
            self.state = State::Head;
            return Ok(Some(Piece::End));
        }
        if data.is_empty() {
            return Ok(None);
        }
        if let State::Body(left) = self.state {
            let (body, rest) = data.split_at((left as usize).min(data.len()));
            *data = rest;
            let left = left - body.len() as u64;
            self.state = if left == 0 {
                State::Ended
            } else {
                State::Body(left)
            };
            return Ok(Some(Piece::Body(body)));
        }
        // A head: parsed where it lies when it came whole, else gathered.
        let gathered = self.head.len();
        let parsed = if gathered == 0 {
            self.parse_head(data)?
        } else {
            let more = data.len().min(MAX_HEAD + 1 - gathered);
            self.head.extend_from_slice(&data[..more]);
            let head = std::mem::take(&mut self.head);
            let parsed = self.parse_head(&head)?;
            self.head = head;
            parsed
        };
        let Some((len, body)) = parsed else {
            if gathered == 0 {
                self.head.extend_from_slice(data);
            }
            if self.head.len() > MAX_HEAD {
                return Err(self.bad(format!("a head of over {MAX_HEAD} bytes")));
            }
            *data = &[];
            return Ok(None);
        };
        *data = &data[len - gathered..];
        self.head.clear();
        Ok(Some(match self.state {
            State::Upgrading => {
                self.state = State::Head;
                Piece::Upgraded
            }
            _ => {
                self.state = State::Body(body);
                // A body of no bytes ends at its head.
                return self.next(data);
            }
        }))
    }

    /// A whole head at the front of `bytes`: its length and its body's.
    fn parse_head(&self, bytes: &[u8]) -> Result<Option<(usize, u64)>, BadAnswer> {
        match (self.protocol, self.state) {
            (Protocol::WebSocket, State::Head) => self.frame_head(bytes),
            _ => self.http_head(bytes),
        }
    }

    fn http_head(&self, bytes: &[u8]) -> Result<Option<(usize, u64)>, BadAnswer> {
        let mut headers = [httparse::EMPTY_HEADER; 16];
        let mut response = httparse::Response::new(&mut headers);
        let len = match response.parse(bytes) {
            Ok(httparse::Status::Complete(len)) => len,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(e) => return Err(self.bad(e.to_string())),
        };
        let header = |name: &str| {
            response
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case(name))
                .map(|h| h.value)
        };
        let (expected, reason) = match self.state {
            State::Upgrading => (101, "Switching Protocols"),
            _ => (200, "OK"),
        };
        let code = response.code.unwrap_or_default();
        if response.version != Some(1) || code != expected {
            return Err(self.bad(format!(
                "status {code} {} in HTTP/1.{}, expected {expected} {reason} in HTTP/1.1",
                response.reason.unwrap_or_default(),
                response.version.unwrap_or_default()
            )));
        }
        if self.state == State::Upgrading {
            return match header("sec-websocket-accept") {
                Some(WEBSOCKET_ACCEPT) => Ok(Some((len, 0))),
                other => Err(self.bad(format!(
                    "sec-websocket-accept {:?}, expected {:?}",
                    other.map(String::from_utf8_lossy),
                    String::from_utf8_lossy(WEBSOCKET_ACCEPT)
                ))),
            };
        }
        let length = header("content-length")
            .and_then(|v| std::str::from_utf8(v).ok()?.trim().parse::<u64>().ok());
        match length {
            Some(length) if length == self.block => Ok(Some((len, length))),
            Some(length) => {
                Err(self.bad(format!("a body of {length} bytes, expected {}", self.block)))
            }
            None => Err(self.bad("no content-length".into())),
        }
    }

    fn frame_head(&self, bytes: &[u8]) -> Result<Option<(usize, u64)>, BadAnswer> {
        let [first, second, ..] = *bytes else {
            return Ok(None);
        };
        if first != 0x82 {
            return Err(self.bad(format!(
                "a frame starting {first:#04x}, expected {:#04x} (a whole binary message)",
                0x82
            )));
        }
        if second & 0x80 != 0 {
            return Err(self.bad("a masked frame from the server".into()));
        }
        let (len, length) = match second & 0x7f {
            126 => match bytes.get(2..4) {
                Some(b) => (4, u16::from_be_bytes([b[0], b[1]]) as u64),
                None => return Ok(None),
            },
            127 => match bytes.get(2..10) {
                Some(b) => (10, u64::from_be_bytes(b.try_into().expect("8 bytes"))),
                None => return Ok(None),
            },
            length => (2, length as u64),
        };
        if length != self.block {
            return Err(self.bad(format!(
                "a message of {length} bytes, expected {}",
                self.block
            )));
        }
        Ok(Some((len, length)))
    }

    fn bad(&self, what: String) -> BadAnswer {
        BadAnswer {
            protocol: match self.protocol {
                Protocol::WebSocket => "WebSocket",
                _ => "HTTP",
            },
            what,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::pattern;

    /// Every piece of `stream`, read in chunks of `chunk` bytes, bodies
    /// joined.
    fn read(protocol: Protocol, block: usize, stream: &[u8], chunk: usize) -> (Vec<u8>, usize) {
        let mut unframer = Unframer::new(protocol, block);
        let (mut bodies, mut ends) = (Vec::new(), 0);
        for mut data in stream.chunks(chunk) {
            while let Some(piece) = unframer.next(&mut data).unwrap() {
                match piece {
                    Piece::Body(b) => bodies.extend_from_slice(b),
                    Piece::End => ends += 1,
                    Piece::Upgraded => assert_eq!(ends, 0, "the upgrade comes first"),
                }
            }
        }
        (bodies, ends)
    }

    fn http_answer(body: &[u8]) -> Vec<u8> {
        let mut answer = format!(
            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\ndate: Wed, 02 Dec 2026 05:00:00 GMT\r\n\r\n",
            body.len()
        )
        .into_bytes();
        answer.extend_from_slice(body);
        answer
    }

    /// A server's frame: unmasked.
    fn frame(body: &[u8]) -> Vec<u8> {
        let mut frame = request(Protocol::WebSocket, body);
        let header = frame.len() - body.len() - MASK.len();
        frame[1] &= 0x7f;
        frame.drain(header..header + MASK.len());
        frame[header..].copy_from_slice(body);
        frame
    }

    #[test]
    fn http_answers_in_any_chunking_give_the_bodies_in_order() {
        for block in [1, 64, 1024, 16384] {
            let body = pattern(block);
            let stream = http_answer(&body).repeat(3);
            for chunk in [1, 7, 60, 1000, 1 << 20] {
                let (bodies, ends) = read(Protocol::Http, block, &stream, chunk);
                assert_eq!(ends, 3, "block {block}, chunk {chunk}");
                assert_eq!(bodies, body.repeat(3));
            }
        }
    }

    #[test]
    fn websocket_frames_after_the_upgrade_give_the_bodies_in_order() {
        let accept = b"HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
        // Each of the three length encodings.
        for block in [1, 125, 126, 1024, 65535, 65536] {
            let body = pattern(block);
            let mut stream = accept.to_vec();
            stream.extend(frame(&body).repeat(2));
            for chunk in [1, 3, 1000, 1 << 20] {
                let (bodies, ends) = read(Protocol::WebSocket, block, &stream, chunk);
                assert_eq!(ends, 2, "block {block}, chunk {chunk}");
                assert_eq!(bodies, body.repeat(2));
            }
        }
    }

    #[test]
    fn a_request_frame_is_masked_and_unmasks_to_its_block() {
        let block = pattern(300);
        let frame = request(Protocol::WebSocket, &block);
        assert_eq!(frame[..4], [0x82, 0x80 | 126, 1, 44]);
        assert_eq!(frame[4..8], MASK);
        let unmasked: Vec<u8> = frame[8..]
            .iter()
            .zip(MASK.iter().cycle())
            .map(|(b, m)| b ^ m)
            .collect();
        assert_eq!(unmasked, *block);
    }

    fn error(protocol: Protocol, block: usize, stream: &[u8]) -> String {
        let mut unframer = Unframer::new(protocol, block);
        let mut data = stream;
        loop {
            match unframer.next(&mut data) {
                Ok(Some(_)) => {}
                Ok(None) => panic!("{stream:?} was taken"),
                Err(e) => return e.to_string(),
            }
        }
    }

    #[test]
    fn a_malformed_answer_says_what_is_wrong_with_it() {
        let cases: [(Protocol, &[u8], &str); 7] = [
            (
                Protocol::Http,
                b"HTTP/1.1 2xx OK\r\n\r\n",
                "malformed HTTP answer: invalid response status",
            ),
            (
                Protocol::Http,
                b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\n\r\n",
                "status 500 Internal Server Error in HTTP/1.1, expected 200 OK",
            ),
            (
                Protocol::Http,
                b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\n",
                "a body of 9 bytes, expected 4",
            ),
            (
                Protocol::Http,
                b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n",
                "no content-length",
            ),
            (
                Protocol::WebSocket,
                b"HTTP/1.1 200 OK\r\n\r\n",
                "malformed WebSocket answer: status 200 OK",
            ),
            (
                Protocol::WebSocket,
                b"HTTP/1.1 101 Switching Protocols\r\nsec-websocket-accept: x\r\n\r\n",
                "sec-websocket-accept Some(\"x\")",
            ),
            (
                Protocol::WebSocket,
                b"HTTP/1.1 101 Switching Protocols\r\nsec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n\x81\x04abcd",
                "a frame starting 0x81",
            ),
        ];
        for (protocol, stream, expected) in cases {
            let message = error(protocol, 4, stream);
            assert!(message.contains(expected), "{message:?}");
        }
    }

    #[test]
    fn a_head_that_never_ends_is_refused() {
        let stream = [b"HTTP/1.1 200 OK\r\n".as_slice(), &[b'x'; MAX_HEAD]].concat();
        let mut unframer = Unframer::new(Protocol::Http, 4);
        let mut failed = false;
        for mut data in stream.chunks(100) {
            if unframer.next(&mut data).is_err() {
                failed = true;
                break;
            }
        }
        assert!(failed);
    }

    /// Any stream, in any chunking, read to its end: each call takes a
    /// piece, or takes every byte it is given and waits, or refuses the
    /// stream; the head it gathers stays within its bound.
    fn read_hostile(protocol: Protocol, block: usize, stream: &[u8], chunk: usize) {
        let mut unframer = Unframer::new(protocol, block);
        // A piece takes a byte at least, but for an end after each body.
        let most = 2 * stream.len() + 2;
        let mut pieces = 0;
        for mut data in stream.chunks(chunk) {
            loop {
                match unframer.next(&mut data) {
                    Err(_) => return,
                    Ok(None) => {
                        assert!(data.is_empty(), "waits with {} bytes left", data.len());
                        break;
                    }
                    Ok(Some(_)) => pieces += 1,
                }
                assert!(pieces <= most, "{pieces} pieces of {} bytes", stream.len());
            }
            assert!(
                unframer.head.len() <= MAX_HEAD,
                "a head of {}",
                unframer.head.len()
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn any_answer_stream_is_read_or_refused_without_a_panic_or_a_hang(
            websocket in proptest::bool::ANY,
            bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..3000),
            chunk in 1usize..2000,
            block in 1usize..300,
            at in 0usize..10_000,
            byte in proptest::num::u8::ANY,
            cut in 0usize..10_000,
        ) {
            let protocol = match websocket {
                true => Protocol::WebSocket,
                false => Protocol::Http,
            };
            read_hostile(protocol, block, &bytes, chunk);
            // A well-formed stream, one byte changed and cut short.
            let body = pattern(block);
            let mut stream = match protocol {
                Protocol::WebSocket => {
                    let mut s = b"HTTP/1.1 101 Switching Protocols\r\nsec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n".to_vec();
                    s.extend(frame(&body).repeat(3));
                    s
                }
                _ => http_answer(&body).repeat(3),
            };
            let at = at % stream.len();
            stream[at] = byte;
            stream.truncate(cut);
            read_hostile(protocol, block, &stream, chunk);
        }
    }
}
