//! The open loop's generator: one client for every server, so that only
//! the server differs. Each thread runs one mio event loop over its share
//! of the connections, which send blocks on their schedules
//! ([`pingpong::client::open_loop`]); it serves nothing and runs no closed
//! loop. It is an instrument: its sockets are the mio baseline's, and it is
//! never one of the implementations compared.

mod open_loop;

use std::sync::Arc;

use pingpong::{Client, on_threads};

fn run(client: &Arc<Client>) -> std::io::Result<()> {
    on_threads("client", (0..client.config.threads).collect(), |thread| {
        open_loop::event_loop(client, thread)
    })
}

fn main() -> std::process::ExitCode {
    pingpong::cli::generator_main(run)
}
