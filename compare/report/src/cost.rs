//! The cost tables: what a block cost each process (CPU time, system calls
//! by kind, context switches), and how throughput moved inside the window.
//! They explain the throughput tables: counts per block hold still where
//! seconds do not.

use super::grid::{Entry, Grid, View};
use model::results::registry::figure;
use model::results::{Cell, Run};

/// What the cost tables' columns mean.
pub const LEGEND: &str = "Cost tables: per block round-tripped, medians of the runs; µs = CPU \
    time of all the process's threads, from its CPU clock in nanoseconds (user in brackets, the \
    clock split by the process's user and system ticks); calls = system calls over the window \
    of the cost runs, as the kernel counted them for the process and every thread (read: read, \
    readv, recvfrom, recvmsg; write: write, writev, sendto, sendmsg; wait: epoll_wait, poll, \
    io_uring_enter; futex; other), switches = context switches of its threads, voluntary + \
    involuntary; window = MiB/s slice by slice inside the \
    window of the median run, and (max - min) / median of the slices; instr = user-space \
    instructions per block, counted under valgrind's callgrind (--counted), the runtime's own \
    work and not the kernel's";

const HEADER: [&str; 8] = [
    "implementation",
    "µs srv",
    "calls srv",
    "switches srv",
    "µs cli",
    "calls cli",
    "switches cli",
    "window",
];

/// Whether a cell has a cost figure: CPU or system calls per block.
pub fn has_cost(cell: &Cell) -> bool {
    ["server", "client"].iter().any(|side| {
        let of = |what| cell.summary(figure(&format!("{side}_{what}_per_block")));
        of("cpu_us").is_some() || of("syscalls").is_some()
    })
}

/// One table per load where a cell was counted or has its window's series.
pub fn tables(view: &View) -> Vec<Grid> {
    view.loads
        .iter()
        .filter_map(|&load| {
            let cells: Vec<&Cell> = view.cells_at(load).collect();
            let counted = cells
                .iter()
                .any(|c| has_cost(c) || c.runs.iter().any(|r| r.series.is_some()));
            let instructions = cells
                .iter()
                .any(|c| c.summary(figure("server_instructions_per_block")).is_some());
            let mut header: Vec<String> = HEADER.iter().map(ToString::to_string).collect();
            if instructions {
                header.extend(["instr srv".into(), "instr cli".into()]);
            }
            counted.then(|| Grid {
                title: view.titled(format!("Cost per block, {}", load.label())),
                header,
                rows: cells.into_iter().map(|c| row(c, instructions)).collect(),
            })
        })
        .collect()
}

fn row(cell: &Cell, instructions: bool) -> Vec<Entry> {
    let median = |side: &str, what: &str| -> Option<f64> {
        Some(cell.summary(figure(&format!("{side}_{what}")))?.median)
    };
    let side = |side| {
        [
            cpu(side, &median),
            calls(side, &median),
            switches(side, &median),
        ]
    };
    let [srv_cpu, srv_calls, srv_switches] = side("server");
    let [cli_cpu, cli_calls, cli_switches] = side("client");
    let window =
        median_run(cell)
            .and_then(|run| run.series.as_ref())
            .map_or("-".into(), |series| {
                let spread = series
                    .spread()
                    .map_or(String::new(), |s| format!(" {:.0}%", s * 100.0));
                format!("{}{spread}", sparkline(&series.mib_per_s()))
            });
    let mut row: Vec<String> = vec![
        cell.implementation.clone(),
        srv_cpu,
        srv_calls,
        srv_switches,
        cli_cpu,
        cli_calls,
        cli_switches,
        window,
    ];
    if instructions {
        let instr = |side| median(side, "instructions_per_block");
        row.push(instr("server").map_or("-".into(), |n| format!("{n:.0}")));
        row.push(instr("client").map_or("-".into(), |n| format!("{n:.0}")));
    }
    row.into_iter().map(Entry::plain).collect()
}

/// A side's median of a figure (`cpu_us_per_block`), where it has one.
type Median<'a> = dyn Fn(&str, &str) -> Option<f64> + 'a;

/// "12.3 (4.1)": CPU microseconds per block, user time in brackets.
fn cpu(side: &str, median: &Median) -> String {
    let all = median(side, "cpu_us_per_block");
    let user = median(side, "user_us_per_block");
    all.zip(user)
        .map_or("-".into(), |(all, user)| format!("{all:.1} ({user:.1})"))
}

/// "4.0: 2.0 read, 1.0 write, 1.0 wait": system calls per block, by the
/// kinds there were.
fn calls(side: &str, median: &Median) -> String {
    let Some(all) = median(side, "syscalls_per_block") else {
        return "-".into();
    };
    let kinds: Vec<String> = [
        ("reads", "read"),
        ("writes", "write"),
        ("waits", "wait"),
        ("futex", "futex"),
        ("other_syscalls", "other"),
    ]
    .iter()
    .filter_map(|(key, kind)| {
        let n = median(side, &format!("{key}_per_block")).filter(|n| *n >= 0.005)?;
        Some(format!("{n:.2} {kind}"))
    })
    .collect();
    match kinds.is_empty() {
        true => format!("{all:.2}"),
        false => format!("{all:.2}: {}", kinds.join(", ")),
    }
}

/// "1.02 + 0.10": voluntary and involuntary context switches per block.
fn switches(side: &str, median: &Median) -> String {
    let voluntary = median(side, "voluntary_switches_per_block");
    let involuntary = median(side, "involuntary_switches_per_block");
    voluntary
        .zip(involuntary)
        .map_or("-".into(), |(v, i)| format!("{v:.2} + {i:.2}"))
}

/// The run whose throughput is the cell's median (the lower of the middle
/// two for an even count).
pub fn median_run(cell: &Cell) -> Option<&Run> {
    let mut runs: Vec<&Run> = cell.runs.iter().collect();
    runs.sort_by(|a, b| a.mib_per_s.total_cmp(&b.mib_per_s));
    runs.get(runs.len().saturating_sub(1) / 2).copied()
}

/// Values as bars of eight heights, scaled from zero to the largest.
pub fn sparkline(values: &[f64]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let top = values.iter().copied().fold(0.0, f64::max);
    values
        .iter()
        .map(|v| match top > 0.0 {
            true => BARS[((v / top * 7.0).round() as usize).min(7)],
            false => BARS[0],
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sparkline_scales_to_its_largest_value() {
        assert_eq!(sparkline(&[0.0, 50.0, 100.0]), "▁▅█");
        assert_eq!(sparkline(&[10.0, 10.0]), "██");
        assert_eq!(sparkline(&[0.0, 0.0]), "▁▁");
        assert_eq!(sparkline(&[]), "");
    }
}
