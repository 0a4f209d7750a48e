//! tokio's multi-threaded work-stealing runtime: one shared IO driver, N
//! worker threads, one listener ("1 context / N threads").

use std::io;
use std::sync::Arc;

use pingpong::client::{all_connections, connection, datagram_connection};
use pingpong::knobs::{self, Settings};
use pingpong::server::{DatagramServer, Web, accept_loop, answer, serve};
use pingpong::{Client, ListenerModel, Server};
use pingpong_tokio::{Tcp, Tls, Udp, accepting, sleep, spawn};
use tokio::net::TcpListener;
use tokio::runtime::{Builder, Runtime};

struct WorkStealing;

fn runtime(threads: usize, knobs: &Settings) -> io::Result<Runtime> {
    pingpong_tokio::runtime(Builder::new_multi_thread().worker_threads(threads), knobs)
}

/// With the timer a UDP client waits for its answers with.
fn timed_runtime(threads: usize, knobs: &Settings) -> io::Result<Runtime> {
    let mut builder = Builder::new_multi_thread();
    pingpong_tokio::runtime(builder.worker_threads(threads).enable_time(), knobs)
}

impl pingpong::Runtime for WorkStealing {
    const LISTENERS: ListenerModel = ListenerModel::Shared;
    const KNOBS: &'static [knobs::Knob] = knobs::TOKIO;

    fn serve(mut server: Server) -> io::Result<()> {
        let rt = runtime(server.threads, &server.knobs)?;
        let listener = server.listeners.pop().expect("one shared listener");
        rt.block_on(async {
            let listener = TcpListener::from_std(listener)?;
            let echo = server.echo.spawning(server.threads, spawn);
            accepting(
                &server.knobs,
                accept_loop(
                    &server.ready,
                    async || Tcp::accept(&listener).await,
                    |stream| {
                        let tls = server.tls.clone();
                        spawn(serve(stream, tls, Tls::accept, echo.clone(), |writer| {
                            spawn(writer.run())
                        }));
                    },
                ),
            )
            .await
        })
    }

    fn serve_web(mut server: Server) -> io::Result<()> {
        let rt = runtime(server.threads, &server.knobs)?;
        let listener = server.listeners.pop().expect("one shared listener");
        let web = Web::of(&server);
        rt.block_on(async {
            let listener = TcpListener::from_std(listener)?;
            accepting(
                &server.knobs,
                accept_loop(
                    &server.ready,
                    async || Tcp::accept(&listener).await,
                    |stream| spawn(web.clone().serve(stream.futures_io())),
                ),
            )
            .await
        })
    }

    fn client(client: &Arc<Client>) -> io::Result<()> {
        runtime(client.config.threads, &client.config.knobs)?.block_on(async {
            all_connections(client.config.connections, || match &client.config.tls {
                None => tokio::spawn(connection(client.clone(), Tcp::connect)),
                Some(tls) => {
                    let tls = tls.clone();
                    tokio::spawn(connection(client.clone(), move |addr| {
                        Tls::connect(tls.clone(), addr)
                    }))
                }
            })
            .await
        })
    }

    fn serve_udp(server: DatagramServer) -> io::Result<()> {
        runtime(server.threads, &server.knobs)?.block_on(async {
            let sockets: Vec<Udp> = server
                .sockets
                .into_iter()
                .map(Udp::from_std)
                .collect::<io::Result<_>>()?;
            let mut sockets = sockets.into_iter();
            all_connections(server.threads, || {
                let socket = sockets.next().expect("a socket per thread");
                tokio::spawn(answer(server.ready.clone(), socket))
            })
            .await
        })
    }

    fn client_udp(client: &Arc<Client>) -> io::Result<()> {
        timed_runtime(client.config.threads, &client.config.knobs)?.block_on(async {
            all_connections(client.config.connections, || {
                tokio::spawn(datagram_connection(client.clone(), Udp::open, sleep))
            })
            .await
        })
    }
}

fn main() -> std::process::ExitCode {
    pingpong::cli::main::<WorkStealing>()
}
