//! The report as CSV: one row per cell and run, every numeric field, for
//! spreadsheets and pandas. A cell with no run (unavailable, or failed at
//! its first run) still gets a row, with its status and error. The columns
//! are the fields of [`Row`]: the header and the values are one definition.

use anyhow::Result;
use serde::{Serialize, Serializer};

use super::document::{Document, Export};
use crate::results::{Cell, Cost, Results, Rtt, Run, Usage};

pub struct Csv;

impl Export for Csv {
    fn files(&self, document: &Document) -> Result<Vec<(String, String)>> {
        Ok(vec![("results.csv".into(), render(document.results)?)])
    }
}

/// A number as Rust writes it (`1234`, `0.5`), empty where absent.
fn number<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => s.serialize_str(&v.to_string()),
        None => s.serialize_none(),
    }
}

/// One row: a cell and one of its runs.
#[derive(Serialize)]
struct Row<'a> {
    runtime: &'a str,
    version: &'a str,
    client: &'a str,
    client_version: &'a str,
    threads: usize,
    client_threads: usize,
    connections: usize,
    block: usize,
    window: usize,
    work: u64,
    oversubscribed: bool,
    status: String,
    cost_run: bool,
    noisy: bool,
    client_bound: bool,
    order: Option<usize>,
    #[serde(serialize_with = "number")]
    mib_per_s: Option<f64>,
    #[serde(serialize_with = "number")]
    messages_per_s: Option<f64>,
    bytes: Option<u64>,
    #[serde(serialize_with = "number")]
    seconds: Option<f64>,
    #[serde(serialize_with = "number")]
    connect_seconds: Option<f64>,
    verified_connections: Option<usize>,
    #[serde(serialize_with = "number")]
    fairness: Option<f64>,
    starved_connections: Option<usize>,
    rtt_count: Option<u64>,
    #[serde(serialize_with = "number")]
    rtt_mean_us: Option<f64>,
    #[serde(serialize_with = "number")]
    rtt_p50_us: Option<f64>,
    #[serde(serialize_with = "number")]
    rtt_p90_us: Option<f64>,
    #[serde(serialize_with = "number")]
    rtt_p95_us: Option<f64>,
    #[serde(serialize_with = "number")]
    rtt_p99_us: Option<f64>,
    #[serde(serialize_with = "number")]
    rtt_p999_us: Option<f64>,
    #[serde(serialize_with = "number")]
    rtt_max_us: Option<f64>,
    #[serde(serialize_with = "number")]
    server_cpu_percent: Option<f64>,
    #[serde(serialize_with = "number")]
    server_user_percent: Option<f64>,
    #[serde(serialize_with = "number")]
    server_system_percent: Option<f64>,
    server_peak_rss_kib: Option<u64>,
    #[serde(serialize_with = "number")]
    server_voluntary_switches_per_s: Option<f64>,
    #[serde(serialize_with = "number")]
    server_involuntary_switches_per_s: Option<f64>,
    #[serde(serialize_with = "number")]
    client_cpu_percent: Option<f64>,
    #[serde(serialize_with = "number")]
    client_user_percent: Option<f64>,
    #[serde(serialize_with = "number")]
    client_system_percent: Option<f64>,
    client_peak_rss_kib: Option<u64>,
    #[serde(serialize_with = "number")]
    client_voluntary_switches_per_s: Option<f64>,
    #[serde(serialize_with = "number")]
    client_involuntary_switches_per_s: Option<f64>,
    #[serde(serialize_with = "number")]
    mib_per_server_cpu_s: Option<f64>,
    server_syscalls: Option<u64>,
    server_reads: Option<u64>,
    server_writes: Option<u64>,
    server_waits: Option<u64>,
    server_futex: Option<u64>,
    server_context_switches: Option<u64>,
    client_syscalls: Option<u64>,
    client_reads: Option<u64>,
    client_writes: Option<u64>,
    client_waits: Option<u64>,
    client_futex: Option<u64>,
    client_context_switches: Option<u64>,
    cost_absent: Option<&'a str>,
    #[serde(serialize_with = "number")]
    window_spread: Option<f64>,
    #[serde(serialize_with = "number")]
    connect_p50_us: Option<f64>,
    #[serde(serialize_with = "number")]
    connect_p99_us: Option<f64>,
    #[serde(serialize_with = "number")]
    connect_max_us: Option<f64>,
    #[serde(serialize_with = "number")]
    first_rtt_p50_us: Option<f64>,
    #[serde(serialize_with = "number")]
    first_rtt_p99_us: Option<f64>,
    listen_overflows: Option<u64>,
    listen_drops: Option<u64>,
    syn_retransmits: Option<u64>,
    opened_connections: Option<u64>,
    rate: Option<u64>,
    #[serde(serialize_with = "number")]
    achieved_per_s: Option<f64>,
    #[serde(serialize_with = "number")]
    uncorrected_p50_us: Option<f64>,
    #[serde(serialize_with = "number")]
    uncorrected_p99_us: Option<f64>,
    #[serde(serialize_with = "number")]
    send_lag_p99_us: Option<f64>,
    #[serde(serialize_with = "number")]
    timer_error_p99_us: Option<f64>,
    #[serde(serialize_with = "number")]
    generator_busy: Option<f64>,
    not_sustained: Option<&'a str>,
    churn: Option<u64>,
    tls: Option<String>,
    tls_handshakes: Option<u64>,
    tls_with_ticket: Option<u64>,
    protocol: &'static str,
    datagrams_sent: Option<u64>,
    datagrams_lost: Option<u64>,
    knobs: String,
    error: &'a str,
}

fn render(results: &Results) -> Result<String> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    for cell in &results.cells {
        if cell.runs.is_empty() {
            writer.serialize(Row::of(cell, None, false))?;
        }
        for run in &cell.runs {
            writer.serialize(Row::of(cell, Some(run), false))?;
        }
        if let Some(run) = &cell.cost_run {
            writer.serialize(Row::of(cell, Some(run), true))?;
        }
    }
    Ok(String::from_utf8(writer.into_inner()?)?)
}

impl<'a> Row<'a> {
    /// The row of `cell` and one of its runs (`cost`: its cost run).
    fn of(cell: &'a Cell, run: Option<&'a Run>, cost: bool) -> Self {
        let rtt = |f: fn(&Rtt) -> f64| run.and_then(|r| r.rtt.as_ref()).map(f);
        let usage =
            |u: fn(&Run) -> Option<Usage>, f: fn(&Usage) -> f64| run.and_then(u).as_ref().map(f);
        let (server, client) = (|r: &Run| r.server_usage, |r: &Run| r.client_usage);
        let count =
            |c: fn(&Run) -> Option<Cost>, f: fn(&Cost) -> u64| run.and_then(c).as_ref().map(f);
        let (server_cost, client_cost) = (|r: &Run| r.server_cost, |r: &Run| r.client_cost);
        let connect = |f: fn(&Rtt) -> f64| run.and_then(|r| r.connect.as_ref()).map(f);
        let first = |f: fn(&Rtt) -> f64| run.and_then(|r| r.first_rtt.as_ref()).map(f);
        let tcp = run.and_then(|r| r.tcp);
        let open = run.and_then(|r| r.open_loop.as_ref());
        let resumptions = run.and_then(|r| r.resumptions);
        Row {
            runtime: &cell.implementation,
            version: &cell.version,
            client: &cell.client,
            client_version: &cell.client_version,
            threads: cell.threads,
            client_threads: cell.load().client_threads(),
            connections: cell.connections,
            block: cell.block,
            window: cell.window,
            work: cell.work,
            oversubscribed: cell.placement.oversubscribed,
            status: format!("{:?}", cell.status).to_lowercase(),
            cost_run: cost,
            noisy: cell.noisy,
            client_bound: run.map_or(cell.client_bound, |r| r.client_bound),
            order: run.map(|r| r.order),
            mib_per_s: run.map(|r| r.mib_per_s),
            messages_per_s: run.map(|r| r.messages_per_s),
            bytes: run.map(|r| r.bytes),
            seconds: run.map(|r| r.seconds),
            connect_seconds: run.and_then(|r| r.connect_seconds),
            verified_connections: run.and_then(|r| r.verified_connections),
            fairness: run.and_then(|r| r.fairness),
            starved_connections: run.and_then(|r| r.starved_connections),
            rtt_count: run.and_then(|r| r.rtt.as_ref()).map(|r| r.count),
            rtt_mean_us: rtt(|r| r.mean_us),
            rtt_p50_us: rtt(|r| r.p50_us),
            rtt_p90_us: rtt(|r| r.p90_us),
            rtt_p95_us: rtt(|r| r.p95_us),
            rtt_p99_us: rtt(|r| r.p99_us),
            rtt_p999_us: rtt(|r| r.p999_us),
            rtt_max_us: rtt(|r| r.max_us),
            server_cpu_percent: usage(server, |u| u.cpu_percent),
            server_user_percent: usage(server, |u| u.user_percent),
            server_system_percent: usage(server, |u| u.system_percent),
            server_peak_rss_kib: run.and_then(server).map(|u| u.peak_rss_kib),
            server_voluntary_switches_per_s: usage(server, |u| u.voluntary_switches_per_s),
            server_involuntary_switches_per_s: usage(server, |u| u.involuntary_switches_per_s),
            client_cpu_percent: usage(client, |u| u.cpu_percent),
            client_user_percent: usage(client, |u| u.user_percent),
            client_system_percent: usage(client, |u| u.system_percent),
            client_peak_rss_kib: run.and_then(client).map(|u| u.peak_rss_kib),
            client_voluntary_switches_per_s: usage(client, |u| u.voluntary_switches_per_s),
            client_involuntary_switches_per_s: usage(client, |u| u.involuntary_switches_per_s),
            mib_per_server_cpu_s: run.and_then(|r| r.mib_per_server_cpu_s),
            server_syscalls: count(server_cost, |c| c.syscalls),
            server_reads: count(server_cost, |c| c.reads),
            server_writes: count(server_cost, |c| c.writes),
            server_waits: count(server_cost, |c| c.waits),
            server_futex: count(server_cost, |c| c.futex),
            server_context_switches: count(server_cost, |c| c.context_switches),
            client_syscalls: count(client_cost, |c| c.syscalls),
            client_reads: count(client_cost, |c| c.reads),
            client_writes: count(client_cost, |c| c.writes),
            client_waits: count(client_cost, |c| c.waits),
            client_futex: count(client_cost, |c| c.futex),
            client_context_switches: count(client_cost, |c| c.context_switches),
            cost_absent: cell.cost_absent.as_deref(),
            window_spread: run.and_then(|r| r.series.as_ref()?.spread()),
            connect_p50_us: connect(|r| r.p50_us),
            connect_p99_us: connect(|r| r.p99_us),
            connect_max_us: connect(|r| r.max_us),
            first_rtt_p50_us: first(|r| r.p50_us),
            first_rtt_p99_us: first(|r| r.p99_us),
            listen_overflows: tcp.map(|t| t.listen_overflows),
            listen_drops: tcp.map(|t| t.listen_drops),
            syn_retransmits: tcp.map(|t| t.syn_retransmits),
            opened_connections: run.and_then(|r| r.opened_connections),
            rate: cell.rate,
            achieved_per_s: open.map(|o| o.achieved),
            uncorrected_p50_us: open.map(|o| o.uncorrected.p50_us),
            uncorrected_p99_us: open.map(|o| o.uncorrected.p99_us),
            send_lag_p99_us: open.map(|o| o.lag.p99_us),
            timer_error_p99_us: open.map(|o| o.timer.p99_us),
            generator_busy: open.map(|o| o.generator_busy),
            not_sustained: open.and_then(|o| o.not_sustained.as_deref()),
            churn: cell.churn,
            tls: cell.tls.map(|t| format!("{t:?}").to_lowercase()),
            tls_handshakes: resumptions.map(|r| r.handshakes),
            tls_with_ticket: resumptions.map(|r| r.with_ticket),
            protocol: cell.protocol.name(),
            datagrams_sent: run.and_then(|r| Some(r.datagrams?.sent)),
            datagrams_lost: run.and_then(|r| Some(r.datagrams?.lost)),
            knobs: cell
                .knobs
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(","),
            error: cell.error.as_deref().unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_has_every_column() {
        let results = super::super::tests::fixture();
        let text = render(&results).unwrap();
        let mut reader = csv::Reader::from_reader(text.as_bytes());
        let columns = reader.headers().unwrap().len();
        assert_eq!(columns, 85);
        let rows: Vec<_> = reader.records().map(Result::unwrap).collect();
        let runs: usize = results
            .cells
            .iter()
            .map(|c| c.runs.len().max(1) + usize::from(c.cost_run.is_some()))
            .sum();
        assert_eq!(rows.len(), runs);
        assert!(rows.iter().all(|r| r.len() == columns));
    }
}
