//! tokio's multi-threaded work-stealing runtime: one shared IO driver, N
//! worker threads, one listener ("1 context / N threads").

use std::io;
use std::sync::Arc;

use pingpong::client::{all_connections, connection};
use pingpong::knobs::{self, Settings};
use pingpong::server::{accept_loop, serve};
use pingpong::{Client, ListenerModel, Server};
use pingpong_tokio::{Tcp, Tls, spawn};
use tokio::net::TcpListener;
use tokio::runtime::{Builder, Runtime};

struct WorkStealing;

fn runtime(threads: usize, knobs: &Settings) -> io::Result<Runtime> {
    pingpong_tokio::runtime(Builder::new_multi_thread().worker_threads(threads), knobs)
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
            accept_loop(
                &server.ready,
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
}

fn main() -> std::process::ExitCode {
    pingpong::cli::main::<WorkStealing>()
}
