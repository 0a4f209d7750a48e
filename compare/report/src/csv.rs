//! The report as CSV: one row per cell and run, every numeric field, for
//! spreadsheets and pandas. A cell with no run (unavailable, or failed at
//! its first run) still gets a row, with its status and error. Each row
//! names its cell by the key's fields and label, and has a column for every
//! figure of the registry; the header is the first row's names, which every
//! row puts in the one order.

use anyhow::Result;
use serde_json::Value;

use super::document::{Document, Export};
use model::results::registry::{self, Source};
use model::results::{Cell, Cost, Results, Run};

pub struct Csv;

impl Export for Csv {
    fn files(&self, document: &Document) -> Result<Vec<(String, String)>> {
        Ok(vec![("results.csv".into(), render(document.results)?)])
    }
}

/// One row: its columns' names and values, in order.
#[derive(Default)]
struct Row {
    names: Vec<String>,
    values: Vec<String>,
}

impl Row {
    /// A column: a value as Rust writes it (`1234`, `0.5`), empty where absent.
    fn put(&mut self, name: impl Into<String>, value: Option<impl ToString>) {
        self.names.push(name.into());
        self.values
            .push(value.map_or(String::new(), |v| v.to_string()));
    }
}

fn render(results: &Results) -> Result<String> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    let mut header = None;
    let mut write = |row: Row| -> Result<()> {
        if header.is_none() {
            writer.write_record(&row.names)?;
            header = Some(row.names);
        }
        writer.write_record(&row.values)?;
        Ok(())
    };
    for cell in &results.cells {
        if cell.runs.is_empty() {
            write(row(cell, None, false))?;
        }
        for run in &cell.runs {
            write(row(cell, Some(run), false))?;
        }
        for run in &cell.cost_runs {
            write(row(cell, Some(run), true))?;
        }
    }
    Ok(String::from_utf8(writer.into_inner()?)?)
}

/// The row of `cell` and one of its runs (`cost`: a cost run): the cell's
/// key, what the run recorded, then every figure of the registry that a
/// run of its kind gives.
fn row(cell: &Cell, run: Option<&Run>, cost: bool) -> Row {
    let mut row = Row::default();
    for (name, value) in cell.key().fields() {
        let text = match value {
            Value::String(s) => Some(s),
            Value::Null => None,
            other => Some(other.to_string()),
        };
        row.put(name, text);
    }
    row.put("label", Some(cell.label()));
    // A share's rate as its run's capacity made it.
    row.put("rate_per_s", cell.rate);
    row.put("version", Some(&cell.version));
    row.put("client_version", Some(&cell.client_version));
    let knobs: Vec<String> = cell.knobs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    row.put("knobs", Some(knobs.join(",")));
    row.put("work", Some(cell.work));
    row.put("oversubscribed", Some(cell.placement.oversubscribed));
    row.put("status", Some(format!("{:?}", cell.status).to_lowercase()));
    row.put("cost_run", Some(cost));
    row.put("noisy", Some(cell.noisy));
    row.put(
        "client_bound",
        Some(run.map_or(cell.client_bound, |r| r.client_bound)),
    );
    row.put("order", run.map(|r| r.order));
    recorded(&mut row, run);
    row.put("cost_absent", cell.cost_absent.as_deref());
    let source = match cost {
        true => Source::CostRuns,
        false => Source::Runs,
    };
    for figure in registry::figures() {
        let value = run.filter(|_| figure.source == source);
        row.put(figure.key, value.and_then(|r| figure.of(r, cell.block)));
    }
    row.put("error", cell.error.as_deref());
    row
}

/// What the run recorded that no figure of the registry is: its counts,
/// the other percentiles, the kernel's counters, the open loop's schedule.
fn recorded(row: &mut Row, run: Option<&Run>) {
    row.put("bytes", run.map(|r| r.bytes));
    row.put("seconds", run.map(|r| r.seconds));
    row.put(
        "verified_connections",
        run.and_then(|r| r.verified_connections),
    );
    row.put(
        "starved_connections",
        run.and_then(|r| r.starved_connections),
    );
    let rtt = run.and_then(|r| r.rtt.as_ref());
    row.put("rtt_count", rtt.map(|r| r.count));
    row.put("rtt_mean_us", rtt.map(|r| r.mean_us));
    row.put("rtt_p90_us", rtt.map(|r| r.p90_us));
    row.put("rtt_p999_us", rtt.map(|r| r.p999_us));
    row.put("rtt_max_us", rtt.map(|r| r.max_us));
    let sides = [
        (
            "server",
            run.and_then(|r| r.server_usage),
            run.and_then(|r| r.server_cost),
        ),
        (
            "client",
            run.and_then(|r| r.client_usage),
            run.and_then(|r| r.client_cost),
        ),
    ];
    for (side, usage, cost) in sides {
        let name = |what: &str| format!("{side}_{what}");
        row.put(name("user_percent"), usage.map(|u| u.user_percent));
        row.put(name("system_percent"), usage.map(|u| u.system_percent));
        row.put(name("cpu_ns"), usage.and_then(|u| u.cpu_ns));
        row.put(
            name("voluntary_switches_per_s"),
            usage.map(|u| u.voluntary_switches_per_s),
        );
        row.put(
            name("involuntary_switches_per_s"),
            usage.map(|u| u.involuntary_switches_per_s),
        );
        let count = |kind: fn(&Cost) -> u64| cost.as_ref().map(kind);
        row.put(name("syscalls"), count(|c| c.syscalls));
        row.put(name("reads"), count(|c| c.reads));
        row.put(name("writes"), count(|c| c.writes));
        row.put(name("waits"), count(|c| c.waits));
        row.put(name("futex"), count(|c| c.futex));
    }
    let connect = run.and_then(|r| r.connect.as_ref());
    row.put("connect_p50_us", connect.map(|r| r.p50_us));
    row.put("connect_p99_us", connect.map(|r| r.p99_us));
    row.put("connect_max_us", connect.map(|r| r.max_us));
    let first = run.and_then(|r| r.first_rtt.as_ref());
    row.put("first_rtt_p50_us", first.map(|r| r.p50_us));
    row.put("first_rtt_p99_us", first.map(|r| r.p99_us));
    let tcp = run.and_then(|r| r.tcp);
    row.put("listen_overflows", tcp.map(|t| t.listen_overflows));
    row.put("listen_drops", tcp.map(|t| t.listen_drops));
    row.put("syn_retransmits", tcp.map(|t| t.syn_retransmits));
    row.put("opened_connections", run.and_then(|r| r.opened_connections));
    let open = run.and_then(|r| r.open_loop.as_ref());
    row.put("achieved_per_s", open.map(|o| o.achieved));
    row.put("uncorrected_p50_us", open.map(|o| o.uncorrected.p50_us));
    row.put("uncorrected_p99_us", open.map(|o| o.uncorrected.p99_us));
    row.put("send_lag_p99_us", open.map(|o| o.lag.p99_us));
    row.put("timer_error_p99_us", open.map(|o| o.timer.p99_us));
    row.put("generator_busy", open.map(|o| o.generator_busy));
    row.put(
        "not_sustained",
        open.and_then(|o| o.not_sustained.as_deref()),
    );
    let resumptions = run.and_then(|r| r.resumptions);
    row.put("tls_handshakes", resumptions.map(|r| r.handshakes));
    row.put("tls_with_ticket", resumptions.map(|r| r.with_ticket));
    let datagrams = run.and_then(|r| r.datagrams);
    row.put("datagrams_sent", datagrams.map(|d| d.sent));
    row.put("datagrams_lost", datagrams.map(|d| d.lost));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_has_every_column() {
        let results = model::fixtures::small();
        let text = render(&results).unwrap();
        let mut reader = csv::Reader::from_reader(text.as_bytes());
        let columns = reader.headers().unwrap().len();
        // The key's 13, the cell's 12, the run's 49 and every figure's.
        assert_eq!(columns, 13 + 12 + 49 + 1 + registry::figures().count() + 1);
        let rows: Vec<_> = reader.records().map(Result::unwrap).collect();
        let runs: usize = results
            .cells
            .iter()
            .map(|c| c.runs.len().max(1) + c.cost_runs.len())
            .sum();
        assert_eq!(rows.len(), runs);
        assert!(rows.iter().all(|r| r.len() == columns));
    }
}
