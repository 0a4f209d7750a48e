//! The arrivals tables: how the connections came up, where the run asked
//! for immediate arrival or churn, or the kernel counted connection
//! trouble. A server whose accept queue overflows while it serves makes
//! clients wait seconds for SYN retransmissions; the throughput tables do
//! not show it.

use pingpong::client::Arrival;

use super::grid::{Entry, Grid, View};
use model::results::TcpStats;
use model::results::{Cell, Results, Rtt, Run, Status};
use model::stats::median;

/// What the arrivals tables' columns mean.
const LEGEND: &str = "Arrival tables: medians of the runs; all up = seconds until every \
    connection was connected; connect = each connection's time to connect, SYN retransmissions \
    included; 1st RTT = each connection's first round trip, which with immediate arrival also \
    waits for the server to accept it; overflows, drops, SYN retrans = what the kernel counted \
    over each run (TcpExt ListenOverflows, ListenDrops, TCPSynRetrans: the whole machine's), \
    median [max]";

/// What the columns churn adds mean.
const CHURN_LEGEND: &str = "With churn: conn/s = connections opened per second inside the \
    window (each one replacing one closed), round trips/s = blocks round-tripped per second";

/// What the arrivals tables' columns mean, as the run has them.
pub fn legend(results: &Results) -> String {
    let runs = || results.cells.iter().flat_map(|c| &c.runs);
    let mut legend = LEGEND.to_string();
    if runs().any(|r| r.accept_queue.is_some()) {
        legend = format!("{legend}; {QUEUE_LEGEND}");
    }
    if results.cells.iter().any(|c| c.churn.is_some()) {
        legend = format!("{legend}; {CHURN_LEGEND}");
    }
    legend
}

/// What the columns of the sampled accept queue mean.
const QUEUE_LEGEND: &str = "queue peak = the most connections seen waiting in the server's \
    accept queue at once, sampled every 5 ms from the client's start (sock_diag); all accepted s \
    = when the queue was last seen holding one, or when all were up if that was later";

const QUEUE_HEADER: [&str; 2] = ["queue peak", "all accepted s"];

/// Seconds from the client's start until the server had accepted every
/// connection, as near as the samples tell: none can be accepted before it
/// is up, and the last one waiting was seen then.
pub fn all_accepted(run: &Run) -> Option<f64> {
    let held = run.accept_queue.as_ref()?.held_seconds();
    Some(run.connect_seconds.map_or(held, |up| up.max(held)))
}

const HEADER: [&str; 10] = [
    "implementation",
    "all up s",
    "connect p50 ms",
    "connect p99 ms",
    "connect max ms",
    "1st RTT p50 ms",
    "1st RTT p99 ms",
    "overflows",
    "drops",
    "SYN retrans",
];

/// One table per load, where the run's connections arrived immediately or
/// churned, or a run of the load counted listen drops or SYN retransmissions.
pub fn tables(view: &View) -> Vec<Grid> {
    let arrival = view.results.config.arrival();
    let immediate = arrival != Arrival::Gated;
    let churn = view.workload.churn;
    let mut header: Vec<String> = HEADER.iter().map(ToString::to_string).collect();
    // Runs from before the queue was sampled keep the columns they had.
    let queued = view
        .results
        .cells
        .iter()
        .flat_map(|c| &c.runs)
        .any(|r| r.accept_queue.is_some());
    if queued {
        header.extend(QUEUE_HEADER.iter().map(ToString::to_string));
    }
    if churn.is_some() {
        header.extend(["conn/s".into(), "round trips/s".into()]);
    }
    view.loads
        .iter()
        .filter_map(|&load| {
            let cells: Vec<&Cell> = view.cells_at(load).collect();
            let troubled = cells
                .iter()
                .flat_map(|c| &c.runs)
                .any(|r| r.tcp.is_some_and(|t| t.troubles().is_some()));
            let measured = cells
                .iter()
                .flat_map(|c| &c.runs)
                .any(|r| r.connect.is_some() || r.tcp.is_some());
            // Where the run has several workloads, the title names this one's churn.
            let how: String = [
                match arrival {
                    Arrival::Gated => None,
                    Arrival::Immediate => Some(", immediate start".to_string()),
                    Arrival::Storm => Some(", a connect storm".to_string()),
                },
                churn
                    .filter(|_| !view.several)
                    .map(|n| format!(", a new connection every {n} blocks")),
            ]
            .into_iter()
            .flatten()
            .collect();
            (measured && (immediate || troubled || churn.is_some())).then(|| Grid {
                title: view.titled(format!("Arrivals, {}{how}", load.label())),
                header: header.clone(),
                rows: cells
                    .into_iter()
                    .map(|c| row(c, queued, churn.is_some()))
                    .collect(),
            })
        })
        .collect()
}

fn row(cell: &Cell, queued: bool, churn: bool) -> Vec<Entry> {
    let runs: &[Run] = match cell.status {
        Status::Ok => &cell.runs,
        _ => &[],
    };
    let of = |pick: &dyn Fn(&Run) -> Option<f64>, scale: f64, digits: usize| {
        let values: Vec<f64> = runs.iter().filter_map(pick).collect();
        median(&values).map_or("-".into(), |m| format!("{:.digits$}", m * scale))
    };
    let ms = |rtt: fn(&Run) -> Option<&Rtt>, quantile: fn(&Rtt) -> f64| {
        of(&|r| rtt(r).map(quantile), 1e-3, 1)
    };
    let count = |pick: fn(&TcpStats) -> u64| {
        let values: Vec<f64> = runs
            .iter()
            .filter_map(|r| r.tcp.map(|t| pick(&t) as f64))
            .collect();
        match (median(&values), values.iter().copied().reduce(f64::max)) {
            (Some(m), Some(max)) if max > m => format!("{m:.0} [{max:.0}]"),
            (Some(m), _) => format!("{m:.0}"),
            _ => "-".into(),
        }
    };
    let mut row = vec![
        cell.implementation.clone(),
        of(&|r| r.connect_seconds, 1.0, 2),
        ms(|r| r.connect.as_ref(), |t| t.p50_us),
        ms(|r| r.connect.as_ref(), |t| t.p99_us),
        ms(|r| r.connect.as_ref(), |t| t.max_us),
        ms(|r| r.first_rtt.as_ref(), |t| t.p50_us),
        ms(|r| r.first_rtt.as_ref(), |t| t.p99_us),
        count(|t| t.listen_overflows),
        count(|t| t.listen_drops),
        count(|t| t.syn_retransmits),
    ];
    if queued {
        row.push(of(
            &|r| Some(r.accept_queue.as_ref()?.peak() as f64),
            1.0,
            0,
        ));
        row.push(of(&all_accepted, 1.0, 2));
    }
    if churn {
        row.push(of(
            &|r| Some(r.opened_connections? as f64 / r.seconds),
            1.0,
            0,
        ));
        row.push(of(&|r| Some(r.messages_per_s), 1.0, 0));
    }
    row.into_iter().map(Entry::plain).collect()
}
