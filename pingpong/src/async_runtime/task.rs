//! What each of pingpong's tasks does, as the runtime's spawn runs it.
//!
//! Each kind's future is boxed inside `run`, so that a task is as small
//! as the hand-off task of the spawn shape, the one spawned per block,
//! whatever the other kinds hold.

use std::io;
use std::sync::Arc;

use super::interface::{AsyncRuntime, Io, Kind, Task};
use super::relay::{relay, until_started};
use super::{accepted, select};
use crate::client::{Client, connection, datagram_connection};
use crate::server::{answer, connected_datagrams};

impl<R: AsyncRuntime> Task<R> {
    /// The task's work, to its end. Only a server's UDP socket ends in an
    /// error: every other task's failure is its connection's, recorded
    /// where the client counts it or seen by the client.
    pub async fn run(self) -> io::Result<()> {
        match self.0 {
            Kind::Serve(accepted) => Box::pin(accepted::serve(*accepted)).await,
            Kind::Writer(writer) => Box::pin(writer.run()).await,
            Kind::Web(web) => {
                let (stream, web) = *web;
                Box::pin(web.serve(stream)).await
            }
            Kind::Helper(helper) => helper.await,
            Kind::Select(share) => return Box::pin(select::share(*share)).await,
            Kind::Answer(socket) => {
                let (ready, socket) = *socket;
                return Box::pin(answer(ready, socket)).await;
            }
            Kind::Connection(client) => Box::pin(client_connection::<R>(client)).await,
            Kind::Datagrams(client) => {
                let open = async |addr| R::Io::udp(connected_datagrams(addr)?);
                let socket = datagram_connection(client.clone(), open, R::sleep);
                Box::pin(until_started::<R, _>(&client, socket)).await
            }
            Kind::Relay(client) => Box::pin(relay::<R>(client)).await,
        }
        Ok(())
    }
}

/// One of the client's connections, plain or inside TLS.
async fn client_connection<R: AsyncRuntime>(client: Arc<Client>) {
    match client.config.tls.clone() {
        None => until_started::<R, _>(&client, connection(client.clone(), R::Io::connect)).await,
        Some(tls) => {
            let connect = move |addr| {
                let tls = tls.clone();
                async move { R::Io::tls_connect(tls, R::Io::connect(addr).await?).await }
            };
            until_started::<R, _>(&client, connection(client.clone(), connect)).await
        }
    }
}
