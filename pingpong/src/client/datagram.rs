//! One client socket of UDP pingpong ([`crate::datagram`]): its protocol
//! state, free of IO, which event loops drive themselves, and the async
//! loop that drives it on a runtime.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_lite::future;

use super::session::SessionError;
use super::state::{Arrived, Client, Phase};
use crate::datagram::{self, Datagrams, LOSS_TIMEOUT};
use crate::latency::Clock;

/// What the caller does after a datagram came back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// Send the buffer's first `block` bytes: the next datagram, stamped.
    Send,
    /// A late answer to an earlier send: keep waiting for the one awaited.
    Wait,
    /// The window has closed (or the blocks are done): the socket is through.
    Stop,
}

/// One client socket's protocol state: the sequence number awaited, what
/// it verified and counted, and what it lost.
///
/// As [`super::Session`], it counts only inside the window and hands its
/// counts to the client when dropped.
pub struct DatagramSession<'a> {
    client: &'a Client,
    /// The sequence number of the last datagram sent.
    seq: u64,
    /// Datagrams that came back verified.
    answered: u64,
    /// Bytes counted in each slice of the window.
    counted: Box<[u64]>,
    /// Datagrams sent, and counted lost, inside the window.
    sent: u64,
    lost: u64,
    clock: Option<Clock>,
    began: Instant,
    first_sent: Option<Instant>,
    arrived: Arrived,
}

impl<'a> DatagramSession<'a> {
    pub fn new(client: &'a Client) -> Self {
        Self {
            client,
            seq: 0,
            answered: 0,
            counted: vec![0; client.config.slices()].into_boxed_slice(),
            sent: 0,
            lost: 0,
            clock: client.recorders().map(Clock::new),
            began: Instant::now(),
            first_sent: None,
            arrived: Arrived::default(),
        }
    }

    /// The socket is bound and connected to the server.
    pub fn connected(&mut self) {
        self.arrived.connect = Some(self.began.elapsed());
        self.client.connected();
    }

    /// A buffer holding the datagram to send now: the pattern stamped with
    /// the sequence number, with room for one byte more, so that a longer
    /// datagram coming back is seen to be longer.
    fn datagram(&self) -> Vec<u8> {
        let block = self.client.pattern.len();
        let mut buf = Vec::with_capacity(block + 1);
        buf.extend_from_slice(&self.client.pattern);
        datagram::stamp(&mut buf, self.seq);
        buf.resize(block + 1, 0);
        buf
    }

    /// The sequence number of the datagram whose answer is awaited.
    pub fn awaited(&self) -> u64 {
        self.seq
    }

    /// The first datagram, to be sent now.
    pub fn first(&mut self) -> Vec<u8> {
        self.first_sent = Some(Instant::now());
        self.sending();
        self.datagram()
    }

    /// A datagram is about to go out: its round trip starts.
    fn sending(&mut self) {
        if let Some(clock) = &mut self.clock {
            clock.start(1);
        }
        if matches!(self.client.phase(), Phase::Measuring(_)) {
            self.sent += 1;
        }
    }

    /// Takes a datagram that came back; on [`Reply::Send`] the buffer holds
    /// the next one.
    pub fn on_datagram(&mut self, buf: &mut [u8]) -> Result<Reply, SessionError> {
        if !datagram::check(buf, &self.client.pattern, self.seq)? {
            return Ok(Reply::Wait);
        }
        if let Some(sent) = self.first_sent.take() {
            self.arrived.first_rtt = Some(sent.elapsed());
            self.client.round_tripped();
        }
        self.answered += 1;
        let phase = self.client.phase();
        if let Some(clock) = &mut self.clock {
            clock.block_completed(matches!(phase, Phase::Measuring(_)));
        }
        if let Phase::Measuring(slice) = phase {
            let last = self.counted.len() - 1;
            self.counted[slice.min(last)] += buf.len() as u64;
        }
        let done = (self.client.config.blocks).is_some_and(|blocks| self.answered >= blocks);
        if phase == Phase::Stopping || done {
            return Ok(Reply::Stop);
        }
        self.seq += 1;
        datagram::stamp(buf, self.seq);
        self.sending();
        Ok(Reply::Send)
    }

    /// No answer came within [`LOSS_TIMEOUT`]: the datagram is counted lost
    /// and the next one, to be sent now, is returned; none once the window
    /// has closed.
    pub fn on_timeout(&mut self) -> Option<Vec<u8>> {
        let phase = self.client.phase();
        if matches!(phase, Phase::Measuring(_)) {
            self.lost += 1;
        }
        if phase == Phase::Stopping {
            return None;
        }
        self.seq += 1;
        self.sending();
        Some(self.datagram())
    }

    /// Wraps an IO error with how far the socket got.
    pub fn io_error(&self, source: io::Error) -> SessionError {
        SessionError::Io {
            offset: self.answered * self.client.pattern.len() as u64,
            source,
        }
    }
}

impl Drop for DatagramSession<'_> {
    fn drop(&mut self) {
        if self.answered > 0 {
            self.client.verified();
        }
        self.client.arrived(&[self.arrived]);
        self.client.datagrams(self.sent, self.lost);
        self.client.session_ended(&self.counted, 0);
    }
}

/// One client socket on an async runtime: `open` binds it and connects it
/// to the server, `sleep` is the runtime's timer. It waits for the start,
/// then sends a datagram and waits for its answer (at most
/// [`LOSS_TIMEOUT`], then the datagram is lost and the next goes out)
/// until the window closes. A failure is recorded in `client`.
pub async fn datagram_connection<D: Datagrams, F, T>(
    client: Arc<Client>,
    open: impl FnOnce(SocketAddr) -> F,
    sleep: impl Fn(Duration) -> T,
) where
    F: Future<Output = io::Result<D>>,
    T: Future<Output = ()>,
{
    let mut session = DatagramSession::new(&client);
    if let Err(e) = run(&client, &mut session, open(client.config.connect), sleep).await {
        client.fail(&e);
    }
}

async fn run<D: Datagrams, T: Future<Output = ()>>(
    client: &Client,
    session: &mut DatagramSession<'_>,
    open: impl Future<Output = io::Result<D>>,
    sleep: impl Fn(Duration) -> T,
) -> Result<(), SessionError> {
    let mut socket = open.await.map_err(SessionError::Connect)?;
    session.connected();
    client.wait_for_start().await;
    let block = client.config.block;
    let mut buf = session.first();
    loop {
        let (sent, b) = socket.send(buf, block).await;
        sent.map_err(|e| session.io_error(e))?;
        buf = b;
        let mut timeout = pin!(sleep(LOSS_TIMEOUT));
        buf = loop {
            let answer = future::or(async { Some(socket.recv(buf).await) }, async {
                (&mut timeout).await;
                None
            })
            .await;
            let received = match answer {
                Some((Ok(n), b)) => Some((n, b)),
                // The timer fired, or a blocking socket's receive timed out.
                None => None,
                Some((Err(e), _)) if e.kind() == io::ErrorKind::TimedOut => None,
                Some((Err(e), _)) => return Err(session.io_error(e)),
            };
            // On a timeout the buffer went with the receive: the next
            // datagram comes in a new one.
            let Some((n, mut b)) = received else {
                match session.on_timeout() {
                    Some(next) => break next,
                    None => return Ok(()),
                }
            };
            match session.on_datagram(&mut b[..n])? {
                Reply::Send => break b,
                Reply::Wait => buf = b,
                Reply::Stop => return Ok(()),
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::state::ClientConfig;
    use crate::protocol::Protocol;

    fn client(block: usize) -> Client {
        Client::new(ClientConfig {
            protocol: Protocol::Udp,
            ..super::super::session::tests::config(block)
        })
    }

    #[test]
    fn a_socket_counts_answers_inside_the_window_and_a_late_answer_is_no_round_trip() {
        let client = client(64);
        {
            let mut s = DatagramSession::new(&client);
            s.connected();
            let mut first = s.first();
            assert_eq!(s.on_datagram(&mut first[..64]).unwrap(), Reply::Send);
            let late = first.clone();
            client.open_window();
            // The answer to datagram 1 is lost; datagram 2 goes out.
            let mut second = s.on_timeout().expect("the window is open");
            assert_eq!(datagram::sequence(&second), 2);
            assert_eq!(s.on_datagram(&mut late.clone()[..64]).unwrap(), Reply::Wait);
            assert_eq!(s.on_datagram(&mut second[..64]).unwrap(), Reply::Send);
            client.stop();
            assert_eq!(s.on_datagram(&mut second[..64]).unwrap(), Reply::Stop);
        }
        // Counted inside the window: one answer, two sends, one lost.
        assert_eq!(client.bytes(), 64);
        assert_eq!(client.datagram_counts(), (2, 1));
        assert_eq!(client.verified_connections(), 1);
    }

    #[test]
    fn a_corrupt_or_short_answer_fails_the_socket() {
        let client = client(64);
        let mut s = DatagramSession::new(&client);
        let mut d = s.first();
        d[20] ^= 1;
        assert!(matches!(
            s.on_datagram(&mut d[..64]),
            Err(SessionError::Datagram(datagram::BadDatagram::Corrupt(_)))
        ));
        d[20] ^= 1;
        assert!(matches!(
            s.on_datagram(&mut d[..65]),
            Err(SessionError::Datagram(datagram::BadDatagram::Length { .. }))
        ));
    }

    #[test]
    fn after_the_window_a_lost_datagram_ends_the_socket() {
        let client = client(64);
        let mut s = DatagramSession::new(&client);
        s.first();
        client.stop();
        assert!(s.on_timeout().is_none());
    }
}
