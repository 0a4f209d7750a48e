//! The report's tables as data, before any format: the muduo tables, the
//! same relative to a reference implementation, one detailed table per load,
//! and the notes that explain their marks. Every renderer (terminal,
//! markdown, HTML) draws these.

use std::collections::{BTreeMap, BTreeSet};

use pingpong::protocol::Protocol;

use model::matrix::{Load, Workload};
use model::results::registry;
use model::results::{Cell, Interval, Results, Status, Summary};
use model::stats;

/// One table: a title, a header, and rows whose first entry labels the row.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    pub title: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<Entry>>,
}

/// One table cell; `strong` marks the best of its row.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub text: String,
    pub strong: bool,
}

impl Entry {
    pub fn plain(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            strong: false,
        }
    }
}

/// One muduo table: its loads, one per row, at a fixed thread count (the
/// server's and the client's) with connections varying, or at a fixed
/// connection count with threads varying.
#[derive(Debug, PartialEq, Eq)]
pub struct Section {
    pub varying: Varying,
    pub loads: Vec<Load>,
}

/// What varies down a muduo table's rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Varying {
    Connections,
    Threads,
}

impl Section {
    /// The title's subject, the rows' name and the rows' loads.
    pub fn rows(&self) -> (String, &'static str, Vec<Load>) {
        let first = self.loads[0];
        let (subject, row_name) = match self.varying {
            Varying::Connections => (first.threads_words(), "connections"),
            Varying::Threads => {
                let c = first.connections;
                (format!("{c} connection{}", plural(c)), "threads")
            }
        };
        (subject, row_name, self.loads.clone())
    }

    /// How a row names its load: its connections, or its thread counts.
    pub fn row_label(&self, load: Load) -> String {
        match self.varying {
            Varying::Connections => load.connections.to_string(),
            Varying::Threads => load.threads_label(),
        }
    }
}

pub fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// The tables that show every load once or more, as in the muduo article:
/// one by threads for each connection count run at several thread counts,
/// then one by connections for each thread count with loads left to show.
pub fn muduo_sections(loads: &BTreeSet<Load>) -> Vec<Section> {
    let mut threads_at: BTreeMap<usize, Vec<Load>> = BTreeMap::new();
    let mut connections_at: BTreeMap<(usize, Option<usize>), Vec<Load>> = BTreeMap::new();
    for &l in loads {
        threads_at.entry(l.connections).or_default().push(l);
        connections_at
            .entry((l.threads, l.client_threads))
            .or_default()
            .push(l);
    }
    let by_threads: Vec<Vec<Load>> = threads_at
        .into_values()
        .filter(|loads| loads.len() > 1)
        .collect();
    let shown = |l: &Load| {
        by_threads
            .iter()
            .any(|ls| ls[0].connections == l.connections)
    };
    let mut out: Vec<Section> = connections_at
        .into_values()
        .filter(|ls| !ls.iter().all(shown))
        .map(|loads| Section {
            varying: Varying::Connections,
            loads,
        })
        .collect();
    out.extend(by_threads.into_iter().map(|loads| Section {
        varying: Varying::Threads,
        loads,
    }));
    out
}

/// The cells of one workload (block size and window) of a results file,
/// indexed for the tables.
pub struct View<'a> {
    pub results: &'a Results,
    pub workload: Workload,
    /// Whether the run has other workloads: then titles and files name this one.
    pub several: bool,
    cells: BTreeMap<(Load, &'a str), &'a Cell>,
    pub loads: BTreeSet<Load>,
}

impl<'a> View<'a> {
    /// One view per workload of the run, in order.
    pub fn all(results: &'a Results) -> Vec<Self> {
        let workloads: BTreeSet<Workload> = results.cells.iter().map(Cell::workload).collect();
        let several = workloads.len() > 1;
        workloads
            .into_iter()
            .map(|workload| {
                let cells = || {
                    results
                        .cells
                        .iter()
                        .filter(move |c| c.workload() == workload)
                };
                Self {
                    results,
                    workload,
                    several,
                    cells: cells()
                        .map(|c| ((c.load(), c.implementation.as_str()), c))
                        .collect(),
                    loads: cells().map(Cell::load).collect(),
                }
            })
            .collect()
    }

    /// `title`, naming the workload where the run has several.
    pub fn titled(&self, title: String) -> String {
        if self.several {
            format!("{title} ({})", self.workload.label())
        } else {
            title
        }
    }

    pub fn implementations(&self) -> &'a [String] {
        &self.results.config.implementations
    }

    pub fn cell(&self, load: Load, implementation: &str) -> Option<&'a Cell> {
        self.cells.get(&(load, implementation)).copied()
    }

    /// The cells at `load`, in the implementations' order.
    pub fn cells_at(&self, load: Load) -> impl Iterator<Item = &'a Cell> + '_ {
        self.implementations()
            .iter()
            .filter_map(move |r| self.cell(load, r))
    }

    fn oversubscribed(&self, load: Load) -> bool {
        self.cells_at(load).any(|c| c.placement.oversubscribed)
    }

    fn threads_ignored(&self, implementation: &str) -> bool {
        self.results
            .cells
            .iter()
            .any(|c| c.implementation == implementation && !c.threads_matter)
    }

    /// Whether an external program's own client measured `implementation`'s cells.
    fn external_client(&self, implementation: &str) -> bool {
        let externals = &self.results.config.externals;
        self.results.cells.iter().any(|c| {
            c.implementation == implementation && externals.iter().any(|e| e.name == c.client)
        })
    }

    /// The header of a muduo table: the rows' name, then the implementations.
    fn header(&self, row_name: &str) -> Vec<String> {
        std::iter::once(row_name.to_string())
            .chain(self.implementations().iter().map(|r| {
                let threads = if self.threads_ignored(r) { "†" } else { "" };
                let external = if self.external_client(r) { "‡" } else { "" };
                format!("{r}{threads}{external}")
            }))
            .collect()
    }

    fn row_label(&self, section: &Section, load: Load) -> Entry {
        let mark = if self.oversubscribed(load) { "*" } else { "" };
        Entry::plain(format!("{}{mark}", section.row_label(load)))
    }

    /// The muduo tables: MiB/s, median with its interval or [min, max];
    /// the leader of each row strong, or the leaders its intervals cannot
    /// tell apart, marked together.
    pub fn throughput(&self) -> Vec<Grid> {
        let config = &self.results.config;
        let client = match &config.client {
            Some(client) => format!(", client: {client}"),
            None => String::new(),
        };
        let runs = match config.precision_percent {
            Some(p) => format!(
                "median +-half its 95% interval (or [min, max] under 6 runs) of {} to {} runs, \
                 repeated until +-{p}%",
                config.repeat,
                config.max_repeat.unwrap_or(config.repeat)
            ),
            None => format!("median [min, max] of {} run(s)", config.repeat),
        };
        self.muduo(
            |subject| {
                format!(
                    "MiB/s, {subject}, {}{client}: {runs}",
                    self.workload.label()
                )
            },
            |cells| {
                let leaders = leaders(cells);
                let tied = if leaders.len() > 1 { "=" } else { "" };
                cells
                    .iter()
                    .enumerate()
                    .map(|(i, cell)| {
                        let strong = leaders.contains(&i);
                        let text = cell.map_or("-".into(), |c| figure(c, config.precision_percent));
                        Entry {
                            text: if strong {
                                format!("{text}{tied}")
                            } else {
                                text
                            },
                            strong,
                        }
                    })
                    .collect()
            },
        )
    }

    /// The muduo tables relative to `reference`: each median over the
    /// reference's, with the 95% bootstrap interval of that ratio.
    pub fn relative(&self, reference: &str) -> Vec<Grid> {
        let at = self.implementations().iter().position(|r| r == reference);
        self.muduo(
            |subject| {
                self.titled(format!(
                    "Relative to {reference}, {subject}: median MiB/s over {reference}'s \
                     [95% interval]"
                ))
            },
            |cells| {
                let base = at.and_then(|i| cells[i]).filter(|c| ok_figure(c));
                cells
                    .iter()
                    .map(|cell| {
                        let text = match (cell.filter(|c| ok_figure(c)), base) {
                            (Some(c), Some(b)) if std::ptr::eq(c, b) => "1.00x".into(),
                            (Some(c), Some(b)) => ratio(b, c),
                            _ => "-".into(),
                        };
                        Entry::plain(text)
                    })
                    .collect()
            },
        )
    }

    /// One grid per muduo table: `title` of its subject, and a row of
    /// `entries` for each load from the row's cells (one per implementation).
    fn muduo(
        &self,
        title: impl Fn(&str) -> String,
        entries: impl Fn(&[Option<&Cell>]) -> Vec<Entry>,
    ) -> Vec<Grid> {
        muduo_sections(&self.loads)
            .into_iter()
            .map(|section| {
                let (subject, row_name, loads) = section.rows();
                let rows = loads
                    .into_iter()
                    .map(|load| {
                        let cells: Vec<Option<&Cell>> = self
                            .implementations()
                            .iter()
                            .map(|r| self.cell(load, r))
                            .collect();
                        let mut row = vec![self.row_label(&section, load)];
                        row.extend(entries(&cells));
                        row
                    })
                    .collect();
                Grid {
                    title: title(&subject),
                    header: self.header(row_name),
                    rows,
                }
            })
            .collect()
    }

    /// One table per load: a row per implementation with every figure's median.
    pub fn details(&self) -> Vec<Grid> {
        self.loads
            .iter()
            .map(|&load| {
                let udp = self.workload.protocol == Protocol::Udp;
                let rows = self
                    .cells_at(load)
                    .map(|c| {
                        let mut row = detail_row(c, self.results.config.precision_percent);
                        if udp {
                            row.push(Entry::plain(median_of(c, "loss_percent", 1.0, 2)));
                            row.push(Entry::plain(kernel_drops(c)));
                        }
                        row
                    })
                    .collect();
                let mut header: Vec<String> =
                    DETAIL_HEADER.iter().map(ToString::to_string).collect();
                if udp {
                    header.extend(["lost %".into(), "drops".into()]);
                }
                let mark = if self.oversubscribed(load) { "*" } else { "" };
                Grid {
                    title: self.titled(format!(
                        "{}{mark}: median of {} run(s)",
                        load.label(),
                        self.results.config.repeat
                    )),
                    header,
                    rows,
                }
            })
            .collect()
    }
}

const DETAIL_HEADER: [&str; 13] = [
    "implementation",
    "MiB/s",
    "msg/s",
    "p50 us",
    "p95 us",
    "p99 us",
    "CPU% srv",
    "CPU% cli",
    "RSS MiB srv",
    "RSS MiB cli",
    "MiB/CPU-s",
    "fair",
    "connect s",
];

pub const DETAIL_LEGEND: &str = "Detailed tables: msg/s = blocks round-tripped per second; p50/p95/p99 \
    = round-trip time of a block; CPU% = CPU time over the window, 100 = one core, of server (srv) \
    and client (cli); RSS = peak resident memory; MiB/CPU-s = MiB per server CPU-second; fair = \
    Jain's index of the connections' bytes (1 = even, 0.1 = as if a tenth did all the work); \
    connect s = time to connect every connection";

/// What the detailed tables of a UDP workload mean.
pub fn udp_legend() -> String {
    format!(
        "Over UDP: a connection is a connected socket with one datagram of the block's size in \
         flight; msg/s counts datagrams answered; lost % = datagrams with no answer within the \
         loss timeout ({} ms), in percent of those sent: each was sent again, and none counts as \
         throughput; drops = datagrams the kernel dropped for a full socket receive buffer over \
         the repetition, warm-up included (Udp RcvbufErrors, the whole machine's)",
        pingpong::datagram::LOSS_TIMEOUT.as_millis()
    )
}

/// The median of a UDP cell's runs' datagrams the kernel dropped for a
/// full receive buffer, or "-" where none was counted (a server on another
/// host, a file from before the count).
fn kernel_drops(cell: &Cell) -> String {
    let drops = (cell.runs.iter()).filter_map(|r| Some(r.tcp?.udp_receive_buffer_errors? as f64));
    Summary::of(drops).map_or("-".into(), |s| format!("{:.0}", s.median))
}

/// The median of the registry's figure `key` in a cell that is ok, scaled,
/// or "-".
pub fn median_of(cell: &Cell, key: &str, scale: f64, digits: usize) -> String {
    cell.summary(registry::figure(key))
        .map_or("-".into(), |s| format!("{:.digits$}", s.median * scale))
}

fn detail_row(cell: &Cell, cell_precision: Option<f64>) -> Vec<Entry> {
    let median = |key, scale, digits| median_of(cell, key, scale, digits);
    let mib = 1.0 / 1024.0;
    [
        cell.implementation.clone(),
        figure(cell, cell_precision),
        median("messages_per_s", 1.0, 0),
        median("rtt_p50_us", 1.0, 0),
        median("rtt_p95_us", 1.0, 0),
        median("rtt_p99_us", 1.0, 0),
        median("server_cpu_percent", 1.0, 0),
        median("client_cpu_percent", 1.0, 0),
        median("server_peak_rss_kib", mib, 1),
        median("client_peak_rss_kib", mib, 1),
        median("mib_per_server_cpu_s", 1.0, 0),
        median("fairness", 1.0, 2),
        median("connect_seconds", 1.0, 3),
    ]
    .into_iter()
    .map(Entry::plain)
    .collect()
}

pub fn status(s: Status) -> &'static str {
    match s {
        Status::Ok => "ok",
        Status::Failed => "failed",
        Status::Unavailable => "unavailable",
    }
}

/// Whether a cell has a figure to rank.
/// `cell`'s median MiB/s over `base`'s, with the 95% bootstrap interval of
/// that ratio: "0.70x [0.66, 0.74]".
pub fn ratio(base: &Cell, cell: &Cell) -> String {
    let mib = |c: &Cell| c.runs.iter().map(|r| r.mib_per_s).collect::<Vec<_>>();
    stats::ratio_of_medians(&mib(base), &mib(cell), 0.95).map_or("-".into(), |i| {
        let bound = if bound(base).is_empty() {
            bound(cell)
        } else {
            "^"
        };
        format!("{:.2}x [{:.2}, {:.2}]{bound}", i.ratio, i.low, i.high)
    })
}

/// The cell, if it has runs to show.
pub fn ok(cell: Option<&Cell>) -> Option<&Cell> {
    cell.filter(|c| c.status == Status::Ok && !c.runs.is_empty())
}

/// Why a cell has no figure: its status, or "-".
pub fn unavailable(cell: Option<&Cell>) -> String {
    match cell {
        Some(c) if c.status != Status::Ok => c
            .unavailable
            .clone()
            .unwrap_or_else(|| status(c.status).into()),
        _ => "-".into(),
    }
}

/// `view` over `base`, its twin in one other way (plain TCP, the echo
/// shape): a row per load, a column per implementation, each the ratio of
/// median MiB/s with its interval.
pub fn ratios(base: &View, view: &View, title: String) -> Grid {
    let names = view.implementations();
    let rows = view
        .loads
        .iter()
        .map(|&load| {
            let mut row = vec![Entry::plain(load.label())];
            row.extend(names.iter().map(|name| {
                let cell = view.cell(load, name);
                let text = match (ok(base.cell(load, name)), ok(cell)) {
                    (Some(b), Some(c)) => ratio(b, c),
                    _ => unavailable(cell),
                };
                Entry::plain(text)
            }));
            row
        })
        .collect();
    Grid {
        title,
        header: std::iter::once("load".to_string())
            .chain(names.iter().cloned())
            .collect(),
        rows,
    }
}

fn ok_figure(cell: &Cell) -> bool {
    cell.status == Status::Ok && cell.mib_per_s.is_some()
}

/// The leaders of a row: the best median, and every cell whose interval
/// reaches the best's (they cannot be told apart from it). None where a
/// cell outside them was client-bound: its server may be faster than its
/// figure, and the row would rank clients.
fn leaders(cells: &[Option<&Cell>]) -> Vec<usize> {
    let ranked: Vec<(usize, f64, Interval)> = cells
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let c = c.filter(|c| ok_figure(c))?;
            Some((i, c.mib_per_s?.median, c.interval?))
        })
        .collect();
    let Some(&(_, _, best)) = ranked.iter().max_by(|a, b| a.1.total_cmp(&b.1)) else {
        return Vec::new();
    };
    let best_median = ranked.iter().map(|r| r.1).fold(f64::MIN, f64::max);
    let leaders: Vec<usize> = ranked
        .iter()
        .filter(|(_, median, interval)| *median == best_median || interval.high >= best.low)
        .map(|(i, _, _)| *i)
        .collect();
    let bound_behind = cells
        .iter()
        .enumerate()
        .any(|(i, c)| !leaders.contains(&i) && c.is_some_and(|c| !bound(c).is_empty()));
    if bound_behind { Vec::new() } else { leaders }
}

/// A cell's MiB/s as the tables show it: where the runs split in two, both
/// modes; with six runs or more, the median and half its 95% interval in
/// percent (marked "?" when short of the run's `precision`); else the
/// median [min, max], marked when noisy; marked "^" when client-bound.
pub fn figure(cell: &Cell, precision: Option<f64>) -> String {
    let noisy = if cell.noisy { "~" } else { "" };
    let text = match (cell.status, cell.mib_per_s) {
        (Status::Ok, Some(_)) if cell.modes.is_some() => {
            let [low, high] = cell.modes.unwrap_or_default();
            format!("two modes: {low:.0} / {high:.0}")
        }
        (Status::Ok, Some(s)) if cell.precision().is_some() => {
            let reached = cell.precision().unwrap_or_default();
            let short = if precision.is_some_and(|p| cell.short_of(p)) {
                "?"
            } else {
                ""
            };
            format!("{:.0} +-{reached:.0}%{short}", s.median)
        }
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
    };
    format!("{text}{}", bound(cell))
}

/// The mark of a client-bound cell: its figure is a lower bound for the server.
pub fn bound(cell: &Cell) -> &'static str {
    if cell.client_bound && cell.status == Status::Ok {
        "^"
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::matrix::{cross, muduo, with_client_threads};

    fn section(varying: Varying, loads: Vec<Load>) -> Section {
        Section { varying, loads }
    }

    #[test]
    fn muduo_matrix_gives_the_articles_three_tables() {
        let loads = muduo().into_iter().collect();
        assert_eq!(
            muduo_sections(&loads),
            vec![
                section(
                    Varying::Connections,
                    cross(&[1], &[1, 10, 100, 1000, 10000])
                ),
                section(Varying::Threads, cross(&[1, 2, 3, 4], &[100])),
                section(Varying::Threads, cross(&[1, 2, 3, 4], &[1000])),
            ]
        );
    }

    #[test]
    fn one_thread_count_gives_one_table_by_connections() {
        let loads = cross(&[2], &[1, 10]).into_iter().collect();
        let sections = muduo_sections(&loads);
        assert_eq!(
            sections,
            vec![section(Varying::Connections, cross(&[2], &[1, 10]))]
        );
        assert_eq!(sections[0].rows().0, "2 threads");
    }

    #[test]
    fn cross_product_gives_a_table_per_connection_count() {
        let loads = cross(&[1, 2], &[1, 10]).into_iter().collect();
        assert_eq!(
            muduo_sections(&loads),
            vec![
                section(Varying::Threads, cross(&[1, 2], &[1])),
                section(Varying::Threads, cross(&[1, 2], &[10])),
            ]
        );
    }

    #[test]
    fn a_row_with_a_client_bound_cell_behind_its_leaders_names_none() {
        let results = model::fixtures::small();
        let mut cells: Vec<Cell> = [0, 1, 3].map(|i| results.cells[i].clone()).to_vec();
        for (cell, median) in cells.iter_mut().zip([300.0, 200.0, 100.0]) {
            cell.mib_per_s = Some(Summary {
                median,
                min: median,
                max: median,
            });
            cell.interval = Some(Interval {
                low: median * 0.95,
                high: median * 1.05,
                confidence: 0.95,
            });
        }
        let row = |cells: &[Cell]| leaders(&cells.iter().map(Some).collect::<Vec<_>>());
        assert_eq!(row(&cells), [0]);
        cells[0].client_bound = true;
        assert_eq!(row(&cells), [0], "a lower bound that leads still leads");
        assert!(figure(&cells[0], None).ends_with('^'));
        cells[2].client_bound = true;
        assert_eq!(
            row(&cells),
            Vec::<usize>::new(),
            "its server may be the fastest"
        );
    }

    #[test]
    fn a_client_of_other_threads_gets_its_own_rows_and_titles() {
        let loads = with_client_threads(cross(&[1], &[1, 10]), &[1, 2]);
        let sections = muduo_sections(&loads.into_iter().collect());
        assert_eq!(
            sections,
            vec![
                section(
                    Varying::Threads,
                    with_client_threads(cross(&[1], &[1]), &[1, 2])
                ),
                section(
                    Varying::Threads,
                    with_client_threads(cross(&[1], &[10]), &[1, 2])
                ),
            ]
        );
        let labels: Vec<String> = sections[0]
            .loads
            .iter()
            .map(|&l| sections[0].row_label(l))
            .collect();
        assert_eq!(labels, ["1", "1, client 2"]);
        let one = muduo_sections(&[Load::sized(1, 10, 4)].into_iter().collect());
        assert_eq!(one[0].rows().0, "1 thread, client 4 threads");
    }
}
