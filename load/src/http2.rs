//! HTTP/2 over cleartext, with prior knowledge (no upgrade): one
//! connection's h2 session, one stream in flight on it, each request built
//! once, its answer's body read whole (and its flow-control window given
//! back) and judged as HTTP/1.1's are. Bytes counted are the bodies':
//! the heads travel compressed (HPACK).

use std::net::SocketAddr;

use bytes::Bytes;
use h2::client::SendRequest;

use crate::exchange::{Answered, Failure, ask_until_closed, connect};
use crate::http1::{judge, order};
use crate::{Connection, Request};

/// `request`'s head and body, to `addr`.
pub fn build(request: &Request, addr: SocketAddr) -> Result<(http::Request<()>, Bytes), Failure> {
    let mut head = http::Request::builder()
        .method(request.method.as_str())
        .uri(format!("http://{addr}{}", request.path));
    for (name, value) in &request.headers {
        head = head.header(name, value);
    }
    let head = head
        .body(())
        .map_err(|e| Failure::malformed(&format!("a request to {}: {e}", request.path)))?;
    Ok((head, Bytes::from(request.body.clone())))
}

/// One connection over HTTP/2 until the window closes.
pub(crate) async fn connection(connection: &Connection) {
    let (plan, addr) = (&connection.plan, connection.addr);
    let built: Result<Vec<_>, _> = plan.requests.iter().map(|r| build(r, addr)).collect();
    let requests = match built {
        Ok(requests) => requests,
        Err(failure) => {
            let mut tally = connection.tally.borrow_mut();
            let opens = connection.window.opens;
            tally.failed(&connection.window, &failure.kind, &failure.words, opens);
            return;
        }
    };
    let order = order(&plan.requests, connection.number);
    let mut next = 0;
    // One buffer for every answer's body, kept between answers.
    let mut got = Vec::new();
    ask_until_closed(
        connection,
        async || open(addr).await,
        async |session: &mut SendRequest<Bytes>| {
            let (head, body) = &requests[order[next % order.len()]];
            next += 1;
            let mut ready = session.clone().ready().await.map_err(failed)?;
            let (answer, mut send) = ready
                .send_request(head.clone(), body.is_empty())
                .map_err(failed)?;
            if !body.is_empty() {
                send.send_data(body.clone(), true).map_err(failed)?;
            }
            let answer = answer.await.map_err(failed)?;
            let status = answer.status().as_u16();
            let mut stream = answer.into_body();
            got.clear();
            while let Some(data) = stream.data().await {
                let data = data.map_err(failed)?;
                let _ = stream.flow_control().release_capacity(data.len());
                got.extend_from_slice(&data);
            }
            judge(status, &got, &plan.expect, false)?;
            Ok(Answered {
                bytes: got.len(),
                close: false,
            })
        },
    )
    .await
}

/// A connection and its h2 handshake; the connection's own task runs on
/// this thread until the session ends.
async fn open(addr: SocketAddr) -> Result<SendRequest<Bytes>, Failure> {
    let stream = connect(addr).await?;
    let (session, connection) = h2::client::handshake(stream).await.map_err(failed)?;
    tokio::task::spawn_local(async move {
        let _ = connection.await;
    });
    Ok(session)
}

/// An h2 error: the session is not to be used again.
fn failed(e: h2::Error) -> Failure {
    let kind = match (e.is_io(), e.reason()) {
        (true, _) => "h2: io".to_string(),
        (false, Some(reason)) => format!("h2: {reason:?}"),
        (false, None) => "h2".to_string(),
    };
    Failure {
        kind,
        words: format!("HTTP/2: {e}"),
        close: true,
    }
}
