//! The TLS tables of a `--tls` run: what TLS costs each implementation
//! against its own plain twin from the same interleaved run (throughput and
//! CPU per block on both sides), and handshakes per second, full and
//! resumed, beside plain TCP connections per second.

use super::grid::{Entry, Grid, View, bound, median_of, ok, ratios, unavailable};
use super::open_loop::runs_median;
use model::matrix::{Load, Tls, Workload};
use model::results::{Cell, Results, Run};

/// What the TLS tables' columns mean.
pub const LEGEND: &str = "TLS tables: TLS/plain = median MiB/s inside TLS over the same \
    implementation's median over plain TCP at the same load, from the same interleaved run, \
    [95% bootstrap interval]; us/block = CPU microseconds per block, server and client, plain \
    TCP then TLS (the difference is what the encryption costs on that side). Handshake tables: \
    a new connection after every block; conn/s = connections opened per second inside the \
    window, over plain TCP, inside TLS (full handshakes), inside TLS with resumption; server \
    us/conn = the server's CPU microseconds per connection, accept and handshake included; \
    ticket % = handshakes (warm-up included) that offered a session ticket; 0 conn/s: no \
    connection came up inside the window, where one round of every connection's handshake \
    outlasts it (lengthen --seconds)";

/// The run's TLS settings in a sentence, for the notes.
pub fn settings(results: &Results) -> Option<String> {
    let t = results.config.tls.as_ref()?;
    Some(format!(
        "TLS: {}, {}, {}; {}; certificate {}; no tickets, no session cache unless \"with \
         resumption\"; kernel TLS (kTLS): {}",
        t.version, t.suite, t.group, t.provider, t.certificate, t.kernel_tls
    ))
}

/// Every TLS table: per steady workload, TLS over plain by load, then one
/// per load with the costs; per churning workload, handshakes per load.
pub fn tables(results: &Results) -> Vec<Grid> {
    let views = View::all(results);
    let twin = |workload: Workload| views.iter().find(|v| v.workload == workload);
    let mut grids = Vec::new();
    for tls in views.iter().filter(|v| v.workload.tls == Some(Tls::Full)) {
        let Some(plain) = twin(tls.workload.plain()) else {
            continue;
        };
        match tls.workload.churn {
            None => {
                let title = format!(
                    "TLS / plaintext ({}): median MiB/s inside TLS over the same \
                     implementation's plain TCP [95% interval]",
                    plain.workload.label()
                );
                grids.push(ratios(plain, tls, title));
                grids.extend(tls.loads.iter().map(|&l| costs(plain, tls, l)));
            }
            Some(_) => {
                let resumed = twin(Workload {
                    tls: Some(Tls::Resumption),
                    ..tls.workload
                });
                grids.extend(
                    tls.loads
                        .iter()
                        .map(|&l| handshakes(plain, tls, resumed, l)),
                );
            }
        }
    }
    grids
}

/// A summary for the terminal: the ratio tables and the handshake tables.
pub fn summary(results: &Results) -> Vec<Grid> {
    tables(results)
        .into_iter()
        .filter(|g| !g.title.starts_with(COSTS))
        .collect()
}

const COSTS: &str = "TLS against plain TCP";

/// The median of `pick` over a cell's runs, as text with `digits`.
fn of(cell: Option<&Cell>, pick: impl Fn(&Run) -> Option<f64>, digits: usize) -> String {
    ok(cell)
        .and_then(|c| runs_median(&c.runs, pick))
        .map_or("-".into(), |m| format!("{m:.digits$}"))
}

/// The median CPU microseconds per block of the server or the client.
fn cpu_us(cell: Option<&Cell>, server: bool) -> String {
    let key = match server {
        true => "server_cpu_us_per_block",
        false => "client_cpu_us_per_block",
    };
    ok(cell).map_or("-".into(), |c| median_of(c, key, 1.0, 1))
}

/// One load: each implementation's MiB/s and CPU per block, plain then TLS.
fn costs(plain: &View, tls: &View, load: Load) -> Grid {
    let rows = tls
        .implementations()
        .iter()
        .map(|name| {
            let (p, t) = (plain.cell(load, name), tls.cell(load, name));
            let ratio = match (ok(p), ok(t)) {
                (Some(p), Some(t)) => t
                    .mib_per_s
                    .zip(p.mib_per_s)
                    .map_or("-".into(), |(t, p)| format!("{:.2}x", t.median / p.median)),
                _ => unavailable(t),
            };
            [
                name.clone(),
                marked(p, of(p, |r| Some(r.mib_per_s), 0)),
                marked(t, of(t, |r| Some(r.mib_per_s), 0)),
                ratio,
                cpu_us(p, true),
                cpu_us(t, true),
                cpu_us(p, false),
                cpu_us(t, false),
            ]
            .into_iter()
            .map(Entry::plain)
            .collect()
        })
        .collect();
    Grid {
        title: format!("{COSTS}, {} ({})", load.label(), plain.workload.label()),
        header: [
            "implementation",
            "MiB/s plain",
            "MiB/s TLS",
            "TLS/plain",
            "server us/block plain",
            "server us/block TLS",
            "client us/block plain",
            "client us/block TLS",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

/// Connections opened per second inside the window.
fn per_second(cell: Option<&Cell>) -> String {
    marked(
        cell,
        of(cell, |r| Some(r.opened_connections? as f64 / r.seconds), 0),
    )
}

/// A throughput `figure` of `cell`, marked where the cell was client-bound.
fn marked(cell: Option<&Cell>, figure: String) -> String {
    format!("{figure}{}", cell.map_or("", bound))
}

/// One load of the handshake scenario: connections per second and the
/// server's CPU per connection, plain, full TLS handshakes, resumed.
fn handshakes(plain: &View, tls: &View, resumed: Option<&View>, load: Load) -> Grid {
    let rows = tls
        .implementations()
        .iter()
        .map(|name| {
            let cells = [
                plain.cell(load, name),
                tls.cell(load, name),
                resumed.and_then(|v| v.cell(load, name)),
            ];
            let server_us = |cell: Option<&Cell>| {
                of(
                    cell,
                    |r| {
                        let cpu_s = r.server_usage?.cpu_percent / 100.0 * r.seconds;
                        let opened = r.opened_connections.filter(|&n| n > 0)?;
                        Some(cpu_s * 1e6 / opened as f64)
                    },
                    0,
                )
            };
            let tickets = of(
                cells[2],
                |r| {
                    let t = r.resumptions?;
                    Some(100.0 * t.with_ticket as f64 / t.handshakes.max(1) as f64)
                },
                0,
            );
            let mut row = vec![name.clone()];
            row.extend(cells.iter().map(|&c| match ok(c) {
                Some(_) => per_second(c),
                None => unavailable(c),
            }));
            row.extend(cells.iter().map(|&c| server_us(c)));
            row.push(tickets);
            row.into_iter().map(Entry::plain).collect()
        })
        .collect();
    Grid {
        title: format!("Handshakes, {} ({})", load.label(), plain.workload.label()),
        header: [
            "implementation",
            "conn/s plain",
            "conn/s TLS",
            "conn/s TLS resumed",
            "server us/conn plain",
            "server us/conn TLS",
            "server us/conn resumed",
            "ticket %",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}
