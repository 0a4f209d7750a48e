//! The matrix loop: every group's cells, repetitions interleaved, each
//! repetition asked of a [`Measure`] and recorded, the results file saved
//! after every one. A cell that fails or cannot run costs that cell only;
//! an interrupt stops the loop with what was measured kept.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::interrupt::Interrupt;
use super::prepare::Placements;
use crate::plan::Plan;
use crate::progress::Progress;
use measure::repetition::{Job, Measure, RepetitionError};
use model::implementation::Implementation;
use model::matrix::{Load, Workload};
use model::placement::Placement;
use model::program::Programs;
use model::results::{Cell, Results, Run, Status, registry};

/// How the loop ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Ended {
    /// Every repetition of the plan ran (or its cell had no figure already).
    Completed,
    Interrupted,
}

/// What the loop runs with, besides the results it fills.
pub struct Execution<'a> {
    pub plan: &'a Plan,
    pub programs: &'a Programs,
    pub placements: &'a Placements,
    /// Where the results are saved after every repetition.
    pub path: &'a Path,
    pub interrupt: &'a Interrupt,
    /// Whether the kernel can count the processes' system calls here, and
    /// if not, why: each cell then gets a cost run, or the reason.
    pub counting: &'a Result<(), String>,
}

/// The cells of one group: every implementation at one load of one
/// workload, plain and inside TLS, in each of its server shapes.
struct Group<'a> {
    load: Load,
    placement: &'a Placement,
    cells: Vec<usize>,
}

impl Group<'_> {
    /// The indices of the group's cells that `which` picks, in order.
    fn due(&self, results: &Results, which: impl Fn(&Cell) -> bool) -> Vec<usize> {
        self.cells
            .iter()
            .copied()
            .filter(|&i| which(&results.cells[i]))
            .collect()
    }
}

impl Execution<'_> {
    /// Runs every repetition `results` does not hold yet: the first rounds
    /// for every cell, then, with a precision to reach, further rounds for
    /// the cells still short of it, each group within its share of the budget.
    pub fn run(
        &self,
        results: &mut Results,
        measure: &mut dyn Measure,
        progress: &mut Progress,
    ) -> Result<Ended> {
        let order = results
            .cells
            .iter()
            .flat_map(|c| c.runs.iter().chain(&c.cost_runs).map(|r| r.order))
            .max()
            .unwrap_or(0);
        let mut state = Loop {
            execution: self,
            results,
            measure,
            progress,
            order,
        };
        let ended = match state.all()? {
            true => Ended::Interrupted,
            false => Ended::Completed,
        };
        Ok(ended)
    }
}

/// The loop's own state: the results it fills, what measures each
/// repetition, the progress shown, and the place in the run's sequence of
/// the last repetition.
struct Loop<'a> {
    execution: &'a Execution<'a>,
    results: &'a mut Results,
    measure: &'a mut dyn Measure,
    progress: &'a mut Progress,
    order: usize,
}

impl<'a> Loop<'a> {
    /// Every group of the plan in turn; whether an interrupt stopped it.
    fn all(&mut self) -> Result<bool> {
        let plan = self.execution.plan;
        let mut budget = plan.budget;
        for (done, (workloads, load)) in plan.groups.iter().enumerate() {
            let group = self.group(workloads, *load);
            for repetition in 1..=plan.repeat {
                let due = group.due(self.results, |cell| cell.runs.len() < repetition);
                if self.round(&group, &due)? {
                    return Ok(true);
                }
            }
            if let Some(target) = plan.precision {
                let share = budget.map(|left| left / (plan.groups.len() - done) as u32);
                let started = Instant::now();
                if self.until_precise(&group, target, share)? {
                    return Ok(true);
                }
                if let Some(left) = &mut budget {
                    *left = left.saturating_sub(started.elapsed());
                }
            }
            for round in 1..=plan.cost_runs {
                if self.cost_round(&group, round)? {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// The cells of every implementation at `load` of each of `workloads`
    /// (plain and TLS, its shapes), an implementation's side by side, made
    /// where the results do not hold them yet.
    fn group(&mut self, workloads: &[Workload], load: Load) -> Group<'a> {
        let execution = self.execution;
        let (plan, programs) = (execution.plan, execution.programs);
        let placement = &execution.placements[&load];
        let mut cells = Vec::new();
        for server in &plan.servers {
            for &workload in workloads {
                let client = plan.client_of(server, &workload);
                cells.push(self.results.cell_index(
                    (server, programs[&server.name()].version()),
                    (client, programs[&client.name()].version()),
                    load,
                    workload,
                    placement,
                ));
            }
        }
        let names: Vec<String> = plan.servers.iter().map(Implementation::name).collect();
        for &i in &cells {
            self.resolve_share(i, &names);
        }
        Group {
            load,
            placement,
            cells,
        }
    }

    /// The rate of cell `i`, where it is a share of capacity not yet
    /// resolved: that share of the blocks a second the first of
    /// `implementations` with a figure there made in the closed loop at the
    /// same load, in the same workload otherwise (which ran before it): the
    /// same rate for every implementation. Without such a figure the cell
    /// is unavailable.
    fn resolve_share(&mut self, i: usize, implementations: &[String]) {
        let cell = &self.results.cells[i];
        let (Some(share), None) = (cell.rate_share, cell.rate) else {
            return;
        };
        let (load, closed) = (cell.load(), cell.workload().closed());
        let capacity = implementations.iter().find_map(|name| {
            let cells = self.results.cells.iter();
            let mut same = cells.filter(|c| c.load() == load && c.workload() == closed);
            let base = same.find(|c| &c.implementation == name)?;
            base.summary(registry::figure("messages_per_s"))
        });
        let cell = &mut self.results.cells[i];
        match capacity {
            Some(capacity) => {
                let rate = (capacity.median * share as f64 / 100.0).round().max(1.0);
                cell.rate = Some(rate as u64);
            }
            None => cell.set_unavailable(
                "no capacity measured".into(),
                format!(
                    "{share}% of capacity: no implementation has a closed-loop figure at {} in \
                     this workload to take it of",
                    load.label()
                ),
            ),
        }
    }

    /// Further rounds of the group's cells still short of `target`, within
    /// `share` of the budget; whether an interrupt stopped them.
    fn until_precise(
        &mut self,
        group: &Group,
        target: f64,
        share: Option<Duration>,
    ) -> Result<bool> {
        let started = Instant::now();
        loop {
            let max_repeat = self.execution.plan.max_repeat;
            let due = group.due(self.results, |cell| {
                cell.short_of(target) && cell.runs.len() < max_repeat
            });
            if due.is_empty() || share.is_some_and(|share| started.elapsed() >= share) {
                return Ok(false);
            }
            self.progress.more(due.len());
            if self.round(group, &due)? {
                return Ok(true);
            }
        }
    }

    /// Cost run `round` of each of the group's cells that has a figure and
    /// every cost run before it: one more repetition, which the kernel
    /// counts; whether an interrupt stopped it. A cost run that fails costs
    /// the cell its later cost runs, not its figure; a cell that cannot be
    /// counted at all (its `cost_absent` says why) gets none.
    fn cost_round(&mut self, group: &Group, round: usize) -> Result<bool> {
        let (execution, results) = (self.execution, &mut *self.results);
        let due = group.due(results, |cell| {
            cell.status == Status::Ok
                && cell.cost_runs.len() == round - 1
                && (round > 1 || cell.cost_absent.is_none())
        });
        if let Err(why) = execution.counting {
            for &i in &due {
                results.cells[i].cost_absent = Some(why.clone());
            }
            save(results, execution.path)?;
            return Ok(false);
        }
        self.progress.more(due.len());
        for i in due {
            if execution.interrupt.raised() {
                return Ok(true);
            }
            let cell = &results.cells[i];
            let of = match execution.plan.cost_runs {
                1 => String::new(),
                n => format!(" {round}/{n}"),
            };
            let what = format!("{} cost run{of}", execution.label(cell, group));
            self.progress.start(&what);
            self.order += 1;
            let measured = self
                .measure
                .measure(&execution.job(results, i, group, true));
            if execution.interrupt.raised() {
                return Ok(true);
            }
            let cell = &mut results.cells[i];
            match measured {
                Ok(m) if m.server_cost.is_some() || m.client_cost.is_some() => {
                    let absent = m.cost_absent.clone();
                    match m.into_run(self.order, cell.block) {
                        Ok(run) => {
                            self.progress.finished(&format!("{what}  {}", brief(&run)));
                            cell.push_cost_run(run, execution.plan.noisy_percent);
                            cell.cost_absent = absent;
                        }
                        Err(e) => cell.cost_absent = Some(format!("the cost run failed: {e:#}")),
                    }
                }
                Ok(m) => {
                    let why = m
                        .cost_absent
                        .unwrap_or_else(|| "nothing was counted".into());
                    self.progress
                        .finished(&format!("{what}  not counted: {why}"));
                    cell.cost_absent = Some(why);
                }
                Err(e) => {
                    self.progress.finished(&format!("{what}  FAILED: {e}"));
                    cell.cost_absent = Some(format!("the cost run failed: {e}"));
                }
            }
            save(results, execution.path)?;
        }
        Ok(false)
    }

    /// One repetition of each of the `due` cells of `group`, in order, each
    /// saved as it ends; whether an interrupt stopped the round.
    fn round(&mut self, group: &Group, due: &[usize]) -> Result<bool> {
        let (execution, results) = (self.execution, &mut *self.results);
        for &i in due {
            let cell = &results.cells[i];
            let what = format!(
                "{} run {}/{}",
                execution.label(cell, group),
                cell.runs.len() + 1,
                execution.plan.max_repeat
            );
            if execution.interrupt.raised() {
                return Ok(true);
            }
            if cell.status != Status::Ok {
                self.progress
                    .finished(&format!("{what}  skipped: the cell has no figure already"));
                continue;
            }
            self.progress.start(&what);
            self.order += 1;
            let job = execution.job(results, i, group, false);
            let (order, block) = (self.order, cell.block);
            let outcome = self
                .measure
                .measure(&job)
                .and_then(|m| m.into_run(order, block).map_err(Into::into));
            if execution.interrupt.raised() {
                // Killed by the interrupt: not a fault of the implementation.
                return Ok(true);
            }
            let cell = &mut results.cells[i];
            match outcome {
                Ok(run) => {
                    self.progress.finished(&format!("{what}  {}", brief(&run)));
                    cell.push(run, execution.plan.noisy_percent);
                }
                Err(e @ RepetitionError::Unavailable { .. }) => {
                    self.progress.finished(&format!("{what}  unavailable: {e}"));
                    let RepetitionError::Unavailable { short, .. } = &e else {
                        unreachable!()
                    };
                    cell.set_unavailable(short.clone(), e.to_string());
                }
                Err(e @ RepetitionError::Failed(_)) => {
                    self.progress.finished(&format!("{what}  FAILED: {e}"));
                    cell.fail(e.to_string());
                }
            }
            save(results, execution.path)?;
        }
        Ok(false)
    }
}

impl Execution<'_> {
    /// A cell in progress lines: workload (where the run has several), load,
    /// implementation.
    fn label(&self, cell: &Cell, group: &Group) -> String {
        let workload = match self.plan.workloads() {
            1 => String::new(),
            _ => format!("{}, ", cell.workload().label()),
        };
        let client = match group.load.client_threads {
            Some(n) => format!(" (client {n})"),
            None => String::new(),
        };
        format!(
            "{workload}{:>2} threads{client} {:>5} connections  {:<12}",
            group.load.threads, group.load.connections, cell.implementation
        )
    }

    /// A repetition of cell `i` of `group`, counted by the kernel or not.
    fn job<'j>(&'j self, results: &Results, i: usize, group: &'j Group, counting: bool) -> Job<'j> {
        let (cell, config) = (&results.cells[i], &results.config);
        Job {
            server: &self.programs[&cell.implementation],
            client: &self.programs[&cell.client],
            load: group.load,
            workload: cell.workload(),
            rate: cell.rate,
            work: config.work,
            warmup: Duration::from_secs_f64(config.warmup),
            seconds: Duration::from_secs_f64(config.seconds),
            latency: self.plan.latency,
            arrival: config.arrival(),
            placement: group.placement,
            counting,
        }
    }
}

/// Saves the runs so far. Where the folder cannot take them (full, or
/// turned read-only), the file keeps what the last save wrote (each save
/// replaces it whole), and the error says how to go on.
fn save(results: &Results, path: &Path) -> Result<()> {
    results.save(path).with_context(|| {
        let out = path.parent().unwrap_or(Path::new("."));
        format!(
            "the run stops: {} keeps the runs saved before this one; once the folder \
             can be written again, go on with: compare run --resume {}",
            path.display(),
            out.display()
        )
    })
}

/// A run's outcome in one line.
fn brief(run: &Run) -> String {
    let mut line = format!("{:>9.1} MiB/s", run.mib_per_s);
    match (&run.rtt, &run.open_loop) {
        (_, Some(open)) if open.not_sustained.is_some() => {
            line += &format!(
                "  rate not sustained: {:.0} of {}/s",
                open.achieved, open.rate
            );
        }
        (Some(rtt), _) => line += &format!("  p99 {:>8.0} us", rtt.p99_us),
        (None, _) => {}
    }
    if let (Some(s), Some(c)) = (run.server_usage, run.client_usage) {
        line += &format!(
            "  CPU server {:>4.0}% client {:>4.0}%",
            s.cpu_percent, c.cpu_percent
        );
    }
    line
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::path::PathBuf;

    use anyhow::anyhow;
    use pingpong::server::Shape;
    use pingpong::wire::ClientResult;

    use super::*;
    use measure::repetition::{ClientMeasurement, Measurement, Side};
    use model::implementation::Implementation;
    use model::matrix::cross;
    use model::program::Program;
    use model::results::{Config, Cost};

    /// What the mock answers for an implementation's `n`th call (from 0).
    type Answer = fn(usize) -> Result<Measurement, RepetitionError>;

    /// Answers every repetition at once, in the measure's place: MiB/s by
    /// order of the call, or what `answers` says for an implementation.
    struct Mock {
        calls: Vec<(String, Load)>,
        /// The server shape of each call.
        shapes: Vec<Shape>,
        answers: HashMap<String, Answer>,
        /// Raised on the call with this number (1-based), as Ctrl-C would be.
        interrupt_at: Option<(usize, Interrupt)>,
        /// Implementations that have no tasks: every shape but the echo is
        /// unavailable to them.
        no_tasks: Vec<&'static str>,
        /// The open loop's rate of each call.
        rates: Vec<Option<u64>>,
    }

    fn mock() -> Mock {
        Mock {
            calls: Vec::new(),
            shapes: Vec::new(),
            answers: HashMap::new(),
            interrupt_at: None,
            no_tasks: Vec::new(),
            rates: Vec::new(),
        }
    }

    fn measured(bytes: u64) -> Measurement {
        Measurement {
            client: ClientMeasurement::Ours(Box::new(ClientResult {
                threads: 1,
                connections: 1,
                block: 16384,
                bytes,
                seconds: 1.0,
                connect_seconds: 0.01,
                verified_connections: 1,
                fairness: Some(1.0),
                starved_connections: 0,
                rtt_histogram: None,
                connect_histogram: None,
                first_rtt_histogram: None,
                opened_connections: None,
                open_loop: None,
                tls: None,
                datagrams: None,
                cpus: vec![1],
                series: vec![bytes / 2, bytes - bytes / 2],
                slice_seconds: vec![0.5, 0.5],
                window_edges: None,
            })),
            server_usage: None,
            client_usage: None,
            server_cpus: vec![0],
            server_cost: None,
            client_cost: None,
            cost_absent: Some("counted by no kernel: a mock".into()),
            counted: None,
            tcp: None,
            accept_queue: None,
            served: None,
            client_hosts: None,
        }
    }

    impl Measure for Mock {
        fn measure(&mut self, job: &Job) -> Result<Measurement, RepetitionError> {
            let Program::Binary { path, .. } = job.server else {
                unreachable!("the mock runs ours only")
            };
            let name = path.to_string_lossy().into_owned();
            if job.counting {
                // A cost run: 50 MiB (3,200 blocks) counted as the kernel would.
                let mut m = measured(50 << 20);
                m.server_cost = Some(Cost {
                    syscalls: 3200,
                    reads: 1600,
                    writes: 800,
                    waits: 800,
                    futex: 0,
                });
                return Ok(m);
            }
            if job.workload.shape.hands_off() && self.no_tasks.contains(&name.as_str()) {
                return Err(RepetitionError::Unavailable {
                    side: Side::Server,
                    short: "no tasks to hand blocks to".into(),
                    message: "no tasks to hand blocks to".into(),
                });
            }
            self.calls.push((name.clone(), job.load));
            self.shapes.push(job.workload.shape);
            self.rates.push(job.rate);
            if let Some((at, interrupt)) = &self.interrupt_at
                && *at == self.calls.len()
            {
                interrupt.raise();
            }
            let nth = self.calls.iter().filter(|(n, _)| *n == name).count() - 1;
            match self.answers.get(&name) {
                Some(answer) => answer(nth),
                None => Ok(measured((self.calls.len() as u64) << 20)),
            }
        }
    }

    fn config(implementations: &[&str], loads: Vec<Load>, repeat: usize) -> Config {
        Config {
            implementations: implementations.iter().map(|s| s.to_string()).collect(),
            client: None,
            loads,
            block: 16384,
            blocks: vec![16384],
            windows: vec![1],
            work: 0,
            protocols: Vec::new(),
            windows_at: Vec::new(),
            shapes: Vec::new(),
            seconds: 1.0,
            warmup: 0.0,
            repeat,
            command: "compare run".into(),
            started: "2026-11-30T00:00:00+00:00".into(),
            ended: None,
            pin: None,
            noisy_percent: None,
            latency: None,
            cost: None,
            cost_runs: None,
            resumed: Vec::new(),
            precision_percent: None,
            max_repeat: None,
            budget_seconds: None,
            arrival: None,
            churn: None,
            rates: Vec::new(),
            rate_shares: Vec::new(),
            tls: None,
            releases: Vec::new(),
            sources: Vec::new(),
            p99_bound_us: None,
            counted_blocks: None,
            externals: Vec::new(),
            remote: None,
            client_hosts: Vec::new(),
        }
    }

    /// Runs the loop over `results` with `measure`; saves into a fresh folder.
    /// The kernel counts nothing here: no cost runs.
    fn execute(results: &mut Results, measure: &mut Mock, interrupt: &Interrupt) -> Ended {
        execute_counting(
            results,
            measure,
            interrupt,
            Err("not counted in these tests".into()),
        )
    }

    fn execute_counting(
        results: &mut Results,
        measure: &mut Mock,
        interrupt: &Interrupt,
        counting: Result<(), String>,
    ) -> Ended {
        let plan = Plan::of(&results.config).unwrap();
        // Each implementation's "binary" is its own name, for the mock to read.
        let programs: Programs = plan
            .implementations()
            .iter()
            .map(|i| {
                let Implementation::Ours { adapter, knobs, .. } = i else {
                    panic!("the mock runs ours only");
                };
                let path = PathBuf::from(i.name());
                (
                    i.name(),
                    Program::Binary {
                        path,
                        version: "1.0.0".into(),
                        adapter,
                        knobs: knobs.clone(),
                        lock: None,
                    },
                )
            })
            .collect();
        let placement = Placement {
            server_cpus: vec![0],
            client_cpus: vec![1],
            oversubscribed: false,
        };
        let placements = results
            .config
            .loads
            .iter()
            .map(|l| (*l, placement.clone()))
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.json");
        let execution = Execution {
            plan: &plan,
            programs: &programs,
            placements: &placements,
            path: &path,
            interrupt,
            counting: &counting,
        };
        let ended = execution
            .run(results, measure, &mut Progress::new(plan.runs().0, 0, true))
            .unwrap();
        // What was saved last is what the loop holds.
        let saved = Results::load(&path).unwrap();
        assert_eq!(
            serde_json::to_value(&saved.cells).unwrap(),
            serde_json::to_value(&results.cells).unwrap()
        );
        ended
    }

    fn orders(results: &Results, implementation: &str) -> Vec<usize> {
        let cell = results
            .cells
            .iter()
            .find(|c| c.implementation == implementation)
            .unwrap();
        cell.runs.iter().map(|r| r.order).collect()
    }

    #[test]
    fn repetitions_interleave_the_implementations_load_by_load() {
        let mut r = Results::new(config(&["tokio", "mio", "smol"], cross(&[1], &[1, 10]), 2));
        let mut measure = mock();
        assert_eq!(
            execute(&mut r, &mut measure, &Interrupt::default()),
            Ended::Completed
        );
        let called: Vec<(&str, usize)> = measure
            .calls
            .iter()
            .map(|(n, l)| (n.as_str(), l.connections))
            .collect();
        assert_eq!(
            called,
            [
                ("tokio", 1),
                ("mio", 1),
                ("smol", 1),
                ("tokio", 1),
                ("mio", 1),
                ("smol", 1),
                ("tokio", 10),
                ("mio", 10),
                ("smol", 10),
                ("tokio", 10),
                ("mio", 10),
                ("smol", 10),
            ]
        );
        assert_eq!(r.cells.len(), 6);
        assert_eq!(orders(&r, "tokio"), [1, 4]);
        assert_eq!(orders(&r, "smol"), [3, 6]);
        // The figure is the median of the runs: the 1st and 4th call moved 1 and 4 MiB.
        assert_eq!(r.cells[0].mib_per_s.unwrap().median, 2.5);
    }

    #[test]
    fn an_implementation_s_shapes_run_side_by_side_in_every_round() {
        let mut config = config(&["tokio", "mio"], cross(&[1], &[1]), 2);
        config.shapes = vec![Shape::Echo, Shape::Spawn];
        let mut r = Results::new(config);
        let mut measure = mock();
        execute(&mut r, &mut measure, &Interrupt::default());
        let called: Vec<(&str, Shape)> = measure
            .calls
            .iter()
            .zip(&measure.shapes)
            .map(|((n, _), &s)| (n.as_str(), s))
            .collect();
        let round = [
            ("tokio", Shape::Echo),
            ("tokio", Shape::Spawn),
            ("mio", Shape::Echo),
            ("mio", Shape::Spawn),
        ];
        assert_eq!(called, [round, round].concat());
        assert_eq!(r.cells.len(), 4);
        assert!(r.cells.iter().all(|c| c.runs.len() == 2));
    }

    #[test]
    fn a_share_of_capacity_is_of_the_first_implementation_with_a_closed_loop_figure() {
        let mut config = config(&["mio", "tokio"], cross(&[1], &[1]), 2);
        config.shapes = vec![Shape::Echo, Shape::Spawn];
        config.rate_shares = vec![10];
        let mut r = Results::new(config);
        let mut measure = mock();
        measure.no_tasks = vec!["mio"];
        execute(&mut r, &mut measure, &Interrupt::default());
        let blocks_per_s = |c: &Cell| c.summary(registry::figure("messages_per_s")).unwrap();
        let cell = |name: &str, shape, share| {
            let found = r.cells.iter().find(|c| {
                (c.implementation.as_str(), c.shape, c.rate_share) == (name, shape, share)
            });
            found.unwrap()
        };
        // The echo's share is of mio's capacity, the first implementation's;
        // the spawn shape's of tokio's, since mio has no tasks: each the
        // same rate for every implementation that runs it.
        let echo = (blocks_per_s(cell("mio", Shape::Echo, None)).median * 0.1).round() as u64;
        let spawn = (blocks_per_s(cell("tokio", Shape::Spawn, None)).median * 0.1).round() as u64;
        assert_eq!(cell("mio", Shape::Echo, Some(10)).rate, Some(echo));
        assert_eq!(cell("tokio", Shape::Echo, Some(10)).rate, Some(echo));
        assert_eq!(cell("tokio", Shape::Spawn, Some(10)).rate, Some(spawn));
        assert_eq!(
            cell("mio", Shape::Spawn, Some(10)).status,
            Status::Unavailable
        );
        // The closed loop ran first, and the open loop at the rates made.
        let (closed, open) = measure.rates.split_at(6);
        assert!(closed.iter().all(Option::is_none), "{:?}", measure.rates);
        assert!(open.iter().all(|r| [Some(echo), Some(spawn)].contains(r)));
        assert_eq!(open.len(), 6);
        // The generator is every open-loop cell's client, and no other's.
        for c in &r.cells {
            let client = match c.rate_share {
                Some(_) => "generator",
                None => &c.implementation,
            };
            assert_eq!(c.client, client, "{c:?}");
        }
    }

    #[test]
    fn a_failure_or_a_missing_runtime_costs_its_cell_only() {
        let mut r = Results::new(config(
            &["tokio", "mio", "glommio"],
            cross(&[1], &[1, 10]),
            3,
        ));
        let mut measure = mock();
        measure.answers.insert("tokio".into(), |_| {
            Err(anyhow!("server start: the server passed its deadline of 10.0 s; killed").into())
        });
        measure.answers.insert("glommio".into(), |_| {
            Err(RepetitionError::Unavailable {
                side: Side::Server,
                short: "io_uring forbidden".into(),
                message: "io_uring forbidden: Operation not permitted".into(),
            })
        });
        assert_eq!(
            execute(&mut r, &mut measure, &Interrupt::default()),
            Ended::Completed
        );
        // A cell without a figure is not tried again.
        let tried = |name: &str| measure.calls.iter().filter(|(n, _)| n == name).count();
        assert_eq!((tried("tokio"), tried("glommio"), tried("mio")), (2, 2, 6));
        for cell in &r.cells {
            match cell.implementation.as_str() {
                "tokio" => {
                    assert_eq!(cell.status, Status::Failed);
                    assert_eq!(
                        cell.error.as_deref(),
                        Some("server start: the server passed its deadline of 10.0 s; killed")
                    );
                }
                "glommio" => {
                    assert_eq!(cell.status, Status::Unavailable);
                    assert_eq!(cell.unavailable.as_deref(), Some("io_uring forbidden"));
                    assert_eq!(
                        cell.error.as_deref(),
                        Some("server: io_uring forbidden: Operation not permitted")
                    );
                }
                _ => assert_eq!((cell.status, cell.runs.len()), (Status::Ok, 3)),
            }
            assert_eq!(cell.mib_per_s.is_some(), cell.status == Status::Ok);
        }
    }

    #[test]
    fn a_measurement_with_no_bytes_fails_its_cell_with_advice() {
        let mut r = Results::new(config(&["mio"], cross(&[1], &[1]), 1));
        let mut measure = mock();
        measure.answers.insert("mio".into(), |_| Ok(measured(0)));
        execute(&mut r, &mut measure, &Interrupt::default());
        assert_eq!(r.cells[0].status, Status::Failed);
        assert!(
            r.cells[0]
                .error
                .as_deref()
                .unwrap()
                .contains("lengthen --warmup")
        );
    }

    #[test]
    fn an_interrupt_stops_the_loop_with_the_runs_before_it_kept() {
        let mut r = Results::new(config(&["tokio", "mio"], cross(&[1], &[1, 10]), 2));
        let interrupt = Interrupt::default();
        let mut measure = mock();
        measure.interrupt_at = Some((3, interrupt.clone()));
        assert_eq!(
            execute(&mut r, &mut measure, &interrupt),
            Ended::Interrupted
        );
        // The third run was under way: killed, so neither recorded nor blamed.
        let runs: usize = r.cells.iter().map(|c| c.runs.len()).sum();
        assert_eq!(runs, 2);
        assert!(r.cells.iter().all(|c| c.status == Status::Ok));
    }

    #[test]
    fn a_resumed_run_runs_what_is_missing_and_continues_the_order() {
        let mut r = Results::new(config(&["tokio", "mio"], cross(&[1], &[1, 10]), 2));
        let interrupt = Interrupt::default();
        let mut first = mock();
        first.interrupt_at = Some((4, interrupt.clone()));
        execute(&mut r, &mut first, &interrupt);
        let mut second = mock();
        assert_eq!(
            execute(&mut r, &mut second, &Interrupt::default()),
            Ended::Completed
        );
        // The interrupted 4th run and the 4 of the second load, once each.
        assert_eq!(second.calls.len(), 5);
        let mut all: Vec<usize> = r
            .cells
            .iter()
            .flat_map(|c| c.runs.iter().map(|r| r.order))
            .collect();
        all.sort_unstable();
        assert_eq!(all, (1..=8).collect::<Vec<_>>());
        assert!(r.cells.iter().all(|c| c.runs.len() == 2));
    }

    fn precise(mut config: Config, percent: f64, max_repeat: usize, budget: Option<f64>) -> Config {
        config.precision_percent = Some(percent);
        config.max_repeat = Some(max_repeat);
        config.budget_seconds = budget;
        config
    }

    /// A steady implementation (1 MiB every time) and a noisy one (1 or 3).
    fn steady_and_noisy() -> Mock {
        let mut measure = mock();
        measure
            .answers
            .insert("mio".into(), |_| Ok(measured(1 << 20)));
        measure.answers.insert("tokio".into(), |n| {
            Ok(measured((1 + 2 * (n as u64 % 2)) << 20))
        });
        measure
    }

    #[test]
    fn cells_repeat_until_precise_or_at_the_most() {
        let config = precise(
            config(&["mio", "tokio"], cross(&[1], &[1]), 3),
            5.0,
            10,
            None,
        );
        let mut r = Results::new(config);
        let mut measure = steady_and_noisy();
        assert_eq!(
            execute(&mut r, &mut measure, &Interrupt::default()),
            Ended::Completed
        );
        let (mio, tokio) = (&r.cells[0], &r.cells[1]);
        // Six runs make a 95% interval: the steady cell is precise then.
        assert_eq!(mio.runs.len(), 6);
        assert_eq!(mio.precision(), Some(0.0));
        // The noisy one never is: it runs as often as it may.
        assert_eq!(tokio.runs.len(), 10);
        assert!(tokio.short_of(5.0), "{:?}", tokio.precision());
        // The further rounds interleave the cells still short, as the first do.
        let called: Vec<&str> = measure.calls.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            &called[..8],
            [
                "mio", "tokio", "mio", "tokio", "mio", "tokio", "mio", "tokio"
            ]
        );
    }

    #[test]
    fn the_budget_bounds_the_further_rounds() {
        let config = precise(
            config(&["mio", "tokio"], cross(&[1], &[1]), 3),
            5.0,
            10,
            Some(0.0),
        );
        let mut r = Results::new(config);
        let mut measure = steady_and_noisy();
        execute(&mut r, &mut measure, &Interrupt::default());
        // No time beyond the first rounds: three runs each, both short.
        assert_eq!((r.cells[0].runs.len(), r.cells[1].runs.len()), (3, 3));
        assert!(r.cells.iter().all(|c| c.short_of(5.0)));
    }

    #[test]
    fn each_cell_gets_its_cost_runs_apart_from_its_figure_interleaved() {
        let mut three = config(&["mio", "tokio"], cross(&[1], &[1]), 2);
        three.cost_runs = Some(3);
        let mut r = Results::new(three);
        let mut measure = mock();
        execute_counting(&mut r, &mut measure, &Interrupt::default(), Ok(()));
        let calls = model::results::registry::figure("server_syscalls_per_block");
        let reads = model::results::registry::figure("server_reads_per_block");
        for cell in &r.cells {
            assert_eq!((cell.runs.len(), cell.cost_runs.len()), (2, 3));
            // After the cell's timed runs, in the run's sequence.
            let first = cell.cost_runs[0].order;
            assert!(cell.runs.iter().all(|run| run.order < first));
            // One call a block, half of them reads, in each cost run.
            assert_eq!(cell.values(calls), [1.0; 3]);
            assert_eq!(cell.summary(reads).unwrap().median, 0.5);
            // Its throughput is not among the cell's.
            assert!(cell.mib_per_s.unwrap().max < 50.0);
        }
        // Round by round, as the timed runs: mio's, tokio's, mio's, ...
        let orders = |c: &Cell| c.cost_runs.iter().map(|r| r.order).collect::<Vec<_>>();
        let (mio, tokio) = (orders(&r.cells[0]), orders(&r.cells[1]));
        assert!((0..3).all(|i| mio[i] < tokio[i] && (i == 2 || tokio[i] < mio[i + 1])));
        // Where the kernel cannot count, each cell says why, and nothing runs for it.
        let mut r = Results::new(config(&["mio"], cross(&[1], &[1]), 1));
        execute(&mut r, &mut mock(), &Interrupt::default());
        assert!(r.cells[0].cost_runs.is_empty());
        assert_eq!(
            r.cells[0].cost_absent.as_deref(),
            Some("not counted in these tests")
        );
    }
}
