//! smol: one async-executor shared by N threads, async-io's reactor, one listener.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use async_executor::Executor;
use pingpong::client::{all_connections, connection, datagram_connection};
use pingpong::futures_io::{Compat, Tls, connect_tls};
use pingpong::server::{
    DatagramServer, Web, Writer, accept_loop, answer, connected_datagrams, serve,
};
use pingpong::{Client, ListenerModel, Server};
use smol::net::{TcpListener, TcpStream, UdpSocket};

struct SharedExecutor;

/// A UDP socket on async-io's reactor.
struct Udp(UdpSocket);

pingpong::lent_datagrams!(Udp);

async fn open(server: SocketAddr) -> io::Result<Udp> {
    UdpSocket::try_from(connected_datagrams(server)?).map(Udp)
}

async fn sleep(timeout: Duration) {
    smol::Timer::after(timeout).await;
}

async fn connect(addr: SocketAddr) -> io::Result<Compat<TcpStream>> {
    Compat::nodelay(TcpStream::connect(addr).await?)
}

/// Runs one executor on `threads` threads, the calling thread among them
/// running `main` (which spawns the sessions) within the executor.
/// `smol::block_on`, unlike futures-lite's, drives async-io's reactor on the
/// thread itself when it would otherwise sleep, instead of waiting to be
/// woken from async-io's fallback thread.
fn run<T>(threads: usize, main: impl AsyncFnOnce(&Arc<Executor<'static>>) -> T) -> T {
    let ex = Arc::new(Executor::new());
    let (stop, stopped) = smol::channel::unbounded::<()>();
    thread::scope(|scope| {
        for i in 1..threads {
            let (ex, stopped) = (&ex, stopped.clone());
            thread::Builder::new()
                .name(format!("smol-{i}"))
                .spawn_scoped(scope, move || smol::block_on(ex.run(stopped.recv())))
                .expect("spawning an executor thread");
        }
        let result = smol::block_on(ex.run(main(&ex)));
        drop(stop);
        result
    })
}

impl pingpong::Runtime for SharedExecutor {
    const LISTENERS: ListenerModel = ListenerModel::Shared;

    fn serve(mut server: Server) -> io::Result<()> {
        let listener = TcpListener::try_from(server.listeners.pop().expect("one shared listener"))?;
        let ready = &server.ready;
        run(server.threads, async |ex| {
            let spawner = ex.clone();
            let echo = server
                .echo
                .spawning(server.threads, move |task| spawner.spawn(task).detach());
            accept_loop(
                ready,
                async || Compat::nodelay(listener.accept().await?.0),
                |stream| {
                    let tls = server.tls.clone();
                    let spawner = ex.clone();
                    let spawn_writer =
                        move |writer: Writer<_>| spawner.spawn(writer.run()).detach();
                    ex.spawn(serve(stream, tls, Tls::accept, echo.clone(), spawn_writer))
                        .detach();
                },
            )
            .await
        })
    }

    fn serve_web(mut server: Server) -> io::Result<()> {
        let listener = TcpListener::try_from(server.listeners.pop().expect("one shared listener"))?;
        let web = Web::of(&server);
        run(server.threads, async |ex| {
            accept_loop(
                &server.ready,
                async || Compat::nodelay(listener.accept().await?.0),
                |stream| ex.spawn(web.clone().serve(stream.0)).detach(),
            )
            .await
        })
    }

    fn client(client: &Arc<Client>) -> io::Result<()> {
        run(client.config.threads, async |ex| {
            all_connections(client.config.connections, || match &client.config.tls {
                None => ex.spawn(connection(client.clone(), connect)),
                Some(tls) => {
                    let tls = tls.clone();
                    ex.spawn(connection(client.clone(), move |addr| {
                        connect_tls(tls.clone(), addr, connect)
                    }))
                }
            })
            .await
        })
    }

    fn serve_udp(server: DatagramServer) -> io::Result<()> {
        let sockets: Vec<Udp> = (server.sockets.into_iter())
            .map(|s| UdpSocket::try_from(s).map(Udp))
            .collect::<io::Result<_>>()?;
        let ready = &server.ready;
        run(server.threads, async |ex| {
            let mut sockets = sockets.into_iter();
            all_connections(server.threads, || {
                let socket = sockets.next().expect("a socket per thread");
                ex.spawn(answer(ready.clone(), socket))
            })
            .await
        })
    }

    fn client_udp(client: &Arc<Client>) -> io::Result<()> {
        run(client.config.threads, async |ex| {
            all_connections(client.config.connections, || {
                ex.spawn(datagram_connection(client.clone(), open, sleep))
            })
            .await
        })
    }
}

fn main() -> std::process::ExitCode {
    pingpong::cli::main::<SharedExecutor>()
}
