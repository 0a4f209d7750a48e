//! async-std's global executor with N threads: one shared executor and IO
//! reactor, one listener. (async-std is discontinued upstream in favour of
//! smol; it stays because users still run it.)

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use async_global_executor::GlobalExecutorConfig;
use async_std::net::{TcpListener, TcpStream, UdpSocket};
use async_std::task;
use pingpong::client::{all_connections, connection, datagram_connection};
use pingpong::futures_io::{Compat, Tls, connect_tls};
use pingpong::server::{
    DatagramServer, Web, Writer, accept_loop, answer, connected_datagrams, serve,
};
use pingpong::{Client, ListenerModel, Server};

struct GlobalExecutor;

/// A UDP socket on async-std's reactor.
struct Udp(UdpSocket);

pingpong::lent_datagrams!(Udp);

async fn open(server: SocketAddr) -> io::Result<Udp> {
    Ok(Udp(UdpSocket::from(connected_datagrams(server)?)))
}

/// async-std runs its tasks on async-global-executor, which starts its
/// threads once, on first use: size it before anything else touches it.
fn start_executor(threads: usize) {
    async_global_executor::init_with_config(
        GlobalExecutorConfig::default()
            .with_min_threads(threads)
            .with_max_threads(threads),
    );
}

async fn connect(addr: SocketAddr) -> io::Result<Compat<TcpStream>> {
    Compat::nodelay(TcpStream::connect(addr).await?)
}

impl pingpong::Runtime for GlobalExecutor {
    const LISTENERS: ListenerModel = ListenerModel::Shared;

    fn serve(mut server: Server) -> io::Result<()> {
        start_executor(server.threads);
        let listener = TcpListener::from(server.listeners.pop().expect("one shared listener"));
        let spawn = |task| drop(task::spawn(task));
        task::block_on(async {
            let echo = server.echo.spawning(server.threads, spawn);
            accept_loop(
                &server.ready,
                async || Compat::nodelay(listener.accept().await?.0),
                |stream| {
                    let tls = server.tls.clone();
                    let spawn_writer = |writer: Writer<_>| drop(task::spawn(writer.run()));
                    drop(task::spawn(serve(
                        stream,
                        tls,
                        Tls::accept,
                        echo.clone(),
                        spawn_writer,
                    )));
                },
            )
            .await
        })
    }

    fn serve_web(mut server: Server) -> io::Result<()> {
        start_executor(server.threads);
        let listener = TcpListener::from(server.listeners.pop().expect("one shared listener"));
        let web = Web::of(&server);
        task::block_on(accept_loop(
            &server.ready,
            async || Compat::nodelay(listener.accept().await?.0),
            |stream| drop(task::spawn(web.clone().serve(stream.0))),
        ))
    }

    fn client(client: &Arc<Client>) -> io::Result<()> {
        start_executor(client.config.threads);
        task::block_on(async {
            all_connections(client.config.connections, || match &client.config.tls {
                None => task::spawn(connection(client.clone(), connect)),
                Some(tls) => {
                    let tls = tls.clone();
                    task::spawn(connection(client.clone(), move |addr| {
                        connect_tls(tls.clone(), addr, connect)
                    }))
                }
            })
            .await
        })
    }

    fn serve_udp(server: DatagramServer) -> io::Result<()> {
        start_executor(server.threads);
        task::block_on(async {
            let mut sockets = server.sockets.into_iter();
            all_connections(server.threads, || {
                let socket = Udp(UdpSocket::from(
                    sockets.next().expect("a socket per thread"),
                ));
                task::spawn(answer(server.ready.clone(), socket))
            })
            .await
        })
    }

    fn client_udp(client: &Arc<Client>) -> io::Result<()> {
        start_executor(client.config.threads);
        task::block_on(async {
            all_connections(client.config.connections, || {
                task::spawn(datagram_connection(client.clone(), open, task::sleep))
            })
            .await
        })
    }
}

fn main() -> std::process::ExitCode {
    pingpong::cli::main::<GlobalExecutor>()
}
