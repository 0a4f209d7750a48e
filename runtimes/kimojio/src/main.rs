//! kimojio: one single-threaded, cooperatively scheduled io_uring runtime
//! per thread (thread-per-core), each server runtime with its own
//! SO_REUSEPORT listener. Reads and writes are io_uring operations on
//! borrowed buffers; TLS is rustls over them ([`pingpong::tls_stream`]).

use std::cell::RefCell;
use std::io;
use std::mem;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use kimojio::configuration::{BusyPoll, Configuration};
use kimojio::operations::{self, spawn_task};
use kimojio::{Errno, Runtime, socket_helpers};
use pingpong::client::{all_connections, connection};
use pingpong::knobs::{self, Settings};
use pingpong::server::{Writer, accept_loop, serve};
use pingpong::tls_stream::{Client as TlsClient, Server as TlsServer};
use pingpong::{Client, ListenerModel, Server, Unavailable, on_threads};

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

/// One of `client`'s connections, connecting with `connect`.
fn until_started<S, C>(
    client: Arc<Client>,
    connect: impl Fn(SocketAddr) -> C,
) -> UntilStarted<impl Future<Output = ()>>
where
    S: pingpong::Stream,
    C: Future<Output = io::Result<S>>,
{
    UntilStarted {
        connection: Box::pin(connection(client.clone(), connect)),
        client,
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
        let knobs = &client.config.knobs;
        on_threads("client", (0..client.config.threads).collect(), |thread| {
            let client = client.clone();
            run(thread, knobs, async move {
                let count = client.connections_of(thread);
                let relaying = spawn(relay(client.clone()));
                all_connections(count, || match &client.config.tls {
                    None => spawn(until_started(client.clone(), Tcp::connect)),
                    Some(tls) => {
                        let tls = tls.clone();
                        spawn(until_started(client.clone(), move |addr| {
                            let tls = tls.clone();
                            async move { TlsClient::connect(Tcp::connect(addr).await?, &tls).await }
                        }))
                    }
                })
                .await?;
                relaying.await.map_err(io::Error::other)
            })
        })
    }
}

fn main() -> std::process::ExitCode {
    pingpong::cli::main::<ThreadPerCore>()
}
