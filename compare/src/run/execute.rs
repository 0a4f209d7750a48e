//! The matrix loop: every group's cells, repetitions interleaved, each
//! repetition asked of a [`Runner`] and recorded, the results file saved
//! after every one. A cell that fails or cannot run costs that cell only;
//! an interrupt stops the loop with what was measured kept.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Result, ensure};

use super::interrupt::Interrupt;
use super::prepare::Placements;
use crate::matrix::{Load, Workload};
use crate::placement::Placement;
use crate::plan::Plan;
use crate::program::Programs;
use crate::progress::Progress;
use crate::results::{Results, Rtt, Run, Series, Status};
use crate::runner::{ClientMeasurement, Job, Measurement, RepetitionError, Runner};

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
}

/// The cells of one group: every implementation at one load of one workload.
struct Group<'a> {
    workload: Workload,
    load: Load,
    placement: &'a Placement,
    cells: Vec<usize>,
}

impl Execution<'_> {
    /// Runs every repetition `results` does not hold yet: the first rounds
    /// for every cell, then, with a precision to reach, further rounds for
    /// the cells still short of it, each group within its share of the budget.
    pub fn run(
        &self,
        results: &mut Results,
        runner: &mut dyn Runner,
        progress: &mut Progress,
    ) -> Result<Ended> {
        let plan = self.plan;
        let mut order = results
            .cells
            .iter()
            .flat_map(|c| c.runs.iter().map(|r| r.order))
            .max()
            .unwrap_or(0);
        let mut budget = plan.budget;
        for (done, &(workload, load)) in plan.groups.iter().enumerate() {
            let placement = &self.placements[&load.threads];
            let cells = plan
                .servers
                .iter()
                .map(|server| {
                    let client = plan.client_of(server);
                    results.cell_index(
                        (server, self.programs[&server.name()].version()),
                        (client, self.programs[&client.name()].version()),
                        load,
                        workload,
                        placement,
                    )
                })
                .collect();
            let group = Group {
                workload,
                load,
                placement,
                cells,
            };
            for repetition in 1..=plan.repeat {
                let due: Vec<usize> = group
                    .cells
                    .iter()
                    .copied()
                    .filter(|&i| results.cells[i].runs.len() < repetition)
                    .collect();
                if self.round(results, &group, &due, runner, progress, &mut order)? {
                    return Ok(Ended::Interrupted);
                }
            }
            let Some(target) = plan.precision else {
                continue;
            };
            let share = budget.map(|left| left / (plan.groups.len() - done) as u32);
            let started = Instant::now();
            loop {
                let due: Vec<usize> = group
                    .cells
                    .iter()
                    .copied()
                    .filter(|&i| {
                        let cell = &results.cells[i];
                        cell.short_of(target) && cell.runs.len() < plan.max_repeat
                    })
                    .collect();
                if due.is_empty() || share.is_some_and(|share| started.elapsed() >= share) {
                    break;
                }
                progress.more(due.len());
                if self.round(results, &group, &due, runner, progress, &mut order)? {
                    return Ok(Ended::Interrupted);
                }
            }
            if let Some(left) = &mut budget {
                *left = left.saturating_sub(started.elapsed());
            }
        }
        Ok(Ended::Completed)
    }

    /// One repetition of each of the `due` cells of `group`, in order, each
    /// saved as it ends; whether an interrupt stopped the round.
    fn round(
        &self,
        results: &mut Results,
        group: &Group,
        due: &[usize],
        runner: &mut dyn Runner,
        progress: &mut Progress,
        order: &mut usize,
    ) -> Result<bool> {
        let plan = self.plan;
        let (workload, load) = (group.workload, group.load);
        for &i in due {
            let cell = &results.cells[i];
            let what = format!(
                "{}{:>2} threads {:>5} connections  {:<12} run {}/{}",
                if plan.workloads() > 1 {
                    format!("{}, ", workload.label())
                } else {
                    String::new()
                },
                load.threads,
                load.connections,
                cell.implementation,
                cell.runs.len() + 1,
                plan.max_repeat
            );
            if self.interrupt.raised() {
                return Ok(true);
            }
            if cell.status != Status::Ok {
                progress.finished(&format!("{what}  skipped: the cell has no figure already"));
                continue;
            }
            progress.start(&what);
            *order += 1;
            let config = &results.config;
            let job = Job {
                server: &self.programs[&cell.implementation],
                client: &self.programs[&cell.client],
                load,
                workload,
                work: config.work,
                warmup: Duration::from_secs_f64(config.warmup),
                seconds: Duration::from_secs_f64(config.seconds),
                latency: plan.latency,
                placement: group.placement,
            };
            let outcome = runner
                .run(&job)
                .and_then(|m| run_of(*order, workload.block, m).map_err(Into::into));
            if self.interrupt.raised() {
                // Killed by the interrupt: not a fault of the implementation.
                return Ok(true);
            }
            let cell = &mut results.cells[i];
            match outcome {
                Ok(run) => {
                    progress.finished(&format!("{what}  {}", brief(&run)));
                    cell.push(run, plan.noisy_percent);
                }
                Err(e @ RepetitionError::Unavailable { .. }) => {
                    progress.finished(&format!("{what}  unavailable: {e}"));
                    let RepetitionError::Unavailable { short, .. } = &e else {
                        unreachable!()
                    };
                    cell.set_unavailable(short.clone(), e.to_string());
                }
                Err(e @ RepetitionError::Failed(_)) => {
                    progress.finished(&format!("{what}  FAILED: {e}"));
                    cell.fail(e.to_string());
                }
            }
            results.save(self.path)?;
        }
        Ok(false)
    }
}

/// A repetition's record, from what the runner measured.
fn run_of(order: usize, block: usize, m: Measurement) -> Result<Run> {
    let (bytes, seconds) = match &m.client {
        ClientMeasurement::Ours(r) => (r.bytes, r.seconds),
        ClientMeasurement::External { bytes, seconds, .. } => (*bytes, *seconds),
    };
    ensure!(
        bytes > 0,
        "no byte came back inside the {seconds:.2} s window: at this load a round trip takes \
         longer than the warm-up and the window; lengthen --warmup or --seconds"
    );
    let mib_per_s = bytes as f64 / seconds / (1 << 20) as f64;
    let mut run = Run {
        order,
        mib_per_s,
        messages_per_s: bytes as f64 / block as f64 / seconds,
        bytes,
        seconds,
        connect_seconds: None,
        verified_connections: None,
        fairness: None,
        starved_connections: None,
        rtt: None,
        mib_per_server_cpu_s: m
            .server_usage
            .filter(|u| u.cpu_percent > 0.0)
            .map(|u| mib_per_s / (u.cpu_percent / 100.0)),
        server_usage: m.server_usage,
        client_usage: m.client_usage,
        server_cpus: m.server_cpus,
        client_cpus: Vec::new(),
        series: None,
        server_cost: m.server_cost,
        client_cost: m.client_cost,
        cost_absent: m.cost_absent,
    };
    match m.client {
        ClientMeasurement::Ours(r) => {
            run.connect_seconds = Some(r.connect_seconds);
            run.verified_connections = Some(r.verified_connections);
            run.fairness = r.fairness;
            run.starved_connections = Some(r.starved_connections);
            run.rtt = r.rtt_histogram.map(Rtt::from_histogram).transpose()?;
            run.client_cpus = r.cpus;
            run.series = (!r.series.is_empty()).then_some(Series {
                seconds: r.slice_seconds,
                bytes: r.series,
            });
        }
        ClientMeasurement::External { cpus, .. } => run.client_cpus = cpus,
    }
    Ok(run)
}

/// A run's outcome in one line.
fn brief(run: &Run) -> String {
    let mut line = format!("{:>9.1} MiB/s", run.mib_per_s);
    if let Some(rtt) = &run.rtt {
        line += &format!("  p99 {:>8.0} us", rtt.p99_us);
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
    use pingpong::wire::ClientResult;

    use super::*;
    use crate::matrix::cross;
    use crate::program::Program;
    use crate::results::Config;
    use crate::runner::Side;

    /// What the mock answers for an implementation's `n`th call (from 0).
    type Answer = fn(usize) -> Result<Measurement, RepetitionError>;

    /// Answers every repetition at once, in the runner's place: MiB/s by
    /// order of the call, or what `answers` says for an implementation.
    struct Mock {
        calls: Vec<(String, Load)>,
        answers: HashMap<String, Answer>,
        /// Raised on the call with this number (1-based), as Ctrl-C would be.
        interrupt_at: Option<(usize, Interrupt)>,
    }

    fn mock() -> Mock {
        Mock {
            calls: Vec::new(),
            answers: HashMap::new(),
            interrupt_at: None,
        }
    }

    fn measured(bytes: u64) -> Measurement {
        Measurement {
            client: ClientMeasurement::Ours(ClientResult {
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
                cpus: vec![1],
                series: vec![bytes / 2, bytes - bytes / 2],
                slice_seconds: vec![0.5, 0.5],
            }),
            server_usage: None,
            client_usage: None,
            server_cpus: vec![0],
            server_cost: None,
            client_cost: None,
            cost_absent: Some("counted by no kernel: a mock".into()),
        }
    }

    impl Runner for Mock {
        fn run(&mut self, job: &Job) -> Result<Measurement, RepetitionError> {
            let Program::Binary { path, .. } = job.server else {
                unreachable!("the mock runs ours only")
            };
            let name = path.to_string_lossy().into_owned();
            self.calls.push((name.clone(), job.load));
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
            seconds: 1.0,
            warmup: 0.0,
            repeat,
            command: "compare run".into(),
            started: "2026-11-30T00:00:00+00:00".into(),
            ended: None,
            pin: None,
            noisy_percent: None,
            latency: None,
            resumed: Vec::new(),
            precision_percent: None,
            max_repeat: None,
            budget_seconds: None,
            externals: Vec::new(),
            remote: None,
        }
    }

    /// Runs the loop over `results` with `runner`; saves into a fresh folder.
    fn execute(results: &mut Results, runner: &mut Mock, interrupt: &Interrupt) -> Ended {
        let plan = Plan::of(&results.config).unwrap();
        // Each implementation's "binary" is its own name, for the mock to read.
        let programs: Programs = plan
            .servers
            .iter()
            .map(|i| {
                let path = PathBuf::from(i.name());
                (
                    i.name(),
                    Program::Binary {
                        path,
                        version: "1.0.0".into(),
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
            .map(|l| (l.threads, placement.clone()))
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.json");
        let execution = Execution {
            plan: &plan,
            programs: &programs,
            placements: &placements,
            path: &path,
            interrupt,
        };
        let ended = execution
            .run(results, runner, &mut Progress::new(plan.runs().0, 0, true))
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
        let mut runner = mock();
        assert_eq!(
            execute(&mut r, &mut runner, &Interrupt::default()),
            Ended::Completed
        );
        let called: Vec<(&str, usize)> = runner
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
    fn a_failure_or_a_missing_runtime_costs_its_cell_only() {
        let mut r = Results::new(config(
            &["tokio", "mio", "glommio"],
            cross(&[1], &[1, 10]),
            3,
        ));
        let mut runner = mock();
        runner.answers.insert("tokio".into(), |_| {
            Err(anyhow!("server start: the server passed its deadline of 10.0 s; killed").into())
        });
        runner.answers.insert("glommio".into(), |_| {
            Err(RepetitionError::Unavailable {
                side: Side::Server,
                short: "io_uring forbidden".into(),
                message: "io_uring forbidden: Operation not permitted".into(),
            })
        });
        assert_eq!(
            execute(&mut r, &mut runner, &Interrupt::default()),
            Ended::Completed
        );
        // A cell without a figure is not tried again.
        let tried = |name: &str| runner.calls.iter().filter(|(n, _)| n == name).count();
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
        let mut runner = mock();
        runner.answers.insert("mio".into(), |_| Ok(measured(0)));
        execute(&mut r, &mut runner, &Interrupt::default());
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
        let mut runner = mock();
        runner.interrupt_at = Some((3, interrupt.clone()));
        assert_eq!(execute(&mut r, &mut runner, &interrupt), Ended::Interrupted);
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
        let mut runner = mock();
        runner
            .answers
            .insert("mio".into(), |_| Ok(measured(1 << 20)));
        runner.answers.insert("tokio".into(), |n| {
            Ok(measured((1 + 2 * (n as u64 % 2)) << 20))
        });
        runner
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
        let mut runner = steady_and_noisy();
        assert_eq!(
            execute(&mut r, &mut runner, &Interrupt::default()),
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
        let called: Vec<&str> = runner.calls.iter().map(|(n, _)| n.as_str()).collect();
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
        let mut runner = steady_and_noisy();
        execute(&mut r, &mut runner, &Interrupt::default());
        // No time beyond the first rounds: three runs each, both short.
        assert_eq!((r.cells[0].runs.len(), r.cells[1].runs.len()), (3, 3));
        assert!(r.cells.iter().all(|c| c.short_of(5.0)));
    }
}
