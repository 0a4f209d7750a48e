//! What recording round-trip times costs: a client session taking 16 KiB
//! blocks inside the window, with and without its clock. The difference per
//! block, over the time a block takes at the suite's highest message rate,
//! is the share of throughput recording can cost (see README.md).

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pingpong::Client;
use pingpong::client::{ClientConfig, Session};
use pingpong::protocol::pattern;

const BLOCK: usize = 16384;

fn session(c: &mut Criterion) {
    let mut group = c.benchmark_group("one 16 KiB block through a client session");
    group.throughput(Throughput::Bytes(BLOCK as u64));
    for latency in [false, true] {
        let client = Client::new(ClientConfig {
            protocol: Default::default(),
            connect: "127.0.0.1:1".parse().unwrap(),
            threads: 1,
            connections: 1,
            block: BLOCK,
            warmup: Duration::ZERO,
            seconds: Duration::from_secs(3600),
            latency,
            window: 1,
            blocks: None,
            arrival: Default::default(),
            churn: None,
            rate: None,
            tls: None,
            knobs: Default::default(),
            start_signal: false,
        });
        client.open_window();
        let mut session = Session::new(&client);
        session.first_block();
        let block = pattern(BLOCK);
        let name = if latency {
            "recording RTT"
        } else {
            "--no-latency"
        };
        group.bench_function(name, |b| {
            b.iter(|| session.on_data(black_box(&block)).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, session);
criterion_main!(benches);
