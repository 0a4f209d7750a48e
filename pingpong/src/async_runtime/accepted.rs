//! One accepted connection, served to its end in the server's shape:
//! spawned as a task of its own, or driven among others (the select shape).

use super::interface::{Accepted, AsyncRuntime, Io, Task};
use super::shapes::{Handler, Timed};
use super::split::split;
use crate::server::{Inline, Shape, echo};
use crate::stream::Either;

/// Serves one accepted connection to its end: the TLS handshake where the
/// server has TLS (a failed one ends the connection quietly, as a failed
/// read does), then its echo in the server's shape. Each kind of stream
/// echoes on its own code, and the echo shape on its own too.
pub(super) async fn serve<R: AsyncRuntime>(accepted: Accepted<R>) {
    let Accepted { stream, serving } = accepted;
    let stream = match &serving.tls {
        None => Either::Plain(stream),
        Some(tls) => match R::Io::tls_accept(tls.clone(), stream).await {
            Ok(stream) => Either::Tls(stream),
            Err(_) => return,
        },
    };
    let how = serving.echo.clone();
    match (how.shape, stream) {
        (Shape::Split, stream) => {
            let spawn_writer = |writer| R::detach(R::spawn(&serving.handle, Task::writer(writer)));
            split(stream, how, spawn_writer).await
        }
        (Shape::Timeout, Either::Plain(s)) => echo(Timed::<R, _>::new(s), how, Inline).await,
        (Shape::Timeout, Either::Tls(s)) => echo(Timed::<R, _>::new(s), how, Inline).await,
        (Shape::Echo | Shape::Select, Either::Plain(s)) => echo(s, how, Inline).await,
        (Shape::Echo | Shape::Select, Either::Tls(s)) => echo(s, how, Inline).await,
        (_, Either::Plain(s)) => echo(s, how, Handler::of(&serving)).await,
        (_, Either::Tls(s)) => echo(s, how, Handler::of(&serving)).await,
    }
}
