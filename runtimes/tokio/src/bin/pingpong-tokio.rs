//! tokio's multi-threaded work-stealing runtime: one shared IO driver, N
//! worker threads, one listener ("1 context / N threads").

use std::io;
use std::sync::Arc;

use pingpong::{Client, ListenerModel, Server, session};
use pingpong_tokio::{Listen, Tcp};
use tokio::runtime::{Builder, Runtime};

struct WorkStealing;

fn runtime(threads: usize) -> io::Result<Runtime> {
    Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_io()
        .build()
}

impl pingpong::Runtime for WorkStealing {
    const LISTENERS: ListenerModel = ListenerModel::Shared;

    fn serve(mut server: Server) -> io::Result<()> {
        let rt = runtime(server.threads)?;
        let listener = server.listeners.pop().expect("one shared listener");
        rt.block_on(async {
            let block = server.block;
            session::accept_loop(Listen::from_std(listener)?, &server.ready, |stream| {
                tokio::spawn(session::echo(stream, block));
            })
            .await
        })
    }

    fn client(client: &Arc<Client>) -> io::Result<()> {
        runtime(client.config.threads)?.block_on(async {
            let tasks: Vec<_> = (0..client.config.connections)
                .map(|_| tokio::spawn(session::connection::<Tcp>(client.clone())))
                .collect();
            for task in tasks {
                task.await?;
            }
            Ok(())
        })
    }
}

fn main() -> std::process::ExitCode {
    pingpong::cli::main::<WorkStealing>()
}
