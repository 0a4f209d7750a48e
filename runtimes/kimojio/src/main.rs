//! kimojio: one single-threaded, cooperatively scheduled io_uring runtime
//! per thread (thread-per-core), each server runtime with its own
//! SO_REUSEPORT listener. Reads and writes are io_uring operations on
//! borrowed buffers; TLS is rustls over them ([`pingpong::tls_stream`]).

use std::cell::RefCell;
use std::io;
use std::mem;
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use kimojio::configuration::{BusyPoll, Configuration};
use kimojio::operations::{self, RecvFlags, SendFlags, spawn_task};
use kimojio::{Errno, Runtime, socket_helpers};
use pingpong::client::{all_connections, connection, datagram_connection};
use pingpong::datagram::whole;
use pingpong::knobs::{self, Settings};
use pingpong::server::{DatagramServer, Writer, accept_loop, answer, connected_datagrams, serve};
use pingpong::tls_stream::{Client as TlsClient, Server as TlsServer};
use pingpong::{Client, ListenerModel, Server, Unavailable, on_threads};
use socket2::SockAddr;

struct ThreadPerCore;

fn os_error(errno: Errno) -> io::Error {
    io::Error::from_raw_os_error(errno.raw_os_error())
}

/// A connected socket, its IO submitted to this thread's ring; shared by
/// the two sides of a split connection, on this thread.
struct Tcp(Rc<TcpStream>);

impl Tcp {
    async fn connect(addr: SocketAddr) -> io::Result<Self> {
        // kimojio's client socket: TCP_NODELAY (and keep-alive probes after 30 s idle).
        let fd = socket_helpers::create_client_socket(&addr)
            .await
            .map_err(os_error)?;
        Ok(Self(Rc::new(TcpStream::from(fd))))
    }

    async fn accept(listener: &TcpListener) -> io::Result<Self> {
        let stream = TcpStream::from(operations::accept(listener).await.map_err(os_error)?);
        stream.set_nodelay(true)?;
        Ok(Self(Rc::new(stream)))
    }
}

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
    fn new(socket: UdpSocket) -> io::Result<Self> {
        socket.set_nonblocking(false)?;
        Ok(Self(socket))
    }

    async fn open(server: SocketAddr) -> io::Result<Self> {
        Self::new(connected_datagrams(server)?)
    }

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

/// A runtime on this thread, with the knobs; unavailable where io_uring is.
fn runtime(thread: usize, knobs: &Settings) -> io::Result<Runtime> {
    Unavailable::probe_io_uring()?;
    let mut configuration = Configuration::new();
    if let Some(us) = knobs.get("busy_poll_us") {
        configuration = configuration.set_busy_poll(BusyPoll::Until(Duration::from_micros(us)));
    }
    Ok(Runtime::new(thread as u8, configuration))
}

/// Runs `main` to its end on a runtime of this thread.
fn run(
    thread: usize,
    knobs: &Settings,
    main: impl Future<Output = io::Result<()>> + 'static,
) -> io::Result<()> {
    match runtime(thread, knobs)?.block_on(main) {
        Some(Ok(outcome)) => outcome,
        Some(Err(_)) => Err(io::Error::other("a kimojio task panicked")),
        None => Err(io::Error::other("kimojio's loop was shut down")),
    }
}

/// A waker any thread may wake: it only marks its task, and the task's
/// thread relays the mark to kimojio's own waker ([`relay`]).
struct Mark(AtomicBool);

impl Wake for Mark {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::Release);
    }
}

thread_local! {
    /// This thread's tasks waiting on a mark, with their kimojio wakers.
    static MARKED: RefCell<Vec<(Arc<Mark>, Waker)>> = const { RefCell::new(Vec::new()) };
}

/// A connection until the client starts: polled with a [`Mark`], because
/// the start gate is opened, and its waiters woken, on the client driver's
/// thread, and kimojio's wakers may only be woken on their own thread.
/// From the start on (all of the measured pingpong), polled with kimojio's.
struct UntilStarted<F> {
    connection: Pin<Box<F>>,
    client: Arc<Client>,
}

/// One of `client`'s connections (or UDP sockets), polled as above.
fn until_started<F: Future>(client: &Arc<Client>, connection: F) -> UntilStarted<F> {
    UntilStarted {
        connection: Box::pin(connection),
        client: client.clone(),
    }
}

impl<F: Future> Future for UntilStarted<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        if self.client.started() {
            return self.connection.as_mut().poll(cx);
        }
        let mark = Arc::new(Mark(AtomicBool::new(false)));
        let waker = Waker::from(mark.clone());
        let polled = self
            .connection
            .as_mut()
            .poll(&mut Context::from_waker(&waker));
        if polled.is_pending() {
            MARKED.with_borrow_mut(|marked| marked.push((mark, cx.waker().clone())));
        }
        polled
    }
}

/// Wakes this thread's marked tasks, every 100 us, until the client has
/// started and none waits on a mark.
async fn relay(client: Arc<Client>) {
    loop {
        let started = client.started();
        let woken: Vec<Waker> = MARKED.with_borrow_mut(|marked| {
            let (woken, waiting) = mem::take(marked)
                .into_iter()
                .partition(|(mark, _)| started || mark.0.load(Ordering::Acquire));
            *marked = waiting;
            woken.into_iter().map(|(_, waker)| waker).collect()
        });
        woken.into_iter().for_each(Waker::wake);
        if started && MARKED.with_borrow(Vec::is_empty) {
            return;
        }
        // An error ends the relay early; the connections then fail on their own.
        if operations::sleep(Duration::from_micros(100)).await.is_err() {
            return;
        }
    }
}

/// A task's handle, its panic in words (kimojio's error has no Display).
fn spawn(
    task: impl Future<Output = ()> + 'static,
) -> Pin<Box<dyn Future<Output = Result<(), String>>>> {
    let handle = spawn_task(task);
    Box::pin(async move { handle.await.map_err(|e| format!("{e:?}")) })
}

impl pingpong::Runtime for ThreadPerCore {
    const LISTENERS: ListenerModel = ListenerModel::PerThread;
    const NO_WEB: &'static str = "kimojio's sockets offer owned-buffer io_uring operations alone, and its glue has no poll-based adapter over them";
    const KNOBS: &'static [knobs::Knob] = knobs::KIMOJIO;

    fn serve(server: Server) -> io::Result<()> {
        let (echo, knobs) = (&server.echo, &server.knobs);
        let listeners = server.listeners.into_iter().enumerate().collect();
        on_threads("server", listeners, |(thread, listener)| {
            // The ring waits for a connection; a non-blocking socket would answer EAGAIN.
            listener.set_nonblocking(false)?;
            let (ready, tls) = (server.ready.clone(), server.tls.clone());
            let echo = echo.clone();
            run(thread, knobs, async move {
                let echo = echo.spawning(1, |task| drop(spawn(task)));
                accept_loop(
                    &ready,
                    async || Tcp::accept(&listener).await,
                    |stream| {
                        let accept = |tls, stream| TlsServer::accept(stream, tls);
                        let spawn_writer = |writer: Writer<_>| drop(spawn(writer.run()));
                        drop(spawn(serve(
                            stream,
                            tls.clone(),
                            accept,
                            echo.clone(),
                            spawn_writer,
                        )));
                    },
                )
                .await
            })
        })
    }

    fn client(client: &Arc<Client>) -> io::Result<()> {
        client_threads(client, |client| -> Pin<Box<dyn Future<Output = ()>>> {
            match &client.config.tls {
                None => Box::pin(connection(client.clone(), Tcp::connect)),
                Some(tls) => {
                    let tls = tls.clone();
                    let connect = move |addr| {
                        let tls = tls.clone();
                        async move { TlsClient::connect(Tcp::connect(addr).await?, &tls).await }
                    };
                    Box::pin(connection(client.clone(), connect))
                }
            }
        })
    }

    fn serve_udp(server: DatagramServer) -> io::Result<()> {
        let (ready, knobs) = (&server.ready, &server.knobs);
        let sockets = server.sockets.into_iter().enumerate().collect();
        on_threads("server", sockets, |(thread, socket)| {
            let (ready, socket) = (ready.clone(), Udp::new(socket)?);
            run(thread, knobs, answer(ready, socket))
        })
    }

    fn client_udp(client: &Arc<Client>) -> io::Result<()> {
        client_threads(client, |client| {
            datagram_connection(client.clone(), Udp::open, sleep)
        })
    }
}

/// Runs the client's connections (`session` makes each one's future) on
/// its threads, each thread's on a runtime of its own, with the start
/// gate relayed ([`relay`]).
fn client_threads<F: Future<Output = ()> + 'static>(
    client: &Arc<Client>,
    session: impl Fn(&Arc<Client>) -> F + Clone + Send + Sync + 'static,
) -> io::Result<()> {
    let knobs = &client.config.knobs;
    on_threads("client", (0..client.config.threads).collect(), |thread| {
        let (client, session) = (client.clone(), session.clone());
        run(thread, knobs, async move {
            let count = client.connections_of(thread);
            let relaying = spawn(relay(client.clone()));
            all_connections(count, || spawn(until_started(&client, session(&client)))).await?;
            relaying.await.map_err(io::Error::other)
        })
    })
}

/// The client's timer over UDP: the ring's own timeout. A timer that
/// fails would count losses that did not happen: the socket's task panics
/// instead, and the cell fails.
async fn sleep(timeout: Duration) {
    if let Err(e) = operations::sleep(timeout).await {
        panic!("kimojio's timer failed: {e:?}");
    }
}

fn main() -> std::process::ExitCode {
    pingpong::cli::main::<ThreadPerCore>()
}
