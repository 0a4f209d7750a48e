//! The UDP server ([`crate::datagram`]): each socket answers every datagram
//! to whoever sent it, unchanged. Written once for every runtime (event
//! loops call [`before_answer`] from their own).

use std::io;
use std::net::{SocketAddr, UdpSocket};

use socket2::{Protocol, Type};

use super::setup::{Ready, bind_sharing_port};
use super::tally;
use crate::datagram::{Datagrams, MAX_DATAGRAM};
use crate::{fault, work};

/// What a runtime serves over UDP: bound, non-blocking sockets, one per
/// thread, sharing the port through SO_REUSEPORT where there are several
/// (the kernel keeps each client socket on one of them).
pub struct DatagramServer {
    pub sockets: Vec<UdpSocket>,
    pub threads: usize,
    /// The runtime's builder settings.
    pub knobs: crate::knobs::Settings,
    pub ready: Ready,
}

/// Binds `count` UDP sockets on one address, sharing its port.
pub fn bind_datagrams(addr: SocketAddr, count: usize) -> io::Result<Vec<UdpSocket>> {
    let sockets = bind_sharing_port(addr, count, Type::DGRAM, Protocol::UDP, |_| Ok(()))?;
    Ok(sockets.into_iter().map(Into::into).collect())
}

/// A client's UDP socket: bound to an ephemeral port of the server's
/// address family and connected to the server, non-blocking.
pub fn connected_datagrams(server: SocketAddr) -> io::Result<UdpSocket> {
    let any: SocketAddr = match server {
        SocketAddr::V4(_) => (std::net::Ipv4Addr::UNSPECIFIED, 0).into(),
        SocketAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let socket = UdpSocket::bind(any)?;
    socket.connect(server)?;
    socket.set_nonblocking(true)?;
    Ok(socket)
}

/// A buffer for one datagram of any size a server may be sent.
pub fn datagram_buffer() -> Vec<u8> {
    vec![0; MAX_DATAGRAM]
}

/// What a server does to a datagram it received before answering it: the
/// work per block asked for, and the fault under test, if any. Whether to
/// answer it at all (the fault that drops datagrams says no).
pub fn before_answer(datagram: &mut [u8]) -> bool {
    tally::read();
    work::on_echo(0, datagram.len(), datagram.len().max(1));
    fault::corrupt(datagram, 0);
    !fault::drops_datagram()
}

/// Answers every datagram on `socket` to its sender, until an error ends
/// the socket (which ends the server: no client can be told otherwise).
pub async fn answer<D: Datagrams>(ready: Ready, mut socket: D) -> io::Result<()> {
    ready.listening();
    let mut buf = datagram_buffer();
    loop {
        let (received, mut b) = socket.recv_from(buf).await;
        let (n, from) = received?;
        if !before_answer(&mut b[..n]) {
            buf = b;
            continue;
        }
        let (sent, b) = socket.send_to(b, n, from).await;
        buf = b;
        sent?;
    }
}
