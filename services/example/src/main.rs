//! A small HTTP service that does what services do on each request: parse
//! JSON, take a shared lock, hand work to the blocking pool, sleep on a
//! timer, answer JSON. HTTP/1.1 and HTTP/2 over cleartext on one port.
//!
//! `example-service --port PORT --threads N`; prints `listening on ADDR`
//! once it serves. `POST /work` with `{"n": N, "sleep_us": US}`: N rounds
//! of hashing on the blocking pool, a sleep of US microseconds, and
//! `{"ok":true,"served":COUNT,"digest":D}`; `GET /health` answers `ok`.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use serde::Deserialize;
use tokio::sync::Mutex;

#[derive(Deserialize)]
struct Work {
    n: u32,
    #[serde(default)]
    sleep_us: u64,
}

/// What every request shares: how many have been served.
type Served = Arc<Mutex<u64>>;

fn main() {
    let (port, threads) = arguments().unwrap_or_else(|why| {
        eprintln!("example-service: {why}\nusage: example-service --port PORT [--threads N]");
        std::process::exit(2)
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(serve(port));
}

fn arguments() -> Result<(u16, usize), String> {
    let (mut port, mut threads) = (None, 1);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next().ok_or(format!("{arg} needs a value"))?;
        let number = |v: &str| v.parse::<usize>().map_err(|e| format!("{arg} {v}: {e}"));
        match arg.as_str() {
            "--port" => port = Some(number(&value)? as u16),
            "--threads" => threads = number(&value)?.max(1),
            _ => return Err(format!("unknown argument {arg}")),
        }
    }
    Ok((port.ok_or("--port is missing")?, threads))
}

async fn serve(port: u16) {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .unwrap_or_else(|e| panic!("binding {addr}: {e}"));
    println!("listening on {addr}");
    let served = Served::default();
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let served = served.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| answer(request, served.clone()));
            let _ = auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn answer(request: Request<Incoming>, served: Served) -> Result<Response<Full<Bytes>>, Infallible> {
    let reply = |status, body: String| {
        let mut response = Response::new(Full::new(Bytes::from(body)));
        *response.status_mut() = status;
        Ok(response)
    };
    match (request.method(), request.uri().path()) {
        (&Method::GET, "/health") => reply(StatusCode::OK, "ok".into()),
        (&Method::POST, "/work") => {
            let body = match request.into_body().collect().await {
                Ok(body) => body.to_bytes(),
                Err(e) => return reply(StatusCode::BAD_REQUEST, format!("reading the body: {e}")),
            };
            let work: Work = match serde_json::from_slice(&body) {
                Ok(work) => work,
                Err(e) => return reply(StatusCode::BAD_REQUEST, format!("not the JSON of /work: {e}")),
            };
            let count = {
                let mut served = served.lock().await;
                *served += 1;
                *served
            };
            let digest = tokio::task::spawn_blocking(move || digest(work.n)).await.unwrap_or(0);
            if work.sleep_us > 0 {
                tokio::time::sleep(Duration::from_micros(work.sleep_us)).await;
            }
            reply(
                StatusCode::OK,
                format!(r#"{{"ok":true,"served":{count},"digest":{digest}}}"#),
            )
        }
        _ => reply(StatusCode::NOT_FOUND, "no such route".into()),
    }
}

/// `n` rounds of FNV-1a over a counter: work the blocking pool does.
fn digest(n: u32) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for round in 0..u64::from(n) * 1000 {
        hash ^= round;
        hash = hash.wrapping_mul(0x100_0000_01b3);
    }
    hash
}
