//! The no-runtime baseline: blocking std::net, one OS thread per connection
//! on both sides, no event loop. The threads option has no effect here.
//!
//! The shared session loops are async only in name for this socket: every
//! IO call blocks until done. The one real wait is the client's start gate,
//! on which a connection thread parks until it is woken.

use std::future::Future;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};

use pingpong::{Client, ListenerModel, Server, session};

/// Stack of each connection thread: the session keeps its buffer on the
/// heap, and 10,000 threads must fit in memory.
const STACK: usize = 128 << 10;

struct ThreadPerConnection;

struct Blocking(TcpStream);

impl Blocking {
    fn new(stream: TcpStream) -> io::Result<Self> {
        stream.set_nonblocking(false)?;
        stream.set_nodelay(true)?;
        Ok(Self(stream))
    }
}

impl pingpong::Stream for Blocking {
    async fn read(&mut self, mut buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        // std reads into initialized memory: zero the buffer once, keep it full length.
        if buf.len() < buf.capacity() {
            buf.resize(buf.capacity(), 0);
        }
        let read = self.0.read(&mut buf);
        (read, buf)
    }

    async fn write_all(&mut self, buf: Vec<u8>, len: usize) -> (io::Result<()>, Vec<u8>) {
        (self.0.write_all(&buf[..len]), buf)
    }

    async fn shutdown_write(&mut self) -> io::Result<()> {
        self.0.shutdown(Shutdown::Write)
    }
}

/// Wakes a parked thread.
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Runs a future on this thread, parking it whenever the future waits.
fn block_on<F: Future>(future: F) -> F::Output {
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        thread::park();
    }
}

fn spawn(name: String, work: impl FnOnce() + Send + 'static) -> io::Result<thread::JoinHandle<()>> {
    thread::Builder::new()
        .name(name)
        .stack_size(STACK)
        .spawn(work)
}

impl pingpong::Runtime for ThreadPerConnection {
    const LISTENERS: ListenerModel = ListenerModel::Shared;

    fn serve(mut server: Server) -> io::Result<()> {
        let listener = server.listeners.pop().expect("one shared listener");
        listener.set_nonblocking(false)?;
        let block = server.block;
        block_on(session::accept_loop(
            &server.ready,
            async || Blocking::new(listener.accept()?.0),
            |stream| {
                // A thread that cannot start drops its connection; the client reports it.
                let _ = spawn("echo".into(), move || {
                    block_on(session::echo(stream, block))
                });
            },
        ))
    }

    fn client(client: &Arc<Client>) -> io::Result<()> {
        let addr: SocketAddr = client.config.connect;
        let threads: Vec<_> = (0..client.config.connections)
            .map(|i| {
                let client = client.clone();
                spawn(format!("conn-{i}"), move || {
                    let connect = async { Blocking::new(TcpStream::connect(addr)?) };
                    block_on(session::connection(client, connect));
                })
            })
            .collect::<io::Result<_>>()?;
        for thread in threads {
            thread
                .join()
                .map_err(|_| io::Error::other("a connection thread panicked"))?;
        }
        Ok(())
    }
}

fn main() -> std::process::ExitCode {
    pingpong::cli::main::<ThreadPerConnection>()
}
