//! kimojio: one single-threaded, cooperatively scheduled io_uring runtime
//! per thread (thread-per-core), each server runtime with its own
//! SO_REUSEPORT listener. Reads and writes are io_uring operations on
//! borrowed buffers; TLS is rustls over them ([`pingpong::tls_stream`]).

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use kimojio::configuration::{BusyPoll, Configuration};
use kimojio::operations::{self, RecvFlags, SendFlags, spawn_task};
use kimojio::{Errno, Runtime, socket_helpers};
use pingpong::Topology;
use pingpong::async_runtime::{Async, AsyncLock, AsyncRuntime, Executor, Io, Never, Task};
use pingpong::datagram::whole;
use pingpong::knobs::{self, Knob};
use pingpong::tls::{Connector, ServerConfig};
use pingpong::tls_stream::{Client as TlsClient, Server as TlsServer};
use pingpong::unavailable::Unavailable;
use socket2::SockAddr;

fn os_error(errno: Errno) -> io::Error {
    io::Error::from_raw_os_error(errno.raw_os_error())
}

/// A connected socket, its IO submitted to this thread's ring; shared by
/// the two sides of a split connection, on this thread.
struct Tcp(Rc<TcpStream>);

impl pingpong::Reads for Tcp {
    async fn read(&mut self, mut buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        // The ring reads into initialized memory: zero the buffer once, keep it full length.
        if buf.len() < buf.capacity() {
            buf.resize(buf.capacity(), 0);
        }
        let read = operations::read(&self.0, &mut buf).await.map_err(os_error);
        (read, buf)
    }
}

impl pingpong::Writes for Tcp {
    async fn write_all(&mut self, buf: Vec<u8>, len: usize) -> (io::Result<()>, Vec<u8>) {
        let mut done = 0;
        while done < len {
            match operations::write(&self.0, &buf[done..len]).await {
                Ok(0) => return (Err(io::ErrorKind::WriteZero.into()), buf),
                Ok(n) => done += n,
                Err(e) => return (Err(os_error(e)), buf),
            }
        }
        (Ok(()), buf)
    }

    async fn shutdown_write(&mut self) -> io::Result<()> {
        operations::shutdown(&self.0, libc::SHUT_WR)
            .await
            .map_err(os_error)
    }
}

/// Both sides are the socket: each of its reads and writes is a ring operation of its own.
impl pingpong::Split for Tcp {
    type Read = Self;
    type Write = Self;

    fn split(self) -> (Self, Self) {
        (Self(self.0.clone()), self)
    }
}

/// A UDP socket, its IO submitted to this thread's ring. Blocking: the
/// ring waits for a datagram, where a non-blocking socket would answer
/// EAGAIN. A receive dropped at the loss timeout is cancelled, and its
/// drop waits until the ring is done with the buffer (kimojio's own rule
/// for borrowed buffers).
struct Udp(UdpSocket);

impl Udp {
    /// recvmsg(2) (`send` false) or sendmsg(2) of `buf` on the ring, from
    /// or to the address in `peer`.
    async fn message(&self, buf: &mut [u8], peer: &mut SockAddr, send: bool) -> io::Result<usize> {
        let mut iov = rustix::io_uring::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        let mut header = rustix::io_uring::MsgHdr {
            // The kernel writes the sender's address here on a receive,
            // and only reads it on a send.
            msg_name: peer.as_ptr().cast_mut().cast(),
            msg_namelen: match send {
                true => peer.len(),
                false => std::mem::size_of::<socket2::SockAddrStorage>() as u32,
            },
            msg_iov: &mut iov,
            msg_iovlen: 1,
            msg_control: std::ptr::null_mut(),
            msg_controllen: 0,
            msg_flags: RecvFlags::empty(),
        };
        let done = match send {
            true => operations::sendmsg(&self.0, &mut header, SendFlags::empty(), None).await,
            false => operations::recvmsg(&self.0, &mut header, RecvFlags::empty(), None).await,
        };
        if !send {
            // SAFETY: the kernel wrote an address of this length into the storage.
            unsafe { peer.set_length(header.msg_namelen) };
        }
        done.map_err(os_error)
    }
}

impl pingpong::Datagrams for Udp {
    async fn send(&mut self, buf: Vec<u8>, len: usize) -> (io::Result<()>, Vec<u8>) {
        let sent = operations::send(&self.0, &buf[..len], SendFlags::empty(), None).await;
        (whole(sent.map_err(os_error), len), buf)
    }

    async fn recv(&mut self, mut buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        buf.resize(buf.capacity(), 0);
        let received = operations::recv(&self.0, &mut buf, RecvFlags::empty(), None).await;
        (received.map_err(os_error), buf)
    }

    async fn recv_from(&mut self, mut buf: Vec<u8>) -> (io::Result<(usize, SocketAddr)>, Vec<u8>) {
        buf.resize(buf.capacity(), 0);
        // SAFETY: zeroed storage of no length is an address to be filled in.
        let mut peer = unsafe { SockAddr::new(socket2::SockAddrStorage::zeroed(), 0) };
        let received = self.message(&mut buf, &mut peer, false).await;
        let from = received.and_then(|n| {
            let from = peer.as_socket();
            from.map(|from| (n, from))
                .ok_or_else(|| io::Error::other("a datagram from no IP address"))
        });
        (from, buf)
    }

    async fn send_to(
        &mut self,
        mut buf: Vec<u8>,
        len: usize,
        to: SocketAddr,
    ) -> (io::Result<()>, Vec<u8>) {
        let mut peer = SockAddr::from(to);
        let sent = self.message(&mut buf[..len], &mut peer, true).await;
        (whole(sent, len), buf)
    }
}

/// kimojio's runtime on each thread, thread-per-core.
struct ThreadPerCore;

impl AsyncRuntime for ThreadPerCore {
    const TOPOLOGY: Topology = Topology::PerThread;
    const KNOBS: &'static [Knob] = knobs::KIMOJIO;
    const THREAD_BOUND_WAKERS: bool = true;

    type Handle = ();
    /// A task's handle, its panic in words (kimojio's error has no Display).
    type Join = Pin<Box<dyn Future<Output = io::Result<()>>>>;

    /// A runtime on this thread, with the knobs; unavailable where io_uring is.
    fn block_on<T, F>(executor: &Executor, main: impl FnOnce(()) -> F) -> io::Result<T>
    where
        F: Future<Output = io::Result<T>> + 'static,
    {
        Unavailable::probe_io_uring()?;
        let mut configuration = Configuration::new();
        if let Some(us) = executor.knobs.get("busy_poll_us") {
            configuration = configuration.set_busy_poll(BusyPoll::Until(Duration::from_micros(us)));
        }
        match Runtime::new(executor.thread as u8, configuration).block_on(main(())) {
            Some(Ok(outcome)) => outcome,
            Some(Err(_)) => Err(io::Error::other("a kimojio task panicked")),
            None => Err(io::Error::other("kimojio's loop was shut down")),
        }
    }

    fn spawn(_: &(), task: Task<Self>) -> Self::Join {
        let handle = spawn_task(task.run());
        Box::pin(async move {
            handle
                .await
                .map_err(|e| io::Error::other(format!("a task did not finish: {e:?}")))?
        })
    }

    /// The ring waits for a connection; a non-blocking socket would answer EAGAIN.
    type Io = Self;

    /// The ring's own timeout. A timer that fails would count losses that
    /// did not happen: the task panics instead, and the cell fails.
    async fn sleep(duration: Duration) {
        if let Err(e) = operations::sleep(duration).await {
            panic!("kimojio's timer failed: {e:?}");
        }
    }

    const NO_BLOCKING_POOL: Option<&'static str> =
        Some("kimojio runs each thread's tasks on its ring alone, and has no pool of threads");

    /// kimojio's own lock is its thread's alone.
    type Mutex = AsyncLock;
}

impl Io for ThreadPerCore {
    type Listener = TcpListener;

    fn listener(listener: TcpListener) -> io::Result<TcpListener> {
        listener.set_nonblocking(false)?;
        Ok(listener)
    }

    type Tcp = Tcp;

    async fn accept(listener: &TcpListener) -> io::Result<Tcp> {
        let stream = TcpStream::from(operations::accept(listener).await.map_err(os_error)?);
        stream.set_nodelay(true)?;
        Ok(Tcp(Rc::new(stream)))
    }

    async fn connect(addr: SocketAddr) -> io::Result<Tcp> {
        // kimojio's client socket: TCP_NODELAY (and keep-alive probes after 30 s idle).
        let fd = socket_helpers::create_client_socket(&addr)
            .await
            .map_err(os_error)?;
        Ok(Tcp(Rc::new(TcpStream::from(fd))))
    }

    type TlsServer = TlsServer<Tcp>;
    type TlsClient = TlsClient<Tcp>;

    async fn tls_accept(config: Arc<ServerConfig>, tcp: Tcp) -> io::Result<TlsServer<Tcp>> {
        TlsServer::accept(tcp, config).await
    }

    async fn tls_connect(connector: Arc<Connector>, tcp: Tcp) -> io::Result<TlsClient<Tcp>> {
        TlsClient::connect(tcp, &connector).await
    }

    type Udp = Udp;

    fn udp(socket: UdpSocket) -> io::Result<Udp> {
        socket.set_nonblocking(false)?;
        Ok(Udp(socket))
    }

    type FuturesIo = Never;
    const NO_FUTURES_IO: Option<&'static str> = Some(
        "kimojio's sockets offer owned-buffer io_uring operations alone, and its glue has no \
         poll-based adapter over them",
    );
}

fn main() -> std::process::ExitCode {
    pingpong::cli::main::<Async<ThreadPerCore>>()
}
