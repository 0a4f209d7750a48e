//! N current-thread tokio runtimes, one per thread, each server thread with
//! its own SO_REUSEPORT listener ("N contexts / N threads").

use std::io;
use std::sync::Arc;

use pingpong::client::{all_connections, connection, datagram_connection};
use pingpong::knobs::{self, Settings};
use pingpong::server::{DatagramServer, Web, accept_loop, answer, serve};
use pingpong::{Client, ListenerModel, Server, on_threads};
use pingpong_tokio::{Tcp, Tls, Udp, accepting, sleep, spawn};
use tokio::net::TcpListener;
use tokio::runtime::{Builder, Runtime};

struct PerThread;

/// A current-thread runtime runs what it spawns on its own thread, so plain
/// `tokio::spawn` keeps every task there (no LocalSet needed: tokio's streams are Send).
fn runtime(knobs: &Settings) -> io::Result<Runtime> {
    pingpong_tokio::runtime(&mut Builder::new_current_thread(), knobs)
}

/// With the timer a UDP client waits for its answers with.
fn timed_runtime(knobs: &Settings) -> io::Result<Runtime> {
    pingpong_tokio::runtime(Builder::new_current_thread().enable_time(), knobs)
}

impl pingpong::Runtime for PerThread {
    const LISTENERS: ListenerModel = ListenerModel::PerThread;
    const KNOBS: &'static [knobs::Knob] = knobs::TOKIO_LOCAL;

    fn serve(server: Server) -> io::Result<()> {
        let ready = &server.ready;
        on_threads("server", server.listeners, |listener| {
            runtime(&server.knobs)?.block_on(async {
                let listener = TcpListener::from_std(listener)?;
                let echo = server.echo.spawning(1, spawn);
                accepting(
                    &server.knobs,
                    accept_loop(
                        ready,
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
        })
    }

    fn serve_web(server: Server) -> io::Result<()> {
        let web = Web::of(&server);
        on_threads("server", server.listeners, |listener| {
            runtime(&server.knobs)?.block_on(async {
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
        })
    }

    fn client(client: &Arc<Client>) -> io::Result<()> {
        on_threads("client", (0..client.config.threads).collect(), |thread| {
            runtime(&client.config.knobs)?.block_on(async {
                all_connections(client.connections_of(thread), || match &client.config.tls {
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
        })
    }

    fn serve_udp(server: DatagramServer) -> io::Result<()> {
        on_threads("server", server.sockets, |socket| {
            runtime(&server.knobs)?
                .block_on(async { answer(server.ready.clone(), Udp::from_std(socket)?).await })
        })
    }

    fn client_udp(client: &Arc<Client>) -> io::Result<()> {
        on_threads("client", (0..client.config.threads).collect(), |thread| {
            timed_runtime(&client.config.knobs)?.block_on(async {
                all_connections(client.connections_of(thread), || {
                    tokio::spawn(datagram_connection(client.clone(), Udp::open, sleep))
                })
                .await
            })
        })
    }
}

fn main() -> std::process::ExitCode {
    pingpong::cli::main::<PerThread>()
}
