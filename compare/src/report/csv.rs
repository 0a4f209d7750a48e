//! The report as CSV: one row per cell and run, every numeric field, for
//! spreadsheets and pandas. A cell with no run (unavailable, or failed at
//! its first run) still gets a row, with its status and error.

use anyhow::Result;

use super::document::{Document, Export};
use crate::results::Usage;
use crate::results::{Cell, Cost, Results, Run};

pub struct Csv;

impl Export for Csv {
    fn files(&self, document: &Document) -> Result<Vec<(String, String)>> {
        Ok(vec![("results.csv".into(), render(document.results)?)])
    }
}

const HEADER: &[&str] = &[
    "runtime",
    "version",
    "client",
    "client_version",
    "threads",
    "connections",
    "block",
    "window",
    "work",
    "oversubscribed",
    "status",
    "cost_run",
    "noisy",
    "order",
    "mib_per_s",
    "messages_per_s",
    "bytes",
    "seconds",
    "connect_seconds",
    "verified_connections",
    "fairness",
    "starved_connections",
    "rtt_count",
    "rtt_mean_us",
    "rtt_p50_us",
    "rtt_p90_us",
    "rtt_p95_us",
    "rtt_p99_us",
    "rtt_p999_us",
    "rtt_max_us",
    "server_cpu_percent",
    "server_user_percent",
    "server_system_percent",
    "server_peak_rss_kib",
    "server_voluntary_switches_per_s",
    "server_involuntary_switches_per_s",
    "client_cpu_percent",
    "client_user_percent",
    "client_system_percent",
    "client_peak_rss_kib",
    "client_voluntary_switches_per_s",
    "client_involuntary_switches_per_s",
    "mib_per_server_cpu_s",
    "server_syscalls",
    "server_reads",
    "server_writes",
    "server_waits",
    "server_futex",
    "server_context_switches",
    "client_syscalls",
    "client_reads",
    "client_writes",
    "client_waits",
    "client_futex",
    "client_context_switches",
    "cost_absent",
    "window_spread",
    "connect_p50_us",
    "connect_p99_us",
    "connect_max_us",
    "first_rtt_p50_us",
    "first_rtt_p99_us",
    "listen_overflows",
    "listen_drops",
    "syn_retransmits",
    "opened_connections",
    "rate",
    "achieved_per_s",
    "uncorrected_p50_us",
    "uncorrected_p99_us",
    "send_lag_p99_us",
    "timer_error_p99_us",
    "generator_busy",
    "not_sustained",
    "churn",
    "tls",
    "tls_handshakes",
    "tls_with_ticket",
    "knobs",
    "error",
];

fn render(results: &Results) -> Result<String> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(HEADER)?;
    for cell in &results.cells {
        if cell.runs.is_empty() {
            writer.write_record(record(cell, None, false))?;
        }
        for run in &cell.runs {
            writer.write_record(record(cell, Some(run), false))?;
        }
        if let Some(run) = &cell.cost_run {
            writer.write_record(record(cell, Some(run), true))?;
        }
    }
    Ok(String::from_utf8(writer.into_inner()?)?)
}

/// A row: the cell, and one of its runs (`cost`: its cost run).
fn record(cell: &Cell, run: Option<&Run>, cost: bool) -> Vec<String> {
    let text = |v: Option<String>| v.unwrap_or_default();
    let number = |v: Option<f64>| text(v.map(|v| v.to_string()));
    let rtt = run.and_then(|r| r.rtt.as_ref());
    let usage = |u: Option<Usage>| {
        [
            number(u.map(|u| u.cpu_percent)),
            number(u.map(|u| u.user_percent)),
            number(u.map(|u| u.system_percent)),
            text(u.map(|u| u.peak_rss_kib.to_string())),
            number(u.map(|u| u.voluntary_switches_per_s)),
            number(u.map(|u| u.involuntary_switches_per_s)),
        ]
    };
    let mut row = vec![
        cell.implementation.clone(),
        cell.version.clone(),
        cell.client.clone(),
        cell.client_version.clone(),
        cell.threads.to_string(),
        cell.connections.to_string(),
        cell.block.to_string(),
        cell.window.to_string(),
        cell.work.to_string(),
        cell.placement.oversubscribed.to_string(),
        format!("{:?}", cell.status).to_lowercase(),
        cost.to_string(),
        cell.noisy.to_string(),
        text(run.map(|r| r.order.to_string())),
        number(run.map(|r| r.mib_per_s)),
        number(run.map(|r| r.messages_per_s)),
        text(run.map(|r| r.bytes.to_string())),
        number(run.map(|r| r.seconds)),
        number(run.and_then(|r| r.connect_seconds)),
        text(
            run.and_then(|r| r.verified_connections)
                .map(|v| v.to_string()),
        ),
        number(run.and_then(|r| r.fairness)),
        text(
            run.and_then(|r| r.starved_connections)
                .map(|s| s.to_string()),
        ),
        text(rtt.map(|r| r.count.to_string())),
        number(rtt.map(|r| r.mean_us)),
        number(rtt.map(|r| r.p50_us)),
        number(rtt.map(|r| r.p90_us)),
        number(rtt.map(|r| r.p95_us)),
        number(rtt.map(|r| r.p99_us)),
        number(rtt.map(|r| r.p999_us)),
        number(rtt.map(|r| r.max_us)),
    ];
    row.extend(usage(run.and_then(|r| r.server_usage)));
    row.extend(usage(run.and_then(|r| r.client_usage)));
    row.push(number(run.and_then(|r| r.mib_per_server_cpu_s)));
    let counts = |c: Option<Cost>| {
        [
            c.map(|c| c.syscalls),
            c.map(|c| c.reads),
            c.map(|c| c.writes),
            c.map(|c| c.waits),
            c.map(|c| c.futex),
            c.map(|c| c.context_switches),
        ]
        .map(|n| text(n.map(|n| n.to_string())))
    };
    row.extend(counts(run.and_then(|r| r.server_cost)));
    row.extend(counts(run.and_then(|r| r.client_cost)));
    row.push(text(cell.cost_absent.clone()));
    row.push(number(run.and_then(|r| r.series.as_ref()?.spread())));
    let (connect, first) = (
        run.and_then(|r| r.connect.as_ref()),
        run.and_then(|r| r.first_rtt.as_ref()),
    );
    row.extend([
        number(connect.map(|r| r.p50_us)),
        number(connect.map(|r| r.p99_us)),
        number(connect.map(|r| r.max_us)),
        number(first.map(|r| r.p50_us)),
        number(first.map(|r| r.p99_us)),
    ]);
    let tcp = run.and_then(|r| r.tcp);
    row.extend(
        [
            tcp.map(|t| t.listen_overflows),
            tcp.map(|t| t.listen_drops),
            tcp.map(|t| t.syn_retransmits),
            run.and_then(|r| r.opened_connections),
        ]
        .map(|n| text(n.map(|n| n.to_string()))),
    );
    let open = run.and_then(|r| r.open_loop.as_ref());
    row.extend([
        text(cell.rate.map(|r| r.to_string())),
        number(open.map(|o| o.achieved)),
        number(open.map(|o| o.uncorrected.p50_us)),
        number(open.map(|o| o.uncorrected.p99_us)),
        number(open.map(|o| o.lag.p99_us)),
        number(open.map(|o| o.timer.p99_us)),
        number(open.map(|o| o.generator_busy)),
        text(open.and_then(|o| o.not_sustained.clone())),
    ]);
    let resumptions = run.and_then(|r| r.resumptions);
    row.extend([
        text(cell.churn.map(|c| c.to_string())),
        text(cell.tls.map(|t| format!("{t:?}").to_lowercase())),
        text(resumptions.map(|r| r.handshakes.to_string())),
        text(resumptions.map(|r| r.with_ticket.to_string())),
        cell.knobs
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(","),
    ]);
    row.push(cell.error.clone().unwrap_or_default());
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_has_every_column() {
        let results = super::super::tests::fixture();
        let text = render(&results).unwrap();
        let mut reader = csv::Reader::from_reader(text.as_bytes());
        assert_eq!(reader.headers().unwrap().len(), HEADER.len());
        let rows: Vec<_> = reader.records().map(Result::unwrap).collect();
        let runs: usize = results
            .cells
            .iter()
            .map(|c| c.runs.len().max(1) + usize::from(c.cost_run.is_some()))
            .sum();
        assert_eq!(rows.len(), runs);
        assert!(rows.iter().all(|r| r.len() == HEADER.len()));
    }
}
