//! The muduo article's tables, in the terminal: MiB/s by connections at a
//! fixed thread count, and by threads at a fixed connection count.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use comfy_table::{CellAlignment, Table, presets::UTF8_FULL_CONDENSED};

use crate::matrix::Load;
use crate::results::{Cell, Figures, Results, Status, Summary};

/// One table: a fixed thread or connection count, the other varying by row.
#[derive(Debug, PartialEq, Eq)]
pub enum Section {
    ByConnections {
        threads: usize,
        connections: Vec<usize>,
    },
    ByThreads {
        connections: usize,
        threads: Vec<usize>,
    },
}

/// The tables that show every load once or more, as in the muduo article:
/// one by threads for each connection count run at several thread counts,
/// then one by connections for each thread count with loads left to show.
pub fn sections(loads: &BTreeSet<Load>) -> Vec<Section> {
    let mut threads_at: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    let mut connections_at: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for l in loads {
        threads_at.entry(l.connections).or_default().push(l.threads);
        connections_at
            .entry(l.threads)
            .or_default()
            .push(l.connections);
    }
    let by_threads: Vec<_> = threads_at
        .into_iter()
        .filter(|(_, threads)| threads.len() > 1)
        .collect();
    let shown = |l: Load| by_threads.iter().any(|(c, _)| *c == l.connections);
    let mut out: Vec<Section> = connections_at
        .into_iter()
        .filter(|(t, cs)| {
            !cs.iter().all(|&c| {
                shown(Load {
                    threads: *t,
                    connections: c,
                })
            })
        })
        .map(|(threads, connections)| Section::ByConnections {
            threads,
            connections,
        })
        .collect();
    out.extend(
        by_threads
            .into_iter()
            .map(|(connections, threads)| Section::ByThreads {
                connections,
                threads,
            }),
    );
    out
}

/// Every table of a run, with a legend for the marks, as text.
pub fn render(results: &Results) -> String {
    let runtimes = &results.config.runtimes;
    let cells: BTreeMap<(Load, &str), &Cell> = results
        .cells
        .iter()
        .map(|c| ((c.load(), c.runtime.as_str()), c))
        .collect();
    let loads: BTreeSet<Load> = results.cells.iter().map(Cell::load).collect();
    let oversubscribed = |l: Load| {
        runtimes
            .iter()
            .filter_map(|r| cells.get(&(l, r.as_str())))
            .any(|c| c.placement.oversubscribed)
    };
    let threads_ignored = |r: &str| {
        results
            .cells
            .iter()
            .any(|c| c.runtime == r && !c.threads_matter)
    };
    let client = match &results.config.client {
        Some(client) => format!(", client: {client}"),
        None => String::new(),
    };

    let mut out = String::new();
    for section in sections(&loads) {
        let (title, row_name, rows): (String, &str, Vec<Load>) = match section {
            Section::ByConnections {
                threads,
                connections,
            } => (
                format!("{threads} thread{}", if threads == 1 { "" } else { "s" }),
                "connections",
                connections
                    .into_iter()
                    .map(|connections| Load {
                        threads,
                        connections,
                    })
                    .collect(),
            ),
            Section::ByThreads {
                connections,
                threads,
            } => (
                format!("{connections} connections"),
                "threads",
                threads
                    .into_iter()
                    .map(|threads| Load {
                        threads,
                        connections,
                    })
                    .collect(),
            ),
        };
        let mut table = new_table();
        table.set_header(
            std::iter::once(row_name.to_string()).chain(runtimes.iter().map(|r| {
                let mark = if threads_ignored(r) { "†" } else { "" };
                format!("{r}{mark}")
            })),
        );
        for load in rows {
            let label = if row_name == "threads" {
                load.threads
            } else {
                load.connections
            };
            let mark = if oversubscribed(load) { "*" } else { "" };
            let mut row = vec![comfy_table::Cell::new(format!("{label}{mark}"))];
            row.extend(runtimes.iter().map(|r| {
                let text = cells
                    .get(&(load, r.as_str()))
                    .map_or("-".into(), |c| figure(c));
                comfy_table::Cell::new(text).set_alignment(CellAlignment::Right)
            }));
            table.add_row(row);
        }
        let _ = writeln!(
            out,
            "\nMiB/s, {title}, block {} bytes{client}: median [min, max] of {} run(s)\n{table}",
            results.config.block, results.config.repeat
        );
    }
    for load in &loads {
        let _ = writeln!(
            out,
            "\n{} thread(s), {} connections: median of {} run(s); p50/p99 round-trip time, \
             CPU (100% = one core) and peak RSS of server (srv) and client (cli), \
             MiB per server CPU-second, fairness of bytes among connections \
             (1 = even, 0.1 = as if a tenth did all), time to connect all\n{}",
            load.threads,
            load.connections,
            results.config.repeat,
            details(results, *load)
        );
    }
    if loads.iter().any(|&l| oversubscribed(l)) {
        let _ = writeln!(
            out,
            "* oversubscribed: more threads than CPUs per side ({} CPUs here); these figures measure \
             contention for cores as much as the runtime",
            results.host.cpus.len()
        );
    }
    if results.cells.iter().any(|c| c.noisy) {
        let _ = writeln!(
            out,
            "~ noisy: the runs' max exceeds their min by more than {}%; compare such cells with care",
            results.config.noisy_percent.unwrap_or(10.0)
        );
    }
    let failed: Vec<_> = results
        .cells
        .iter()
        .filter(|c| c.status != Status::Ok)
        .collect();
    if !failed.is_empty() {
        let _ = writeln!(out, "\nCells without a figure:");
        for c in failed {
            let _ = writeln!(
                out,
                "  {} at {} threads, {} connections: {}",
                c.runtime,
                c.threads,
                c.connections,
                c.error.as_deref().unwrap_or("no reason recorded")
            );
        }
    }
    out
}

/// A table in the style every `compare` table shares.
pub fn new_table() -> Table {
    let mut table = Table::new();
    table.load_style(UTF8_FULL_CONDENSED);
    table
}

/// One load in detail: a row per implementation, every figure's median.
fn details(results: &Results, load: Load) -> Table {
    let mut table = new_table();
    table.set_header([
        "implementation",
        "MiB/s",
        "msg/s",
        "p50 us",
        "p99 us",
        "CPU% srv",
        "CPU% cli",
        "RSS MiB srv",
        "RSS MiB cli",
        "MiB/CPU-s",
        "fair",
        "connect s",
    ]);
    for cell in results.cells.iter().filter(|c| c.load() == load) {
        let mut row = vec![cell.runtime.clone(), figure(cell)];
        let f = cell.figures.as_ref().filter(|_| cell.status == Status::Ok);
        let median = |pick: fn(&Figures) -> Option<Summary>, scale: f64, digits: usize| {
            f.and_then(pick)
                .map_or("-".into(), |s| format!("{:.digits$}", s.median * scale))
        };
        let kib_to_mib = 1.0 / 1024.0;
        row.extend([
            median(|f| f.messages_per_s, 1.0, 0),
            median(|f| f.rtt_p50_us, 1.0, 0),
            median(|f| f.rtt_p99_us, 1.0, 0),
            median(|f| f.server_cpu_percent, 1.0, 0),
            median(|f| f.client_cpu_percent, 1.0, 0),
            median(|f| f.server_peak_rss_kib, kib_to_mib, 1),
            median(|f| f.client_peak_rss_kib, kib_to_mib, 1),
            median(|f| f.mib_per_server_cpu_s, 1.0, 0),
            median(|f| f.fairness, 1.0, 2),
            median(|f| f.connect_seconds, 1.0, 3),
        ]);
        table.add_row(row.into_iter().enumerate().map(|(i, text)| {
            let cell = comfy_table::Cell::new(text);
            if i == 0 {
                cell
            } else {
                cell.set_alignment(CellAlignment::Right)
            }
        }));
    }
    table
}

fn figure(cell: &Cell) -> String {
    let noisy = if cell.noisy { "~" } else { "" };
    match (cell.status, cell.mib_per_s) {
        (Status::Ok, Some(s)) if cell.runs.len() > 1 => {
            format!("{:.0} [{:.0}, {:.0}]{noisy}", s.median, s.min, s.max)
        }
        (Status::Ok, Some(s)) => format!("{:.0}", s.median),
        (Status::Ok, None) => "-".into(),
        (Status::Failed, _) => "failed".into(),
        (Status::Unavailable, _) => format!(
            "unavailable: {}",
            cell.unavailable.as_deref().unwrap_or("see below")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::{cross, muduo};

    #[test]
    fn muduo_matrix_gives_the_articles_three_tables() {
        let loads = muduo().into_iter().collect();
        assert_eq!(
            sections(&loads),
            vec![
                Section::ByConnections {
                    threads: 1,
                    connections: vec![1, 10, 100, 1000, 10000]
                },
                Section::ByThreads {
                    connections: 100,
                    threads: vec![1, 2, 3, 4]
                },
                Section::ByThreads {
                    connections: 1000,
                    threads: vec![1, 2, 3, 4]
                },
            ]
        );
    }

    #[test]
    fn one_thread_count_gives_one_table_by_connections() {
        let loads = cross(&[2], &[1, 10]).into_iter().collect();
        assert_eq!(
            sections(&loads),
            vec![Section::ByConnections {
                threads: 2,
                connections: vec![1, 10]
            }]
        );
    }

    #[test]
    fn cross_product_gives_a_table_per_connection_count() {
        let loads = cross(&[1, 2], &[1, 10]).into_iter().collect();
        assert_eq!(
            sections(&loads),
            vec![
                Section::ByThreads {
                    connections: 1,
                    threads: vec![1, 2]
                },
                Section::ByThreads {
                    connections: 10,
                    threads: vec![1, 2]
                },
            ]
        );
    }
}
