//! The open loop's tables: latency against offered load. At each rate,
//! each implementation's round trips timed from when each block was due
//! (p50, p99, p99.9), or "not sustained" where its server fell behind; what
//! each block cost both sides there; and the knee: the highest rate each
//! sustains with its p99 under the run's bound.

use std::collections::BTreeSet;

use pingpong::client::open_loop::SUSTAINED_SHARE;

use super::grid::{Entry, Grid, median_of};
use pingpong::server::Shape;

use model::matrix::{Load, Workload};
use model::results::{Cell, OpenLoop, Results, Rtt, Run, Status};
use model::stats::median;

/// What the open-loop tables mean.
pub const LEGEND: &str = "Open loop (wrk2's model): every connection sends a block on a \
    schedule at the rate asked, whatever came back, at a phase of its own; a round trip runs \
    from when its block was due, so a server that stalls is charged for every block it kept \
    waiting. Medians of the runs. Not sustained: a run got back less than 99% of the rate \
    inside its window, or its send lag grew by more than 1 ms from the window's first quarter \
    to its last, or the generator was busy more than 95% of the window (it may have set the \
    pace, not the server); such a cell gives no latency. Uncorrected: from when each block went out; \
    send lag: how late blocks went out; the generator (one client for every server) woke \
    for its due times with the timing error given, spinning the last 50 us to each (so its \
    CPU figures include the spin); generator busy: the share of the window it had work";

/// One workload (its closed-loop twin: block, shape, ...) at one load:
/// the rates it ran, in blocks a second (a share of capacity, as it
/// resolved: the same for every implementation of the run).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Sweep {
    pub workload: Workload,
    pub load: Load,
    pub rates: Vec<u64>,
}

impl Sweep {
    /// Every workload and load that ran in the open loop.
    pub fn all(results: &Results) -> Vec<Sweep> {
        let keys: BTreeSet<(Workload, Load)> = open(results)
            .map(|c| (c.workload().closed(), c.load()))
            .collect();
        keys.into_iter()
            .map(|(workload, load)| Sweep {
                workload,
                load,
                rates: open(results)
                    .filter(|c| (c.workload().closed(), c.load()) == (workload, load))
                    .filter_map(|c| c.rate)
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect(),
            })
            .collect()
    }

    /// The cell of `implementation` at `rate`.
    pub fn cell<'a>(
        &self,
        results: &'a Results,
        implementation: &str,
        rate: u64,
    ) -> Option<&'a Cell> {
        open(results).find(|c| {
            c.implementation == implementation
                && (c.workload().closed(), c.load(), c.rate)
                    == (self.workload, self.load, Some(rate))
        })
    }

    pub fn title(&self, what: &str) -> String {
        format!("{what}, {}, {}", self.load.label(), self.workload.label())
    }

    /// How chart files tell it from the others: "1t-10c-16384B", then the
    /// shape where it is not the echo.
    pub fn slug(&self) -> String {
        let shape = match self.workload.shape {
            Shape::Echo => String::new(),
            shape => format!("-{}", shape.name()),
        };
        format!("{}-{}B{shape}", self.load.slug(), self.workload.block)
    }
}

fn open(results: &Results) -> impl Iterator<Item = &Cell> {
    results.cells.iter().filter(|c| c.rate.is_some())
}

/// A cell's round trips at its rate, as medians of its runs' percentiles,
/// or why there are none.
pub enum Latency {
    Sustained {
        p50: f64,
        p99: f64,
        p999: f64,
    },
    NotSustained {
        achieved: f64,
        rate: u64,
    },
    /// The generator, not the server, set the pace: no figure of the server.
    ClientBound {
        achieved: f64,
    },
    Missing(String),
}

impl Latency {
    pub fn of(cell: Option<&Cell>) -> Latency {
        let Some(cell) = cell else {
            return Latency::Missing("-".into());
        };
        if cell.status != Status::Ok {
            return Latency::Missing(super::grid::status(cell.status).into());
        }
        let achieved = runs_median(&cell.runs, |r| Some(r.open_loop.as_ref()?.achieved));
        if cell.client_bound {
            return Latency::ClientBound {
                achieved: achieved.unwrap_or(0.0),
            };
        }
        if cell.not_sustained().is_some() {
            return Latency::NotSustained {
                achieved: achieved.unwrap_or(0.0),
                rate: cell.rate.unwrap_or_default(),
            };
        }
        let q = |pick: fn(&Rtt) -> f64| runs_median(&cell.runs, |r| r.rtt.as_ref().map(pick));
        match (q(|t| t.p50_us), q(|t| t.p99_us), q(|t| t.p999_us)) {
            (Some(p50), Some(p99), Some(p999)) => Latency::Sustained { p50, p99, p999 },
            _ => Latency::Missing("no round trips".into()),
        }
    }

    fn text(&self) -> String {
        match self {
            Latency::Sustained { p50, p99, p999 } => {
                format!("{} / {} / {}", time(*p50), time(*p99), time(*p999))
            }
            // Short of the rate, or at it with its send lag growing.
            Latency::NotSustained { achieved, rate }
                if *achieved < *rate as f64 * SUSTAINED_SHARE =>
            {
                format!("not sustained ({}/s)", thousands(*achieved))
            }
            Latency::NotSustained { .. } => "not sustained (lag grew)".into(),
            Latency::ClientBound { achieved } => {
                format!("client-bound^ ({}/s)", thousands(*achieved))
            }
            Latency::Missing(why) => why.clone(),
        }
    }
}

/// The median over `runs` of what `pick` finds in each.
pub(super) fn runs_median(runs: &[Run], pick: impl Fn(&Run) -> Option<f64>) -> Option<f64> {
    median(&runs.iter().filter_map(pick).collect::<Vec<_>>())
}

/// Microseconds as a short duration: "45us", "1.25ms", "2.10s".
pub fn time(us: f64) -> String {
    match us {
        us if us >= 1e6 => format!("{:.2}s", us / 1e6),
        us if us >= 1e3 => format!("{:.2}ms", us / 1e3),
        us => format!("{us:.0}us"),
    }
}

/// A count with thousands separators: 81,683.
pub fn thousands(n: f64) -> String {
    let digits = format!("{:.0}", n.max(0.0));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Every open-loop table of the run: for each block size and load, the
/// latency at each rate, what the runs measured besides, and the cost per
/// block; then the knee table.
pub fn tables(results: &Results) -> Vec<Grid> {
    let sweeps = Sweep::all(results);
    if sweeps.is_empty() {
        return Vec::new();
    }
    let mut grids = Vec::new();
    for sweep in &sweeps {
        grids.push(latency(results, sweep));
        grids.push(detail(results, sweep));
        grids.push(cost(results, sweep));
    }
    grids.push(knees(results, &sweeps));
    grids
}

/// The latency tables alone, and the knee table: the answer in the terminal.
pub fn summary(results: &Results) -> Vec<Grid> {
    let sweeps = Sweep::all(results);
    if sweeps.is_empty() {
        return Vec::new();
    }
    let mut grids: Vec<Grid> = sweeps.iter().map(|s| latency(results, s)).collect();
    grids.push(knees(results, &sweeps));
    grids
}

fn header(results: &Results) -> Vec<String> {
    std::iter::once("blocks/s".to_string())
        .chain(results.config.implementations.iter().cloned())
        .collect()
}

/// One row per rate, one column per implementation, `entry` of each cell.
fn by_rate(
    results: &Results,
    sweep: &Sweep,
    title: String,
    entry: impl Fn(Option<&Cell>) -> String,
) -> Grid {
    Grid {
        title,
        header: header(results),
        rows: sweep
            .rates
            .iter()
            .map(|&rate| {
                std::iter::once(thousands(rate as f64))
                    .chain(
                        results
                            .config
                            .implementations
                            .iter()
                            .map(|i| entry(sweep.cell(results, i, rate))),
                    )
                    .map(Entry::plain)
                    .collect()
            })
            .collect(),
    }
}

fn latency(results: &Results, sweep: &Sweep) -> Grid {
    by_rate(
        results,
        sweep,
        sweep.title("Open loop: round trip from when each block was due, p50 / p99 / p99.9"),
        |cell| Latency::of(cell).text(),
    )
}

/// Uncorrected p99, send lag p99, the generator's timing error p99 and its
/// CPU: how much of the latency the schedule added, how well the generator
/// kept time, and whether it was itself the bottleneck.
fn detail(results: &Results, sweep: &Sweep) -> Grid {
    by_rate(
        results,
        sweep,
        sweep.title(
            "Open loop: p99 uncorrected / p99 send lag / p99 generator timing error / generator busy",
        ),
        |cell| {
            let Some(cell) = cell.filter(|c| c.status == Status::Ok) else {
                return "-".into();
            };
            let q = |pick: fn(&OpenLoop) -> &Rtt| {
                runs_median(&cell.runs, |r| {
                    let rtt = pick(r.open_loop.as_ref()?);
                    (rtt.count > 0).then_some(rtt.p99_us)
                })
                .map_or("-".into(), time)
            };
            let busy = runs_median(&cell.runs, |r| Some(r.open_loop.as_ref()?.generator_busy))
                .map_or("-".into(), |b| format!("{:.0}%", b * 100.0));
            format!(
                "{} / {} / {} / {busy}",
                q(|o| &o.uncorrected),
                q(|o| &o.lag),
                q(|o| &o.timer)
            )
        },
    )
}

/// CPU microseconds per block on each side at each rate.
fn cost(results: &Results, sweep: &Sweep) -> Grid {
    by_rate(
        results,
        sweep,
        sweep.title("Open loop: CPU us per block, server / client"),
        |cell| {
            let cpu = |key| cell.map_or("-".into(), |c| median_of(c, key, 1.0, 1));
            format!(
                "{} / {}",
                cpu("server_cpu_us_per_block"),
                cpu("client_cpu_us_per_block")
            )
        },
    )
}

/// Where an implementation's latency bends up: the highest rate it
/// sustains with p99 under the bound, every lower rate of the sweep too.
#[derive(Debug, Clone, PartialEq)]
pub enum Knee {
    /// The highest rate within the bound, its p99, and whether a higher
    /// rate ran and was not (else the knee lies beyond the sweep).
    At { rate: u64, p99: f64, beyond: bool },
    /// Not even the lowest rate was within the bound.
    Below(u64),
    /// No rate has a figure.
    Unknown,
}

impl Knee {
    pub fn of(results: &Results, sweep: &Sweep, implementation: &str, bound_us: f64) -> Knee {
        let latencies: Vec<(u64, Latency)> = sweep
            .rates
            .iter()
            .map(|&rate| (rate, Latency::of(sweep.cell(results, implementation, rate))))
            .collect();
        let within: Vec<(u64, Option<f64>)> = latencies
            .iter()
            .map(|(rate, latency)| {
                let p99 = match latency {
                    Latency::Sustained { p99, .. } if *p99 <= bound_us => Some(*p99),
                    _ => None,
                };
                (*rate, p99)
            })
            .collect();
        let measured = sweep
            .rates
            .iter()
            .any(|&r| sweep.cell(results, implementation, r).is_some());
        // The rates in order until the first that fails: a higher one that
        // passes again is noise, not headroom.
        let passed = within.iter().map_while(|&(rate, p99)| Some((rate, p99?)));
        match passed.last() {
            // Where the generator stopped the sweep, the server's knee may lie beyond.
            Some((rate, p99)) => Knee::At {
                rate,
                p99,
                beyond: within.last().is_some_and(|(last, _)| *last == rate)
                    || latencies
                        .iter()
                        .find(|(r, _)| *r > rate)
                        .is_some_and(|(_, l)| matches!(l, Latency::ClientBound { .. })),
            },
            None if measured => Knee::Below(sweep.rates[0]),
            None => Knee::Unknown,
        }
    }

    fn text(&self) -> String {
        match self {
            Knee::At { rate, p99, beyond } => format!(
                "{}{} (p99 {})",
                if *beyond { ">= " } else { "" },
                thousands(*rate as f64),
                time(*p99)
            ),
            Knee::Below(lowest) => format!("< {}", thousands(*lowest as f64)),
            Knee::Unknown => "-".into(),
        }
    }
}

fn knees(results: &Results, sweeps: &[Sweep]) -> Grid {
    let bound = results
        .config
        .p99_bound_us
        .unwrap_or(model::defaults::P99_BOUND_MS * 1e3);
    let several_blocks = sweeps
        .iter()
        .any(|s| s.workload.block != sweeps[0].workload.block);
    let header = std::iter::once("implementation".to_string())
        .chain(sweeps.iter().map(|s| {
            let block = match several_blocks {
                true => format!(", {} B", s.workload.block),
                false => String::new(),
            };
            let client = s
                .load
                .client_threads
                .map_or(String::new(), |n| format!(" client {n}t"));
            format!("{}t{client} {}c{block}", s.load.threads, s.load.connections)
        }))
        .collect();
    Grid {
        title: format!(
            "Open loop: the knee, the highest rate (blocks/s) sustained with p99 under {}, as \
             every lower rate was (>= : the sweep ends before it; < : not even its lowest rate)",
            time(bound)
        ),
        header,
        rows: results
            .config
            .implementations
            .iter()
            .map(|i| {
                std::iter::once(i.clone())
                    .chain(sweeps.iter().map(|s| Knee::of(results, s, i, bound).text()))
                    .map(Entry::plain)
                    .collect()
            })
            .collect(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use model::fixtures::small as fixture;

    /// The fixture's mio cell at 1 thread, swept: p99 of 200 us at 1,000
    /// blocks/s, 800 us at 2,000, and 4,000 as `last` says (its p99, or
    /// not sustained).
    pub(crate) fn swept(last: Option<f64>) -> (Results, Sweep) {
        let mut results = fixture();
        let base = results
            .cells
            .iter()
            .find(|c| c.implementation == "mio" && c.threads == 1 && c.status == Status::Ok)
            .unwrap()
            .clone();
        results.cells.clear();
        for (rate, p99) in [(1000, Some(200.0)), (2000, Some(800.0)), (4000, last)] {
            let mut cell = base.clone();
            cell.rate = Some(rate);
            for run in &mut cell.runs {
                let rtt = run.rtt.as_mut().unwrap();
                rtt.p99_us = p99.unwrap_or(1e6);
                rtt.p50_us = rtt.p99_us / 4.0;
                rtt.p999_us = rtt.p99_us * 2.0;
                run.open_loop = Some(OpenLoop {
                    rate,
                    achieved: if p99.is_some() { rate as f64 } else { 3000.0 },
                    due: rate,
                    returned: rate,
                    uncorrected: rtt.clone(),
                    lag: rtt.clone(),
                    timer: rtt.clone(),
                    lag_series: Vec::new(),
                    generator_busy: 0.5,
                    not_sustained: p99
                        .is_none()
                        .then(|| "3000 of 4000 blocks/s came back".into()),
                });
            }
            results.cells.push(cell);
        }
        let sweep = Sweep::all(&results).remove(0);
        (results, sweep)
    }

    #[test]
    fn the_knee_is_the_highest_rate_sustained_under_the_bound() {
        let (results, sweep) = swept(None);
        assert_eq!(sweep.rates, [1000, 2000, 4000]);
        let knee = |bound| Knee::of(&results, &sweep, "mio", bound);
        assert_eq!(
            knee(1000.0),
            Knee::At {
                rate: 2000,
                p99: 800.0,
                beyond: false
            }
        );
        assert_eq!(
            knee(500.0),
            Knee::At {
                rate: 1000,
                p99: 200.0,
                beyond: false
            }
        );
        assert_eq!(knee(100.0), Knee::Below(1000));
        // A rate past the first that failed does not count, though within.
        let (results, sweep) = swept(Some(600.0));
        assert_eq!(
            Knee::of(&results, &sweep, "mio", 700.0),
            Knee::At {
                rate: 1000,
                p99: 200.0,
                beyond: false
            }
        );
        assert_eq!(Knee::of(&results, &sweep, "nobody", 1000.0), Knee::Unknown);
        // Sustained at the sweep's last rate: the knee lies beyond it.
        let (results, sweep) = swept(Some(900.0));
        assert_eq!(
            Knee::of(&results, &sweep, "mio", 1000.0),
            Knee::At {
                rate: 4000,
                p99: 900.0,
                beyond: true
            }
        );
    }

    #[test]
    fn a_rate_not_sustained_gives_no_latency() {
        let (results, sweep) = swept(None);
        let grid = latency(&results, &sweep);
        let mio = results
            .config
            .implementations
            .iter()
            .position(|i| i == "mio")
            .unwrap()
            + 1;
        let column: Vec<&str> = grid.rows.iter().map(|r| r[mio].text.as_str()).collect();
        assert_eq!(
            column,
            [
                "50us / 200us / 400us",
                "200us / 800us / 1.60ms",
                "not sustained (3,000/s)"
            ]
        );
        assert_eq!(thousands(1234567.0), "1,234,567");
    }
}
