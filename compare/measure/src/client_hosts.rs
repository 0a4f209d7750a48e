//! Clients on other hosts (`--client-host ssh://HOST`, repeatable): our
//! client started over ssh on each, the connections split among them. Each
//! connects its share and waits; one signal starts them all, and each
//! reports its window's edges on its own clock after it, which says how
//! well the windows lined up. Throughput is summed and round trips merged,
//! histogram into histogram, never an average of percentiles; each host's
//! own figures stay beside the merged ones.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, ensure};
use pingpong::cli::{Cli, ClientArgs, Command};
use pingpong::client::ClientConfig;
use pingpong::latency;
use pingpong::wire::{ClientResult, Datagrams, Line};

use crate::child::{Child, Counting, EXIT_DEADLINE};
use crate::remote::Ssh;
use crate::repetition::{RepetitionError, Side};
use model::results::{ClientHosts, HostPart, Rtt};

/// The least share of a window that every host's window must cover at
/// once: below it, the hosts measured different spans.
pub const OVERLAP: f64 = 0.5;
/// Slack on each deadline: ssh and a loaded host are slow.
const MARGIN: Duration = Duration::from_secs(5);

/// One repetition's clients on `hosts`, `bin`'s name in each host's bin
/// folder; `args` are the whole client's and `knobs` its configuration's.
/// What they measured, merged, and each host's part.
pub fn run(
    hosts: &[Ssh],
    bin: &Path,
    args: &ClientArgs,
    knobs: &str,
    config: &ClientConfig,
) -> Result<(ClientResult, ClientHosts), RepetitionError> {
    let name = bin.file_name().context("a binary has no file name")?;
    let shares = split(args.connections as usize, hosts.len());
    let mut clients = Vec::new();
    for (ssh, &share) in hosts.iter().zip(&shares) {
        let args = ClientArgs {
            connections: share as u32,
            start_signal: true,
            // Its usage is not sampled from here: nothing to linger for.
            linger: false,
            ..args.clone()
        };
        let mut words = vec![ssh.bin_dir.join(name).to_string_lossy().into_owned()];
        words.extend(
            Cli {
                command: Command::Client(args),
                knobs: knobs.into(),
            }
            .to_args(),
        );
        let off = Counting::Off("the client runs on another host");
        let child = Child::spawn(
            "client",
            Path::new(&ssh.program),
            &ssh.args(&words),
            &[],
            off,
        )
        .map_err(|e| at(ssh, e.into()))?;
        clients.push((ssh, child));
    }
    let connected = Instant::now() + config.connect_deadline() + MARGIN;
    for (ssh, child) in &mut clients {
        match next(ssh, child, connected, "connecting")? {
            Line::Connected => {}
            other => {
                return Err(at(
                    ssh,
                    anyhow!("printed {other:?}, not that it connected").into(),
                ));
            }
        }
    }
    for (ssh, child) in &mut clients {
        child
            .send_line("start")
            .map_err(|e| at(ssh, e.context("sending the start signal").into()))?;
    }
    let measured = Instant::now()
        + config.warmup
        + config.first_round_deadline()
        + config.window_deadline()
        + config.drain_deadline()
        + MARGIN;
    let mut results = Vec::new();
    for ((ssh, child), &share) in clients.iter_mut().zip(&shares) {
        let result = loop {
            match next(ssh, child, measured, "measuring")? {
                Line::Window(_) => {}
                Line::Result(result) => break *result,
                other => return Err(at(ssh, anyhow!("printed {other:?}, not its result").into())),
            }
        };
        let status = child.wait(EXIT_DEADLINE).map_err(|e| at(ssh, e.into()))?;
        if !status.success() {
            return Err(at(
                ssh,
                anyhow!("exited with {status} after its result").into(),
            ));
        }
        let asked = (
            args.sizes.threads as usize,
            share,
            args.sizes.block as usize,
        );
        if (result.threads, result.connections, result.block) != asked {
            return Err(at(
                ssh,
                anyhow!(
                    "ran {} threads, {} connections, block {} instead of {asked:?}",
                    result.threads,
                    result.connections,
                    result.block
                )
                .into(),
            ));
        }
        results.push((ssh.url.clone(), result));
    }
    let parts = parts(&results)?;
    Ok((merge(results.into_iter().map(|(_, r)| r).collect())?, parts))
}

/// `connections` split among `hosts` as evenly as they go, the first hosts
/// one more where they do not.
fn split(connections: usize, hosts: usize) -> Vec<usize> {
    (0..hosts)
        .map(|i| connections / hosts + usize::from(i < connections % hosts))
        .collect()
}

/// The next line of `ssh`'s client before `deadline`; its error line or
/// its silence, as a failure of that host.
fn next(
    ssh: &Ssh,
    child: &mut Child,
    deadline: Instant,
    stage: &str,
) -> Result<Line, RepetitionError> {
    match child.next_line(deadline, stage, Line::parse) {
        Ok(Line::Error(f)) => Err(at(ssh, RepetitionError::of_failure(Side::Client, f))),
        Ok(line) => Ok(line),
        Err(e) => Err(at(ssh, e.into())),
    }
}

/// `error`, named with the host whose client it is.
fn at(ssh: &Ssh, error: RepetitionError) -> RepetitionError {
    match error {
        RepetitionError::Unavailable {
            side,
            short,
            message,
        } => RepetitionError::Unavailable {
            side,
            short,
            message: format!("client host {}: {message}", ssh.url),
        },
        RepetitionError::Failed(e) => anyhow!("client host {}: {e:#}", ssh.url).into(),
    }
}

/// Each host's part, and how far apart their windows opened; fails where
/// the windows, each on its host's clock after the signal, cover less than
/// [`OVERLAP`] of a window at once.
fn parts(results: &[(String, ClientResult)]) -> Result<ClientHosts> {
    let mut parts = Vec::new();
    for (host, r) in results {
        let window = r
            .window_edges
            .with_context(|| format!("client host {host}: its result has no window edges"))?;
        // A host that lies about its window would make every figure of the
        // merge infinite or meaningless.
        let sane = |t: f64| t.is_finite() && t >= 0.0;
        ensure!(
            sane(window[0]) && sane(window[1]) && window[1] > window[0],
            "client host {host}: its window opened at {} s and closed at {} s",
            window[0],
            window[1]
        );
        ensure!(
            sane(r.seconds) && r.seconds > 0.0 && sane(r.connect_seconds),
            "client host {host}: it measured for {} s after connecting for {} s",
            r.seconds,
            r.connect_seconds
        );
        parts.push(HostPart {
            host: host.clone(),
            connections: r.connections,
            bytes: r.bytes,
            seconds: r.seconds,
            mib_per_s: r.mib_per_s(),
            rtt: r
                .rtt_histogram
                .clone()
                .map(Rtt::from_histogram)
                .transpose()?,
            window,
        });
    }
    let opened = parts.iter().map(|p| p.window[0]);
    let closed = parts.iter().map(|p| p.window[1]);
    let (first, last) = opened.fold((f64::MAX, f64::MIN), |(lo, hi), t| (lo.min(t), hi.max(t)));
    let common = closed.fold(f64::MAX, f64::min) - last;
    let window = parts.iter().map(|p| p.window[1] - p.window[0]).sum::<f64>() / parts.len() as f64;
    ensure!(
        common >= OVERLAP * window,
        "the client hosts' windows were open together for {common:.3} s of {window:.3} s (they \
         opened {:.3} s apart): their figures are not of one span",
        last - first
    );
    Ok(ClientHosts {
        skew_seconds: last - first,
        parts,
    })
}

/// The hosts' results as one client's: bytes and counts summed, the
/// throughput the sum of theirs, histograms merged, fairness over every
/// connection.
fn merge(results: Vec<ClientResult>) -> Result<ClientResult> {
    let first = results.first().context("no client host measured")?.clone();
    let sum = |f: fn(&ClientResult) -> u64| results.iter().map(f).sum::<u64>();
    let all = |f: fn(&ClientResult) -> Option<u64>| results.iter().map(f).sum::<Option<u64>>();
    let bytes = sum(|r| r.bytes);
    let rate: f64 = results.iter().map(|r| r.bytes as f64 / r.seconds).sum();
    let histogram = |f: fn(&ClientResult) -> Option<&String>| -> Result<Option<String>> {
        let encoded: Option<Vec<&str>> = results.iter().map(|r| f(r).map(String::as_str)).collect();
        Ok(encoded.map(latency::merge).transpose()?)
    };
    let lengths: Vec<usize> = results.iter().map(|r| r.series.len()).collect();
    let series = match lengths.windows(2).all(|w| w[0] == w[1]) {
        true => (0..lengths[0])
            .map(|i| results.iter().map(|r| r.series[i]).sum())
            .collect(),
        false => Vec::new(),
    };
    Ok(ClientResult {
        connections: results.iter().map(|r| r.connections).sum(),
        bytes,
        // What makes bytes / seconds the sum of the hosts' throughputs.
        seconds: if rate > 0.0 {
            bytes as f64 / rate
        } else {
            first.seconds
        },
        connect_seconds: results
            .iter()
            .map(|r| r.connect_seconds)
            .fold(0.0, f64::max),
        verified_connections: results.iter().map(|r| r.verified_connections).sum(),
        fairness: fairness(&results),
        starved_connections: results.iter().map(|r| r.starved_connections).sum(),
        rtt_histogram: histogram(|r| r.rtt_histogram.as_ref())?,
        connect_histogram: histogram(|r| r.connect_histogram.as_ref())?,
        first_rtt_histogram: histogram(|r| r.first_rtt_histogram.as_ref())?,
        opened_connections: all(|r| r.opened_connections),
        datagrams: results
            .iter()
            .map(|r| r.datagrams)
            .collect::<Option<Vec<Datagrams>>>()
            .map(|d| Datagrams {
                sent: d.iter().map(|d| d.sent).sum(),
                lost: d.iter().map(|d| d.lost).sum(),
            }),
        cpus: Vec::new(),
        slice_seconds: if series.is_empty() {
            Vec::new()
        } else {
            first.slice_seconds.clone()
        },
        series,
        window_edges: None,
        ..first
    })
}

/// Jain's index over every host's connections, from each host's own: a
/// host of n connections moving S bytes at index J has Σx² = S² / (n J).
fn fairness(results: &[ClientResult]) -> Option<f64> {
    let mut squares = 0.0;
    for r in results {
        let (s, n, j) = (r.bytes as f64, r.connections as f64, r.fairness?);
        if s > 0.0 {
            squares += s * s / (n * j);
        }
    }
    let total: f64 = results.iter().map(|r| r.bytes as f64).sum();
    let n: f64 = results.iter().map(|r| r.connections as f64).sum();
    (squares > 0.0).then(|| total * total / (n * squares))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host's result: `connections` of which each moved `bytes`, in a
    /// window from `opened` to `closed` after the signal, round trips of
    /// `rtt_us` each.
    fn host(connections: usize, bytes: u64, rtt_us: u64, opened: f64, closed: f64) -> ClientResult {
        let mut h = latency::histogram();
        for _ in 0..bytes * connections as u64 / 16384 {
            h.record(rtt_us * 1000).unwrap();
        }
        ClientResult {
            threads: 1,
            connections,
            block: 16384,
            bytes: bytes * connections as u64,
            seconds: closed - opened,
            connect_seconds: 0.1,
            verified_connections: connections,
            fairness: Some(1.0),
            starved_connections: 0,
            rtt_histogram: Some(latency::encode(&h)),
            connect_histogram: None,
            first_rtt_histogram: None,
            opened_connections: None,
            open_loop: None,
            tls: None,
            datagrams: None,
            cpus: vec![0],
            series: vec![bytes * connections as u64],
            slice_seconds: vec![closed - opened],
            window_edges: Some([opened, closed]),
        }
    }

    #[test]
    fn connections_split_as_evenly_as_they_go() {
        assert_eq!(split(10, 2), [5, 5]);
        assert_eq!(split(10, 3), [4, 3, 3]);
        assert_eq!(split(2, 2), [1, 1]);
    }

    #[test]
    fn hosts_merge_into_one_client_their_sums_and_histograms() {
        let fast = host(3, 16384 * 100, 100, 0.10, 0.60);
        let slow = host(2, 16384 * 10, 10_000, 0.12, 0.62);
        let merged = merge(vec![fast.clone(), slow.clone()]).unwrap();
        assert_eq!(merged.connections, 5);
        assert_eq!(merged.bytes, fast.bytes + slow.bytes);
        let summed = fast.mib_per_s() + slow.mib_per_s();
        assert!(
            (merged.mib_per_s() - summed).abs() < 1e-9,
            "{} {summed}",
            merged.mib_per_s()
        );
        let rtt = Rtt::from_histogram(merged.rtt_histogram.unwrap()).unwrap();
        assert_eq!(rtt.count, 300 + 20, "every round trip of each");
        assert!(rtt.p50_us < 200.0 && rtt.max_us > 9_000.0, "{rtt:?}");
        assert_eq!(merged.series, [fast.bytes + slow.bytes]);
        // Ten times the bytes per connection on one host: far from even.
        let j = merged.fairness.unwrap();
        let per = [100.0f64, 100.0, 100.0, 10.0, 10.0];
        let jain = per.iter().sum::<f64>().powi(2) / (5.0 * per.iter().map(|x| x * x).sum::<f64>());
        assert!((j - jain).abs() < 1e-9, "{j} {jain}");
    }

    #[test]
    fn windows_that_barely_overlap_are_refused_and_the_skew_is_kept() {
        let aligned = [
            ("ssh://a".to_string(), host(1, 16384, 100, 0.10, 0.60)),
            ("ssh://b".to_string(), host(1, 16384, 100, 0.15, 0.65)),
        ];
        let hosts = parts(&aligned).unwrap();
        assert!((hosts.skew_seconds - 0.05).abs() < 1e-9);
        assert_eq!(hosts.parts[1].host, "ssh://b");
        assert_eq!(hosts.parts[1].rtt.as_ref().unwrap().count, 1);
        let apart = [
            ("ssh://a".to_string(), host(1, 16384, 100, 0.10, 0.60)),
            ("ssh://b".to_string(), host(1, 16384, 100, 0.45, 0.95)),
        ];
        let refused = parts(&apart).unwrap_err().to_string();
        assert!(
            refused.contains("open together for 0.150 s of 0.500 s"),
            "{refused}"
        );
    }

    proptest::proptest! {
        #[test]
        fn hosts_that_lie_about_their_windows_are_refused_or_merge_to_finite_figures(
            edges in proptest::collection::vec(
                (-1e3f64..1e3, proptest::num::f64::ANY, 0u64..1 << 40, 0.0f64..2.0),
                1..4,
            ),
        ) {
            let results: Vec<(String, ClientResult)> = edges
                .iter()
                .enumerate()
                .map(|(i, &(opened, closed, bytes, seconds))| {
                    let mut r = host(1, 16384, 100, 0.1, 0.6);
                    r.window_edges = Some([opened, closed]);
                    r.bytes = bytes;
                    r.seconds = seconds;
                    (format!("ssh://{i}"), r)
                })
                .collect();
            if parts(&results).is_ok() {
                let merged = merge(results.into_iter().map(|(_, r)| r).collect()).unwrap();
                proptest::prop_assert!(merged.mib_per_s().is_finite(), "{merged:?}");
            }
        }
    }
}
