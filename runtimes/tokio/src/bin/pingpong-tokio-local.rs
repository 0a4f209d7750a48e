//! N current-thread tokio runtimes, one per thread, each server thread with
//! its own SO_REUSEPORT listener ("N contexts / N threads").

use std::io;
use std::sync::Arc;

use pingpong::client::{all_connections, connection};
use pingpong::knobs::{self, Settings};
use pingpong::server::{accept_loop, serve};
use pingpong::{Client, ListenerModel, Server, on_threads};
use pingpong_tokio::{Tcp, Tls, spawn};
use tokio::net::TcpListener;
use tokio::runtime::{Builder, Runtime};

struct PerThread;

/// A current-thread runtime runs what it spawns on its own thread, so plain
/// `tokio::spawn` keeps every task there (no LocalSet needed: tokio's streams are Send).
fn runtime(knobs: &Settings) -> io::Result<Runtime> {
    pingpong_tokio::runtime(&mut Builder::new_current_thread(), knobs)
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
                accept_loop(
                    ready,
                    async || Tcp::accept(&listener).await,
                    |stream| {
                        let tls = server.tls.clone();
                        spawn(serve(stream, tls, Tls::accept, echo.clone(), |writer| {
                            spawn(writer.run())
                        }));
                    },
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
}

fn main() -> std::process::ExitCode {
    pingpong::cli::main::<PerThread>()
}
