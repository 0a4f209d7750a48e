//! Every figure a cell has, defined once: its key, label and unit, which
//! way is better, how a repetition gives it, how several client hosts'
//! parts make it, and whether and how the verdicts judge it. The tables,
//! the CSV, summary.json, `compare check`, `bisect --metric`, the history's
//! learned thresholds and the site iterate [`figures`]: a new figure is one
//! entry here and its measurement.

use std::collections::HashMap;
use std::sync::LazyLock;

use super::{Cost, Counted, Run, Usage};

/// Which way a figure is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
}

/// Whose figure it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Server,
    Client,
}

impl Side {
    pub fn word(self) -> &'static str {
        match self {
            Self::Server => "server",
            Self::Client => "client",
        }
    }
}

/// Which repetitions of a cell give the figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Every timed repetition.
    Runs,
    /// The cost runs, in which the kernel counts each system call (which
    /// slows every system call, so no timed figure comes from them).
    CostRuns,
}

/// How the figure of a repetition whose clients ran on several hosts
/// (`--client-host`) is made of the hosts' parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Merge {
    /// The hosts' bytes and blocks added up.
    Summed,
    /// The hosts' round-trip histograms merged, then read.
    Histograms,
    /// Over every connection of every host.
    Connections,
    /// The slowest host's.
    Slowest,
    /// Measured by this host's kernel only: absent where the clients ran
    /// elsewhere.
    Absent,
}

/// How the verdicts judge a figure, which sets its default threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judged {
    /// Timed: throughput and round trips.
    Timed,
    /// What a block cost a side, measured in the timed runs or the cost runs.
    Cost,
    /// Counted under callgrind: nearly deterministic.
    Counted,
}

impl Judged {
    pub fn word(self) -> &'static str {
        match self {
            Self::Timed => "timed",
            Self::Cost => "cost",
            Self::Counted => "counted",
        }
    }
}

/// One figure.
#[derive(Debug)]
pub struct Figure {
    /// Its name in files and on command lines (`server_cpu_us_per_block`).
    pub key: &'static str,
    /// Its short name in tables (`CPU us/block srv`).
    pub label: &'static str,
    pub unit: &'static str,
    pub better: Better,
    /// The side it belongs to, where it is one side's.
    pub side: Option<Side>,
    pub source: Source,
    pub merge: Merge,
    pub judged: Option<Judged>,
    /// Its value in a repetition of a cell of `block` bytes per block.
    pub read: fn(&Run, usize) -> Option<f64>,
}

impl Figure {
    /// The figure of `key`, if any.
    pub fn named(key: &str) -> Option<&'static Figure> {
        figures().find(|f| f.key == key)
    }

    /// The figures the verdicts judge, in the registry's order.
    pub fn judged() -> impl Iterator<Item = &'static Figure> {
        figures().filter(|f| f.judged.is_some())
    }

    pub fn bigger_is_better(&self) -> bool {
        self.better == Better::Higher
    }

    /// Whether the figure is counted under callgrind.
    pub fn counted(&self) -> bool {
        self.judged == Some(Judged::Counted)
    }

    /// Its value in `run`, of a cell of `block` bytes per block.
    pub fn of(&self, run: &Run, block: usize) -> Option<f64> {
        (self.read)(run, block).filter(|v| v.is_finite())
    }
}

impl PartialEq for Figure {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl Eq for Figure {}

impl PartialOrd for Figure {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// In the registry's order.
impl Ord for Figure {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        let at = |f: &Figure| PLACES.get(f.key);
        at(self).cmp(&at(other))
    }
}

/// Each figure's place in the registry, by key: figures key the maps that
/// hold a history's thresholds, and finding a place by searching the
/// registry was a quarter of what building a site took.
static PLACES: LazyLock<HashMap<&str, usize>> =
    LazyLock::new(|| figures().enumerate().map(|(at, f)| (f.key, at)).collect());

/// Per block of `block` bytes in `run`.
fn per_block(run: &Run, block: usize, total: f64) -> Option<f64> {
    let blocks = run.blocks(block);
    (blocks > 0.0).then(|| total / blocks)
}

fn usage(run: &Run, side: Side) -> Option<Usage> {
    match side {
        Side::Server => run.server_usage,
        Side::Client => run.client_usage,
    }
}

/// Microseconds of CPU a block cost `side`: from the process's CPU clock in
/// nanoseconds, or in files from before it was read, from its clock ticks.
fn cpu_us(run: &Run, block: usize, side: Side) -> Option<f64> {
    let u = usage(run, side)?;
    let us = match u.cpu_ns {
        Some(ns) => ns as f64 / 1e3,
        None => u.cpu_percent / 100.0 * run.seconds * 1e6,
    };
    per_block(run, block, us)
}

/// The share of `side`'s CPU that `part` (user or system) took, by clock
/// ticks, of its CPU per block: the ticks split what the clock measured.
fn cpu_part_us(run: &Run, block: usize, side: Side, part: fn(&Usage) -> f64) -> Option<f64> {
    let u = usage(run, side)?;
    let share = match u.cpu_percent {
        0.0 => 0.0,
        all => part(&u) / all,
    };
    Some(cpu_us(run, block, side)? * share)
}

/// Context switches a block cost `side`, from its threads' rates over the window.
fn switches(run: &Run, block: usize, side: Side, rate: fn(&Usage) -> f64) -> Option<f64> {
    per_block(run, block, rate(&usage(run, side)?) * run.seconds)
}

/// System calls a block cost `side`, counted in a cost run.
fn calls(run: &Run, block: usize, side: Side, kind: fn(&Cost) -> u64) -> Option<f64> {
    let cost = match side {
        Side::Server => run.server_cost,
        Side::Client => run.client_cost,
    }?;
    per_block(run, block, kind(&cost) as f64)
}

fn counted(run: &Run, figure: fn(&Counted) -> Option<f64>) -> Option<f64> {
    figure(run.counted.as_ref()?)
}

/// A figure of both sides: the server's entry and the client's, made by
/// one macro so that the two cannot drift apart.
macro_rules! sides {
    ($key:literal, $label:literal, $unit:literal, $source:expr, $judged:expr,
     |$run:ident, $block:ident, $side:ident| $read:expr) => {
        [
            Figure {
                key: concat!("server_", $key),
                label: concat!($label, " srv"),
                unit: $unit,
                better: Better::Lower,
                side: Some(Side::Server),
                source: $source,
                merge: Merge::Absent,
                judged: $judged,
                read: |$run, $block| {
                    let $side = Side::Server;
                    $read
                },
            },
            Figure {
                key: concat!("client_", $key),
                label: concat!($label, " cli"),
                unit: $unit,
                better: Better::Lower,
                side: Some(Side::Client),
                source: $source,
                merge: Merge::Absent,
                judged: $judged,
                read: |$run, $block| {
                    let $side = Side::Client;
                    $read
                },
            },
        ]
    };
}

const RUNS: Source = Source::Runs;
const COST_RUNS: Source = Source::CostRuns;
const COST: Option<Judged> = Some(Judged::Cost);
const COUNTED: Option<Judged> = Some(Judged::Counted);

const THROUGHPUT: [Figure; 15] = [
    Figure {
        key: "mib_per_s",
        label: "MiB/s",
        unit: "MiB/s",
        better: Better::Higher,
        side: None,
        source: RUNS,
        merge: Merge::Summed,
        judged: Some(Judged::Timed),
        read: |r, _| Some(r.mib_per_s),
    },
    Figure {
        key: "messages_per_s",
        label: "blocks/s",
        unit: "blocks/s",
        better: Better::Higher,
        side: None,
        source: RUNS,
        merge: Merge::Summed,
        judged: None,
        read: |r, _| Some(r.messages_per_s),
    },
    Figure {
        key: "rtt_p50_us",
        label: "p50 RTT us",
        unit: "us",
        better: Better::Lower,
        side: None,
        source: RUNS,
        merge: Merge::Histograms,
        judged: None,
        read: |r, _| Some(r.rtt.as_ref()?.p50_us),
    },
    Figure {
        key: "rtt_p95_us",
        label: "p95 RTT us",
        unit: "us",
        better: Better::Lower,
        side: None,
        source: RUNS,
        merge: Merge::Histograms,
        judged: None,
        read: |r, _| Some(r.rtt.as_ref()?.p95_us),
    },
    Figure {
        key: "rtt_p99_us",
        label: "p99 RTT us",
        unit: "us",
        better: Better::Lower,
        side: None,
        source: RUNS,
        merge: Merge::Histograms,
        judged: Some(Judged::Timed),
        read: |r, _| Some(r.rtt.as_ref()?.p99_us),
    },
    Figure {
        key: "rtt_p999_us",
        label: "p99.9 RTT us",
        unit: "us",
        better: Better::Lower,
        side: None,
        source: RUNS,
        merge: Merge::Histograms,
        judged: None,
        read: |r, _| Some(r.rtt.as_ref()?.p999_us),
    },
    Figure {
        key: "connect_seconds",
        label: "connect s",
        unit: "s",
        better: Better::Lower,
        side: None,
        source: RUNS,
        merge: Merge::Slowest,
        judged: None,
        read: |r, _| r.connect_seconds,
    },
    Figure {
        key: "fairness",
        label: "fairness",
        unit: "Jain's index",
        better: Better::Higher,
        side: None,
        source: RUNS,
        merge: Merge::Connections,
        judged: None,
        read: |r, _| r.fairness,
    },
    Figure {
        key: "loss_percent",
        label: "loss %",
        unit: "%",
        better: Better::Lower,
        side: None,
        source: RUNS,
        merge: Merge::Summed,
        judged: None,
        read: |r, _| Some(r.datagrams?.loss_percent()),
    },
    Figure {
        key: "window_spread",
        label: "window spread",
        unit: "(max - min) / median",
        better: Better::Lower,
        side: None,
        source: RUNS,
        merge: Merge::Summed,
        judged: None,
        read: |r, _| r.series.as_ref()?.spread(),
    },
    Figure {
        key: "server_cpu_percent",
        label: "CPU % srv",
        unit: "%",
        better: Better::Lower,
        side: Some(Side::Server),
        source: RUNS,
        merge: Merge::Absent,
        judged: None,
        read: |r, _| Some(r.server_usage?.cpu_percent),
    },
    Figure {
        key: "client_cpu_percent",
        label: "CPU % cli",
        unit: "%",
        better: Better::Lower,
        side: Some(Side::Client),
        source: RUNS,
        merge: Merge::Absent,
        judged: None,
        read: |r, _| Some(r.client_usage?.cpu_percent),
    },
    Figure {
        key: "mib_per_server_cpu_s",
        label: "MiB/CPU-s srv",
        unit: "MiB per CPU-second",
        better: Better::Higher,
        side: Some(Side::Server),
        source: RUNS,
        merge: Merge::Absent,
        judged: None,
        read: |r, _| r.mib_per_server_cpu_s,
    },
    Figure {
        key: "server_peak_rss_kib",
        label: "peak RSS KiB srv",
        unit: "KiB",
        better: Better::Lower,
        side: Some(Side::Server),
        source: RUNS,
        merge: Merge::Absent,
        judged: None,
        read: |r, _| Some(r.server_usage?.peak_rss_kib as f64),
    },
    Figure {
        key: "client_peak_rss_kib",
        label: "peak RSS KiB cli",
        unit: "KiB",
        better: Better::Lower,
        side: Some(Side::Client),
        source: RUNS,
        merge: Merge::Absent,
        judged: None,
        read: |r, _| Some(r.client_usage?.peak_rss_kib as f64),
    },
];

const CPU: [Figure; 2] = sides!(
    "cpu_us_per_block",
    "CPU us/block",
    "us",
    RUNS,
    COST,
    |r, b, s| cpu_us(r, b, s)
);
const USER: [Figure; 2] = sides!(
    "user_us_per_block",
    "user us/block",
    "us",
    RUNS,
    None,
    |r, b, s| cpu_part_us(r, b, s, |u| u.user_percent)
);
const SYSTEM: [Figure; 2] = sides!(
    "system_us_per_block",
    "system us/block",
    "us",
    RUNS,
    None,
    |r, b, s| cpu_part_us(r, b, s, |u| u.system_percent)
);
const VOLUNTARY: [Figure; 2] = sides!(
    "voluntary_switches_per_block",
    "vol. switches/block",
    "switches",
    RUNS,
    COST,
    |r, b, s| switches(r, b, s, |u| u.voluntary_switches_per_s)
);
const INVOLUNTARY: [Figure; 2] = sides!(
    "involuntary_switches_per_block",
    "invol. switches/block",
    "switches",
    RUNS,
    COST,
    |r, b, s| switches(r, b, s, |u| u.involuntary_switches_per_s)
);
const SYSCALLS: [Figure; 2] = sides!(
    "syscalls_per_block",
    "calls/block",
    "system calls",
    COST_RUNS,
    COST,
    |r, b, s| calls(r, b, s, |c| c.syscalls)
);
const READS: [Figure; 2] = sides!(
    "reads_per_block",
    "reads/block",
    "system calls",
    COST_RUNS,
    COST,
    |r, b, s| calls(r, b, s, |c| c.reads)
);
const WRITES: [Figure; 2] = sides!(
    "writes_per_block",
    "writes/block",
    "system calls",
    COST_RUNS,
    COST,
    |r, b, s| calls(r, b, s, |c| c.writes)
);
const WAITS: [Figure; 2] = sides!(
    "waits_per_block",
    "waits/block",
    "system calls",
    COST_RUNS,
    COST,
    |r, b, s| calls(r, b, s, |c| c.waits)
);
const FUTEX: [Figure; 2] = sides!(
    "futex_per_block",
    "futex/block",
    "system calls",
    COST_RUNS,
    COST,
    |r, b, s| calls(r, b, s, |c| c.futex)
);
const OTHER: [Figure; 2] = sides!(
    "other_syscalls_per_block",
    "other calls/block",
    "system calls",
    COST_RUNS,
    None,
    |r, b, s| calls(r, b, s, |c| c.other_syscalls())
);
const INSTRUCTIONS: [Figure; 2] = sides!(
    "instructions_per_block",
    "instr/block",
    "instructions",
    RUNS,
    COUNTED,
    |r, _b, s| counted(
        r,
        match s {
            Side::Server => |c| Some(c.server_instructions),
            Side::Client => |c| Some(c.client_instructions),
        }
    )
);
const COUNTED_CALLS: [Figure; 2] = sides!(
    "counted_syscalls_per_block",
    "counted calls/block",
    "system calls",
    RUNS,
    COUNTED,
    |r, _b, s| counted(
        r,
        match s {
            Side::Server => |c| c.server_syscalls,
            Side::Client => |c| c.client_syscalls,
        }
    )
);

/// Every figure, in the order tables and files list them: each kind of
/// cost the server's, then the client's.
static GROUPS: &[&[Figure]] = &[
    &THROUGHPUT,
    &CPU,
    &USER,
    &SYSTEM,
    &VOLUNTARY,
    &INVOLUNTARY,
    &SYSCALLS,
    &READS,
    &WRITES,
    &WAITS,
    &FUTEX,
    &OTHER,
    &INSTRUCTIONS,
    &COUNTED_CALLS,
];

/// Every figure, in the registry's order.
pub fn figures() -> impl Iterator<Item = &'static Figure> {
    GROUPS.iter().flat_map(|group| group.iter())
}

/// A figure of the registry by key, for the code that names one.
pub fn figure(key: &str) -> &'static Figure {
    Figure::named(key).unwrap_or_else(|| panic!("no figure {key} in the registry"))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn every_key_and_label_is_one_figure_s() {
        let keys: BTreeSet<&str> = figures().map(|f| f.key).collect();
        let labels: BTreeSet<&str> = figures().map(|f| f.label).collect();
        assert_eq!(keys.len(), figures().count());
        assert_eq!(labels.len(), figures().count());
    }

    #[test]
    fn every_cost_is_worse_up_and_names_its_side() {
        for f in figures().filter(|f| f.judged == Some(Judged::Cost)) {
            assert_eq!(f.better, Better::Lower, "{}", f.key);
            let side = f.side.unwrap_or_else(|| panic!("{} names no side", f.key));
            assert!(f.key.starts_with(side.word()), "{}", f.key);
        }
    }

    #[test]
    fn cpu_per_block_comes_from_the_clock_in_nanoseconds_and_ticks_split_it() {
        let mut run = crate::fixtures::small().cells[0].runs[0].clone();
        let usage = run.server_usage.as_mut().unwrap();
        (usage.cpu_percent, usage.user_percent, usage.system_percent) = (50.0, 40.0, 10.0);
        usage.cpu_ns = Some(12_345_678);
        let block = 16384;
        run.bytes = 1000 * block as u64;
        let us = |key| figure(key).of(&run, block).unwrap();
        assert!((us("server_cpu_us_per_block") - 12.345678).abs() < 1e-9);
        assert!((us("server_user_us_per_block") - 12.345678 * 0.8).abs() < 1e-9);
        assert!((us("server_system_us_per_block") - 12.345678 * 0.2).abs() < 1e-9);
        // A file from before the clock was read: its ticks alone.
        run.server_usage.as_mut().unwrap().cpu_ns = None;
        let from_ticks = 0.5 * run.seconds * 1e6 / 1000.0;
        let us = |key| figure(key).of(&run, block).unwrap();
        assert!((us("server_cpu_us_per_block") - from_ticks).abs() < 1e-9);
    }
}
