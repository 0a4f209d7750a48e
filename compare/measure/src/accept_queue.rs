//! The server's accept queue over a repetition, sampled from the kernel
//! (sock_diag over netlink, the listening sockets alone, as `ss -l` reads
//! them): how many connections the kernel had completed and the server not
//! yet accepted. A queue at its backlog drops the SYNs that follow, and
//! their clients wait a second or more to send them again.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use netlink_packet_core::{
    NLM_F_DUMP, NLM_F_REQUEST, NetlinkHeader, NetlinkMessage, NetlinkPayload,
};
use netlink_packet_sock_diag::SockDiagMessage;
use netlink_packet_sock_diag::constants::{AF_INET, AF_INET6, IPPROTO_TCP};
use netlink_packet_sock_diag::inet::{ExtensionFlags, InetRequest, SocketId, StateFlags};
use netlink_sys::protocols::NETLINK_SOCK_DIAG;
use netlink_sys::{Socket, SocketAddr as NetlinkAddr};

use model::results::AcceptQueue;

/// How often the queue is sampled: a dump of a few listening sockets costs
/// the kernel microseconds, so sampling this often takes little from the
/// processes measured.
pub const INTERVAL: Duration = Duration::from_millis(5);

/// The queue of one listening address, sampled on a thread of its own
/// until [`Sampler::finish`].
pub struct Sampler {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Result<AcceptQueue, String>>,
}

impl Sampler {
    /// Samples the listeners bound to `addr` (several, where they share its
    /// port) from now on.
    pub fn start(addr: SocketAddr) -> Result<Self, String> {
        let mut diag = Diag::open(addr)?;
        // A first dump here, so that a kernel without sock_diag says so now.
        diag.sample()?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = thread::Builder::new()
            .name("accept-queue".into())
            .spawn(move || {
                let start = Instant::now();
                let mut queue = AcceptQueue {
                    interval_ms: INTERVAL.as_secs_f64() * 1e3,
                    ..AcceptQueue::default()
                };
                let mut next = start;
                while !stopped.load(Ordering::Relaxed) {
                    let (depth, backlog) = diag.sample()?;
                    queue.depths.push(depth);
                    queue.backlog = queue.backlog.max(backlog);
                    next += INTERVAL;
                    thread::sleep(next.saturating_duration_since(Instant::now()));
                }
                queue.trim();
                Ok(queue)
            })
            .map_err(|e| format!("starting the accept queue's sampler: {e}"))?;
        Ok(Self { stop, thread })
    }

    /// The samples taken.
    pub fn finish(self) -> Result<AcceptQueue, String> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .join()
            .map_err(|_| "the accept queue's sampler panicked".to_string())?
    }
}

/// A netlink socket that dumps the listening TCP sockets of one address.
struct Diag {
    socket: Socket,
    addr: SocketAddr,
    request: Vec<u8>,
    buffer: Vec<u8>,
}

impl Diag {
    fn open(addr: SocketAddr) -> Result<Self, String> {
        let failed = |e: std::io::Error| format!("sock_diag over netlink: {e}");
        let mut socket = Socket::new(NETLINK_SOCK_DIAG).map_err(failed)?;
        socket.bind_auto().map_err(failed)?;
        socket.connect(&NetlinkAddr::new(0, 0)).map_err(failed)?;
        let (family, socket_id) = match addr {
            SocketAddr::V4(_) => (AF_INET, SocketId::new_v4()),
            SocketAddr::V6(_) => (AF_INET6, SocketId::new_v6()),
        };
        let mut header = NetlinkHeader::default();
        header.flags = NLM_F_REQUEST | NLM_F_DUMP;
        let mut packet = NetlinkMessage::new(
            header,
            SockDiagMessage::InetRequest(InetRequest {
                family,
                protocol: IPPROTO_TCP,
                extensions: ExtensionFlags::empty(),
                // Listeners alone: the kernel walks its listening table, not
                // the 10,000 connections.
                states: StateFlags::LISTEN,
                socket_id,
            })
            .into(),
        );
        packet.finalize();
        let mut request = vec![0; packet.buffer_len()];
        packet.serialize(&mut request);
        Ok(Self {
            socket,
            addr,
            request,
            buffer: vec![0; 64 * 1024],
        })
    }

    /// Connections queued on the address's listeners, summed, and the
    /// largest backlog among them.
    fn sample(&mut self) -> Result<(u32, u32), String> {
        let failed = |e: &dyn std::fmt::Display| format!("sock_diag over netlink: {e}");
        self.socket.send(&self.request, 0).map_err(|e| failed(&e))?;
        let (mut depth, mut backlog) = (0, 0);
        loop {
            let size = self
                .socket
                .recv(&mut &mut self.buffer[..], 0)
                .map_err(|e| failed(&e))?;
            let mut offset = 0;
            while offset < size {
                let message =
                    <NetlinkMessage<SockDiagMessage>>::deserialize(&self.buffer[offset..size])
                        .map_err(|e| failed(&e))?;
                match message.payload {
                    NetlinkPayload::InnerMessage(SockDiagMessage::InetResponse(response)) => {
                        let id = &response.header.socket_id;
                        if id.source_port == self.addr.port()
                            && (self.addr.ip().is_unspecified()
                                || id.source_address == self.addr.ip())
                        {
                            // A listener's receive queue is its accept queue,
                            // its send queue the backlog (inet_diag).
                            depth += response.header.recv_queue;
                            backlog = backlog.max(response.header.send_queue);
                        }
                    }
                    NetlinkPayload::Done(_) => return Ok((depth, backlog)),
                    NetlinkPayload::Error(e) => return Err(failed(&e)),
                    _ => {}
                }
                if message.header.length == 0 {
                    break;
                }
                offset += message.header.length as usize;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real listener whose queue fills with connections nobody accepts:
    /// the sampler sees each of them, and a backlog that holds them.
    #[test]
    fn the_sampler_sees_connections_queued_on_a_real_listener() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let sampler = Sampler::start(addr).unwrap();
        let clients: Vec<_> = (0..5)
            .map(|_| std::net::TcpStream::connect(addr).unwrap())
            .collect();
        // Bounded: the samples come every few milliseconds.
        thread::sleep(INTERVAL * 10);
        let queue = sampler.finish().unwrap();
        assert_eq!(queue.peak(), 5, "{queue:?}");
        assert!(queue.backlog >= 5, "{queue:?}");
        assert_eq!(clients.len(), 5);
    }
}
