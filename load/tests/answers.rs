//! The load against small servers of the test's own on loopback (real
//! sockets, real threads): good answers counted and timed, bad ones counted
//! by kind with their words, chunked bodies read, connections the server
//! closes opened again, and a raw TCP exchange read to its delimiter.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use pingpong_load::{Config, Exchange, Expect, Outcome, Plan, Protocol, Request};

/// A server that answers each request of every connection with `answer`
/// (and closes after it, with `close`), for at most ten seconds.
fn server(answer: &'static [u8], close: bool, http: bool) -> SocketAddr {
    slow_server(answer, close, http, Duration::ZERO)
}

/// [`server`], taking `delay` over each answer.
fn slow_server(answer: &'static [u8], close: bool, http: bool, delay: Duration) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            match listener.accept() {
                Ok((stream, _)) => {
                    stream.set_nonblocking(false).unwrap();
                    std::thread::spawn(move || serve(stream, answer, close, http, until, delay));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(2)),
            }
        }
    });
    addr
}

fn serve(
    stream: TcpStream,
    answer: &[u8],
    close: bool,
    http: bool,
    until: Instant,
    delay: Duration,
) {
    stream
        .set_read_timeout(Some(Duration::from_secs(1)))
        .unwrap();
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    while Instant::now() < until {
        let mut length = 0;
        let mut line = String::new();
        // A request: its head's lines to the empty one, then its body; or,
        // over raw TCP, one line.
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
            if !http || line == "\r\n" {
                break;
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        std::thread::sleep(delay);
        if writer.write_all(answer).is_err() || close {
            return;
        }
    }
}

fn plan(protocol: Protocol, body_contains: Option<&str>) -> Plan {
    Plan {
        protocol,
        requests: vec![Request {
            method: "POST".into(),
            path: "/work".into(),
            headers: vec![("content-type".into(), "application/json".into())],
            body: br#"{"n":1}"#.to_vec(),
            weight: 1,
        }],
        exchange: None,
        expect: Expect {
            status: 200,
            body_contains: body_contains.map(Into::into),
        },
    }
}

fn load(plan: &Plan, connect: SocketAddr) -> Outcome {
    load_at(plan, connect, None)
}

/// [`load`], in the open loop at `rate` where given.
fn load_at(plan: &Plan, connect: SocketAddr, rate: Option<f64>) -> Outcome {
    let config = Config {
        connect,
        connections: 3,
        threads: 2,
        warmup: Duration::from_millis(50),
        seconds: Duration::from_millis(300),
        rate,
    };
    pingpong_load::run(plan, &config).unwrap()
}

const OK: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 11\r\n\r\n{\"ok\":true}";

#[test]
fn good_answers_are_counted_and_timed_inside_the_window() {
    let outcome = load(
        &plan(Protocol::Http1, Some("\"ok\":true")),
        server(OK, false, true),
    );
    assert!(outcome.answered > 0, "{outcome:?}");
    assert!(
        outcome.errors.is_empty() && outcome.before_window.is_empty(),
        "{outcome:?}"
    );
    assert_eq!(outcome.bytes, outcome.answered * OK.len() as u64);
    assert!(
        outcome.all_answered > outcome.answered,
        "the warm-up's too: {outcome:?}"
    );
    assert_eq!(
        (outcome.connections, outcome.threads, outcome.seconds),
        (3, 2, 0.3)
    );
    let latency = pingpong::latency::decode(outcome.latency_histogram.as_ref().unwrap()).unwrap();
    assert_eq!(latency.len(), outcome.answered);
}

#[test]
fn a_bad_status_or_body_is_counted_by_kind_with_its_words() {
    const FAILING: &[u8] = b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 4\r\n\r\nboom";
    let outcome = load(&plan(Protocol::Http1, None), server(FAILING, false, true));
    assert_eq!(outcome.answered, 0, "{outcome:?}");
    let [failures] = &outcome.errors[..] else {
        panic!("one kind: {outcome:?}");
    };
    assert_eq!(failures.kind, "status 500");
    assert!(failures.first.contains("boom"), "{failures:?}");
    assert!(outcome.latency_histogram.is_none());

    let outcome = load(
        &plan(Protocol::Http1, Some("\"ok\":true")),
        server(
            b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}",
            false,
            true,
        ),
    );
    assert_eq!(outcome.errors[0].kind, "body", "{outcome:?}");
}

#[test]
fn chunked_answers_and_closed_connections_are_read_whole() {
    const CHUNKED: &[u8] =
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\n{\"ok\"\r\n6\r\n:true}\r\n0\r\n\r\n";
    let outcome = load(
        &plan(Protocol::Http1, Some("\"ok\":true")),
        server(CHUNKED, false, true),
    );
    assert!(
        outcome.answered > 0 && outcome.errors.is_empty(),
        "{outcome:?}"
    );

    const CLOSING: &[u8] =
        b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 11\r\n\r\n{\"ok\":true}";
    let outcome = load(
        &plan(Protocol::Http1, Some("\"ok\":true")),
        server(CLOSING, true, true),
    );
    // Each answer on a connection of its own: more answers than connections.
    assert!(
        outcome.answered > 3 && outcome.errors.is_empty(),
        "{outcome:?}"
    );
}

#[test]
fn a_raw_exchange_reads_to_its_delimiter_and_a_closing_service_fails() {
    let mut tcp = plan(Protocol::Tcp, Some("PONG"));
    tcp.requests.clear();
    tcp.exchange = Some(Exchange {
        send: b"PING\n".to_vec(),
        read_bytes: None,
        read_until: Some(b"\n".to_vec()),
    });
    let outcome = load(&tcp, server(b"PONG\n", false, false));
    assert!(
        outcome.answered > 0 && outcome.errors.is_empty(),
        "{outcome:?}"
    );
    assert_eq!(outcome.bytes, outcome.answered * 5);

    // A service that closes before its answer is whole.
    let outcome = load(&tcp, server(b"PO", true, false));
    assert_eq!(outcome.answered, 0, "{outcome:?}");
    assert_eq!(outcome.errors[0].kind, "closed", "{outcome:?}");
}

/// An HTTP/2 server of the test's own (h2's), answering every request
/// with `status` and `body`, for at most ten seconds.
fn h2_server(status: u16, body: &'static [u8]) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let until = tokio::time::Instant::now() + Duration::from_secs(10);
            loop {
                let Ok(Ok((stream, _))) = tokio::time::timeout_at(until, listener.accept()).await
                else {
                    return;
                };
                tokio::spawn(async move {
                    let mut session = h2::server::handshake(stream).await.unwrap();
                    while let Some(Ok((request, mut respond))) = session.accept().await {
                        let mut asked = request.into_body();
                        while let Some(Ok(data)) = asked.data().await {
                            let _ = asked.flow_control().release_capacity(data.len());
                        }
                        let head = http::Response::builder().status(status).body(()).unwrap();
                        let mut send = respond.send_response(head, false).unwrap();
                        let _ = send.send_data(bytes::Bytes::from_static(body), true);
                    }
                });
            }
        });
    });
    addr
}

#[test]
fn http2_answers_are_counted_on_one_stream_at_a_time_and_a_bad_status_is_not() {
    let outcome = load(
        &plan(Protocol::Http2, Some("\"ok\":true")),
        h2_server(200, b"{\"ok\":true}"),
    );
    assert!(
        outcome.answered > 0 && outcome.errors.is_empty(),
        "{outcome:?}"
    );
    // Over HTTP/2 the bodies' bytes are counted, the heads travel compressed.
    assert_eq!(outcome.bytes, outcome.answered * 11);

    let outcome = load(&plan(Protocol::Http2, None), h2_server(503, b"busy"));
    assert_eq!(outcome.answered, 0, "{outcome:?}");
    assert_eq!(outcome.errors[0].kind, "status 503", "{outcome:?}");
    assert!(outcome.errors[0].first.contains("busy"), "{outcome:?}");
}

#[test]
fn the_open_loop_keeps_its_schedule_and_times_answers_from_when_they_were_due() {
    let plan = plan(Protocol::Http1, Some("\"ok\":true"));
    // 200 requests a second over three connections: never more answers in
    // the 0.3 s window than the schedule asks, and some.
    let outcome = load_at(&plan, server(OK, false, true), Some(200.0));
    assert_eq!(outcome.rate, Some(200.0));
    assert!(
        outcome.answered > 0 && outcome.answered <= 60 + 3,
        "{outcome:?}"
    );
    assert!(outcome.errors.is_empty(), "{outcome:?}");

    // A service taking 30 ms an answer, asked every 7.5 ms on each
    // connection: it falls further behind with each request, and the
    // answers it holds up are timed from when they were due (request k of
    // a connection comes back at least 22.5 k ms late), not from when the
    // connection could send them.
    let slow = slow_server(OK, false, true, Duration::from_millis(30));
    let outcome = load_at(&plan, slow, Some(400.0));
    let latency = pingpong::latency::decode(outcome.latency_histogram.as_ref().unwrap()).unwrap();
    assert!(
        latency.max() > 100_000_000,
        "max {} ns: {outcome:?}",
        latency.max()
    );
}
